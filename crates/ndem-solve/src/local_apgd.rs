//! APGD on problems given by matrices, turned into a Coulomb solver by the
//! De Saxcé fixed point ([`LocalApgd`]).

use crate::SolveError;
use crate::local_solver::{
    BestIterate, LocalJudge, LocalRecorder, LocalReport, LocalSolver, LocalTask,
};
use crate::solver::Stopping;

/// APGD for a [`LocalProblem`](crate::LocalProblem) inside the De Saxcé fixed point: each outer
/// iteration solves the cone-constrained QP `min ½ rᵀ W r + q̂ᵀ r` over the
/// Coulomb cones (Anitescu's relaxation) with `q̂_N = q_N + μ‖u_T‖` from the
/// previous answer, in Jacobi-scaled variables (the friction pair shares
/// one scale so the cone stays a cone). At a fixed point the answer solves
/// Coulomb's law (Acary, Cadoux, Lemaréchal, Malick 2011). Returns the
/// answer with the smallest Coulomb merit. It needs a symmetric `W` (the
/// QP's Hessian); a non-symmetric one is refused with a typed error
/// naming `W`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LocalApgd {
    /// Outer iterations and tolerance on the Coulomb merit.
    pub stopping: Stopping,
    /// Settings of each inner APGD solve.
    pub inner: crate::qp::ApgdSettings,
}

impl Default for LocalApgd {
    fn default() -> Self {
        Self {
            stopping: Stopping::to_tolerance(50, 1e-8),
            inner: crate::qp::ApgdSettings {
                stopping: Stopping::to_tolerance(20_000, 1e-12),
                ..crate::qp::ApgdSettings::default()
            },
        }
    }
}

impl LocalSolver for LocalApgd {
    fn name(&self) -> &'static str {
        "local-apgd-de-saxce"
    }

    fn stopping(&self) -> Stopping {
        self.stopping
    }

    fn solve_task(&mut self, task: LocalTask<'_>) -> Result<LocalReport, SolveError> {
        let (p, r, initial_merit) = (task.problem, task.reactions, task.initial_merit);
        p.require_symmetric()?;
        let name = self.name();
        let mut recorder = LocalRecorder::start(name, task.observer);
        let judge = LocalJudge::new(name, initial_merit, self.stopping);
        let n = p.contacts();
        let m = 3 * n;
        let diag = |i: usize| p.w().get_entry(i, i).map_or(0.0, |e| e.into_value());
        let scale: Vec<f64> = (0..n)
            .flat_map(|c| {
                let k = 3 * c;
                let inv = |d: f64| if d > 0.0 { 1.0 / d.sqrt() } else { 1.0 };
                let t = inv(diag(k + 1).max(diag(k + 2)));
                [inv(diag(k)), t, t]
            })
            .collect();
        let set = crate::qp::BoxConeSet {
            lower: vec![f64::NEG_INFINITY; m],
            upper: vec![f64::INFINITY; m],
            cones: (0..n)
                .map(|c| (3 * c, 3, p.mu()[c] * scale[3 * c] / scale[3 * c + 1]))
                .collect(),
        };
        let mut u = vec![0.0; m];
        let mut y: Vec<f64> = r.iter().zip(&scale).map(|(x, c)| x / c).collect();
        let mut linear = vec![0.0; m];
        let mut tmp = vec![0.0; m];
        let mut best = BestIterate::new(initial_merit, r);
        let mut merit = initial_merit;
        let mut outer = 0;
        while outer < self.stopping.max_iterations && merit > self.stopping.tolerance {
            p.velocity(r, &mut u);
            for c in 0..n {
                let k = 3 * c;
                let shift = p.mu()[c] * u[k + 1].hypot(u[k + 2]);
                linear[k] = scale[k] * (p.q()[k] + shift);
                linear[k + 1] = scale[k + 1] * p.q()[k + 1];
                linear[k + 2] = scale[k + 2] * p.q()[k + 2];
            }
            let w = p.w();
            let mut op = crate::qp::FnOperator {
                n: m,
                f: |x: &[f64], out: &mut [f64]| {
                    for i in 0..m {
                        tmp[i] = scale[i] * x[i];
                    }
                    for (i, row) in w.row_iter().enumerate() {
                        out[i] = scale[i]
                            * row
                                .col_indices()
                                .iter()
                                .zip(row.values())
                                .map(|(&j, &v)| v * tmp[j])
                                .sum::<f64>();
                    }
                },
            };
            crate::qp::solve_qp(&mut op, &linear, &set, &mut y, &self.inner)?;
            for i in 0..m {
                r[i] = scale[i] * y[i];
            }
            outer += 1;
            merit = p.merit(r);
            best.offer(merit, r);
            recorder.record(p, outer, r);
        }
        Ok(judge.report(best.restore(merit, r), false, outer))
    }
}

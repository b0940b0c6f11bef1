//! The proximal-point method on a [`LocalProblem`](crate::LocalProblem) ([`ProximalPoint`]):
//! an outer proximal iteration with an inner semismooth Newton solve, the
//! idea of Siconos' PROX solver.

use crate::SolveError;
use crate::local_solver::{
    BestIterate, LocalJudge, LocalRecorder, LocalReport, LocalSolver, LocalTask,
};
use crate::newton::{NewtonSettings, SemismoothNewton};
use crate::solver::{SolverStatus, Stopping};
use ndem_math::SettingError;

/// The proximal-point method for Coulomb's law: from the current
/// reactions `r_k`, the next are the solution of the proximal subproblem
/// `(W + η 1, q − η r_k, μ)`, which is Coulomb's law for `r` with the
/// extra term `η (r − r_k)` in the velocity (Rockafellar's proximal point
/// on the problem's operator). `W + η 1` is positive definite whenever `W`
/// is positive semidefinite, so each subproblem is well conditioned where
/// `W` is rank deficient, and its [`SemismoothNewton`] solve converges in
/// a few iterations; a fixed point `r_{k+1} = r_k` solves the original
/// problem. `η`, relative to the largest diagonal entry of `W`, is divided
/// by [`Self::shrink`] after an inner solve that converged and multiplied
/// by it after one that did not. `W` may be non-symmetric. The report's
/// iterations are outer iterations; its merit is the Coulomb merit of the
/// original problem, on which the status is judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProximalPoint {
    /// Outer iterations and tolerance on the Coulomb merit.
    pub stopping: Stopping,
    /// The inner Newton solves (their tolerance on the subproblem's merit).
    pub inner: NewtonSettings,
    /// Starting proximal weight, relative to the largest diagonal of `W`.
    pub eta: f64,
    /// Factor by which `η` falls after a converged inner solve and rises
    /// after one that did not (> 1).
    pub shrink: f64,
}

impl Default for ProximalPoint {
    fn default() -> Self {
        Self {
            stopping: Stopping::to_tolerance(200, 1e-10),
            inner: NewtonSettings {
                stopping: Stopping::to_tolerance(30, 1e-10),
                ..NewtonSettings::default()
            },
            eta: 1.0,
            shrink: 10.0,
        }
    }
}

impl LocalSolver for ProximalPoint {
    fn name(&self) -> &'static str {
        "proximal-point"
    }

    fn stopping(&self) -> Stopping {
        self.stopping
    }

    fn validate(&self) -> Result<(), SolveError> {
        self.stopping.validate()?;
        self.inner.validate()?;
        SolveError::require_positive("eta", self.eta)?;
        SolveError::require(
            self.shrink.is_finite() && self.shrink > 1.0,
            "shrink",
            "must be finite and > 1",
        )?;
        Ok(())
    }

    fn solve_task(&mut self, task: LocalTask<'_>) -> Result<LocalReport, SolveError> {
        let (p, r) = (task.problem, task.reactions);
        let name = self.name();
        let mut recorder = LocalRecorder::start(name, task.observer);
        let judge = LocalJudge::new(name, task.initial_merit, self.stopping);
        let w_max = p.largest_diagonal();
        let mut newton = SemismoothNewton {
            settings: self.inner,
        };
        let (mut merit, mut best) = (task.initial_merit, BestIterate::new(task.initial_merit, r));
        let (mut eta, mut outer, mut stalled) = (self.eta, 0, false);
        let mut next = r.to_vec();
        while outer < self.stopping.max_iterations && merit > self.stopping.tolerance {
            let sub = p.proximal(eta * w_max, r);
            next.copy_from_slice(r);
            let inner = newton.solve(&sub, &mut next)?;
            outer += 1;
            if inner.status == SolverStatus::Converged {
                eta /= self.shrink;
            } else {
                eta = (eta * self.shrink).min(1e12);
            }
            if next == *r {
                stalled = eta >= 1e12;
                if stalled {
                    break;
                }
                continue;
            }
            r.copy_from_slice(&next);
            merit = p.merit(r);
            best.offer(merit, r);
            recorder.record(p, outer, r);
        }
        Ok(judge.report(best.restore(merit, r), stalled, outer))
    }
}

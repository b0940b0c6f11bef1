//! Coulomb answers from APGD: the fixed point on the De Saxcé shift
//! (Acary, Cadoux, Lemaréchal, Malick 2011). APGD with the cone set solves
//! Anitescu's convex relaxation (CCP), whose normal condition carries
//! `u_N` where Coulomb's law has `û_N = u_N + μ‖u_T‖`. Solving the CCP with
//! the normal right-hand side shifted by `s = μ‖u_T‖` (in the row's own
//! scaling, `s_n μ‖w_T‖`), updating `s` from the answer and repeating
//! gives, at a fixed point, a solution of Coulomb's law.

use crate::local_solver::BestIterate;
use crate::metrics::coulomb_merit;
use crate::problem::{ContactProblem, FrictionSet};
use crate::qp::ApgdSettings;
use crate::solver::{
    IterationClock, IterationRecord, SolveReport, SolveTask, Solver, SolverStatus, Stopping,
};
use crate::{Apgd, ResidualEvaluator, SolveError};
use ndem_math::SettingError;

/// Settings of [`CoulombApgd`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoulombApgdSettings {
    /// Outer (shift) iterations cap, and the tolerance on the Coulomb
    /// merit ([`coulomb_merit`]).
    pub stopping: Stopping,
    /// APGD settings of each inner CCP solve.
    pub inner: ApgdSettings,
}

impl Default for CoulombApgdSettings {
    fn default() -> Self {
        Self {
            stopping: Stopping::to_tolerance(50, 1e-8),
            inner: ApgdSettings {
                stopping: Stopping::to_tolerance(20_000, 1e-12),
                ..ApgdSettings::default()
            },
        }
    }
}

/// APGD inside the De Saxcé fixed point, for the disk (cone) friction set.
#[derive(Debug, Clone, Default)]
pub struct CoulombApgd {
    settings: CoulombApgdSettings,
    inner: Apgd,
    shifted: Option<ContactProblem>,
    w: Vec<f64>,
    evaluator: ResidualEvaluator,
}

impl CoulombApgd {
    /// With the given settings (validated).
    pub fn new(settings: CoulombApgdSettings) -> Result<Self, SolveError> {
        settings.stopping.validate()?;
        Ok(Self {
            settings,
            inner: Apgd::new(settings.inner)?,
            ..Self::default()
        })
    }
}

impl Solver for CoulombApgd {
    fn solve_task(&mut self, task: SolveTask<'_>) -> Result<SolveReport, SolveError> {
        let (problem, lambda, velocity, observer) = task.into_parts();
        SolveError::require(
            problem.friction_set() == FrictionSet::Disk && problem.contact_rows().count() >= 3,
            "friction_set",
            "the De Saxcé fixed point needs the disk (cone) set and friction rows",
        )?;
        let initial = self.evaluator.stats(problem, lambda, None);
        let initial_merit = coulomb_merit(problem, lambda);
        let tol = self.settings.stopping.tolerance;
        let m = problem.contact_rows().count();
        let shifted = self.shifted.get_or_insert_with(|| problem.clone());
        shifted.clone_from(problem);
        let mut merit = initial_merit;
        let mut best = BestIterate::new(merit, lambda);
        let mut outer = 0;
        let mut clock = IterationClock::start();
        while outer < self.settings.stopping.max_iterations && merit > tol {
            // s = μ‖w_T‖ at the current answer, on the normal rows' scale
            self.w.resize(problem.len(), 0.0);
            problem.velocity_from_unchecked(lambda, velocity);
            problem.residual_unchecked(lambda, velocity, &mut self.w);
            for (ci, (c, sc)) in problem
                .records()
                .iter()
                .zip(shifted.records.iter_mut())
                .enumerate()
            {
                let k = ci * m;
                let wt = self.w[k + 1].hypot(self.w[k + 2]);
                let mu = problem.coefficients(ci).friction;
                sc.normal_rhs = c.normal_rhs + c.jacobian.normal_scale * mu * wt;
            }
            problem.velocity_from_unchecked(lambda, velocity);
            self.inner.solve(shifted, lambda, velocity)?;
            outer += 1;
            merit = coulomb_merit(problem, lambda);
            best.offer(merit, lambda);
            clock.observe(
                observer,
                IterationRecord::untimed("apgd-coulomb", outer, problem, (lambda, None), merit),
            );
        }
        let merit = best.restore(merit, lambda);
        problem.velocity_from_unchecked(lambda, velocity);
        let residuals = self.evaluator.stats(problem, lambda, Some(velocity));
        Ok(SolveReport {
            solver: "apgd-coulomb",
            status: SolverStatus::judge(merit, initial_merit, tol, false),
            iterations: outer,
            last_update: merit,
            initial_residual: initial.max,
            initial_residuals: initial,
            residuals,
        })
    }

    fn name(&self) -> &'static str {
        "apgd-coulomb"
    }

    fn stopping(&self) -> Stopping {
        self.settings.stopping
    }
}

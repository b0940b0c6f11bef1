//! APGD on a [`ContactProblem`] (compatible-contact-dynamics paper; Mazhar,
//! Heyn, Negrut, Tasora 2015): minimise `½ λᵀ N λ + rᵀ λ`,
//! `N = G M⁻¹ Gᵀ + Σ` (applied matrix-free, never assembled),
//! `r = G v* + b`, over the product of per-contact sets.
//!
//! Which problem this solves depends on the friction set:
//! * frictionless contacts and bilateral rows: the same QP/LCP as PGS (the
//!   solutions agree);
//! * [`FrictionSet::Disk`]: the (normal, friction) rows are projected onto
//!   the second-order cone `‖λ_t‖ ≤ μ s_n λ_n` exactly (Euclidean), so APGD
//!   solves Anitescu's cone complementarity problem (CCP). Its optimality
//!   conditions couple the normal residual to the sliding speed
//!   (`w_n ≥ −μ‖w_t‖`-type dilation), so on sliding contacts its answer
//!   differs from the PGS/MCP answer, whose normal row is independent of
//!   sliding. Rolling rows are projected onto their bounds given the
//!   projected normal multiplier (not a Euclidean projection onto the joint
//!   set: APGD is a heuristic for them);
//! * [`FrictionSet::Box`]: the sequential clamp of the papers (normal, then
//!   friction and rolling against the new normal) is used as the
//!   "projection"; it is not the Euclidean projection onto the pyramid, so
//!   convergence to the MCP answer is not guaranteed; use PGS for the box MCP.

use crate::SolveError;
use crate::metrics::ResidualEvaluator;
use crate::problem::{ContactProblem, FrictionSet, project_pair};
use crate::qp::{
    ApgdSettings, ApgdWorkspace, Projection, SmoothObjective, apgd_minimize, project_cone,
};
use crate::solver::{IterationRecord, Observer, SolveReport, Solver};
use ndem_math::Velocity6;

/// The contact QP as a [`SmoothObjective`].
struct ContactQp<'a> {
    problem: &'a ContactProblem,
    linear: &'a [f64],
    scratch: &'a mut Vec<Velocity6>,
}

impl SmoothObjective for ContactQp<'_> {
    fn dim(&self) -> usize {
        self.problem.len()
    }
    fn value_gradient(&mut self, x: &[f64], grad: &mut [f64]) -> f64 {
        self.problem.apply_operator(x, self.scratch, grad);
        let mut f = 0.0;
        for i in 0..x.len() {
            f += x[i] * (0.5 * grad[i] + self.linear[i]);
            grad[i] += self.linear[i];
        }
        f
    }
}

/// Projection onto the product of the contact sets (see module docs).
pub struct ContactSetProjection<'a> {
    /// The problem whose sets are used.
    pub problem: &'a ContactProblem,
}

impl Projection for ContactSetProjection<'_> {
    fn project(&self, x: &mut [f64]) {
        let p = self.problem;
        match p.friction_set() {
            FrictionSet::Box => p.project(x),
            FrictionSet::Disk => {
                let m = p.contact_rows().count();
                for (c, lam) in p.contacts().iter().zip(x.chunks_exact_mut(m)) {
                    let s = c.jacobian.normal_scale;
                    if m >= 3 {
                        let (n, t) = lam[..3].split_at_mut(1);
                        project_cone(c.friction * s, &mut n[0], t);
                    } else {
                        lam[0] = lam[0].max(0.0);
                    }
                    if m >= 6 {
                        let bound = c.rolling_arm * s * lam[0];
                        project_pair(FrictionSet::Disk, bound, &mut lam[3..5]);
                        lam[5] = lam[5].clamp(-bound, bound);
                    }
                }
                let off = p.generic_offset();
                for i in 0..p.generic_rows().len() {
                    let (lo, hi) = p.generic_bounds(i, x);
                    x[off + i] = x[off + i].clamp(lo, hi);
                }
            }
        }
    }
}

/// APGD for contact problems. Owns its scratch.
#[derive(Debug, Clone, Default)]
pub struct Apgd {
    settings: ApgdSettings,
    workspace: ApgdWorkspace,
    linear: Vec<f64>,
    scratch: Vec<Velocity6>,
    evaluator: ResidualEvaluator,
}

impl Apgd {
    /// APGD with the given settings (validated).
    pub fn new(settings: ApgdSettings) -> Result<Self, SolveError> {
        settings.validate()?;
        Ok(Self {
            settings,
            ..Self::default()
        })
    }

    /// The settings.
    pub fn settings(&self) -> &ApgdSettings {
        &self.settings
    }
}

impl Solver for Apgd {
    fn name(&self) -> &'static str {
        "apgd"
    }

    fn max_iterations(&self) -> usize {
        self.settings.stopping.max_iterations
    }

    fn set_max_iterations(&mut self, n: usize) {
        self.settings.stopping.max_iterations = n;
    }

    fn solve_observed(
        &mut self,
        problem: &ContactProblem,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
        observer: &mut dyn Observer,
    ) -> Result<SolveReport, SolveError> {
        problem.check_sizes(lambda, velocity)?;
        self.linear.resize(problem.len(), 0.0);
        problem.linear_term(&mut self.linear);
        self.scratch.resize(problem.body_count(), Velocity6::ZERO);
        let set = ContactSetProjection { problem };
        let mut objective = ContactQp {
            problem,
            linear: &self.linear,
            scratch: &mut self.scratch,
        };
        let report = apgd_minimize(
            &mut objective,
            &set,
            lambda,
            &self.settings,
            &mut self.workspace,
            &mut |k, x, res, elapsed| {
                observer.observe(&IterationRecord {
                    solver: "apgd",
                    iteration: k,
                    elapsed,
                    problem,
                    lambda: x,
                    velocity: None,
                    update: res,
                });
            },
        )?;
        problem.velocity_from(lambda, velocity);
        let residuals = self.evaluator.stats_if(
            self.settings.final_residuals,
            problem,
            lambda,
            Some(velocity),
        );
        Ok(SolveReport {
            solver: "apgd",
            iterations: report.iterations,
            converged: report.converged,
            last_update: report.residual,
            residuals,
        })
    }
}

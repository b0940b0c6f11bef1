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
use crate::problem::{ClampTo, ContactProblem, FrictionSet, project_pair};
use crate::qp::{
    ApgdSettings, ApgdWorkspace, Projection, SmoothObjective, apgd_minimize, project_cone,
};
use crate::solver::{IterationRecord, SolveReport, SolveTask, Solver, Stopping};
use ndem_math::Velocity6;

/// The contact QP in Jacobi-scaled variables `y = C⁻¹λ`, `C = diag(c_j)`,
/// `c_j = D_jj^{-1/2}` (the two friction rows, and the two rolling rows,
/// share `max(D)` so that their disk stays a disk): minimise
/// `½ yᵀ (C N C) y + (C r)ᵀ y`. The scaled Hessian has a unit diagonal;
/// unscaled, the diagonals of a granular problem span eight orders of
/// magnitude (normal rows ≈ 1, rolling rows with γ_r = 1e-6 ≈ 1e7), and one
/// global step `1/L` set by the stiffest rows leaves the normal rows
/// nearly where they started.
struct ScaledContactQp<'a> {
    problem: &'a ContactProblem,
    linear: &'a [f64],
    scale: &'a [f64],
    x: &'a mut Vec<f64>,
    scratch: &'a mut Vec<Velocity6>,
}

impl SmoothObjective for ScaledContactQp<'_> {
    fn dim(&self) -> usize {
        self.problem.len()
    }
    fn value_gradient(&mut self, y: &[f64], grad: &mut [f64]) -> f64 {
        for i in 0..y.len() {
            self.x[i] = self.scale[i] * y[i];
        }
        self.problem
            .apply_operator_unchecked(self.x, self.scratch, grad);
        let mut f = 0.0;
        for i in 0..y.len() {
            f += self.x[i] * (0.5 * grad[i] + self.linear[i]);
            grad[i] = self.scale[i] * (grad[i] + self.linear[i]);
        }
        f
    }
}

/// Row scales `c_j` of [`ScaledContactQp`].
fn jacobi_scales(problem: &ContactProblem, out: &mut Vec<f64>) {
    out.resize(problem.len(), 0.0);
    problem.diagonal_unchecked(out);
    let m = problem.contact_rows().count();
    if problem.friction_set() == FrictionSet::Disk {
        for d in out[..problem.generic_offset()].chunks_exact_mut(m) {
            if m >= 3 {
                let t = d[1].max(d[2]);
                (d[1], d[2]) = (t, t);
            }
            if m >= 6 {
                let r = d[3].max(d[4]);
                (d[3], d[4]) = (r, r);
            }
        }
    }
    for d in out.iter_mut() {
        *d = if *d > 0.0 && d.is_finite() {
            1.0 / d.sqrt()
        } else {
            1.0
        };
    }
}

/// Projection onto the product of the contact sets in the scaled
/// variables `y = C⁻¹λ`: with the disk set the (normal, friction) cone
/// `‖λ_t‖ ≤ μ s_n λ_n` is the cone `‖y_t‖ ≤ μ s_n (c_n/c_t) y_n`, projected
/// exactly (Euclidean in `y`); rolling rows and generic rows are clamped to
/// their bounds given the projected normal; with the box set the papers'
/// sequential clamp is applied to `λ = C y` (see module docs).
struct ScaledSetProjection<'a> {
    problem: &'a ContactProblem,
    scale: &'a [f64],
}

impl Projection for ScaledSetProjection<'_> {
    fn project(&self, y: &mut [f64]) {
        let p = self.problem;
        let c = self.scale;
        match p.friction_set() {
            FrictionSet::Box => {
                for i in 0..y.len() {
                    y[i] *= c[i];
                }
                p.project_unchecked(y);
                for i in 0..y.len() {
                    y[i] /= c[i];
                }
            }
            FrictionSet::Disk => {
                let m = p.contact_rows().count();
                for (ci, (contact, lam)) in
                    p.records().iter().zip(y.chunks_exact_mut(m)).enumerate()
                {
                    let k = ci * m;
                    let s = contact.jacobian.normal_scale;
                    if m >= 3 {
                        let (n, t) = lam[..3].split_at_mut(1);
                        let mu = p.coefficients(ci).friction;
                        project_cone(mu * s * c[k] / c[k + 1], &mut n[0], t);
                    } else {
                        lam[0] = lam[0].max(0.0);
                    }
                    if m >= 6 {
                        let bound = contact.rolling_arm * s * c[k] * lam[0];
                        project_pair(FrictionSet::Disk, bound / c[k + 3], &mut lam[3..5]);
                        lam[5] = lam[5].clamp_to(-bound / c[k + 5], bound / c[k + 5]);
                    }
                }
                let off = p.generic_offset();
                for i in 0..p.generic_rows().len() {
                    let k = off + i;
                    let (lo, hi) = match p.generic_rows()[i].bounds {
                        crate::RowBounds::Fixed { lower, upper } => (lower, upper),
                        crate::RowBounds::Friction {
                            normal_row,
                            coefficient,
                        } => {
                            let n = (c[off + normal_row] * y[off + normal_row]).max(0.0);
                            (-coefficient * n, coefficient * n)
                        }
                    };
                    y[k] = y[k].clamp_to(lo / c[k], hi / c[k]);
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
    scale: Vec<f64>,
    scaled: Vec<f64>,
    x: Vec<f64>,
    scratch: Vec<Velocity6>,
    evaluator: ResidualEvaluator,
}

crate::solver::validated_settings!(Apgd, ApgdSettings);

impl Solver for Apgd {
    fn solve_task(&mut self, task: SolveTask<'_>) -> Result<SolveReport, SolveError> {
        let (problem, lambda, velocity, observer) = task.into_parts();
        self.linear.resize(problem.len(), 0.0);
        problem.linear_term_unchecked(&mut self.linear);
        self.scratch.resize(problem.body_count(), Velocity6::ZERO);
        jacobi_scales(problem, &mut self.scale);
        self.x.resize(problem.len(), 0.0);
        let scale = &self.scale;
        let set = ScaledSetProjection { problem, scale };
        // the start as APGD sees it: projected onto the contact sets
        self.scaled.clear();
        self.scaled
            .extend(lambda.iter().zip(scale.iter()).map(|(l, c)| l / c));
        set.project(&mut self.scaled);
        for i in 0..lambda.len() {
            lambda[i] = scale[i] * self.scaled[i];
        }
        let initial_residuals = self.evaluator.stats(problem, lambda, None);
        let mut objective = ScaledContactQp {
            problem,
            linear: &self.linear,
            scale,
            x: &mut self.x,
            scratch: &mut self.scratch,
        };
        let mut unscaled = vec![0.0; problem.len()];
        let stopping = self.settings.stopping;
        let mut settings = self.settings;
        let (mut iterations, mut residuals, mut report);
        iterations = 0;
        // APGD's own criterion (the projected gradient in scaled variables)
        // and the rows' residuals (velocities) are different measures: when
        // the first is met and the second is not, APGD continues from its
        // answer with its own tolerance ten times smaller, until the rows
        // meet the tolerance, the budget is spent, or a round leaves the
        // rows' residual above half of the round before (APGD's fixed point
        // is not a solution of the rows: the CCP answer of a sliding
        // contact)
        let mut previous = f64::INFINITY;
        loop {
            settings.stopping.max_iterations = stopping.max_iterations - iterations;
            let done = iterations;
            report = apgd_minimize(
                &mut objective,
                &set,
                &mut self.scaled,
                &settings,
                &mut self.workspace,
                &mut |k, y, res, elapsed| {
                    for i in 0..y.len() {
                        unscaled[i] = scale[i] * y[i];
                    }
                    observer.observe(&IterationRecord {
                        solver: "apgd",
                        iteration: done + k,
                        elapsed,
                        problem,
                        lambda: &unscaled,
                        velocity: None,
                        update: res,
                    });
                },
            )?;
            iterations += report.iterations;
            for i in 0..lambda.len() {
                lambda[i] = scale[i] * self.scaled[i];
            }
            problem.velocity_from_unchecked(lambda, velocity);
            residuals = self.evaluator.stats(problem, lambda, Some(velocity));
            let own_stop = stopping.early_stop && report.converged;
            let tighter = settings.stopping.tolerance * 0.1;
            if !own_stop
                || residuals.max <= stopping.tolerance
                || residuals.max > 0.5 * previous
                || iterations >= stopping.max_iterations
                || tighter < f64::EPSILON * report.initial_residual
            {
                break;
            }
            settings.stopping.tolerance = tighter;
            previous = residuals.max;
        }
        // APGD stopped on its own criterion at the tightest tolerance while
        // the row residual stays above the tolerance: a fixed point of APGD
        // that is not a solution of the rows (with the cone, the CCP answer
        // of a sliding contact), reported as stalled, not as an iteration
        // limit it did not reach
        let own_fixed_point = stopping.early_stop && report.converged;
        Ok(SolveReport::judged(
            "apgd",
            residuals,
            initial_residuals,
            stopping.tolerance,
            report.stalled || own_fixed_point,
            iterations,
            report.residual,
        ))
    }

    fn name(&self) -> &'static str {
        "apgd"
    }

    fn stopping(&self) -> Stopping {
        self.settings.stopping
    }
}

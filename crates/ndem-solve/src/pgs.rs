//! Projected Gauss-Seidel (warm-starting paper, Algorithm 1 and eqs. 3-6).

use crate::metrics::ResidualEvaluator;
use crate::problem::{Contact, ContactProblem, FrictionSet, project_contact};
use crate::solver::{ContactOrder, IterationRecord, Observer, SolveReport, Solver, Stopping};
use crate::SolveError;
use ndem_math::{InverseMass, Velocity6};
use std::time::{Duration, Instant};

/// Row-wise or blocked Gauss-Seidel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PgsVariant {
    /// One row at a time, `λ_j ← Π(λ_j − w_j / D_jj)` followed by
    /// `v ← v + M⁻¹ G_jᵀ Δλ_j` (Algorithm 1). With the disk friction set the
    /// two friction rows (and the two rolling rows) are updated together
    /// from the same velocity and projected jointly.
    #[default]
    RowWise,
    /// One contact at a time: the unconstrained block step
    /// `λ_α ← λ_α − D_αα⁻¹ w_α` with the full block
    /// `D_αα = G_α M⁻¹ G_αᵀ + Σ_α` (eq. 3) is taken when it lands inside the
    /// contact's set; otherwise the contact's rows are relaxed by
    /// [`BLOCK_INNER_SWEEPS`] row-wise projected sweeps. Projecting the block
    /// step instead (eq. 4 applied literally) has fixed points that are not
    /// solutions once a bound is active (the projection is Euclidean, the
    /// step is in the `D_αα` metric); we measured such stalls on frictional
    /// packings, see `docs/solvers.md`.
    Blocked,
}

/// Settings of [`ProjectedGaussSeidel`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PgsSettings {
    /// Iteration cap and tolerance.
    pub stopping: Stopping,
    /// Row-wise or blocked.
    pub variant: PgsVariant,
    /// Contact visiting order.
    pub order: ContactOrder,
    /// Over-relaxation factor ω in (0, 2); 1 is plain Gauss-Seidel.
    pub relaxation: f64,
    /// Compute residual statistics of the result for the report (one extra
    /// pass over the problem).
    pub final_residuals: bool,
}

impl Default for PgsSettings {
    fn default() -> Self {
        Self {
            stopping: Stopping::default(),
            variant: PgsVariant::RowWise,
            order: ContactOrder::Given,
            relaxation: 1.0,
            final_residuals: true,
        }
    }
}

impl PgsSettings {
    /// Checks the fields.
    pub fn validate(&self) -> Result<(), SolveError> {
        self.stopping.validate()?;
        if !(self.relaxation > 0.0 && self.relaxation < 2.0) {
            return Err(SolveError::InvalidSettings {
                field: "relaxation",
                reason: "must lie in (0, 2)",
            });
        }
        Ok(())
    }
}

/// Projected Gauss-Seidel for a [`ContactProblem`]. Owns its scratch, so
/// repeated solves of problems of similar size do not allocate.
#[derive(Debug, Clone, Default)]
pub struct ProjectedGaussSeidel {
    settings: PgsSettings,
    inv_diag: Vec<f64>,
    order: Vec<u32>,
    blocks: Vec<[f64; 36]>,
    evaluator: ResidualEvaluator,
}

impl ProjectedGaussSeidel {
    /// A solver with the given settings (validated).
    pub fn new(settings: PgsSettings) -> Result<Self, SolveError> {
        settings.validate()?;
        Ok(Self {
            settings,
            ..Self::default()
        })
    }

    /// The settings.
    pub fn settings(&self) -> &PgsSettings {
        &self.settings
    }

    /// Replaces the settings (validated).
    pub fn set_settings(&mut self, settings: PgsSettings) -> Result<(), SolveError> {
        settings.validate()?;
        self.settings = settings;
        Ok(())
    }

    fn prepare(&mut self, problem: &ContactProblem) {
        let n = problem.len();
        self.inv_diag.resize(n, 0.0);
        problem.diagonal(&mut self.inv_diag);
        for d in &mut self.inv_diag {
            *d = if *d > 0.0 { 1.0 / *d } else { 0.0 };
        }
        self.settings
            .order
            .fill(problem.contacts().len(), &mut self.order);
        if self.settings.variant == PgsVariant::Blocked {
            let m = problem.contact_rows().count();
            self.blocks.resize(problem.contacts().len(), [0.0; 36]);
            let inv = problem.inverse_mass();
            for (c, blk) in problem.contacts().iter().zip(self.blocks.iter_mut()) {
                let [a, b] = c.bodies.map(|x| x as usize);
                *blk = block_inverse(c, m, &inv[a], &inv[b]);
            }
        }
    }
}

/// Inverse of the leading m×m block of `G M⁻¹ Gᵀ + Σ` (row-major), by
/// Cholesky; falls back to the inverse diagonal when the block is singular.
fn block_inverse(c: &Contact, m: usize, ia: &InverseMass, ib: &InverseMass) -> [f64; 36] {
    let full = c.jacobian.block(ia, ib);
    let mut blk = nalgebra::DMatrix::<f64>::zeros(m, m);
    for i in 0..m {
        for k in 0..m {
            blk[(i, k)] = full[(i, k)];
        }
        blk[(i, i)] += c.row_sigma(i);
    }
    let mut out = [0.0; 36];
    match blk.clone().cholesky() {
        Some(ch) => {
            let inv = ch.inverse();
            for i in 0..m {
                for k in 0..m {
                    out[i * m + k] = inv[(i, k)];
                }
            }
        }
        None => {
            for i in 0..m {
                let d = blk[(i, i)];
                out[i * m + i] = if d > 0.0 { 1.0 / d } else { 0.0 };
            }
        }
    }
    out
}

/// Applies `M⁻¹ G_jᵀ Δ` of contact row `j` to the two local velocities.
#[inline(always)]
fn apply_row(
    c: &Contact,
    j: usize,
    delta: f64,
    ia: &InverseMass,
    ib: &InverseMass,
    va: &mut Velocity6,
    vb: &mut Velocity6,
) {
    let jac = &c.jacobian;
    let u = jac.direction(j);
    if j < 3 {
        let s = if j == 0 { jac.normal_scale * delta } else { delta };
        va.linear += u * (ia.inv_mass * s);
        vb.linear -= u * (ib.inv_mass * s);
        va.angular += ia.inv_inertia * (jac.arm_cross_a[j] * s);
        vb.angular -= ib.inv_inertia * (jac.arm_cross_b[j] * s);
    } else {
        va.angular += ia.inv_inertia * (u * delta);
        vb.angular -= ib.inv_inertia * (u * delta);
    }
}

/// One row-wise Gauss-Seidel pass over the rows of one contact. Returns the
/// largest correction `D_jj |Δλ_j|` and whether every new value is finite.
#[inline]
fn sweep_contact_rows(
    c: &Contact,
    set: FrictionSet,
    lam: &mut [f64],
    inv_d: &[f64],
    omega: f64,
    ia: &InverseMass,
    ib: &InverseMass,
    va: &mut Velocity6,
    vb: &mut Velocity6,
) -> (f64, bool) {
    let m = lam.len();
    let mut max_corr = 0.0f64;
    let mut finite = true;
    let mut update = |j: usize, new: f64, lam: &mut [f64], va: &mut Velocity6, vb: &mut Velocity6| {
        let delta = new - lam[j];
        finite &= new.is_finite();
        if delta != 0.0 {
            lam[j] = new;
            apply_row(c, j, delta, ia, ib, va, vb);
            if inv_d[j] > 0.0 {
                max_corr = max_corr.max(delta.abs() / inv_d[j]);
            }
        }
    };
    let candidate = |j: usize, lam: &[f64], va: &Velocity6, vb: &Velocity6| {
        let w = c.jacobian.row_velocity(j, va, vb) + c.row_sigma(j) * lam[j] + c.rhs[j];
        lam[j] - omega * w * inv_d[j]
    };
    // Normal row.
    let cand = candidate(0, lam, va, vb).max(0.0);
    update(0, cand, lam, va, vb);
    if m == 1 {
        return (max_corr, finite);
    }
    let force = c.jacobian.normal_scale * lam[0];
    let pairs: &[(usize, f64)] = if m >= 6 {
        &[(1, c.friction * force), (3, c.rolling_arm * force)]
    } else {
        &[(1, c.friction * force)]
    };
    for &(j0, bound) in pairs {
        match set {
            FrictionSet::Box => {
                for j in [j0, j0 + 1] {
                    let cand = candidate(j, lam, va, vb).clamp(-bound, bound);
                    update(j, cand, lam, va, vb);
                }
            }
            FrictionSet::Disk => {
                let mut pair = [candidate(j0, lam, va, vb), candidate(j0 + 1, lam, va, vb)];
                crate::problem::project_pair(set, bound, &mut pair);
                update(j0, pair[0], lam, va, vb);
                update(j0 + 1, pair[1], lam, va, vb);
            }
        }
    }
    if m >= 6 {
        let bound = c.rolling_arm * force;
        let cand = candidate(5, lam, va, vb).clamp(-bound, bound);
        update(5, cand, lam, va, vb);
    }
    (max_corr, finite)
}

/// Row-wise sweeps a blocked update falls back to when the block step leaves
/// the contact's admissible set.
pub const BLOCK_INNER_SWEEPS: usize = 4;

/// One blocked pass over one contact (eq. 3, with the fallback described at
/// [`PgsVariant::Blocked`]).
#[inline]
fn sweep_contact_block(
    c: &Contact,
    set: FrictionSet,
    lam: &mut [f64],
    block_inv: &[f64; 36],
    inv_d: &[f64],
    omega: f64,
    ia: &InverseMass,
    ib: &InverseMass,
    va: &mut Velocity6,
    vb: &mut Velocity6,
) -> (f64, bool) {
    let m = lam.len();
    let gv = c.jacobian.velocity(va, vb);
    let mut w = [0.0; 6];
    for j in 0..m {
        w[j] = gv[j] + c.row_sigma(j) * lam[j] + c.rhs[j];
    }
    let mut new = [0.0; 6];
    for i in 0..m {
        let mut s = 0.0;
        for k in 0..m {
            s += block_inv[i * m + k] * w[k];
        }
        new[i] = lam[i] - omega * s;
    }
    let unprojected = new;
    project_contact(c, set, &mut new[..m]);
    if new[..m] != unprojected[..m] {
        let mut max_corr = 0.0f64;
        let mut finite = true;
        for _ in 0..BLOCK_INNER_SWEEPS {
            let (corr, ok) = sweep_contact_rows(c, set, lam, inv_d, omega, ia, ib, va, vb);
            max_corr = max_corr.max(corr);
            finite &= ok;
        }
        return (max_corr, finite);
    }
    let mut delta = [0.0; 6];
    let mut max_corr = 0.0f64;
    let mut finite = true;
    for j in 0..m {
        finite &= new[j].is_finite();
        delta[j] = new[j] - lam[j];
        if inv_d[j] > 0.0 {
            max_corr = max_corr.max(delta[j].abs() / inv_d[j]);
        }
        lam[j] = new[j];
    }
    let (dva, dvb) = c.jacobian.velocity_change(ia, ib, &delta[..m]);
    *va += dva;
    *vb += dvb;
    (max_corr, finite)
}

impl Solver for ProjectedGaussSeidel {
    fn name(&self) -> &'static str {
        match self.settings.variant {
            PgsVariant::RowWise => "pgs",
            PgsVariant::Blocked => "pgs-blocked",
        }
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
        let start = Instant::now();
        let mut observer_time = Duration::ZERO;
        self.prepare(problem);
        let m = problem.contact_rows().count();
        let set = problem.friction_set();
        let omega = self.settings.relaxation;
        let inv = problem.inverse_mass();
        let contacts = problem.contacts();
        let off = problem.generic_offset();
        let name = self.name();
        let mut iterations = 0;
        let mut converged = false;
        let mut last_update = 0.0;
        for it in 0..self.settings.stopping.max_iterations {
            let mut max_corr = 0.0f64;
            let mut finite = true;
            for &ci in &self.order {
                let ci = ci as usize;
                let c = &contacts[ci];
                let [a, b] = c.bodies.map(|x| x as usize);
                let (mut va, mut vb) = (velocity[a], velocity[b]);
                let lam = &mut lambda[ci * m..ci * m + m];
                let inv_d = &self.inv_diag[ci * m..ci * m + m];
                let (corr, ok) = match self.settings.variant {
                    PgsVariant::RowWise => {
                        sweep_contact_rows(c, set, lam, inv_d, omega, &inv[a], &inv[b], &mut va, &mut vb)
                    }
                    PgsVariant::Blocked => sweep_contact_block(
                        c,
                        set,
                        lam,
                        &self.blocks[ci],
                        inv_d,
                        omega,
                        &inv[a],
                        &inv[b],
                        &mut va,
                        &mut vb,
                    ),
                };
                velocity[a] = va;
                velocity[b] = vb;
                max_corr = max_corr.max(corr);
                finite &= ok;
            }
            for (i, r) in problem.generic_rows().iter().enumerate() {
                let k = off + i;
                let [a, b] = r.bodies.map(|x| x as usize);
                let w = r.jacobian.dot(&velocity[a], &velocity[b]) + r.sigma * lambda[k] + r.rhs;
                let (lo, hi) = problem.generic_bounds(i, lambda);
                let new = (lambda[k] - omega * w * self.inv_diag[k]).clamp(lo, hi);
                finite &= new.is_finite();
                let delta = new - lambda[k];
                if delta != 0.0 {
                    lambda[k] = new;
                    let (ia_, ib_) = r.jacobian.transpose_apply(delta);
                    velocity[a] += Velocity6::new(
                        ia_.linear * inv[a].inv_mass,
                        inv[a].inv_inertia * ia_.angular,
                    );
                    velocity[b] += Velocity6::new(
                        ib_.linear * inv[b].inv_mass,
                        inv[b].inv_inertia * ib_.angular,
                    );
                    if self.inv_diag[k] > 0.0 {
                        max_corr = max_corr.max(delta.abs() / self.inv_diag[k]);
                    }
                }
            }
            iterations = it + 1;
            last_update = max_corr;
            if !finite {
                let row = lambda.iter().position(|x| !x.is_finite()).unwrap_or(0);
                return Err(SolveError::Diverged {
                    solver: name,
                    row,
                    iteration: iterations,
                });
            }
            let t_obs = Instant::now();
            observer.observe(&IterationRecord {
                solver: name,
                iteration: iterations,
                elapsed: t_obs.duration_since(start) - observer_time,
                problem,
                lambda,
                velocity: Some(velocity),
                update: max_corr,
            });
            observer_time += t_obs.elapsed();
            if self.settings.stopping.tolerance > 0.0 && max_corr <= self.settings.stopping.tolerance {
                converged = true;
                break;
            }
        }
        let residuals = if self.settings.final_residuals {
            self.evaluator.stats(problem, lambda, Some(velocity))
        } else {
            Default::default()
        };
        Ok(SolveReport {
            solver: name,
            iterations,
            converged,
            last_update,
            residuals,
        })
    }
}

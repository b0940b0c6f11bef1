//! Accelerated projected gradient descent (APGD; Mazhar, Heyn, Negrut and
//! Tasora, ACM TOG 2015) on a general smooth convex objective over a
//! convex set, and the bound-constrained / cone-constrained convex QP entry
//! point built on it. Contact problems ([`crate::Apgd`]) and the
//! augmented-Lagrangian truss problem use the same core.

use crate::SolveError;
pub use crate::cone::project_cone;
use crate::problem::ClampTo;
use crate::solver::Stopping;
use nalgebra_sparse::CsrMatrix;
use ndem_math::SettingError;
use std::time::{Duration, Instant};

/// A smooth convex function `f(x)` with gradient.
pub trait SmoothObjective {
    /// Dimension of `x`.
    fn dim(&self) -> usize;
    /// Returns `f(x)` and writes `∇f(x)` into `grad`.
    fn value_gradient(&mut self, x: &[f64], grad: &mut [f64]) -> f64;
}

/// A closed convex set with a (Euclidean) projection.
pub trait Projection {
    /// Projects `x` onto the set in place.
    fn project(&self, x: &mut [f64]);
    /// Checks that the set is well formed in `dim` dimensions (called by
    /// [`solve_qp`] before it projects anything). The default accepts.
    fn validate(&self, dim: usize) -> Result<(), SolveError> {
        let _ = dim;
        Ok(())
    }
}

/// A symmetric positive semidefinite operator `x ↦ A x`.
pub trait LinearOperator {
    /// Dimension.
    fn dim(&self) -> usize;
    /// `out = A x`.
    fn apply(&mut self, x: &[f64], out: &mut [f64]);
}

impl LinearOperator for CsrMatrix<f64> {
    fn dim(&self) -> usize {
        self.nrows()
    }
    fn apply(&mut self, x: &[f64], out: &mut [f64]) {
        for (i, row) in self.row_iter().enumerate() {
            out[i] = row
                .col_indices()
                .iter()
                .zip(row.values())
                .map(|(&j, &v)| v * x[j])
                .sum();
        }
    }
}

/// A closure `(x, out)` as a [`LinearOperator`] of dimension `n`.
pub struct FnOperator<F: FnMut(&[f64], &mut [f64])> {
    /// Dimension.
    pub n: usize,
    /// The map.
    pub f: F,
}

impl<F: FnMut(&[f64], &mut [f64])> LinearOperator for FnOperator<F> {
    fn dim(&self) -> usize {
        self.n
    }
    fn apply(&mut self, x: &[f64], out: &mut [f64]) {
        (self.f)(x, out)
    }
}

/// The quadratic `½ xᵀ A x + bᵀ x`.
pub struct Quadratic<'a, A: LinearOperator + ?Sized> {
    /// The operator `A`.
    pub operator: &'a mut A,
    /// The linear term `b`.
    pub linear: &'a [f64],
}

impl<A: LinearOperator + ?Sized> SmoothObjective for Quadratic<'_, A> {
    fn dim(&self) -> usize {
        self.linear.len()
    }
    fn value_gradient(&mut self, x: &[f64], grad: &mut [f64]) -> f64 {
        self.operator.apply(x, grad);
        let mut f = 0.0;
        for i in 0..x.len() {
            f += x[i] * (0.5 * grad[i] + self.linear[i]);
            grad[i] += self.linear[i];
        }
        f
    }
}

/// A product of simple sets for the QP entry point: per-entry bounds
/// `lower ≤ x ≤ upper`, and second-order cones
/// `‖(x_{s+1}, …, x_{s+k−1})‖ ≤ μ x_s` at given offsets (Anitescu's friction
/// cone; entries inside a cone ignore their bounds).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BoxConeSet {
    /// Lower bounds (use `-inf` for none).
    pub lower: Vec<f64>,
    /// Upper bounds (use `inf` for none).
    pub upper: Vec<f64>,
    /// Cones `(start, len, μ)`: the first entry is the axis.
    pub cones: Vec<(usize, usize, f64)>,
}

impl BoxConeSet {
    /// `x ≥ 0` in `n` dimensions.
    pub fn nonnegative(n: usize) -> Self {
        Self {
            lower: vec![0.0; n],
            upper: vec![f64::INFINITY; n],
            cones: Vec::new(),
        }
    }
}

impl Projection for BoxConeSet {
    /// `lower` and `upper` of length `dim`, not NaN, `lower ≤ upper`; each
    /// cone `(start, len, μ)` inside `0..dim`, `len ≥ 1`, `μ` finite and
    /// ≥ 0, cones not overlapping.
    fn validate(&self, dim: usize) -> Result<(), SolveError> {
        for (field, v) in [("lower", &self.lower), ("upper", &self.upper)] {
            SolveError::require_len(field, dim, v.len())?;
            if let Some(i) = v.iter().position(|x| x.is_nan()) {
                return Err(SolveError::NonFinite {
                    field,
                    index: i,
                    value: f64::NAN,
                });
            }
        }
        if let Some(i) = (0..dim).find(|&i| self.lower[i] > self.upper[i]) {
            return Err(SolveError::OutOfRange {
                field: "lower",
                index: i,
                value: self.lower[i],
                range: "(-inf, upper]",
            });
        }
        let mut covered = vec![false; dim];
        for (c, &(start, len, mu)) in self.cones.iter().enumerate() {
            if !(mu.is_finite() && mu >= 0.0) {
                return Err(SolveError::OutOfRange {
                    field: "cones.mu",
                    index: c,
                    value: mu,
                    range: "[0, inf)",
                });
            }
            let end = start.checked_add(len).filter(|&e| len >= 1 && e <= dim);
            let Some(end) = end else {
                return Err(SolveError::InvalidSettings {
                    field: "cones",
                    reason: "a cone must have at least one entry and lie inside the dimension",
                });
            };
            SolveError::require(
                !covered[start..end].iter().any(|&x| x),
                "cones",
                "cones overlap",
            )?;
            covered[start..end].iter_mut().for_each(|x| *x = true);
        }
        Ok(())
    }

    fn project(&self, x: &mut [f64]) {
        for i in 0..x.len() {
            x[i] = x[i].clamp_to(self.lower[i], self.upper[i]);
        }
        for &(s, k, mu) in &self.cones {
            let (head, tail) = x[s..s + k].split_at_mut(1);
            project_cone(mu, &mut head[0], tail);
        }
    }
}

/// Settings of APGD.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ApgdSettings {
    /// Iteration cap and tolerance on the projected-gradient residual.
    pub stopping: Stopping,
    /// Gradient-based adaptive restart (O'Donoghue and Candès 2015): reset
    /// the momentum when the generalized gradient `(y_k − γ_{k+1})/t_k`
    /// makes an acute angle with the step `γ_{k+1} − γ_k`.
    pub adaptive_restart: bool,
    /// Factor applied to the Lipschitz estimate after each accepted step
    /// (lets the step grow; paper: 0.9).
    pub step_growth: f64,
}

impl Default for ApgdSettings {
    fn default() -> Self {
        Self {
            stopping: Stopping::default(),
            adaptive_restart: true,
            step_growth: 0.9,
        }
    }
}

impl ApgdSettings {
    /// Checks the fields.
    pub fn validate(&self) -> Result<(), SolveError> {
        self.stopping.validate()?;
        SolveError::require(
            self.step_growth > 0.0 && self.step_growth <= 1.0,
            "step_growth",
            "must lie in (0, 1]",
        )?;
        Ok(())
    }
}

/// Result of an APGD run on a general objective.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ApgdReport {
    /// Iterations performed.
    pub iterations: usize,
    /// Projected-gradient residual of the returned iterate, at the fixed
    /// reference step [`Self::reference_step`].
    pub residual: f64,
    /// The same residual at the starting point.
    pub initial_residual: f64,
    /// Whether the residual is within the tolerance.
    pub converged: bool,
    /// The iteration stopped moving (step collapsed) before converging.
    pub stalled: bool,
    /// Final Lipschitz estimate.
    pub lipschitz: f64,
    /// The step `s` of every residual `‖(x − Π(x − s∇f(x)))/s‖` in this
    /// report: the inverse of the first Lipschitz estimate, fixed for the
    /// whole run so that residuals of different iterates compare.
    pub reference_step: f64,
}

/// APGD scratch, reusable across solves.
#[derive(Debug, Clone, Default)]
pub struct ApgdWorkspace {
    gamma: Vec<f64>,
    y: Vec<f64>,
    next: Vec<f64>,
    grad_y: Vec<f64>,
    grad_next: Vec<f64>,
    tmp: Vec<f64>,
    best: Vec<f64>,
}

/// Projected-gradient residual `‖(x − Π(x − s g))/s‖`.
fn pg_residual(x: &[f64], g: &[f64], s: f64, set: &dyn Projection, tmp: &mut [f64]) -> f64 {
    for i in 0..x.len() {
        tmp[i] = x[i] - s * g[i];
    }
    set.project(tmp);
    (0..x.len())
        .map(|i| {
            let d = (x[i] - tmp[i]) / s;
            d * d
        })
        .sum::<f64>()
        .sqrt()
}

/// Callback after each APGD iteration: `(k, x_k, residual of x_k, elapsed)`.
pub type IterationCallback<'a> = dyn FnMut(usize, &[f64], f64, Duration) + 'a;

/// Lipschitz estimate of `∇f` from a slightly perturbed point (`docs/theory.md`,
/// "APGD in brief"); leaves `∇f(x)` in `grad`.
fn initial_lipschitz(
    objective: &mut dyn SmoothObjective,
    x: &[f64],
    grad: &mut [f64],
    probe: &mut [f64],
    probe_grad: &mut [f64],
) -> f64 {
    let n = x.len();
    objective.value_gradient(x, grad);
    let scale = x.iter().fold(0.0f64, |a, b| a.max(b.abs())).max(1.0);
    for i in 0..n {
        probe[i] = x[i] + 1e-6 * scale * (1.0 + (i % 7) as f64 / 7.0);
    }
    objective.value_gradient(probe, probe_grad);
    let num = (0..n)
        .map(|i| (probe_grad[i] - grad[i]).powi(2))
        .sum::<f64>()
        .sqrt();
    let den = (0..n)
        .map(|i| (probe[i] - x[i]).powi(2))
        .sum::<f64>()
        .sqrt();
    if den > 0.0 && num > 0.0 && (num / den).is_finite() {
        num / den
    } else {
        1.0
    }
}

/// Runs APGD from `x` (projected first) and writes back the iterate with
/// the smallest projected-gradient residual, every residual evaluated at
/// the same reference step (the inverse of the first Lipschitz estimate),
/// so the choice compares like with like. With a fixed budget this is the
/// best iterate the run has seen, never one chosen by residuals at
/// different step sizes. `on_iteration(k, x_k, residual_k, elapsed)` is
/// called after every iteration. See `docs/theory.md`, "APGD".
pub fn apgd_minimize(
    objective: &mut dyn SmoothObjective,
    set: &dyn Projection,
    x: &mut [f64],
    settings: &ApgdSettings,
    ws: &mut ApgdWorkspace,
    on_iteration: &mut IterationCallback<'_>,
) -> Result<ApgdReport, SolveError> {
    settings.validate()?;
    let n = x.len();
    SolveError::require_len("x", objective.dim(), n)?;
    let start = Instant::now();
    let mut observer_time = Duration::ZERO;
    for v in [
        &mut ws.gamma,
        &mut ws.y,
        &mut ws.next,
        &mut ws.grad_y,
        &mut ws.grad_next,
        &mut ws.tmp,
        &mut ws.best,
    ] {
        v.clear();
        v.resize(n, 0.0);
    }
    set.project(x);
    if n == 0 {
        return Ok(ApgdReport {
            iterations: 0,
            residual: 0.0,
            initial_residual: 0.0,
            converged: true,
            stalled: false,
            lipschitz: 0.0,
            reference_step: 1.0,
        });
    }
    ws.gamma.copy_from_slice(x);
    ws.y.copy_from_slice(x);
    ws.best.copy_from_slice(x);
    let mut lip = initial_lipschitz(objective, x, &mut ws.grad_y, &mut ws.tmp, &mut ws.grad_next);
    let reference_step = 1.0 / lip;
    let initial_residual = pg_residual(&ws.gamma, &ws.grad_y, reference_step, set, &mut ws.tmp);
    if !initial_residual.is_finite() {
        return Err(SolveError::Diverged {
            solver: "apgd",
            row: 0,
            iteration: 0,
        });
    }
    let tol = settings.stopping.tolerance;
    let mut best_res = initial_residual;
    let mut theta = 1.0f64;
    let mut iterations = 0;
    let mut stalled = false;
    while iterations < settings.stopping.max_iterations {
        if settings.stopping.early_stop && best_res <= tol {
            break;
        }
        let fnext;
        (fnext, lip, stalled) = backtrack(objective, set, ws, lip);
        if !fnext.is_finite() {
            x.copy_from_slice(&ws.best);
            return Err(SolveError::Diverged {
                solver: "apgd",
                row: ws.next.iter().position(|v| !v.is_finite()).unwrap_or(0),
                iteration: iterations + 1,
            });
        }
        if stalled {
            break;
        }
        iterations += 1;
        let res = pg_residual(&ws.next, &ws.grad_next, reference_step, set, &mut ws.tmp);
        if res < best_res {
            best_res = res;
            ws.best.copy_from_slice(&ws.next);
        }
        theta = extrapolate(ws, theta, settings.adaptive_restart);
        std::mem::swap(&mut ws.gamma, &mut ws.next);
        lip *= settings.step_growth;
        let t_obs = Instant::now();
        on_iteration(
            iterations,
            &ws.gamma,
            res,
            t_obs.duration_since(start) - observer_time,
        );
        observer_time += t_obs.elapsed();
    }
    x.copy_from_slice(&ws.best);
    Ok(ApgdReport {
        iterations,
        residual: best_res,
        initial_residual,
        converged: best_res <= tol,
        stalled: stalled && best_res > tol,
        lipschitz: lip,
        reference_step,
    })
}

/// The backtracking step of APGD from `ws.y` (whose gradient is in
/// `ws.grad_y`): `ws.next = Π(y − ∇f(y)/L)` with `L` doubled until the
/// quadratic upper bound holds. Returns `f(next)`, the `L` that held, and
/// whether `L` outgrew 1e300 first (a stall).
fn backtrack(
    objective: &mut dyn SmoothObjective,
    set: &dyn Projection,
    ws: &mut ApgdWorkspace,
    mut lip: f64,
) -> (f64, f64, bool) {
    let n = ws.y.len();
    let fy = objective.value_gradient(&ws.y, &mut ws.grad_y);
    loop {
        let t = 1.0 / lip;
        for i in 0..n {
            ws.next[i] = ws.y[i] - t * ws.grad_y[i];
        }
        set.project(&mut ws.next);
        let fnext = objective.value_gradient(&ws.next, &mut ws.grad_next);
        let mut lin = 0.0;
        let mut quad = 0.0;
        for i in 0..n {
            let d = ws.next[i] - ws.y[i];
            lin += ws.grad_y[i] * d;
            quad += d * d;
        }
        let bound = fy + lin + 0.5 * lip * quad;
        if fnext <= bound + 1e-14 * fy.abs().max(fnext.abs()) || !fnext.is_finite() {
            return (fnext, lip, false);
        }
        if lip > 1e300 {
            return (fnext, lip, true);
        }
        lip *= 2.0;
    }
}

/// Nesterov's extrapolation `y = γ_{k+1} + β (γ_{k+1} − γ_k)` into
/// `ws.y`, or, with `adaptive_restart` and the gradient-mapping test
/// `(y − γ_{k+1})ᵀ(γ_{k+1} − γ_k) > 0`, a restart at `γ_{k+1}`. Returns
/// the next `θ`.
fn extrapolate(ws: &mut ApgdWorkspace, theta: f64, adaptive_restart: bool) -> f64 {
    let n = ws.y.len();
    let theta_next = 0.5 * (-theta * theta + theta * (theta * theta + 4.0).sqrt());
    let beta = theta * (1.0 - theta) / (theta * theta + theta_next);
    let restart = adaptive_restart
        && (0..n)
            .map(|i| (ws.y[i] - ws.next[i]) * (ws.next[i] - ws.gamma[i]))
            .sum::<f64>()
            > 0.0;
    if restart {
        ws.y.copy_from_slice(&ws.next);
        1.0
    } else {
        for i in 0..n {
            ws.y[i] = ws.next[i] + beta * (ws.next[i] - ws.gamma[i]);
        }
        theta_next
    }
}

/// Minimises the convex QP `½ xᵀ A x + bᵀ x` over a [`BoxConeSet`] (or any
/// [`Projection`]) by APGD, starting from `x`.
pub fn solve_qp(
    operator: &mut dyn LinearOperator,
    linear: &[f64],
    set: &dyn Projection,
    x: &mut [f64],
    settings: &ApgdSettings,
) -> Result<ApgdReport, SolveError> {
    for (field, got) in [("linear", linear.len()), ("x", x.len())] {
        SolveError::require_len(field, operator.dim(), got)?;
    }
    set.validate(operator.dim())?;
    settings.validate()?;
    let mut obj = Quadratic { operator, linear };
    apgd_minimize(
        &mut obj,
        set,
        x,
        settings,
        &mut ApgdWorkspace::default(),
        &mut |_, _, _, _| {},
    )
}

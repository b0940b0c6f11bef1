//! Frictional contact problems given by matrices (the FCLIB forms), so that
//! any contact code can use our solvers:
//!
//! * [`LocalProblem`]: find reactions `r` and velocities `u = W r + q` with,
//!   per contact `(normal, tangent 1, tangent 2)`, Coulomb's law
//!   `K ∋ r ⊥ û ∈ K*`, `K = {‖r_T‖ ≤ μ r_N}`, `û = u + (μ‖u_T‖, 0, 0)`
//!   (De Saxcé's modified velocity);
//! * [`GlobalProblem`]: `M v = H r + f`, `u = Hᵀ v + w`, reduced to the
//!   local form by `W = Hᵀ M⁻¹ H`, `q = Hᵀ M⁻¹ f + w` (M block diagonal).
//!
//! Solved by [`LocalGaussSeidel`] (non-smooth Gauss-Seidel: per contact,
//! the normal row and the exact disk-constrained tangent pair, repeated to
//! a local fixed point). The body-based [`crate::ContactProblem`] stays the
//! fast path for the stepper (it never forms W).

use crate::SolveError;
use crate::local::disk_qp;
use crate::solver::{SolverStatus, Stopping};
use nalgebra::DMatrix;
use nalgebra_sparse::{CooMatrix, CsrMatrix};

/// A local frictional contact problem `(W, q, μ)` in 3D (normal first).
#[derive(Debug, Clone, PartialEq)]
pub struct LocalProblem {
    w: CsrMatrix<f64>,
    q: Vec<f64>,
    mu: Vec<f64>,
}

fn non_finite(field: &'static str, index: usize, value: f64) -> SolveError {
    SolveError::NonFinite {
        field,
        index,
        value,
    }
}

impl LocalProblem {
    /// Checks and builds: `W` square of size `3 n`, `q` of length `3 n`,
    /// `μ` of length `n`, all finite, `μ ≥ 0`, `W` symmetric to 1e-10 of its
    /// largest entry.
    pub fn new(w: CsrMatrix<f64>, q: Vec<f64>, mu: Vec<f64>) -> Result<Self, SolveError> {
        let n = mu.len();
        if w.nrows() != w.ncols() {
            return Err(SolveError::DimensionMismatch {
                field: "W.ncols",
                expected: w.nrows(),
                got: w.ncols(),
            });
        }
        if w.nrows() != 3 * n {
            return Err(SolveError::DimensionMismatch {
                field: "W.nrows",
                expected: 3 * n,
                got: w.nrows(),
            });
        }
        if q.len() != 3 * n {
            return Err(SolveError::DimensionMismatch {
                field: "q",
                expected: 3 * n,
                got: q.len(),
            });
        }
        for (i, &x) in w.values().iter().enumerate() {
            if !x.is_finite() {
                return Err(non_finite("W", i, x));
            }
        }
        for (i, &x) in q.iter().enumerate() {
            if !x.is_finite() {
                return Err(non_finite("q", i, x));
            }
        }
        for (i, &x) in mu.iter().enumerate() {
            if !x.is_finite() {
                return Err(non_finite("mu", i, x));
            }
            if x < 0.0 {
                return Err(SolveError::OutOfRange {
                    field: "mu",
                    index: i,
                    value: x,
                    range: "[0, inf)",
                });
            }
        }
        let scale = w.values().iter().fold(0.0f64, |a, b| a.max(b.abs()));
        let wt = w.transpose();
        let diff = &w - &wt;
        if let Some((k, &x)) = diff
            .values()
            .iter()
            .enumerate()
            .find(|(_, x)| x.abs() > 1e-10 * scale)
        {
            return Err(SolveError::OutOfRange {
                field: "W",
                index: k,
                value: x,
                range: "symmetric (|W - W^T| <= 1e-10 max|W|)",
            });
        }
        Ok(Self { w, q, mu })
    }

    /// Number of contacts.
    pub fn contacts(&self) -> usize {
        self.mu.len()
    }
    /// The Delassus matrix `W`.
    pub fn w(&self) -> &CsrMatrix<f64> {
        &self.w
    }
    /// The free velocity `q`.
    pub fn q(&self) -> &[f64] {
        &self.q
    }
    /// Friction coefficients.
    pub fn mu(&self) -> &[f64] {
        &self.mu
    }

    /// Checks a starting `r` and returns its merit, or the report of a
    /// problem without contacts (nothing to solve, converged).
    pub(crate) fn start(&self, r: &[f64]) -> Result<Result<f64, LocalReport>, SolveError> {
        if r.len() != 3 * self.contacts() {
            return Err(SolveError::DimensionMismatch {
                field: "r",
                expected: 3 * self.contacts(),
                got: r.len(),
            });
        }
        let initial_merit = self.merit(r);
        if self.contacts() == 0 {
            return Ok(Err(LocalReport {
                status: SolverStatus::Converged,
                sweeps: 0,
                merit: 0.0,
                initial_merit,
            }));
        }
        Ok(Ok(initial_merit))
    }

    /// `u = W r + q`.
    pub fn velocity(&self, r: &[f64], u: &mut [f64]) {
        for (i, row) in self.w.row_iter().enumerate() {
            u[i] = self.q[i]
                + row
                    .col_indices()
                    .iter()
                    .zip(row.values())
                    .map(|(&j, &v)| v * r[j])
                    .sum::<f64>();
        }
    }

    /// The Coulomb merit `E = ‖r − P_K(r − û)‖ / (1 + ‖q‖)` (FCLIB,
    /// Siconos; `../shared/fclib/README.md`).
    pub fn merit(&self, r: &[f64]) -> f64 {
        let mut u = vec![0.0; r.len()];
        self.velocity(r, &mut u);
        let mut err2 = 0.0;
        for (c, &mu) in self.mu.iter().enumerate() {
            let k = 3 * c;
            let ut = (u[k + 1] * u[k + 1] + u[k + 2] * u[k + 2]).sqrt();
            let mut a = r[k] - (u[k] + mu * ut);
            let mut t = [r[k + 1] - u[k + 1], r[k + 2] - u[k + 2]];
            crate::qp::project_cone(mu, &mut a, &mut t);
            err2 += (r[k] - a).powi(2) + (r[k + 1] - t[0]).powi(2) + (r[k + 2] - t[1]).powi(2);
        }
        let qn = self.q.iter().map(|x| x * x).sum::<f64>().sqrt();
        err2.sqrt() / (1.0 + qn)
    }
}

/// A global frictional contact problem `(M, H, f, w, μ)` in 3D.
#[derive(Debug, Clone, PartialEq)]
pub struct GlobalProblem {
    /// Mass matrix (symmetric positive definite, block diagonal).
    pub m: CsrMatrix<f64>,
    /// Contact matrix `H` (degrees of freedom × 3 n).
    pub h: CsrMatrix<f64>,
    /// External impulses.
    pub f: Vec<f64>,
    /// Constraint offsets.
    pub w: Vec<f64>,
    /// Friction coefficients.
    pub mu: Vec<f64>,
}

impl GlobalProblem {
    /// Reduces to the local form: `W = Hᵀ M⁻¹ H`, `q = Hᵀ M⁻¹ f + w`.
    /// `M` must be block diagonal (blocks found from its sparsity, each
    /// inverted densely) and positive definite.
    pub fn to_local(&self) -> Result<LocalProblem, SolveError> {
        let nd = self.m.nrows();
        if self.m.ncols() != nd {
            return Err(SolveError::DimensionMismatch {
                field: "M.ncols",
                expected: nd,
                got: self.m.ncols(),
            });
        }
        if self.h.nrows() != nd {
            return Err(SolveError::DimensionMismatch {
                field: "H.nrows",
                expected: nd,
                got: self.h.nrows(),
            });
        }
        if self.f.len() != nd {
            return Err(SolveError::DimensionMismatch {
                field: "f",
                expected: nd,
                got: self.f.len(),
            });
        }
        let minv = block_inverse(&self.m)?;
        let mih = &minv * &self.h;
        let w = &self.h.transpose() * &mih;
        let mf = mat_vec(&minv, &self.f);
        let mut q = mat_vec(&self.h.transpose(), &mf);
        if self.w.len() != q.len() {
            return Err(SolveError::DimensionMismatch {
                field: "w",
                expected: q.len(),
                got: self.w.len(),
            });
        }
        for (qi, wi) in q.iter_mut().zip(&self.w) {
            *qi += wi;
        }
        // symmetrize round-off
        let wt = w.transpose();
        let w = (&w + &wt) * 0.5;
        LocalProblem::new(w, q, self.mu.clone())
    }
}

/// `A x`.
fn mat_vec(a: &CsrMatrix<f64>, x: &[f64]) -> Vec<f64> {
    a.row_iter()
        .map(|row| {
            row.col_indices()
                .iter()
                .zip(row.values())
                .map(|(&j, &v)| v * x[j])
                .sum()
        })
        .collect()
}

/// Inverse of a block-diagonal sparse matrix, blocks being the connected
/// index ranges of its sparsity pattern.
fn block_inverse(m: &CsrMatrix<f64>) -> Result<CsrMatrix<f64>, SolveError> {
    let n = m.nrows();
    // block end of each row: the furthest column any row of the block touches
    let mut coo = CooMatrix::new(n, n);
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        let mut i = start;
        while i < end {
            let row = m.row(i);
            for &j in row.col_indices() {
                if j < start {
                    return Err(SolveError::OutOfRange {
                        field: "M",
                        index: i,
                        value: j as f64,
                        range: "block diagonal",
                    });
                }
                end = end.max(j + 1);
            }
            i += 1;
        }
        let size = end - start;
        let mut block = DMatrix::<f64>::zeros(size, size);
        for i in start..end {
            let row = m.row(i);
            for (&j, &v) in row.col_indices().iter().zip(row.values()) {
                block[(i - start, j - start)] = v;
            }
        }
        let inv = block
            .clone()
            .cholesky()
            .map(|c| c.inverse())
            .ok_or(SolveError::OutOfRange {
                field: "M",
                index: start,
                value: block[(0, 0)],
                range: "positive definite blocks",
            })?;
        for a in 0..size {
            for b in 0..size {
                if inv[(a, b)] != 0.0 {
                    coo.push(start + a, start + b, inv[(a, b)]);
                }
            }
        }
        start = end;
    }
    Ok(CsrMatrix::from(&coo))
}

/// What a local solve did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LocalReport {
    /// How it ended (tolerance on the Coulomb merit).
    pub status: SolverStatus,
    /// Sweeps performed.
    pub sweeps: usize,
    /// Coulomb merit of the returned reactions.
    pub merit: f64,
    /// Merit of the start.
    pub initial_merit: f64,
}

/// Non-smooth Gauss-Seidel on a [`LocalProblem`]: for each contact in
/// turn, with `u_c` kept current, the normal row `r_N ← max(0, r_N −
/// u_N/W_NN)` and the tangent pair solved exactly over the disk
/// `‖r_T‖ ≤ μ r_N` (the 2×2 block `W_TT`), alternated up to
/// `local_iterations` times per visit (a local fixed point: Coulomb's law
/// for the contact with the others held). The merit is checked every
/// `check_every` sweeps when stopping early.
#[derive(Debug, Clone)]
pub struct LocalGaussSeidel {
    /// Sweep cap and tolerance on the Coulomb merit.
    pub stopping: Stopping,
    /// Normal/tangent alternations per contact visit (1: plain block GS).
    pub local_iterations: usize,
    /// Sweeps between merit checks.
    pub check_every: usize,
}

impl Default for LocalGaussSeidel {
    fn default() -> Self {
        Self {
            stopping: Stopping::to_tolerance(100_000, 1e-8),
            local_iterations: 10,
            check_every: 1,
        }
    }
}

impl LocalGaussSeidel {
    /// Solves from `r` (in place), calling `on_sweep(sweep, r)` after each
    /// sweep.
    pub fn solve(
        &self,
        p: &LocalProblem,
        r: &mut [f64],
        on_sweep: &mut dyn FnMut(usize, &[f64]),
    ) -> Result<LocalReport, SolveError> {
        self.stopping.validate()?;
        let n = p.contacts();
        let initial_merit = match p.start(r)? {
            Ok(merit) => merit,
            Err(empty) => return Ok(empty),
        };
        // the 3×3 diagonal blocks
        let blocks: Vec<[f64; 9]> = (0..n)
            .map(|c| {
                let mut b = [0.0; 9];
                for a in 0..3 {
                    let row = p.w.row(3 * c + a);
                    for (&j, &v) in row.col_indices().iter().zip(row.values()) {
                        if j >= 3 * c && j < 3 * c + 3 {
                            b[3 * a + (j - 3 * c)] = v;
                        }
                    }
                }
                b
            })
            .collect();
        let row_dot = |i: usize, r: &[f64]| -> f64 {
            let row = p.w.row(i);
            p.q[i]
                + row
                    .col_indices()
                    .iter()
                    .zip(row.values())
                    .map(|(&j, &v)| v * r[j])
                    .sum::<f64>()
        };
        let mut sweeps = 0;
        let mut merit = initial_merit;
        let mut stalled = false;
        let mut converged = false;
        for s in 0..self.stopping.max_iterations {
            let mut change = 0.0f64;
            for c in 0..n {
                let k = 3 * c;
                let b = &blocks[c];
                let mut u = [row_dot(k, r), row_dot(k + 1, r), row_dot(k + 2, r)];
                for _ in 0..self.local_iterations.max(1) {
                    let old = [r[k], r[k + 1], r[k + 2]];
                    // normal
                    let rn = if b[0] > 0.0 {
                        (r[k] - u[0] / b[0]).max(0.0)
                    } else {
                        r[k]
                    };
                    let d = rn - r[k];
                    r[k] = rn;
                    for a in 0..3 {
                        u[a] += b[3 * a] * d;
                    }
                    // tangent pair, exact over the disk
                    let x0 = [r[k + 1], r[k + 2]];
                    let x = disk_qp(
                        [b[4], 0.5 * (b[5] + b[7]), b[8]],
                        x0,
                        [u[1], u[2]],
                        p.mu[c] * r[k],
                    );
                    let dt = [x[0] - x0[0], x[1] - x0[1]];
                    r[k + 1] = x[0];
                    r[k + 2] = x[1];
                    for a in 0..3 {
                        u[a] += b[3 * a + 1] * dt[0] + b[3 * a + 2] * dt[1];
                    }
                    let step = (0..3)
                        .map(|a| (r[k + a] - old[a]).abs())
                        .fold(0.0, f64::max);
                    change = change.max(step);
                    if step <= 1e-15 * (1.0 + r[k].abs()) {
                        break;
                    }
                }
                if !r[k].is_finite() || !r[k + 1].is_finite() || !r[k + 2].is_finite() {
                    return Err(SolveError::Diverged {
                        solver: "local-gauss-seidel",
                        row: k,
                        iteration: s + 1,
                    });
                }
            }
            sweeps = s + 1;
            on_sweep(sweeps, r);
            if self.stopping.early_stop && sweeps % self.check_every.max(1) == 0 {
                merit = p.merit(r);
                if merit <= self.stopping.tolerance {
                    converged = true;
                    break;
                }
                if change == 0.0 {
                    stalled = true;
                    break;
                }
            }
        }
        if !converged {
            merit = p.merit(r);
        }
        Ok(LocalReport {
            status: SolverStatus::judge(merit, initial_merit, self.stopping.tolerance, stalled),
            sweeps,
            merit,
            initial_merit,
        })
    }
}

impl LocalProblem {
    /// The local form of a body-based problem with 3 rows per contact
    /// (normal, two friction rows; no generic rows) and the disk friction
    /// set: with `D = diag(s_n, 1, 1)` per contact, the reactions are
    /// `r = D λ` (the physical normal impulse `s_n λ_n`), the velocities
    /// `u = D⁻¹ w`, so `W = D⁻¹ (G M⁻¹ Gᵀ + Σ) D⁻¹` and
    /// `q = D⁻¹ (G v* + b)`. Coulomb's law for `(r, u)` is the disk MCP of
    /// the body-based problem.
    pub fn from_contact_problem(p: &crate::ContactProblem) -> Result<Self, SolveError> {
        if p.contact_rows() != crate::ContactRows::NormalFriction || !p.generic_rows().is_empty() {
            return Err(SolveError::InvalidSettings {
                field: "rows",
                reason: "the local form needs 3 rows per contact and no generic rows",
            });
        }
        let n = p.len();
        let mut scratch = vec![ndem_math::Velocity6::ZERO; p.body_count()];
        let mut col = vec![0.0; n];
        let mut e = vec![0.0; n];
        let scale: Vec<f64> = p
            .contacts()
            .iter()
            .flat_map(|c| [c.jacobian.normal_scale, 1.0, 1.0])
            .collect();
        let mut coo = CooMatrix::new(n, n);
        for j in 0..n {
            e.fill(0.0);
            e[j] = 1.0;
            p.apply_operator(&e, &mut scratch, &mut col);
            for (i, &v) in col.iter().enumerate() {
                if v != 0.0 {
                    coo.push(i, j, v / (scale[i] * scale[j]));
                }
            }
        }
        let mut q = vec![0.0; n];
        p.linear_term(&mut q);
        for (qi, s) in q.iter_mut().zip(&scale) {
            *qi /= s;
        }
        let w = CsrMatrix::from(&coo);
        let wt = w.transpose();
        let w = (&w + &wt) * 0.5;
        let mu = p.contacts().iter().map(|c| c.friction).collect();
        Self::new(w, q, mu)
    }
}

/// APGD for a [`LocalProblem`] inside the De Saxcé fixed point: each outer
/// iteration solves the cone-constrained QP `min ½ rᵀ W r + q̂ᵀ r` over the
/// Coulomb cones (Anitescu's relaxation) with `q̂_N = q_N + μ‖u_T‖` from the
/// previous answer, in Jacobi-scaled variables (the friction pair shares
/// one scale so the cone stays a cone). At a fixed point the answer solves
/// Coulomb's law (Acary, Cadoux, Lemaréchal, Malick 2011). Returns the
/// answer with the smallest Coulomb merit.
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

impl LocalApgd {
    /// Solves from `r` (in place), calling `on_iteration(k, r)` after each
    /// outer iteration.
    pub fn solve(
        &self,
        p: &LocalProblem,
        r: &mut [f64],
        on_iteration: &mut dyn FnMut(usize, &[f64]),
    ) -> Result<LocalReport, SolveError> {
        self.stopping.validate()?;
        let initial_merit = match p.start(r)? {
            Ok(m) => m,
            Err(empty) => return Ok(empty),
        };
        let n = p.contacts();
        let m = 3 * n;
        let diag = |i: usize| p.w.get_entry(i, i).map_or(0.0, |e| e.into_value());
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
                .map(|c| (3 * c, 3, p.mu[c] * scale[3 * c] / scale[3 * c + 1]))
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
                let shift = p.mu[c] * u[k + 1].hypot(u[k + 2]);
                linear[k] = scale[k] * (p.q[k] + shift);
                linear[k + 1] = scale[k + 1] * p.q[k + 1];
                linear[k + 2] = scale[k + 2] * p.q[k + 2];
            }
            let w = &p.w;
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
            on_iteration(outer, r);
        }
        let merit = best.restore(merit, r);
        Ok(LocalReport {
            status: SolverStatus::judge(merit, initial_merit, self.stopping.tolerance, false),
            sweeps: outer,
            merit,
            initial_merit,
        })
    }
}

/// The iterate with the smallest merit seen so far, for solvers that roll
/// back to it (Newton, the De Saxcé fixed points): their iterations lower
/// another function than the merit they are judged on.
#[derive(Debug, Clone)]
pub(crate) struct BestIterate {
    merit: f64,
    x: Vec<f64>,
}

impl BestIterate {
    /// Starts from `x` with `merit`.
    pub(crate) fn new(merit: f64, x: &[f64]) -> Self {
        Self {
            merit,
            x: x.to_vec(),
        }
    }

    /// Keeps `x` if its merit is the smallest so far.
    pub(crate) fn offer(&mut self, merit: f64, x: &[f64]) {
        if merit < self.merit {
            self.merit = merit;
            self.x.copy_from_slice(x);
        }
    }

    /// Writes the best iterate back to `x` when `merit` (that of `x`) is
    /// worse, and returns the merit of what `x` now holds.
    pub(crate) fn restore(&self, merit: f64, x: &mut [f64]) -> f64 {
        if merit > self.merit {
            x.copy_from_slice(&self.x);
            self.merit
        } else {
            merit
        }
    }
}

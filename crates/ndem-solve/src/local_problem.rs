//! Frictional contact problems given by matrices (the FCLIB forms), so that
//! any contact code can use our solvers:
//!
//! * [`LocalProblem`]: find reactions `r` and velocities `u = W r + q` with,
//!   per contact `(normal, tangent 1, tangent 2)`, Coulomb's law
//!   `K ∋ r ⊥ û ∈ K*`, `K = {‖r_T‖ ≤ μ r_N}`, `û = u + (μ‖u_T‖, 0, 0)`
//!   (De Saxcé's modified velocity);
//! * [`GlobalProblem`]: `M v = H r + f`, `u = Hᵀ v + w`, reduced to the
//!   local form by `W = Hᵀ M⁻¹ H`, `q = Hᵀ M⁻¹ f + w` (M block diagonal
//!   or general sparse).
//!
//! Solved by the [`crate::LocalSolver`]s ([`crate::LocalGaussSeidel`],
//! [`crate::SemismoothNewton`], [`crate::LocalApgd`]) and, in global form,
//! by [`crate::GlobalGaussSeidel`]. The body-based [`crate::ContactProblem`]
//! stays the fast path for the stepper (it never forms W).

use crate::local_contact::law_error2;
use crate::{FrictionSet, SolveError};
use faer::linalg::solvers::Solve;
use faer::sparse::{SparseColMat, Triplet};
use nalgebra::DMatrix;
use nalgebra_sparse::{CooMatrix, CscMatrix, CsrMatrix};
use ndem_math::SettingError;

/// A local frictional contact problem `(W, q, μ)` in 3D (normal first).
/// `W` may be non-symmetric (FCLIB allows it: frames that are not
/// orthonormal, or reactions and velocities expressed in different
/// frames); every merit is against the `W` given.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalProblem {
    w: CsrMatrix<f64>,
    q: Vec<f64>,
    mu: Vec<f64>,
    /// The first entry of `W − Wᵀ` above 1e-10 of `W`'s largest entry
    /// (its index among the stored values of `W − Wᵀ`, and its value), or
    /// `None` for a symmetric `W`.
    asymmetry: Option<(usize, f64)>,
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
    /// `μ` of length `n`, all finite, `μ ≥ 0`. `W` need not be symmetric
    /// ([`Self::is_symmetric`]).
    pub fn new(w: CsrMatrix<f64>, q: Vec<f64>, mu: Vec<f64>) -> Result<Self, SolveError> {
        let n = mu.len();
        SolveError::require_len("W.ncols", w.nrows(), w.ncols())?;
        SolveError::require_len("W.nrows", 3 * n, w.nrows())?;
        SolveError::require_len("q", 3 * n, q.len())?;
        check_finite("W", w.values())?;
        check_finite("q", &q)?;
        check_friction(&mu)?;
        let asymmetry = asymmetry(&w);
        Ok(Self {
            w,
            q,
            mu,
            asymmetry,
        })
    }

    /// `true` when `W` is symmetric to 1e-10 of its largest entry. Solvers
    /// that minimise `½ rᵀ W r + q̂ᵀ r` ([`crate::LocalApgd`]) need it;
    /// Gauss-Seidel and Newton take any `W`.
    pub fn is_symmetric(&self) -> bool {
        self.asymmetry.is_none()
    }

    /// The error of a solver that needs a symmetric `W`, naming the first
    /// entry of `W − Wᵀ` over the bound; `Ok` for a symmetric `W`.
    pub(crate) fn require_symmetric(&self) -> Result<(), SolveError> {
        match self.asymmetry {
            Some((index, value)) => Err(SolveError::OutOfRange {
                field: "W",
                index,
                value,
                range: "symmetric (|W - W^T| <= 1e-10 max|W|) for this solver",
            }),
            None => Ok(()),
        }
    }

    /// The largest diagonal entry of `W` (at least the smallest positive
    /// `f64`): the scale of a proximal weight.
    pub(crate) fn largest_diagonal(&self) -> f64 {
        (0..self.w.nrows())
            .map(|i| self.w.get_entry(i, i).map_or(0.0, |e| e.into_value()))
            .fold(0.0, f64::max)
            .max(f64::MIN_POSITIVE)
    }

    /// The proximal subproblem at `center` with weight `eta`:
    /// `(W + η 1, q − η r_c, μ)`, whose solution is the proximal point of
    /// the Coulomb problem at `r_c` (Siconos' PROX). Its `W + η 1` is
    /// positive definite for `η > 0` whenever `W` is positive
    /// semidefinite, even where `W` is rank deficient.
    pub(crate) fn proximal(&self, eta: f64, center: &[f64]) -> LocalProblem {
        let n = self.w.nrows();
        let identity = CsrMatrix::identity(n) * eta;
        let w = &self.w + &identity;
        let q = self
            .q
            .iter()
            .zip(center)
            .map(|(q, r)| q - eta * r)
            .collect();
        LocalProblem {
            w,
            q,
            mu: self.mu.clone(),
            asymmetry: self.asymmetry,
        }
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

    /// `u_i = (W r + q)_i`.
    pub(crate) fn row_velocity(&self, i: usize, r: &[f64]) -> f64 {
        let row = self.w.row(i);
        self.q[i]
            + row
                .col_indices()
                .iter()
                .zip(row.values())
                .map(|(&j, &v)| v * r[j])
                .sum::<f64>()
    }

    /// `u = W r + q`.
    pub fn velocity(&self, r: &[f64], u: &mut [f64]) {
        for (i, ui) in u.iter_mut().enumerate().take(self.w.nrows()) {
            *ui = self.row_velocity(i, r);
        }
    }

    /// The 3×3 diagonal blocks `W_cc` (row-major), one per contact.
    pub(crate) fn diagonal_blocks(&self) -> Vec<[f64; 9]> {
        (0..self.contacts())
            .map(|c| {
                let mut b = [0.0; 9];
                for a in 0..3 {
                    let row = self.w.row(3 * c + a);
                    for (&j, &v) in row.col_indices().iter().zip(row.values()) {
                        if j >= 3 * c && j < 3 * c + 3 {
                            b[3 * a + (j - 3 * c)] = v;
                        }
                    }
                }
                b
            })
            .collect()
    }

    /// The Coulomb merit `E = ‖r − P_K(r − û)‖ / (1 + ‖q‖)`, with
    /// De Saxcé's modified velocity `û = u + (μ‖u_T‖, 0, 0)` (FCLIB,
    /// Siconos; `crates/ndem-fclib/tests/data/README.md`). Zero exactly at a solution of
    /// Coulomb's law.
    pub fn merit(&self, r: &[f64]) -> f64 {
        self.law_merit(FrictionSet::Disk, r)
    }

    /// The merit of the box friction law (the warm-starting paper's
    /// faceted cone, `|r_Ti| ≤ μ r_N` per tangent row):
    /// `‖r − P(r − u)‖ / (1 + ‖q‖)` with `P` the projection onto
    /// `r_N ≥ 0` and onto `[−μ r_N, μ r_N]` per tangent row. Zero exactly
    /// at a solution of the box law (which is not Coulomb's: the box
    /// allows `‖r_T‖` up to `√2 μ r_N`).
    pub fn box_merit(&self, r: &[f64]) -> f64 {
        self.law_merit(FrictionSet::Box, r)
    }

    /// The merit of `friction`'s law.
    pub(crate) fn law_merit(&self, friction: FrictionSet, r: &[f64]) -> f64 {
        let mut u = vec![0.0; r.len()];
        self.velocity(r, &mut u);
        law_error2(friction, &self.mu, r, &u).sqrt() / (1.0 + norm(&self.q))
    }
}

fn norm(x: &[f64]) -> f64 {
    x.iter().map(|x| x * x).sum::<f64>().sqrt()
}

pub(crate) fn check_finite(field: &'static str, values: &[f64]) -> Result<(), SolveError> {
    match values.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        Some((i, &x)) => Err(non_finite(field, i, x)),
        None => Ok(()),
    }
}

fn check_friction(mu: &[f64]) -> Result<(), SolveError> {
    check_finite("mu", mu)?;
    match mu.iter().enumerate().find(|(_, x)| **x < 0.0) {
        Some((index, &value)) => Err(SolveError::OutOfRange {
            field: "mu",
            index,
            value,
            range: "[0, inf)",
        }),
        None => Ok(()),
    }
}

/// The first stored entry of `a − aᵀ` above 1e-10 of `a`'s largest entry:
/// its index and value; `None` when `a` is symmetric to that bound.
fn asymmetry(a: &CsrMatrix<f64>) -> Option<(usize, f64)> {
    let scale = a.values().iter().fold(0.0f64, |x, y| x.max(y.abs()));
    let diff = a - &a.transpose();
    diff.values()
        .iter()
        .enumerate()
        .find(|(_, x)| x.abs() > 1e-10 * scale)
        .map(|(index, &value)| (index, value))
}

/// `a` symmetric to 1e-10 of its largest entry.
fn check_symmetric(field: &'static str, a: &CsrMatrix<f64>) -> Result<(), SolveError> {
    match asymmetry(a) {
        Some((index, value)) => Err(SolveError::OutOfRange {
            field,
            index,
            value,
            range: "symmetric (|A - A^T| <= 1e-10 max|A|)",
        }),
        None => Ok(()),
    }
}

/// A global frictional contact problem `(M, H, f, w, μ)` in 3D: find
/// velocities `v`, reactions `r` and local velocities `u` with
/// `M v = H r + f`, `u = Hᵀ v + w` and Coulomb's law per contact (FCLIB's
/// global form; normal first in each contact's 3 columns of `H`).
#[derive(Debug, Clone, PartialEq)]
pub struct GlobalProblem {
    /// Mass matrix, symmetric positive definite: block diagonal (rigid
    /// bodies) or general sparse.
    pub m: CsrMatrix<f64>,
    /// Contact matrix `H` (degrees of freedom × 3 n); a column may touch
    /// any number of degrees of freedom.
    pub h: CsrMatrix<f64>,
    /// External impulses.
    pub f: Vec<f64>,
    /// Constraint offsets.
    pub w: Vec<f64>,
    /// Friction coefficients.
    pub mu: Vec<f64>,
}

impl GlobalProblem {
    /// Checks shapes (`M` square, `H` with `M`'s rows and `3 n` columns,
    /// `f`, `w` and `μ` lengths), finite values, `μ ≥ 0` and `M`
    /// symmetric; typed errors name the field. (Positive definiteness is
    /// checked when `M` is factorized.)
    pub fn validate(&self) -> Result<(), SolveError> {
        let nd = self.m.nrows();
        let n = self.mu.len();
        for (field, expected, got) in [
            ("M.ncols", nd, self.m.ncols()),
            ("H.nrows", nd, self.h.nrows()),
            ("H.ncols", 3 * n, self.h.ncols()),
            ("f", nd, self.f.len()),
            ("w", 3 * n, self.w.len()),
        ] {
            SolveError::require_len(field, expected, got)?;
        }
        check_finite("M", self.m.values())?;
        check_finite("H", self.h.values())?;
        check_finite("f", &self.f)?;
        check_finite("w", &self.w)?;
        check_friction(&self.mu)?;
        check_symmetric("M", &self.m)
    }

    /// Reduces to the local form: `W = Hᵀ M⁻¹ H`, `q = Hᵀ M⁻¹ f + w`.
    /// `M` is inverted block by block when its sparsity is block diagonal
    /// with blocks of at most [`DENSE_BLOCK_LIMIT`] rows (rigid bodies),
    /// otherwise factorized by sparse Cholesky (faer); either way it must
    /// be positive definite.
    pub fn to_local(&self) -> Result<LocalProblem, SolveError> {
        let ops = GlobalOperators::new(self)?;
        let w = &self.h.transpose() * &ops.minv_h_csr();
        // symmetrize round-off
        let w = (&w + &w.transpose()) * 0.5;
        LocalProblem::new(w, ops.q.clone(), self.mu.clone())
    }
}

/// Largest diagonal block of `M` inverted densely; a larger connected
/// block (a general sparse mass matrix) is factorized by sparse Cholesky.
pub const DENSE_BLOCK_LIMIT: usize = 64;

/// `M⁻¹` applied to vectors and to the columns of `H`.
enum MassInverse {
    /// `M⁻¹` itself, block diagonal.
    Blocks(CsrMatrix<f64>),
    /// Sparse Cholesky factor of `M`.
    Factor(faer::sparse::linalg::solvers::Llt<usize, f64>),
}

impl MassInverse {
    fn new(m: &CsrMatrix<f64>) -> Result<Self, SolveError> {
        match block_inverse(m)? {
            Some(inverse) => Ok(Self::Blocks(inverse)),
            None => {
                let n = m.nrows();
                let triplets: Vec<Triplet<usize, usize, f64>> = m
                    .triplet_iter()
                    .map(|(i, j, &v)| Triplet::new(i, j, v))
                    .collect();
                let not_pd = SolveError::OutOfRange {
                    field: "M",
                    index: 0,
                    value: m.get_entry(0, 0).map_or(0.0, |e| e.into_value()),
                    range: "positive definite",
                };
                let sparse = SparseColMat::<usize, f64>::try_new_from_triplets(n, n, &triplets)
                    .map_err(|_| not_pd.clone())?;
                let factor = sparse.sp_cholesky(faer::Side::Lower).map_err(|_| not_pd)?;
                Ok(Self::Factor(factor))
            }
        }
    }

    /// `M⁻¹ x`.
    fn apply(&self, x: &[f64]) -> Vec<f64> {
        match self {
            Self::Blocks(inverse) => mat_vec(inverse, x),
            Self::Factor(factor) => {
                let rhs = faer::Mat::<f64>::from_fn(x.len(), 1, |i, _| x[i]);
                let y = factor.solve(&rhs);
                (0..x.len()).map(|i| y[(i, 0)]).collect()
            }
        }
    }

    /// `M⁻¹ H`, by columns.
    fn apply_columns(&self, h: &CsrMatrix<f64>) -> CscMatrix<f64> {
        match self {
            Self::Blocks(inverse) => CscMatrix::from(&(inverse * h)),
            Self::Factor(factor) => {
                let (nd, nc) = (h.nrows(), h.ncols());
                let hc = CscMatrix::from(h);
                let mut coo = CooMatrix::new(nd, nc);
                // columns in chunks, so that the dense right-hand sides stay small
                for first in (0..nc).step_by(64) {
                    let last = (first + 64).min(nc);
                    let mut rhs = faer::Mat::<f64>::zeros(nd, last - first);
                    for j in first..last {
                        let col = hc.col(j);
                        for (&i, &v) in col.row_indices().iter().zip(col.values()) {
                            rhs[(i, j - first)] = v;
                        }
                    }
                    let y = factor.solve(&rhs);
                    for j in first..last {
                        for i in 0..nd {
                            let v = y[(i, j - first)];
                            if v != 0.0 {
                                coo.push(i, j, v);
                            }
                        }
                    }
                }
                CscMatrix::from(&coo)
            }
        }
    }
}

/// What the solvers of a [`GlobalProblem`] need: `H` and `M⁻¹ H` by
/// columns, `M⁻¹ f`, and `q = Hᵀ M⁻¹ f + w` (for the merit's scale).
pub(crate) struct GlobalOperators<'p> {
    problem: &'p GlobalProblem,
    h: CscMatrix<f64>,
    minv_h: CscMatrix<f64>,
    minv_f: Vec<f64>,
    q: Vec<f64>,
    q_norm: f64,
}

impl<'p> GlobalOperators<'p> {
    /// Validates `problem` and factorizes its mass matrix.
    pub(crate) fn new(problem: &'p GlobalProblem) -> Result<Self, SolveError> {
        problem.validate()?;
        let minv = MassInverse::new(&problem.m)?;
        let h = CscMatrix::from(&problem.h);
        let minv_h = minv.apply_columns(&problem.h);
        let minv_f = minv.apply(&problem.f);
        let mut q = vec![0.0; h.ncols()];
        for (j, qj) in q.iter_mut().enumerate() {
            *qj = problem.w[j] + column_dot(&h, j, &minv_f);
        }
        let q_norm = norm(&q);
        Ok(Self {
            problem,
            h,
            minv_h,
            minv_f,
            q,
            q_norm,
        })
    }

    fn minv_h_csr(&self) -> CsrMatrix<f64> {
        CsrMatrix::from(&self.minv_h)
    }

    pub(crate) fn contacts(&self) -> usize {
        self.problem.mu.len()
    }

    pub(crate) fn mu(&self, c: usize) -> f64 {
        self.problem.mu[c]
    }

    /// Checks the lengths of `r` and `v` and that `r` is finite.
    pub(crate) fn check_sizes(&self, r: &[f64], v: &[f64]) -> Result<(), SolveError> {
        for (field, expected, got) in [
            ("r", 3 * self.contacts(), r.len()),
            ("v", self.problem.f.len(), v.len()),
        ] {
            SolveError::require_len(field, expected, got)?;
        }
        check_finite("r", r)
    }

    /// `v = M⁻¹ (f + H r)`.
    pub(crate) fn velocity(&self, r: &[f64], v: &mut [f64]) {
        v.copy_from_slice(&self.minv_f);
        for (j, &rj) in r.iter().enumerate() {
            if rj != 0.0 {
                add_column(&self.minv_h, j, rj, v);
            }
        }
    }

    /// `u_c = H_cᵀ v + w_c`.
    pub(crate) fn contact_velocity(&self, c: usize, v: &[f64]) -> [f64; 3] {
        std::array::from_fn(|a| self.problem.w[3 * c + a] + column_dot(&self.h, 3 * c + a, v))
    }

    /// `v ← v + (M⁻¹ H_c) Δr_c`.
    pub(crate) fn add_reaction_change(&self, c: usize, delta: [f64; 3], v: &mut [f64]) {
        for (a, &d) in delta.iter().enumerate() {
            if d != 0.0 {
                add_column(&self.minv_h, 3 * c + a, d, v);
            }
        }
    }

    /// The 3×3 blocks `W_cc = H_cᵀ M⁻¹ H_c` (row-major), one per contact.
    pub(crate) fn diagonal_blocks(&self) -> Vec<[f64; 9]> {
        (0..self.contacts())
            .map(|c| {
                std::array::from_fn(|e| {
                    let (a, b) = (e / 3, e % 3);
                    sparse_column_dot(&self.h, 3 * c + a, &self.minv_h, 3 * c + b)
                })
            })
            .collect()
    }

    /// The merit of `friction`'s law for reactions `r` and velocities `v`
    /// (as [`LocalProblem::merit`] on the reduced problem).
    pub(crate) fn merit(&self, friction: FrictionSet, r: &[f64], v: &[f64]) -> f64 {
        let u: Vec<f64> = (0..self.contacts())
            .flat_map(|c| self.contact_velocity(c, v))
            .collect();
        law_error2(friction, &self.problem.mu, r, &u).sqrt() / (1.0 + self.q_norm)
    }
}

/// `a_jᵀ x` for column `j` of `a`.
fn column_dot(a: &CscMatrix<f64>, j: usize, x: &[f64]) -> f64 {
    let col = a.col(j);
    col.row_indices()
        .iter()
        .zip(col.values())
        .map(|(&i, &v)| v * x[i])
        .sum()
}

/// `y ← y + s a_j` for column `j` of `a`.
fn add_column(a: &CscMatrix<f64>, j: usize, s: f64, y: &mut [f64]) {
    let col = a.col(j);
    for (&i, &v) in col.row_indices().iter().zip(col.values()) {
        y[i] += s * v;
    }
}

/// `a_iᵀ b_j` for sparse columns with sorted row indices.
fn sparse_column_dot(a: &CscMatrix<f64>, i: usize, b: &CscMatrix<f64>, j: usize) -> f64 {
    let (ca, cb) = (a.col(i), b.col(j));
    let (ia, va, ib, vb) = (ca.row_indices(), ca.values(), cb.row_indices(), cb.values());
    let (mut x, mut y, mut sum) = (0, 0, 0.0);
    while x < ia.len() && y < ib.len() {
        match ia[x].cmp(&ib[y]) {
            std::cmp::Ordering::Less => x += 1,
            std::cmp::Ordering::Greater => y += 1,
            std::cmp::Ordering::Equal => {
                sum += va[x] * vb[y];
                x += 1;
                y += 1;
            }
        }
    }
    sum
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
/// index ranges of its sparsity pattern; `None` when a block has more than
/// [`DENSE_BLOCK_LIMIT`] rows (factorize the whole matrix instead).
fn block_inverse(m: &CsrMatrix<f64>) -> Result<Option<CsrMatrix<f64>>, SolveError> {
    let n = m.nrows();
    let mut coo = CooMatrix::new(n, n);
    let mut start = 0;
    while start < n {
        // the block ends at the furthest column any of its rows touches
        let mut end = start + 1;
        let mut i = start;
        while i < end {
            end = m
                .row(i)
                .col_indices()
                .iter()
                .fold(end, |e, &j| e.max(j + 1));
            i += 1;
        }
        let size = end - start;
        if size > DENSE_BLOCK_LIMIT {
            return Ok(None);
        }
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
    Ok(Some(CsrMatrix::from(&coo)))
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
        SolveError::require(
            p.contact_rows() == crate::ContactRows::NormalFriction && p.generic_rows().is_empty(),
            "rows",
            "the local form needs 3 rows per contact and no generic rows",
        )?;
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
            p.apply_operator_unchecked(&e, &mut scratch, &mut col);
            for (i, &v) in col.iter().enumerate() {
                if v != 0.0 {
                    coo.push(i, j, v / (scale[i] * scale[j]));
                }
            }
        }
        let mut q = vec![0.0; n];
        p.linear_term_unchecked(&mut q);
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

//! Dense reference solver for small frictionless problems: Murty's
//! least-index principal pivoting method for the mixed LCP
//! `λ_U ≥ 0 ⊥ (Nλ + r)_U ≥ 0`, `(Nλ + r)_F = 0` (Murty 1974). It terminates
//! finitely when `N` is a P-matrix (e.g. `N = G M⁻¹ Gᵀ + Σ` with `Σ > 0`),
//! shares no code with the iterative solvers, and is meant for tests and
//! for checking solvers on small problems (it assembles `N` densely).

use crate::SolveError;
use crate::problem::{ContactProblem, ContactRows, RowBounds};
use nalgebra::{DMatrix, DVector};
use ndem_math::SettingError;
use ndem_math::Velocity6;

/// The assembled dense `N = G M⁻¹ Gᵀ + Σ` and `r = G v* + b` of a problem.
pub fn dense_qp(problem: &ContactProblem) -> (DMatrix<f64>, DVector<f64>) {
    let n = problem.len();
    let mut mat = DMatrix::zeros(n, n);
    let mut e = vec![0.0; n];
    let mut col = vec![0.0; n];
    let mut scratch = vec![Velocity6::ZERO; problem.body_count()];
    for j in 0..n {
        e[j] = 1.0;
        problem.apply_operator_unchecked(&e, &mut scratch, &mut col);
        for i in 0..n {
            mat[(i, j)] = col[i];
        }
        e[j] = 0.0;
    }
    let mut r = vec![0.0; n];
    problem.linear_term_unchecked(&mut r);
    (mat, DVector::from_vec(r))
}

/// Solves a frictionless problem exactly (to round-off). Rows must be
/// contact normal rows ([`ContactRows::Normal`]) or generic rows with bounds
/// `[0, ∞)` or `(−∞, ∞)`. Returns `λ`.
pub fn solve_frictionless(problem: &ContactProblem) -> Result<Vec<f64>, SolveError> {
    SolveError::require(
        problem.contacts().is_empty() || problem.contact_rows() == ContactRows::Normal,
        "contact_rows",
        "the dense reference solver handles frictionless (normal-only) contacts",
    )?;
    let n = problem.len();
    let off = problem.generic_offset();
    let mut free = vec![false; n];
    for (i, r) in problem.generic_rows().iter().enumerate() {
        match r.bounds {
            RowBounds::Fixed { lower, upper } if lower == 0.0 && upper == f64::INFINITY => {}
            RowBounds::Fixed { lower, upper }
                if lower == f64::NEG_INFINITY && upper == f64::INFINITY =>
            {
                free[off + i] = true
            }
            _ => {
                return Err(SolveError::InvalidSettings {
                    field: "bounds",
                    reason: "the dense reference solver handles [0, inf) and free rows only",
                });
            }
        }
    }
    let (mat, r) = dense_qp(problem);
    let scale = 1.0 + r.amax() + mat.amax();
    let tol = 1e-13 * scale;
    let mut basic: Vec<bool> = free.clone();
    let max_pivots = 50 * n + 1000;
    for _ in 0..max_pivots {
        let idx: Vec<usize> = (0..n).filter(|&i| basic[i]).collect();
        let mut lam = DVector::zeros(n);
        if !idx.is_empty() {
            let k = idx.len();
            let mut a = DMatrix::zeros(k, k);
            let mut rhs = DVector::zeros(k);
            for (p, &i) in idx.iter().enumerate() {
                rhs[p] = -r[i];
                for (q, &j) in idx.iter().enumerate() {
                    a[(p, q)] = mat[(i, j)];
                }
            }
            let x = a.lu().solve(&rhs).ok_or(SolveError::InvalidSettings {
                field: "problem",
                reason: "singular principal submatrix (N is not a P-matrix)",
            })?;
            for (p, &i) in idx.iter().enumerate() {
                lam[i] = x[p];
            }
        }
        let w = &mat * &lam + &r;
        let violated = (0..n)
            .find(|&i| !free[i] && ((basic[i] && lam[i] < -tol) || (!basic[i] && w[i] < -tol)));
        match violated {
            None => {
                return Ok((0..n)
                    .map(|i| if free[i] { lam[i] } else { lam[i].max(0.0) })
                    .collect());
            }
            Some(i) => basic[i] = !basic[i],
        }
    }
    Err(SolveError::InvalidSettings {
        field: "problem",
        reason: "principal pivoting did not terminate (N is not a P-matrix?)",
    })
}

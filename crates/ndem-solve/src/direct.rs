//! Direct solve of a problem's bilateral rows (joints, drives, actuators)
//! inside Gauss-Seidel: the warm-starting paper's split solver for the
//! excavator (section 5: "the vehicle part is solved using a direct
//! block-sparse pivoting method and the granular material with a PGS
//! solver").
//!
//! Each Gauss-Seidel sweep ends with one exact block step on the bilateral
//! rows `J` with every other multiplier held: with the running velocity
//! `v`, residual `w_J = G_J v + Σ_J λ_J + b_J` and the Schur complement
//! `A = G_J M⁻¹ G_Jᵀ + Σ_J` (symmetric positive definite, as every joint
//! row has `Σ > 0`), the step solves `A Δλ = −w_J` and applies
//! `v ← v + M⁻¹ G_Jᵀ Δλ`. Rows with finite bounds (drives with force
//! limits) are handled by an active set (a block principal pivoting
//! method): a row that leaves its bounds is fixed at the bound and the
//! rest re-solved; a row at a bound whose residual pulls it inside is
//! released.
//!
//! Factorization: `A` is sparse (rows couple only through shared bodies;
//! a machine that is a tree of bodies gives a tree of blocks), so it is
//! factored with faer's sparse Cholesky `LLᵀ` after its fill-reducing
//! (AMD) ordering, which has no fill on a tree, so the cost is linear in
//! the number of joints. The factor is computed once per active set and
//! solve (the matrix is fixed within a step), and reused by every sweep.

use crate::problem::{ContactProblem, GenericRow, RowBounds};
use faer::linalg::solvers::Solve;
use faer::sparse::linalg::solvers::Llt;
use faer::sparse::{SparseColMat, Triplet};
use ndem_math::{InverseMass, RowKind, Vec3, Velocity6};

/// Whether a generic row belongs to the directly solved block: bilateral
/// rows with fixed bounds.
pub(crate) fn is_direct(row: &GenericRow) -> bool {
    row.kind == RowKind::Bilateral && matches!(row.bounds, RowBounds::Fixed { .. })
}

/// The bilateral block of one problem, its matrix and factors.
#[derive(Default)]
pub(crate) struct JointBlock {
    /// Generic-row index of each block row.
    rows: Vec<usize>,
    /// `(lower, upper)` of each block row.
    bounds: Vec<(f64, f64)>,
    /// `A` by block row: `(column, value)` pairs, diagonal included.
    matrix: Vec<Vec<(usize, f64)>>,
    /// Factors by active set (`true`: fixed at a bound).
    factors: Vec<(Vec<bool>, Llt<usize, f64>)>,
    residual: Vec<f64>,
    delta: Vec<f64>,
}

impl std::fmt::Debug for JointBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JointBlock")
            .field("rows", &self.rows.len())
            .field("factors", &self.factors.len())
            .finish()
    }
}

impl Clone for JointBlock {
    fn clone(&self) -> Self {
        // factors are a cache: a clone refactors when it needs to
        Self {
            rows: self.rows.clone(),
            bounds: self.bounds.clone(),
            matrix: self.matrix.clone(),
            factors: Vec::new(),
            residual: self.residual.clone(),
            delta: self.delta.clone(),
        }
    }
}

/// Where a block row sits in the active set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    Free,
    Lower,
    Upper,
}

/// Why the block could not be solved directly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotPositiveDefinite;

/// One body's part of a row: `(body, linear, angular)`.
type BodyPart = (usize, Vec3, Vec3);

fn body_parts(row: &GenericRow) -> [Option<BodyPart>; 2] {
    let [a, b] = row.bodies.map(|x| x as usize);
    let j = &row.jacobian;
    if a == b {
        return [
            Some((a, j.linear_a + j.linear_b, j.angular_a + j.angular_b)),
            None,
        ];
    }
    [
        Some((a, j.linear_a, j.angular_a)),
        Some((b, j.linear_b, j.angular_b)),
    ]
}

impl JointBlock {
    /// Collects the bilateral rows of `problem` and assembles `A`; returns
    /// whether there are any.
    pub(crate) fn prepare(&mut self, problem: &ContactProblem) -> bool {
        self.rows.clear();
        self.bounds.clear();
        self.factors.clear();
        let generic = problem.generic_rows();
        for (i, r) in generic.iter().enumerate() {
            if let RowBounds::Fixed { lower, upper } = r.bounds
                && is_direct(r)
            {
                self.rows.push(i);
                self.bounds.push((lower, upper));
            }
        }
        let n = self.rows.len();
        self.matrix.iter_mut().for_each(Vec::clear);
        self.matrix.resize_with(n, Vec::new);
        self.residual.resize(n, 0.0);
        self.delta.resize(n, 0.0);
        if n == 0 {
            return false;
        }
        // rows touching each body, then A_ij = Σ_bodies J_i M⁻¹ J_jᵀ
        let inv = problem.inverse_mass();
        let mut by_body: Vec<Vec<(usize, Vec3, Vec3)>> = vec![Vec::new(); inv.len()];
        for (k, &i) in self.rows.iter().enumerate() {
            for (body, lin, ang) in body_parts(&generic[i]).into_iter().flatten() {
                if is_movable(&inv[body]) {
                    by_body[body].push((k, lin, ang));
                }
            }
        }
        for (body, parts) in by_body.iter().enumerate() {
            let m = &inv[body];
            for &(k, lk, ak) in parts {
                let mk = m.inv_inertia * ak;
                for &(l, ll, al) in parts {
                    let value = lk.dot(&ll) * m.inv_mass + mk.dot(&al);
                    add_entry(&mut self.matrix[k], l, value);
                }
            }
        }
        for (k, &i) in self.rows.iter().enumerate() {
            add_entry(&mut self.matrix[k], k, generic[i].sigma);
        }
        true
    }

    /// One exact block step (see the module docs) at the running
    /// `velocity`; returns the largest `|Δλ_j| A_jj`, the update measure
    /// of Gauss-Seidel sweeps.
    ///
    /// The block's box QP `min ½ xᵀ A x + wᵀ(x − λ)` over the rows' bounds
    /// is solved by a primal active-set method (Nocedal and Wright,
    /// *Numerical Optimization*, 2nd ed., Algorithm 16.3): from the
    /// current (feasible) multipliers, rows at a bound whose gradient
    /// pushes outward are held; each iteration solves the free rows'
    /// equations, steps as far as the bounds allow (adding the blocking
    /// row) or, at a stationary point, releases the held row with the
    /// most wrongly signed gradient. Every step lowers the objective, so
    /// the method ends in finitely many iterations; it is capped at
    /// `3 n + 10` all the same, keeping its last (feasible, improved)
    /// iterate.
    pub(crate) fn step(
        &mut self,
        problem: &ContactProblem,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> Result<f64, NotPositiveDefinite> {
        let n = self.rows.len();
        let off = problem.generic_offset();
        let generic = problem.generic_rows();
        for (k, &i) in self.rows.iter().enumerate() {
            let r = &generic[i];
            let [a, b] = r.bodies.map(|x| x as usize);
            self.residual[k] =
                r.jacobian.dot(&velocity[a], &velocity[b]) + r.sigma * lambda[off + i] + r.rhs;
        }
        // x − λ (in `delta`) and the gradient g = w + A (x − λ); x starts
        // at λ clamped to the bounds
        let mut gradient = self.residual.clone();
        for k in 0..n {
            let (lo, hi) = self.bounds[k];
            let l = lambda[off + self.rows[k]];
            self.delta[k] = l.clamp(lo, hi) - l;
        }
        self.add_product(&self.delta.clone(), 1.0, &mut gradient);
        let x = |this: &Self, k: usize| lambda[off + this.rows[k]] + this.delta[k];
        let mut at = vec![Bound::Free; n];
        for k in 0..n {
            let (lo, hi) = self.bounds[k];
            if x(self, k) >= hi && gradient[k] < 0.0 {
                at[k] = Bound::Upper;
            } else if x(self, k) <= lo && gradient[k] > 0.0 {
                at[k] = Bound::Lower;
            }
        }
        let mut direction = vec![0.0; n];
        for _ in 0..3 * n + 10 {
            self.newton_direction(&at, &gradient, &mut direction)?;
            let moves = direction.iter().any(|&p| p != 0.0);
            if moves {
                // ratio test against the free rows' bounds
                let (mut alpha, mut blocking) = (1.0f64, None);
                for k in 0..n {
                    let p = direction[k];
                    if at[k] != Bound::Free || p == 0.0 {
                        continue;
                    }
                    let (lo, hi) = self.bounds[k];
                    let (room, side) = if p > 0.0 {
                        (hi - x(self, k), Bound::Upper)
                    } else {
                        (lo - x(self, k), Bound::Lower)
                    };
                    let reach = (room / p).max(0.0);
                    if reach < alpha {
                        alpha = reach;
                        blocking = Some((k, side));
                    }
                }
                for k in 0..n {
                    self.delta[k] += alpha * direction[k];
                }
                self.add_product(&direction, alpha, &mut gradient);
                if let Some((k, side)) = blocking {
                    let (lo, hi) = self.bounds[k];
                    // land exactly on the bound
                    let l = lambda[off + self.rows[k]];
                    self.delta[k] = if side == Bound::Upper { hi } else { lo } - l;
                    at[k] = side;
                    continue;
                }
            }
            // stationary on the free rows: release the most wrongly held row
            let release = (0..n)
                .filter_map(|k| match at[k] {
                    Bound::Upper if gradient[k] > 0.0 => Some((k, gradient[k])),
                    Bound::Lower if gradient[k] < 0.0 => Some((k, -gradient[k])),
                    _ => None,
                })
                .max_by(|a, b| a.1.total_cmp(&b.1));
            match release {
                Some((k, _)) => at[k] = Bound::Free,
                None => break,
            }
        }
        let inv = problem.inverse_mass();
        let mut largest = 0.0f64;
        for (k, &i) in self.rows.iter().enumerate() {
            let (lo, hi) = self.bounds[k];
            let l = &mut lambda[off + i];
            let new = (*l + self.delta[k]).clamp(lo, hi);
            let d = new - *l;
            if d == 0.0 {
                continue;
            }
            *l = new;
            let r = &generic[i];
            let [a, b] = r.bodies.map(|x| x as usize);
            let (ia, ib) = r.jacobian.transpose_apply(d);
            apply(&mut velocity[a], &inv[a], &ia);
            apply(&mut velocity[b], &inv[b], &ib);
            largest = largest.max(d.abs() * self.diagonal(k));
        }
        Ok(largest)
    }

    fn diagonal(&self, k: usize) -> f64 {
        self.matrix[k]
            .iter()
            .find(|e| e.0 == k)
            .map_or(0.0, |e| e.1)
    }

    /// `y += alpha A x`.
    fn add_product(&self, x: &[f64], alpha: f64, y: &mut [f64]) {
        for (k, row) in self.matrix.iter().enumerate() {
            y[k] += alpha * row.iter().map(|&(c, v)| v * x[c]).sum::<f64>();
        }
    }

    /// The equality-constrained Newton step: `p = 0` on held rows and
    /// `A_FF p_F = −g_F` on the free ones.
    fn newton_direction(
        &mut self,
        at: &[Bound],
        gradient: &[f64],
        direction: &mut [f64],
    ) -> Result<(), NotPositiveDefinite> {
        let n = self.rows.len();
        let fixed: Vec<bool> = at.iter().map(|b| *b != Bound::Free).collect();
        direction.iter_mut().for_each(|p| *p = 0.0);
        let free: Vec<usize> = (0..n).filter(|&k| !fixed[k]).collect();
        if free.is_empty() {
            return Ok(());
        }
        let mut position = vec![usize::MAX; n];
        for (p, &k) in free.iter().enumerate() {
            position[k] = p;
        }
        let rhs = faer::Mat::<f64>::from_fn(free.len(), 1, |p, _| -gradient[free[p]]);
        let factor = self.factor(&fixed, &free, &position)?;
        let x = factor.solve(&rhs);
        for (p, &k) in free.iter().enumerate() {
            let v = x[(p, 0)];
            if !v.is_finite() {
                return Err(NotPositiveDefinite);
            }
            direction[k] = v;
        }
        Ok(())
    }

    fn factor(
        &mut self,
        fixed: &[bool],
        free: &[usize],
        position: &[usize],
    ) -> Result<&Llt<usize, f64>, NotPositiveDefinite> {
        if let Some(i) = self.factors.iter().position(|(f, _)| f == fixed) {
            return Ok(&self.factors[i].1);
        }
        let mut triplets = Vec::new();
        for (p, &k) in free.iter().enumerate() {
            for &(c, v) in &self.matrix[k] {
                let q = position[c];
                if q != usize::MAX && q >= p {
                    triplets.push(Triplet::new(q, p, v));
                }
            }
        }
        let m = free.len();
        let matrix = SparseColMat::<usize, f64>::try_new_from_triplets(m, m, &triplets)
            .map_err(|_| NotPositiveDefinite)?;
        let llt = matrix
            .sp_cholesky(faer::Side::Lower)
            .map_err(|_| NotPositiveDefinite)?;
        self.factors.push((fixed.to_vec(), llt));
        Ok(&self.factors.last().expect("just pushed").1)
    }
}

fn is_movable(m: &InverseMass) -> bool {
    m.inv_mass > 0.0 || m.inv_inertia.iter().any(|&x| x != 0.0)
}

fn add_entry(row: &mut Vec<(usize, f64)>, column: usize, value: f64) {
    match row.iter_mut().find(|e| e.0 == column) {
        Some(e) => e.1 += value,
        None => row.push((column, value)),
    }
}

fn apply(v: &mut Velocity6, m: &InverseMass, impulse: &Velocity6) {
    v.linear += impulse.linear * m.inv_mass;
    v.angular += m.inv_inertia * impulse.angular;
}

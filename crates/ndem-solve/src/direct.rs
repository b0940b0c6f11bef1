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

use crate::problem::{ClampTo, ContactProblem, GenericRow, RowBounds};
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
    /// The block's multipliers during a step.
    delta: Vec<f64>,
    scratch: Scratch,
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
            scratch: Scratch::default(),
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
                if is_movable(&inv.at(body)) {
                    by_body[body].push((k, lin, ang));
                }
            }
        }
        for (body, parts) in by_body.iter().enumerate() {
            let m = &inv.at(body);
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
        let off = problem.generic_offset();
        let generic = problem.generic_rows();
        for (k, &i) in self.rows.iter().enumerate() {
            let r = &generic[i];
            let [a, b] = r.bodies.map(|x| x as usize);
            self.residual[k] =
                r.jacobian.dot(&velocity[a], &velocity[b]) + r.sigma * lambda[off + i] + r.rhs;
            // the block's current multipliers
            self.delta[k] = lambda[off + i];
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let solved = self.active_set(&mut scratch);
        self.scratch = scratch;
        solved?;
        // `delta` holds the block's new multipliers: apply the change
        let inv = problem.inverse_mass();
        let mut largest = 0.0f64;
        for (k, &i) in self.rows.iter().enumerate() {
            let (lo, hi) = self.bounds[k];
            let l = &mut lambda[off + i];
            let new = self.delta[k].clamp_to(lo, hi);
            let d = new - *l;
            if d == 0.0 {
                continue;
            }
            *l = new;
            let r = &generic[i];
            let [a, b] = r.bodies.map(|x| x as usize);
            let (ia, ib) = r.jacobian.transpose_apply(d);
            apply(&mut velocity[a], &inv.at(a), &ia);
            apply(&mut velocity[b], &inv.at(b), &ib);
            largest = largest.max(d.abs() * self.diagonal(k));
        }
        Ok(largest)
    }

    /// The active-set iteration of [`Self::step`]: on entry `residual`
    /// holds `w` at the current multipliers `λ`, which `delta` holds; on
    /// exit `delta` holds the new multipliers `x`.
    fn active_set(&mut self, s: &mut Scratch) -> Result<(), NotPositiveDefinite> {
        let n = self.rows.len();
        s.resize(n);
        // x starts at λ clamped to the bounds; gradient g = w + A (x − λ)
        for k in 0..n {
            let (lo, hi) = self.bounds[k];
            let l = self.delta[k];
            s.x[k] = l.clamp_to(lo, hi);
            s.step[k] = s.x[k] - l;
            s.gradient[k] = self.residual[k];
        }
        add_product(&self.matrix, &s.step, 1.0, &mut s.gradient);
        for k in 0..n {
            let (lo, hi) = self.bounds[k];
            s.at[k] = if s.x[k] >= hi && s.gradient[k] < 0.0 {
                Bound::Upper
            } else if s.x[k] <= lo && s.gradient[k] > 0.0 {
                Bound::Lower
            } else {
                Bound::Free
            };
        }
        for _ in 0..3 * n + 10 {
            self.newton_direction(s)?;
            if s.step.iter().any(|&p| p != 0.0) {
                // ratio test against the free rows' bounds
                let (mut alpha, mut blocking) = (1.0f64, None);
                for k in 0..n {
                    let p = s.step[k];
                    if s.at[k] != Bound::Free || p == 0.0 {
                        continue;
                    }
                    let (lo, hi) = self.bounds[k];
                    let (room, side) = if p > 0.0 {
                        (hi - s.x[k], Bound::Upper)
                    } else {
                        (lo - s.x[k], Bound::Lower)
                    };
                    let reach = (room / p).max(0.0);
                    if reach < alpha {
                        alpha = reach;
                        blocking = Some((k, side));
                    }
                }
                for k in 0..n {
                    s.x[k] += alpha * s.step[k];
                }
                add_product(&self.matrix, &s.step, alpha, &mut s.gradient);
                if let Some((k, side)) = blocking {
                    // land exactly on the bound
                    let (lo, hi) = self.bounds[k];
                    s.x[k] = if side == Bound::Upper { hi } else { lo };
                    s.at[k] = side;
                    continue;
                }
            }
            // stationary on the free rows: release the most wrongly held row
            let release = (0..n)
                .filter_map(|k| match s.at[k] {
                    Bound::Upper if s.gradient[k] > 0.0 => Some((k, s.gradient[k])),
                    Bound::Lower if s.gradient[k] < 0.0 => Some((k, -s.gradient[k])),
                    _ => None,
                })
                .max_by(|a, b| a.1.total_cmp(&b.1));
            match release {
                Some((k, _)) => s.at[k] = Bound::Free,
                None => break,
            }
        }
        self.delta.copy_from_slice(&s.x);
        Ok(())
    }

    fn diagonal(&self, k: usize) -> f64 {
        self.matrix[k]
            .iter()
            .find(|e| e.0 == k)
            .map_or(0.0, |e| e.1)
    }

    /// The equality-constrained Newton step into `s.step`: zero on held
    /// rows and `A_FF p_F = −g_F` on the free ones.
    fn newton_direction(&mut self, s: &mut Scratch) -> Result<(), NotPositiveDefinite> {
        let n = self.rows.len();
        s.step.iter_mut().for_each(|p| *p = 0.0);
        s.free.clear();
        s.free.extend((0..n).filter(|&k| s.at[k] == Bound::Free));
        if s.free.is_empty() {
            return Ok(());
        }
        s.position.iter_mut().for_each(|p| *p = usize::MAX);
        for (p, &k) in s.free.iter().enumerate() {
            s.position[k] = p;
        }
        let rhs = faer::Mat::<f64>::from_fn(s.free.len(), 1, |p, _| -s.gradient[s.free[p]]);
        let factor = self.factor(&s.at, &s.free, &s.position)?;
        let x = factor.solve(&rhs);
        for (p, &k) in s.free.iter().enumerate() {
            let v = x[(p, 0)];
            if !v.is_finite() {
                return Err(NotPositiveDefinite);
            }
            s.step[k] = v;
        }
        Ok(())
    }

    /// The Cholesky factor of `A_FF` for the free rows of `at`, computed
    /// once per active set and solve.
    fn factor(
        &mut self,
        at: &[Bound],
        free: &[usize],
        position: &[usize],
    ) -> Result<&Llt<usize, f64>, NotPositiveDefinite> {
        let same = |f: &Vec<bool>| f.iter().zip(at).all(|(h, b)| *h == (*b != Bound::Free));
        if let Some(i) = self.factors.iter().position(|(f, _)| same(f)) {
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
        let held = at.iter().map(|b| *b != Bound::Free).collect();
        self.factors.push((held, llt));
        Ok(&self.factors.last().expect("just pushed").1)
    }
}

/// `y += alpha A x` for `A` stored by rows.
fn add_product(matrix: &[Vec<(usize, f64)>], x: &[f64], alpha: f64, y: &mut [f64]) {
    for (k, row) in matrix.iter().enumerate() {
        y[k] += alpha * row.iter().map(|&(c, v)| v * x[c]).sum::<f64>();
    }
}

/// Work vectors of the active-set iteration, kept between sweeps so that
/// a sweep does not allocate after the first.
#[derive(Debug, Clone, Default)]
struct Scratch {
    x: Vec<f64>,
    step: Vec<f64>,
    gradient: Vec<f64>,
    at: Vec<Bound>,
    free: Vec<usize>,
    position: Vec<usize>,
}

impl Scratch {
    fn resize(&mut self, n: usize) {
        self.x.resize(n, 0.0);
        self.step.resize(n, 0.0);
        self.gradient.resize(n, 0.0);
        self.at.resize(n, Bound::Free);
        self.position.resize(n, usize::MAX);
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

//! Semismooth Newton on the Alart-Curnier reformulation of a
//! [`LocalProblem`] (Alart and Curnier 1991; as in Siconos' local Newton
//! solvers), with an Armijo line search on `½‖Φ‖²` and sparse LU (faer) for
//! the Newton systems. For problems where Gauss-Seidel stalls, or where
//! 1e-10 is wanted.
//!
//! Per contact, with `u = W r + q`, `ρ = 1/W_NN`, `τ = r_N − ρ u_N` and
//! `z = r_T − ρ u_T`:
//! `Φ_N = r_N − max(0, τ)`, `Φ_T = r_T − P_{D(μ max(0, τ))}(z)`.
//! `Φ(r) = 0` exactly at a solution of Coulomb's law. The generalized
//! Jacobian is `A + B W` with per-contact 3×3 blocks `A = ∂Φ/∂r`,
//! `B = ∂Φ/∂u`, so it has the sparsity of `W`. The returned reactions are
//! When the line search finds no descent, a few non-smooth Gauss-Seidel
//! sweeps move the iterate before Newton resumes. The returned reactions are
//! the iterate with the smallest Coulomb merit (a rollback when later
//! iterates are worse), and the status is judged on that merit.

use crate::local_gs::LocalGaussSeidel;
use crate::local_solver::{
    BestIterate, LocalJudge, LocalRecorder, LocalReport, LocalSolver, LocalTask,
};
use crate::solver::Stopping;
use crate::{LocalProblem, SolveError};
use faer::linalg::solvers::Solve;
use faer::sparse::{SparseColMat, Triplet};

/// Settings of [`SemismoothNewton`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NewtonSettings {
    /// Iteration cap and tolerance on the Coulomb merit.
    pub stopping: Stopping,
    /// Armijo sufficient-decrease constant.
    pub armijo: f64,
    /// Largest number of step halvings in the line search.
    pub max_halvings: usize,
    /// Gauss-Seidel sweeps taken when the line search finds no descent.
    pub fallback_sweeps: usize,
}

impl NewtonSettings {
    /// Checks the fields: the stopping rule, and the Armijo constant in
    /// (0, 1/2) (the sufficient decrease `θ(r + αd) ≤ (1 − 2σα) θ(r)`
    /// must ask for some decrease and admit the full Newton step near the
    /// solution).
    pub fn validate(&self) -> Result<(), SolveError> {
        self.stopping.validate()?;
        if !(self.armijo > 0.0 && self.armijo < 0.5) {
            return Err(SolveError::InvalidSettings {
                field: "armijo",
                reason: "must be in (0, 0.5)",
            });
        }
        Ok(())
    }
}

impl Default for NewtonSettings {
    fn default() -> Self {
        Self {
            stopping: Stopping::to_tolerance(100, 1e-10),
            armijo: 1e-4,
            max_halvings: 40,
            fallback_sweeps: 10,
        }
    }
}

/// Semismooth Newton for [`LocalProblem`]s.
#[derive(Debug, Clone, Default)]
pub struct SemismoothNewton {
    /// Settings.
    pub settings: NewtonSettings,
}

/// The per-contact blocks `A = ∂Φ/∂r` and `B = ∂Φ/∂u` (row-major 3×3).
type JacobianBlocks<'a> = (&'a mut [[f64; 9]], &'a mut [[f64; 9]]);

/// One contact's Alart-Curnier residual `Φ_c` and its generalized
/// Jacobian blocks `A = ∂Φ_c/∂r_c`, `B = ∂Φ_c/∂u_c` (row-major 3×3), at
/// reactions `r`, velocity `u`, friction `mu` and `rho = 1/W_NN`.
pub(crate) fn contact_residual(
    r: [f64; 3],
    u: [f64; 3],
    mu: f64,
    rho: f64,
) -> ([f64; 3], [f64; 9], [f64; 9]) {
    let mut phi = [0.0; 3];
    let mut a = [0.0; 9];
    let mut b = [0.0; 9];
    let tau = r[0] - rho * u[0];
    if tau > 0.0 {
        phi[0] = rho * u[0];
        b[0] = rho;
    } else {
        phi[0] = r[0];
        a[0] = 1.0;
    }
    let radius = mu * tau.max(0.0);
    let z = [r[1] - rho * u[1], r[2] - rho * u[2]];
    let zn = z[0].hypot(z[1]);
    if zn <= radius {
        // sticking
        phi[1] = rho * u[1];
        phi[2] = rho * u[2];
        b[4] = rho;
        b[8] = rho;
    } else if zn > 0.0 {
        // sliding: Φ_T = r_T − radius z/|z|
        let zh = [z[0] / zn, z[1] / zn];
        phi[1] = r[1] - radius * zh[0];
        phi[2] = r[2] - radius * zh[1];
        let g = [
            (1.0 - zh[0] * zh[0]) / zn,
            -zh[0] * zh[1] / zn,
            -zh[1] * zh[0] / zn,
            (1.0 - zh[1] * zh[1]) / zn,
        ];
        for (i, row) in [1usize, 2].into_iter().enumerate() {
            for (j, col) in [1usize, 2].into_iter().enumerate() {
                let gij = g[2 * i + j];
                a[3 * row + col] = f64::from(u8::from(i == j)) - radius * gij;
                b[3 * row + col] = radius * rho * gij;
            }
            if tau > 0.0 {
                a[3 * row] = -mu * zh[i];
                b[3 * row] = mu * rho * zh[i];
            }
        }
    } else {
        phi[1] = r[1];
        phi[2] = r[2];
        a[4] = 1.0;
        a[8] = 1.0;
    }
    (phi, a, b)
}

/// `Φ` and, when `jac` is given, the blocks `A`, `B` (row-major 3×3 per
/// contact).
fn residual(
    p: &LocalProblem,
    r: &[f64],
    u: &mut [f64],
    phi: &mut [f64],
    rho: &[f64],
    mut jac: Option<JacobianBlocks<'_>>,
) -> f64 {
    p.velocity(r, u);
    let mu = p.mu();
    for c in 0..p.contacts() {
        let k = 3 * c;
        let rc = [r[k], r[k + 1], r[k + 2]];
        let uc = [u[k], u[k + 1], u[k + 2]];
        let (phic, a, b) = contact_residual(rc, uc, mu[c], rho[c]);
        phi[k..k + 3].copy_from_slice(&phic);
        if let Some((ja, jb)) = jac.as_mut() {
            ja[c] = a;
            jb[c] = b;
        }
    }
    0.5 * phi.iter().map(|x| x * x).sum::<f64>()
}

/// Semismooth Newton on one contact's Coulomb problem `u = W_cc r + s`
/// (the other contacts held): the exact local solve that Gauss-Seidel
/// falls back on when alternating the normal row and the friction pair
/// does not settle (strong normal-tangent coupling in `W_cc`, where that
/// alternation can cycle). Starts from `r`, returns the iterate with the
/// smallest `½‖Φ_c‖²` after at most `iterations` damped Newton steps.
pub(crate) fn contact_newton(
    w: &[f64; 9],
    s: [f64; 3],
    mu: f64,
    r: [f64; 3],
    iterations: usize,
) -> [f64; 3] {
    use nalgebra::{Matrix3, Vector3};
    let wm = Matrix3::from_row_slice(w);
    let rho = if w[0] > 0.0 { 1.0 / w[0] } else { 1.0 };
    let eval = |r: [f64; 3]| {
        let u = wm * Vector3::from(r) + Vector3::from(s);
        contact_residual(r, [u[0], u[1], u[2]], mu, rho)
    };
    let theta = |phi: &[f64; 3]| 0.5 * (phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2]);
    let mut r = r;
    let (mut phi, mut a, mut b) = eval(r);
    for _ in 0..iterations {
        let t0 = theta(&phi);
        if t0 == 0.0 {
            break;
        }
        let jac = Matrix3::from_row_slice(&a) + Matrix3::from_row_slice(&b) * wm;
        let Some(d) = jac.lu().solve(&-Vector3::from(phi)) else {
            break;
        };
        let mut alpha = 1.0;
        let mut next = None;
        for _ in 0..40 {
            let trial = [
                r[0] + alpha * d[0],
                r[1] + alpha * d[1],
                r[2] + alpha * d[2],
            ];
            let e = eval(trial);
            if theta(&e.0) <= (1.0 - 2e-4 * alpha) * t0 {
                next = Some((trial, e));
                break;
            }
            alpha *= 0.5;
        }
        let Some((trial, e)) = next else { break };
        r = trial;
        (phi, a, b) = e;
    }
    r
}

impl LocalSolver for SemismoothNewton {
    fn name(&self) -> &'static str {
        "semismooth-newton"
    }

    fn stopping(&self) -> Stopping {
        self.settings.stopping
    }

    fn validate(&self) -> Result<(), SolveError> {
        self.settings.validate()
    }

    fn solve_task(&mut self, task: LocalTask<'_>) -> Result<LocalReport, SolveError> {
        let st = self.settings;
        let (p, r, initial_merit) = (task.problem, task.reactions, task.initial_merit);
        let name = self.name();
        let mut recorder = LocalRecorder::start(name, task.observer);
        let judge = LocalJudge {
            solver: name,
            initial_merit,
            stopping: st.stopping,
        };
        let n = p.contacts();
        let m = 3 * n;
        let w = p.w();
        let rho: Vec<f64> = (0..n)
            .map(|c| {
                let d = w.get_entry(3 * c, 3 * c).map_or(0.0, |e| e.into_value());
                if d > 0.0 { 1.0 / d } else { 1.0 }
            })
            .collect();
        let (mut u, mut phi) = (vec![0.0; m], vec![0.0; m]);
        let (mut ja, mut jb) = (vec![[0.0; 9]; n], vec![[0.0; 9]; n]);
        let (mut trial, mut u2, mut phi2) = (vec![0.0; m], vec![0.0; m], vec![0.0; m]);
        let mut theta = residual(p, r, &mut u, &mut phi, &rho, Some((&mut ja, &mut jb)));
        let mut merit = initial_merit;
        // the best iterate by the Coulomb merit: Newton decreases ½‖Φ‖²,
        // which need not decrease the merit (rank-deficient W); the answer
        // rolls back to the best iterate seen
        let mut best = BestIterate::new(initial_merit, r);
        let mut iterations = 0;
        let mut stalled = false;
        // J is singular wherever W is rank deficient on the active set (a
        // box face resting on four contacts): a small multiple of the
        // identity, relative to the largest diagonal of W (Φ's rows scale
        // as ρ W ~ 1), keeps the factorization defined (Levenberg-Marquardt
        // style), raised ×100 whenever a factorization fails
        let mut regularization = 1e-12;
        while iterations < st.stopping.max_iterations && merit > st.stopping.tolerance {
            // J = A + B W, assembled by rows
            let mut t = Vec::with_capacity(w.nnz() * 3 + 3 * m);
            for c in 0..n {
                for i in 0..3 {
                    let row = 3 * c + i;
                    for j in 0..3 {
                        let a = ja[c][3 * i + j];
                        if a != 0.0 {
                            t.push(Triplet::new(row, 3 * c + j, a));
                        }
                        let b = jb[c][3 * i + j];
                        if b != 0.0 {
                            let wr = w.row(3 * c + j);
                            for (&col, &v) in wr.col_indices().iter().zip(wr.values()) {
                                t.push(Triplet::new(row, col, b * v));
                            }
                        }
                    }
                    t.push(Triplet::new(row, row, regularization));
                }
            }
            let jac =
                SparseColMat::<usize, f64>::try_new_from_triplets(m, m, &t).map_err(|_| {
                    SolveError::InvalidSettings {
                        field: "newton",
                        reason: "could not assemble the Newton matrix",
                    }
                })?;
            let rhs = faer::Mat::<f64>::from_fn(m, 1, |i, _| -phi[i]);
            // faer panics on an exactly zero pivot instead of returning an
            // error: contain it and treat it as a failed factorization
            let factored = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                jac.sp_lu().ok().map(|lu| lu.solve(&rhs))
            }));
            let d: Option<Vec<f64>> = match factored {
                Ok(Some(dir)) => Some((0..m).map(|i| dir[(i, 0)]).collect()),
                _ => None,
            };
            let Some(d) = d.filter(|d| d.iter().all(|x| x.is_finite())) else {
                regularization *= 100.0;
                if regularization > 1e-2 {
                    stalled = true;
                    break;
                }
                continue;
            };
            // Armijo on θ = ½‖Φ‖² along the Newton direction (the directional
            // derivative of θ along d is −2θ for an exact Newton step)
            let mut alpha = 1.0;
            let mut accepted = false;
            for _ in 0..=st.max_halvings {
                for i in 0..m {
                    trial[i] = r[i] + alpha * d[i];
                }
                let t2 = residual(p, &trial, &mut u2, &mut phi2, &rho, None);
                if t2 <= (1.0 - 2.0 * st.armijo * alpha) * theta {
                    accepted = true;
                    break;
                }
                alpha *= 0.5;
            }
            if accepted {
                r.copy_from_slice(&trial);
            } else {
                // no descent along the Newton direction (a kink of Φ, or a
                // nearly singular J): a few Gauss-Seidel sweeps move the
                // iterate to another piece, then Newton resumes
                let before = r.to_vec();
                LocalGaussSeidel {
                    stopping: Stopping::iterations(st.fallback_sweeps),
                    local_iterations: 1,
                    ..LocalGaussSeidel::default()
                }
                .solve(p, r)?;
                if r == before.as_slice() {
                    stalled = true;
                    break;
                }
            }
            iterations += 1;
            theta = residual(p, r, &mut u, &mut phi, &rho, Some((&mut ja, &mut jb)));
            merit = p.merit(r);
            best.offer(merit, r);
            recorder.record(p, iterations, r);
        }
        Ok(judge.report(best.restore(merit, r), stalled, iterations))
    }
}

//! Semismooth Newton on the Alart-Curnier reformulation of a
//! [`LocalProblem`] (Alart and Curnier 1991; as in Siconos' local Newton
//! solvers), globalised by a non-monotone Armijo line search on `½‖Φ‖²`
//! (Grippo, Lampariello and Lucidi 1986) and a proximal regularisation of
//! the Newton matrix, with sparse LU (faer) for the Newton systems. For
//! problems where Gauss-Seidel stalls, or where 1e-10 is wanted; `W` may
//! be non-symmetric and rank deficient.
//!
//! Per contact, with `u = W r + q`, `ρ = 1/W_NN`, `τ = r_N − ρ u_N` and
//! `z = r_T − ρ u_T`:
//! `Φ_N = r_N − max(0, τ)`, `Φ_T = r_T − P_{D(μ max(0, τ))}(z)`.
//! `Φ(r) = 0` exactly at a solution of Coulomb's law. The generalized
//! Jacobian is `A + B W` with per-contact 3×3 blocks `A = ∂Φ/∂r`,
//! `B = ∂Φ/∂u`, so it has the sparsity of `W`.
//!
//! Globalisation. Where `W` is rank deficient on the active set (a box
//! face on four contacts, the LMGC packings) `A + B W` is singular or
//! nearly so and the Newton direction useless. The direction is then taken
//! on the proximal subproblem at the current iterate, `(W + η 1, q − η r)`,
//! whose residual there equals `Φ(r)` and whose matrix is
//! `A + B (W + η 1)` (positive definite rows where `W` is only
//! semidefinite). The weight is `η = (κ + c ‖Φ‖/‖ρ q‖) max diag W`: a
//! Levenberg-Marquardt term `c ‖Φ‖` that vanishes at the solution (fast
//! local convergence, Yamashita and Fukushima 2001) plus a trust weight
//! `κ`, raised ten times when the line search fails or an accepted step
//! raised `½‖Φ‖²`, lowered ten times after a full step that divided it by
//! four or more. Steps are accepted against the largest `½‖Φ‖²` of the
//! last [`NewtonSettings::memory`] iterates (non-monotone), with a
//! watchdog: after that many steps without a new smallest `½‖Φ‖²` the
//! iterate returns to the one that had it and `κ` is raised (a cycle of
//! full steps, seen on the spheres-in-a-box problem, is broken there).
//! When even the largest `κ` finds no step, one proximal-point step (the
//! subproblem with `η` the largest diagonal of `W`, solved by Newton
//! iterations) moves the iterate, or, where that does not, a few
//! non-smooth Gauss-Seidel sweeps; then Newton resumes. The returned
//! reactions are the iterate with the smallest Coulomb merit (a rollback
//! when later iterates are worse), and the status is judged on that
//! merit.

use crate::local_contact::contact_residual;
use crate::local_gs::LocalGaussSeidel;
use crate::local_solver::{
    BestIterate, LocalJudge, LocalRecorder, LocalReport, LocalSolver, LocalTask,
};
use crate::solver::Stopping;
use crate::{LocalProblem, SolveError};
use faer::linalg::solvers::Solve;
use faer::sparse::{SparseColMat, Triplet};
use ndem_math::SettingError;

/// Settings of [`SemismoothNewton`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NewtonSettings {
    /// Iteration cap and tolerance on the Coulomb merit.
    pub stopping: Stopping,
    /// Armijo sufficient-decrease constant.
    pub armijo: f64,
    /// Largest number of step halvings in the line search.
    pub max_halvings: usize,
    /// Gauss-Seidel sweeps taken when no proximal weight gives a step.
    pub fallback_sweeps: usize,
    /// Iterates whose largest `½‖Φ‖²` a step is judged against (1: the
    /// monotone Armijo rule), and the watchdog's patience: steps without a
    /// new smallest `½‖Φ‖²` before the iterate returns to the one that
    /// had it.
    pub memory: usize,
    /// Weight `c` of the Levenberg-Marquardt term `c ‖Φ‖/‖ρ q‖` of the
    /// proximal weight (dimensionless; 0 turns it off).
    pub levenberg: f64,
    /// Smallest and largest proximal weight `η`, relative to the largest
    /// diagonal entry of `W`.
    pub proximal: (f64, f64),
}

impl NewtonSettings {
    /// Checks the fields: the stopping rule, and the Armijo constant in
    /// (0, 1/2) (the sufficient decrease `θ(r + αd) ≤ (1 − 2σα) θ(r)`
    /// must ask for some decrease and admit the full Newton step near the
    /// solution).
    pub fn validate(&self) -> Result<(), SolveError> {
        self.stopping.validate()?;
        SolveError::require(
            self.armijo > 0.0 && self.armijo < 0.5,
            "armijo",
            "must be in (0, 0.5)",
        )?;
        SolveError::require(self.memory != 0, "memory", "must be at least 1")?;
        SolveError::require_non_negative("levenberg", self.levenberg)?;
        let (low, high) = self.proximal;
        SolveError::require(
            low.is_finite() && high.is_finite() && low > 0.0 && low <= high,
            "proximal",
            "must be finite with 0 < smallest <= largest",
        )?;
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
            memory: 5,
            levenberg: 0.1,
            proximal: (1e-10, 1e2),
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
        let name = self.name();
        let mut recorder = LocalRecorder::start(name, task.observer);
        let judge = LocalJudge::new(name, task.initial_merit, st.stopping);
        let (p, r) = (task.problem, task.reactions);
        let end = self.iterate(p, r, task.initial_merit, Some(&mut recorder))?;
        Ok(judge.report(end.merit, end.stalled, end.iterations))
    }
}

/// How [`SemismoothNewton::iterate`] ended.
struct NewtonEnd {
    /// Merit of the reactions returned (the best iterate's).
    merit: f64,
    stalled: bool,
    iterations: usize,
}

impl SemismoothNewton {
    /// The Newton iterations from `r` (merit `merit`), in place; the
    /// returned reactions are the best iterate. With a `recorder` (the
    /// outer solve) a step that no proximal weight finds is replaced by a
    /// proximal-point step ([`Self::proximal_step`]), then by Gauss-Seidel
    /// sweeps; without one (the proximal step's own solve) it ends the
    /// iteration as stalled.
    fn iterate(
        &self,
        p: &LocalProblem,
        r: &mut [f64],
        mut merit: f64,
        mut recorder: Option<&mut LocalRecorder<'_>>,
    ) -> Result<NewtonEnd, SolveError> {
        let st = self.settings;
        let mut state = NewtonState::new(p, r);
        // the best iterate by the Coulomb merit: Newton decreases ½‖Φ‖²,
        // which need not decrease the merit (rank-deficient W); the answer
        // rolls back to the best iterate seen
        let mut best = BestIterate::new(merit, r);
        let mut trust = Trust::new(&st, state.theta, r);
        let (mut iterations, mut stalled) = (0, false);
        while iterations < st.stopping.max_iterations && merit > st.stopping.tolerance {
            let eta = state.proximal_weight(trust.kappa, st.levenberg);
            let step = state.direction(p, eta)?;
            let reference = trust.reference(state.theta);
            let accepted = step.and_then(|d| state.line_search(p, r, &d, reference, &st));
            match accepted {
                Some(alpha) => {
                    r.copy_from_slice(&state.trial);
                    trust.accepted(alpha, state.theta, state.trial_theta);
                }
                None if trust.kappa < st.proximal.1 => {
                    trust.raise();
                    iterations += 1;
                    continue;
                }
                None if recorder.is_none() => {
                    stalled = true;
                    break;
                }
                None => {
                    trust.kappa = 0.0;
                    if !self.proximal_step(p, r, state.w_max)? {
                        stalled = true;
                        break;
                    }
                }
            }
            iterations += 1;
            state.evaluate(p, r);
            if trust.watch(state.theta, r) {
                state.evaluate(p, r);
            }
            merit = p.merit(r);
            best.offer(merit, r);
            if let Some(recorder) = recorder.as_deref_mut() {
                recorder.record(p, iterations, r);
            }
        }
        let merit = best.restore(merit, r);
        Ok(NewtonEnd {
            merit,
            stalled,
            iterations,
        })
    }

    /// Moves `r` where no Newton step does: to the solution of the
    /// proximal subproblem `(W + w_max 1, q − w_max r)` by Newton
    /// iterations on it (at most [`PROXIMAL_STEP_ITERATIONS`]), or, when
    /// that leaves `r` where it was, by a few non-smooth Gauss-Seidel
    /// sweeps. Returns whether `r` moved.
    fn proximal_step(
        &self,
        p: &LocalProblem,
        r: &mut [f64],
        w_max: f64,
    ) -> Result<bool, SolveError> {
        let before = r.to_vec();
        let sub = p.proximal(w_max, r);
        let inner = SemismoothNewton {
            settings: NewtonSettings {
                stopping: Stopping::to_tolerance(PROXIMAL_STEP_ITERATIONS, f64::MIN_POSITIVE),
                ..self.settings
            },
        };
        let start = sub.merit(r);
        inner.iterate(&sub, r, start, None)?;
        if r == before.as_slice() {
            LocalGaussSeidel {
                stopping: Stopping::iterations(self.settings.fallback_sweeps),
                local_iterations: 1,
                ..LocalGaussSeidel::default()
            }
            .solve(p, r)?;
        }
        Ok(r != before.as_slice())
    }
}

/// The trust weight `κ`, the non-monotone reference and the watchdog of
/// [`SemismoothNewton::iterate`].
struct Trust {
    /// Relative proximal weight (0: pure Newton).
    kappa: f64,
    /// `½‖Φ‖²` of the last `memory` iterates.
    history: Vec<f64>,
    /// The smallest `½‖Φ‖²` seen and its iterate.
    lowest: (f64, Vec<f64>),
    /// Steps since `lowest` last improved.
    since_lowest: usize,
    memory: usize,
    range: (f64, f64),
}

impl Trust {
    fn new(st: &NewtonSettings, theta: f64, r: &[f64]) -> Self {
        Self {
            kappa: 0.0,
            history: vec![theta],
            lowest: (theta, r.to_vec()),
            since_lowest: 0,
            memory: st.memory,
            range: st.proximal,
        }
    }

    /// The `½‖Φ‖²` a step is judged against: the largest of the recent.
    fn reference(&self, theta: f64) -> f64 {
        self.history.iter().copied().fold(theta, f64::max)
    }

    /// `κ` ten times larger, within the range.
    fn raise(&mut self) {
        self.kappa = (self.kappa * 10.0).clamp(self.range.0, self.range.1);
    }

    /// Adapts `κ` to a step of length `alpha` that took `½‖Φ‖²` from
    /// `before` to `after`.
    fn accepted(&mut self, alpha: f64, before: f64, after: f64) {
        if after > before {
            self.raise();
        } else if alpha == 1.0 && after <= 0.25 * before {
            self.kappa *= 0.1;
            if self.kappa < self.range.0 {
                self.kappa = 0.0;
            }
        }
    }

    /// Records the new iterate `r` with `½‖Φ‖² = theta`; after `memory`
    /// steps without a new smallest value, puts the iterate that had it
    /// back into `r`, raises `κ` and returns true.
    fn watch(&mut self, theta: f64, r: &mut [f64]) -> bool {
        if theta < self.lowest.0 {
            self.lowest.0 = theta;
            self.lowest.1.copy_from_slice(r);
            self.since_lowest = 0;
        } else {
            self.since_lowest += 1;
        }
        if self.since_lowest >= self.memory {
            r.copy_from_slice(&self.lowest.1);
            self.history.clear();
            self.history.push(self.lowest.0);
            self.since_lowest = 0;
            self.raise();
            return true;
        }
        self.history.push(theta);
        if self.history.len() > self.memory {
            self.history.remove(0);
        }
        false
    }
}

/// Newton iterations on the proximal subproblem of a proximal step.
const PROXIMAL_STEP_ITERATIONS: usize = 30;

/// The Newton iteration's vectors and the residual at the current iterate.
struct NewtonState {
    /// `ρ_c = 1/W_NN` per contact.
    rho: Vec<f64>,
    /// The largest diagonal entry of `W` (the proximal weight's scale).
    w_max: f64,
    u: Vec<f64>,
    phi: Vec<f64>,
    ja: Vec<[f64; 9]>,
    jb: Vec<[f64; 9]>,
    /// `½‖Φ‖²` at the current iterate.
    theta: f64,
    /// `‖ρ q‖`, the force scale of `‖Φ‖` (the Levenberg-Marquardt term's
    /// denominator).
    force_scale: f64,
    trial: Vec<f64>,
    /// `½‖Φ‖²` at `trial`.
    trial_theta: f64,
    u2: Vec<f64>,
    phi2: Vec<f64>,
    /// Identity shift that keeps the factorization defined, raised ×100
    /// whenever one fails.
    regularization: f64,
}

impl NewtonState {
    fn new(p: &LocalProblem, r: &[f64]) -> Self {
        let (n, m) = (p.contacts(), 3 * p.contacts());
        let rho: Vec<f64> = (0..n)
            .map(|c| {
                let d = p
                    .w()
                    .get_entry(3 * c, 3 * c)
                    .map_or(0.0, |e| e.into_value());
                if d > 0.0 { 1.0 / d } else { 1.0 }
            })
            .collect();
        let w_max = p.largest_diagonal();
        let q = p.q();
        let force_scale = q
            .iter()
            .enumerate()
            .map(|(i, qi)| (rho[i / 3] * qi).powi(2))
            .sum::<f64>()
            .sqrt()
            .max(f64::MIN_POSITIVE);
        let mut state = Self {
            rho,
            w_max,
            u: vec![0.0; m],
            phi: vec![0.0; m],
            ja: vec![[0.0; 9]; n],
            jb: vec![[0.0; 9]; n],
            theta: 0.0,
            force_scale,
            trial: vec![0.0; m],
            trial_theta: 0.0,
            u2: vec![0.0; m],
            phi2: vec![0.0; m],
            regularization: 1e-12,
        };
        state.evaluate(p, r);
        state
    }

    /// `Φ`, its Jacobian blocks and `θ` at `r`.
    fn evaluate(&mut self, p: &LocalProblem, r: &[f64]) {
        let jac = Some((&mut self.ja[..], &mut self.jb[..]));
        self.theta = residual(p, r, &mut self.u, &mut self.phi, &self.rho, jac);
    }

    /// `η = (κ + c ‖Φ‖/‖ρ q‖) max diag W` at the current iterate.
    fn proximal_weight(&self, kappa: f64, levenberg: f64) -> f64 {
        (kappa + levenberg * (2.0 * self.theta).sqrt() / self.force_scale) * self.w_max
    }

    /// The Newton direction of the proximal subproblem with weight `eta`
    /// (`A + B (W + η 1)`, plus the identity shift): `None` when the
    /// factorization fails at every shift up to 1e-2.
    fn direction(&mut self, p: &LocalProblem, eta: f64) -> Result<Option<Vec<f64>>, SolveError> {
        let m = 3 * p.contacts();
        loop {
            let jac = self.assemble(p, eta)?;
            let rhs = faer::Mat::<f64>::from_fn(m, 1, |i, _| -self.phi[i]);
            // faer panics on an exactly zero pivot instead of returning an
            // error: contain it and treat it as a failed factorization
            let factored = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                jac.sp_lu().ok().map(|lu| lu.solve(&rhs))
            }));
            if let Ok(Some(dir)) = factored {
                let d: Vec<f64> = (0..m).map(|i| dir[(i, 0)]).collect();
                if d.iter().all(|x| x.is_finite()) {
                    return Ok(Some(d));
                }
            }
            self.regularization *= 100.0;
            if self.regularization > 1e-2 {
                self.regularization = 1e-12;
                return Ok(None);
            }
        }
    }

    /// `A + B (W + η 1) + ε 1`, assembled by rows.
    fn assemble(&self, p: &LocalProblem, eta: f64) -> Result<SparseColMat<usize, f64>, SolveError> {
        let (n, m, w) = (p.contacts(), 3 * p.contacts(), p.w());
        let mut t = Vec::with_capacity(w.nnz() * 3 + 6 * m);
        for c in 0..n {
            for i in 0..3 {
                let row = 3 * c + i;
                for j in 0..3 {
                    let a = self.ja[c][3 * i + j];
                    let b = self.jb[c][3 * i + j];
                    if a + b * eta != 0.0 {
                        t.push(Triplet::new(row, 3 * c + j, a + b * eta));
                    }
                    if b != 0.0 {
                        let wr = w.row(3 * c + j);
                        for (&col, &v) in wr.col_indices().iter().zip(wr.values()) {
                            t.push(Triplet::new(row, col, b * v));
                        }
                    }
                }
                t.push(Triplet::new(row, row, self.regularization));
            }
        }
        SparseColMat::<usize, f64>::try_new_from_triplets(m, m, &t).map_err(|_| {
            SolveError::InvalidSettings {
                field: "newton",
                reason: "could not assemble the Newton matrix",
            }
        })
    }

    /// Armijo along `d` from `r` against `reference` (the largest recent
    /// `θ`): the accepted step length, with the point in `self.trial`.
    fn line_search(
        &mut self,
        p: &LocalProblem,
        r: &[f64],
        d: &[f64],
        reference: f64,
        st: &NewtonSettings,
    ) -> Option<f64> {
        // the directional derivative of θ along an exact Newton step is −2θ
        let mut alpha = 1.0;
        for _ in 0..=st.max_halvings {
            for (i, t) in self.trial.iter_mut().enumerate() {
                *t = r[i] + alpha * d[i];
            }
            let t2 = residual(
                p,
                &self.trial,
                &mut self.u2,
                &mut self.phi2,
                &self.rho,
                None,
            );
            if t2 <= reference - 2.0 * st.armijo * alpha * self.theta {
                self.trial_theta = t2;
                return Some(alpha);
            }
            alpha *= 0.5;
        }
        None
    }
}

//! Projected Jacobi with relaxation: every row is updated from the same
//! velocity, `λ_j ← Π_j(λ_j − ω w_j / D_jj)`, then `v = v* + M⁻¹ Gᵀ λ` is
//! rebuilt. Contacts are independent within an iteration, so the update is
//! parallel over contacts (rayon, on a pool the solver owns) and the
//! velocity rebuild parallel over bodies, each body summing its contacts
//! in a fixed order: parallel and serial runs give identical bits.

use crate::SolveError;
use crate::metrics::ResidualEvaluator;
use crate::problem::{ClampTo, ContactProblem, FrictionSet, project_record};
use crate::solver::{
    IterationClock, IterationRecord, SolveReport, SolveTask, Solver, Stopping, SweepCount,
    check_finite_iterate,
};
use ndem_math::SettingError;
use ndem_math::Velocity6;
use rayon::prelude::*;
use std::sync::Arc;

/// Settings of [`ProjectedJacobi`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JacobiSettings {
    /// Iteration cap and tolerance (largest `D_jj |Δλ_j|`).
    pub stopping: Stopping,
    /// Relaxation ω in (0, 1]; contact problems usually need ω ≈ 1/(number
    /// of contacts per body).
    pub relaxation: f64,
    /// Threads of the contact updates and the velocity rebuild, on a rayon
    /// pool the solver owns, started by [`ProjectedJacobi::new`] (1, the
    /// default: serial; 0: every core; at most
    /// [`ndem_par::blocks::MAX_THREADS`]). The results are identical on
    /// any count.
    pub threads: usize,
}

impl Default for JacobiSettings {
    fn default() -> Self {
        Self {
            stopping: Stopping::default(),
            relaxation: 0.3,
            threads: 1,
        }
    }
}

impl JacobiSettings {
    /// Checks the fields.
    pub fn validate(&self) -> Result<(), SolveError> {
        self.stopping.validate()?;
        SolveError::require(
            self.relaxation > 0.0 && self.relaxation <= 1.0,
            "relaxation",
            "must lie in (0, 1]",
        )?;
        SolveError::require_ok("threads", ndem_par::blocks::count_allowed(self.threads))?;
        Ok(())
    }
}

/// Projected Jacobi. Owns its scratch.
#[derive(Debug, Clone, Default)]
pub struct ProjectedJacobi {
    settings: JacobiSettings,
    diag: Vec<f64>,
    next: Vec<f64>,
    corr: Vec<f64>,
    /// body → (contact, side) in contact order (CSR).
    adj_start: Vec<u32>,
    adj: Vec<(u32, u8)>,
    evaluator: ResidualEvaluator,
    /// The pool of [`JacobiSettings::threads`] threads (`None` for one).
    pool: Option<Arc<rayon::ThreadPool>>,
}

impl ProjectedJacobi {
    /// A solver with the given settings (validated), with its pool of
    /// threads started: a count the system does not give is
    /// [`SolveError::ThreadsRefused`] naming `threads` (rayon's global pool,
    /// used before, panicked on its first use instead).
    pub fn new(settings: JacobiSettings) -> Result<Self, SolveError> {
        settings.validate()?;
        let pool = start_pool(settings.threads, std::thread::Builder::new)?;
        Ok(Self {
            settings,
            pool,
            ..Self::default()
        })
    }

    /// The settings.
    pub fn settings(&self) -> &JacobiSettings {
        &self.settings
    }

    /// Replaces the settings (validated; a new thread count starts a new
    /// pool; on error the old settings and pool stay).
    pub fn set_settings(&mut self, settings: JacobiSettings) -> Result<(), SolveError> {
        settings.validate()?;
        let threads = ndem_par::blocks::resolve_threads(settings.threads);
        let current = self.pool.as_ref().map_or(1, |p| p.current_num_threads());
        if threads != current {
            self.pool = start_pool(settings.threads, std::thread::Builder::new)?;
        }
        self.settings = settings;
        Ok(())
    }
}

/// A rayon pool of `threads` threads (resolved; `None` for one), each
/// built by `builder`: a thread the system refuses is
/// [`SolveError::ThreadsRefused`] naming `threads`.
fn start_pool(
    threads: usize,
    builder: impl Fn() -> std::thread::Builder,
) -> Result<Option<Arc<rayon::ThreadPool>>, SolveError> {
    let requested = ndem_par::blocks::resolve_threads(threads);
    if requested == 1 {
        return Ok(None);
    }
    let mut started = 0;
    let mut refusal = None;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(requested)
        .spawn_handler(|thread| {
            let mut b = builder();
            if let Some(name) = thread.name() {
                b = b.name(name.to_owned());
            }
            if let Some(size) = thread.stack_size() {
                b = b.stack_size(size);
            }
            match b.spawn(|| thread.run()) {
                Ok(_) => {
                    started += 1;
                    Ok(())
                }
                Err(e) => {
                    refusal = Some(e.to_string());
                    Err(e)
                }
            }
        })
        .build();
    match (pool, refusal) {
        (Ok(pool), _) => Ok(Some(Arc::new(pool))),
        (Err(e), refusal) => Err(SolveError::ThreadsRefused(ndem_par::ThreadsRefused {
            field: "threads",
            requested,
            started,
            reason: refusal.unwrap_or_else(|| e.to_string()),
        })),
    }
}

impl ProjectedJacobi {
    fn prepare(&mut self, p: &ContactProblem) {
        self.diag.resize(p.len(), 0.0);
        p.diagonal_unchecked(&mut self.diag);
        self.next.resize(p.len(), 0.0);
        self.corr.resize(p.contacts().len(), 0.0);
        let nb = p.body_count();
        self.adj_start.clear();
        self.adj_start.resize(nb + 1, 0);
        for c in p.records() {
            for b in c.bodies {
                self.adj_start[b as usize + 1] += 1;
            }
        }
        for i in 0..nb {
            self.adj_start[i + 1] += self.adj_start[i];
        }
        let mut fill: Vec<u32> = self.adj_start[..nb].to_vec();
        self.adj.clear();
        self.adj.resize(self.adj_start[nb] as usize, (0, 0));
        for (ci, c) in p.records().iter().enumerate() {
            for (side, b) in c.bodies.iter().enumerate() {
                let slot = &mut fill[*b as usize];
                self.adj[*slot as usize] = (ci as u32, side as u8);
                *slot += 1;
            }
        }
    }

    /// `v = v* + M⁻¹ Gᵀ λ`, per body in fixed contact order.
    fn rebuild_velocity(&self, p: &ContactProblem, lambda: &[f64], velocity: &mut [Velocity6]) {
        let m = p.contact_rows().count();
        let inv = p.inverse_mass();
        let body = |b: usize, v: &mut Velocity6| {
            let mut acc = p.free_velocity()[b];
            for &(ci, side) in &self.adj[self.adj_start[b] as usize..self.adj_start[b + 1] as usize]
            {
                let c = &p.records()[ci as usize];
                let lam = &lambda[ci as usize * m..ci as usize * m + m];
                let (ia, ib) = c.jacobian.transpose_apply(lam);
                let imp = if side == 0 { ia } else { ib };
                acc += Velocity6::new(
                    imp.linear * inv.at(b).inv_mass,
                    inv.at(b).inv_inertia * imp.angular,
                );
            }
            *v = acc;
        };
        let body = &body;
        match &self.pool {
            Some(pool) => pool.install(|| {
                velocity
                    .par_iter_mut()
                    .enumerate()
                    .for_each(|(b, v)| body(b, v))
            }),
            None => velocity
                .iter_mut()
                .enumerate()
                .for_each(|(b, v)| body(b, v)),
        }
        // generic rows, serially in row order
        let off = p.generic_offset();
        for (r, &l) in p.generic_rows().iter().zip(&lambda[off..]) {
            let [a, b] = r.bodies.map(|x| x as usize);
            let (ia, ib) = r.jacobian.transpose_apply(l);
            velocity[a] += inv.response(a, &ia);
            velocity[b] += inv.response(b, &ib);
        }
    }
}

impl Solver for ProjectedJacobi {
    fn solve_task(&mut self, task: SolveTask<'_>) -> Result<SolveReport, SolveError> {
        let (problem, lambda, velocity, observer) = task.into_parts();
        let mut clock = IterationClock::start();
        self.prepare(problem);
        let stopping = self.settings.stopping;
        let mut count = SweepCount::default();
        let mut schedule = crate::solver::CheckSchedule::new();
        let m = problem.contact_rows().count();
        let omega = self.settings.relaxation;
        let set = problem.friction_set();
        let off = problem.generic_offset();
        // start from a consistent velocity
        self.rebuild_velocity(problem, lambda, velocity);
        let initial_residuals = self.evaluator.stats(problem, lambda, Some(velocity));
        for it in 0..self.settings.stopping.max_iterations {
            {
                let vel: &[Velocity6] = velocity;
                let diag = &self.diag;
                let lam_old: &[f64] = lambda;
                let contact = |ci: usize, out: &mut [f64], corr: &mut f64| {
                    let c = &problem.records()[ci];
                    let t = problem.tangential_rhs(ci);
                    let k = problem.coefficients(ci);
                    let [a, b] = c.bodies.map(|x| x as usize);
                    let gv = c.jacobian.velocity(&vel[a], &vel[b]);
                    let base = ci * m;
                    for j in 0..m {
                        let d = pair_step_diagonal(set, &diag[base..base + m], j);
                        let w = gv[j] + c.row_sigma(k, j) * lam_old[base + j] + c.rhs(t, j);
                        out[j] = if d > 0.0 {
                            lam_old[base + j] - omega * w / d
                        } else {
                            lam_old[base + j]
                        };
                    }
                    project_record(c, k, set, out);
                    *corr = (0..m)
                        .map(|j| (out[j] - lam_old[base + j]).abs() * diag[base + j])
                        .fold(0.0, f64::max);
                };
                let (head, _) = self.next.split_at_mut(off);
                let (corrs, contact) = (&mut self.corr, &contact);
                match &self.pool {
                    Some(pool) => pool.install(|| {
                        head.par_chunks_mut(m)
                            .zip(corrs.par_iter_mut())
                            .enumerate()
                            .for_each(|(ci, (out, corr))| contact(ci, out, corr))
                    }),
                    None => head
                        .chunks_mut(m)
                        .zip(corrs.iter_mut())
                        .enumerate()
                        .for_each(|(ci, (out, corr))| contact(ci, out, corr)),
                }
            }
            let mut max_corr = self.corr.iter().fold(0.0f64, |a, &b| a.max(b));
            for (i, r) in problem.generic_rows().iter().enumerate() {
                let k = off + i;
                let [a, b] = r.bodies.map(|x| x as usize);
                let w = r.jacobian.dot(&velocity[a], &velocity[b]) + r.sigma * lambda[k] + r.rhs;
                let d = self.diag[k];
                let (lo, hi) = problem.generic_bounds(i, lambda);
                let new = if d > 0.0 {
                    (lambda[k] - omega * w / d).clamp_to(lo, hi)
                } else {
                    lambda[k]
                };
                max_corr = max_corr.max((new - lambda[k]).abs() * d);
                self.next[k] = new;
            }
            check_finite_iterate("jacobi", &self.next, it + 1)?;
            lambda.copy_from_slice(&self.next);
            self.rebuild_velocity(problem, lambda, velocity);
            let iterations = it + 1;
            count.done(iterations, max_corr);
            clock.observe(
                observer,
                IterationRecord::untimed(
                    "jacobi",
                    iterations,
                    problem,
                    (lambda, Some(velocity)),
                    max_corr,
                ),
            );
            // corrections are ω times the residual
            let decision = schedule.decide(&stopping, max_corr / omega, iterations, || {
                self.evaluator.stats(problem, lambda, Some(velocity)).max
            });
            if count.ends(decision) {
                break;
            }
        }
        let residuals = self.evaluator.stats(problem, lambda, Some(velocity));
        Ok(count.report("jacobi", (residuals, initial_residuals), stopping.tolerance))
    }

    fn name(&self) -> &'static str {
        "jacobi"
    }

    fn stopping(&self) -> Stopping {
        self.settings.stopping
    }
}

/// The diagonal that scales row `j`'s step. With the disk set the two
/// friction rows (and the two rolling rows) share one step, `1/max(D_11,
/// D_22)`, so that the fixed point of the projected pair step is Coulomb's
/// law whatever the two diagonals (separate steps followed by a joint
/// projection converge to a force that opposes `D⁻¹ w_t`, not `w_t`).
#[inline]
fn pair_step_diagonal(set: FrictionSet, diag: &[f64], j: usize) -> f64 {
    match (set, j) {
        (FrictionSet::Disk, 1 | 2) => diag[1].max(diag[2]),
        (FrictionSet::Disk, 3 | 4) => diag[3].max(diag[4]),
        _ => diag[j],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The solver's pool: a count the system refuses is a typed error
    /// naming `threads` with the threads started before (where rayon's
    /// global pool panicked on first use); a count above the cap is
    /// refused by `validate`; a new count in `set_settings` starts a new
    /// pool, and a refused one keeps the old settings and pool.
    #[test]
    fn the_pool_is_started_or_refused_with_a_typed_error() {
        let refusing = || std::thread::Builder::new().stack_size(1 << 62);
        match start_pool(4, refusing) {
            Err(SolveError::ThreadsRefused(ndem_par::ThreadsRefused {
                field: "threads",
                requested: 4,
                started: 0,
                ..
            })) => {}
            other => panic!("{other:?}"),
        }
        let calls = std::cell::Cell::new(0);
        let third_refused = || {
            calls.set(calls.get() + 1);
            let b = std::thread::Builder::new();
            if calls.get() == 3 {
                b.stack_size(1 << 62)
            } else {
                b
            }
        };
        match start_pool(5, third_refused) {
            Err(SolveError::ThreadsRefused(ndem_par::ThreadsRefused {
                requested: 5,
                started: 2,
                ..
            })) => {}
            other => panic!("{other:?}"),
        }
        assert!(start_pool(1, refusing).unwrap().is_none());
        let settings = |threads| JacobiSettings {
            threads,
            ..JacobiSettings::default()
        };
        assert!(matches!(
            ProjectedJacobi::new(settings(ndem_par::blocks::MAX_THREADS + 1)),
            Err(SolveError::InvalidSettings {
                field: "threads",
                ..
            })
        ));
        let mut jacobi = ProjectedJacobi::new(settings(3)).unwrap();
        assert_eq!(jacobi.pool.as_ref().unwrap().current_num_threads(), 3);
        jacobi.set_settings(settings(2)).unwrap();
        assert_eq!(jacobi.pool.as_ref().unwrap().current_num_threads(), 2);
        jacobi.set_settings(settings(1)).unwrap();
        assert!(jacobi.pool.is_none());
        assert!(jacobi.set_settings(settings(usize::MAX)).is_err());
        assert_eq!(jacobi.settings().threads, 1);
    }
}

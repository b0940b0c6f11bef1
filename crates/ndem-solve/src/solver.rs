//! The `Solver` trait, its report, stopping rules and iteration observers.

use crate::{ContactProblem, ResidualStats, SolveError};
use ndem_math::Velocity6;
use std::time::Duration;

/// When an iterative solver stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stopping {
    /// Iteration cap `N_it` (the papers run a fixed number of iterations).
    pub max_iterations: usize,
    /// Stop early when the solver's own progress measure (for PGS and
    /// Jacobi the largest row correction `D_jj |Δλ_j|` of a sweep, for APGD
    /// the projected-gradient residual) falls to or below this value
    /// (velocity units, m/s). `0` disables early stopping.
    pub tolerance: f64,
}

impl Default for Stopping {
    fn default() -> Self {
        Self {
            max_iterations: 100,
            tolerance: 0.0,
        }
    }
}

impl Stopping {
    /// A fixed number of iterations, no early stop.
    pub fn iterations(n: usize) -> Self {
        Self {
            max_iterations: n,
            tolerance: 0.0,
        }
    }

    /// Whether a progress measure `update` meets the tolerance (never when
    /// the tolerance is 0).
    pub fn reached(&self, update: f64) -> bool {
        self.tolerance > 0.0 && update <= self.tolerance
    }

    /// Checks the fields.
    pub fn validate(&self) -> Result<(), SolveError> {
        if !(self.tolerance >= 0.0 && self.tolerance.is_finite()) {
            return Err(SolveError::InvalidSettings {
                field: "tolerance",
                reason: "must be finite and >= 0",
            });
        }
        Ok(())
    }
}

/// What a solve did. Convergence failure is reported here
/// (`converged = false`), not as an error.
#[derive(Debug, Clone, PartialEq)]
pub struct SolveReport {
    /// Solver name.
    pub solver: &'static str,
    /// Iterations performed.
    pub iterations: usize,
    /// Whether the tolerance was met (always `false` with tolerance 0).
    pub converged: bool,
    /// The solver's progress measure at the last iteration.
    pub last_update: f64,
    /// Residual statistics of the returned solution, by row kind.
    pub residuals: ResidualStats,
}

/// One iteration as seen by an [`Observer`].
#[derive(Debug, Clone, Copy)]
pub struct IterationRecord<'a> {
    /// Solver name.
    pub solver: &'static str,
    /// Number of completed iterations (1 after the first sweep).
    pub iteration: usize,
    /// Solver time since the start of the solve, excluding time spent in
    /// the observer.
    pub elapsed: Duration,
    /// The problem being solved.
    pub problem: &'a ContactProblem,
    /// Current multipliers.
    pub lambda: &'a [f64],
    /// The solver's running velocity when it keeps one (PGS); `None` when
    /// the velocity is `v* + M⁻¹Gᵀλ` and must be formed by the observer.
    pub velocity: Option<&'a [Velocity6]>,
    /// The solver's progress measure.
    pub update: f64,
}

/// Called after every iteration of every solver (argmin-style), so that
/// experiments can record residual histories without touching solver code.
pub trait Observer {
    /// Receives one iteration.
    fn observe(&mut self, record: &IterationRecord<'_>);
}

/// Wall time of a solve excluding the time spent in its observer.
pub(crate) struct IterationClock {
    start: std::time::Instant,
    observer_time: Duration,
}

impl IterationClock {
    pub(crate) fn start() -> Self {
        Self {
            start: std::time::Instant::now(),
            observer_time: Duration::ZERO,
        }
    }

    /// Passes `record` (with its `elapsed` filled in) to `observer`.
    pub(crate) fn observe(&mut self, observer: &mut dyn Observer, mut record: IterationRecord<'_>) {
        let t = std::time::Instant::now();
        record.elapsed = t.duration_since(self.start) - self.observer_time;
        observer.observe(&record);
        self.observer_time += t.elapsed();
    }
}

/// An observer that does nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl Observer for NoObserver {
    fn observe(&mut self, _record: &IterationRecord<'_>) {}
}

/// A contact solver: solves a [`ContactProblem`] in place.
///
/// On entry `lambda` holds the starting multipliers (zero for a cold start)
/// and `velocity` the starting velocity, normally `v* + M⁻¹Gᵀλ`
/// (warm-starting paper, eq. 8). On exit `lambda` is the solution and
/// `velocity` equals `v* + M⁻¹Gᵀλ` for the returned `λ` (up to round-off),
/// except for solvers that iterate on the velocity they were given (PGS),
/// which return their running velocity.
pub trait Solver: Send {
    /// Short name for reports.
    fn name(&self) -> &'static str;

    /// Solves, reporting each iteration to `observer`.
    fn solve_observed(
        &mut self,
        problem: &ContactProblem,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
        observer: &mut dyn Observer,
    ) -> Result<SolveReport, SolveError>;

    /// Solves without an observer.
    fn solve(
        &mut self,
        problem: &ContactProblem,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> Result<SolveReport, SolveError> {
        self.solve_observed(problem, lambda, velocity, &mut NoObserver)
    }

    /// The iteration cap, so that callers (e.g. experiment suites) can
    /// change `N_it` without knowing the concrete solver.
    fn max_iterations(&self) -> usize;

    /// Sets the iteration cap.
    fn set_max_iterations(&mut self, n: usize);
}

/// Contact visiting order of Gauss-Seidel-type solvers. The order changes
/// the answer of indeterminate (over-coordinated) packings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ContactOrder {
    /// The order of the problem.
    #[default]
    Given,
    /// The reverse order.
    Reversed,
    /// A seeded random permutation, drawn once per solve.
    Shuffled {
        /// Seed of the permutation.
        seed: u64,
    },
}

impl ContactOrder {
    /// Fills `order` with the visiting order of `n` items.
    pub fn fill(self, n: usize, order: &mut Vec<u32>) {
        order.clear();
        order.extend(0..n as u32);
        match self {
            ContactOrder::Given => {}
            ContactOrder::Reversed => order.reverse(),
            ContactOrder::Shuffled { seed } => {
                let mut rng = SplitMix64(seed);
                for i in (1..n).rev() {
                    let j = (rng.next() % (i as u64 + 1)) as usize;
                    order.swap(i, j);
                }
            }
        }
    }
}

/// SplitMix64, a small deterministic generator (Steele, Lea, Flood 2014).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SplitMix64(pub u64);

impl SplitMix64 {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

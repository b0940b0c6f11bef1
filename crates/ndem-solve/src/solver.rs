//! The `Solver` trait, its report, stopping rules and iteration observers.

use crate::{ContactProblem, ResidualStats, SolveError};
use ndem_math::rng::Rng;
use ndem_math::{RowKind, SettingError, Velocity6};
use std::time::Duration;

/// Default convergence tolerance on the largest row residual of the
/// returned multipliers (see [`crate::ResidualStats`]): 1e-6 in velocity
/// units (m/s for friction rows, rad/s for rolling rows, `s_n`·m/s for
/// normal rows). At Δt = 5 ms it allows a position error of 5 nm per step.
pub const DEFAULT_TOLERANCE: f64 = 1e-6;

/// When an iterative solver stops, and when its answer counts as converged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stopping {
    /// Iteration cap `N_it` (the papers run a fixed number of iterations).
    /// Must be at least 1 for a problem with rows.
    pub max_iterations: usize,
    /// The answer is [`SolverStatus::Converged`] when the largest row
    /// residual of the returned `λ`, evaluated at `v = v* + M⁻¹Gᵀλ`, is at
    /// most this value. Must be finite and > 0.
    pub tolerance: f64,
    /// Stop before the cap once the answer has converged (the solver's own
    /// progress measure is used to decide when to check). Off for the
    /// papers' fixed-`N_it` runs.
    pub early_stop: bool,
}

impl Default for Stopping {
    fn default() -> Self {
        Self {
            max_iterations: 100,
            tolerance: DEFAULT_TOLERANCE,
            early_stop: true,
        }
    }
}

impl Stopping {
    /// Exactly `n` iterations (the papers' `N_it`); the status still says
    /// whether [`DEFAULT_TOLERANCE`] was met.
    pub fn iterations(n: usize) -> Self {
        Self {
            max_iterations: n,
            tolerance: DEFAULT_TOLERANCE,
            early_stop: false,
        }
    }

    /// At most `n` iterations, stopping as soon as the residual is at most
    /// `tolerance`.
    pub fn to_tolerance(n: usize, tolerance: f64) -> Self {
        Self {
            max_iterations: n,
            tolerance,
            early_stop: true,
        }
    }

    /// Whether a progress measure `update` is small enough to check for
    /// convergence.
    pub fn check_due(&self, update: f64) -> bool {
        self.early_stop && update <= self.tolerance
    }

    /// Checks the fields.
    pub fn validate(&self) -> Result<(), SolveError> {
        SolveError::require_positive("tolerance", self.tolerance)?;
        SolveError::require(
            self.max_iterations != 0,
            "max_iterations",
            "must be at least 1",
        )?;
        Ok(())
    }
}

/// How a solve ended (in the spirit of Clarabel's `SolverStatus`). Only
/// [`SolverStatus::Converged`] vouches for the answer; every other status
/// returns the best multipliers the solver has, with honest residuals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SolverStatus {
    /// The largest row residual of the returned `λ` is within the tolerance
    /// (the default: the status of a problem without rows).
    #[default]
    Converged,
    /// The iteration cap was reached with the residual above the tolerance.
    IterationLimit,
    /// The solver stopped making progress (its own update measure fell far
    /// below the tolerance) while the residual stayed above it: a fixed
    /// point of the iteration that is not a solution, or an inconsistent
    /// starting velocity.
    Stalled,
    /// The answer is worse than the start: some kind of row (normal,
    /// friction, rolling, bilateral) ends with a larger largest residual
    /// than it started with (friction and rolling rows only from a start above
    /// the tolerance; `docs/solvers.md`, "Status and honest reports").
    Diverged,
    /// The residual of the returned `λ` is not finite.
    NumericalError,
}

impl SolverStatus {
    /// Lower-case name for CSV and JSON output.
    pub const fn name(self) -> &'static str {
        match self {
            SolverStatus::Converged => "converged",
            SolverStatus::IterationLimit => "iteration-limit",
            SolverStatus::Stalled => "stalled",
            SolverStatus::Diverged => "diverged",
            SolverStatus::NumericalError => "numerical-error",
        }
    }

    /// Status of an answer with row residuals `residuals` after a solve
    /// that started with `initial` and ended by `stalled` or at the cap.
    ///
    /// Convergence is judged on the largest row residual of any kind;
    /// divergence kind by kind, since the kinds differ in units (rolling
    /// and twisting rows are angular velocities) and a start can satisfy
    /// some kinds trivially. Friction and rolling rows whose largest start
    /// residual is within the tolerance are not compared: at a cold start
    /// (`λ_n = 0`) their bounds `μ s_n λ_n` are zero, so their residual is
    /// zero by construction, and it grows as soon as the normal rows carry
    /// load, in a solve that is converging (the impact stage of a packing:
    /// normal residual 0.8 → 0.05 m/s while the rolling rows go from 0 to
    /// 2 rad/s in 20 sweeps and fall with more; `docs/solvers.md`).
    pub fn judge_rows(
        residuals: &ResidualStats,
        initial: &ResidualStats,
        tolerance: f64,
        stalled: bool,
    ) -> Self {
        let grew = |kind: RowKind| {
            let (end, start) = (residuals.kind(kind).max, initial.kind(kind).max);
            let collapsed =
                matches!(kind, RowKind::Friction | RowKind::Rolling) && start <= tolerance;
            !collapsed && end > start
        };
        // a NaN row drops out of a running maximum but not out of the sum
        // behind the mean
        let finite = residuals.max.is_finite() && residuals.mean.is_finite();
        let diverged = RowKind::ALL.into_iter().any(grew);
        Self::classify(finite, residuals.max <= tolerance, diverged, stalled)
    }

    /// The status from what a judge found, in order of precedence.
    fn classify(finite: bool, within: bool, worse: bool, stalled: bool) -> Self {
        if !finite {
            SolverStatus::NumericalError
        } else if within {
            SolverStatus::Converged
        } else if worse {
            SolverStatus::Diverged
        } else if stalled {
            SolverStatus::Stalled
        } else {
            SolverStatus::IterationLimit
        }
    }

    /// Status of an answer with a single merit `residual` after a solve
    /// that started at `initial` and ended by `stalled` or at the cap.
    pub(crate) fn judge(residual: f64, initial: f64, tolerance: f64, stalled: bool) -> Self {
        let finite = residual.is_finite();
        Self::classify(finite, residual <= tolerance, residual > initial, stalled)
    }
}

/// What a solve did. Every residual here is evaluated for the returned
/// `λ` at `v = v* + M⁻¹Gᵀλ`, never from a solver's internal state.
/// Convergence failure is reported here ([`Self::status`]), not as an
/// error.
#[derive(Debug, Clone, PartialEq)]
pub struct SolveReport {
    /// Solver name.
    pub solver: &'static str,
    /// How the solve ended.
    pub status: SolverStatus,
    /// Iterations performed.
    pub iterations: usize,
    /// The solver's progress measure at the last iteration.
    pub last_update: f64,
    /// Largest row residual of the starting `λ` (at `v* + M⁻¹Gᵀλ₀`).
    pub initial_residual: f64,
    /// Residual statistics of the starting `λ`, by row kind (what
    /// [`SolverStatus::Diverged`] compares with).
    pub initial_residuals: ResidualStats,
    /// Residual statistics of the returned solution, by row kind.
    pub residuals: ResidualStats,
}

impl SolveReport {
    /// `true` when the status is [`SolverStatus::Converged`].
    pub fn converged(&self) -> bool {
        self.status == SolverStatus::Converged
    }

    /// The report every solver ends with: the status judged on the
    /// residuals of the returned `λ` (evaluated by the caller at
    /// `v* + M⁻¹Gᵀλ`) against the start's and the tolerance
    /// ([`SolverStatus::judge_rows`]).
    pub(crate) fn judged(
        solver: &'static str,
        residuals: ResidualStats,
        initial: ResidualStats,
        tolerance: f64,
        stalled: bool,
        iterations: usize,
        last_update: f64,
    ) -> Self {
        Self {
            solver,
            status: SolverStatus::judge_rows(&residuals, &initial, tolerance, stalled),
            iterations,
            last_update,
            initial_residual: initial.max,
            initial_residuals: initial,
            residuals,
        }
    }

    /// The report of a problem without rows: nothing to solve, converged.
    pub(crate) fn empty(solver: &'static str) -> Self {
        Self {
            solver,
            status: SolverStatus::Converged,
            iterations: 0,
            last_update: 0.0,
            initial_residual: 0.0,
            initial_residuals: ResidualStats::default(),
            residuals: ResidualStats::default(),
        }
    }
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
    /// The solver's progress measure (for an observer that does not read
    /// it, [`Observer::wants_updates`]: 0 in the sweeps of a solve without
    /// early stop that skip it, and in an early-stopping sweep solver's
    /// sweeps whose measure exceeds the tolerance, a lower bound that
    /// also exceeds it).
    pub update: f64,
}

impl<'a> IterationRecord<'a> {
    /// A record whose `elapsed` is left for [`IterationClock::observe`]
    /// to fill.
    pub(crate) fn untimed(
        solver: &'static str,
        iteration: usize,
        problem: &'a ContactProblem,
        (lambda, velocity): (&'a [f64], Option<&'a [Velocity6]>),
        update: f64,
    ) -> Self {
        Self {
            solver,
            iteration,
            elapsed: Duration::ZERO,
            problem,
            lambda,
            velocity,
            update,
        }
    }
}

/// Called after every iteration of every solver (argmin-style), so that
/// experiments can record residual histories without touching solver code.
pub trait Observer {
    /// Receives one iteration.
    fn observe(&mut self, record: &IterationRecord<'_>);

    /// Whether this observer reads the record's `lambda` and `velocity`.
    /// When it does not, a solver that keeps its iterate elsewhere (the
    /// threads of a parallel sweep) may skip copying it out every
    /// iteration, and the record's `lambda` and `velocity` then hold the
    /// iterate of the last copy; `iteration` and `update` are always
    /// current. Default `true`.
    fn wants_iterates(&self) -> bool {
        true
    }

    /// Whether this observer reads the record's `update` every iteration.
    /// When it does not, a sweep solver without early stopping may skip
    /// forming its progress measure (a division per row) in every sweep
    /// but the last, and passes `update = 0` for those; one with early
    /// stopping forms it exactly only as far as its tolerance (its stop
    /// reads no more) and, in a sweep whose measure exceeds the tolerance,
    /// passes a lower bound that also exceeds it. Default `true`.
    fn wants_updates(&self) -> bool {
        true
    }

    /// Whether [`Self::observe`] does anything. When it does not, a solver
    /// may skip calling it (a parallel sweep solver then runs the sweeps
    /// between its residual checks without handing control back after
    /// each; `docs/performance.md`, "NDEM step"). Default `true`.
    fn observes(&self) -> bool {
        true
    }
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
        self.timed(|elapsed| {
            record.elapsed = elapsed;
            observer.observe(&record);
        });
    }

    /// Calls `f` with the solver's time so far; the time `f` takes is not
    /// counted as solver time.
    pub(crate) fn timed(&mut self, f: impl FnOnce(Duration)) {
        let t = std::time::Instant::now();
        f(t.duration_since(self.start) - self.observer_time);
        self.observer_time += t.elapsed();
    }
}

/// An observer that does nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl Observer for NoObserver {
    fn observe(&mut self, _record: &IterationRecord<'_>) {}

    fn wants_iterates(&self) -> bool {
        false
    }

    fn wants_updates(&self) -> bool {
        false
    }

    fn observes(&self) -> bool {
        false
    }
}

/// A contact solver: solves a [`ContactProblem`] in place.
///
/// On entry `lambda` holds the starting multipliers (zero for a cold start)
/// and `velocity` the starting velocity, normally `v* + M⁻¹Gᵀλ`
/// (warm-starting paper, eq. 8). On exit `lambda` is the solution and
/// `velocity` equals `v* + M⁻¹Gᵀλ` for the returned `λ` (up to round-off;
/// PGS, which iterates on a running velocity that drifts from it, forms
/// it again for its last residual check and returns that one), and the
/// report's residuals are those of `v* + M⁻¹Gᵀλ`: the returned state is
/// the one the report describes.
///
/// Errors are real failures (bad input, a non-finite iterate); an answer
/// that is merely not converged is `Ok` with its [`SolverStatus`].
pub trait Solver: Send {
    /// Short name for reports.
    fn name(&self) -> &'static str;

    /// The stopping rule (`N_it`, tolerance, early stop), so that callers
    /// (the CLI, experiment suites) can report it without knowing the
    /// concrete solver. Settings are changed on the concrete solver
    /// (`set_settings`), where they are validated.
    fn stopping(&self) -> Stopping;

    /// Solves a checked task: the problem has rows and `λ`, `v` have its
    /// sizes. Called by [`Self::solve_from`] (and so by
    /// [`Self::solve_observed`] and [`Self::solve`]), which does the
    /// checks; only this crate can make a [`SolveTask`].
    fn solve_task(&mut self, task: SolveTask<'_>) -> Result<SolveReport, SolveError>;

    /// Solves, reporting each iteration to `observer`: checks the sizes of
    /// `lambda` and `velocity` (typed error naming the field), returns a
    /// converged empty report for a problem without rows, and otherwise
    /// calls [`Self::solve_task`] ([`Self::solve_from`] with
    /// [`StartVelocity::Given`]).
    fn solve_observed(
        &mut self,
        problem: &ContactProblem,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
        observer: &mut dyn Observer,
    ) -> Result<SolveReport, SolveError> {
        self.solve_from(problem, lambda, velocity, StartVelocity::Given, observer)
    }

    /// [`Self::solve_observed`] for a start the caller describes: with
    /// [`StartVelocity::Formed`] the solver may take the start's residuals
    /// at `velocity` instead of forming `v* + M⁻¹Gᵀλ` again (PGS does).
    /// The checks and the empty problem are [`Self::solve_observed`]'s; a
    /// solver that overrides one of the two entry points overrides this
    /// one, which the other calls.
    fn solve_from(
        &mut self,
        problem: &ContactProblem,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
        start: StartVelocity,
        observer: &mut dyn Observer,
    ) -> Result<SolveReport, SolveError> {
        problem.check_sizes(lambda, velocity)?;
        if problem.is_empty() && !self.is_collective() {
            return Ok(SolveReport::empty(self.name()));
        }
        self.solve_task(SolveTask {
            problem,
            lambda,
            velocity,
            observer,
            start,
        })
    }

    /// Solves without an observer.
    fn solve(
        &mut self,
        problem: &ContactProblem,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> Result<SolveReport, SolveError> {
        self.solve_observed(problem, lambda, velocity, &mut NoObserver)
    }

    /// Whether this solver is one part of a decomposed solve whose
    /// exchanges every part takes part in ([`crate::SubdomainPgs`]): such
    /// a solver is handed an empty problem too. Default `false`: an empty
    /// problem is reported converged without a call to
    /// [`Self::solve_task`].
    fn is_collective(&self) -> bool {
        false
    }

    /// Whether `local` holds on any subdomain of a decomposed solve: a
    /// collective call for a solver that is one part of such a solve
    /// ([`crate::SubdomainPgs`]), `local` itself for every other solver.
    /// The stepper asks it whether to run the impact stage, which, like
    /// the whole-network solve it is, runs on every subdomain or on none.
    fn any_subdomain(&mut self, local: bool) -> bool {
        local
    }

    /// The iteration cap `N_it` of [`Self::stopping`].
    fn max_iterations(&self) -> usize {
        self.stopping().max_iterations
    }

    /// Moves out the scratch this solver keeps between solves (its next
    /// solve allocates it again unless given scratch back by
    /// [`Self::adopt_scratch`]). In a step with an impact the stepper hands
    /// the continuous solver's scratch to the impact solver and back, so
    /// that the two (48 bytes per contact for PGS's `D⁻¹` alone) are not
    /// held at once and nothing is freed or allocated. Default: no scratch.
    fn take_scratch(&mut self) -> SolverScratch {
        SolverScratch::default()
    }

    /// Takes `scratch` (another solver's, from [`Self::take_scratch`]) to
    /// reuse in its next solves; the vectors are resized and overwritten
    /// there, so the answer does not depend on where they came from.
    /// Default: drops it.
    fn adopt_scratch(&mut self, scratch: SolverScratch) {
        drop(scratch);
    }
}

/// Scratch vectors a solver keeps between solves, handed from one solver
/// to another ([`Solver::take_scratch`], [`Solver::adopt_scratch`]): the
/// per-row diagonal and per-contact vector of PGS, its
/// colouring of the contacts, and the residual evaluator's velocity.
/// Opaque; its contents carry nothing from one solve to the next but the
/// colouring, which a solve keeps only when it was built from the same
/// bodies of the same contacts (the stepper's impact and continuous
/// stages colour one contact set once).
#[derive(Debug, Default)]
pub struct SolverScratch {
    pub(crate) diagonal: Vec<f64>,
    pub(crate) shapes: Vec<u32>,
    pub(crate) velocity: Vec<Velocity6>,
    pub(crate) colouring: crate::pgs_parallel::Colouring,
}

impl SolverScratch {
    /// Bytes the vectors hold (their capacity).
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        self.diagonal.capacity() * size_of::<f64>()
            + self.shapes.capacity() * size_of::<u32>()
            + self.velocity.capacity() * size_of::<Velocity6>()
            + self.colouring.bytes()
    }
}

/// What [`Solver::solve_task`] works on: a problem with rows, and the
/// starting `λ` and `v` with its sizes (checked when the task was made by
/// [`Solver::solve_observed`]), and the observer of the solve.
#[non_exhaustive]
pub struct SolveTask<'a> {
    /// The problem (not empty).
    pub problem: &'a ContactProblem,
    /// Starting multipliers, one per row; the solution on return.
    pub lambda: &'a mut [f64],
    /// Starting velocity, one per body; `v* + M⁻¹Gᵀλ` on return.
    pub velocity: &'a mut [Velocity6],
    /// Receives every iteration.
    pub observer: &'a mut dyn Observer,
    /// What the caller knows of `velocity`.
    pub start: StartVelocity,
}

/// What the caller of a solve knows of its starting velocity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartVelocity {
    /// Any velocity: the start's residuals are taken at `v* + M⁻¹Gᵀλ`,
    /// formed by the solver, so that an inconsistent start shows there.
    #[default]
    Given,
    /// Exactly `v* + M⁻¹Gᵀλ` as [`ContactProblem::velocity_from`] forms it
    /// (equal component by component, zeros of either sign): a warm
    /// start's `v₀` (warm-starting paper, eq. 8;
    /// [`crate::WarmStart::forms_velocity`]). The solver may then take the
    /// start's residuals at `velocity` and skip forming it a second time
    /// (PGS: one pass over the contacts, about 1.7 ns per
    /// contact-iteration of a 25-sweep solve at 10⁵ spheres). Debug
    /// builds check the claim. A false claim changes only the report's
    /// start residuals and the divergence test that compares with them;
    /// the residuals of the returned `λ`, and with them the test for
    /// convergence, are always formed.
    Formed,
}

impl<'a> SolveTask<'a> {
    /// `(problem, λ, v, observer)`.
    #[allow(clippy::type_complexity)]
    pub fn into_parts(
        self,
    ) -> (
        &'a ContactProblem,
        &'a mut [f64],
        &'a mut [Velocity6],
        &'a mut dyn Observer,
    ) {
        (self.problem, self.lambda, self.velocity, self.observer)
    }
}

/// `new`, `settings` and `set_settings` of a solver whose settings type has
/// `validate()`: settings are checked whenever they are set (Clarabel-style
/// `Default` + `validate()`), and `start(&settings)` then checks what the
/// system must give them (the threads a parallel solver will spawn).
macro_rules! validated_settings {
    ($solver:ty, $settings:ty) => {
        crate::solver::validated_settings!($solver, $settings, |_: &$settings| Ok(()));
    };
    ($solver:ty, $settings:ty, $start:expr) => {
        impl $solver {
            /// A solver with the given settings (validated).
            pub fn new(settings: $settings) -> Result<Self, SolveError> {
                settings.validate()?;
                let start: fn(&$settings) -> Result<(), SolveError> = $start;
                start(&settings)?;
                Ok(Self {
                    settings,
                    ..Self::default()
                })
            }

            /// The settings.
            pub fn settings(&self) -> &$settings {
                &self.settings
            }

            /// Replaces the settings (validated; on error the old ones stay).
            pub fn set_settings(&mut self, settings: $settings) -> Result<(), SolveError> {
                settings.validate()?;
                let start: fn(&$settings) -> Result<(), SolveError> = $start;
                start(&settings)?;
                self.settings = settings;
                Ok(())
            }
        }
    };
}
pub(crate) use validated_settings;

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
    /// Colour by colour: the contacts are coloured greedily in the
    /// problem's order so that no two of a colour share a body with finite
    /// mass, and each colour is visited in the problem's order. The
    /// contacts of a colour are independent, so [`crate::ProjectedGaussSeidel`]
    /// can sweep them on several threads with the same result as on one
    /// (`PgsSettings::threads`). Solvers without colouring visit the
    /// problem's order.
    Coloured,
}

impl ContactOrder {
    /// Fills `order` with the visiting order of `n` items.
    pub fn fill(self, n: usize, order: &mut Vec<u32>) {
        order.clear();
        ndem_par::capacity::reserve_for(order, n);
        order.extend(0..n as u32);
        match self {
            ContactOrder::Given | ContactOrder::Coloured => {}
            ContactOrder::Reversed => order.reverse(),
            ContactOrder::Shuffled { seed } => {
                let mut rng = Rng::new(seed);
                for i in (1..n).rev() {
                    let j = (rng.next_u64() % (i as u64 + 1)) as usize;
                    order.swap(i, j);
                }
            }
        }
    }
}

/// First iteration at which an early-stopping sweep solver checks its
/// residual whatever its updates say ([`CheckSchedule`]).
const FIRST_FORCED_CHECK: usize = 16;

/// Growth of the interval between forced residual checks: checks at 16,
/// 20, 25, 32, … sweeps cost two to three sweeps each (the residual
/// statistics form `v` again: 135 ns per contact against about 50 for a
/// sweep on the 10⁵ bed), so about 2 % of a
/// 3000-sweep solve (24 checks).
const FORCED_CHECK_GROWTH: f64 = 1.25;

/// When a sweep solver (PGS, Jacobi) evaluates its residual to decide an
/// early stop. The sweep's own largest update is a cheap progress measure:
/// a check is due when it is within the tolerance (and not sooner than
/// 10 % of the iterations after the last failed check). It is not enough
/// on its own: where contacts are redundant (a rigid aggregate resting on
/// the floor on a hundred contacts, a statically indeterminate packing)
/// the impulses drift along the null space of the Delassus operator with
/// large updates while the residual is already within the tolerance, and
/// the solver would run to its cap. So a check is also forced on a
/// geometric schedule. A forced check is left out when the next one would
/// come at or after the last sweep, whose residual the solver evaluates
/// anyway.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CheckSchedule {
    next: usize,
    forced: usize,
}

impl CheckSchedule {
    pub(crate) fn new() -> Self {
        Self {
            next: 0,
            forced: FIRST_FORCED_CHECK,
        }
    }

    /// Whether to evaluate the residual after `iterations` sweeps whose
    /// largest update is `update`.
    pub(crate) fn due(&mut self, stopping: &Stopping, update: f64, iterations: usize) -> bool {
        if !stopping.early_stop {
            return false;
        }
        let forced = self.forces(stopping, iterations);
        if iterations >= self.forced {
            self.forced = Self::forced_after(iterations);
        }
        forced || (stopping.check_due(update) && iterations >= self.next)
    }

    /// Whether a check is forced after `iterations` sweeps, whatever their
    /// update (so a solver can form that sweep's update exactly, not only
    /// as far as [`Stopping::check_due`] reads it).
    pub(crate) fn forces(&self, stopping: &Stopping, iterations: usize) -> bool {
        if !stopping.early_stop || iterations < self.forced {
            return false;
        }
        // the residual after the last sweep is evaluated in any case: a
        // forced check whose successor would come at or after it can save
        // fewer sweeps than the growth's quarter, while a check costs two
        // to three sweeps (the 20-sweep impact stage of a settling packing
        // reaches its tolerance within the 20 sweeps about once in 200
        // steps)
        iterations >= stopping.max_iterations
            || Self::forced_after(iterations) < stopping.max_iterations
    }

    /// The next forced check after one at `iterations`.
    fn forced_after(iterations: usize) -> usize {
        ((iterations as f64 * FORCED_CHECK_GROWTH).ceil() as usize).max(iterations + 1)
    }

    /// The residual was checked after `iterations` sweeps and is not yet
    /// within the tolerance.
    pub(crate) fn failed(&mut self, iterations: usize) {
        self.next = iterations + 1 + iterations / 10;
    }

    /// The early-stop decision shared by the sweep solvers after an
    /// iteration whose progress measure is `update`: when a check is due,
    /// `residual()` (the honest residual of the current `λ`) decides
    /// converged; an update below [`STALL_FRACTION`] of the
    /// tolerance with the residual above it is a stall.
    pub(crate) fn decide(
        &mut self,
        stopping: &Stopping,
        update: f64,
        iterations: usize,
        residual: impl FnOnce() -> f64,
    ) -> EarlyStop {
        if !self.due(stopping, update, iterations) {
            return EarlyStop::Continue;
        }
        self.decide_when_due(stopping, update, iterations, residual)
    }

    /// [`Self::decide`] for a check that [`Self::due`] already found due
    /// (a solver that asked it as the sweep ended).
    pub(crate) fn decide_when_due(
        &mut self,
        stopping: &Stopping,
        update: f64,
        iterations: usize,
        residual: impl FnOnce() -> f64,
    ) -> EarlyStop {
        if residual() <= stopping.tolerance {
            return EarlyStop::Converged;
        }
        if update <= STALL_FRACTION * stopping.tolerance {
            return EarlyStop::Stalled;
        }
        self.failed(iterations);
        EarlyStop::Continue
    }
}

/// What a sweep solver's loop carries into its report: the iterations
/// done, the last one's progress measure and whether the loop stalled.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SweepCount {
    /// Completed iterations.
    pub(crate) iterations: usize,
    /// The last iteration's progress measure.
    pub(crate) last_update: f64,
    /// The loop stopped on [`EarlyStop::Stalled`].
    pub(crate) stalled: bool,
}

impl SweepCount {
    /// Iteration number `iterations` (1 after the first) is done with
    /// progress measure `update`.
    pub(crate) fn done(&mut self, iterations: usize, update: f64) {
        self.iterations = iterations;
        self.last_update = update;
    }

    /// Whether `decision` ends the loop: converged, or stalled (remembered
    /// for the report).
    pub(crate) fn ends(&mut self, decision: EarlyStop) -> bool {
        match decision {
            EarlyStop::Continue => false,
            EarlyStop::Converged => true,
            EarlyStop::Stalled => {
                self.stalled = true;
                true
            }
        }
    }

    /// The solve's report ([`SolveReport::judged`]) from the residuals of
    /// the returned `λ` and of the start.
    pub(crate) fn report(
        &self,
        solver: &'static str,
        (residuals, initial): (ResidualStats, ResidualStats),
        tolerance: f64,
    ) -> SolveReport {
        SolveReport::judged(
            solver,
            residuals,
            initial,
            tolerance,
            self.stalled,
            self.iterations,
            self.last_update,
        )
    }
}

/// What [`CheckSchedule::decide`] says after an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EarlyStop {
    /// Go on.
    Continue,
    /// The residual is within the tolerance.
    Converged,
    /// The iteration no longer moves while the residual is above it.
    Stalled,
}

/// A non-finite iterate is a real failure ([`SolveError::Diverged`]),
/// naming the first bad row.
pub(crate) fn check_finite_iterate(
    solver: &'static str,
    lambda: &[f64],
    iteration: usize,
) -> Result<(), SolveError> {
    match lambda.iter().position(|x| !x.is_finite()) {
        Some(row) => Err(SolveError::Diverged {
            solver,
            row,
            iteration,
        }),
        None => Ok(()),
    }
}

/// A Gauss-Seidel sweep whose largest correction is below this fraction of
/// the tolerance while the residual is above it has stalled.
pub const STALL_FRACTION: f64 = 1e-3;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::KindStats;

    fn stats(normal: f64, friction: f64, rolling: f64, bilateral: f64) -> ResidualStats {
        let kind = |max: f64| KindStats {
            count: 1,
            mean: max,
            max,
        };
        ResidualStats {
            normal: kind(normal),
            friction: kind(friction),
            rolling: kind(rolling),
            bilateral: kind(bilateral),
            mean: (normal + friction + rolling + bilateral) / 4.0,
            // as `RowSums::finish` forms it: `f64::max` drops a NaN
            max: normal.max(friction).max(rolling).max(bilateral),
            natural_map: 0.0,
        }
    }

    /// The sweeps after which a solver evaluates the residual when the
    /// updates stay large and every check fails: the checks, and the
    /// report's evaluation after the last sweep unless a check was there.
    fn forced_checks(max_iterations: usize) -> Vec<usize> {
        let stopping = Stopping {
            max_iterations,
            ..Stopping::default()
        };
        let mut schedule = CheckSchedule::new();
        let mut at: Vec<usize> = (1..=max_iterations)
            .filter(|&it| {
                let due = schedule.due(&stopping, f64::MAX, it);
                if due {
                    schedule.failed(it);
                }
                due
            })
            .collect();
        if at.last() != Some(&max_iterations) {
            at.push(max_iterations);
        }
        at
    }

    #[test]
    fn no_forced_check_just_before_the_last_sweep() {
        // the impact stage's 20 sweeps: only the last one (whose residual
        // the solver reports), not 16 as well
        assert_eq!(forced_checks(20), vec![20]);
        assert_eq!(forced_checks(25), vec![16, 25]);
        assert_eq!(
            forced_checks(100),
            vec![16, 20, 25, 32, 40, 50, 63, 79, 100]
        );
        assert_eq!(forced_checks(10), vec![10]);
        // without an early stop nothing is checked before the end
        let stopping = Stopping {
            early_stop: false,
            ..Stopping::default()
        };
        assert!(!CheckSchedule::new().due(&stopping, 0.0, 16));
    }

    #[test]
    fn divergence_is_judged_kind_by_kind() {
        let tol = 1e-6;
        let judge = |end: ResidualStats, start: ResidualStats| {
            SolverStatus::judge_rows(&end, &start, tol, false)
        };
        // a cold start: friction and rolling rows start at zero (collapsed
        // bounds) and end above the start's normal residual while the
        // normal rows improve (the impact stage of a packing)
        let cold = stats(0.8, 0.0, 0.0, 0.0);
        assert_eq!(
            judge(stats(0.05, 0.01, 2.0, 0.0), cold),
            SolverStatus::IterationLimit
        );
        // the normal rows worse than at the start
        assert_eq!(
            judge(stats(0.9, 0.0, 0.0, 0.0), cold),
            SolverStatus::Diverged
        );
        // friction rows that started with a residual and grew
        assert_eq!(
            judge(stats(0.1, 0.3, 0.0, 0.0), stats(0.8, 0.2, 0.0, 0.0)),
            SolverStatus::Diverged
        );
        // ... but not from a start within the tolerance (a cold start's
        // 1e-161 where the disk's squared norm underflows)
        assert_eq!(
            judge(stats(0.1, 0.3, 0.5, 0.0), stats(0.8, 1.7e-161, 1e-7, 0.0)),
            SolverStatus::IterationLimit
        );
        // bilateral rows are compared even from zero (their bounds do not
        // depend on λ)
        assert_eq!(
            judge(stats(0.1, 0.0, 0.0, 1e-3), cold),
            SolverStatus::Diverged
        );
        // convergence is judged on the largest row of any kind
        assert_eq!(
            judge(stats(1e-7, 1e-7, 2e-6, 0.0), cold),
            SolverStatus::IterationLimit
        );
        assert_eq!(
            judge(stats(1e-7, 1e-7, 1e-7, 0.0), cold),
            SolverStatus::Converged
        );
        assert_eq!(
            SolverStatus::judge_rows(&stats(0.1, 0.0, 0.0, 0.0), &cold, tol, true),
            SolverStatus::Stalled
        );
        // a NaN row: the largest residual is finite, the mean is not
        assert_eq!(stats(f64::NAN, 0.0, 0.0, 0.0).max, 0.0);
        assert_eq!(
            judge(stats(f64::NAN, 0.0, 0.0, 0.0), cold),
            SolverStatus::NumericalError
        );
        assert_eq!(
            judge(stats(0.1, f64::INFINITY, 0.0, 0.0), cold),
            SolverStatus::NumericalError
        );
    }
}

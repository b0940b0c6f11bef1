//! The interface shared by the solvers of problems given by matrices
//! ([`crate::LocalProblem`], FCLIB's local form): the [`LocalSolver`] trait,
//! its report with the [`SolverStatus`] of the body-based solvers, and
//! iteration observers ([`LocalObserver`], argmin-style, as [`crate::Observer`]
//! is for body-based solvers).

use crate::local_problem::check_finite;
use crate::solver::{IterationClock, NoObserver, SolverStatus, Stopping};
use crate::{FrictionSet, LocalProblem, SolveError};
use std::time::Duration;

/// What a local solve did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LocalReport {
    /// Solver name.
    pub solver: &'static str,
    /// How it ended (tolerance on [`Self::merit`]).
    pub status: SolverStatus,
    /// Iterations performed (sweeps for Gauss-Seidel, Newton iterations,
    /// outer fixed-point iterations for APGD).
    pub sweeps: usize,
    /// Merit of the returned reactions: the Coulomb merit
    /// [`LocalProblem::merit`], or for a solver of the box friction law
    /// [`LocalProblem::box_merit`].
    pub merit: f64,
    /// Merit of the start.
    pub initial_merit: f64,
}

impl LocalReport {
    /// `true` when the status is [`SolverStatus::Converged`].
    pub fn converged(&self) -> bool {
        self.status == SolverStatus::Converged
    }
}

/// What every local solve's report is judged against: the solver, the
/// start's merit and the stopping rule.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LocalJudge {
    pub(crate) solver: &'static str,
    pub(crate) initial_merit: f64,
    pub(crate) stopping: Stopping,
}

impl LocalJudge {
    /// The judge of a solve by `solver` from a start of `initial_merit`.
    pub(crate) fn new(solver: &'static str, initial_merit: f64, stopping: Stopping) -> Self {
        Self {
            solver,
            initial_merit,
            stopping,
        }
    }

    /// The report: the status judged on the `merit` of the returned
    /// reactions against the start's and the tolerance.
    pub(crate) fn report(&self, merit: f64, stalled: bool, sweeps: usize) -> LocalReport {
        LocalReport {
            solver: self.solver,
            status: SolverStatus::judge(
                merit,
                self.initial_merit,
                self.stopping.tolerance,
                stalled,
            ),
            sweeps,
            merit,
            initial_merit: self.initial_merit,
        }
    }
}

/// One iteration of a local solver, as seen by a [`LocalObserver`].
#[derive(Debug, Clone, Copy)]
pub struct LocalIteration<'a> {
    /// Solver name.
    pub solver: &'static str,
    /// Completed iterations (1 after the first).
    pub iteration: usize,
    /// Solver time since the start of the solve, excluding time spent in
    /// the observer.
    pub elapsed: Duration,
    /// The problem being solved.
    pub problem: &'a LocalProblem,
    /// Current reactions `r`.
    pub reactions: &'a [f64],
}

/// Called after every iteration of a [`LocalSolver`]. Closures
/// `FnMut(&LocalIteration)` are observers.
pub trait LocalObserver {
    /// Receives one iteration.
    fn observe(&mut self, record: &LocalIteration<'_>);
}

impl<F: FnMut(&LocalIteration<'_>)> LocalObserver for F {
    fn observe(&mut self, record: &LocalIteration<'_>) {
        self(record)
    }
}

impl LocalObserver for NoObserver {
    fn observe(&mut self, _record: &LocalIteration<'_>) {}
}

/// A solver of [`LocalProblem`]s `(W, q, μ)`: solves in place from the
/// reactions `r` it is given (zero for a cold start). Its settings are
/// checked ([`LocalSolver::validate`]) before every solve. As for
/// [`crate::Solver`], errors are real failures (bad input, a non-finite
/// iterate); an answer that is not converged is `Ok` with its status.
pub trait LocalSolver {
    /// Short name for reports.
    fn name(&self) -> &'static str;

    /// The stopping rule (iteration cap, tolerance on the merit).
    fn stopping(&self) -> Stopping;

    /// Checks the settings (typed error naming the field). The default
    /// checks the stopping rule.
    fn validate(&self) -> Result<(), SolveError> {
        self.stopping().validate()
    }

    /// The friction law solved (and the merit the answer is judged on):
    /// the disk (Coulomb) unless the solver says otherwise.
    fn friction(&self) -> FrictionSet {
        FrictionSet::Disk
    }

    /// Solves a checked task: the problem has contacts, the reactions have
    /// its size and are finite, the settings are valid. Called by
    /// [`Self::solve_observed`], which does the checks; only this crate
    /// can make a [`LocalTask`].
    fn solve_task(&mut self, task: LocalTask<'_>) -> Result<LocalReport, SolveError>;

    /// Solves, reporting each iteration to `observer`: validates the
    /// stopping rule and the start `reactions` (typed errors naming the
    /// field), returns a converged report for a problem without contacts,
    /// and otherwise calls [`Self::solve_task`].
    fn solve_observed(
        &mut self,
        problem: &LocalProblem,
        reactions: &mut [f64],
        observer: &mut dyn LocalObserver,
    ) -> Result<LocalReport, SolveError> {
        self.validate()?;
        let initial_merit = match problem.start(self.name(), self.friction(), reactions)? {
            Ok(merit) => merit,
            Err(empty) => return Ok(empty),
        };
        self.solve_task(LocalTask {
            problem,
            reactions,
            initial_merit,
            observer,
        })
    }

    /// Solves without an observer.
    fn solve(
        &mut self,
        problem: &LocalProblem,
        reactions: &mut [f64],
    ) -> Result<LocalReport, SolveError> {
        self.solve_observed(problem, reactions, &mut NoObserver)
    }
}

/// What [`LocalSolver::solve_task`] works on (checked when made by
/// [`LocalSolver::solve_observed`]).
#[non_exhaustive]
pub struct LocalTask<'a> {
    /// The problem (with contacts).
    pub problem: &'a LocalProblem,
    /// Starting reactions `r` (finite, `3 n_c`); the solution on return.
    pub reactions: &'a mut [f64],
    /// Merit of the start under [`LocalSolver::friction`].
    pub initial_merit: f64,
    /// Receives every iteration.
    pub observer: &'a mut dyn LocalObserver,
}

/// Passes iterations to an observer with the solver's own elapsed time.
pub(crate) struct LocalRecorder<'o> {
    solver: &'static str,
    clock: IterationClock,
    observer: &'o mut dyn LocalObserver,
}

impl<'o> LocalRecorder<'o> {
    pub(crate) fn start(solver: &'static str, observer: &'o mut dyn LocalObserver) -> Self {
        Self {
            solver,
            clock: IterationClock::start(),
            observer,
        }
    }

    /// Reports iteration `iteration` with reactions `r`.
    pub(crate) fn record(&mut self, problem: &LocalProblem, iteration: usize, r: &[f64]) {
        let (solver, observer) = (self.solver, &mut *self.observer);
        self.clock.timed(|elapsed| {
            observer.observe(&LocalIteration {
                solver,
                iteration,
                elapsed,
                problem,
                reactions: r,
            })
        });
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

impl LocalProblem {
    /// Checks a starting `r` and returns its merit under `friction`, or
    /// the report of a problem without contacts (nothing to solve,
    /// converged).
    pub(crate) fn start(
        &self,
        solver: &'static str,
        friction: FrictionSet,
        r: &[f64],
    ) -> Result<Result<f64, LocalReport>, SolveError> {
        SolveError::require_len("r", 3 * self.contacts(), r.len())?;
        check_finite("r", r)?;
        let initial_merit = self.law_merit(friction, r);
        if self.contacts() == 0 {
            return Ok(Err(LocalReport {
                solver,
                status: SolverStatus::Converged,
                sweeps: 0,
                merit: 0.0,
                initial_merit,
            }));
        }
        Ok(Ok(initial_merit))
    }
}

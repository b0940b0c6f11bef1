//! A portfolio of local solvers asked for by result ([`LocalPortfolio`]):
//! the tolerance, reached by the cheapest solver that gets there.

use crate::local_solver::{LocalIteration, LocalObserver, LocalReport, LocalSolver, LocalTask};
use crate::newton::{NewtonSettings, SemismoothNewton};
use crate::solver::Stopping;
use crate::{LocalGaussSeidel, ProximalPoint, SolveError};
use ndem_math::SettingError;
use std::time::Duration;

/// Solves a [`LocalProblem`](crate::LocalProblem) to a tolerance on the
/// Coulomb merit, cheapest solver first: non-smooth Gauss-Seidel (exact
/// local solves) in rounds of [`Self::round`] sweeps while each round
/// divides the merit by at least [`Self::required_rate`]; on a slower
/// round (a stall) or after [`Self::sweeps`] sweeps, [`SemismoothNewton`]
/// from the best reactions so far; if Newton does not reach the
/// tolerance, [`ProximalPoint`] from its answer. Each stage starts from
/// the previous one's answer, which is the best iterate it saw. The
/// report's `solver` names the stage that answered, its `sweeps` count the
/// iterations of every stage, and its status is that stage's; an observer
/// sees the stages' iterations numbered and timed from the start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LocalPortfolio {
    /// Tolerance on the Coulomb merit (the iteration caps are the stages').
    pub tolerance: f64,
    /// Gauss-Seidel sweeps per round.
    pub round: usize,
    /// Most Gauss-Seidel sweeps in all.
    pub sweeps: usize,
    /// Factor by which a round must divide the merit to keep sweeping.
    pub required_rate: f64,
    /// The Newton stage (its tolerance is [`Self::tolerance`]).
    pub newton: NewtonSettings,
    /// The proximal-point stage (its tolerance is [`Self::tolerance`]).
    pub proximal: ProximalPoint,
}

impl Default for LocalPortfolio {
    fn default() -> Self {
        Self {
            tolerance: 1e-8,
            round: 20,
            sweeps: 2000,
            required_rate: 2.0,
            newton: NewtonSettings::default(),
            proximal: ProximalPoint::default(),
        }
    }
}

impl LocalPortfolio {
    fn gauss_seidel(&self) -> LocalGaussSeidel {
        LocalGaussSeidel {
            stopping: Stopping::to_tolerance(self.round, self.tolerance),
            ..LocalGaussSeidel::default()
        }
    }
    fn newton(&self) -> SemismoothNewton {
        SemismoothNewton {
            settings: NewtonSettings {
                stopping: Stopping::to_tolerance(
                    self.newton.stopping.max_iterations,
                    self.tolerance,
                ),
                ..self.newton
            },
        }
    }
    fn proximal(&self) -> ProximalPoint {
        ProximalPoint {
            stopping: Stopping::to_tolerance(self.proximal.stopping.max_iterations, self.tolerance),
            ..self.proximal
        }
    }
}

impl LocalSolver for LocalPortfolio {
    fn name(&self) -> &'static str {
        "portfolio"
    }

    fn stopping(&self) -> Stopping {
        Stopping::to_tolerance(self.sweeps.max(1), self.tolerance)
    }

    fn validate(&self) -> Result<(), SolveError> {
        self.stopping().validate()?;
        SolveError::require(self.round != 0, "round", "must be at least 1")?;
        SolveError::require(
            self.required_rate.is_finite() && self.required_rate >= 1.0,
            "required_rate",
            "must be finite and >= 1",
        )?;
        self.gauss_seidel().validate()?;
        self.newton().validate()?;
        self.proximal().validate()
    }

    fn solve_task(&mut self, task: LocalTask<'_>) -> Result<LocalReport, SolveError> {
        let (p, r) = (task.problem, task.reactions);
        let observer = &mut Continued {
            observer: task.observer,
            offset: (0, Duration::ZERO),
            last: (0, Duration::ZERO),
        };
        let mut report = LocalReport {
            solver: self.gauss_seidel().name(),
            status: crate::SolverStatus::IterationLimit,
            sweeps: 0,
            merit: task.initial_merit,
            initial_merit: task.initial_merit,
        };
        let mut total = 0;
        while total < self.sweeps {
            let before = report.merit;
            report = self.gauss_seidel().solve_observed(p, r, observer)?;
            observer.next_stage();
            total += report.sweeps;
            if report.converged() || report.merit * self.required_rate > before {
                break;
            }
        }
        if !report.converged() {
            report = self.newton().solve_observed(p, r, observer)?;
            observer.next_stage();
            total += report.sweeps;
        }
        if !report.converged() {
            report = self.proximal().solve_observed(p, r, observer)?;
            total += report.sweeps;
        }
        Ok(LocalReport {
            sweeps: total,
            initial_merit: task.initial_merit,
            ..report
        })
    }
}

/// Passes the stages' iterations on as one solve's: iterations and time
/// counted from the portfolio's start.
struct Continued<'o> {
    observer: &'o mut dyn LocalObserver,
    /// Iterations and time of the stages before this one.
    offset: (usize, Duration),
    /// The last iteration passed on, counted from the start.
    last: (usize, Duration),
}

impl Continued<'_> {
    fn next_stage(&mut self) {
        self.offset = self.last;
    }
}

impl LocalObserver for Continued<'_> {
    fn observe(&mut self, record: &LocalIteration<'_>) {
        let record = LocalIteration {
            iteration: self.offset.0 + record.iteration,
            elapsed: self.offset.1 + record.elapsed,
            ..*record
        };
        self.last = (record.iteration, record.elapsed);
        self.observer.observe(&record);
    }
}

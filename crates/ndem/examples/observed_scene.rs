//! A built-in scene stepped with a custom observer: a solver wrapper that
//! records how many iterations each step's solve needed to bring its
//! largest residual below 1e-6, without touching solver code.
use ndem::prelude::*;
use std::sync::{Arc, Mutex};

/// Wraps any solver and watches its iterations.
struct Watched {
    inner: Box<dyn Solver>,
    /// Iterations to the first update below 1e-6, per solve (shared with
    /// the caller: the stepper owns the solver).
    to_tolerance: Arc<Mutex<Vec<Option<usize>>>>,
}

/// The observer of one solve.
struct FirstBelow(Option<usize>);

impl Observer for FirstBelow {
    fn observe(&mut self, record: &IterationRecord<'_>) {
        if self.0.is_none() && record.update <= 1e-6 {
            self.0 = Some(record.iteration);
        }
    }
}

impl Solver for Watched {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn stopping(&self) -> Stopping {
        self.inner.stopping()
    }
    fn solve_task(&mut self, task: SolveTask<'_>) -> Result<SolveReport, ndem::solve::SolveError> {
        let mut first = FirstBelow(None);
        // pass on to the caller's observer too
        struct Both<'a>(&'a mut FirstBelow, &'a mut dyn Observer);
        impl Observer for Both<'_> {
            fn observe(&mut self, record: &IterationRecord<'_>) {
                self.0.observe(record);
                self.1.observe(record);
            }
        }
        let mut both = Both(&mut first, task.observer);
        let report =
            self.inner
                .solve_observed(task.problem, task.lambda, task.velocity, &mut both)?;
        self.to_tolerance
            .lock()
            .map_err(|_| ndem::solve::SolveError::InvalidSettings {
                field: "observer",
                reason: "log poisoned",
            })?
            .push(first.0);
        Ok(report)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut scene = builders::builtin("column")?;
    let mut stepper = scene.stepper()?;
    let log = Arc::new(Mutex::new(Vec::new()));
    stepper.set_solver(Box::new(Watched {
        inner: scene.solver.build(scene.iterations)?,
        to_tolerance: Arc::clone(&log),
    }));
    for _ in 0..50 {
        scene.step(&mut stepper)?;
    }
    let log = log.lock().map_err(|_| "log poisoned")?;
    let reached: Vec<usize> = log.iter().flatten().copied().collect();
    println!(
        "{} solves; {} reached an update of 1e-6, after {:?} iterations",
        log.len(),
        reached.len(),
        reached
    );
    Ok(())
}

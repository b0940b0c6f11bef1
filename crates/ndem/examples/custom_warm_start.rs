//! A custom warm-start policy: history warm starting (warm-starting paper,
//! eqs. 7-8) whose fraction `β` adapts to how much the contact set changed
//! since the last step: the policy keeps its own state between steps.
use ndem::prelude::*;
use ndem::solve::{ImpulseHistory, SolveError, WarmStartStats};
use std::sync::{Arc, Mutex};

/// `β = 0.85 × (fraction of contacts that persist)`: lower when many are
/// new. It owns the history it starts from (recorded after every accepted
/// step) and shares the `β` it chose with the caller (the stepper owns the
/// policy).
struct AdaptiveBeta {
    history_start: HistoryWarmStart,
    betas: Arc<Mutex<Vec<f64>>>,
}

impl WarmStart for AdaptiveBeta {
    fn name(&self) -> &'static str {
        "adaptive-beta"
    }

    fn initialize(
        &mut self,
        problem: &ContactProblem,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> Result<WarmStartStats, SolveError> {
        let history = self.history_start.history();
        let persisting = problem
            .contacts()
            .iter()
            .filter(|c| history.is_some_and(|h| h.get(&c.key).is_some()))
            .count();
        let beta = 0.85 * persisting as f64 / problem.contacts().len().max(1) as f64;
        if let Ok(mut log) = self.betas.lock() {
            log.push(beta);
        }
        self.history_start.beta = beta;
        self.history_start.initialize(problem, lambda, velocity)
    }

    fn record(&mut self, problem: &ContactProblem, lambda: &[f64]) {
        self.history_start.record(problem, lambda);
    }

    fn history(&self) -> Option<&ImpulseHistory> {
        self.history_start.history()
    }

    fn history_mut(&mut self) -> Option<&mut ImpulseHistory> {
        self.history_start.history_mut()
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut scene = builders::builtin("pile")?;
    let mut stepper = scene.stepper()?;
    let betas = Arc::new(Mutex::new(Vec::new()));
    stepper.set_warm_start(Box::new(AdaptiveBeta {
        history_start: HistoryWarmStart::default(),
        betas: Arc::clone(&betas),
    }));
    let mut warm = 0;
    for _ in 0..200 {
        warm += scene.step(&mut stepper)?.warm_contacts;
    }
    let betas = betas.lock().map_err(|_| "log poisoned")?;
    let mean = betas.iter().sum::<f64>() / betas.len().max(1) as f64;
    println!(
        "pile, 200 steps: {} solves warm started, {warm} contacts in all, mean beta {mean:.3}",
        betas.len()
    );
    Ok(())
}

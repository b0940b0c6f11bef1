//! A custom warm-start policy: history warm starting (warm-starting paper,
//! eqs. 7-8) whose fraction `β` adapts to how much the contact set changed
//! since the last step: the policy keeps its own state between steps.
use ndem::prelude::*;
use ndem::solve::{ImpulseHistory, SolveError, WarmStartStats};
use std::sync::{Arc, Mutex};

/// `β = 0.85 × (fraction of contacts that persist)`: lower when many are
/// new. It counts its own steps and shares the `β` it chose with the
/// caller (the stepper owns the policy).
struct AdaptiveBeta {
    steps: usize,
    betas: Arc<Mutex<Vec<f64>>>,
}

impl WarmStart for AdaptiveBeta {
    fn name(&self) -> &'static str {
        "adaptive-beta"
    }

    fn initialize(
        &mut self,
        problem: &ContactProblem,
        history: &ImpulseHistory,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> Result<WarmStartStats, SolveError> {
        let n = problem.contacts().len();
        let persisting = problem
            .contacts()
            .iter()
            .filter(|c| history.get(&c.key).is_some())
            .count();
        let beta = 0.85 * persisting as f64 / n.max(1) as f64;
        self.steps += 1;
        if let Ok(mut log) = self.betas.lock() {
            log.push(beta);
        }
        let mut history_start = HistoryWarmStart {
            beta,
            ..HistoryWarmStart::default()
        };
        history_start.initialize(problem, history, lambda, velocity)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut scene = builders::builtin("pile")?;
    let mut stepper = scene.stepper()?;
    let betas = Arc::new(Mutex::new(Vec::new()));
    stepper.set_warm_start(Box::new(AdaptiveBeta {
        steps: 0,
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

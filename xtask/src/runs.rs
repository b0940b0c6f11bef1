//! Helpers the model-reduction suites share: the papers' fixed-N_it PGS
//! stepper, mean and spread of samples, and running a plan of runs two at
//! a time (one per core).

use crate::report::SuiteResult;
use ndem_solve::{HistoryWarmStart, PgsSettings, ProjectedGaussSeidel, Stopping};
use ndem_step::{StepSettings, Stepper};

/// A stepper with PGS at exactly `iterations` sweeps (the papers' N_it)
/// and history warm starting.
pub(crate) fn history_stepper(iterations: usize, settings: StepSettings) -> SuiteResult<Stepper> {
    stepper_stopping(Stopping::iterations(iterations), settings)
}

/// A stepper with PGS stopping as `stopping` says and history warm
/// starting.
pub(crate) fn stepper_stopping(stopping: Stopping, settings: StepSettings) -> SuiteResult<Stepper> {
    let pgs = ProjectedGaussSeidel::new(PgsSettings {
        stopping,
        ..PgsSettings::default()
    })
    .map_err(|e| e.to_string())?;
    Stepper::new(
        settings,
        Box::new(pgs),
        Box::new(HistoryWarmStart::default()),
    )
    .map_err(|e| e.to_string())
}

/// Mean and (population) standard deviation; `(NaN, NaN)` for no samples.
pub(crate) fn mean_sd(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n).sqrt();
    (m, sd)
}

/// Runs `run` on every entry of `plan`, two at a time on scoped threads,
/// and returns the results in plan order; `done` sees each result as its
/// pair finishes. A panicking run becomes an error.
pub(crate) fn in_pairs<P: Sync, T: Send>(
    plan: &[P],
    run: impl Fn(&P) -> SuiteResult<T> + Sync,
    mut done: impl FnMut(&SuiteResult<T>),
) -> Vec<SuiteResult<T>> {
    let mut out = Vec::with_capacity(plan.len());
    for pair in plan.chunks(2) {
        let results: Vec<SuiteResult<T>> = std::thread::scope(|scope| {
            let handles: Vec<_> = pair
                .iter()
                .map(|p| {
                    let run = &run;
                    scope.spawn(move || run(p))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err("a run panicked".into())))
                .collect()
        });
        for r in results {
            done(&r);
            out.push(r);
        }
    }
    out
}

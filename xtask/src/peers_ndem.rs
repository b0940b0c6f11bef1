//! The NDEM half of `cargo xtask peers`: the step on a resting bed, PGS in
//! the papers' order on one thread against the coloured order on one and
//! on two threads, per stage, interleaved.

use crate::peers::bed;
use crate::report::{Progress, SuiteResult};
use ndem_scenes::SolverChoice;
use ndem_scenes::builders::Scene;
use ndem_step::{StageTimes, Stepper, World};
use serde_json::json;
use std::fmt::Write as _;

/// Sweeps per step, as in the and the papers' runs.
const SWEEPS: usize = 25;

/// One configuration of the measured step.
#[derive(Debug, Clone, Copy)]
struct Config {
    label: &'static str,
    solver: SolverChoice,
    threads: usize,
}

const CONFIGS: [Config; 3] = [
    Config {
        label: "pgs, 1 thread",
        solver: SolverChoice::Pgs,
        threads: 1,
    },
    Config {
        label: "pgs-coloured, 1 thread",
        solver: SolverChoice::PgsColoured,
        threads: 1,
    },
    Config {
        label: "pgs-coloured, 2 threads",
        solver: SolverChoice::PgsColoured,
        threads: 2,
    },
];

/// Per-step stage times (seconds, the minimum over repeats of the mean
/// over the measured steps) and the contacts.
#[derive(Debug, Clone, Copy, Default)]
struct StepTimes {
    detection: f64,
    assembly: f64,
    impact: f64,
    continuous: f64,
    total: f64,
    contacts: f64,
}

impl StepTimes {
    fn add(&mut self, t: &StageTimes, contacts: usize, steps: usize) {
        let k = 1.0 / steps as f64;
        self.detection += t.detection.as_secs_f64() * k;
        self.assembly += t.assembly.as_secs_f64() * k;
        self.impact += t.impact.as_secs_f64() * k;
        self.continuous += t.continuous.as_secs_f64() * k;
        self.total += t.total.as_secs_f64() * k;
        self.contacts += contacts as f64 * k;
    }

    /// Continuous stage per contact and sweep \[ns\].
    fn per_contact_iteration(&self) -> f64 {
        self.continuous * 1e9 / (self.contacts * SWEEPS as f64).max(1.0)
    }
}

/// Settles `n` spheres with NDEM (the scene's own stepper, 1.5 s) and
/// returns the scene with its settled world and the warm-start history.
fn settle(n: usize, progress: &mut Progress) -> SuiteResult<(Scene, ndem_solve::ImpulseHistory)> {
    let mut scene = bed(n, 11, 0.1)?;
    let mut stepper = scene.stepper().map_err(|e| e.to_string())?;
    let steps = (1.5 / scene.settings.dt).round() as usize;
    for k in 0..steps {
        scene.step(&mut stepper).map_err(|e| e.to_string())?;
        if k % 100 == 99 {
            progress.note(&format!(
                "NDEM bed of {n}: settling, step {} of {steps}",
                k + 1
            ));
        }
    }
    let history = stepper.history().cloned().unwrap_or_default();
    Ok((scene, history))
}

/// `steps` steps of the settled bed with `config`.
fn measure(
    scene: &Scene,
    history: &ndem_solve::ImpulseHistory,
    config: Config,
    steps: usize,
) -> SuiteResult<(StepTimes, World)> {
    let mut s = scene.clone();
    s.solver = config.solver;
    s.iterations = SWEEPS;
    s.threads = config.threads;
    let mut stepper: Stepper = s.stepper().map_err(|e| e.to_string())?;
    if !stepper.set_history(history.clone()) {
        return Err("the bed's warm start keeps no history".into());
    }
    let mut times = StepTimes::default();
    for _ in 0..steps {
        let st = s.step(&mut stepper).map_err(|e| e.to_string())?;
        times.add(&st.times, st.contacts, steps);
    }
    Ok((times, s.world))
}

/// What the NDEM comparison measured at one size.
pub(crate) struct NdemResult {
    n: usize,
    steps: usize,
    repeats: usize,
    times: Vec<(Config, StepTimes)>,
    /// The coloured runs on 1 and 2 threads ended in the same world.
    threads_agree: bool,
}

/// Settles the bed and measures every configuration, interleaved.
pub(crate) fn compare(
    n: usize,
    steps: usize,
    repeats: usize,
    progress: &mut Progress,
) -> SuiteResult<NdemResult> {
    let (scene, history) = settle(n, progress)?;
    let mut best: Vec<Option<StepTimes>> = vec![None; CONFIGS.len()];
    let mut worlds: Vec<Option<World>> = vec![None; CONFIGS.len()];
    for r in 0..repeats {
        for (k, &config) in CONFIGS.iter().enumerate() {
            let (t, world) = measure(&scene, &history, config, steps)?;
            progress.note(&format!(
                "NDEM bed of {n}, repeat {}: {} {:.1} ms per step, continuous {:.1} ns per contact-iteration",
                r + 1,
                config.label,
                t.total * 1e3,
                t.per_contact_iteration()
            ));
            if best[k].is_none_or(|b| t.total < b.total) {
                best[k] = Some(t);
            }
            worlds[k] = Some(world);
        }
    }
    let agree = match (&worlds[1], &worlds[2]) {
        (Some(a), Some(b)) => a.positions() == b.positions() && a.velocities() == b.velocities(),
        _ => false,
    };
    Ok(NdemResult {
        n,
        steps,
        repeats,
        times: CONFIGS
            .iter()
            .zip(best)
            .map(|(c, t)| (*c, t.unwrap_or_default()))
            .collect(),
        threads_agree: agree,
    })
}

/// Summary rows and the report's table.
pub(crate) fn summarise(results: &[NdemResult]) -> (Vec<serde_json::Value>, String) {
    let mut rows = Vec::new();
    let mut table = String::from(
        "| N | contacts | configuration | step [ms] | detection [ms] | assembly [ms] | impact [ms] | continuous [ms] | ns per contact-iteration | speed-up of the step over pgs, 1 thread |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in results {
        let base = r.times[0].1.total;
        for (c, t) in &r.times {
            rows.push(json!({
                "particles": r.n,
                "configuration": c.label,
                "steps": r.steps,
                "repeats": r.repeats,
                "contacts": t.contacts,
                "step_s": t.total,
                "detection_s": t.detection,
                "assembly_s": t.assembly,
                "impact_s": t.impact,
                "continuous_s": t.continuous,
                "continuous_ns_per_contact_iteration": t.per_contact_iteration(),
                "speed_up_over_pgs_one_thread": base / t.total,
                "coloured_one_and_two_threads_bit_identical": r.threads_agree,
            }));
            let _ = writeln!(
                table,
                "| {} | {:.0} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} |",
                r.n,
                t.contacts,
                c.label,
                t.total * 1e3,
                t.detection * 1e3,
                t.assembly * 1e3,
                t.impact * 1e3,
                t.continuous * 1e3,
                t.per_contact_iteration(),
                base / t.total
            );
        }
        let _ = writeln!(
            table,
            "| {} | | coloured on 1 and 2 threads: {} | | | | | | | |",
            r.n,
            if r.threads_agree {
                "bit-identical worlds"
            } else {
                "WORLDS DIFFER"
            }
        );
    }
    (rows, table)
}

//! Shared by the examples that time PGS on a settled bed (`body_order`,
//! `colour_blocks`, `order_pairs`, `solve_parts`, `stage_vs_solve`): the
//! bed settled by the stepper or read from a checkpoint, and the timing of
//! one solve. Included with `#[path]`; not an example of its own.
// each example uses part of it
#![allow(dead_code)]

use ndem_solve::{ContactProblem, PgsSettings, ProjectedGaussSeidel, Solver, Stopping};
use std::time::Instant;

/// The built-in `packing` bed of `n` spheres stepped `steps` times with
/// `sweeps` PGS sweeps per step, and the stepper's last continuous problem.
pub fn settled_packing(
    n: usize,
    steps: usize,
    sweeps: usize,
) -> (ndem_scenes::Scene, ContactProblem) {
    let mut scene = ndem_scenes::builders::packing(n).expect("a packing");
    scene.iterations = sweeps;
    let mut stepper = scene.stepper().expect("a stepper");
    for step in 0..steps {
        stepper.step(&mut scene.world).expect("a step");
        if step % 20 == 0 {
            eprintln!("settling: step {step}/{steps}");
        }
    }
    let (problem, _) = stepper.last_problem().expect("a problem");
    let problem = problem.clone();
    (scene, problem)
}

/// Wall time of one solve from `λ = 0`, `v = v*`, in ns per
/// contact-iteration for a solver stopped after `sweeps` sweeps.
pub fn ns_per_contact_iteration(
    pgs: &mut ProjectedGaussSeidel,
    problem: &ContactProblem,
    sweeps: usize,
) -> f64 {
    let (mut lambda, mut velocity) = problem.cold_start();
    let start = Instant::now();
    pgs.solve(problem, &mut lambda, &mut velocity)
        .expect("a valid problem");
    start.elapsed().as_secs_f64() * 1e9 / (problem.contacts().len() * sweeps) as f64
}

/// The bed size `N` and settling steps `STEPS` from the command line
/// (defaults 30 000 and 200).
pub fn bed_arguments() -> (usize, usize) {
    let mut args = std::env::args().skip(1);
    let n = args.next().map_or(30_000, |s| s.parse().expect("N"));
    let steps = args.next().map_or(200, |s| s.parse().expect("STEPS"));
    (n, steps)
}

/// The scene and stepper of the checkpoint at `path` (written by `ndem run
/// --checkpoint-every`).
pub fn restore_checkpoint(path: &str) -> (ndem_scenes::Scene, ndem_step::Stepper) {
    let text = std::fs::read_to_string(path).expect("a readable checkpoint");
    let checkpoint = ndem::checkpoint::Checkpoint::from_json(&text).expect("a checkpoint");
    checkpoint.restore().expect("a restorable checkpoint")
}

/// The bed named on the command line and its last continuous problem:
/// `N STEPS` settles the built-in `packing` bed ([`settled_packing`],
/// `sweeps` per step); a first argument ending in `.json` is a checkpoint
/// of `ndem run --checkpoint-every` (for instance the bed that `cargo
/// xtask peers` settles), stepped `STEPS` times (default 1) with the
/// checkpoint's own stepper settings. Also returns a label for the bed.
pub fn bed_from_arguments(sweeps: usize) -> (String, ContactProblem) {
    let first = std::env::args().nth(1).unwrap_or_default();
    if !first.ends_with(".json") {
        let (n, steps) = bed_arguments();
        let (_, problem) = settled_packing(n, steps, sweeps);
        return (
            format!("packing of {n} spheres after {steps} steps"),
            problem,
        );
    }
    let steps = std::env::args()
        .nth(2)
        .map_or(1, |s| s.parse().expect("STEPS"));
    let (mut scene, mut stepper) = restore_checkpoint(&first);
    for _ in 0..steps.max(1) {
        stepper.step(&mut scene.world).expect("a step");
    }
    let (problem, _) = stepper.last_problem().expect("a problem");
    let label = format!(
        "checkpoint {first} ({} bodies) after {} steps",
        scene.world.len(),
        steps.max(1)
    );
    (label, problem.clone())
}

/// `pgs-coloured` stopped after `sweeps` sweeps on `threads` threads with
/// `colour_blocks` blocks, split on the threads at any size (the solver's
/// default sweeps problems below `PgsSettings::parallel_min_contacts` on
/// one thread).
pub fn coloured_pgs(sweeps: usize, threads: usize, colour_blocks: usize) -> ProjectedGaussSeidel {
    ProjectedGaussSeidel::new(PgsSettings {
        colour_blocks,
        parallel_min_contacts: 0,
        ..PgsSettings::coloured(Stopping::iterations(sweeps), threads)
    })
    .expect("valid settings")
}

/// The host's load averages (1, 5, 15 min), printed beside the timings.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

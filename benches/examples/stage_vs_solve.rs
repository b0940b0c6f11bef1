//! What the stepper's continuous stage costs beside a solve of its own
//! problem, in one process.
//!
//! `cargo run --release -p ndem-benches --example stage_vs_solve --
//! CHECKPOINT [THREADS] [STEPS]` restores a checkpoint (for instance the
//! 10⁵ bed that `cargo xtask peers` settles, written by `ndem run
//! --checkpoint-every`), and for each of `STEPS` steps (default 8) takes
//! the step's continuous stage (the warm start and the solve, `t_continuous`)
//! and then times two `pgs-coloured` solves of a copy of the same problem
//! on `THREADS` threads (default 1), 25 sweeps each: from `λ = 0` (cold)
//! and from `λ₀ = 0.85 λ` of the step's own solution with `v₀ = v* +
//! M⁻¹Gᵀλ₀` (warm, as the history warm start of the paper's eq. 7-8
//! gives it on a bed whose contacts persist). All three in ns per
//! contact-iteration, step by step, then their minima and the load.
//!
//! A stage that costs more than the warm solve by more than its warm start
//! (about 2 ns per contact-iteration at 10⁵ on one thread) loses time to
//! the stepper; the peers suite reports the stage's mean over its steps,
//! and on a shared host single steps swing by 20 % (`docs/performance.md`,
//! "How to measure").

#[path = "common/settled.rs"]
mod settled;

use ndem_solve::{ContactProblem, NoObserver, Solver, StartVelocity};
use settled::{coloured_pgs, load_average, restore_checkpoint};
use std::time::Instant;

const SWEEPS: usize = 25;

/// One standalone solve of `problem` from `λ₀ = beta · solution`
/// (`beta = 0`: cold), in ns per contact-iteration.
fn solve_from_fraction(
    pgs: &mut ndem_solve::ProjectedGaussSeidel,
    problem: &ContactProblem,
    solution: &[f64],
    beta: f64,
) -> f64 {
    let mut lambda: Vec<f64> = solution.iter().map(|l| beta * l).collect();
    let mut velocity = problem.free_velocity().to_vec();
    problem
        .velocity_from(&lambda, &mut velocity)
        .expect("sizes of the problem");
    let start = Instant::now();
    pgs.solve_from(
        problem,
        &mut lambda,
        &mut velocity,
        StartVelocity::Formed,
        &mut NoObserver,
    )
    .expect("a valid problem");
    start.elapsed().as_secs_f64() * 1e9 / (problem.contacts().len() * SWEEPS) as f64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("CHECKPOINT: a checkpoint .json");
    let threads: usize = args.next().map_or(1, |s| s.parse().expect("THREADS"));
    let steps: usize = args.next().map_or(8, |s| s.parse().expect("STEPS"));
    let (mut scene, mut stepper) = restore_checkpoint(&path);
    if scene.iterations != SWEEPS {
        eprintln!(
            "note: the checkpoint's stepper sweeps {} times per step, the solves here {SWEEPS}",
            scene.iterations
        );
    }
    let mut pgs = coloured_pgs(
        SWEEPS,
        threads,
        ndem_solve::PgsSettings::default().colour_blocks,
    );
    println!(
        "{path}: {} bodies, solves on {threads} thread(s), load {}",
        scene.world.len(),
        load_average()
    );
    let mut minima = [f64::INFINITY; 3];
    for step in 0..steps {
        let stats = stepper.step(&mut scene.world).expect("a step");
        let (problem, solution) = stepper.last_problem().expect("a problem");
        let (problem, solution) = (problem.clone(), solution.to_vec());
        let stage =
            stats.times.continuous.as_secs_f64() * 1e9 / (problem.contacts().len() * SWEEPS) as f64;
        let cold = solve_from_fraction(&mut pgs, &problem, &solution, 0.0);
        let warm = solve_from_fraction(&mut pgs, &problem, &solution, 0.85);
        for (m, x) in minima.iter_mut().zip([stage, cold, warm]) {
            *m = m.min(x);
        }
        println!(
            "step {step}: {} contacts, stage {stage:.1}, cold {cold:.1}, warm {warm:.1}",
            problem.contacts().len()
        );
    }
    println!(
        "minima: stage {:.1}, cold {:.1}, warm {:.1} ns per contact-iteration; load {}",
        minima[0],
        minima[1],
        minima[2],
        load_average()
    );
}

//! Where a PGS solve's time goes: its sweeps and its fixed cost.
//!
//! `cargo run --release -p ndem-benches --example solve_parts -- [N] [STEPS]`
//! settles the built-in `packing` bed of `N` spheres (default 30 000) for
//! `STEPS` steps (default 200), takes the stepper's last continuous problem
//! (or, with a checkpoint `.json` as first argument, the checkpoint's bed
//! stepped `STEPS` times, default 1: `common/settled.rs`)
//! and times `pgs-coloured` solves of it stopped after 1 and after 25
//! sweeps, on one and on two threads, interleaved, 7 repeats. The cost of
//! a sweep is `(t₂₅ − t₁)/24`; what a solve costs besides its sweeps
//! (preparation, the initial and final residual statistics) is
//! `t₁ − (t₂₅ − t₁)/24`. Prints both per contact, the minimum of the
//! repeats, and the load average (`docs/performance.md`, "How to measure").
//!
//! Then the residual statistics that open and close every solve
//! (`ResidualEvaluator::stats`), on one and on two threads, with
//! `v = v* + M⁻¹Gᵀλ` formed by the evaluator and with `v` given (the
//! residuals alone): the difference is what forming `v` costs on each
//! thread count.

#[path = "common/settled.rs"]
mod settled;

use ndem_solve::{ContactProblem, ProjectedGaussSeidel, ResidualEvaluator, Solver, Stopping};
use settled::{bed_from_arguments, coloured_pgs, load_average, ns_per_contact_iteration};
use std::time::Instant;

const REPEATS: usize = 7;
const CASES: [(usize, usize); 4] = [(1, 1), (25, 1), (1, 2), (25, 2)];

fn main() {
    let (bed, problem) = bed_from_arguments(25);
    let mut solvers: Vec<_> = CASES
        .iter()
        .map(|&(sweeps, threads)| {
            coloured_pgs(
                sweeps,
                threads,
                ndem_solve::PgsSettings::default().colour_blocks,
            )
        })
        .collect();
    for (s, &(sweeps, _)) in solvers.iter_mut().zip(&CASES) {
        ns_per_contact_iteration(s, &problem, sweeps);
    }
    println!(
        "{bed}: {} contacts, load {}",
        problem.contacts().len(),
        load_average()
    );
    // ns per contact for the whole solve
    let mut best = [f64::INFINITY; CASES.len()];
    for repeat in 0..REPEATS {
        let mut line = format!("repeat {repeat}:");
        for (k, (s, &(sweeps, threads))) in solvers.iter_mut().zip(&CASES).enumerate() {
            let per_contact = ns_per_contact_iteration(s, &problem, sweeps) * sweeps as f64;
            best[k] = best[k].min(per_contact);
            line += &format!(" {sweeps}sw/{threads}t {per_contact:.0}");
        }
        println!("{line}");
    }
    for threads in [1, 2] {
        let k = if threads == 1 { 0 } else { 2 };
        let (one, many) = (best[k], best[k + 1]);
        let sweep = (many - one) / 24.0;
        println!(
            "{threads} thread(s): solve {many:.0} ns per contact, sweep {sweep:.1}, fixed {:.0} ({:.1} sweeps)",
            one - sweep,
            (one - sweep) / sweep
        );
    }
    println!(
        "two threads: solve {:.2}x, sweeps {:.2}x, fixed {:.2}x; load {}",
        best[1] / best[3],
        (best[1] - best[0]) / (best[3] - best[2]),
        (best[0] - (best[1] - best[0]) / 24.0) / (best[2] - (best[3] - best[2]) / 24.0),
        load_average()
    );
    statistics(&problem);
}

/// ns per contact of `ResidualEvaluator::stats` on one and two threads,
/// with `v` formed and given, interleaved, minimum of the repeats.
fn statistics(problem: &ContactProblem) {
    let mut pgs =
        ProjectedGaussSeidel::with_stopping(Stopping::iterations(25)).expect("valid settings");
    let (mut lambda, mut velocity) = problem.cold_start();
    pgs.solve(problem, &mut lambda, &mut velocity)
        .expect("a valid problem");
    let mut evaluators: Vec<_> = [1, 2]
        .iter()
        .map(|&t| {
            let mut e = ResidualEvaluator::new();
            e.set_threads(t);
            e
        })
        .collect();
    let per_contact = 1e9 / problem.contacts().len() as f64;
    // [threads 1 formed, threads 1 given, threads 2 formed, threads 2 given]
    let mut best = [f64::INFINITY; 4];
    for _ in 0..=REPEATS {
        for (k, e) in evaluators.iter_mut().enumerate() {
            for (g, given) in [None, Some(velocity.as_slice())].into_iter().enumerate() {
                let start = Instant::now();
                std::hint::black_box(e.stats(problem, &lambda, given));
                let t = start.elapsed().as_secs_f64() * per_contact;
                best[2 * k + g] = best[2 * k + g].min(t);
            }
        }
    }
    println!(
        "residual statistics, ns per contact: 1 thread {:.0} (v formed) {:.0} (v given); 2 threads {:.0} {:.0}; forming v: {:.0} on 1 thread, {:.0} on 2; load {}",
        best[0],
        best[1],
        best[2],
        best[3],
        best[0] - best[1],
        best[2] - best[3],
        load_average()
    );
}

//! What a step pays in thread starts, and what a pool of persistent
//! workers would pay instead.
//!
//! `cargo run --release -p ndem-benches --example thread_starts -- [N] [THREADS]`
//!
//! 1. The cost of one pass of `ndem_par::blocks::map_parts` with P = 2, 4,
//!    8 and 16 parts of no work (each pass starts P − 1 scoped threads),
//!    beside the same parts on a rayon pool of P workers, each pass after
//!    a pause of 200 µs (the workers idle between passes, as between the
//!    passes of a step): the fastest of 5 rounds of 200 passes each, in
//!    microseconds per pass. On a host with fewer cores than P both are
//!    oversubscribed; the starts are made one after the other by the
//!    calling thread either way.
//! 2. The passes a step runs in parts: `builders::box_packing` of `N`
//!    spheres (default 20 000) falling into its box, `pgs-coloured` with
//!    25 sweeps on `THREADS` threads (default 2), 20 steps after 10 of
//!    lead-in; per step, the passes that started threads and the threads
//!    they started (`ndem_par::blocks::thread_starts`). The coloured
//!    sweeps start theirs once per solve besides (two solves per step
//!    with an impact stage), which this does not count.
//!
//! `docs/performance.md`, "Thread scaling", multiplies the two.

use ndem_par::blocks::{map_parts, thread_starts};
use ndem_scenes::{SolverChoice, builders};
use rayon::prelude::*;
use std::time::{Duration, Instant};

const ROUNDS: usize = 5;
const PASSES: usize = 200;
const PAUSE: Duration = Duration::from_micros(200);

/// The fastest round's mean time of `pass` [µs], each pass after `PAUSE`.
fn per_pass(mut pass: impl FnMut()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..ROUNDS {
        let mut total = 0.0;
        for _ in 0..PASSES {
            std::thread::sleep(PAUSE);
            let start = Instant::now();
            pass();
            total += start.elapsed().as_secs_f64();
        }
        best = best.min(total * 1e6 / PASSES as f64);
    }
    best
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(20_000, |s| s.parse().expect("N"));
    let threads: usize = args.next().map_or(2, |s| s.parse().expect("THREADS"));
    println!("parts | scoped threads [µs per pass] | rayon pool [µs per pass]");
    for parts in [2usize, 4, 8, 16] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(parts)
            .build()
            .expect("a pool");
        let scoped = per_pass(|| {
            std::hint::black_box(map_parts(0..parts, |k| k * 2));
        });
        let pooled = per_pass(|| {
            let out: Vec<usize> = pool.install(|| {
                (0..parts)
                    .into_par_iter()
                    .with_max_len(1)
                    .map(|k| k * 2)
                    .collect()
            });
            std::hint::black_box(out);
        });
        println!("{parts} | {scoped:.1} | {pooled:.1}");
    }
    let side = ((n as f64 / 16.0).sqrt().ceil() + 1.2) * 2.2 * 0.0065;
    let mut scene = builders::box_packing(n, 0.005, 0.0065, side, 11).expect("a bed");
    scene.solver = SolverChoice::PgsColoured;
    scene.iterations = 25;
    scene.threads = threads;
    let mut stepper = scene.stepper().expect("a stepper");
    let (lead_in, measured) = (10, 20);
    for _ in 0..lead_in {
        scene.step(&mut stepper).expect("a step");
    }
    let before = thread_starts();
    let mut impacts = 0;
    for _ in 0..measured {
        let stats = scene.step(&mut stepper).expect("a step");
        impacts += usize::from(stats.impacts > 0);
    }
    let after = thread_starts();
    let per_step = |x: u64| x as f64 / measured as f64;
    println!(
        "{n} spheres on {threads} threads, {measured} steps ({impacts} with an impact solve): \
         {:.1} passes in parts and {:.1} thread starts per step",
        per_step(after.passes - before.passes),
        per_step(after.threads - before.threads)
    );
}

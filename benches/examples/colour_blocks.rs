//! What the block count of the coloured order costs and gains.
//!
//! `cargo run --release -p ndem-benches --example colour_blocks -- [N] [STEPS]`
//! settles the built-in `packing` bed of `N` spheres (default 30 000) for
//! `STEPS` steps (default 200, 25 sweeps each), takes the stepper's last
//! continuous problem and times 25-sweep `pgs-coloured` solves of it with
//! `PgsSettings::colour_blocks` 32 (the default) and 64, on one and on two
//! threads, interleaved, 7 repeats.
//!
//! More blocks split each colour more evenly between two threads (a colour
//! of 3 blocks gives one thread 2 of them) but visit the contacts in a
//! less local order. Prints ns per contact-iteration of each repeat, the
//! minimum of each case, the two-thread speed-up of each block count and
//! the load average (`docs/performance.md`, "Session 17").

#[path = "common/settled.rs"]
mod settled;

use settled::{
    bed_arguments, coloured_pgs, load_average, ns_per_contact_iteration, settled_packing,
};

const SWEEPS: usize = 25;
const REPEATS: usize = 7;
const CASES: [(usize, usize); 4] = [(32, 1), (64, 1), (32, 2), (64, 2)];

fn main() {
    let (n, steps) = bed_arguments();
    let (_, problem) = settled_packing(n, steps, SWEEPS);
    let mut solvers: Vec<_> = CASES
        .iter()
        .map(|&(blocks, threads)| coloured_pgs(SWEEPS, threads, blocks))
        .collect();
    // warm-up: the solvers' scratch grows to the problem once
    for s in &mut solvers {
        ns_per_contact_iteration(s, &problem, SWEEPS);
    }
    println!(
        "{n} spheres, {} contacts, {SWEEPS} sweeps per solve, load {}",
        problem.contacts().len(),
        load_average()
    );
    let mut best = [f64::INFINITY; CASES.len()];
    for repeat in 0..REPEATS {
        let mut line = format!("repeat {repeat}:");
        for (k, s) in solvers.iter_mut().enumerate() {
            let t = ns_per_contact_iteration(s, &problem, SWEEPS);
            best[k] = best[k].min(t);
            let (blocks, threads) = CASES[k];
            line += &format!(" {blocks} blocks/{threads} thr {t:.1}");
        }
        println!("{line} ns per contact-iteration");
    }
    for (k, &(blocks, threads)) in CASES.iter().enumerate() {
        println!(
            "minimum: {blocks} blocks, {threads} thread(s): {:.1} ns per contact-iteration",
            best[k]
        );
    }
    println!(
        "two threads over one: 32 blocks {:.2}x, 64 blocks {:.2}x; load {}",
        best[0] / best[2],
        best[1] / best[3],
        load_average()
    );
}

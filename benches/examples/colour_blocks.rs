//! What the block count of the coloured order costs and gains.
//!
//! `cargo run --release -p ndem-benches --example colour_blocks -- [N]
//! [STEPS] [BLOCKS] [REPEATS]` settles the built-in `packing` bed of `N`
//! spheres (default 30 000) for `STEPS` steps (default 200, 25 sweeps
//! each), takes the stepper's last continuous problem and times 25-sweep
//! `pgs-coloured` solves of it with each `PgsSettings::colour_blocks` of
//! the comma-separated list `BLOCKS` (default `32,256`; 256 is the default
//! setting), on one and on two threads, all cases interleaved, `REPEATS`
//! repeats (default 7).
//!
//! More blocks split each colour more evenly between two threads and give
//! each thread's two lanes more blocks to pair, but visit the contacts in
//! a less local order. The blocks depend only on the contact count and
//! the block count, so a count below the one the setting would give
//! reproduces a larger minimum block size's colouring (21 blocks on the
//! 2.1·10⁴ contacts of a settled 10⁴ bed is what 1024 contacts per block
//! gave). Prints ns per contact-iteration of each repeat, then per case
//! the minimum and the median, per block count the two-thread speed-up
//! (median of the repeats' ratios, and the ratio of the minima), and the
//! load average (`docs/performance.md`, "NDEM step").

#[path = "common/settled.rs"]
mod settled;

use settled::{
    bed_arguments, coloured_pgs, load_average, ns_per_contact_iteration, settled_packing,
};

const SWEEPS: usize = 25;

/// The block counts and repeats from the command line, after `N` and
/// `STEPS`.
fn case_arguments() -> (Vec<usize>, usize) {
    let mut args = std::env::args().skip(3);
    let blocks = args.next().map_or_else(
        || vec![32, 256],
        |s| {
            s.split(',')
                .map(|b| {
                    b.parse()
                        .expect("BLOCKS: block counts in 1..=256, comma-separated")
                })
                .collect()
        },
    );
    let repeats = args.next().map_or(7, |s| s.parse().expect("REPEATS"));
    (blocks, repeats)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let k = values.len() / 2;
    if values.len() % 2 == 1 {
        values[k]
    } else {
        0.5 * (values[k - 1] + values[k])
    }
}

fn main() {
    let (n, steps) = bed_arguments();
    let (blocks, repeats) = case_arguments();
    let cases: Vec<(usize, usize)> = blocks.iter().flat_map(|&b| [(b, 1), (b, 2)]).collect();
    let (_, problem) = settled_packing(n, steps, SWEEPS);
    let mut solvers: Vec<_> = cases
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
    let mut times = vec![Vec::with_capacity(repeats); cases.len()];
    for repeat in 0..repeats {
        let mut line = format!("repeat {repeat}:");
        for (k, s) in solvers.iter_mut().enumerate() {
            let t = ns_per_contact_iteration(s, &problem, SWEEPS);
            times[k].push(t);
            let (blocks, threads) = cases[k];
            line += &format!(" {blocks} blocks/{threads} thr {t:.1}");
        }
        println!("{line} ns per contact-iteration");
    }
    for (k, &(blocks, threads)) in cases.iter().enumerate() {
        let least = times[k].iter().copied().fold(f64::INFINITY, f64::min);
        println!(
            "{blocks} blocks, {threads} thread(s): minimum {least:.1}, median {:.1} ns per contact-iteration",
            median(&mut times[k].clone())
        );
    }
    for (k, &b) in blocks.iter().enumerate() {
        let (one, two) = (&times[2 * k], &times[2 * k + 1]);
        let mut ratios: Vec<f64> = one.iter().zip(two).map(|(a, b)| a / b).collect();
        let least = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        println!(
            "{b} blocks: two threads over one {:.2}x (median of the repeats), {:.2}x (minima)",
            median(&mut ratios),
            least(one) / least(two)
        );
    }
    println!("load {}", load_average());
}

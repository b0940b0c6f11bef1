//! What a PGS sweep costs per contact on an aggregate's contacts against
//! a sphere packing's.
//!
//! `cargo run --release -p ndem-benches --example aggregate_contacts --
//! [CELLS] [SWEEPS] [spheres|aggregate]` builds the testkit's lattice packing of CELLS × CELLS
//! × 6 spheres (default 16) on a floor twice: as it is, and with all six
//! layers merged into one rigid body (`PackingSpec::merged_layers`), whose
//! CELLS² floor contacts then take PGS's row-wise kernel for coupled rows
//! (an anisotropic body, lever arms off the normal). Both are solved with
//! SWEEPS sweeps (default 300; six rows, box friction) from a cold start,
//! five times; it prints the least time per contact and sweep of each
//! (of one, when the third argument names it). Under `valgrind
//! --tool=callgrind target/release/examples/aggregate_contacts 16 300
//! aggregate` the instruction count per contact and sweep is the total
//! over the 5 × 300 × 256 contact visits (`docs/reduction.md`, "On a
//! settled random packing").

use ndem_solve::{ContactRows, FrictionSet, ProjectedGaussSeidel, Solver, Stopping};
use ndem_testkit::generate::{PackingSpec, sphere_packing};

/// The least time of five solves per contact and sweep \[ns\], and the
/// contact count.
fn per_contact_sweep(cells: usize, merged_layers: usize, sweeps: usize) -> (f64, usize) {
    let problem = sphere_packing(&PackingSpec {
        cells: [cells, cells, 6],
        merged_layers,
        rows: ContactRows::NormalFrictionRolling,
        friction_set: FrictionSet::Box,
        ..PackingSpec::default()
    })
    .expect("a valid spec");
    let n = problem.contacts().len();
    let least = (0..5)
        .map(|_| {
            let mut pgs = ProjectedGaussSeidel::with_stopping(Stopping::iterations(sweeps))
                .expect("valid settings");
            let (mut lambda, mut velocity) = problem.cold_start();
            let start = std::time::Instant::now();
            let report = pgs
                .solve(&problem, &mut lambda, &mut velocity)
                .expect("a solvable problem");
            start.elapsed().as_secs_f64() * 1e9 / (n * report.iterations) as f64
        })
        .fold(f64::INFINITY, f64::min);
    (least, n)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let cells: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(16);
    let sweeps: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(300);
    let only = args.next();
    if only.as_deref() != Some("aggregate") {
        let (spheres, n) = per_contact_sweep(cells, 0, sweeps);
        println!("spheres: {n} contacts, {spheres:.1} ns per contact and sweep");
    }
    if only.as_deref() != Some("spheres") {
        let (merged, n) = per_contact_sweep(cells, 6, sweeps);
        println!("one aggregate: {n} floor contacts, {merged:.1} ns per contact and sweep");
    }
}

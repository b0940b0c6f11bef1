//! Detection passes over the bench `collide`'s Morton-numbered packing, for
//! instruction counts and quick timings outside criterion.
//!
//! `cargo run --release -p ndem-benches --example collide_passes -- [PASSES] [NX NY NZ]`
//! builds the bench's packing (default 50 × 50 × 40 = 10⁵ spheres on a
//! floor), numbers it along the Morton curve as `collide/serial-morton`
//! does, runs one pass to warm up and then `PASSES` serial passes (default
//! 10), and prints each pass's time in ns per particle, the minimum, and
//! the contacts found. Under callgrind, count the passes alone with
//! `valgrind --tool=callgrind --toggle-collect='*CollisionWorld::detect*'`
//! (`docs/performance.md`, "Collision detection").

#[path = "../benches/common/lattice.rs"]
mod lattice;

use lattice::{morton_numbered, packing};
use ndem_collide::{CollisionSettings, CollisionWorld, ContactSet};
use std::time::Instant;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("arguments are counts"))
        .collect();
    let passes = args.first().copied().unwrap_or(10);
    let dims = match args.get(1..4) {
        Some(&[x, y, z]) => [x, y, z],
        _ => [50, 50, 40],
    };
    let bodies = morton_numbered(&packing(dims, 7), 0.005);
    let n = bodies.shapes.len() - 1;
    let mut world = CollisionWorld::new(CollisionSettings {
        margin: 1e-4,
        ..Default::default()
    })
    .expect("the bench's settings are valid");
    let mut set = ContactSet::new();
    world
        .detect(&bodies.view(), &mut set)
        .expect("the packing is valid");
    let mut best = f64::INFINITY;
    for pass in 0..passes {
        let start = Instant::now();
        world
            .detect(&bodies.view(), &mut set)
            .expect("the packing is valid");
        let ns = start.elapsed().as_secs_f64() * 1e9 / n as f64;
        best = best.min(ns);
        println!("pass {pass}: {ns:.1} ns per particle");
    }
    println!(
        "{n} spheres, {} contacts: best {best:.1} ns per particle",
        set.len()
    );
}

//! Detection passes over the bench `collide`'s Morton-numbered packing, for
//! instruction counts and quick timings outside criterion.
//!
//! `cargo run --release -p ndem-benches --example collide_passes -- [PASSES] [NX NY NZ] [parallel]`
//! builds the bench's packing (default 50 × 50 × 40 = 10⁵ spheres on a
//! floor), numbers it along the Morton curve as `collide/serial-morton`
//! does, runs one pass to warm up and then `PASSES` serial passes (default
//! 10; with `parallel`, `detect_parallel`'s passes), and prints each pass's
//! time in ns per particle, the minimum, the contacts found, and the
//! process's processor time per pass (all threads, from
//! `/proc/self/stat`) beside its wall time: on two threads their ratio
//! says how busy the second thread was. Under callgrind, count the passes alone with
//! `valgrind --tool=callgrind --toggle-collect='*CollisionWorld::detect*'`
//! (`docs/performance.md`, "Collision detection").

#[path = "../benches/common/lattice.rs"]
mod lattice;

use lattice::{morton_numbered, packing};
use ndem_collide::{CollisionSettings, CollisionWorld, ContactSet};
use std::time::Instant;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let parallel = args.last().is_some_and(|a| a == "parallel");
    if parallel {
        args.pop();
    }
    let args: Vec<usize> = args
        .iter()
        .map(|a| a.parse().expect("arguments are counts, then `parallel`"))
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
    let (wall, cpu) = (Instant::now(), processor_seconds());
    for pass in 0..passes {
        let start = Instant::now();
        let found = if parallel {
            world.detect_parallel(&bodies.view(), &mut set)
        } else {
            world.detect(&bodies.view(), &mut set)
        };
        found.expect("the packing is valid");
        let ns = start.elapsed().as_secs_f64() * 1e9 / n as f64;
        best = best.min(ns);
        println!("pass {pass}: {ns:.1} ns per particle");
    }
    let (wall, cpu) = (wall.elapsed().as_secs_f64(), processor_seconds() - cpu);
    println!(
        "{n} spheres, {} contacts: best {best:.1} ns per particle",
        set.len()
    );
    if passes > 0 {
        let per = |s: f64| s * 1e3 / passes as f64;
        println!(
            "per pass: wall {:.2} ms, processor {:.2} ms (all threads; {:.2}× the wall time)",
            per(wall),
            per(cpu),
            cpu / wall
        );
    }
}

/// The process's user and system time so far \[s\], from
/// `/proc/self/stat` (which keeps the time of ended threads; 0 where it
/// cannot be read).
fn processor_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // the fields after the command's closing parenthesis; utime and stime
    // are the 14th and 15th fields of the line, in clock ticks (100 per
    // second on Linux)
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |k: usize| {
        fields
            .get(k)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

//! What the body numbering costs the PGS sweep on a settled bed.
//!
//! `cargo run --release -p ndem-benches --example body_order -- [N] [STEPS]`
//! settles the built-in `packing` bed of `N` spheres (default 30 000) for
//! `STEPS` steps (default 260, 25 sweeps each), takes the stepper's last
//! continuous problem and times 25-sweep PGS solves of it, interleaved,
//! in three numberings of the same bodies, contacts in body order as the
//! stepper lists them:
//!
//! - `own`: the bed's numbering (`box_packing`'s Morton order of the
//!   lattice sites the spheres fell from);
//! - `morton`: renumbered along the Morton curve of the settled positions
//!   (cells of one diameter);
//! - `shuffled`: renumbered at random (a bed whose numbering lost all
//!   locality, as a long flow leaves it).
//!
//! Prints ns per contact-iteration of each repeat and the minimum
//! (`docs/performance.md`, "NDEM step"). An example, not a criterion
//! bench: settling a bed of 10⁵ spheres takes minutes.

#[path = "common/settled.rs"]
mod settled;

use ndem_math::locality::morton_order;
use ndem_solve::{ContactProblem, ProjectedGaussSeidel, Stopping};
use settled::{ns_per_contact_iteration, settled_packing};

const SWEEPS: usize = 25;
const REPEATS: usize = 7;

/// `problem` with body `i` renumbered `new_index[i]`, its contacts sorted
/// by their bodies' new numbers (smaller first) as the stepper's key order
/// would list them.
fn renumbered(problem: &ContactProblem, new_index: &[u32]) -> ContactProblem {
    let n = problem.body_count();
    let given = problem.inverse_mass().to_vec();
    let mut inverse_mass = vec![given[0]; n];
    let mut free_velocity = vec![problem.free_velocity()[0]; n];
    for (i, &k) in new_index.iter().enumerate() {
        inverse_mass[k as usize] = given[i];
        free_velocity[k as usize] = problem.free_velocity()[i];
    }
    let mut out = ContactProblem::new(
        inverse_mass,
        free_velocity,
        problem.contact_rows(),
        problem.friction_set(),
        problem.dt(),
    )
    .expect("the same bodies");
    let mut contacts: Vec<_> = problem
        .contacts()
        .iter()
        .map(|mut c| {
            c.bodies = c.bodies.map(|b| new_index[b as usize]);
            c
        })
        .collect();
    contacts.sort_by_key(|c| {
        let [a, b] = c.bodies;
        (a.min(b), a.max(b))
    });
    for c in contacts {
        out.push_contact(c).expect("a valid contact");
    }
    out
}

/// The numbering that puts the bodies in `order` (static bodies, which
/// come first in the bed, stay first).
fn numbering_of(order: impl Iterator<Item = usize>, statics: usize, n: usize) -> Vec<u32> {
    let mut new_index: Vec<u32> = (0..n as u32).collect();
    for (k, i) in order.enumerate() {
        new_index[i] = (statics + k) as u32;
    }
    new_index
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(30_000, |s| s.parse().expect("N"));
    let steps: usize = args.next().map_or(260, |s| s.parse().expect("STEPS"));
    let (scene, own) = settled_packing(n, steps, SWEEPS);
    let bodies = own.body_count();
    let statics = own
        .inverse_mass()
        .iter()
        .take_while(|m| m.inv_mass == 0.0)
        .count();
    let positions = &scene.world.positions()[statics..];
    let morton = numbering_of(
        morton_order(positions, 0.013)
            .into_iter()
            .map(|i| statics + i),
        statics,
        bodies,
    );
    let mut shuffle: Vec<usize> = (statics..bodies).collect();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..shuffle.len()).rev() {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        shuffle.swap(i, (state >> 33) as usize % (i + 1));
    }
    let shuffled = numbering_of(shuffle.into_iter(), statics, bodies);
    let cases = [
        ("own", own.clone()),
        ("morton", renumbered(&own, &morton)),
        ("shuffled", renumbered(&own, &shuffled)),
    ];
    let new_solver = || {
        ProjectedGaussSeidel::with_stopping(Stopping::iterations(SWEEPS)).expect("valid settings")
    };
    let mut solvers: Vec<_> = cases.iter().map(|_| new_solver()).collect();
    // warm-up: the solvers' scratch grows to the problem once
    for ((_, p), s) in cases.iter().zip(&mut solvers) {
        ns_per_contact_iteration(s, p, SWEEPS);
    }
    println!(
        "{} spheres, {} contacts, {SWEEPS} sweeps per solve",
        n,
        own.contacts().len()
    );
    let mut best = [f64::INFINITY; 3];
    for repeat in 0..REPEATS {
        let mut line = format!("repeat {repeat}:");
        for (k, ((label, p), s)) in cases.iter().zip(&mut solvers).enumerate() {
            let t = ns_per_contact_iteration(s, p, SWEEPS);
            best[k] = best[k].min(t);
            line += &format!(" {label} {t:.1}");
        }
        println!("{line} ns per contact-iteration");
    }
    println!(
        "minimum: own {:.1}, morton {:.1}, shuffled {:.1} ns per contact-iteration",
        best[0], best[1], best[2]
    );
}

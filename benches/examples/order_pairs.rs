//! How many contacts of the problem's order a sweep can visit two at a
//! time.
//!
//! `cargo run --release -p ndem-benches --example order_pairs -- [N]
//! [STEPS]` settles the built-in `packing` bed of `N` spheres (default
//! 30 000) for `STEPS` steps (default 200, 25 sweeps each) and walks the
//! stepper's last continuous problem in its own order as
//! `ndem_solve`'s paired sweep does: a contact is visited together with the
//! first of the next `L` contacts that names no body of it or of the
//! contacts between them. Prints, for look-aheads of 1, 2, 4 and 8, the
//! share of contacts visited in a pair, and the share of consecutive
//! contacts that share their first body or no body at all
//! (`docs/performance.md`, "NDEM step"; the sweep uses 2).

#[path = "common/settled.rs"]
mod settled;

use settled::{bed_arguments, settled_packing};

/// Whether two contacts (their body pairs) name no common body.
fn apart(a: [u32; 2], b: [u32; 2]) -> bool {
    !a.iter().any(|x| b.contains(x))
}

/// The share of `bodies`' contacts visited in a pair when a contact's
/// partner is the first of the next `lookahead` that names no body of it
/// or of the contacts between them.
fn paired_share(bodies: &[[u32; 2]], lookahead: usize) -> f64 {
    let mut waiting: Vec<usize> = Vec::with_capacity(lookahead + 1);
    let mut next = 0;
    let mut paired = 0;
    loop {
        while waiting.len() <= lookahead && next < bodies.len() {
            waiting.push(next);
            next += 1;
        }
        if waiting.is_empty() {
            return paired as f64 / bodies.len() as f64;
        }
        let partner = (1..waiting.len())
            .find(|&k| (0..k).all(|j| apart(bodies[waiting[j]], bodies[waiting[k]])));
        if let Some(k) = partner {
            waiting.remove(k);
            paired += 2;
        }
        waiting.remove(0);
    }
}

fn main() {
    let (n, steps) = bed_arguments();
    let (_, problem) = settled_packing(n, steps, 25);
    let bodies: Vec<[u32; 2]> = problem.contacts().iter().map(|c| c.bodies).collect();
    let pairs = bodies.len().saturating_sub(1).max(1) as f64;
    let consecutive = |f: &dyn Fn([u32; 2], [u32; 2]) -> bool| {
        bodies.windows(2).filter(|w| f(w[0], w[1])).count() as f64 / pairs
    };
    println!(
        "{n} spheres, {} contacts: consecutive contacts sharing their first body {:.3}, sharing no body {:.3}",
        bodies.len(),
        consecutive(&|a, b| a[0] == b[0]),
        consecutive(&apart),
    );
    for lookahead in [1, 2, 4, 8] {
        println!(
            "look-ahead {lookahead}: {:.3} of the contacts visited in a pair",
            paired_share(&bodies, lookahead)
        );
    }
}

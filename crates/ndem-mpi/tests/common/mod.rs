//! Scenes shared by the distributed tests.
#![allow(dead_code)]

use ndem_step::World;

/// `n` spheres falling from a lattice into a box `length` long in x
/// (`ndem_scenes::builders::falling_lattice`).
pub fn bed(n: usize, length: f64) -> World {
    ndem_scenes::builders::falling_lattice(n, length).expect("a valid scene")
}

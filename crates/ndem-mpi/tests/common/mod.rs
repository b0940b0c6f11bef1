//! Scenes shared by the distributed tests.
#![allow(dead_code)]

use ndem_math::{Material, Vec3};
use ndem_step::{BodyId, Joint, MaterialId, World};

/// `n` spheres falling from a lattice into a box `length` long in x
/// (`ndem_scenes::builders::falling_lattice`).
pub fn bed(n: usize, length: f64) -> World {
    ndem_scenes::builders::falling_lattice(n, length).expect("a valid scene")
}

/// Sphere radius of the chain scene \[m\].
const R: f64 = 0.005;

/// Ten free spheres in a row along x on the floor, 15 mm apart, and a
/// chain of nine spheres joined by ball joints above the grooves between
/// them, 2 mm to the side of the grooves' centres (a mirror-symmetric
/// scene has mirror-image solutions, and which one a solve finds depends
/// on its sweep order), 1 mm above contact: it falls onto the row.
pub fn chain_on_a_row() -> World {
    // no rolling resistance: a ball-jointed chain rolling in its grooves
    // with it is a problem PGS does not solve to 1e-10 m/s in 5000 sweeps
    // even on one process
    let material = Material {
        rolling_resistance: 0.0,
        ..Material::default()
    };
    let mut w = World::on_floor(material).unwrap();
    let m = MaterialId::from_index(0);
    let pitch = 0.015;
    w.add_spheres(R, m, (0..10).map(|k| Vec3::new(pitch * k as f64, 0.0, R)))
        .unwrap();
    let half = 0.5 * pitch;
    let rise = ((2.0 * R).powi(2) - half * half).sqrt();
    let z = R + rise + 1e-3;
    let first = w.len();
    let side = 0.002;
    let links = (0..9).map(|k| Vec3::new(half + side + pitch * k as f64, 0.0, z));
    w.add_spheres(R, m, links).unwrap();
    for k in 0..8 {
        let (a, b) = (
            BodyId::from_index(first + k),
            BodyId::from_index(first + k + 1),
        );
        let anchor = Vec3::new(side + pitch * (k + 1) as f64, 0.0, z);
        let ball = Joint::ball(&w, a, b, anchor).unwrap();
        w.add_joint(ball).unwrap();
    }
    w
}

/// Asserts that two worlds hold the same positions and velocities, bit for
/// bit, body by body (`what` names the run in the message).
pub fn assert_same_state(world: &World, reference: &World, what: &str) {
    assert_eq!(world.len(), reference.len(), "{what}: bodies");
    for i in 0..world.len() {
        assert_eq!(
            world.positions()[i],
            reference.positions()[i],
            "{what}: body {i} position"
        );
        assert_eq!(
            world.velocities()[i],
            reference.velocities()[i],
            "{what}: body {i} velocity"
        );
    }
}

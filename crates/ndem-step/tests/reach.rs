//! Stage 1 finds the contacts that the step's impulses close: those of a
//! body at rest struck within the step (its reach grown by its partner's).
//! What gravity alone closes within a step is met at the next step.

use ndem_math::{Material, Vec3, Velocity6};
use ndem_step::*;

const R_SMALL: f64 = 0.002;
const R_LARGE: f64 = 0.004;

/// A small sphere at rest `gap` above the floor; a larger one of 8 times
/// its mass `gap` above it, falling at `speed`. Returns the world and the
/// two spheres.
fn struck(gap: f64, speed: f64) -> (World, BodyId, BodyId) {
    let material = Material {
        youngs_modulus: 1e10,
        ..Material::default()
    };
    let mut w = World::on_floor(material).unwrap();
    let m = MaterialId::from_index(0);
    let small = w
        .add_sphere(R_SMALL, m, Vec3::new(0.0, 0.0, R_SMALL + gap))
        .unwrap();
    let large = w
        .add_sphere(
            R_LARGE,
            m,
            Vec3::new(0.0, 0.0, 2.0 * R_SMALL + gap + gap + R_LARGE),
        )
        .unwrap();
    w.set_velocity(
        large,
        Velocity6::new(Vec3::new(0.0, 0.0, -speed), Vec3::zeros()),
    )
    .unwrap();
    (w, small, large)
}

/// The struck sphere is driven about 2.4 mm down within one 2 ms step.
/// The floor lies beyond its own sweep (zero) and is found only through
/// the reach its partner passes on (`reach_growth`); the solve then holds
/// it at the floor. With the own sweeps (the default) it ends the step
/// 2.36 mm (1.18 of its radius) into the floor, asserted below. Measured
/// overlap with the grown reach 1.5e-11 m after 200 sweeps; bound 10
/// times that.
#[test]
fn a_struck_body_meets_the_floor_it_is_driven_into() {
    let (mut w, small, _) = struck(2e-4, 1.2);
    let settings = StepSettings {
        dt: 2e-3,
        reach_growth: true,
        ..StepSettings::default()
    };
    let mut stepper = Stepper::with_pgs(settings, 200).unwrap();
    stepper.step(&mut w).unwrap();
    let bottom = w.position(small).z - R_SMALL;
    assert!(bottom > -1.5e-10, "overlap {:.3e} m", -bottom);
    // and the floor contact was detected in that step
    let floor_pair = stepper.contacts().as_slice().iter().any(|c| {
        (c.body_a(), c.body_b()) == (small.index(), 0)
            || (c.body_b(), c.body_a()) == (small.index(), 0)
    });
    assert!(floor_pair, "the floor contact was not detected");
    // the own sweeps: the floor contact is met at the next step
    let (mut w, small, _) = struck(2e-4, 1.2);
    let mut stepper = Stepper::with_pgs(
        StepSettings {
            reach_growth: false,
            ..settings
        },
        200,
    )
    .unwrap();
    stepper.step(&mut w).unwrap();
    let overlap = R_SMALL - w.position(small).z;
    assert!((overlap - 2.36e-3).abs() < 1e-5, "overlap {overlap:.4e} m");
}

/// A sphere at rest 10 µm above the floor falls `g Δt² = 245 µm` in a
/// 5 ms step. Sweeps are taken at the velocity the step starts with
/// (`World::sweep_distances`: zero here), so its floor contact is not in
/// that step's problem and it ends the step `g Δt² − 10 µm = 235 µm` into
/// the floor (0.036 of its radius), to be met at the next step: the limit
/// of leaving gravity out of the sweep, bounded by `g Δt²`.
#[test]
fn a_body_at_rest_overlaps_by_at_most_what_gravity_carries_it_in_a_step() {
    let mut w = World::on_floor(Material::default()).unwrap();
    let r = 0.0065;
    let gap = 1e-5;
    let s = w
        .add_sphere(r, MaterialId::from_index(0), Vec3::new(0.0, 0.0, r + gap))
        .unwrap();
    let settings = StepSettings::default();
    let fall = 9.81 * settings.dt * settings.dt;
    let mut stepper = Stepper::with_pgs(settings, 50).unwrap();
    stepper.step(&mut w).unwrap();
    let overlap = r - w.position(s).z;
    assert!(
        (overlap - (fall - gap)).abs() < 1e-15,
        "overlap {overlap:.6e} m"
    );
    // the next step meets the contact and pushes the sphere back out
    stepper.step(&mut w).unwrap();
    assert!(r - w.position(s).z < overlap);
}

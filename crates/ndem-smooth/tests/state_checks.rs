//! The smooth stepper passes over the per-body finiteness check of a step
//! only when the world's state is the one its own last step left finite
//! (`World::state_stamp`). Every other way a non-finite state can reach a
//! step is still refused with the error that names it.

use ndem_collide::Shape;
use ndem_math::{Material, Vec3, Velocity6};
use ndem_smooth::*;
use ndem_step::{BodyDesc, MaterialId, StepError, World};

/// Two spheres resting on a floor.
fn world() -> World {
    let mut w = World::on_floor(Material::default()).unwrap();
    for x in [0.0, 0.05] {
        let sphere = Shape::sphere(0.01).unwrap();
        w.add_body(BodyDesc::dynamic(
            sphere,
            MaterialId::from_index(0),
            Vec3::new(x, 0.0, 0.0099),
        ))
        .unwrap();
    }
    w
}

fn stepper(w: &World) -> SmoothStepper {
    let dt = 0.1 * stepper::critical_time_step(w, &SmoothLaw::Hertz);
    SmoothStepper::new(SmoothSettings::with_dt(dt), w).unwrap()
}

fn refused(result: Result<SmoothStats, SmoothError>, field: &str, body: usize) {
    match result {
        Err(SmoothError::Step(StepError::NonFiniteState { field: f, body: b })) => {
            assert_eq!((f, b), (field, body));
        }
        other => panic!("expected a non-finite {field} of body {body}, got {other:?}"),
    }
}

#[test]
fn a_state_written_between_steps_is_checked() {
    let mut w = world();
    let mut st = stepper(&w);
    for _ in 0..10 {
        st.step(&mut w).unwrap();
    }
    // through the world's mutable state
    let saved = w.clone();
    w.state_mut().0[2].y = f64::NAN;
    refused(st.step(&mut w), "position", 2);
    w = saved.clone();
    let q = &mut w.state_mut().1[1];
    *q = ndem_math::Quat::new_unchecked(nalgebra::Quaternion::new(f64::INFINITY, 0.0, 0.0, 0.0));
    refused(st.step(&mut w), "orientation", 1);
    w = saved.clone();
    w.state_mut().2[2].angular.z = f64::NAN;
    refused(st.step(&mut w), "angular_velocity", 2);
    // the saved copy, never written, is the state the stepper left
    w = saved;
    st.step(&mut w).unwrap();
}

#[test]
fn a_copy_written_after_the_step_is_checked() {
    let mut w = world();
    let mut st = stepper(&w);
    st.step(&mut w).unwrap();
    // a copy stepped on, and the original written after: the original no
    // longer holds the state the stepper left
    let mut copy = w.clone();
    st.step(&mut copy).unwrap();
    w.state_mut().2[1].linear.x = f64::NAN;
    refused(st.step(&mut w), "velocity", 1);
}

#[test]
fn another_world_is_checked() {
    let mut w = world();
    let mut st = stepper(&w);
    st.step(&mut w).unwrap();
    let mut other = world();
    other.state_mut().0[1].x = f64::INFINITY;
    refused(st.step(&mut other), "position", 1);
}

/// A position the step itself overflows to infinity is not trusted: the
/// next step finds it, as it did before the stamp.
#[test]
fn a_position_the_step_overflowed_is_found_by_the_next() {
    let mut w = world();
    let far = BodyDesc::sphere(
        0.01,
        MaterialId::from_index(0),
        Vec3::new(f64::MAX, 0.0, 1.0),
    )
    .unwrap()
    .with_velocity(Velocity6::new(Vec3::new(1e300, 0.0, 0.0), Vec3::zeros()));
    let i = w.add_body(far).unwrap();
    let mut st = stepper(&w);
    st.step(&mut w).unwrap();
    assert_eq!(w.position(i).x, f64::INFINITY);
    refused(st.step(&mut w), "position", i.index());
}

/// The stepper keeps its per-body records while the world's
/// `kinds_stamp` holds; a body whose mass or motion changed between steps
/// is integrated, and its energy counted, with what it is now.
#[test]
fn a_body_changed_between_steps_is_integrated_as_it_is_now() {
    let mut w = World::new(vec![Material::default()], Vec3::zeros()).unwrap();
    let sphere = Shape::sphere(0.01).unwrap();
    let i = w
        .add_body(BodyDesc::dynamic(
            sphere,
            MaterialId::from_index(0),
            Vec3::zeros(),
        ))
        .unwrap();
    let force = Vec3::new(1e-3, 0.0, 0.0);
    w.set_force(i, force, Vec3::zeros()).unwrap();
    let mut st = stepper(&w);
    let dt = 0.1 * stepper::critical_time_step(&w, &SmoothLaw::Hertz);
    let gain = |w: &World, st: &mut SmoothStepper| {
        let mut w2 = w.clone();
        let before = w2.velocity(i).linear.x;
        let stats = st.step(&mut w2).unwrap();
        // the step's kinetic energy, summed with the masses of its records,
        // is the world's, summed with the masses it holds
        assert_eq!(stats.kinetic_energy, w2.kinetic_energy());
        (w2.velocity(i).linear.x - before, w2)
    };
    let m = w.mass_properties()[i.index()].unwrap();
    // the step forms `(F · (1/m)) Δt` and the difference of two velocities:
    // 1.9e-16 relative measured, 1e-15 allowed (a stale mass is off by 2×)
    let (dv, next) = gain(&w, &mut st);
    assert!(
        (dv - force.x / m.mass * dt).abs() <= 1e-15 * dv.abs(),
        "{dv}"
    );
    w = next;
    // twice as heavy: half the gain
    let heavier = ndem_math::MassProperties::new(2.0 * m.mass, m.principal_inertia * 2.0).unwrap();
    let orientation = w.orientation(i);
    w.set_mass_properties(i.index(), heavier, orientation)
        .unwrap();
    let (dv, next) = gain(&w, &mut st);
    assert!(
        (dv - force.x / (2.0 * m.mass) * dt).abs() <= 1e-15 * dv.abs(),
        "{dv}"
    );
    w = next;
    // retired: static, no gain
    w.set_active(i.index(), None).unwrap();
    let (dv, _) = gain(&w, &mut st);
    assert_eq!(dv, 0.0);
}

/// A velocity the step would make non-finite is an error naming the body,
/// and leaves the world as it was, also after steps that formed the other
/// bodies' new velocities (the step's own vector holds entries only for
/// the bodies with mass; a fixed floor comes first).
#[test]
fn a_velocity_the_step_overflows_is_refused_and_leaves_the_world() {
    let mut w = world();
    let i = w
        .add_body(
            BodyDesc::sphere(0.01, MaterialId::from_index(0), Vec3::new(1.0, 0.0, 1.0))
                .unwrap()
                .with_velocity(Velocity6::new(Vec3::new(1e300, 0.0, 0.0), Vec3::zeros())),
        )
        .unwrap();
    let mut st = stepper(&w);
    for _ in 0..3 {
        st.step(&mut w).unwrap();
    }
    // f / m Δt overflows (m ≈ 1e-2 kg, Δt ≈ 1e-6 s)
    w.set_force(i, Vec3::new(f64::MAX, 0.0, 0.0), Vec3::zeros())
        .unwrap();
    let before = w.clone();
    match st.step(&mut w) {
        Err(SmoothError::Step(StepError::NonFiniteVelocity { stage, body, .. })) => {
            assert_eq!((stage, body), ("smooth", i.index()));
        }
        other => panic!("expected a non-finite velocity of body {i}, got {other:?}"),
    }
    for k in 0..w.len() {
        assert_eq!(w.positions()[k], before.positions()[k], "body {k}");
        assert_eq!(w.velocities()[k], before.velocities()[k], "body {k}");
        assert_eq!(w.orientations()[k], before.orientations()[k], "body {k}");
    }
}

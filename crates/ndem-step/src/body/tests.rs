use super::ZeroUnlessSet;
use ndem_math::Vec3;

#[test]
fn zero_values_hold_nothing_until_one_is_set() {
    let mut v = ZeroUnlessSet::default();
    for i in 0..5 {
        v.push(i, Vec3::zeros());
    }
    v.set(1, Vec3::zeros(), 5);
    assert!(v.values.is_empty());
    assert_eq!(v.get(3), Vec3::zeros());
    v.set(2, Vec3::new(1.0, 2.0, 3.0), 5);
    assert_eq!(v.values.len(), 5);
    v.push(5, Vec3::zeros());
    v.push(6, Vec3::new(0.0, 0.0, 4.0));
    let got: Vec<Vec3> = (0..7).map(|i| v.get(i)).collect();
    let mut want = vec![Vec3::zeros(); 7];
    want[2] = Vec3::new(1.0, 2.0, 3.0);
    want[6] = Vec3::new(0.0, 0.0, 4.0);
    assert_eq!(got, want);
}

/// A world of spheres `(radius, position)` (bodies `0..n`), a rotated
/// box (body `n`) and a fixed sphere (body `n + 1`); the bodies made.
fn mixed_world(gravity: Vec3, spheres: &[(f64, Vec3)]) -> (crate::World, Vec<crate::BodyId>) {
    use crate::MaterialId;
    use crate::{BodyDesc, World};
    use ndem_collide::Shape;
    use ndem_math::{Material, Quat};
    let mut world = World::new(vec![Material::default()], gravity).unwrap();
    let sphere = |r: f64| Shape::sphere(r).unwrap();
    let mut bodies = Vec::new();
    for &(r, at) in spheres {
        bodies.push(
            world
                .add_body(BodyDesc::dynamic(sphere(r), MaterialId::from_index(0), at))
                .unwrap(),
        );
    }
    let mut cuboid = BodyDesc::dynamic(
        Shape::cuboid(Vec3::new(0.01, 0.02, 0.03)).unwrap(),
        MaterialId::from_index(0),
        Vec3::new(0.0, 0.3, 0.5),
    );
    cuboid.orientation = Quat::from_euler_angles(0.3, -1.1, 0.7);
    bodies.push(world.add_body(cuboid).unwrap());
    world
        .add_body(BodyDesc::fixed(
            sphere(0.02),
            MaterialId::from_index(0),
            Vec3::new(0.0, 0.0, 0.0),
        ))
        .unwrap();
    (world, bodies)
}

/// The problem's inverse masses as the stepper pushes them (spheres and
/// static bodies without forming a matrix) are those of
/// `World::inverse_mass`, bit for bit: spheres, a rotated box, a
/// static body, a member, a deactivated body.
#[test]
fn pushed_inverse_masses_are_the_worlds() {
    use crate::BodyId;
    use ndem_solve::InverseMasses;
    let at = |k: f64| Vec3::new(0.1 * k, 0.0, 0.5);
    let spheres = [(0.01, at(0.0)), (0.013, at(1.0)), (0.0065, at(2.0))];
    let (mut world, bodies) = mixed_world(Vec3::new(0.0, 0.0, -9.81), &spheres);
    world.attach(bodies[1], bodies[0]).unwrap();
    world.set_active((bodies[2]).index(), None).unwrap();
    let mut pushed = InverseMasses::new();
    for i in 0..world.len() {
        world.push_inverse_mass(i, &mut pushed);
    }
    assert_eq!(pushed.len(), world.len());
    for i in 0..world.len() {
        let (a, b) = (
            pushed.get(i).unwrap(),
            world.inverse_mass(BodyId::from_index(i)),
        );
        let bits = |m: &ndem_math::InverseMass| {
            std::iter::once(m.inv_mass)
                .chain(m.inv_inertia.iter().copied())
                .map(f64::to_bits)
                .collect::<Vec<_>>()
        };
        assert_eq!(bits(&a), bits(&b), "body {i}");
    }
    assert!(
        world
            .inverse_mass(BodyId::from_index(3))
            .isotropic_inertia()
            .is_none(),
        "the box"
    );
    assert!(
        world.inverse_mass(BodyId::from_index(1)).is_infinite(),
        "the member"
    );
}

/// The one-pass sums are the passes they replace, bit for bit: spheres
/// with spin, a rotated box (anisotropic world inertia), a static body
/// and a kinematic one, a member, a deactivated body.
#[test]
fn one_pass_sums_are_the_separate_passes() {
    use crate::MaterialId;
    use crate::{BodyDesc, Motion};
    use ndem_collide::Shape;

    use ndem_math::Velocity6;
    let at = |k: f64| Vec3::new(0.1 * k - 0.07, 0.03 * k, 0.5 - 0.2 * k);
    let spheres = [
        (0.01, at(0.0)),
        (0.013, at(1.0)),
        (0.0065, at(2.0)),
        (0.011, at(3.0)),
    ];
    let (mut world, bodies) = mixed_world(Vec3::new(0.1, -0.2, -9.81), &spheres);
    let sphere = |r: f64| Shape::sphere(r).unwrap();
    let mut moving = BodyDesc::dynamic(
        sphere(0.015),
        MaterialId::from_index(0),
        Vec3::new(0.2, 0.1, 0.05),
    );
    moving.motion = Motion::Kinematic;
    world.add_body(moving).unwrap();
    for (i, v) in world.state.velocities_mut().iter_mut().enumerate() {
        let x = i as f64;
        *v = Velocity6::new(
            Vec3::new(0.3 - 0.1 * x, 0.07 * x, -1.3 + 0.01 * x),
            Vec3::new(2.0 * x - 3.0, -1.5 + x, 0.25 * x),
        );
    }
    world.attach(bodies[1], bodies[0]).unwrap();
    world.set_active((bodies[2]).index(), None).unwrap();
    let bits = |v: Vec3| v.map(f64::to_bits);
    let sums = world.energies_and_momentum();
    let (p, l) = world.momentum();
    assert_eq!(
        sums.kinetic_energy.to_bits(),
        world.kinetic_energy().to_bits()
    );
    assert_eq!(
        sums.potential_energy.to_bits(),
        world.potential_energy().to_bits()
    );
    assert_eq!(
        (bits(sums.momentum), bits(sums.angular_momentum)),
        (bits(p), bits(l))
    );
    let (kinetic, potential) = world.energies();
    assert_eq!(
        (kinetic.to_bits(), potential.to_bits()),
        (
            sums.kinetic_energy.to_bits(),
            sums.potential_energy.to_bits()
        )
    );
    // the potential energy after `x + Δt v` as the guard summed it
    let dt = 1e-3;
    let potential_after: f64 = (0..world.len())
        .filter(|&i| !world.is_member(i) && world.motions()[i] != Motion::Static)
        .filter_map(|i| {
            let m = world.mass_properties()[i].as_ref()?;
            let x = world.positions()[i] + world.velocities()[i].linear * dt;
            Some(-m.mass * world.gravity.dot(&x))
        })
        .sum();
    let after = world.kinetic_energy() + potential_after;
    assert_eq!(world.energy_after_positions(dt).to_bits(), after.to_bits());
    assert!(
        world.mass_properties()[5].is_none() || world.motions()[5] == Motion::Static,
        "the fixed body"
    );
}

#[test]
fn a_negative_zero_is_kept() {
    let mut v = ZeroUnlessSet::default();
    v.push(0, Vec3::zeros());
    v.push(1, Vec3::new(-0.0, 0.0, 0.0));
    assert_eq!(v.get(1).x.to_bits(), (-0.0f64).to_bits());
    assert_eq!(v.get(0).x.to_bits(), 0);
}

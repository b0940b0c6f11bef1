//! A machine part carrying its load merged (`ReductionSettings::
//! carried_loads`) survives a checkpoint: the restored run continues bit
//! for bit, memberships included.

use ndem::checkpoint::Checkpoint;
use ndem::collide::Shape;
use ndem::math::{MassProperties, Material, Vec3};
use ndem::reduce::{Reducer, ReductionSettings};
use ndem::scenes::Scene;
use ndem::step::{BodyDesc, Joint, MaterialId, Motor, Stepper, World};

/// A 10 kg plate lifted at 0.1 m/s on a vertical prismatic joint, with 4
/// spheres resting on it apart, carried loads on.
fn lifted_plate() -> Scene {
    let m = MaterialId::from_index(0);
    let mut w = World::new(vec![Material::default()], Vec3::new(0.0, 0.0, -9.81)).unwrap();
    let base = w
        .add_body(BodyDesc::fixed(
            Shape::sphere(0.01).unwrap(),
            m,
            Vec3::new(0.0, 0.0, -1.0),
        ))
        .unwrap();
    let half = Vec3::new(0.05, 0.05, 0.01);
    let centre = Vec3::new(0.0, 0.0, 0.5);
    let mut desc = BodyDesc::dynamic(Shape::cuboid(half).unwrap(), m, centre);
    desc.mass = Some(MassProperties::solid_box(10.0, half).unwrap());
    let plate = w.add_body(desc).unwrap();
    let motor = Motor {
        target_speed: 0.1,
        max_force: 1000.0,
    };
    let joint = Joint::prismatic(&w, base, plate, centre, Vec3::z(), Some(motor)).unwrap();
    w.add_joint(joint).unwrap();
    let r = 0.0065;
    for (x, y) in [(-0.02, -0.02), (0.02, -0.02), (-0.02, 0.02), (0.02, 0.02)] {
        w.add_sphere(r, m, Vec3::new(x, y, 0.5 + half.z + r))
            .unwrap();
    }
    let mut scene = Scene::new("lifted plate", w);
    scene.reduction = Some(ReductionSettings {
        carried_loads: true,
        ..ReductionSettings::default()
    });
    scene
}

fn steps(scene: &mut Scene, stepper: &mut Stepper, n: usize) {
    for _ in 0..n {
        scene.step(stepper).unwrap();
    }
}

fn hosts(w: &World) -> Vec<Option<usize>> {
    (0..w.len()).map(|i| w.host_of(i)).collect()
}

/// A checkpoint of `a` restored and run `n` steps beside `a`'s own `n`:
/// the two end in the same world, bit for bit. Returns the restored scene.
fn resumed_beside(a: &mut Scene, sa: &mut Stepper, n: usize) -> Scene {
    let cp = Checkpoint::capture(a, sa).to_json();
    steps(a, sa, n);
    let (mut b, mut sb) = Checkpoint::from_json(&cp).unwrap().restore().unwrap();
    steps(&mut b, &mut sb, n);
    assert_same_world(&a.world, &b.world);
    b
}

/// The same memberships, positions and velocities, bit for bit.
fn assert_same_world(a: &World, b: &World) {
    assert_eq!(hosts(a), hosts(b));
    for (p, q) in a.positions().iter().zip(b.positions()) {
        assert_eq!(p.map(f64::to_bits), q.map(f64::to_bits));
    }
    for (p, q) in a.velocities().iter().zip(b.velocities()) {
        assert_eq!(p.linear.map(f64::to_bits), q.linear.map(f64::to_bits));
        assert_eq!(p.angular.map(f64::to_bits), q.angular.map(f64::to_bits));
    }
}

#[test]
fn a_carried_load_resumes_bit_identically() {
    let mut a = lifted_plate();
    let mut sa = a.stepper().unwrap();
    steps(&mut a, &mut sa, 60);
    let merged = hosts(&a.world);
    // the plate (body 1) and its 4 spheres share one host
    assert!(merged[1].is_some() && merged[2..6].iter().all(|h| *h == merged[1]));
    assert_eq!(sa.hooks_as::<Reducer>().unwrap().stats().aggregates, 1);
    let b = resumed_beside(&mut a, &mut sa, 60);
    assert!(b.reduction.as_ref().is_some_and(|r| r.carried_loads));
}

/// A block resting on the floor, merged with it
/// (`ReductionSettings::merge_with_static`), survives a checkpoint: the
/// restored run continues bit for bit, static hosts included.
#[test]
fn an_aggregate_merged_with_the_floor_resumes_bit_identically() {
    let mut w = World::on_floor(Material::default()).unwrap();
    w.add_sphere_stack(0.0065, MaterialId::from_index(0), [4, 4, 3])
        .unwrap();
    let mut a = Scene::new("block", w);
    a.reduction = Some(ReductionSettings {
        merge_with_static: true,
        ..ReductionSettings::default()
    });
    let mut sa = a.stepper().unwrap();
    steps(&mut a, &mut sa, 100);
    let anchored = {
        let r = sa.hooks_as::<Reducer>().unwrap();
        r.aggregates()
            .filter(|(id, _)| r.is_anchored(&a.world, *id))
            .count()
    };
    assert!(anchored > 0);
    let b = resumed_beside(&mut a, &mut sa, 30);
    assert!(b.reduction.as_ref().is_some_and(|r| r.merge_with_static));
}

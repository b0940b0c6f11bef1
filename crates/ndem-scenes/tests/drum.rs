//! The drum scenes and the drum surface-angle measure.

use ndem_collide::Shape;
use ndem_math::{Material, Vec3};
use ndem_scenes::builders::{D, DrumSpec, drum};
use ndem_scenes::measure::drum_surface_angle;
use ndem_step::{MaterialId, World};

/// A tilted flat layer of spheres in the drum's cross-section: the
/// surface angle over the central D/2 returns the tilt. Sphere centres sit
/// on the bin centres, so each bin's highest top lies exactly on a line of
/// the layer's slope. Measured error ≤ 1.1e-14°; bound 1e-13°.
#[test]
fn drum_surface_angle_returns_the_tilt_of_a_flat_surface() {
    let diameter = 40.0 * D;
    for degrees in [25.0f64, 35.0, 44.0, 50.0] {
        let mut w = World::new(vec![Material::default()], Vec3::new(0.0, 0.0, -9.81)).unwrap();
        let slope = degrees.to_radians().tan();
        // sphere centres on bin centres of the D/2 window, surface through the axis
        for k in 0..20 {
            let x = -0.25 * diameter + (k as f64 + 0.5) * D;
            for depth in 0..3 {
                w.add_sphere(
                    0.5 * D,
                    MaterialId::from_index(0),
                    Vec3::new(x, 0.0, x * slope - 0.5 * D - depth as f64 * D),
                )
                .unwrap();
            }
        }
        // particles outside the window do not count
        w.add_sphere(
            0.5 * D,
            MaterialId::from_index(0),
            Vec3::new(0.3 * diameter, 0.0, 1.0),
        )
        .unwrap();
        let theta = drum_surface_angle(&w, Vec3::zeros(), diameter, D);
        println!("{degrees}: error {:e}", theta - degrees);
        assert!((theta - degrees).abs() < 1e-13, "{degrees}: {theta}");
    }
}

/// Fewer than three occupied bins give NaN, not a number from nothing.
#[test]
fn drum_surface_angle_without_a_surface_is_nan() {
    let w = World::new(vec![Material::default()], Vec3::new(0.0, 0.0, -9.81)).unwrap();
    assert!(drum_surface_angle(&w, Vec3::zeros(), 0.52, D).is_nan());
}

/// The model-reduction drum at a size a test runs in a second.
fn small_drum() -> DrumSpec {
    DrumSpec {
        particles: 200,
        diameter_d: 16.0,
        width_d: 4.0,
        ..DrumSpec::model_reduction()
    }
}

/// The model-reduction drum: frictionless planes close it at ±width/2,
/// the shell's own caps are out of reach, linear per-material stiffness.
/// A particle pressed against a cap and carried by the rotating shell
/// feels no friction from the cap: its contact with the cap carries only
/// a normal force.
#[test]
fn model_reduction_drum_has_frictionless_caps() {
    let spec = small_drum();
    let scene = drum(spec).unwrap();
    let w = &scene.world;
    assert_eq!(
        scene.settings.contact_law,
        ndem_math::ContactLaw::LinearPerMaterial
    );
    // planes at y = ±2d, drum shell reaching 3d
    let caps: Vec<usize> = (0..w.len())
        .filter(|&i| matches!(w.shapes()[i], Shape::HalfSpace { .. }))
        .collect();
    assert_eq!(caps.len(), 2);
    for &c in &caps {
        assert_eq!(w.body_materials()[c], 1);
        assert!((w.positions()[c].y.abs() - 2.0 * D).abs() < 1e-15);
    }
    let shell = (0..w.len())
        .find(|&i| matches!(w.shapes()[i], Shape::Drum { .. }))
        .unwrap();
    let Shape::Drum { half_height, .. } = w.shapes()[shell] else {
        unreachable!()
    };
    assert!((half_height - 3.0 * D).abs() < 1e-15);
    // run one second: cap contacts carry no tangential force
    let mut scene = scene;
    let mut stepper = scene.stepper().unwrap();
    let mut cap_contacts = 0;
    for _ in 0..200 {
        scene.step(&mut stepper).unwrap();
    }
    for f in stepper.contact_forces() {
        let (a, b) = (f.key.body_a as usize, f.key.body_b as usize);
        if caps.contains(&a) || caps.contains(&b) {
            cap_contacts += 1;
            let n = f.normal;
            let t = f.force_on_a - n * n.dot(&f.force_on_a);
            assert!(t.norm() <= 1e-12 * f.force_on_a.norm().max(1e-9), "{t:?}");
        }
    }
    assert!(cap_contacts > 0, "no particle touched a cap");
}

/// Bad input names its field.
#[test]
fn drum_stiffness_must_be_positive() {
    let spec = DrumSpec {
        linear_stiffness: Some(-1.0),
        ..DrumSpec::model_reduction()
    };
    let e = drum(spec).err().unwrap().to_string();
    assert!(e.contains("drum.linear_stiffness"), "{e}");
}

/// The lift sensor is a band on the side where the wall moves up (x < 0
/// for Ω > 0 about +y), centred in height on the highest particle there
/// and reaching from the drum's axis to its wall; none without particles.
#[test]
fn drum_lift_sensor_is_a_band_across_the_lifting_side() {
    use ndem_scenes::reduction::drum_lift_sensor;
    let spec = small_drum();
    let scene = drum(spec).unwrap();
    let s = drum_lift_sensor(&scene.world, &spec).unwrap();
    let highest = (0..scene.world.len())
        .filter(|&i| {
            scene.world.motions()[i] == ndem_step::Motion::Dynamic
                && scene.world.positions()[i].x < 0.0
        })
        .map(|i| scene.world.positions()[i].z)
        .fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(s.position.z, highest);
    let Shape::Box { half_extents: h } = s.shape else {
        panic!("a box: {:?}", s.shape);
    };
    let radius = 0.5 * spec.diameter_d * D;
    // from the axis to the wall along x, the full width along y, 8d high
    assert_eq!(s.position.x - h.x, -radius);
    assert_eq!(s.position.x + h.x, 0.0);
    assert!(h.y > 0.5 * spec.width_d * D);
    assert_eq!(h.z, 4.0 * D);
    let reversed = DrumSpec {
        omega: -spec.omega,
        ..spec
    };
    let r = drum_lift_sensor(&scene.world, &reversed).unwrap();
    assert_eq!(r.position.x, -s.position.x);
    let empty = World::new(vec![Material::default()], Vec3::new(0.0, 0.0, -9.81)).unwrap();
    assert!(drum_lift_sensor(&empty, &spec).is_none());
}

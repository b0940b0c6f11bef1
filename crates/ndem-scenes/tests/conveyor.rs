//! The model-reduction paper's conveyor: scene, heap angle, retiring the
//! discharge, the rectangular source.

use ndem_collide::Shape;
use ndem_math::{Material, Vec3};
use ndem_scenes::builders::D;
use ndem_scenes::conveyor::{
    ConveyorBelt, ConveyorSpec, conveyor_belt, heap_angle, upstream_face_angle,
};
use ndem_scenes::emitter::Emitter;
use ndem_scenes::rng::Rng;
use ndem_step::BodyId;
use ndem_step::{BodyDesc, MaterialId, Motion, World};

fn belt(width_d: f64) -> ConveyorBelt {
    ConveyorBelt {
        belt: BodyId::from_index(0),
        first_particle: BodyId::from_index(0),
        length: 50.0 * D,
        width: width_d * D,
        top: 0.5,
        source_x: 12.0 * D,
        source_half_width: 7.5 * D,
    }
}

/// A column of spheres at `(x, y)` whose top touches `belt_top + surface`.
fn column(w: &mut World, x: f64, y: f64, belt_top: f64, surface: f64) {
    let mut z = surface - 0.5 * D;
    while z > 0.0 {
        w.add_sphere(
            0.5 * D,
            MaterialId::from_index(0),
            Vec3::new(x, y, belt_top + z),
        )
        .unwrap();
        z -= D;
    }
}

/// A symmetric heap across the belt with flanks of slope tan θ and a flat
/// crest: the heap angle returns θ. Sphere centres sit on the bin
/// centres, so the highest top per bin lies on the flank line exactly;
/// the crest (above 85 % of the height) and the spheres lying on the belt
/// (within 1.5d) are left out. Measured error ≤ 2.9e-14°; bound 1e-13°.
#[test]
fn heap_angle_returns_the_flank_angle() {
    let b = belt(36.0);
    for degrees in [30.0f64, 38.0, 41.5, 45.0] {
        let mut w = World::new(vec![Material::default()], Vec3::new(0.0, 0.0, -9.81)).unwrap();
        let slope = degrees.to_radians().tan();
        let crest = 8.0 * D;
        for k in 0..36 {
            let y = (k as f64 + 0.5) * D - 0.5 * b.width;
            // height of the surface: flanks from the belt edges, flat crest
            let edge = 0.5 * b.width - y.abs();
            let surface = (edge * slope).min(crest);
            for x in [0.5 * b.length - D, 0.5 * b.length + D] {
                column(&mut w, x, y, b.top, surface);
            }
        }
        // a heap elsewhere along the belt does not count
        w.add_sphere(
            0.5 * D,
            MaterialId::from_index(0),
            Vec3::new(0.1, 0.0, b.top + 0.3),
        )
        .unwrap();
        let theta = heap_angle(&w, &b);
        println!("{degrees}: error {:e}", theta - degrees);
        assert!((theta - degrees).abs() < 1e-13, "{degrees}: {theta}");
    }
}

/// The upstream face: a heap rising from the tail at slope tan θ up to a
/// crest under the source returns θ (centres on bin centres, as above;
/// measured error ≤ 3.6e-14°, bound 1e-13°).
#[test]
fn upstream_face_angle_returns_the_face_angle() {
    let b = belt(36.0);
    for degrees in [30.0f64, 41.5, 45.0] {
        let mut w = World::new(vec![Material::default()], Vec3::new(0.0, 0.0, -9.81)).unwrap();
        let slope = degrees.to_radians().tan();
        for k in 0..16 {
            let x = (k as f64 + 0.5) * D;
            let surface = (x * slope).min(9.0 * D);
            for y in [-D, 0.0, D] {
                column(&mut w, x, y, b.top, surface);
            }
        }
        let theta = upstream_face_angle(&w, &b);
        println!("{degrees}: error {:e}", theta - degrees);
        assert!((theta - degrees).abs() < 1e-13, "{degrees}: {theta}");
    }
}

/// No heap: NaN rather than a made-up angle.
#[test]
fn heap_angle_of_an_empty_belt_is_nan() {
    let w = World::new(vec![Material::default()], Vec3::new(0.0, 0.0, -9.81)).unwrap();
    assert!(heap_angle(&w, &belt(36.0)).is_nan());
    assert!(upstream_face_angle(&w, &belt(36.0)).is_nan());
}

/// Particles below the measuring plane are retired: static, massless,
/// parked under the floor where nothing touches them; the rest are left
/// alone, and the crossing positions are returned.
#[test]
fn discharged_particles_are_retired_below_the_floor() {
    let (mut scene, b) = conveyor_belt(ConveyorSpec::default()).unwrap();
    let w = &mut scene.world;
    let low = Vec3::new(b.length + 3.0 * D, 0.0, b.discharge_level() - 0.001);
    let high = Vec3::new(b.length + 3.0 * D, 0.0, b.discharge_level() + 0.05);
    let [i, j] = [low, high].map(|x| {
        let sphere = Shape::sphere(0.5 * D).unwrap();
        w.add_body(BodyDesc::dynamic(sphere, MaterialId::from_index(0), x))
            .unwrap()
    });
    let mut parked = 0;
    let crossed = b.retire_discharged(w, &mut parked).unwrap();
    assert_eq!(crossed, vec![low]);
    assert_eq!(parked, 1);
    assert_eq!(w.motions()[i.index()], Motion::Static);
    assert!(w.mass_properties()[i.index()].is_none());
    assert!(w.position(i).z < -D);
    assert_eq!(w.motions()[j.index()], Motion::Dynamic);
    assert_eq!(w.position(j), high);
    // a second call finds nothing new
    assert!(b.retire_discharged(w, &mut parked).unwrap().is_empty());
}

/// The rectangular source emits only inside its rectangle (shrunk by the
/// particle radius) and at the source height.
#[test]
fn rectangular_source_emits_inside_the_rectangle() {
    let mut w = World::new(vec![Material::default()], Vec3::new(0.0, 0.0, -9.81)).unwrap();
    let centre = Vec3::new(0.3, -0.1, 0.6);
    let (hx, hy) = (2.0 * D, 7.5 * D);
    let mut e = Emitter {
        centre,
        radius: 0.0,
        rectangle: Some((hx, hy)),
        particle_radius: (0.5 * D, 0.5 * D),
        bidisperse_fraction: 0.0,
        material: 0,
        rate: 1000.0,
        velocity: Vec3::zeros(),
        total: 40,
        emitted: 0,
        pending: 0.0,
        rng: Rng::new(3),
    };
    for _ in 0..100 {
        e.emit(&mut w, 0.005).unwrap();
    }
    // the source fills up (nothing moves the emitted spheres away), so
    // fewer than `total` may fit; every emitted one is counted
    assert_eq!(w.len(), e.emitted);
    assert!(e.emitted >= 20, "{}", e.emitted);
    let (mut span_x, mut span_y) = (0.0f64, 0.0f64);
    for p in w.positions() {
        let d = p - centre;
        assert!(
            d.x.abs() <= hx - 0.5 * D && d.y.abs() <= hy - 0.5 * D,
            "{d:?}"
        );
        assert_eq!(d.z, 0.0);
        span_x = span_x.max(d.x.abs());
        span_y = span_y.max(d.y.abs());
    }
    // and it uses the rectangle, not a disk of radius 0
    assert!(span_y > 2.0 * D, "{span_y}");
}

/// Bad input names its field.
#[test]
fn conveyor_rejects_bad_parameters() {
    for (spec, field) in [
        (
            ConveyorSpec {
                width_d: 0.0,
                ..ConveyorSpec::default()
            },
            "conveyor.width_d",
        ),
        (
            ConveyorSpec {
                speed: f64::NAN,
                ..ConveyorSpec::default()
            },
            "conveyor.speed",
        ),
        (
            ConveyorSpec {
                stiffness: -3.0,
                ..ConveyorSpec::default()
            },
            "conveyor.stiffness",
        ),
    ] {
        let e = conveyor_belt(spec).err().unwrap().to_string();
        assert!(e.contains(field), "{e}");
    }
}

/// Material dropped on the belt is carried at the belt's speed: after
/// 1.5 s the particles resting on the belt move along it at 0.1 m/s. The
/// belt's surface velocity enters the contact's friction rows, so a
/// particle in sticking contact matches it to the solve's accuracy
/// (measured mean over the 106 resting ones: 8.9e-7 relative off the belt
/// speed; bound 5e-6 relative). The scene is deterministic, so this is
/// one fixed case, not a sample.
#[test]
fn the_belt_carries_the_heap_at_its_speed() {
    let spec = ConveyorSpec {
        rate: 400.0,
        particles: 200,
        ..ConveyorSpec::default()
    };
    let (mut scene, b) = conveyor_belt(spec).unwrap();
    let mut st = scene.stepper().unwrap();
    for _ in 0..300 {
        scene.step(&mut st).unwrap();
    }
    let w = &scene.world;
    let resting: Vec<f64> = (b.first_particle.index()..w.len())
        .filter(|&i| {
            let p = w.positions()[i];
            p.z < b.top + 0.6 * D && w.velocities()[i].linear.z.abs() < 1e-3
        })
        .map(|i| w.velocities()[i].linear.x)
        .collect();
    assert!(resting.len() > 20, "{}", resting.len());
    let mean = resting.iter().sum::<f64>() / resting.len() as f64;
    println!("{} resting on the belt, mean speed {mean}", resting.len());
    assert!((mean - spec.speed).abs() < 5e-6 * spec.speed, "{mean}");
}

/// The plane fit returns the steepest slope of a known plane with slopes
/// along both axes, and NaN when the points do not span a plane.
/// Measured error 0; bound 1e-13° (round-off of the normal equations).
#[test]
fn plane_inclination_of_a_known_plane() {
    use ndem_scenes::measure::fitted_plane_inclination;
    let (b, c) = (0.3, 0.4);
    let pts: Vec<(f64, f64, f64)> = (0..6)
        .flat_map(|i| (0..5).map(move |j| (i as f64 * 0.013, j as f64 * 0.013)))
        .map(|(x, y)| (x, y, 0.2 + b * x + c * y))
        .collect();
    let theta = fitted_plane_inclination(&pts);
    let exact = 0.5f64.atan().to_degrees();
    println!("plane: error {:e}", theta - exact);
    assert!((theta - exact).abs() < 1e-13, "{theta}");
    let line: Vec<(f64, f64, f64)> = (0..6).map(|i| (i as f64, 2.0 * i as f64, 1.0)).collect();
    assert!(fitted_plane_inclination(&line).is_nan());
}

/// The discharge profile bins crossings by 1d past the head and counts
/// the ones behind the head as spilled.
#[test]
fn discharge_profile_bins_crossings_past_the_head() {
    let b = belt(36.0);
    let mut p = ndem_scenes::conveyor::DischargeProfile::new(-5.0, 25.0);
    let at = |d: f64| Vec3::new(b.length + d * D, 0.0, 0.0);
    p.record(&b, &[at(2.5), at(2.7), at(-0.5), at(30.0), at(-3.0)]);
    assert_eq!(p.discharged, 4);
    assert_eq!(p.spilled, 1);
    let rates = p.rates(2.0);
    assert_eq!(rates.len(), 30);
    assert_eq!(rates[7], (2.5, 1.0)); // bin [2, 3): two crossings in 2 s
    assert_eq!(rates[4], (-0.5, 0.5));
    assert_eq!(rates.iter().map(|r| r.1).sum::<f64>(), 1.5); // 30d is past the last bin
    // the head sensor sits over the head, across the whole belt
    let s = b.head_sensor();
    assert_eq!(s.position.x, b.length);
    let Shape::Box { half_extents } = s.shape else {
        panic!("box sensor")
    };
    assert!(half_extents.y > 0.5 * b.width);
}

/// The built-in `conveyor` (500 spheres emitted onto a belt 0.3 m above
/// the floor) runs to its end, 8 s: the discharge falling onto the heap
/// under the head drives no sphere through another (the stepper stops
/// with an overlap error when one does; with the default 20 impact sweeps
/// it did at t = 4.7 s). Every sphere is emitted.
#[test]
fn the_built_in_conveyor_runs_to_its_end() {
    let mut scene = ndem_scenes::builders::builtin("conveyor").unwrap();
    let mut st = scene.stepper().unwrap();
    let steps = (scene.duration / scene.settings.dt).round() as usize;
    for k in 0..steps {
        if let Err(e) = scene.step(&mut st) {
            panic!("step {k}: {e}");
        }
    }
    assert_eq!(scene.emitters[0].emitted, 500);
}

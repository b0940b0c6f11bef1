//! The excavator scene: structure, dig cycle and bad input.

use ndem_scenes::DriveSchedule;
use ndem_scenes::SceneError;
use ndem_scenes::excavator::{ExcavatorSpec, excavator_with_machine};
use ndem_step::JointKind;

#[test]
fn quick_excavator_has_the_papers_structure() {
    let (scene, machine) = excavator_with_machine(ExcavatorSpec::quick()).unwrap();
    let w = &scene.world;
    let particles = w.len() - machine.first_particle.index();
    assert!(
        (9_000..11_000).contains(&particles),
        "{particles} particles"
    );
    let mass: f64 = machine
        .bodies
        .iter()
        .map(|&b| w.mass_properties()[b.index()].unwrap().mass)
        .sum();
    assert_eq!(mass, 50e3);
    let kinds: Vec<&str> = w
        .joints()
        .iter()
        .map(|j| match j.kind {
            JointKind::Lock => "lock",
            JointKind::Hinge { .. } => "hinge",
            JointKind::Actuator { .. } => "actuator",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "lock", "hinge", "hinge", "hinge", "hinge", "actuator", "actuator", "actuator"
        ]
    );
    // diameters within [25, 100] mm
    for s in &w.shapes()[machine.first_particle.index()..] {
        let d = 2.0 * s.sphere_radius().unwrap();
        assert!((0.025..=0.1).contains(&d), "{d}");
    }
    let phases: Vec<&str> = machine.schedule.phases.iter().map(String::as_str).collect();
    assert_eq!(
        phases,
        [
            "initial",
            "settle",
            "approach",
            "penetrate",
            "drag",
            "curl",
            "lift",
            "swing",
            "dump",
            "hold"
        ]
    );
    // the schedule starts at the machine's own pose
    for (k, &j) in machine.schedule.joints.iter().enumerate() {
        let now = w.joints()[j].coordinate(w).unwrap();
        assert!((now - machine.schedule.targets[0][k]).abs() < 1e-12);
    }
}

#[test]
fn paper_excavator_has_about_1e5_particles() {
    let (scene, machine) = excavator_with_machine(ExcavatorSpec::paper()).unwrap();
    let particles = scene.world.len() - machine.first_particle.index();
    assert!((95_000..110_000).contains(&particles), "{particles}");
}

#[test]
fn bad_dig_cycle_and_spec_are_typed_errors() {
    let (scene, machine) = excavator_with_machine(ExcavatorSpec::quick()).unwrap();
    let mut unsorted: DriveSchedule = machine.schedule.clone();
    unsorted.times.swap(3, 4);
    match unsorted.validate(&scene.world) {
        Err(SceneError::Invalid { field, .. }) => assert_eq!(field, "schedule.times"),
        other => panic!("{other:?}"),
    }
    let mut negative = machine.schedule.clone();
    negative.max_force[1] = -1.0;
    match negative.validate(&scene.world) {
        Err(SceneError::Invalid { field, .. }) => assert_eq!(field, "schedule.max_force"),
        other => panic!("{other:?}"),
    }
    let mut lock = machine.schedule.clone();
    lock.joints[0] = 0; // the base's lock joint has no drive
    match lock.validate(&scene.world) {
        Err(SceneError::Invalid { field, .. }) => assert_eq!(field, "schedule.joints"),
        other => panic!("{other:?}"),
    }
    let wide = ExcavatorSpec {
        trench: [3.0, 1.0, 0.45],
        ..ExcavatorSpec::quick()
    };
    match excavator_with_machine(wide) {
        Err(SceneError::Invalid { field, .. }) => assert_eq!(field, "excavator.trench"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn schedule_interpolates_smoothly_and_holds_at_the_ends() {
    let (_, machine) = excavator_with_machine(ExcavatorSpec::quick()).unwrap();
    let s = &machine.schedule;
    let (t2, t3) = (s.times[2], s.times[3]);
    // smoothstep: halfway at the middle, 15.625 % at a quarter, and
    // the rows' own targets at the rows
    let at = |fraction: f64| s.targets_at(t2 + fraction * (t3 - t2));
    for (fraction, weight) in [(0.5, 0.5), (0.25, 0.15625), (0.0, 0.0)] {
        let got = at(fraction);
        for k in 0..s.joints.len() {
            let expect = s.targets[2][k] + weight * (s.targets[3][k] - s.targets[2][k]);
            assert!(
                (got[k] - expect).abs() < 1e-12,
                "{fraction}: {} vs {expect}",
                got[k]
            );
        }
    }
    assert_eq!(s.targets_at(-1.0), s.targets[0]);
    assert_eq!(s.targets_at(1e9), *s.targets.last().unwrap());
    assert_eq!(s.phase_at(0.5 * (t2 + t3)), "penetrate");
    assert_eq!(s.phase_at(1e9), "hold");
}

/// The bucket's contacts with the particles are as stiff as the particles'
/// own: the machine's steel must not be the softer side of the Hertz
/// modulus `E* = 1/((1-ν_a²)/E_a + (1-ν_b²)/E_b)` (at the default 6 MPa it
/// was, and a 14 mm sphere under 1 kN sank 0.7 of its radius into the
/// teeth; `docs/machines.md`).
#[test]
fn bucket_contacts_are_no_softer_than_the_particles() {
    let (scene, machine) = excavator_with_machine(ExcavatorSpec::quick()).unwrap();
    let w = &scene.world;
    let particle = w.body_materials()[machine.first_particle.index()] as usize;
    let bucket = w.body_materials()[machine.bodies[4].index()] as usize;
    let r = 0.014;
    let own = w.pair_properties(particle, r, particle, r).unwrap();
    let against_steel = w
        .pair_properties(particle, r, bucket, f64::INFINITY)
        .unwrap();
    // particle on particle: E*/E = 1/(2(1-ν²)) = 0.549; on steel of
    // 200 GPa: 1.09; the steel side is 0.5 % of the compliance
    let e = w.materials[particle].youngs_modulus;
    assert!(
        against_steel.effective_modulus >= 1.9 * own.effective_modulus,
        "bucket {} Pa against particles {} Pa",
        against_steel.effective_modulus,
        own.effective_modulus
    );
    assert!(against_steel.effective_modulus <= e / (1.0 - 0.3f64.powi(2)));
}

/// The bucket fill and the height map count particles only: an aggregate
/// body of model reduction (no shape, its members' mass) placed in the
/// scoop and above the trench changes neither.
#[test]
fn fill_and_heights_count_particles_not_aggregate_bodies() {
    use ndem_math::Vec3;
    use ndem_reduce::{Reducer, ReductionSettings};
    use ndem_scenes::excavator::{HeightMap, bucket_fill};
    let (mut scene, machine) = excavator_with_machine(ExcavatorSpec::quick()).unwrap();
    let first = machine.first_particle.index();
    let w = &mut scene.world;
    let fill = bucket_fill(w, &machine);
    let heights = HeightMap::measure(w, &machine, 0.1);
    let mut reducer = Reducer::new(ReductionSettings::default()).unwrap();
    let pair = [first, first + 1].map(ndem_step::BodyId::from_index);
    let id = reducer.merge_bodies(w, &pair).unwrap();
    let body = reducer.aggregates().find(|(i, _)| *i == id).unwrap().1.body;
    let body = ndem_step::BodyId::from_index(body);
    let bucket = machine.bodies[4];
    let f = machine.bucket_frame;
    let inside = f.pin + 0.5 * (f.tip - f.pin) + 0.5 * f.depth * f.mouth;
    let at = w.position(bucket) + w.orientation(bucket) * inside;
    assert!(f.contains(w.position(bucket), w.orientation(bucket), at));
    w.set_position(body, at).unwrap();
    assert_eq!(bucket_fill(w, &machine), fill);
    let ([x0, x1, y0, y1], _) = machine.trench;
    let above = Vec3::new(0.5 * (x0 + x1), 0.5 * (y0 + y1), 1.0);
    w.set_position(body, above).unwrap();
    assert_eq!(HeightMap::measure(w, &machine, 0.1).values, heights.values);
}

/// `--reduce` on the excavator turns on a split sensor that moves with
/// the bucket (a sphere of the bucket's length plus 0.1 m around its
/// centre); a scene file writes it as `body = <the bucket's index>` with
/// the offset in the bucket's frame and reads it back, and a sensor on a
/// body the scene lacks is a typed error naming the field.
#[test]
fn the_reduce_preset_follows_the_bucket_through_the_scene_file() {
    use ndem_scenes::file::SceneFile;
    let spec = ExcavatorSpec::quick();
    let (scene, machine) = excavator_with_machine(spec).unwrap();
    let mut on = scene.clone();
    on.switch_on_reduction();
    let sensors = on.reduction.clone().unwrap().sensors;
    assert_eq!(sensors.len(), 1);
    let mount = sensors[0].follows.expect("a sensor that follows a body");
    assert_eq!(mount.body, machine.bodies[4]);
    assert_eq!(mount.offset, ndem_math::Vec3::zeros());
    assert_eq!(
        sensors[0].shape.bounding_radius(),
        spec.machine.bucket_length + 0.1
    );
    let text = SceneFile::from_scene(&scene).to_toml().unwrap();
    assert!(text.contains(&format!("body = {}", machine.bodies[4].index())));
    let back = SceneFile::from_toml(&text).unwrap().to_scene().unwrap();
    assert_eq!(
        format!("{:?}", back.reduce_preset),
        format!("{:?}", scene.reduce_preset)
    );
    let bad = text.replace(
        &format!("body = {}", machine.bodies[4].index()),
        "body = 999999",
    );
    match SceneFile::from_toml(&bad).unwrap().to_scene() {
        Err(SceneError::Invalid { field, reason }) => {
            assert_eq!(field, "reduce_preset");
            assert!(reason.contains("reduction.sensors.body"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // the same in a `[reduction]` table
    let written = SceneFile::from_scene(&on).to_toml().unwrap();
    let bad = written.replace(
        &format!("body = {}", machine.bodies[4].index()),
        "body = 999999",
    );
    match SceneFile::from_toml(&bad).unwrap().to_scene() {
        Err(SceneError::Invalid { field, .. }) => assert_eq!(field, "reduction.sensors.body"),
        other => panic!("{other:?}"),
    }
}

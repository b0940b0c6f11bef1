//! The collapse scene and its surface-angle measurement.

use ndem_math::Velocity6;
use ndem_math::{Material, Vec3};
use ndem_scenes::KinematicMotion;
use ndem_scenes::builders::D;
use ndem_scenes::collapse::{
    CollapseSpec, SETTLE_TIME, collapse_cube, collapse_scene, surface_angle,
};
use ndem_scenes::{SceneError, SceneFile};
use ndem_step::{MaterialId, World};

#[test]
fn collapse_cube_holds_the_papers_particles_behind_a_gate() {
    let (scene, cube) = collapse_cube(CollapseSpec::default()).unwrap();
    let n = scene.world.len() - cube.first_particle.index();
    assert_eq!(n, 4000);
    for p in &scene.world.positions()[cube.first_particle.index()..] {
        assert!(p.x > 0.0 && p.x < cube.side && p.y > 0.0 && p.y < cube.side);
    }
    match collapse_cube(CollapseSpec {
        stiffness: -1.0,
        ..CollapseSpec::default()
    }) {
        Err(SceneError::Invalid { field, .. }) => assert_eq!(field, "collapse.stiffness"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// Spheres stacked into a staircase of a known slope: the fitted angle
/// equals it. The bins are one diameter wide and the surface is read from
/// the highest top per bin, so a staircase of exact slope tan θ gives θ
/// back to round-off (measured error up to 1.4e-14°; bound 1e-13°).
#[test]
fn surface_angle_of_a_known_slope() {
    for degrees in [20.0f64, 30.0, 36.0, 45.0] {
        let mut w = World::new(vec![Material::default()], Vec3::new(0.0, 0.0, -9.81)).unwrap();
        let first = w.len();
        let slope = degrees.to_radians().tan();
        for i in 0..30 {
            let x = (i as f64 + 0.5) * D;
            let top = (30.0 - i as f64) * D * slope;
            // a column of spheres up to the surface
            let mut z = 0.5 * D;
            while z + 0.5 * D <= top {
                w.add_sphere(0.5 * D, MaterialId::from_index(0), Vec3::new(x, 0.0, z))
                    .unwrap();
                z += D;
            }
            w.add_sphere(
                0.5 * D,
                MaterialId::from_index(0),
                Vec3::new(x, 0.0, top - 0.5 * D),
            )
            .unwrap();
        }
        let detached = vec![false; w.len()];
        let theta = surface_angle(&w, first, &detached);
        println!("{degrees}: error {:e}", theta - degrees);
        assert!((theta - degrees).abs() < 1e-13, "{degrees}: {theta}");
    }
}

/// The per-material stiffness survives the scene file.
#[test]
fn per_material_stiffness_round_trips_through_the_scene_file() {
    let (scene, _) = collapse_cube(CollapseSpec {
        particles: 20,
        ..CollapseSpec::default()
    })
    .unwrap();
    let file = SceneFile::from_scene(&scene);
    let text = file.to_toml().unwrap();
    assert!(text.contains("per_material_stiffness = true"), "{text}");
    assert!(text.contains("linear_stiffness = 3000.0"));
    let back = SceneFile::from_toml(&text).unwrap().to_scene().unwrap();
    assert_eq!(back.settings.contact_law, scene.settings.contact_law);
    assert_eq!(back.world.materials, scene.world.materials);
    let clash = text.replace(
        "per_material_stiffness = true",
        "per_material_stiffness = true\nrigid_contacts = true",
    );
    match SceneFile::from_toml(&clash).unwrap().to_scene() {
        Err(SceneError::Invalid { field, .. }) => assert_eq!(field, "run.per_material_stiffness"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// The built-in collapse: the gate rests until the bed has settled, then
/// rises at the gate speed; `--reduce` switches on the trial split near
/// disturbed contacts from the opening (on MPI ranks over the whole
/// unfolded model); the scene survives a scene-file round trip.
#[test]
fn builtin_collapse_raises_its_gate_after_settling() {
    let (mut scene, cube) = collapse_scene(CollapseSpec::default()).unwrap();
    let dt = scene.settings.dt;
    let gate = scene.world.velocities()[cube.gate.index()];
    assert_eq!(gate.linear, Vec3::zeros());
    let motion = &scene.motions[0];
    motion
        .apply(&mut scene.world, SETTLE_TIME - dt, dt)
        .unwrap();
    assert_eq!(
        scene.world.velocities()[cube.gate.index()].linear,
        Vec3::zeros()
    );
    motion.apply(&mut scene.world, SETTLE_TIME, dt).unwrap();
    assert_eq!(
        scene.world.velocities()[cube.gate.index()].linear,
        Vec3::new(0.0, 0.0, CollapseSpec::default().gate_speed)
    );
    let back = SceneFile::from_scene(&scene)
        .to_toml()
        .and_then(|t| SceneFile::from_toml(&t))
        .and_then(|f| f.to_scene())
        .unwrap();
    assert_eq!(back.motions, scene.motions);
    assert_eq!(
        format!("{:?}", back.reduce_preset),
        format!("{:?}", scene.reduce_preset)
    );
    let mut on = back.clone();
    on.switch_on_reduction();
    let r = on.reduction.unwrap();
    assert!(r.contact_split.is_none());
    let t = r.trial_split.unwrap();
    assert!(t.velocity_test && t.disturbed_only);
    assert_eq!(t.depth, Some(4));
    assert_eq!(r.start_time, SETTLE_TIME);
    assert!(r.merge_with_static);
    // on MPI ranks the preset's trial covers the whole unfolded model and
    // its aggregates stay off the floor; a `[reduction]` table written by
    // the user stays as it is
    let mut ranks = back.clone();
    assert!(ranks.switch_on_distributed_reduction());
    let distributed = ranks.reduction.unwrap();
    assert!(!distributed.merge_with_static);
    let whole = distributed.trial_split.unwrap();
    assert_eq!(whole, t.whole());
    assert!(!whole.is_partial() && whole.velocity_test);
    let mut written = back.clone();
    written.reduction = back.reduce_preset.clone();
    assert!(!written.switch_on_distributed_reduction());
    assert_eq!(written.reduction.unwrap().trial_split, Some(t));
}

/// Bad `[[motions]]` are errors naming the field.
#[test]
fn bad_motions_are_errors_naming_the_field() {
    let (scene, cube) = collapse_scene(CollapseSpec {
        particles: 10,
        ..CollapseSpec::default()
    })
    .unwrap();
    let good =
        KinematicMotion::starting_at(cube.gate, 1.0, Velocity6::new(Vec3::zeros(), Vec3::zeros()));
    assert!(good.validate(&scene.world).is_ok());
    let cases = [
        (
            KinematicMotion {
                body: cube.first_particle.index(),
                ..good.clone()
            },
            "motions.body",
        ),
        (
            KinematicMotion {
                body: 1_000_000,
                ..good.clone()
            },
            "motions.body",
        ),
        (
            KinematicMotion {
                times: vec![1.0, 0.5],
                ..good.clone()
            },
            "motions.velocities",
        ),
        (
            KinematicMotion {
                times: vec![1.0, 0.5],
                velocities: vec![[0.0; 6]; 2],
                ..good.clone()
            },
            "motions.times",
        ),
        (
            KinematicMotion {
                times: vec![f64::NAN],
                ..good.clone()
            },
            "motions.times",
        ),
        (
            KinematicMotion {
                velocities: vec![[f64::INFINITY, 0.0, 0.0, 0.0, 0.0, 0.0]],
                ..good.clone()
            },
            "motions.velocities",
        ),
    ];
    for (motion, field) in cases {
        match motion.validate(&scene.world) {
            Err(SceneError::Invalid { field: f, .. }) => assert_eq!(f, field, "{motion:?}"),
            other => panic!("{motion:?}: {other:?}"),
        }
    }
}

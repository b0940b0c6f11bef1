//! Per-material-pair contact parameters (`[[pairs]]` in scene files).

use ndem_scenes::SceneFile;
use ndem_scenes::builders;
use ndem_scenes::file::PairSpec;

/// A sphere sliding at 1 m/s on the floor of a two-material scene.
fn sliding(pair: Option<PairSpec>) -> (SceneFile, f64) {
    let mut file = SceneFile::from_scene(&builders::column(1).unwrap());
    let mut steel = file.materials[0];
    steel.friction = 0.5;
    file.materials.push(steel);
    file.bodies[0].material = 1; // the floor
    file.bodies[1].velocity = [1.0, 0.0, 0.0];
    file.pairs = pair.into_iter().collect();
    let mut scene = file.to_scene().unwrap();
    let mut stepper = scene.stepper().unwrap();
    for _ in 0..20 {
        scene.step(&mut stepper).unwrap();
    }
    let back = SceneFile::from_scene(&scene);
    (back, scene.world.velocities()[1].linear.x)
}

#[test]
fn a_pair_replaces_the_combined_friction() {
    let (_, with_friction) = sliding(None);
    let frictionless = PairSpec {
        materials: [1, 0],
        friction: Some(0.0),
        rolling_resistance: Some(0.0),
        restitution: None,
        damping: None,
        effective_modulus: None,
        linear_stiffness: None,
    };
    let (back, without) = sliding(Some(frictionless));
    println!("vx after 0.1 s: combined friction {with_friction}, pair friction 0: {without}");
    // friction turns sliding into rolling: the ball slows; without it the
    // sliding speed is kept to round-off
    assert!(with_friction < 0.9, "{with_friction}");
    assert!((without - 1.0).abs() <= 1e-12, "{without}");
    // the pair survives the scene's round trip, keyed smaller index first
    assert_eq!(back.pairs.len(), 1);
    assert_eq!(back.pairs[0].materials, [0, 1]);
    assert_eq!(back.pairs[0].friction, Some(0.0));
}

#[test]
fn bad_pairs_name_the_field() {
    let base = SceneFile::from_scene(&builders::column(1).unwrap());
    let pair = PairSpec {
        materials: [0, 0],
        friction: None,
        rolling_resistance: None,
        restitution: None,
        damping: None,
        effective_modulus: None,
        linear_stiffness: None,
    };
    let cases = [
        (
            PairSpec {
                materials: [0, 5],
                ..pair
            },
            "pairs.materials",
        ),
        (
            PairSpec {
                friction: Some(-0.1),
                ..pair
            },
            "friction",
        ),
        (
            PairSpec {
                restitution: Some(1.5),
                ..pair
            },
            "restitution",
        ),
        (
            PairSpec {
                effective_modulus: Some(0.0),
                ..pair
            },
            "effective_modulus",
        ),
        (
            PairSpec {
                linear_stiffness: Some(3e3),
                ..pair
            },
            "pairs.linear_stiffness",
        ),
    ];
    for (p, field) in cases {
        let mut f = base.clone();
        f.pairs = vec![p];
        let e = match f.to_scene() {
            Ok(_) => panic!("accepted a bad pair: {p:?}"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(field), "expected `{field}` in: {e}");
    }
}

/// Found by fuzzing: `run.iterations = 2^64 - 1` hung the solver; more than
/// `MAX_ITERATIONS` sweeps per step is a typed error naming the field.
#[test]
fn iterations_are_capped() {
    let mut scene = builders::column(2).unwrap();
    scene.iterations = usize::MAX;
    let e = match scene.stepper() {
        Ok(_) => panic!("accepted usize::MAX iterations"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("run.iterations"), "{e}");
    scene.iterations = builders::MAX_ITERATIONS;
    assert!(scene.stepper().is_ok());
}

/// Found by fuzzing: `run.impact_iterations = 2^64 - 1` ran
/// an impact solve that never reached its tolerance for ever; it is capped
/// like `run.iterations` while the impact stage is on.
#[test]
fn impact_iterations_are_capped() {
    let mut scene = builders::column(2).unwrap();
    scene.settings.impact_iterations = usize::MAX;
    let e = match scene.stepper() {
        Ok(_) => panic!("accepted usize::MAX impact iterations"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("run.impact_iterations"), "{e}");
    scene.settings.impact_iterations = builders::MAX_ITERATIONS;
    assert!(scene.stepper().is_ok());
    // no impact stage: the field is not used
    scene.settings.impact_stage = false;
    scene.settings.impact_iterations = usize::MAX;
    assert!(scene.stepper().is_ok());
}

/// `ndem run packing --particles 30000 --threads 100000` must not abort
/// the process when the system refuses a thread of the assembly. More than `MAX_THREADS` is a typed error naming `run.threads`,
/// from a built scene and from a scene file; the limit is accepted.
#[test]
fn threads_are_capped() {
    let max = ndem_par::blocks::MAX_THREADS;
    let mut scene = builders::column(2).unwrap();
    for threads in [max + 1, 100_000, usize::MAX] {
        scene.threads = threads;
        let e = match scene.stepper() {
            Ok(_) => panic!("accepted {threads} threads"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains("run.threads"), "{e}");
    }
    scene.threads = max;
    assert!(scene.stepper().is_ok());
    let mut file = SceneFile::from_scene(&builders::column(2).unwrap());
    file.run.threads = 100_000;
    let text = file.to_toml().unwrap();
    let loaded = SceneFile::from_toml(&text)
        .and_then(|f| f.to_scene())
        .unwrap();
    let e = match loaded.stepper() {
        Ok(_) => panic!("accepted 100000 threads from a file"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("run.threads"), "{e}");
}

/// `ndem run packing --particles 1000000000000000` asks for 3.2·10¹⁶
/// bytes; that must not abort the process. A bed the
/// allocator refuses is a typed error naming `particles`.
#[test]
fn a_bed_too_large_to_allocate_is_a_typed_error() {
    for n in [1usize << 50, usize::MAX] {
        let e = match builders::box_packing(n, 0.005, 0.0065, 0.2, 1) {
            Ok(_) => panic!("built a bed of {n} spheres"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains("particles"), "{e}");
    }
    assert_eq!(
        builders::box_packing(10, 0.005, 0.0065, 0.2, 1)
            .unwrap()
            .world
            .len(),
        15
    );
}

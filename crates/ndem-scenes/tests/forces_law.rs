//! `network_forces` (the library behind `ndem forces`) uses the run's own
//! contact law: per-material and per-pair stiffness, the pair's effective
//! modulus and the Hertz radius term. On a rigid beam resting on three
//! supports (statically indeterminate), the forces of a settled run, of
//! `ForceMethod::Pgs` and of `ForceMethod::Compatible` agree with each
//! other and with the analytic split of the weight between the supports.

use ndem_collide::Shape;
use ndem_math::{ContactLaw, Material, PairOverride, Vec3};
use ndem_scenes::builders::{self, Scene};
use ndem_scenes::compatible::{ForceMethod, NetworkForce, network_forces};
use ndem_solve::{HistoryWarmStart, ProjectedGaussSeidel, Stopping};
use ndem_step::{BodyDesc, MaterialId, Stepper, World};

/// Weight of the beam's platform \[N\].
const WEIGHT: f64 = 10.0;
/// Settling time of the runs \[s\].
const SETTLE: f64 = 2.0;

/// The beam scene with its world replaced: supports of materials
/// `materials[1..4]` and shapes `supports` (tops at z = 0.1 m, at
/// x = −0.8, 0, 0.8 m), the platform of `materials[0]`.
fn beam_on(materials: Vec<Material>, supports: [Shape; 3], law: ContactLaw) -> Scene {
    let mut scene = builders::beam().expect("the built-in beam");
    let mut world = World::new(materials, scene.world.gravity).unwrap();
    for (k, (x, shape)) in [-0.8, 0.0, 0.8].into_iter().zip(supports).enumerate() {
        let top = match &shape {
            Shape::Sphere { radius } => *radius,
            Shape::Box { half_extents } => half_extents.z,
            _ => unreachable!(),
        };
        world
            .add_body(BodyDesc::fixed(
                shape,
                MaterialId::from_index(k + 1),
                Vec3::new(x, 0.0, 0.1 - top),
            ))
            .unwrap();
    }
    let platform = scene.world.len() - 1;
    let mut desc = BodyDesc::dynamic(
        Shape::cuboid(Vec3::new(1.0, 0.1, 0.05)).unwrap(),
        MaterialId::from_index(0),
        Vec3::new(0.0, 0.0, 0.15),
    );
    desc.mass = scene.world.mass_properties()[platform];
    world.add_body(desc).unwrap();
    scene.world = world;
    scene.settings.contact_law = law;
    scene
}

/// The vertical force each support (bodies 0, 1, 2) carries.
fn per_support(forces: &[NetworkForce]) -> [f64; 3] {
    let mut out = [0.0; 3];
    for f in forces {
        let (support, sign) = if f.body_a < 3 {
            (f.body_a, -1.0)
        } else {
            (f.body_b, 1.0)
        };
        if support < 3 {
            out[support] += sign * f.force * f.normal.z;
        }
    }
    out
}

/// Runs `scene` for [`SETTLE`] seconds (PGS to 1e-10, history warm start)
/// and returns it with the forces of its last step per support. The solve
/// runs to a tolerance: at the papers' fixed budget (100 sweeps) the
/// self-stress of the indeterminate beam decays by about `Σ_n/W` per
/// sweep (1e-3 here), and the run's forces stay off the elastic split.
fn settle(mut scene: Scene) -> (Scene, [f64; 3]) {
    let pgs = ProjectedGaussSeidel::with_stopping(Stopping::to_tolerance(20_000, 1e-10)).unwrap();
    let mut stepper = Stepper::new(
        scene.settings,
        Box::new(pgs),
        Box::new(HistoryWarmStart::default()),
    )
    .unwrap();
    let mut last = None;
    for _ in 0..(SETTLE / scene.settings.dt).round() as usize {
        last = Some(scene.step(&mut stepper).unwrap());
    }
    let last = last.expect("at least one step");
    println!(
        "the run's last solve: {:?} after {} sweeps",
        last.status, last.iterations
    );
    let forces: Vec<NetworkForce> = stepper
        .contact_forces_iter()
        .map(NetworkForce::from)
        .collect();
    (scene, per_support(&forces))
}

fn largest_difference(a: [f64; 3], b: [f64; 3]) -> f64 {
    (0..3).map(|k| (a[k] - b[k]).abs()).fold(0.0, f64::max)
}

/// Runs the three ways and checks each against `expected` [N], with
/// tolerances [N] on the run against `ForceMethod::Pgs`, the run against
/// `expected` and the compatible forces against `expected`.
fn check(scene: Scene, expected: [f64; 3], tolerance: (f64, f64, f64)) {
    let (settled, run) = settle(scene);
    let (pgs, _) = network_forces(&settled, ForceMethod::Pgs).unwrap();
    let (truss, residual) = network_forces(&settled, ForceMethod::Compatible).unwrap();
    let (pgs, truss) = (per_support(&pgs), per_support(&truss));
    let (run_vs_pgs, truss_vs_exact) = (
        largest_difference(run, pgs),
        largest_difference(truss, expected),
    );
    println!(
        "run {run:?}, pgs {pgs:?}, compatible {truss:?} (residual {residual:?}), analytic {expected:?}: \
         run-pgs {run_vs_pgs:.2e} N, compatible-analytic {truss_vs_exact:.2e} N"
    );
    assert!(run_vs_pgs <= tolerance.0, "run {run:?} against pgs {pgs:?}");
    assert!(
        largest_difference(run, expected) <= tolerance.1,
        "run {run:?}"
    );
    assert!(truss_vs_exact <= tolerance.1, "compatible {truss:?}");
}

/// Linear springs with per-material stiffness 3:1:3 under a rigid beam:
/// equal settlement, forces in the stiffness ratio, 30/7, 10/7, 30/7 N.
#[test]
fn per_material_linear_stiffness_splits_the_weight_three_one_three() {
    let material = |k: f64| Material {
        friction: 0.0,
        rolling_resistance: 0.0,
        linear_stiffness: Some(k),
        ..Material::default()
    };
    let half = Vec3::new(0.05, 0.1, 0.05);
    let cube = || Shape::cuboid(half).unwrap();
    let scene = beam_on(
        vec![material(1e7), material(3e7), material(1e7), material(3e7)],
        [cube(), cube(), cube()],
        ContactLaw::LinearPerMaterial,
    );
    // platform 1e7 in series with 3e7 or 1e7: 1.5e7 and 1e7 (3:2)
    let (outer, middle) = (1.5, 1.0);
    let unit = WEIGHT / (2.0 * outer + middle);
    // measured: run-pgs 1.6e-4 N, run-analytic 9.2e-5 N (the run's solve
    // ends at its 20 000-sweep cap on the supports' 12 coupled corner
    // contacts), compatible-analytic 1.5e-7 N (truss tolerance 1e-8)
    let tolerance = (1.5e-3, 9e-4, 1.5e-6);
    check(
        scene,
        [outer * unit, middle * unit, outer * unit],
        tolerance,
    );
}

/// A `[[pairs]]` linear stiffness overrides the materials' for one pair:
/// the middle support's pair at a third of the outer ones'.
#[test]
fn pair_linear_stiffness_overrides_the_materials() {
    let material = Material {
        friction: 0.0,
        rolling_resistance: 0.0,
        linear_stiffness: Some(3e7),
        ..Material::default()
    };
    let half = Vec3::new(0.05, 0.1, 0.05);
    let cube = || Shape::cuboid(half).unwrap();
    let mut scene = beam_on(
        vec![material; 4],
        [cube(), cube(), cube()],
        ContactLaw::LinearPerMaterial,
    );
    scene
        .world
        .set_pair(
            MaterialId::from_index(0),
            MaterialId::from_index(2),
            PairOverride {
                linear_stiffness: Some(1e7),
                ..PairOverride::default()
            },
        )
        .unwrap();
    let unit = WEIGHT / 7.0;
    // measured: run-pgs and run-analytic 2.6e-3 N (the run's solve ends at
    // its sweep cap, as above), compatible-analytic 5.4e-7 N
    check(
        scene,
        [3.0 * unit, unit, 3.0 * unit],
        (2.5e-2, 2.5e-2, 5e-6),
    );
}

/// Hertz on sphere supports of radius r, 4r, r under the box platform
/// (curvature radius its smallest half extent, 0.05 m): `k_n ∝ √R*`,
/// equal settlement, forces in the ratio of `√R*`. A pair's effective
/// modulus scales `k_n` as `E*` does: the middle pair's `E*` lowered by
/// `√(R*_outer/R*_middle)` gives three equal forces.
#[test]
fn hertz_radius_term_and_pair_modulus_split_the_weight() {
    let material = Material {
        friction: 0.0,
        rolling_resistance: 0.0,
        ..Material::default()
    };
    let r = 0.02;
    let effective = |r: f64| 1.0 / (1.0 / r + 1.0 / 0.05);
    let (outer, middle) = (effective(r).sqrt(), effective(4.0 * r).sqrt());
    let unit = WEIGHT / (2.0 * outer + middle);
    let sphere = |r: f64| Shape::sphere(r).unwrap();
    let supports = || [sphere(r), sphere(4.0 * r), sphere(r)];
    let scene = beam_on(vec![material; 4], supports(), ContactLaw::Hertz);
    // measured: run-pgs 2.9e-9 and 9.5e-9 N, run-analytic 8e-9 N (the run
    // converges in 16 sweeps), compatible-analytic 7.5e-8 N (truss
    // tolerance 1e-8)
    let tolerance = (9e-8, 9e-8, 7e-7);
    check(
        scene,
        [outer * unit, middle * unit, outer * unit],
        tolerance,
    );

    let mut scene = beam_on(vec![material; 4], supports(), ContactLaw::Hertz);
    let e_star = outer / middle / (2.0 * material.plane_strain_compliance());
    let pair = PairOverride {
        effective_modulus: Some(e_star),
        ..PairOverride::default()
    };
    scene
        .world
        .set_pair(MaterialId::from_index(0), MaterialId::from_index(2), pair)
        .unwrap();
    check(scene, [WEIGHT / 3.0; 3], tolerance);
}

//! Compatible contact dynamics on a small cannonball pyramid: the truss
//! step applied to a *rigid* CD solve of the static pile gives the forces of
//! a linear-spring DEM pile at rest, contact by contact, while rigid CD with
//! PGS alone does not.

use ndem_math::{ContactKey, ContactLaw};
use ndem_scenes::builders::{self, CannonballSpec, Scene};
use ndem_scenes::compatible::{StaticSolveSettings, static_solve};
use ndem_smooth::{SmoothLaw, SmoothSettings, SmoothStepper};
use ndem_solve::{TrussSettings, compatible_forces};
use ndem_step::Stepper;
use std::collections::BTreeMap;

fn settle(mut scene: Scene, law: ContactLaw) -> (Scene, Stepper) {
    scene.settings.contact_law = law;
    let mut st = Stepper::with_warm_pgs(scene.settings, 200).unwrap();
    for _ in 0..300 {
        scene.step(&mut st).unwrap();
    }
    (scene, st)
}

#[test]
fn truss_on_rigid_cd_reproduces_the_linear_spring_pile() {
    let scene = builders::cannonball(CannonballSpec {
        base: 4,
        two_species: false,
        seed: 1,
    })
    .unwrap();
    // elastic reference: linear-spring DEM (E lowered to 0.5 GPa for a
    // larger stable step; uniform stiffness, so the compatible answer does
    // not depend on E), dropped and settled
    let mut world = scene.world.clone();
    world.materials[0].youngs_modulus = 5e8;
    let law = SmoothLaw::LinearModulus {
        length: 0.5 * builders::D,
    };
    let dt = 0.1 * ndem_smooth::stepper::critical_time_step(&world, &law);
    let mut dem = SmoothStepper::new(
        SmoothSettings {
            dt,
            law,
            ..SmoothSettings::default()
        },
        &world,
    )
    .unwrap();
    for _ in 0..(0.15 / dt) as usize {
        dem.step(&mut world).unwrap();
    }
    assert!(world.kinetic_energy() < 1e-12, "DEM at rest");
    let reference: BTreeMap<ContactKey, f64> = dem
        .normal_forces(&world)
        .unwrap()
        .into_iter()
        .map(|(c, f)| (c.key, f))
        .collect();

    // step 1: rigid CD, then one converged solve of the static pile
    let (rigid, pgs_run) = settle(scene, ContactLaw::Rigid);
    let pgs_forces: BTreeMap<ContactKey, f64> = pgs_run
        .contact_forces()
        .iter()
        .map(|f| (f.key, f.normal_force))
        .collect();
    let snapshot = static_solve(&rigid, &StaticSolveSettings::default()).unwrap();
    let (problem, _, velocity) = snapshot.step_one().unwrap();
    let stiffness = vec![1.0; problem.contacts().len()];
    let truss = compatible_forces(
        problem,
        &velocity,
        &stiffness,
        &TrussSettings {
            tolerance: 1e-9,
            ..TrussSettings::default()
        },
    )
    .unwrap();
    assert!(truss.converged, "{truss:?}");

    let fmax = reference.values().fold(0.0f64, |a, &b| a.max(b));
    let mut worst_truss = 0.0f64;
    let mut worst_pgs = 0.0f64;
    for (c, f) in problem.contacts().iter().zip(&truss.forces) {
        let expected = reference.get(&c.key).copied().unwrap_or(0.0);
        worst_truss = worst_truss.max((f - expected).abs() / fmax);
        let pgs = pgs_forces.get(&c.key).copied().unwrap_or(0.0);
        worst_pgs = worst_pgs.max((pgs - expected).abs() / fmax);
    }
    eprintln!(
        "largest deviation from DEM over the largest force: truss {worst_truss:.2e}, PGS {worst_pgs:.2e}"
    );
    assert_eq!(
        problem.contacts().len(),
        4 * 14,
        "every sphere in its pocket"
    );
    assert_eq!(reference.len(), 4 * 14, "DEM: every sphere in its pocket");
    assert!(
        worst_truss < 1e-4,
        "truss vs linear-spring DEM: {worst_truss}"
    );
    // rigid CD with PGS picks another member of the (non-unique) solution set
    assert!(
        worst_pgs > 1e-2,
        "rigid CD (PGS) vs linear-spring DEM: {worst_pgs}"
    );
}

#[test]
fn static_solve_rejects_a_bad_margin() {
    let scene = builders::cannonball(CannonballSpec {
        base: 2,
        two_species: false,
        seed: 1,
    })
    .unwrap();
    for margin in [f64::NAN, -1e-6, f64::INFINITY] {
        let settings = StaticSolveSettings {
            margin,
            ..StaticSolveSettings::default()
        };
        match static_solve(&scene, &settings) {
            Err(ndem_scenes::SceneError::Invalid { field, .. }) => assert_eq!(field, "margin"),
            other => panic!(
                "margin {margin}: expected an invalid-field error, got {:?}",
                other.err()
            ),
        }
    }
}

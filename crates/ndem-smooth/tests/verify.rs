//! The smooth-DEM verification cases as tests.

use ndem_smooth::verification::*;
use ndem_smooth::*;

#[test]
fn hertz_impact_matches_analytic_duration_and_rebound() {
    let (t, r) = hertz_impact(0.5).unwrap();
    assert!(t.pass, "{t:?}");
    assert!(r.pass, "{r:?}");
}

#[test]
fn restitution_is_recovered() {
    for e in [0.18, 0.8] {
        for law in [SmoothLaw::Hertz, SmoothLaw::Linear { stiffness: 3000.0 }] {
            let c = restitution(e, law).unwrap();
            assert!(c.pass, "{c:?}");
        }
    }
}

#[test]
fn damping_map_is_monotone_and_inverts() {
    for p in [1.0, 1.5] {
        let mut last = 1.0 + 1e-8;
        for z in [0.0, 0.1, 0.3, 0.6, 1.0, 2.0] {
            let e = restitution_of_damping(z, p);
            assert!(e <= last, "e({z}) = {e} > {last}");
            last = e;
        }
        let z = damping_for_restitution(0.5, p);
        assert!((restitution_of_damping(z, p) - 0.5).abs() < 1e-6);
    }
    // linear law: the classical closed form without the clamp is close
    let e: f64 = 0.8;
    let zeta_closed = -2.0 * e.ln() / (std::f64::consts::PI.powi(2) + e.ln().powi(2)).sqrt();
    let z = damping_for_restitution(e, 1.0);
    assert!(
        (z - zeta_closed).abs() < 0.05 * zeta_closed,
        "{z} vs {zeta_closed}"
    );
}

#[test]
fn column_settles_to_hertz_height() {
    let c = column(10, 1.5).unwrap();
    assert!(c.pass, "{c:?}");
}

#[test]
fn too_large_time_step_is_refused() {
    let world = ndem_step::verification::column_world(3).unwrap();
    let err = SmoothStepper::new(
        SmoothSettings {
            dt: 5e-3,
            ..SmoothSettings::default()
        },
        &world,
    )
    .unwrap_err();
    assert!(matches!(err, SmoothError::TimeStepTooLarge { .. }), "{err}");
    assert!(
        SmoothStepper::new(
            SmoothSettings {
                dt: 0.0,
                ..SmoothSettings::default()
            },
            &world
        )
        .is_err()
    );
}

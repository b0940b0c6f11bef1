//! The smooth-DEM verification cases as tests.

use ndem_smooth::verification::*;
use ndem_smooth::*;
use ndem_step::BodyId;
use ndem_step::MaterialId;

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
    let err = SmoothStepper::new(SmoothSettings::with_dt(5e-3), &world).unwrap_err();
    assert!(matches!(err, SmoothError::TimeStepTooLarge { .. }), "{err}");
    assert!(SmoothStepper::new(SmoothSettings::with_dt(0.0), &world).is_err());
}

/// A sphere resting on a floor, set twisting about the contact normal:
/// below the rolling limit its twist is a damped oscillator `I θ'' = −k_r θ
/// − C_r θ'` (Ai et al. 2011, model C), with `C_r = η_r 2 √(I_r k_r)`,
/// `I_r = I + m r²` about the contact point and `I = 2/5 m r²` about the
/// normal, so its damping ratio is `η_r √(I_r/I) = η_r √(7/2)`. The decay of
/// successive velocity peaks is `exp(−2π ζ/√(1−ζ²))`. Without the dashpot
/// (`η_r = 0`) the twist rings on: the defect that kept smooth-DEM beds
/// moving.
#[test]
fn rolling_dashpot_damps_twist_as_model_c() {
    use ndem_math::{Material, PairProperties, Vec3, Velocity6};
    use ndem_step::World;
    let m = Material::default();
    let r: f64 = 0.005;
    let mut world = World::on_floor(m).unwrap();
    let mass = m.density * 4.0 / 3.0 * std::f64::consts::PI * r.powi(3);
    let kn = PairProperties::combine(&m, r, &m, f64::INFINITY)
        .unwrap()
        .hertz_stiffness();
    let delta = (mass * 9.81 / kn).powf(2.0 / 3.0);
    world
        .add_sphere(r, MaterialId::from_index(0), Vec3::new(0.0, 0.0, r - delta))
        .unwrap();
    let ring = |eta_r: f64| -> Vec<f64> {
        let mut w = world.clone();
        w.set_velocity(
            BodyId::from_index(1),
            Velocity6::new(Vec3::zeros(), Vec3::new(0.0, 0.0, 0.5)),
        )
        .unwrap();
        let crit = stepper::critical_time_step(&w, &SmoothLaw::Hertz);
        let mut st = SmoothStepper::new(
            SmoothSettings {
                dt: 0.01 * crit,
                rolling_damping: eta_r,
                ..SmoothSettings::default()
            },
            &w,
        )
        .unwrap();
        // positive peaks of the twist rate
        let (mut peaks, mut prev, mut rising) = (vec![0.5], 0.5, false);
        for _ in 0..20_000 {
            st.step(&mut w).unwrap();
            let wz = w.velocities()[1].angular.z;
            if rising && wz < prev && prev > 0.0 {
                peaks.push(prev);
            }
            rising = wz > prev;
            prev = wz;
        }
        peaks
    };
    let eta_r = 0.3;
    let zeta: f64 = eta_r * 3.5f64.sqrt();
    let expected = (-2.0 * std::f64::consts::PI * zeta / (1.0 - zeta * zeta).sqrt()).exp();
    let peaks = ring(eta_r);
    assert!(peaks.len() >= 3, "{peaks:?}");
    let ratio = peaks[2] / peaks[1];
    // measured 1.9e-3 relative (the explicit step at Δt = 0.01 Δt_R and
    // the sampling of the peak); bound 10× that
    assert!(
        (ratio / expected - 1.0).abs() < 1.9e-2,
        "peak ratio {ratio} against {expected}"
    );
    // without the dashpot nothing decays
    let undamped = ring(0.0);
    let last = *undamped.last().unwrap();
    assert!(last > 0.49, "undamped peaks {undamped:?}");
}

//! Verification cases of the smooth DEM against the analytic Hertz impact
//! and the Hertz column (added to `cargo xtask verify`).

use crate::{SmoothError, SmoothLaw, SmoothSettings, SmoothStepper};
use ndem_collide::Shape;
use ndem_math::{MassProperties, Material, PairProperties, Vec3, Velocity6};
use ndem_step::verification::{CaseResult, column_height, column_world};
use ndem_step::{BodyDesc, World};

/// Head-on impact of two equal spheres (d = 13 mm, Table 1 material,
/// undamped, no friction, no gravity) at relative speed `v0`: measured
/// contact duration and rebound ratio against Hertz's
/// `t_c = 2.9432 δ_max / v0`, `δ_max = (5 m* v0² / (4 k_n))^{2/5}`
/// (Johnson, Contact Mechanics, §11.4) and rebound 1. Δt = t_c/400;
/// tolerance 2 %.
pub fn hertz_impact(v0: f64) -> Result<(CaseResult, CaseResult), SmoothError> {
    let material = Material {
        restitution: 1.0,
        friction: 0.0,
        rolling_resistance: 0.0,
        ..Material::default()
    };
    let r = 0.0065;
    let mut world = World::new(vec![material], Vec3::zeros())?;
    world.add_body(
        BodyDesc::dynamic(Shape::sphere(r)?, 0, Vec3::new(-r - 1e-4, 0.0, 0.0))
            .with_velocity(Velocity6::new(Vec3::new(0.5 * v0, 0.0, 0.0), Vec3::zeros())),
    )?;
    world.add_body(
        BodyDesc::dynamic(Shape::sphere(r)?, 0, Vec3::new(r + 1e-4, 0.0, 0.0)).with_velocity(
            Velocity6::new(Vec3::new(-0.5 * v0, 0.0, 0.0), Vec3::zeros()),
        ),
    )?;
    let m = MassProperties::solid_sphere(material.density, r)?.mass;
    let k = PairProperties::combine(&material, r, &material, r)?.hertz_stiffness();
    let m_eff = 0.5 * m;
    let dmax = (5.0 * m_eff * v0 * v0 / (4.0 * k)).powf(0.4);
    let tc = 2.9432 * dmax / v0;
    let dt = tc / 400.0;
    let mut st = SmoothStepper::new(
        SmoothSettings {
            dt,
            ..SmoothSettings::default()
        },
        &world,
    )?;
    let (mut start, mut end) = (None, None);
    for k in 0..100_000 {
        let s = st.step(&mut world)?;
        if s.contacts > 0 && start.is_none() {
            start = Some(k);
        }
        if s.contacts == 0 && start.is_some() {
            end = Some(k);
            break;
        }
    }
    let duration = match (start, end) {
        (Some(a), Some(b)) => (b - a) as f64 * dt,
        _ => f64::NAN,
    };
    let rebound = (world.velocities()[1].linear.x - world.velocities()[0].linear.x) / v0;
    Ok((
        CaseResult {
            name: format!("DEM Hertz impact duration, v0 = {v0} m/s"),
            measured: duration,
            expected: tc,
            tolerance: 0.02,
            absolute: false,
            pass: (duration - tc).abs() <= 0.02 * tc,
            note: "t_c = 2.9432 delta_max / v0".into(),
        },
        CaseResult {
            name: format!("DEM Hertz impact rebound (undamped), v0 = {v0} m/s"),
            measured: rebound,
            expected: 1.0,
            tolerance: 0.02,
            absolute: false,
            pass: (rebound - 1.0).abs() <= 0.02,
            note: "relative separation speed / approach speed".into(),
        },
    ))
}

/// A sphere hitting a plane at 1 m/s (no gravity) with restitution `e`:
/// the damping from [`crate::damping_for_restitution`] must reproduce `e`
/// within 2 %, for the Hertz and the linear law.
pub fn restitution(e: f64, law: SmoothLaw) -> Result<CaseResult, SmoothError> {
    let material = Material {
        restitution: e,
        friction: 0.0,
        rolling_resistance: 0.0,
        ..Material::default()
    };
    let r = 0.0065;
    let mut world = World::new(vec![material], Vec3::zeros())?;
    world.add_body(BodyDesc::fixed(
        Shape::half_space(Vec3::z())?,
        0,
        Vec3::zeros(),
    ))?;
    world.add_body(
        BodyDesc::dynamic(Shape::sphere(r)?, 0, Vec3::new(0.0, 0.0, r + 1e-4))
            .with_velocity(Velocity6::new(Vec3::new(0.0, 0.0, -1.0), Vec3::zeros())),
    )?;
    let crit = crate::stepper::critical_time_step(&world, &law);
    let mut st = SmoothStepper::new(
        SmoothSettings {
            dt: crit / 100.0,
            law,
            ..SmoothSettings::default()
        },
        &world,
    )?;
    let mut touched = false;
    for _ in 0..1_000_000 {
        let s = st.step(&mut world)?;
        touched |= s.contacts > 0;
        if touched && s.contacts == 0 {
            break;
        }
    }
    let measured = world.velocities()[1].linear.z;
    Ok(CaseResult {
        name: format!(
            "DEM restitution e={e} ({})",
            match law {
                SmoothLaw::Hertz => "Hertz",
                SmoothLaw::Linear { .. } | SmoothLaw::LinearModulus { .. } => "linear",
            }
        ),
        measured,
        expected: e,
        tolerance: 0.02,
        absolute: false,
        pass: (measured - e).abs() <= 0.02 * e,
        note: "rebound speed / impact speed".into(),
    })
}

/// A 1D column of `n` spheres (Table 1 material) settled by the smooth DEM
/// for `duration` seconds at 0.2 of the critical time step: ε_l against the
/// analytic Hertz height (tolerance 0.1 %).
pub fn column(n: usize, duration: f64) -> Result<CaseResult, SmoothError> {
    let mut world = column_world(n)?;
    let crit = crate::stepper::critical_time_step(&world, &SmoothLaw::Hertz);
    let dt = 0.2 * crit;
    let mut st = SmoothStepper::new(
        SmoothSettings {
            dt,
            ..SmoothSettings::default()
        },
        &world,
    )?;
    for _ in 0..(duration / dt).round() as usize {
        st.step(&mut world)?;
    }
    let r = 0.0065;
    let l = column_height(n, r, &world.materials[0], 9.81)?;
    let eps = (l - (world.positions()[n].z + r)) / l;
    Ok(CaseResult {
        name: format!("DEM column N={n} settled height"),
        measured: eps,
        expected: 0.0,
        tolerance: 1e-3,
        absolute: true,
        pass: eps.abs() <= 1e-3,
        note: "eps_l = (l - l_DEM)/l".into(),
    })
}

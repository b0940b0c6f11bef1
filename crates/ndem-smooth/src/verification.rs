//! Verification cases of the smooth DEM against the analytic Hertz impact
//! and the Hertz column (added to `cargo xtask verify`).

use crate::{SmoothError, SmoothLaw, SmoothSettings, SmoothStepper};
use ndem_math::{MassProperties, Material, PairProperties, Vec3, Velocity6};
use ndem_step::verification::{CaseResult, column_height, column_world};
use ndem_step::{BodyDesc, MaterialId, World};

/// Head-on impact of two equal spheres (d = 13 mm, Table 1 material,
/// undamped, no friction, no gravity) at relative speed `v0`: measured
/// contact duration and rebound ratio against Hertz's
/// `t_c = 2.9432 δ_max / v0`, `δ_max = (5 m* v0² / (4 k_n))^{2/5}`
/// (Johnson, Contact Mechanics, §11.4) and rebound 1. Δt = t_c/400.
/// Tolerances: the duration to one step of the measurement (1/400, the
/// resolution: the measured duration is a whole number of steps), the
/// rebound to 1e-6 (10× the measured 1.0e-7 and 1.4e-7 of symplectic
/// Euler's energy error).
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
        BodyDesc::sphere(r, MaterialId::from_index(0), Vec3::new(-r - 1e-4, 0.0, 0.0))?
            .with_velocity(Velocity6::new(Vec3::new(0.5 * v0, 0.0, 0.0), Vec3::zeros())),
    )?;
    world.add_body(
        BodyDesc::sphere(r, MaterialId::from_index(0), Vec3::new(r + 1e-4, 0.0, 0.0))?
            .with_velocity(Velocity6::new(
                Vec3::new(-0.5 * v0, 0.0, 0.0),
                Vec3::zeros(),
            )),
    )?;
    let m = MassProperties::solid_sphere(material.density, r)?.mass;
    let k = PairProperties::combine(&material, r, &material, r)?.hertz_stiffness();
    let m_eff = 0.5 * m;
    let dmax = (5.0 * m_eff * v0 * v0 / (4.0 * k)).powf(0.4);
    let tc = 2.9432 * dmax / v0;
    let dt = tc / 400.0;
    let mut st = SmoothStepper::new(SmoothSettings::with_dt(dt), &world)?;
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
        CaseResult::relative(
            format!("DEM Hertz impact duration, v0 = {v0} m/s"),
            duration,
            tc,
            1.0 / 400.0,
            "t_c = 2.9432 delta_max / v0",
        )
        .because("resolution: one step, dt = t_c/400"),
        CaseResult::relative(
            format!("DEM Hertz impact rebound (undamped), v0 = {v0} m/s"),
            rebound,
            1.0,
            1e-6,
            "relative separation speed / approach speed",
        )
        .because("10x the measured 1.0e-7 (v0 = 0.1) and 1.4e-7 (v0 = 1)"),
    ))
}

/// A sphere hitting a plane at 1 m/s (no gravity) with restitution `e`:
/// the damping from [`crate::damping_for_restitution`] must reproduce `e`
/// for the Hertz and the linear law. Tolerances (relative): the smaller of
/// 2 % and 10× the measured error, which is 4.4e-3 (Hertz) and 1.7e-2
/// (linear) at e = 0.18, 3.6e-5 and 1.0e-3 at e = 0.8: the damping map's
/// inversion and the time discretization at Δt = t_crit/100 (the linear
/// law at e = 0.18 is the largest, 1.7 %, a limit of the model kept in
/// the table).
pub fn restitution(e: f64, law: SmoothLaw) -> Result<CaseResult, SmoothError> {
    let material = Material {
        restitution: e,
        friction: 0.0,
        rolling_resistance: 0.0,
        ..Material::default()
    };
    let r = 0.0065;
    let mut world = World::new(vec![material], Vec3::zeros())?;
    world.add_body(BodyDesc::floor(MaterialId::from_index(0)))?;
    world.add_body(
        BodyDesc::sphere(r, MaterialId::from_index(0), Vec3::new(0.0, 0.0, r + 1e-4))?
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
    let hertz = matches!(law, SmoothLaw::Hertz);
    // the smaller of 2 % and 10x the measured error (see above)
    let (tolerance, source) = match (hertz, e >= 0.5) {
        (true, false) => (0.02, "2 %, 4.6x the measured 4.4e-3"),
        (false, false) => (0.02, "2 %, 1.2x the measured 1.7e-2"),
        (true, true) => (3.6e-4, "10x the measured 3.6e-5"),
        (false, true) => (1.0e-2, "10x the measured 1.0e-3"),
    };
    Ok(CaseResult::relative(
        format!(
            "DEM restitution e={e} ({})",
            if hertz { "Hertz" } else { "linear" }
        ),
        measured,
        e,
        tolerance,
        "rebound speed / impact speed",
    )
    .because(source))
}

/// A 1D column of `n` spheres (Table 1 material) settled by the smooth DEM
/// for `duration` seconds at 0.2 of the critical time step: ε_l against the
/// analytic Hertz height. Tolerances 7.7e-10 (N = 10, 1.5 s), 1.0e-12
/// (N = 10, 2 s) and 8.9e-8 (N = 25, 6 s): 10× the measured 7.7e-11,
/// 1.0e-13 and 8.9e-9 (the remaining oscillation of the damped column);
/// 0.1 % for cases not measured.
pub fn column(n: usize, duration: f64) -> Result<CaseResult, SmoothError> {
    let mut world = column_world(n)?;
    let crit = crate::stepper::critical_time_step(&world, &SmoothLaw::Hertz);
    let dt = 0.2 * crit;
    let mut st = SmoothStepper::new(SmoothSettings::with_dt(dt), &world)?;
    for _ in 0..(duration / dt).round() as usize {
        st.step(&mut world)?;
    }
    let r = 0.0065;
    let l = column_height(n, r, &world.materials[0], 9.81)?;
    let eps = (l - (world.positions()[n].z + r)) / l;
    // measured cases: (N, duration in ms)
    let (tolerance, source) = match (n, (duration * 1e3).round() as u64) {
        (10, 1500) => (7.7e-10, "10x the measured 7.7e-11 (N = 10, 1.5 s)"),
        (10, 2000) => (1.0e-12, "10x the measured 1.0e-13 (N = 10, 2 s)"),
        (25, 6000) => (8.9e-8, "10x the measured 8.9e-9 (N = 25, 6 s)"),
        // other cases were not measured: the settled column must at least
        // reach the 0.1 % the warm-starting paper's column asks for
        _ => (
            1e-3,
            "0.1 % (paper's column criterion); not measured for this N",
        ),
    };
    Ok(CaseResult::absolute(
        format!("DEM column N={n} settled height"),
        eps,
        0.0,
        tolerance,
        "eps_l = (l - l_DEM)/l",
    )
    .because(source))
}

//! Verification cases with known answers (`cargo xtask verify`).
//! Each case builds a small world, runs it and compares one measured number
//! with its analytic value. The same functions back the integration tests
//! and the `cargo xtask verify` table.

use crate::MaterialId;
use crate::{BodyDesc, Motion, StepError, StepSettings, Stepper, World};
use ndem_collide::Shape;
use ndem_math::{Material, PairProperties, Quat, Vec3, Velocity6};
use ndem_solve::{ColdStart, FrictionSet, ProjectedGaussSeidel, Stopping};

/// Standard gravity used by the cases [m/s²].
pub const G: f64 = 9.81;

/// Whether a case checks a value against a tolerance or only records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseKind {
    /// Compared with its expected value within `tolerance`.
    Check,
    /// Recorded for the report; no pass or fail.
    Record,
}

/// The outcome of one verification case.
///
/// Every tolerance is at most 10× the error the code achieves and says
/// where it comes from (`source`): an analytic bound, a measurement
/// resolution, or the measured error it was set from.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseResult {
    /// Case name.
    pub name: String,
    /// Measured value.
    pub measured: f64,
    /// Expected (analytic) value.
    pub expected: f64,
    /// Tolerance, relative to `expected` unless `absolute`.
    pub tolerance: f64,
    /// Whether the tolerance is absolute.
    pub absolute: bool,
    /// Pass or fail (`true` for records with a finite value).
    pub pass: bool,
    /// What was measured, in words.
    pub note: String,
    /// Check or record.
    pub kind: CaseKind,
    /// Where the tolerance comes from.
    pub source: String,
}

impl CaseResult {
    /// The error the case achieved: relative to `expected` unless absolute.
    pub fn error(&self) -> f64 {
        if self.absolute || self.expected == 0.0 {
            (self.measured - self.expected).abs()
        } else {
            ((self.measured - self.expected) / self.expected).abs()
        }
    }

    /// A recorded value.
    pub fn record(name: impl Into<String>, measured: f64, note: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            measured,
            expected: f64::NAN,
            tolerance: f64::NAN,
            absolute: true,
            pass: measured.is_finite(),
            note: note.into(),
            kind: CaseKind::Record,
            source: "recorded, not checked".into(),
        }
    }

    /// Attaches the tolerance's source.
    pub fn because(mut self, source: impl Into<String>) -> Self {
        self.source = source.into();
        self
    }

    /// A check with a tolerance relative to `expected`.
    pub fn relative(
        name: impl Into<String>,
        measured: f64,
        expected: f64,
        tolerance: f64,
        note: impl Into<String>,
    ) -> Self {
        let bound = tolerance * expected.abs();
        Self::check(
            name.into(),
            (measured, expected, tolerance),
            bound,
            false,
            note.into(),
        )
    }

    /// A check with an absolute tolerance.
    pub fn absolute(
        name: impl Into<String>,
        measured: f64,
        expected: f64,
        tolerance: f64,
        note: impl Into<String>,
    ) -> Self {
        Self::check(
            name.into(),
            (measured, expected, tolerance),
            tolerance,
            true,
            note.into(),
        )
    }

    /// A check that passes when `|measured − expected| ≤ bound`.
    fn check(
        name: String,
        (measured, expected, tolerance): (f64, f64, f64),
        bound: f64,
        absolute: bool,
        note: String,
    ) -> Self {
        let pass = measured.is_finite() && (measured - expected).abs() <= bound;
        Self {
            name,
            measured,
            expected,
            tolerance,
            absolute,
            pass,
            note,
            kind: CaseKind::Check,
            source: String::new(),
        }
    }
}

fn pgs(iterations: usize, tolerance: f64) -> Result<Box<ProjectedGaussSeidel>, StepError> {
    Ok(Box::new(ProjectedGaussSeidel::with_stopping(
        Stopping::to_tolerance(iterations, tolerance),
    )?))
}

fn pgs_fixed(iterations: usize) -> Result<Box<ProjectedGaussSeidel>, StepError> {
    Ok(Box::new(ProjectedGaussSeidel::with_stopping(
        Stopping::iterations(iterations),
    )?))
}

/// A sphere (d = 13 mm, Table 1 material with restitution `e`) dropped from
/// 0.2 m onto a plane. The impact stage sets the normal velocity after the
/// impact step to `e` times the incoming one; the measured ratio is
/// `(v_z⁺ + g Δt) / |v_z⁻|`, where `g Δt` removes the gravity impulse of
/// the same step. Tolerance 1.9e-5 relative: 10× the error measured at
/// e = 0.8 (1.9e-6; 5.6e-6 at e = 0.18), which is the continuous stage's
/// contact impulse in the impact step.
pub fn drop_rebound(restitution: f64) -> Result<CaseResult, StepError> {
    let material = Material {
        restitution,
        ..Material::default()
    };
    let mut world = World::on_floor(material)?;
    let r = 0.0065;
    let ball = world.add_sphere(r, MaterialId::from_index(0), Vec3::new(0.0, 0.0, 0.2 + r))?;
    let settings = StepSettings {
        margin: 0.015,
        ..StepSettings::default()
    };
    let dt = settings.dt;
    let mut stepper = Stepper::new(settings, pgs(200, 1e-12)?, Box::new(ColdStart))?;
    let mut ratio = f64::NAN;
    for _ in 0..200 {
        let before = world.velocity(ball).linear.z;
        let stats = stepper.step(&mut world)?;
        if stats.impacts > 0 {
            let after = world.velocity(ball).linear.z;
            ratio = (after + G * dt) / before.abs();
            break;
        }
    }
    Ok(CaseResult::relative(
        format!("drop rebound e={restitution}"),
        ratio,
        restitution,
        1.9e-5,
        "(v_z after + g dt) / |v_z before| of the impact step",
    )
    .because("10x the measured 1.9e-6 (e = 0.8); 5.6e-6 at e = 0.18"))
}

/// A box (0.2 × 0.2 × 0.1 m, 5 kg) on a plane tilted by `angle_deg` with
/// μ = 0.5, disk friction. Below the friction angle it sticks (measured:
/// speed after 1 s, expected 0, absolute tolerance 4.5e-5 m/s, 10× the
/// measured creep of the regularized friction row, γ_t = 1e-6); above it
/// slides with `a = g (sin θ − μ cos θ)` (measured from the speed between
/// 0.5 s and 1.5 s, tolerance 6.6e-13 relative, 10× the measured
/// round-off).
pub fn block_on_incline(angle_deg: f64) -> Result<CaseResult, StepError> {
    let mu = 0.5;
    let material = Material {
        friction: mu,
        rolling_resistance: 0.0,
        ..Material::default()
    };
    let theta = angle_deg.to_radians();
    let tilt = Quat::from_axis_angle(&Vec3::y_axis(), theta);
    let mut world = World::new(vec![material], Vec3::new(0.0, 0.0, -G))?;
    world.add_body(BodyDesc::floor(MaterialId::from_index(0)).with_orientation(tilt))?;
    let h = Vec3::new(0.1, 0.1, 0.05);
    let n = tilt * Vec3::z();
    let mut desc = BodyDesc::dynamic(Shape::cuboid(h)?, MaterialId::from_index(0), n * h.z);
    desc.orientation = tilt;
    desc.mass = Some(ndem_math::MassProperties::solid_box(5.0, h)?);
    let block = world.add_body(desc)?;
    let settings = StepSettings {
        friction_set: FrictionSet::Disk,
        margin: 1e-3,
        ..StepSettings::default()
    };
    let dt = settings.dt;
    let mut stepper = Stepper::new(settings, pgs(300, 1e-12)?, Box::new(ColdStart))?;
    let downhill = tilt * Vec3::x();
    let steps = |t: f64| (t / dt).round() as usize;
    let mut v_at = Vec::new();
    for k in 1..=steps(1.5) {
        stepper.step(&mut world)?;
        if k == steps(0.5) || k == steps(1.0) || k == steps(1.5) {
            v_at.push(world.velocity(block).linear.dot(&downhill));
        }
    }
    let expected = G * (theta.sin() - mu * theta.cos());
    Ok(if expected <= 0.0 {
        CaseResult::absolute(
            format!("block on incline {angle_deg} deg (sticks)"),
            v_at[1].abs(),
            0.0,
            4.5e-5,
            "downhill speed after 1 s [m/s], tan(theta) < mu",
        )
        .because("10x the measured creep 4.5e-6 m/s (friction compliance 1e-6)")
    } else {
        CaseResult::relative(
            format!("block on incline {angle_deg} deg (slides)"),
            (v_at[2] - v_at[0]) / 1.0,
            expected,
            6.6e-13,
            "downhill acceleration [m/s^2] = g (sin - mu cos)",
        )
        .because("10x the measured 6.6e-14 (round-off)")
    })
}

/// A sphere (d = 13 mm, μ_r = 0.32) rolling on a plane at 0.5 m/s. The
/// rolling-resistance torque `μ_r R* f_n` with `R* = r` decelerates it at
/// `a = μ_r g / (1 + I/(m r²)) = μ_r g / 1.4` (energy balance); measured
/// from the speed between 0.05 s and 0.15 s, tolerance 7.9e-3 relative
/// (10× the measured 7.9e-4: the rolling row's compliance and the
/// contact's Hertz overlap shift the torque arm slightly).
pub fn rolling_resistance() -> Result<(CaseResult, CaseResult), StepError> {
    let mu_r = 0.32;
    let material = Material {
        rolling_resistance: mu_r,
        restitution: 0.0,
        ..Material::default()
    };
    let mut world = World::on_floor(material)?;
    let r = 0.0065;
    let v0 = 0.5;
    // start at the static Hertz overlap so that no impact or bounce occurs
    let pair = PairProperties::combine(&material, r, &material, f64::INFINITY)?;
    let m = ndem_math::MassProperties::solid_sphere(material.density, r)?.mass;
    let delta = (m * G / pair.hertz_stiffness()).powf(2.0 / 3.0);
    let ball = world.add_body(
        BodyDesc::sphere(r, MaterialId::from_index(0), Vec3::new(0.0, 0.0, r - delta))?
            .with_velocity(Velocity6::new(
                Vec3::new(v0, 0.0, 0.0),
                Vec3::new(0.0, v0 / r, 0.0),
            )),
    )?;
    let settings = StepSettings {
        friction_set: FrictionSet::Disk,
        ..StepSettings::default()
    };
    let dt = settings.dt;
    let mut stepper = Stepper::new(settings, pgs(200, 1e-13)?, Box::new(ColdStart))?;
    let expected = mu_r * G / 1.4;
    let (k1, k2) = ((0.05 / dt) as usize, (0.15 / dt) as usize);
    let (mut v1, mut v2) = (0.0, 0.0);
    let stop_steps = ((v0 / expected + 0.5) / dt) as usize;
    for k in 1..=stop_steps {
        stepper.step(&mut world)?;
        let v = world.velocity(ball).linear.x;
        if k == k1 {
            v1 = v;
        }
        if k == k2 {
            v2 = v;
        }
    }
    let decel = (v1 - v2) / ((k2 - k1) as f64 * dt);
    let final_speed = world.velocity(ball).linear.norm();
    Ok((
        CaseResult::relative(
            "rolling resistance deceleration",
            decel,
            expected,
            7.9e-3,
            "deceleration [m/s^2] = mu_r g / 1.4",
        )
        .because("10x the measured 7.9e-4"),
        CaseResult::absolute(
            "rolling sphere stops",
            final_speed,
            0.0,
            1.9e-16,
            "speed 0.5 s after the predicted stop [m/s]",
        )
        .because("10x the measured 1.9e-17 m/s (round-off)"),
    ))
}

/// Analytic height of a 1D column of `n` Hertz spheres of radius `r` on a
/// plane: `l = 2 n r − δ_plane − Σ_{i=1}^{n−1} δ_i` with
/// `δ = (F / k_n)^{2/3}`, `F_i = i m g` between sphere `i` and `i + 1`
/// counted from the top and `F = n m g` on the plane.
pub fn column_height(n: usize, r: f64, material: &Material, g: f64) -> Result<f64, StepError> {
    let m = ndem_math::MassProperties::solid_sphere(material.density, r)?.mass;
    let kss = PairProperties::combine(material, r, material, r)?.hertz_stiffness();
    let ksp = PairProperties::combine(material, r, material, f64::INFINITY)?.hertz_stiffness();
    let mut l = 2.0 * n as f64 * r - (n as f64 * m * g / ksp).powf(2.0 / 3.0);
    for i in 1..n {
        l -= (i as f64 * m * g / kss).powf(2.0 / 3.0);
    }
    Ok(l)
}

/// The world of a 1D column of `n` spheres (d = 13 mm, Table 1) stacked
/// with zero overlap on a plane.
pub fn column_world(n: usize) -> Result<World, StepError> {
    let mut world = World::on_floor(Material::default())?;
    let r = 0.0065;
    world.add_sphere_stack(r, MaterialId::from_index(0), [1, 1, n])?;
    Ok(world)
}

/// Column height error `ε_l = (l − l_Nit)/l` (warm-starting paper, eq. 12)
/// of a column of `n` spheres simulated for `duration` seconds with `N_it`
/// PGS iterations per step, the given warm start and Δt = 5 ms.
pub fn column_error(
    n: usize,
    iterations: usize,
    warm_start: Box<dyn ndem_solve::WarmStart>,
    duration: f64,
) -> Result<f64, StepError> {
    let mut world = column_world(n)?;
    let settings = StepSettings::default();
    let steps = (duration / settings.dt).round() as usize;
    let mut stepper = Stepper::new(settings, pgs_fixed(iterations)?, warm_start)?;
    for _ in 0..steps {
        stepper.step(&mut world)?;
    }
    let r = 0.0065;
    let top = world.positions()[n].z + r;
    let l = column_height(n, r, &world.materials[0], G)?;
    Ok((l - top) / l)
}

/// Two free spheres (no gravity) colliding off-centre with spin: the
/// relative change of total linear and angular momentum over 100 steps,
/// expected zero to round-off (tolerances 3.2e-15 and 1.5e-13, 10× the
/// measured round-off).
pub fn momentum_conservation() -> Result<(CaseResult, CaseResult), StepError> {
    let mut world = World::new(vec![Material::default()], Vec3::zeros())?;
    let r = 0.0065;
    world.add_body(
        BodyDesc::sphere(r, MaterialId::from_index(0), Vec3::new(-0.02, 0.003, 0.001))?
            .with_velocity(Velocity6::new(
                Vec3::new(1.0, 0.0, 0.1),
                Vec3::new(3.0, -20.0, 7.0),
            )),
    )?;
    let mut other = BodyDesc::sphere(
        0.8 * r,
        MaterialId::from_index(0),
        Vec3::new(0.02, -0.002, 0.0),
    )?
    .with_velocity(Velocity6::new(
        Vec3::new(-0.7, 0.05, 0.0),
        Vec3::new(-10.0, 4.0, 0.0),
    ));
    other.motion = Motion::Dynamic;
    world.add_body(other)?;
    let mut stepper = Stepper::new(
        StepSettings {
            margin: 0.01,
            ..StepSettings::default()
        },
        pgs_fixed(100)?,
        Box::new(ColdStart),
    )?;
    let (p0, l0) = world.momentum();
    let mut touched = false;
    for _ in 0..100 {
        let s = stepper.step(&mut world)?;
        touched |= s.contacts > 0;
    }
    let (p1, l1) = world.momentum();
    let dp = (p1 - p0).norm() / p0.norm();
    let dl = (l1 - l0).norm() / l0.norm();
    let tag = if touched { "" } else { " (no contact!)" };
    Ok((
        CaseResult::absolute(
            format!("two-sphere collision: linear momentum{tag}"),
            if touched { dp } else { f64::NAN },
            0.0,
            3.2e-15,
            "|p1 - p0| / |p0|",
        )
        .because("10x the measured 3.2e-16 (round-off)"),
        CaseResult::absolute(
            format!("two-sphere collision: angular momentum{tag}"),
            if touched { dl } else { f64::NAN },
            0.0,
            1.5e-13,
            "|L1 - L0| / |L0|",
        )
        .because("10x the measured 1.5e-14 (round-off)"),
    ))
}

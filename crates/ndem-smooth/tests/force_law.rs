//! The stepper's contact force against the textbook formulas of
//! `docs/theory.md` ("Smooth DEM baseline"), evaluated independently here
//! from the materials, radii, masses and velocities: the stepper forms its
//! stiffnesses from tabulated pair factors and per-pair invariants cached
//! at each Verlet rebuild, so this checks that those factorizations are the
//! documented law (Hertz-Mindlin and linear, sticking and sliding, the
//! tangential spring carried and rotated into the next step's tangent
//! plane, and the rolling model C).
//!
//! Tolerance: both sides are a few dozen floating-point operations on the
//! same inputs in another order (and `δ^{3/2}` by `powf` here), so they
//! agree to round-off relative to the sum of the magnitudes of the terms
//! that form each quantity. Over 2 × 256 cases the largest differences,
//! so measured, were 1.4e-13 (force), 2.4e-13 (tangential spring),
//! 1.6e-13 (rolling moment) and 1.6e-13 (angular velocity change); the
//! bound 2e-12 is within 10× of the largest.

use ndem_collide::Shape;
use ndem_math::{Material, PairProperties, Vec3, Velocity6};
use ndem_smooth::*;
use ndem_step::{BodyDesc, World};
use proptest::prelude::*;

/// Relative agreement required (see the module doc).
const TOLERANCE: f64 = 2e-12;

/// One body's draw: radius, material, linear and angular velocity.
#[derive(Debug, Clone)]
struct Body {
    radius: f64,
    material: Material,
    velocity: Velocity6,
}

fn vec3(range: f64) -> impl Strategy<Value = Vec3> {
    (-range..range, -range..range, -range..range).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

fn body() -> impl Strategy<Value = Body> {
    (
        0.002..0.02f64,
        1000.0..8000.0f64,
        1e6..1e9f64,
        0.1..0.45f64,
        0.1..0.9f64,
        0.1..1.0f64,
        0.0..0.3f64,
        vec3(0.1),
        vec3(20.0),
    )
        .prop_map(|(radius, density, e, nu, rest, mu, mu_r, v, w)| Body {
            radius,
            material: Material {
                density,
                youngs_modulus: e,
                poisson_ratio: nu,
                restitution: rest,
                friction: mu,
                rolling_resistance: mu_r,
                ..Material::default()
            },
            velocity: Velocity6::new(v, w),
        })
}

/// Two spheres, a (body 0) above b (body 1) along `axis`, overlapping by
/// `overlap`, no gravity.
fn pair(a: &Body, b: &Body, axis: Vec3, overlap: f64) -> World {
    let mut w = World::new(vec![a.material, b.material], Vec3::zeros()).unwrap();
    let xa = axis.normalize() * (a.radius + b.radius - overlap);
    w.add_body(
        BodyDesc::dynamic(Shape::sphere(a.radius).unwrap(), 0, xa).with_velocity(a.velocity),
    )
    .unwrap();
    w.add_body(
        BodyDesc::dynamic(Shape::sphere(b.radius).unwrap(), 1, Vec3::zeros())
            .with_velocity(b.velocity),
    )
    .unwrap();
    w
}

/// One contact's force on a, moment on a about the contact and new
/// history, with the sums of the magnitudes of the terms that form each
/// (what round-off is relative to: a tangential velocity of pure round-off
/// leaves a spring of pure round-off).
struct Expected {
    force: Vec3,
    force_scale: f64,
    moment: Vec3,
    moment_scale: f64,
    history: ContactHistory,
    spring_scale: f64,
    rolling_scale: f64,
}

/// [`damping_for_restitution`], remembered: it integrates an impact per
/// bisection step, and each case asks for it twice.
fn damping(e: f64, p: f64) -> f64 {
    thread_local! {
        static SEEN: std::cell::RefCell<Vec<(f64, f64, f64)>> = const {
            std::cell::RefCell::new(Vec::new())
        };
    }
    SEEN.with_borrow_mut(|seen| {
        if let Some(&(_, _, z)) = seen.iter().find(|s| s.0 == e && s.1 == p) {
            return z;
        }
        let z = damping_for_restitution(e, p);
        seen.push((e, p, z));
        z
    })
}

/// [`Expected`] as `docs/theory.md` writes it, for the world's current
/// state and the history `old` the last step left; `None` when the
/// spheres do not overlap.
fn textbook(
    w: &World,
    law: SmoothLaw,
    rolling: bool,
    dt: f64,
    old: ContactHistory,
) -> Option<Expected> {
    let xi_old = old.xi;
    let (ia, ib) = (0, 1);
    let (xa, xb) = (w.positions()[ia], w.positions()[ib]);
    let (ra, rb) = (
        w.shapes()[ia].sphere_radius().unwrap(),
        w.shapes()[ib].sphere_radius().unwrap(),
    );
    let (mat_a, mat_b) = (w.materials[0], w.materials[1]);
    let d = xa - xb;
    let n = d / d.norm();
    let delta = ra + rb - d.norm();
    if delta <= 0.0 {
        return None;
    }
    let point = xb + n * (rb - 0.5 * delta);
    let (arm_a, arm_b) = (point - xa, point - xb);
    let (va, vb) = (w.velocities()[ia], w.velocities()[ib]);
    let u = va.linear + va.angular.cross(&arm_a) - vb.linear - vb.angular.cross(&arm_b);
    let un = n.dot(&u);
    let ut = u - n * un;
    let props = PairProperties::combine(&mat_a, ra, &mat_b, rb).unwrap();
    let r_star = 1.0 / (1.0 / ra + 1.0 / rb);
    let (ma, mb) = (
        w.mass_properties()[ia].unwrap().mass,
        w.mass_properties()[ib].unwrap().mass,
    );
    let m_star = ma * mb / (ma + mb);
    let p = law.exponent();
    let zeta = damping(props.restitution, p);
    let (kn, kt) = match law {
        SmoothLaw::Hertz => {
            let shear = |m: &Material| {
                2.0 * (2.0 - m.poisson_ratio) * (1.0 + m.poisson_ratio) / m.youngs_modulus
            };
            let g_star = 1.0 / (shear(&mat_a) + shear(&mat_b));
            (
                4.0 / 3.0 * props.effective_modulus * r_star.sqrt(),
                8.0 * g_star * (r_star * delta).sqrt(),
            )
        }
        SmoothLaw::Linear { stiffness } => (stiffness, 2.0 / 7.0 * stiffness),
        SmoothLaw::LinearModulus { length } => {
            let kn = props.effective_modulus * length;
            (kn, 2.0 / 7.0 * kn)
        }
    };
    let eta = zeta * (m_star * kn).sqrt();
    let f_n = (kn * delta.powf(p) - eta * delta.powf((p - 1.0) / 2.0) * un).max(0.0);
    // Cundall-Strack: rotated into the tangent plane, its length kept
    let projected = xi_old - n * n.dot(&xi_old);
    let mut xi = if projected.norm() > 0.0 {
        projected * (xi_old.norm() / projected.norm())
    } else {
        projected
    };
    xi += ut * dt;
    let eta_t = zeta * (m_star * kt).sqrt();
    let mut f_t = -xi * kt - ut * eta_t;
    let cap = props.friction * f_n;
    let mut spring_scale = xi_old.norm() + u.norm() * dt;
    if f_t.norm() > cap {
        f_t *= cap / f_t.norm();
        xi = -(f_t + ut * eta_t) / kt;
        // the spring recovered from the capped force: a difference of
        // terms of size |f_t| and η_t |u_t|
        spring_scale += (f_t.norm() + eta_t * ut.norm()) / kt;
    }
    let force_scale = kn * delta.powf(p)
        + eta * delta.powf((p - 1.0) / 2.0) * u.norm()
        + kt * xi.norm()
        + eta_t * u.norm();
    let mut moment = Vec3::zeros();
    let mut spring_moment = Vec3::zeros();
    let (mut moment_scale, mut rolling_scale) = (0.0, 0.0);
    if rolling && props.rolling_resistance > 0.0 {
        let k_lin = match law {
            SmoothLaw::Hertz => 1.5 * kn * delta.sqrt(),
            _ => kn,
        };
        let kr = 2.25 * k_lin * (props.rolling_resistance * r_star).powi(2);
        let w_rel = va.angular - vb.angular;
        spring_moment = old.rolling - w_rel * (kr * dt);
        rolling_scale = old.rolling.norm() + w_rel.norm() * kr * dt;
        moment_scale = rolling_scale;
        let rcap = props.rolling_resistance * r_star * f_n;
        if spring_moment.norm() > rcap {
            spring_moment *= rcap / spring_moment.norm();
            moment = spring_moment;
        } else {
            let about = |i: usize, arm: &Vec3| {
                let m = w.mass_properties()[i].unwrap();
                1.0 / (m.principal_inertia.sum() / 3.0 + m.mass * arm.norm_squared())
            };
            let i_r = 1.0 / (about(ia, &arm_a) + about(ib, &arm_b));
            let c_r = 0.3 * 2.0 * (i_r * kr).sqrt();
            moment = spring_moment - w_rel * c_r;
            moment_scale += w_rel.norm() * c_r;
        }
    }
    Some(Expected {
        force: n * f_n + f_t,
        force_scale,
        moment,
        moment_scale,
        history: ContactHistory {
            xi,
            rolling: spring_moment,
        },
        spring_scale,
        rolling_scale,
    })
}

/// `|x − y| ≤ TOLERANCE · scale`, with the relative error in the message.
fn close(x: Vec3, y: Vec3, scale: f64, what: &str) -> Result<(), TestCaseError> {
    let err = (x - y).norm() / scale.max(f64::MIN_POSITIVE);
    prop_assert!(
        err <= TOLERANCE,
        "{what}: {x:?} against {y:?}, relative {err:.2e}"
    );
    Ok(())
}

/// Two steps of the pair: the force of each against the textbook, the
/// second one with the spring the first left; with rolling, the angular
/// velocity change of a against `(d_a × F + M) Δt / I_a`.
fn check(
    a: Body,
    b: Body,
    axis: Vec3,
    overlap: f64,
    law: SmoothLaw,
    rolling: bool,
) -> Result<(), TestCaseError> {
    let mut w = pair(&a, &b, axis, overlap);
    let crit = stepper::critical_time_step(&w, &law);
    let dt = 0.1 * crit;
    let mut st = SmoothStepper::new(
        SmoothSettings {
            dt,
            law,
            rolling,
            ..SmoothSettings::default()
        },
        &w,
    )
    .unwrap();
    let mut old = ContactHistory::default();
    for step in 0..2 {
        let before = w.clone();
        let stats = st.step(&mut w).unwrap();
        let Some(e) = textbook(&before, law, rolling, dt, old) else {
            // separated after the first step
            prop_assert_eq!(stats.contacts, 0, "step {}", step);
            return Ok(());
        };
        prop_assert_eq!(stats.contacts, 1, "step {}", step);
        let measured = st.contact_forces()[0];
        close(
            measured,
            e.force,
            e.force_scale,
            &format!("force, step {step}"),
        )?;
        let kept = st.contact_histories()[0].1;
        close(
            kept.xi,
            e.history.xi,
            e.spring_scale,
            &format!("spring, step {step}"),
        )?;
        close(
            kept.rolling,
            e.history.rolling,
            e.rolling_scale,
            &format!("rolling moment, step {step}"),
        )?;
        if rolling {
            let m = before.mass_properties()[0].unwrap();
            let inertia = m.principal_inertia.x;
            let xa = before.positions()[0];
            let xb = before.positions()[1];
            let n = (xa - xb).normalize();
            let delta = a.radius + b.radius - (xa - xb).norm();
            let arm_a = xb + n * (b.radius - 0.5 * delta) - xa;
            let torque = arm_a.cross(&e.force) + e.moment;
            let expected = torque * (dt / inertia);
            let dw = w.velocities()[0].angular - before.velocities()[0].angular;
            // the subtraction ω_new − ω_old loses eps |ω| in absolute terms
            let omega = before.velocities()[0].angular.norm();
            let scale = (arm_a.norm() * e.force_scale + e.moment_scale) * dt / inertia
                + 4.0 * f64::EPSILON * omega / TOLERANCE;
            close(
                dw,
                expected,
                scale,
                &format!("angular velocity change, step {step}"),
            )?;
        }
        old = e.history;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn hertz_mindlin_force_is_the_documented_law(
        a in body(), b in body(), axis in vec3(1.0).prop_filter("a direction", |v| v.norm() > 0.1),
        overlap_fraction in 1e-6..0.02f64, rolling in any::<bool>(),
    ) {
        let overlap = overlap_fraction * a.radius.min(b.radius);
        check(a, b, axis, overlap, SmoothLaw::Hertz, rolling)?;
    }

    #[test]
    fn linear_force_is_the_documented_law(
        a in body(), b in body(), axis in vec3(1.0).prop_filter("a direction", |v| v.norm() > 0.1),
        overlap_fraction in 1e-6..0.02f64, stiffness in 1e3..1e6f64, rolling in any::<bool>(),
    ) {
        let overlap = overlap_fraction * a.radius.min(b.radius);
        check(a, b, axis, overlap, SmoothLaw::Linear { stiffness }, rolling)?;
    }
}

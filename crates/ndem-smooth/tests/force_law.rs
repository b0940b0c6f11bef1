//! The stepper's contact force against the textbook formulas of
//! `docs/theory.md` ("Smooth DEM baseline"), evaluated independently here
//! from the materials, radii, masses and velocities: the stepper forms its
//! stiffnesses from tabulated pair factors and per-pair invariants cached
//! at each Verlet rebuild, so this checks that those factorizations are the
//! documented law (Hertz-Mindlin and linear, sticking and sliding, the
//! tangential spring carried and rotated into the next step's tangent
//! plane, and the rolling model C).
//!
//! Tolerance: the force is compared on the stepper's contact geometry
//! (which is checked against the centres' to 4 ulps of `r_a + r_b`: the
//! overlap is a difference of lengths near `r_a + r_b`, so two roundings of
//! it agree to that, not to ulps of the overlap). Both sides are then a few
//! dozen floating-point operations on the same inputs in another order
//! (`δ^{3/2}` by `powf` here), and agree to round-off relative to the sum
//! of the magnitudes of the terms that form each quantity. Over two runs of
//! 3 × 256 cases the largest differences, so measured, were 3.7e-16
//! (force), 8.0e-15 (tangential spring), 2.2e-15 (rolling moment) and
//! 8.7e-18 (angular velocity change, beyond the rounding of
//! `ω_new − ω_old`); the bound 8e-14 is 10× the largest.

use ndem_math::{MassProperties, Material, PairProperties, Vec3, Velocity6};
use ndem_smooth::*;
use ndem_step::{BodyDesc, MaterialId, World};
use proptest::prelude::*;

/// Relative agreement required (see the module doc).
const TOLERANCE: f64 = 8e-14;

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
        BodyDesc::sphere(a.radius, MaterialId::from_index(0), xa)
            .unwrap()
            .with_velocity(a.velocity),
    )
    .unwrap();
    w.add_body(
        BodyDesc::sphere(b.radius, MaterialId::from_index(1), Vec3::zeros())
            .unwrap()
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

/// The contact's geometry from the two centres: unit normal from b to a,
/// overlap `δ`, lever arms from the centres to the mid-overlap point.
struct Geometry {
    normal: Vec3,
    overlap: f64,
    arm_a: Vec3,
    arm_b: Vec3,
}

fn geometry(w: &World) -> Geometry {
    let (xa, xb) = (w.positions()[0], w.positions()[1]);
    let (ra, rb) = (
        w.shapes()[0].sphere_radius().unwrap(),
        w.shapes()[1].sphere_radius().unwrap(),
    );
    let d = xa - xb;
    let normal = d / d.norm();
    let overlap = ra + rb - d.norm();
    let point = xb + normal * (rb - 0.5 * overlap);
    Geometry {
        normal,
        overlap,
        arm_a: point - xa,
        arm_b: point - xb,
    }
}

/// [`Expected`] as `docs/theory.md` writes it, for the world's state,
/// the contact geometry `g` and the history `old` the last step left.
fn textbook(
    w: &World,
    g: &Geometry,
    law: SmoothLaw,
    rolling: bool,
    dt: f64,
    old: ContactHistory,
) -> Expected {
    let xi_old = old.xi;
    let (ia, ib) = (0, 1);
    let (ra, rb) = (
        w.shapes()[ia].sphere_radius().unwrap(),
        w.shapes()[ib].sphere_radius().unwrap(),
    );
    let (mat_a, mat_b) = (w.materials[0], w.materials[1]);
    let (n, delta, arm_a, arm_b) = (g.normal, g.overlap, g.arm_a, g.arm_b);
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
    Expected {
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
    }
}

/// `|x − y| ≤ TOLERANCE · scale`, with the relative error in the message.
fn close(x: Vec3, y: Vec3, scale: f64, what: &str) -> Result<(), TestCaseError> {
    close_but(x, y, scale, 0.0, what)
}

/// [`close`] after taking `slack` off the difference (an absolute
/// round-off the comparison itself brings in).
fn close_but(x: Vec3, y: Vec3, scale: f64, slack: f64, what: &str) -> Result<(), TestCaseError> {
    let err = ((x - y).norm() - slack).max(0.0) / scale.max(f64::MIN_POSITIVE);
    prop_assert!(
        err <= TOLERANCE,
        "{what}: {x:?} against {y:?}, relative {err:.2e}"
    );
    Ok(())
}

/// Two steps of the pair: the force of each against the textbook, the
/// second one with the spring the first left; with rolling, the angular
/// velocity change of a against `(d_a × F + M) Δt / I_a`. With
/// `heavier = Some(k)`, a's mass and inertia are scaled by `k` between the
/// steps (the stepper caches masses per Verlet pair and must see it).
fn check(
    a: Body,
    b: Body,
    axis: Vec3,
    overlap: f64,
    law: SmoothLaw,
    rolling: bool,
    heavier: Option<f64>,
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
        if let (1, Some(k)) = (step, heavier) {
            let m = w.mass_properties()[0].unwrap();
            let scaled = MassProperties::new(m.mass * k, m.principal_inertia * k).unwrap();
            let orientation = w.orientations()[0];
            w.set_mass_properties(0, scaled, orientation).unwrap();
        }
        let before = w.clone();
        let stats = st.step(&mut w).unwrap();
        let g = geometry(&before);
        // the geometry is the closed form's, here and in the stepper; δ is a
        // difference of lengths near r_a + r_b, so the two roundings agree
        // to a few ulps of r_a + r_b, not of δ: the force is compared on the
        // stepper's geometry, and that geometry against this one
        let reach = a.radius + b.radius;
        let kept = st.contacts().expect("kept by default");
        let Some(c) = kept.iter().find(|c| c.gap < 0.0) else {
            // separated after the first step
            prop_assert!(
                g.overlap <= 4.0 * f64::EPSILON * reach,
                "step {}: contact lost",
                step
            );
            prop_assert_eq!(stats.contacts, 0, "step {}", step);
            return Ok(());
        };
        prop_assert_eq!(stats.contacts, 1, "step {}", step);
        prop_assert!(
            (-c.gap - g.overlap).abs() <= 4.0 * f64::EPSILON * reach,
            "overlap"
        );
        prop_assert!((c.normal - g.normal).norm() <= 4.0 * f64::EPSILON, "normal");
        // the stepper's arms: from the positions the contact was found at
        let x = before.positions();
        let (arm_a, arm_b) = (c.arm(&x[c.body_a()]), c.arm(&x[c.body_b()]));
        prop_assert!(
            (arm_a - g.arm_a).norm() <= 4.0 * f64::EPSILON * reach,
            "arm a"
        );
        prop_assert!(
            (arm_b - g.arm_b).norm() <= 4.0 * f64::EPSILON * reach,
            "arm b"
        );
        let stepper_geometry = Geometry {
            normal: c.normal,
            overlap: -c.gap,
            arm_a,
            arm_b,
        };
        let e = textbook(&before, &stepper_geometry, law, rolling, dt, old);
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
            let arm_a = stepper_geometry.arm_a;
            let torque = arm_a.cross(&e.force) + e.moment;
            let expected = torque * (dt / inertia);
            let dw = w.velocities()[0].angular - before.velocities()[0].angular;
            // the subtraction ω_new − ω_old loses eps |ω| in absolute terms
            // ω_new = ω_old + Δω rounds at eps |ω_new|, and the difference
            // taken here at eps |Δω|: an absolute slack, whatever |Δω|
            let omega = before.velocities()[0].angular.norm() + w.velocities()[0].angular.norm();
            let scale = (arm_a.norm() * e.force_scale + e.moment_scale) * dt / inertia;
            close_but(
                dw,
                expected,
                scale,
                2.0 * f64::EPSILON * omega,
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
        check(a, b, axis, overlap, SmoothLaw::Hertz, rolling, None)?;
    }

    #[test]
    fn a_mass_set_between_steps_reaches_the_next_force(
        a in body(), b in body(), axis in vec3(1.0).prop_filter("a direction", |v| v.norm() > 0.1),
        overlap_fraction in 1e-6..0.02f64, factor in 1.5..4.0f64,
    ) {
        let overlap = overlap_fraction * a.radius.min(b.radius);
        check(a, b, axis, overlap, SmoothLaw::Hertz, true, Some(factor))?;
    }

    #[test]
    fn linear_force_is_the_documented_law(
        a in body(), b in body(), axis in vec3(1.0).prop_filter("a direction", |v| v.norm() > 0.1),
        overlap_fraction in 1e-6..0.02f64, stiffness in 1e3..1e6f64, rolling in any::<bool>(),
    ) {
        let overlap = overlap_fraction * a.radius.min(b.radius);
        check(a, b, axis, overlap, SmoothLaw::Linear { stiffness }, rolling, None)?;
    }
}

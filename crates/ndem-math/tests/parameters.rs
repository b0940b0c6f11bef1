//! Hand-computed SPOOK parameters for the warm-starting paper's Table 1 and
//! the static Hertz check.

use ndem_math::jacobian::normal_row;
use ndem_math::{
    ContactLaw, ContactParameters, InverseMass, MassProperties, Material, MathError,
    PairProperties, SpookSettings, Vec3, Velocity6,
};

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

/// Two 13 mm spheres of the Table 1 material at Δt = 5 ms.
///
/// By hand: E* = E / (2 (1 − ν²)) = 6e6 / 1.82 = 3.2967033e6 Pa;
/// R* = 6.5 mm / 2 = 3.25e-3 m; k_n = 4/3 E* √R* = 2.505880e5 N/m^1.5;
/// ε_n = 1.25 / k_n = 4.98827e-6; τ_n = 2 Δt = 0.01 s;
/// Υ_n = 1/(1 + 4·2) = 1/9; Σ_n = 4/Δt² · ε_n / 9 = 8.86803e-2;
/// Σ_t = Σ_r = 1e-6 / 5e-3 = 2e-4.
#[test]
fn table1_sphere_sphere_parameters() {
    let m = Material::default();
    let pair = PairProperties::combine(&m, 0.0065, &m, 0.0065).unwrap();
    assert!(rel(pair.effective_modulus, 3.296_703_296_7e6) < 1e-10);
    assert!(rel(pair.effective_radius, 3.25e-3) < 1e-12);
    let p =
        ContactParameters::new(ContactLaw::Hertz, &pair, 5e-3, &SpookSettings::default()).unwrap();
    assert!(
        rel(p.stiffness, 2.505_880_055e5) < 1e-6,
        "k_n = {}",
        p.stiffness
    );
    assert!(
        rel(p.epsilon_n, 4.988_267_48e-6) < 1e-6,
        "eps_n = {}",
        p.epsilon_n
    );
    assert!(rel(p.tau_n, 0.01) < 1e-12);
    assert!(rel(p.upsilon_n, 1.0 / 9.0) < 1e-12);
    assert!(
        rel(p.sigma_n, 8.868_031_08e-2) < 1e-6,
        "Sigma_n = {}",
        p.sigma_n
    );
    assert!(rel(p.sigma_t, 2e-4) < 1e-12);
    assert!(rel(p.sigma_r, 2e-4) < 1e-12);
    assert!(rel(p.rolling_arm, 0.32 * 3.25e-3) < 1e-12);
}

/// Sphere on a rigid-ish plane (same material, flat): R* = r.
#[test]
fn sphere_plane_uses_radius_as_effective_radius() {
    let m = Material::default();
    let pair = PairProperties::combine(&m, 0.0065, &m, f64::INFINITY).unwrap();
    assert!(rel(pair.effective_radius, 0.0065) < 1e-15);
}

/// Dashpot: τ_n = max(n_s Δt, c/e_H).
#[test]
fn dashpot_sets_relaxation_time() {
    let m = Material {
        damping: 0.1,
        ..Material::default()
    };
    let pair = PairProperties::combine(&m, 0.0065, &m, 0.0065).unwrap();
    let p =
        ContactParameters::new(ContactLaw::Hertz, &pair, 5e-3, &SpookSettings::default()).unwrap();
    assert!(rel(p.tau_n, 0.1 / 1.25) < 1e-12);
}

/// Static check (`docs/theory.md`, "Static check"): at rest the normal row gives λ_n/Δt = −g/ε_n and
/// the force s_n λ_n/Δt equals Hertz k_n δ^{3/2}; for the linear law k_n δ.
#[test]
fn static_check_reproduces_hertz_and_linear() {
    let m = Material::default();
    let pair = PairProperties::combine(&m, 0.0065, &m, 0.0065).unwrap();
    let dt = 5e-3;
    for law in [ContactLaw::Hertz, ContactLaw::Linear { stiffness: 3000.0 }] {
        let p = ContactParameters::new(law, &pair, dt, &SpookSettings::default()).unwrap();
        for delta in [1e-7, 1e-5, 3e-4] {
            let nr = normal_row(-delta, p.exponent, 1e-12);
            // Stationary (v = v_i = 0) solution of w_n = Σ_n λ + (4/Δt) Υ_n g = 0.
            let lambda = -(4.0 / dt) * p.upsilon_n * nr.g / p.sigma_n;
            let force = nr.scale * lambda / dt;
            let expected = match law {
                ContactLaw::Hertz => p.stiffness * delta.powf(1.5),
                ContactLaw::Linear { stiffness } => stiffness * delta,
                ContactLaw::LinearPerMaterial | ContactLaw::Rigid => {
                    unreachable!("not in this loop")
                }
            };
            assert!(
                rel(force, expected) < 1e-12,
                "{law:?} δ={delta}: {force} vs {expected}"
            );
            assert!(rel(p.static_force(delta), expected) < 1e-12);
        }
    }
}

#[test]
fn normal_row_branches() {
    // apart: linear gap row
    let r = normal_row(1e-4, 1.25, 1e-12);
    assert_eq!((r.g, r.scale), (1e-4, 1.0));
    // overlapping
    let r = normal_row(-1e-4, 1.25, 1e-12);
    assert!(rel(r.g, -(1e-4f64).powf(1.25)) < 1e-15);
    assert!(rel(r.scale, 1.25 * (1e-4f64).powf(0.25)) < 1e-15);
    // exactly touching: floor keeps s_n > 0 only on the overlapping side
    let r = normal_row(-0.0, 1.25, 1e-12);
    assert_eq!(r.g, -0.0);
    assert!(r.scale > 0.0);
}

#[test]
fn bad_input_names_the_field() {
    let bad = |m: Material| m.validate().unwrap_err();
    let base = Material::default();
    assert!(matches!(
        bad(Material {
            poisson_ratio: 0.5,
            ..base
        }),
        MathError::OutOfRange {
            field: "poisson_ratio",
            ..
        }
    ));
    assert!(matches!(
        bad(Material {
            poisson_ratio: -1.0,
            ..base
        }),
        MathError::OutOfRange {
            field: "poisson_ratio",
            ..
        }
    ));
    assert!(matches!(
        bad(Material {
            youngs_modulus: -1.0,
            ..base
        }),
        MathError::NonPositive {
            field: "youngs_modulus",
            ..
        }
    ));
    assert!(matches!(
        bad(Material {
            density: f64::NAN,
            ..base
        }),
        MathError::NonFinite {
            field: "density",
            ..
        }
    ));
    assert!(matches!(
        bad(Material {
            friction: -0.1,
            ..base
        }),
        MathError::OutOfRange {
            field: "friction",
            ..
        }
    ));
    assert!(matches!(
        MassProperties::solid_sphere(3700.0, 0.0),
        Err(MathError::NonPositive {
            field: "radius",
            ..
        })
    ));
    assert!(matches!(
        MassProperties::sphere_with_mass(-1.0, 0.1),
        Err(MathError::NonPositive { field: "mass", .. })
    ));
    let pair = PairProperties::combine(&base, 0.0065, &base, 0.0065).unwrap();
    for dt in [0.0, -1.0, f64::NAN] {
        assert!(
            ContactParameters::new(ContactLaw::Hertz, &pair, dt, &SpookSettings::default())
                .is_err()
        );
    }
    assert!(matches!(
        PairProperties::combine(&base, -0.1, &base, 0.1),
        Err(MathError::NonPositive {
            field: "radius_a",
            ..
        })
    ));
    assert!(PairProperties::combine(&base, f64::INFINITY, &base, f64::INFINITY).is_err());
    assert!(matches!(
        ndem_math::ContactFrame::from_normal(&Vec3::new(f64::NAN, 0.0, 1.0)),
        Err(MathError::NonFinite {
            field: "normal",
            ..
        })
    ));
    assert!(ndem_math::ContactFrame::from_normal(&Vec3::zeros()).is_err());
    assert!(
        Velocity6::new(Vec3::new(0.0, f64::INFINITY, 0.0), Vec3::zeros())
            .validate("velocity")
            .is_err()
    );
}

#[test]
fn inertia_of_shapes() {
    let s = MassProperties::solid_sphere(3700.0, 0.0065).unwrap();
    let m = 4.0 / 3.0 * std::f64::consts::PI * 0.0065f64.powi(3) * 3700.0;
    assert!(rel(s.mass, m) < 1e-14);
    assert!(rel(s.principal_inertia.x, 0.4 * m * 0.0065 * 0.0065) < 1e-14);
    let b = MassProperties::solid_box(12.0, Vec3::new(1.0, 2.0, 3.0)).unwrap();
    assert!(rel(b.principal_inertia.x, 12.0 * (4.0 + 9.0) / 3.0) < 1e-14);
    let c = MassProperties::solid_cylinder(2.0, 0.5, 1.0).unwrap();
    assert!(rel(c.principal_inertia.z, 0.25) < 1e-14);
    assert!(rel(c.principal_inertia.x, 2.0 * (0.75 + 4.0) / 12.0) < 1e-14);
    // world inverse inertia is the inverse of the world inertia
    let q = ndem_math::Quat::from_scaled_axis(Vec3::new(0.3, -0.7, 1.1));
    let iw = b.world_inertia(&q);
    let inv = b.inverse(&q);
    assert!((iw * inv.inv_inertia - ndem_math::Mat3::identity()).norm() < 1e-13);
    assert!(InverseMass::INFINITE_MASS.is_infinite());
}

#[test]
fn csr_export_matches_rows() {
    use ndem_math::{ContactFrame, ContactJacobian};
    let jac = ContactJacobian::new(
        ContactFrame::from_unit_normal(Vec3::new(0.0, 0.6, 0.8)),
        &Vec3::new(0.1, 0.2, 0.3),
        &Vec3::new(-0.1, 0.0, 0.2),
        0.7,
    );
    let g = ndem_math::sparse::contacts_to_csr(&[([2, 0], jac)], 6, 3);
    assert_eq!((g.nrows(), g.ncols()), (6, 18));
    let va = Velocity6::new(Vec3::new(1.0, 2.0, 3.0), Vec3::new(-1.0, 0.5, 0.25));
    let vb = Velocity6::new(Vec3::new(-0.5, 0.0, 1.0), Vec3::new(0.2, 0.1, -0.3));
    let mut v = nalgebra::DVector::zeros(18);
    v.rows_mut(12, 6).copy_from_slice(&va.to_array());
    v.rows_mut(0, 6).copy_from_slice(&vb.to_array());
    let gv = &g * &v;
    let direct = jac.velocity(&va, &vb);
    for j in 0..6 {
        assert!((gv[j] - direct[j]).abs() < 1e-14);
    }
}

/// Rigid contacts (the compatible-contact-dynamics paper's classic CD): no
/// compliance, so Σ_n = 0 and the constraint is the gap itself.
#[test]
fn rigid_law_has_no_compliance() {
    let m = Material::default();
    let pair = PairProperties::combine(&m, 0.0065, &m, 0.0065).unwrap();
    for dt in [1e-3, 5e-3] {
        let p = ContactParameters::new(ContactLaw::Rigid, &pair, dt, &SpookSettings::default())
            .unwrap();
        assert_eq!(p.exponent, 1.0);
        assert_eq!(p.epsilon_n, 0.0);
        assert_eq!(p.sigma_n, 0.0);
        assert_eq!(p.stiffness, f64::INFINITY);
        // τ_n = n_s Δt without a dashpot, Υ_n = 1/(1 + 4 n_s) = 1/9
        assert!((p.upsilon_n - 1.0 / 9.0).abs() < 1e-15);
        assert_eq!(p.static_force(0.0), 0.0);
        assert_eq!(p.static_force(1e-9), f64::INFINITY);
        // friction and rolling rows keep their SPOOK compliance
        assert_eq!(p.sigma_t, 1e-6 / dt);
    }
}

/// Per-material linear stiffness (model-reduction paper, Table 1: k_n =
/// 3 kN/m): a contact within one material has that material's k_n, two
/// materials combine as half-contacts in series, 2 k_a k_b / (k_a + k_b);
/// the static check gives the force k_n δ; a material without the
/// stiffness is a typed error naming the field.
#[test]
fn per_material_linear_stiffness() {
    let soft = Material {
        linear_stiffness: Some(3e3),
        ..Material::default()
    };
    let stiff = Material {
        linear_stiffness: Some(9e3),
        ..Material::default()
    };
    let dt = 5e-3;
    let spook = SpookSettings::default();
    for (a, b, k) in [
        (&soft, &soft, 3e3),
        (&soft, &stiff, 4.5e3),
        (&stiff, &stiff, 9e3),
    ] {
        let pair = PairProperties::combine(a, 0.0065, b, 0.005).unwrap();
        let p = ContactParameters::new(ContactLaw::LinearPerMaterial, &pair, dt, &spook).unwrap();
        assert!(rel(p.stiffness, k) < 1e-15, "{} vs {k}", p.stiffness);
        let same =
            ContactParameters::new(ContactLaw::Linear { stiffness: k }, &pair, dt, &spook).unwrap();
        assert_eq!(p, same);
        assert!(rel(p.static_force(2e-4), k * 2e-4) < 1e-12);
    }
    let plain = Material::default();
    let pair = PairProperties::combine(&soft, 0.0065, &plain, 0.0065).unwrap();
    match ContactParameters::new(ContactLaw::LinearPerMaterial, &pair, dt, &spook) {
        Err(MathError::Missing { field, .. }) => assert_eq!(field, "linear_stiffness"),
        other => panic!("{other:?}"),
    }
    let bad = Material {
        linear_stiffness: Some(-1.0),
        ..Material::default()
    };
    match bad.validate() {
        Err(MathError::NonPositive { field, .. }) => assert_eq!(field, "linear_stiffness"),
        other => panic!("{other:?}"),
    }
}

proptest::proptest! {
    /// The SPOOK parameters of one pair of materials formed once and
    /// given a contact's radii by `with_radius_of` are those formed for
    /// that contact, bit for bit, or the same error, under every law
    /// (what the stepper's per-step table of material pairs relies on).
    #[test]
    fn parameters_given_radii_later_are_formed_as_given_first(
        a in ndem_math::proptest_support::material(),
        b in ndem_math::proptest_support::material(),
        ra in proptest::prop_oneof![1e-5f64..1.0, proptest::prelude::Just(f64::INFINITY)],
        rb in 1e-5f64..1.0,
        law in 0usize..4,
        dt in 1e-5f64..1e-2,
    ) {
        let law = [ContactLaw::Hertz, ContactLaw::Linear { stiffness: 3e5 }, ContactLaw::LinearPerMaterial, ContactLaw::Rigid][law];
        let s = SpookSettings::default();
        let template = PairProperties::combine(&a, 1.0, &b, 1.0).unwrap();
        let pair = template.with_radii(ra, rb).unwrap();
        let direct = ContactParameters::new(law, &pair, dt, &s);
        let later = ContactParameters::new(law, &template, dt, &s).and_then(|p| p.with_radius_of(law, &pair, dt));
        proptest::prop_assert_eq!(format!("{direct:?}"), format!("{later:?}"));
        if let (Ok(x), Ok(y)) = (direct, later) {
            let bits = |p: &ContactParameters| [p.stiffness, p.epsilon_n, p.tau_n, p.sigma_n, p.upsilon_n,
                p.sigma_t, p.sigma_r, p.friction, p.rolling_arm, p.restitution].map(f64::to_bits);
            proptest::prop_assert_eq!(bits(&x), bits(&y));
        }
    }

    /// A pair of materials combined once (at radii of 1) and given its
    /// contact's radii by `with_radii` is the pair combined at those radii,
    /// bit for bit, or the same error (the stepper tables the world's
    /// material pairs once per step and relies on this).
    #[test]
    fn radii_given_later_combine_as_given_first(
        a in ndem_math::proptest_support::material(),
        b in ndem_math::proptest_support::material(),
        ra in proptest::prop_oneof![1e-5f64..1.0, proptest::prelude::Just(f64::INFINITY), -1.0f64..=0.0],
        rb in proptest::prop_oneof![1e-5f64..1.0, proptest::prelude::Just(f64::INFINITY), proptest::prelude::Just(f64::NAN)],
    ) {
        let direct = PairProperties::combine(&a, ra, &b, rb);
        let later = PairProperties::combine(&a, 1.0, &b, 1.0).unwrap().with_radii(ra, rb);
        proptest::prop_assert_eq!(format!("{direct:?}"), format!("{later:?}"));
        if let (Ok(x), Ok(y)) = (direct, later) {
            let bits = |p: &PairProperties| [p.effective_radius, p.effective_modulus, p.restitution,
                p.friction, p.rolling_resistance, p.damping].map(f64::to_bits);
            proptest::prop_assert_eq!(bits(&x), bits(&y));
            proptest::prop_assert_eq!(x.linear_stiffness.map(f64::to_bits), y.linear_stiffness.map(f64::to_bits));
        }
    }
}

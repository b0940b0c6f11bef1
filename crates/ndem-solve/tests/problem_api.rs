//! The public slice operations of `ContactProblem` check their lengths and
//! give typed errors naming the slice, instead of panicking.

use ndem_math::Velocity6;
use ndem_solve::*;
use ndem_testkit::strategies::*;

#[test]
fn slice_operations_check_lengths() {
    let p = sphere_packing(&PackingSpec::default()).expect("a valid spec");
    let (n, nb) = (p.len(), p.body_count());
    assert!(n > 0 && nb > 0);
    let field = |r: Result<(), SolveError>| match r {
        Err(SolveError::DimensionMismatch { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    let lam = vec![0.0; n];
    let mut v = vec![Velocity6::ZERO; nb];
    let mut out = vec![0.0; n];
    assert_eq!(field(p.velocity_from(&lam[1..], &mut v)), "lambda");
    assert_eq!(field(p.apply_impulses(&lam, &mut v[1..])), "velocity");
    assert_eq!(field(p.jacobian_times(&v, &mut out[1..])), "out");
    assert_eq!(field(p.residual(&lam, &v[1..], &mut out)), "velocity");
    assert_eq!(field(p.diagonal(&mut out[1..])), "out");
    let mut scratch = vec![Velocity6::ZERO; nb + 1];
    assert_eq!(
        field(p.apply_operator(&lam, &mut scratch, &mut out)),
        "scratch"
    );
    assert_eq!(field(p.linear_term(&mut out[1..])), "out");
    let mut l2 = vec![0.0; n + 1];
    assert_eq!(field(p.project(&mut l2)), "lambda");
    // right lengths: Ok, and the same numbers as the unchecked solvers use
    p.velocity_from(&lam, &mut v).unwrap();
    assert_eq!(v, p.free_velocity());
    p.residual(&lam, &v, &mut out).unwrap();
    assert!(out.iter().all(|x| x.is_finite()));
}

/// `Contact::builder` fills defaults (key `(a, b, 0)`, zero Σ, `b`, μ and
/// rolling arm) and `build` checks every value, naming the field.
#[test]
fn contact_builder_checks_values() {
    use ndem_math::{ContactFrame, ContactJacobian, ContactKey, Vec3};
    let frame = ContactFrame::from_normal(&Vec3::z()).unwrap();
    let jacobian = ContactJacobian::new(frame, &Vec3::new(0.0, 0.0, -0.1), &Vec3::zeros(), 1.0);
    let c = Contact::builder([1, 0], jacobian)
        .friction(0.5)
        .build()
        .unwrap();
    assert_eq!(c.key, ContactKey::new(1, 0, 0));
    assert_eq!((c.sigma, c.rhs, c.rolling_arm), ([0.0; 3], [0.0; 6], 0.0));
    let field = |r: Result<Contact, SolveError>| match r {
        Err(SolveError::OutOfRange { field, .. }) | Err(SolveError::NonFinite { field, .. }) => {
            field
        }
        other => panic!("{other:?}"),
    };
    let b = Contact::builder([1, 0], jacobian);
    assert_eq!(field(b.friction(-0.1).build()), "contacts.friction");
    assert_eq!(
        field(b.compliance([0.0, -1.0, 0.0]).build()),
        "contacts.sigma"
    );
    assert_eq!(field(b.normal_rhs(f64::NAN).build()), "contacts.rhs");
    assert_eq!(
        field(b.rolling_arm(f64::INFINITY).build()),
        "contacts.rolling_arm"
    );
    assert_eq!(
        field(Contact::builder([2, 2], jacobian).build()),
        "contacts.bodies"
    );
    // a non-finite lever arm, frame entry, or a row that overflows
    let mut bad = jacobian;
    bad.arm_b.y = f64::NAN;
    assert_eq!(
        field(Contact::builder([1, 0], bad).build()),
        "contacts.jacobian.arm"
    );
    let mut bad = jacobian;
    bad.frame.tangent2.x = f64::INFINITY;
    assert_eq!(
        field(Contact::builder([1, 0], bad).build()),
        "contacts.jacobian"
    );
    let mut bad = jacobian;
    bad.arm_a = Vec3::new(1e300, 0.0, 0.0);
    bad.frame.tangent1 = Vec3::new(0.0, 1e300, 0.0);
    assert_eq!(
        field(Contact::builder([1, 0], bad).build()),
        "contacts.jacobian"
    );
}

/// Bad inverse masses are refused with a typed error naming the field,
/// the body and the first bad value, for bodies kept as `k 1` and for
/// bodies that keep their full matrix.
#[test]
fn bad_inverse_masses_are_named() {
    use ndem_math::{InverseMass, Mat3};
    let good = InverseMass {
        inv_mass: 2.0,
        inv_inertia: Mat3::from_diagonal_element(3.0),
    };
    let mut full = good;
    full.inv_inertia[(2, 1)] = 0.5;
    let refuse = |bad: InverseMass| {
        let masses = vec![good, full, bad];
        let free = vec![Velocity6::ZERO; 3];
        ContactProblem::new(masses, free, ContactRows::Normal, FrictionSet::Box, 1e-3).unwrap_err()
    };
    let mut infinite_k = good;
    infinite_k.inv_inertia = Mat3::from_diagonal_element(f64::INFINITY);
    assert!(matches!(
        refuse(infinite_k),
        SolveError::NonFinite { field: "inverse_mass", index: 2, value } if value == f64::INFINITY
    ));
    let mut nan_entry = full;
    nan_entry.inv_inertia[(1, 2)] = f64::NAN;
    assert!(matches!(
        refuse(nan_entry),
        SolveError::NonFinite { field: "inverse_mass", index: 2, value } if value.is_nan()
    ));
    let negative = InverseMass {
        inv_mass: -1.0,
        ..good
    };
    assert!(matches!(
        refuse(negative),
        SolveError::OutOfRange {
            field: "inverse_mass",
            index: 2,
            value: -1.0,
            ..
        }
    ));
    let nan_mass = InverseMass {
        inv_mass: f64::NAN,
        ..full
    };
    assert!(matches!(
        refuse(nan_mass),
        SolveError::NonFinite {
            field: "inverse_mass",
            index: 2,
            ..
        }
    ));
    let masses = vec![good, full, good];
    let free = vec![Velocity6::ZERO; 3];
    assert!(ContactProblem::new(masses, free, ContactRows::Normal, FrictionSet::Box, 1e-3).is_ok());
}

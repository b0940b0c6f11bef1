use super::*;
use crate::strategies::{arb_joint_tree, arb_packing, arb_sparse_problem};
use ndem_math::{InverseMass, Mat3};
use proptest::prelude::*;

/// `clamp_to` is `f64::clamp` bit for bit wherever that does not
/// panic (bounds in order, neither NaN), NaN values included, and
/// leaves the value where a bound is NaN.
#[test]
fn clamp_to_is_clamp_without_the_panic() {
    let values = [
        f64::NEG_INFINITY,
        -1e308,
        -2.5,
        -f64::MIN_POSITIVE,
        -0.0,
        0.0,
        4e-320,
        1.0,
        3.5,
        f64::INFINITY,
        f64::NAN,
    ];
    let mut compared = 0;
    for &lo in &values {
        for &hi in &values {
            for &x in &values {
                let got = x.clamp_to(lo, hi).to_bits();
                if lo.is_nan() && hi.is_nan() {
                    assert_eq!(got, x.to_bits());
                } else if !lo.is_nan() && !hi.is_nan() && lo <= hi {
                    assert_eq!(got, x.clamp(lo, hi).to_bits());
                    compared += 1;
                }
            }
        }
    }
    // 10 ordered values, 55 ordered pairs (with -0 <= 0 both ways: 56)
    assert_eq!(compared, 56 * values.len());
}

/// The disk projection holds its bound where the squared norm
/// underflows: a zero bound (`λ_n = 0`) leaves exactly zero, a tiny
/// one scales the pair onto its rim (measured relative error 0; bound
/// 1e-15 relative, round-off of the scaling).
#[test]
fn disk_projection_holds_tiny_bounds() {
    let mut pair = [1.0e-163, -3.0e-164];
    project_pair(FrictionSet::Disk, 0.0, &mut pair);
    assert_eq!(pair, [0.0, 0.0]);
    let mut pair = [3.0e-165, 4.0e-165];
    project_pair(FrictionSet::Disk, 1.0e-170, &mut pair);
    let norm = pair[0].hypot(pair[1]);
    assert!((norm - 1.0e-170).abs() <= 1e-15 * 1.0e-170, "{pair:?}");
    assert!((pair[0] / pair[1] - 0.75).abs() < 1e-15, "{pair:?}");
    // inside the bound: unchanged
    let mut pair = [3.0e-165, 4.0e-165];
    project_pair(FrictionSet::Disk, 1.0e-160, &mut pair);
    assert_eq!(pair, [3.0e-165, 4.0e-165]);
    let mut pair = [0.0, 0.0];
    project_pair(FrictionSet::Disk, 0.0, &mut pair);
    assert_eq!(pair, [0.0, 0.0]);
}

/// A sweep reads 160 bytes per contact (`docs/performance.md`,
/// "Memory" and "Memory"), not a whole `Contact`'s 272.
#[test]
fn a_sweep_record_is_160_bytes() {
    assert_eq!(std::mem::size_of::<ContactRecord>(), 160);
    assert_eq!(std::mem::size_of::<Contact>(), 272);
}

/// `λ` with every sign and scale: the sums are what is compared, not a
/// solution.
fn multipliers(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = ndem_math::rng::Rng::new(seed);
    (0..n)
        .map(|_| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0)
        .collect()
}

/// `v(λ)` formed on body ranges equals the serial sums bit for bit on
/// 2 to 5 threads (more threads than bodies included).
fn check_ranges(problem: &ContactProblem, seed: u64) -> Result<(), TestCaseError> {
    let lambda = multipliers(problem.len(), seed);
    let mut serial = vec![Velocity6::ZERO; problem.body_count()];
    problem.velocity_from_unchecked(&lambda, &mut serial);
    for threads in 2..=5 {
        let mut ranged = vec![Velocity6::ZERO; problem.body_count()];
        problem.velocity_from_on(&lambda, &mut ranged, threads);
        for (b, (x, y)) in serial.iter().zip(&ranged).enumerate() {
            let xs = x.linear.iter().chain(x.angular.iter());
            let ys = y.linear.iter().chain(y.angular.iter());
            for (k, (p, q)) in xs.zip(ys).enumerate() {
                prop_assert_eq!(
                    p.to_bits(),
                    q.to_bits(),
                    "body {} component {} on {} threads",
                    b,
                    k,
                    threads
                );
            }
        }
    }
    Ok(())
}

/// A stored Jacobian number of any scale: ordinary, around the fast
/// check's bound, near overflow, infinite or NaN.
fn stored_number() -> impl Strategy<Value = f64> {
    let scale = prop_oneof![
        Just(1.0),
        Just(1e99),
        Just(STORED_BOUND),
        Just(1e101),
        Just(1e150),
        Just(1e300),
        Just(f64::MAX),
    ];
    let special = prop_oneof![Just(f64::INFINITY), Just(f64::NEG_INFINITY), Just(f64::NAN)];
    prop_oneof![
        8 => (-1.0f64..1.0, scale).prop_map(|(x, s)| x * s),
        1 => special,
    ]
}

/// A contact whose 16 stored Jacobian numbers are each ordinary (most
/// often) or of [`stored_number`]'s scales.
fn arb_stored_jacobian() -> impl Strategy<Value = Contact> {
    let number = prop_oneof![6 => -2.0f64..2.0, 1 => stored_number()];
    proptest::collection::vec(number, 16).prop_map(|x| {
        let v = |k: usize| Vec3::new(x[k], x[k + 1], x[k + 2]);
        let frame = ContactFrame {
            normal: v(0),
            tangent1: v(3),
            tangent2: v(6),
        };
        let jacobian = ContactJacobian::new(frame, &v(9), &v(12), x[15]);
        Contact::builder([0, 1], jacobian).contact
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The bounded check of the stored numbers says "finite" only
    /// when every formed row entry is finite, and otherwise defers to
    /// the entry-by-entry check: the verdict of `validate` is that of
    /// the rows themselves (with a bound of 1e150 it fails: entries of
    /// `(d × u) s` overflow).
    #[test]
    fn the_bounded_check_is_the_rows_verdict(contact in arb_stored_jacobian()) {
        prop_assert_eq!(contact.jacobian_finite(), contact.rows_finite());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn velocity_on_body_ranges_is_the_serial_sum_in_packings(
        problem in arb_packing(ContactRows::NormalFrictionRolling, FrictionSet::Disk),
        seed in any::<u64>(),
    ) {
        check_ranges(&problem, seed)?;
    }

    /// The bodies that do not move (the packings' floor), with free
    /// velocities of both signs of zero and of a moving wall: a thread
    /// adds their impulses (zeros) as the serial pass does, so that
    /// `−0 + 0` gives its `+0` there too (a pass that skipped the
    /// contacts whose only body in its range does not move passes the
    /// other tests and fails this one).
    #[test]
    fn velocity_on_body_ranges_keeps_the_signs_of_fixed_bodies_zeros(
        problem in arb_packing(ContactRows::NormalFrictionRolling, FrictionSet::Disk),
        speeds in proptest::collection::vec(prop_oneof![Just(-0.0), Just(0.0), -1.0f64..1.0], 6),
        seed in any::<u64>(),
    ) {
        let mut problem = problem;
        let moving: Vec<bool> = problem.inverse_mass().movable().collect();
        prop_assert!(moving.iter().any(|m| !m), "a packing has a floor");
        for (v, _) in problem.free_velocity.iter_mut().zip(&moving).filter(|(_, m)| !**m) {
            *v = Velocity6::from_slice(&speeds);
        }
        check_ranges(&problem, seed)?;
    }

    #[test]
    fn velocity_on_body_ranges_is_the_serial_sum_with_generic_rows(
        problem in prop_oneof![arb_joint_tree(), arb_sparse_problem(1e-8, 0.5).unwrap()],
        seed in any::<u64>(),
    ) {
        check_ranges(&problem, seed)?;
    }
}

/// The problem with `masses` and `free` as its bodies and `contacts`
/// pushed one by one.
fn with_contacts(mut problem: ContactProblem, contacts: &[Contact]) -> ContactProblem {
    for c in contacts {
        problem.push_contact(*c).unwrap();
    }
    problem
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Bodies appended after a problem's first ones (`push_bodies`) and
    /// then the contacts give the problem built over all of them at once,
    /// wherever the cut falls (before the floor, after every body).
    #[test]
    fn bodies_pushed_in_two_parts_give_the_problem_built_at_once(
        problem in arb_packing(ContactRows::NormalFrictionRolling, FrictionSet::Disk),
        cut in 0.0f64..=1.0,
    ) {
        let masses = problem.inverse_mass().to_vec();
        let free = problem.free_velocity().to_vec();
        let k = ((cut * masses.len() as f64) as usize).min(masses.len());
        let contacts: Vec<Contact> = problem.contacts().iter().collect();
        let (rows, set, dt) = (problem.contact_rows(), problem.friction_set(), problem.dt);
        let at_once = ContactProblem::new(masses.clone(), free.clone(), rows, set, dt).unwrap();
        let mut parts =
            ContactProblem::new(masses[..k].to_vec(), free[..k].to_vec(), rows, set, dt).unwrap();
        let rest = InverseMasses::from(masses[k..].to_vec());
        prop_assert_eq!(parts.push_bodies(&rest, &free[k..]).unwrap(), k);
        prop_assert_eq!(with_contacts(parts, &contacts), with_contacts(at_once, &contacts));
    }
}

/// Appended bodies are checked as `new` checks its bodies, named by their
/// index in the problem, and nothing is appended on an error.
#[test]
fn pushed_bodies_are_checked_and_named_by_their_index_in_the_problem() {
    let body = InverseMass {
        inv_mass: 1.0,
        inv_inertia: Mat3::identity(),
    };
    let rows = ContactRows::NormalFrictionRolling;
    let mut problem = ContactProblem::new(
        vec![body; 3],
        vec![Velocity6::ZERO; 3],
        rows,
        FrictionSet::Disk,
        1e-3,
    )
    .unwrap();
    let two = InverseMasses::from(vec![body; 2]);
    let mut not_finite = [Velocity6::ZERO; 2];
    not_finite[1].linear.x = f64::NAN;
    let negative = InverseMasses::from(vec![
        body,
        InverseMass {
            inv_mass: -1.0,
            ..body
        },
    ]);
    assert!(matches!(
        problem.push_bodies(&two, &not_finite),
        Err(SolveError::NonFinite {
            field: "free_velocity",
            index: 4,
            ..
        })
    ));
    assert!(matches!(
        problem.push_bodies(&negative, &[Velocity6::ZERO; 2]),
        Err(SolveError::OutOfRange {
            field: "inverse_mass",
            index: 4,
            ..
        })
    ));
    assert!(matches!(
        problem.push_bodies(&two, &[Velocity6::ZERO; 1]),
        Err(SolveError::DimensionMismatch {
            field: "free_velocity",
            ..
        })
    ));
    assert_eq!(problem.inverse_mass().len(), 3);
    assert_eq!(problem.free_velocity().len(), 3);
    assert_eq!(problem.push_bodies(&two, &[Velocity6::ZERO; 2]).unwrap(), 3);
    assert_eq!(problem.inverse_mass().len(), 5);
    assert_eq!(problem.free_velocity().len(), 5);
}

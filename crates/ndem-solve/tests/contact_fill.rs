//! `ContactProblem::extend_contacts_with` (the stepper's parallel
//! assembly) against serial pushes: the same contacts on any thread count,
//! and on failure the serial loop's error with the earlier contacts kept.

use ndem_math::{ContactFrame, ContactJacobian, InverseMass, Mat3, Vec3, Velocity6};
use ndem_solve::*;
use proptest::prelude::*;

const BODIES: usize = 5;

fn empty_problem() -> ContactProblem {
    let inverse = InverseMass {
        inv_mass: 1.0,
        inv_inertia: Mat3::identity(),
    };
    ContactProblem::new(
        vec![inverse; BODIES],
        vec![Velocity6::default(); BODIES],
        ContactRows::NormalFriction,
        FrictionSet::Disk,
        1e-3,
    )
    .unwrap()
}

/// What contact `i` is: valid, refused by the builder, or invalid for the
/// problem (an unknown body, a non-finite right-hand side).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Valid,
    BuildFails,
    UnknownBody,
    NotFinite,
}

fn contact(i: usize, kind: Kind) -> Result<Contact, String> {
    let n = Vec3::new(1.0, 0.1 * i as f64, -0.3).normalize();
    let jacobian = ContactJacobian::new(
        ContactFrame::from_unit_normal(n),
        &Vec3::new(0.01, 0.0, i as f64 * 1e-3),
        &Vec3::zeros(),
        1.0 + i as f64,
    );
    let rhs = if kind == Kind::NotFinite {
        f64::NAN
    } else {
        -0.01 * i as f64
    };
    let b = if kind == Kind::UnknownBody {
        BODIES as u32
    } else {
        (i % (BODIES - 1)) as u32 + 1
    };
    match kind {
        Kind::BuildFails => Err(format!("contact {i} refused")),
        _ => {
            let mut c = Contact::builder([0, b], jacobian)
                .friction(0.5)
                .build()
                .unwrap();
            c.rhs[0] = rhs; // past the builder's check: the problem's must find it
            Ok(c)
        }
    }
}

fn arb_kinds() -> impl Strategy<Value = Vec<Kind>> {
    prop::collection::vec(
        prop_oneof![
            20 => Just(Kind::Valid),
            1 => Just(Kind::BuildFails),
            1 => Just(Kind::UnknownBody),
            1 => Just(Kind::NotFinite),
        ],
        0..400,
    )
}

proptest! {
    #[test]
    fn parallel_fill_equals_serial_pushes(kinds in arb_kinds(), before in 0usize..3, threads in 1usize..5) {
        // serial reference: `before` contacts, then pushes until the first failure
        let mut serial = empty_problem();
        for i in 0..before {
            serial.push_contact(contact(1000 + i, Kind::Valid).unwrap()).unwrap();
        }
        let mut parallel = serial.clone();
        let mut expected_error = None;
        for (i, &kind) in kinds.iter().enumerate() {
            match contact(i, kind) {
                Err(e) => { expected_error = Some(ContactFillError::Build(e)); break; }
                Ok(c) => if let Err(e) = serial.push_contact(c) {
                    expected_error = Some(ContactFillError::Invalid(e));
                    break;
                },
            }
        }
        let mut extra = vec![0usize; kinds.len()];
        let result = parallel.extend_contacts_with(&mut extra, threads, |i| contact(i, kinds[i]).map(|c| (c, 2 * i)));
        match expected_error {
            None => {
                prop_assert_eq!(result, Ok(()));
                prop_assert_eq!(parallel.contacts(), serial.contacts());
                prop_assert!(extra.iter().enumerate().all(|(i, &x)| x == 2 * i));
            }
            Some(e) => {
                // compared as text: the error carries the NaN it found
                prop_assert_eq!(format!("{:?}", result), format!("{:?}", Err::<(), _>(e)));
                prop_assert_eq!(parallel.contacts().len(), before);
            }
        }
    }
}

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

/// A problem with `built` pushed one by one.
fn pushed(built: &[Contact]) -> ContactProblem {
    let mut problem = empty_problem();
    for c in built {
        problem.push_contact(*c).unwrap();
    }
    problem
}

/// `λ`, `v` and the report of a default PGS solve from zero.
fn pgs_solution(p: &ContactProblem) -> (Vec<f64>, Vec<Velocity6>, SolveReport) {
    let (mut lambda, mut v) = p.cold_start();
    let report = ProjectedGaussSeidel::default()
        .solve(p, &mut lambda, &mut v)
        .unwrap();
    (lambda, v, report)
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

/// Contact `i` with the right-hand sides `rhs` (rows 1-5 may be non-zero:
/// a moving surface's target velocity, a problem read from a file).
fn contact_with_rhs(i: usize, rhs: [f64; 6]) -> Contact {
    let mut c = contact(i, Kind::Valid).unwrap();
    c.rhs = rhs;
    c.key = ndem_math::ContactKey::new(0, 1, i as u32);
    c.model = ContactModel {
        g: -1e-6 * i as f64,
        epsilon_n: 1e-9,
        gamma_t: 2e-9,
        gamma_r: 3e-9,
    };
    c
}

/// Right-hand sides: mostly `b_n` alone (the stepper's continuous
/// problems), sometimes tangential entries too.
fn arb_rhs() -> impl Strategy<Value = [f64; 6]> {
    let entry = || prop_oneof![3 => Just(0.0), 1 => -1.0..1.0f64];
    (
        -1.0..1.0f64,
        prop_oneof![
            4 => Just([0.0; 5]),
            1 => [entry(), entry(), entry(), entry(), entry()],
        ],
    )
        .prop_map(|(b_n, t)| [b_n, t[0], t[1], t[2], t[3], t[4]])
}

proptest! {
    /// The problem keeps a contact in parts (the sweeps' record, key, model
    /// data and, only when some contact has them, the tangential `b`): every
    /// contact reads back as it was built, bit for bit, whether pushed one
    /// by one or filled on 1-4 threads, whichever contact is the first with
    /// a tangential `b`; and a fill that fails leaves the earlier contacts
    /// as they were.
    #[test]
    fn contacts_read_back_as_built(
        before in prop::collection::vec(arb_rhs(), 0..4),
        added in prop::collection::vec(arb_rhs(), 0..300),
        threads in 1usize..5,
        fail_at in prop::option::of(0usize..300),
    ) {
        let built: Vec<Contact> = before
            .iter()
            .chain(&added)
            .enumerate()
            .map(|(i, &rhs)| contact_with_rhs(i, rhs))
            .collect();
        let pushed = pushed(&built);
        prop_assert!(pushed.contacts().iter().eq(built.iter().copied()));
        let mut filled = empty_problem();
        for c in &built[..before.len()] {
            filled.push_contact(*c).unwrap();
        }
        let mut extra = vec![(); added.len()];
        let fails = fail_at.filter(|&k| k < added.len());
        let result = filled.extend_contacts_with(&mut extra, threads, |i| {
            if Some(i) == fails {
                return Err(i);
            }
            Ok((built[before.len() + i], ()))
        });
        match fails {
            None => {
                prop_assert_eq!(result, Ok(()));
                prop_assert_eq!(filled.contacts(), pushed.contacts());
            }
            Some(k) => {
                prop_assert_eq!(result, Err(ContactFillError::Build(k)));
                prop_assert!(filled.contacts().iter().eq(built[..before.len()].iter().copied()));
            }
        }
        for (k, c) in built.iter().enumerate() {
            prop_assert_eq!(pushed.contacts().get(k), Some(*c));
        }
        prop_assert_eq!(pushed.contacts().get(built.len()), None);
    }
}

proptest! {
    /// A problem built without model data (pushed or filled on any thread
    /// count) holds the same contacts but for their models, which read as
    /// zeros; its solve is the same to the bit; the elastic energy and the
    /// model-based warm start, which read the data, say that it is missing.
    #[test]
    fn without_model_data_only_the_models_are_missing(
        rhs in proptest::collection::vec(arb_rhs(), 1..40),
        threads in 1..4usize,
    ) {
        let built: Vec<Contact> =
            rhs.iter().enumerate().map(|(i, &r)| contact_with_rhs(i, r)).collect();
        let kept = pushed(&built);
        let mut pushed = empty_problem().without_model_data();
        for c in &built {
            pushed.push_contact(*c).unwrap();
        }
        let mut filled = empty_problem().without_model_data();
        let mut extra = vec![(); built.len()];
        filled
            .extend_contacts_with(&mut extra, threads, |i| Ok::<_, ()>((built[i], ())))
            .unwrap();
        prop_assert!(kept.has_model_data() && !pushed.has_model_data());
        let without_models = built.iter().map(|c| Contact { model: ContactModel::default(), ..*c });
        prop_assert!(pushed.contacts().iter().eq(without_models));
        prop_assert_eq!(filled.contacts(), pushed.contacts());
        let expected: f64 = built.iter().map(|c| c.model.elastic_energy()).sum();
        prop_assert!(expected > 0.0 || built.len() == 1);
        prop_assert_eq!(kept.elastic_energy(), Some(expected));
        prop_assert_eq!(pushed.elastic_energy(), None);
        prop_assert_eq!(pgs_solution(&kept), pgs_solution(&pushed));
        let (mut lambda, mut v) = kept.cold_start();
        prop_assert!(ModelWarmStart.initialize(&kept, &mut lambda, &mut v).is_ok());
        prop_assert_eq!(
            ModelWarmStart.initialize(&pushed, &mut lambda, &mut v),
            Err(SolveError::NoModelData { reader: "ModelWarmStart" })
        );
        prop_assert!(ModelWarmStart.reads_model_data());
        prop_assert!(!HistoryWarmStart::default().reads_model_data());
        prop_assert!(!ColdStart.reads_model_data());
    }
}

/// Contact `i` with its frame's tangents turned by `angle` about the normal
/// (0: the tangents `ContactFrame::from_unit_normal` forms, which the
/// problem does not store).
fn contact_with_turned_frame(i: usize, angle: f64) -> Contact {
    let mut c = contact(i, Kind::Valid).unwrap();
    let f = c.jacobian.frame;
    if angle != 0.0 {
        let (s, co) = angle.sin_cos();
        c.jacobian.frame = ContactFrame {
            normal: f.normal,
            tangent1: f.tangent1 * co + f.tangent2 * s,
            tangent2: f.tangent2 * co - f.tangent1 * s,
        };
    }
    c.key = ndem_math::ContactKey::new(0, 1, i as u32);
    c
}

proptest! {
    /// Frames whose tangents are not those of the normal (a problem posed
    /// by hand or read from a file) are kept bit for bit, whichever contact
    /// is the first to have them, pushed or filled on any thread count, and
    /// the solve is that of the same problem pushed. (It guards any record
    /// layout that forms the tangents from the normal and stores others
    /// apart.)
    #[test]
    fn own_tangents_are_kept_pushed_or_filled(
        angles in proptest::collection::vec(
            prop_oneof![3 => Just(0.0), 1 => -3.0..3.0f64], 1..40),
        before in 0..5usize,
        threads in 1..4usize,
    ) {
        let built: Vec<Contact> = angles
            .iter()
            .enumerate()
            .map(|(i, &a)| contact_with_turned_frame(i, a))
            .collect();
        let pushed = pushed(&built);
        prop_assert!(pushed.contacts().iter().eq(built.iter().copied()));
        let before = before.min(built.len());
        let mut filled = empty_problem();
        for c in &built[..before] {
            filled.push_contact(*c).unwrap();
        }
        let mut extra = vec![(); built.len() - before];
        filled
            .extend_contacts_with(&mut extra, threads, |i| Ok::<_, ()>((built[before + i], ())))
            .unwrap();
        for (got, want) in filled.contacts().iter().zip(&built) {
            let f = (got.jacobian.frame, want.jacobian.frame);
            for (x, y) in [(f.0.tangent1, f.1.tangent1), (f.0.tangent2, f.1.tangent2)] {
                prop_assert!(x.iter().zip(y.iter()).all(|(a, b)| a.to_bits() == b.to_bits()));
            }
        }
        prop_assert_eq!(filled.contacts(), pushed.contacts());
        prop_assert_eq!(pgs_solution(&filled), pgs_solution(&pushed));
    }
}

/// How a problem gets its contacts in [`a_problem_in_released_storage_is_a_new_one`].
#[derive(Debug, Clone, Copy)]
enum Adding {
    /// Room reserved for all contacts if `reserve`, `before` pushes, then
    /// a fill on `threads` threads, failing at `fail_at` if given.
    Fill {
        reserve: bool,
        before: usize,
        threads: usize,
        fail_at: Option<usize>,
    },
    /// Pushes one by one.
    Push,
}

fn arb_adding() -> impl Strategy<Value = Adding> {
    prop_oneof![
        3 => (any::<bool>(), 0usize..4, 1usize..5, prop::option::of(0usize..200)).prop_map(
            |(reserve, before, threads, fail_at)| Adding::Fill { reserve, before, threads, fail_at }),
        1 => Just(Adding::Push),
    ]
}

/// Adds `built` to `problem` as `how` says; the fill's result.
fn add(
    problem: &mut ContactProblem,
    built: &[Contact],
    how: Adding,
) -> Result<(), ContactFillError<usize>> {
    match how {
        Adding::Push => {
            for c in built {
                problem.push_contact(*c).unwrap();
            }
            Ok(())
        }
        Adding::Fill {
            reserve,
            before,
            threads,
            fail_at,
        } => {
            if reserve {
                problem.reserve_contacts(built.len());
            }
            let before = before.min(built.len());
            for c in &built[..before] {
                problem.push_contact(*c).unwrap();
            }
            let mut extra = vec![(); built.len() - before];
            problem.extend_contacts_with(&mut extra, threads, |i| match fail_at {
                Some(k) if k == i => Err(k),
                _ => Ok((built[before + i], ())),
            })
        }
    }
}

/// An empty problem over the test's bodies in `storage`, with or without
/// model data.
fn in_storage(storage: &mut ProblemStorage, models: bool) -> ContactProblem {
    let (mut inverse, mut free) = storage.take_bodies();
    let fresh = empty_problem();
    inverse.extend(fresh.inverse_mass().iter());
    free.extend_from_slice(fresh.free_velocity());
    let p = ContactProblem::new(
        inverse,
        free,
        ContactRows::NormalFriction,
        FrictionSet::Disk,
        1e-3,
    )
    .unwrap()
    .reusing(storage);
    if models { p } else { p.without_model_data() }
}

proptest! {
    /// A problem assembled in a released problem's storage, which still
    /// holds the old contacts to be overwritten in place, is the problem
    /// assembled from nothing: fewer or more contacts than before, pushed
    /// or filled on 1-4 threads (with room reserved first, as the stepper
    /// does, or not), with or without model data or tangential `b` on
    /// either side, and after a failed fill; three problems in turn in one
    /// storage.
    #[test]
    fn a_problem_in_released_storage_is_a_new_one(
        problems in prop::collection::vec(
            (prop::collection::vec(arb_rhs(), 0..200), arb_adding(), any::<bool>()),
            3,
        ),
    ) {
        let mut storage = ProblemStorage::new();
        for (k, (rhs, how, models)) in problems.into_iter().enumerate() {
            let built: Vec<Contact> = rhs
                .iter()
                .enumerate()
                .map(|(i, &r)| contact_with_rhs(i + 1000 * k, r))
                .collect();
            let mut fresh = if models { empty_problem() } else { empty_problem().without_model_data() };
            let mut recycled = in_storage(&mut storage, models);
            prop_assert_eq!(recycled.contacts().len(), 0);
            let want = add(&mut fresh, &built, how);
            let got = add(&mut recycled, &built, how);
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(recycled.has_model_data(), fresh.has_model_data());
            prop_assert_eq!(recycled.contacts(), fresh.contacts());
            prop_assert_eq!(recycled.len(), fresh.len());
            prop_assert_eq!(recycled.elastic_energy(), fresh.elastic_energy());
            prop_assert_eq!(pgs_solution(&recycled), pgs_solution(&fresh));
            storage = recycled.into_storage();
        }
    }
}

/// `[Σ_t, Σ_r, μ_t]` of a contact: mostly those of one material pair in one
/// step, sometimes others (a zero of either sign among them).
fn arb_coefficients() -> impl Strategy<Value = [f64; 3]> {
    prop_oneof![
        8 => Just([1e-6, 2e-6, 0.5]),
        1 => Just([-0.0, 2e-6, 0.5]),
        1 => Just([0.0, 2e-6, 0.5]),
        1 => Just([1e-6, 2e-6, 0.0]),
        1 => (0.0..1e-5f64, 0.0..1e-5f64, 0.0..1.0f64).prop_map(|(t, r, mu)| [t, r, mu]),
    ]
}

/// Contact `i` with `Σ_t`, `Σ_r` and `μ_t` from `coefficients`.
fn contact_with_coefficients(i: usize, [sigma_t, sigma_r, mu]: [f64; 3]) -> Contact {
    let mut c = contact(i, Kind::Valid).unwrap();
    c.sigma = [1e-7 * (1 + i % 3) as f64, sigma_t, sigma_r];
    c.friction = mu;
    c.key = ndem_math::ContactKey::new(0, 1, i as u32);
    c
}

/// `Σ` and `μ_t` of a contact as bits (`==` would not tell `−0.0` from `0.0`).
fn coefficient_bits(c: &Contact) -> [u64; 4] {
    [c.sigma[0], c.sigma[1], c.sigma[2], c.friction].map(f64::to_bits)
}

proptest! {
    /// `Σ_t`, `Σ_r` and `μ_t`, which a problem keeps once while every
    /// contact's are the first one's and per contact once one differs,
    /// read back as built, bit for bit (a zero's sign too): pushed or
    /// filled on 1-4 threads, whichever contact is the first to differ,
    /// after a failed fill, and in a released problem's storage whose
    /// contacts had coefficients of their own or not; the solve is that of
    /// the problem built from nothing.
    #[test]
    fn coefficients_read_back_as_built(
        problems in prop::collection::vec(
            (
                prop_oneof![
                    3 => prop::collection::vec(arb_coefficients(), 0..200),
                    // contacts that differ only in a zero's sign
                    1 => prop::collection::vec(
                        prop_oneof![Just([0.0, 2e-6, 0.5]), Just([-0.0, 2e-6, 0.5])],
                        0..200,
                    ),
                ],
                arb_adding(),
            ),
            3,
        ),
    ) {
        let mut storage = ProblemStorage::new();
        for (k, (coefficients, how)) in problems.into_iter().enumerate() {
            let built: Vec<Contact> = coefficients
                .iter()
                .enumerate()
                .map(|(i, &s)| contact_with_coefficients(i + 1000 * k, s))
                .collect();
            let mut fresh = empty_problem();
            let mut recycled = in_storage(&mut storage, true);
            let want = add(&mut fresh, &built, how);
            prop_assert_eq!(&add(&mut recycled, &built, how), &want);
            let kept = match (how, &want) {
                (Adding::Fill { before, .. }, Err(_)) => before.min(built.len()),
                _ => built.len(),
            };
            for p in [&fresh, &recycled] {
                prop_assert_eq!(p.contacts().len(), kept);
                prop_assert!(p.contacts().iter().eq(built[..kept].iter().copied()));
                for (got, want) in p.contacts().iter().zip(&built) {
                    prop_assert_eq!(coefficient_bits(&got), coefficient_bits(want));
                }
            }
            prop_assert_eq!(pgs_solution(&recycled), pgs_solution(&fresh));
            storage = recycled.into_storage();
        }
    }
}

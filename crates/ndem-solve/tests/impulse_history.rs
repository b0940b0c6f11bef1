//! `ImpulseHistory` (a key-sorted vector) against a map model: single and
//! batch inserts, records with keys in any order (of a repeated key the
//! later contact wins) and the warm start's merge walk through the keys
//! give what a `HashMap` keyed by contact gives.

use ndem_math::{ContactFrame, ContactJacobian, ContactKey, InverseMass, Vec3, Velocity6};
use ndem_solve::*;
use proptest::prelude::*;
use std::collections::HashMap;

type Model = HashMap<ContactKey, StoredImpulse>;

fn key((a, b, f): (u32, u32, u32)) -> ContactKey {
    ContactKey::new(a, b, f)
}

fn impulse(x: f64) -> StoredImpulse {
    StoredImpulse {
        normal: x,
        friction: Vec3::new(0.0, x, 0.0),
        rolling: Vec3::zeros(),
    }
}

/// Keys from a small range, so that repeats and misses are common.
fn arb_keys(max: usize) -> impl Strategy<Value = Vec<(u32, u32, u32)>> {
    prop::collection::vec((0u32..6, 0u32..6, 0u32..3), 0..max)
}

/// A problem over 6 bodies with one normal row per contact, keyed `keys`
/// in the given order, and `λ_n = 1, 2, 3, ...`.
fn problem(keys: &[(u32, u32, u32)]) -> (ContactProblem, Vec<f64>) {
    let n = 6;
    let inverse = vec![
        InverseMass {
            inv_mass: 1.0,
            inv_inertia: ndem_math::Mat3::identity(),
        };
        n
    ];
    let mut p = ContactProblem::new(
        inverse,
        vec![Velocity6::default(); n],
        ContactRows::Normal,
        FrictionSet::Box,
        1e-3,
    )
    .unwrap();
    for &k in keys {
        let frame = ContactFrame::from_unit_normal(Vec3::z());
        let jacobian = ContactJacobian::new(frame, &Vec3::zeros(), &Vec3::zeros(), 1.0);
        let c = Contact::builder([0, 1], jacobian)
            .key(key(k))
            .build()
            .unwrap();
        p.push_contact(c).unwrap();
    }
    let lambda = (1..=keys.len()).map(|i| i as f64).collect();
    (p, lambda)
}

proptest! {
    /// Inserts, batch inserts and lookups agree with the map; the sorted
    /// listing is the map's entries in key order.
    #[test]
    fn inserts_agree_with_a_map(
        single in arb_keys(40),
        batch in arb_keys(40),
        asked in arb_keys(40),
    ) {
        let (mut history, mut model) = (ImpulseHistory::new(), Model::new());
        for (i, &k) in single.iter().enumerate() {
            history.insert(key(k), impulse(i as f64));
            model.insert(key(k), impulse(i as f64));
        }
        let entries: Vec<_> = batch.iter().enumerate().map(|(i, &k)| (key(k), impulse(100.0 + i as f64))).collect();
        history.extend(entries.iter().copied());
        model.extend(entries);
        prop_assert_eq!(history.len(), model.len());
        for &k in single.iter().chain(&batch).chain(&asked) {
            prop_assert_eq!(history.get(&key(k)), model.get(&key(k)));
        }
        let mut listed: Vec<_> = model.iter().map(|(k, v)| (*k, *v)).collect();
        listed.sort_by_key(|e| e.0);
        prop_assert_eq!(history.sorted_contacts(), listed);
    }

    /// A record keeps the last contact of each key; the history warm start
    /// then finds, through its walk, exactly the contacts the map has,
    /// whatever the order of the second problem's keys.
    #[test]
    fn records_and_warm_starts_agree_with_a_map(
        recorded in arb_keys(30),
        started in arb_keys(30),
        sorted in any::<bool>(),
    ) {
        let (first, lambda) = problem(&recorded);
        let mut history = ImpulseHistory::new();
        history.insert(key((9, 9, 9)), impulse(-1.0)); // forgotten by the record
        history.record(&first, &lambda);
        let model: HashMap<ContactKey, f64> =
            recorded.iter().zip(&lambda).map(|(&k, &l)| (key(k), l)).collect();
        prop_assert_eq!(history.len(), model.len());
        prop_assert_eq!(history.get(&key((9, 9, 9))), None);
        let mut started = started;
        if sorted {
            started.sort_unstable();
        }
        let (second, _) = problem(&started);
        let warm = HistoryWarmStart { beta: 1.0, history, ..HistoryWarmStart::default() };
        let (mut l0, mut v0) = (vec![0.0; second.len()], vec![Velocity6::default(); 6]);
        let mut warm = warm;
        let stats = warm.initialize(&second, &mut l0, &mut v0).unwrap();
        let expected: Vec<f64> = started.iter().map(|k| model.get(&key(*k)).copied().unwrap_or(0.0)).collect();
        prop_assert_eq!(&l0, &expected);
        let found = started.iter().filter(|k| model.contains_key(&key(**k))).count();
        prop_assert_eq!(stats.warm, found);
        prop_assert_eq!(stats.cold, started.len() - found);
    }

    /// A hold keeps, of the keys it is given (in any order, repeated, or
    /// stored nowhere), the impulses the history has for them, stored or
    /// held before; a record forgets what it is not given except the held
    /// contacts, which lookups, the warm start's walk and the sorted
    /// listing still find, after the stored ones.
    #[test]
    fn held_contacts_agree_with_a_map(
        stored in arb_keys(30),
        first_hold in arb_keys(20),
        recorded in arb_keys(20),
        second_hold in arb_keys(20),
        asked in arb_keys(30),
        sorted in any::<bool>(),
    ) {
        let entries: Vec<_> = stored
            .iter()
            .enumerate()
            .map(|(i, &k)| (key(k), impulse(i as f64)))
            .collect();
        let mut history = ImpulseHistory::new();
        history.extend(entries.iter().copied());
        // of a repeated key the map keeps the last, as the history does
        let mut main: Model = entries.into_iter().collect();
        let mut held = Model::new();
        let hold = |history: &mut ImpulseHistory, main: &Model, held: &mut Model, keys: &[(u32, u32, u32)]| {
            let mut keys = keys.to_vec();
            if sorted {
                keys.sort_unstable();
            }
            *held = keys
                .iter()
                .filter_map(|&k| main.get(&key(k)).or(held.get(&key(k))).map(|i| (key(k), *i)))
                .collect();
            history.hold(keys.iter().map(|&k| key(k)));
        };
        hold(&mut history, &main, &mut held, &first_hold);
        let (first, lambda) = problem(&recorded);
        history.record(&first, &lambda);
        // a normal row along z with s_n = 1 stores `λ_n` and no friction
        main = recorded.iter().zip(&lambda).map(|(&k, &l)| (key(k), impulse_normal(l))).collect();
        hold(&mut history, &main, &mut held, &second_hold);
        let found = |k: &ContactKey| main.get(k).or(held.get(k)).copied();
        let every = stored.iter().chain(&first_hold).chain(&recorded).chain(&second_hold).chain(&asked);
        for &k in every {
            prop_assert_eq!(history.get(&key(k)).copied(), found(&key(k)));
        }
        let mut listed: Vec<_> = held
            .iter()
            .filter(|(k, _)| !main.contains_key(k))
            .chain(main.iter())
            .map(|(k, v)| (*k, *v))
            .collect();
        listed.sort_by_key(|e| e.0);
        prop_assert_eq!(history.sorted_contacts(), listed);
        let mut asked = asked;
        asked.sort_unstable();
        let (second, _) = problem(&asked);
        let mut warm = HistoryWarmStart { beta: 1.0, history, ..HistoryWarmStart::default() };
        let (mut l0, mut v0) = (vec![0.0; second.len()], vec![Velocity6::default(); 6]);
        warm.initialize(&second, &mut l0, &mut v0).unwrap();
        let expected: Vec<f64> = asked.iter().map(|&k| found(&key(k)).map_or(0.0, |i| i.normal)).collect();
        prop_assert_eq!(&l0, &expected);
    }
}

fn impulse_normal(x: f64) -> StoredImpulse {
    StoredImpulse {
        normal: x,
        ..StoredImpulse::default()
    }
}

/// The history warm start and record on several threads (contacts shared
/// in blocks of at least 8192) give the one-thread `λ₀`, `v₀`, counts and
/// history, bit for bit, on a packing of some 2.5·10⁴ contacts whose
/// history holds every other contact.
#[test]
fn warm_start_and_record_are_the_same_on_any_thread_count() {
    use ndem_testkit::generate::{PackingSpec, sphere_packing};
    let problem = sphere_packing(&PackingSpec {
        cells: [24, 24, 15],
        speed: 0.05,
        ..PackingSpec::default()
    })
    .expect("a valid spec");
    assert!(
        problem.contacts().len() >= 3 * 8192,
        "{}",
        problem.contacts().len()
    );
    let mut pgs = ProjectedGaussSeidel::with_stopping(Stopping::iterations(5)).unwrap();
    let (mut lambda, mut v) = problem.cold_start();
    pgs.solve(&problem, &mut lambda, &mut v).unwrap();
    let mut serial = ImpulseHistory::new();
    serial.record(&problem, &lambda);
    for threads in [0, 2, 3] {
        let mut shared = ImpulseHistory::new();
        shared.record_on(&problem, &lambda, threads);
        assert!(shared == serial, "record on {threads} threads");
    }
    // every other contact known
    let known: Vec<_> = serial.sorted_contacts().into_iter().step_by(2).collect();
    let start = |threads: usize| {
        let mut history = ImpulseHistory::new();
        history.extend(known.iter().copied());
        let mut warm = HistoryWarmStart {
            history,
            threads,
            ..HistoryWarmStart::default()
        };
        let (mut l0, mut v0) = (
            vec![0.0; problem.len()],
            vec![Velocity6::default(); problem.body_count()],
        );
        let stats = warm.initialize(&problem, &mut l0, &mut v0).unwrap();
        (l0, v0, stats)
    };
    let (l1, v1, s1) = start(1);
    assert_eq!(s1.warm, known.len());
    assert!(l1.iter().any(|&x| x != 0.0));
    for threads in [0, 2, 3] {
        let (l, v, s) = start(threads);
        assert!(l == l1 && v == v1, "start on {threads} threads");
        assert_eq!(s, s1);
    }
}

/// A record of keys in increasing order but for one place (a swap, or a
/// repeated key) anywhere among 7·10⁴ contacts, so in any part of the
/// order check's (at least 32 768 entries per thread), is sorted and keeps
/// the later of a repeated key, on any thread count, as the map does.
#[test]
fn a_record_finds_a_key_out_of_order_in_any_part() {
    let n = 70_000u32;
    let sorted: Vec<(u32, u32, u32)> = (0..n).map(|i| (i / 1000, i % 1000, 0)).collect();
    for at in [1, 17, 32_767, 32_768, 40_000, 65_536, n as usize - 1] {
        for repeat in [false, true] {
            let mut keys = sorted.clone();
            if repeat {
                keys[at] = keys[at - 1];
            } else {
                keys.swap(at - 1, at);
            }
            let (p, lambda) = problem(&keys);
            let model: HashMap<ContactKey, f64> = keys
                .iter()
                .zip(&lambda)
                .map(|(&k, &l)| (key(k), l))
                .collect();
            for threads in [1, 2, 3] {
                let mut history = ImpulseHistory::new();
                history.record_on(&p, &lambda, threads);
                assert_eq!(history.len(), model.len(), "at {at} repeat {repeat}");
                let listed = history.sorted_contacts();
                assert!(listed.windows(2).all(|w| w[0].0 < w[1].0));
                for (k, s) in listed {
                    assert_eq!(Some(&s.normal), model.get(&k), "at {at} threads {threads}");
                }
            }
        }
    }
}

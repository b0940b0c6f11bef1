//! The partial background solve (`TrialSplit::depth`, the paper's eq. 40
//! with a fraction β < 1 of the system) on a 5×5×3 simple-cubic block
//! resting on a floor and merged into one aggregate: its layers, the
//! problem it solves, what it may split, and that a depth reaching every
//! member is the whole trial solve bit for bit.

use ndem_math::{Material, Vec3};
use ndem_reduce::trial::{held_beyond, held_members, partial_problem};
use ndem_reduce::*;
use ndem_step::{MaterialId, StepSettings, Stepper, World};

mod common;
use common::{R, merged_block};

/// The merged block with a trial solve of `depth` layers, gravity tilted
/// by 60° (tan 60° > μ = 0.91: the block must slide or shear).
fn tilted_block(depth: Option<usize>) -> (World, Stepper) {
    let trial = TrialSplit {
        depth,
        ..TrialSplit::default()
    };
    let (mut w, st) = merged_block(Some(trial));
    let (g, a) = (9.81, 60f64.to_radians());
    w.gravity = Vec3::new(g * a.sin(), 0.0, -g * a.cos());
    (w, st)
}

/// [`partial_problem`] over `aggregates` (host, members).
fn partial_of(
    w: &World,
    contacts: &ndem_collide::ContactSet,
    settings: &StepSettings,
    aggregates: &[(usize, Vec<usize>)],
    held: &[bool],
) -> ndem_reduce::trial::TrialProblem {
    let listed = aggregates.iter().map(|(b, m)| (*b, m.as_slice()));
    partial_problem(w, contacts, settings, listed, held).unwrap()
}

/// The block's lattice indices `[x, y, z]` of body `i` (spacing 2r).
fn site(w: &World, i: usize) -> [usize; 3] {
    let p = w.positions()[i];
    [p.x, p.y, p.z - R].map(|c| (c / (2.0 * R)).round() as usize)
}

/// Every member of the 5×5×3 block but the 3×3 in the middle of its middle
/// layer touches the floor or lies on its free surface (an open side), so
/// depth 1 holds those 9 and depth 2 none. The partial problem at depth 1
/// carries them as one body: it leaves out exactly their 12 mutual
/// contacts, and that body has their mass.
#[test]
fn layers_are_counted_from_the_aggregates_boundary() {
    let (w, mut st) = merged_block(None);
    let contacts = st.contacts().clone();
    let inner = |i: usize| {
        let [x, y, z] = site(&w, i);
        (1..=3).contains(&x) && (1..=3).contains(&y) && z == 1
    };
    for (depth, expected) in [(1, 9), (2, 0), (10, 0)] {
        let held = held_members(&w, &contacts, depth);
        assert_eq!(
            held.iter().filter(|&&h| h).count(),
            expected,
            "depth {depth}"
        );
        for (i, &h) in held.iter().enumerate() {
            let deep = w.is_member(i) && depth == 1 && inner(i);
            assert_eq!(h, deep, "depth {depth}, body {i}");
        }
    }
    let held = held_members(&w, &contacts, 1);
    let settings = *st.settings();
    let (whole, _) = ndem_step::unfolded_problem(&w, &contacts, &settings).unwrap();
    let reducer = st.hooks_as::<Reducer>().unwrap();
    let aggregates: Vec<(usize, Vec<usize>)> = reducer
        .aggregates()
        .map(|(_, a)| (a.body, a.members.clone()))
        .collect();
    let trial = partial_of(&w, &contacts, &settings, &aggregates, &held);
    let both_held = contacts
        .as_slice()
        .iter()
        .filter(|c| held[c.body_a()] && held[c.body_b()])
        .count();
    println!(
        "unfolded problem: {} contacts; at depth 1: {} ({both_held} between held members)",
        whole.contacts().len(),
        trial.problem.contacts().len()
    );
    assert_eq!(both_held, 12);
    assert_eq!(
        trial.problem.contacts().len() + both_held,
        whole.contacts().len()
    );
    assert!(trial.index.iter().all(|&k| {
        let c = &contacts.as_slice()[k];
        !(held[c.body_a()] && held[c.body_b()])
    }));
    // the carrier of the held members: one body past the world's, 9 spheres' mass
    let partial = trial.partial_world.as_ref().unwrap();
    assert_eq!(partial.len(), w.len() + 1);
    let sphere = w.mass_properties()[1].unwrap().mass;
    let carried = partial.mass_properties()[w.len()].unwrap().mass;
    assert!(
        (carried - 9.0 * sphere).abs() <= 1e-12 * carried,
        "{carried}"
    );
}

/// Gravity tilted by 60° loads the block: the trial at depth 1, whose 9
/// held members are one rigid body inside the 66 it solves, splits members
/// (measured: 57; at most the 66 it solves), and the whole trial splits
/// deeper than the bottom layer's 25 (measured: 50).
#[test]
fn a_partial_trial_splits_only_the_layers_it_solves() {
    let split_after_tilt = |depth: Option<usize>| {
        let (mut w, mut st) = tilted_block(depth);
        st.step(&mut w).unwrap();
        st.hooks_as::<Reducer>().unwrap().stats().split_members
    };
    let split_part = split_after_tilt(Some(1));
    let split_whole = split_after_tilt(None);
    println!("members split at depth 1: {split_part}; by the whole trial: {split_whole}");
    assert!(split_part > 0);
    assert!(split_part <= 66, "{split_part}");
    assert!(split_whole > 25, "{split_whole}");
}

/// A depth that reaches every member holds none: the same problem, the
/// same splits and the same trajectory, bit for bit, as the whole trial,
/// through a tilt that splits. Depth 0 is a typed error naming the field.
#[test]
fn a_depth_past_every_member_is_the_whole_trial() {
    let run = |depth: Option<usize>| {
        let (mut w, mut st) = tilted_block(depth);
        let mut split = 0;
        for _ in 0..30 {
            st.step(&mut w).unwrap();
            split += st.hooks_as::<Reducer>().unwrap().stats().split_members;
        }
        let bits: Vec<u64> = w
            .positions()
            .iter()
            .flat_map(|p| p.iter().map(|x| x.to_bits()))
            .collect();
        (bits, split)
    };
    let (whole, split) = run(None);
    let (deep, split_deep) = run(Some(1000));
    assert!(split > 0);
    assert_eq!(split, split_deep);
    assert_eq!(whole, deep);
    let bad = ReductionSettings {
        trial_split: Some(TrialSplit {
            depth: Some(0),
            ..TrialSplit::default()
        }),
        ..ReductionSettings::default()
    };
    assert!(matches!(
        Reducer::new(bad),
        Err(ReduceError::InvalidSettings {
            field: "trial_split.depth",
            ..
        })
    ));
}

/// A lattice stack of `[nx, ny, nz]` spheres resting on a floor after 20
/// steps (the layers, which start exactly touching, pressed into contact
/// and detected), cut along x into `slabs` aggregates with
/// the spheres `free` marks (by lattice index) left out; returns the
/// world, the step's contacts, the stepper's settings and the aggregates
/// (host, members).
fn sliced_stack(
    [nx, ny, nz]: [usize; 3],
    slabs: usize,
    free: &[bool],
) -> (
    World,
    ndem_collide::ContactSet,
    StepSettings,
    Vec<(usize, Vec<usize>)>,
) {
    let mut w = World::on_floor(Material::default()).unwrap();
    let range = w
        .add_sphere_stack(R, MaterialId::from_index(0), [nx, ny, nz])
        .unwrap();
    let mut st = Stepper::new(
        StepSettings::papers(),
        Box::new(ndem_solve::ProjectedGaussSeidel::default()),
        Box::new(ndem_solve::ColdStart),
    )
    .unwrap();
    for _ in 0..20 {
        st.step(&mut w).unwrap();
    }
    let contacts = st.contacts().clone();
    let bodies: Vec<usize> = range.iter().map(|b| b.index()).collect();
    let mut reducer = Reducer::new(ReductionSettings::default()).unwrap();
    for s in 0..slabs {
        // lattice index k = i + nx·(j + ny·l) for x-index i (x fastest)
        let slab: Vec<ndem_step::BodyId> = bodies
            .iter()
            .enumerate()
            .filter(|&(k, _)| (k % nx) * slabs / nx == s && !free[k % free.len()])
            .map(|(_, &b)| ndem_step::BodyId::from_index(b))
            .collect();
        if slab.len() >= 2 {
            reducer.merge_bodies(&mut w, &slab).unwrap();
        }
    }
    let aggregates = reducer
        .aggregates()
        .map(|(_, a)| (a.body, a.members.clone()))
        .collect();
    (w, contacts, *st.settings(), aggregates)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// On stacks cut into aggregates with some spheres left free: only
    /// members are held; a member touching a body outside its aggregate
    /// never is; a deeper trial holds a subset of a shallower one's; a
    /// depth past every member holds none (every aggregate here touches
    /// the floor or a free sphere and is connected); and the partial
    /// problem leaves out exactly the contacts between held members of one
    /// aggregate, with one carrier per aggregate that holds members,
    /// carrying their mass.
    #[test]
    fn held_layers_and_the_partial_problem_keep_their_invariants(
        dims in (2usize..5, 2usize..4, 2usize..5),
        slabs in 1usize..3,
        free in proptest::collection::vec(proptest::bool::weighted(0.15), 7..13),
        depth in 1usize..4,
    ) {
        let (nx, ny, nz) = dims;
        let (w, contacts, settings, aggregates) = sliced_stack([nx, ny, nz], slabs.min(nx), &free);
        let shallow = held_members(&w, &contacts, depth);
        let deep = held_members(&w, &contacts, depth + 1);
        let past = held_members(&w, &contacts, nx * ny * nz);
        for i in 0..w.len() {
            proptest::prop_assert!(!shallow[i] || w.is_member(i));
            proptest::prop_assert!(!deep[i] || shallow[i], "body {}", i);
            proptest::prop_assert!(!past[i], "body {} held past every member", i);
        }
        for c in contacts.as_slice() {
            let (a, b) = (c.body_a(), c.body_b());
            if w.host_of(a) != w.host_of(b) {
                proptest::prop_assert!(!shallow[a] && !shallow[b]);
            }
        }
        let trial = partial_of(&w, &contacts, &settings, &aggregates, &shallow);
        let (whole, _) = ndem_step::unfolded_problem(&w, &contacts, &settings).unwrap();
        let inner_held = contacts
            .as_slice()
            .iter()
            .filter(|c| {
                let (a, b) = (c.body_a(), c.body_b());
                shallow[a] && shallow[b] && w.host_of(a) == w.host_of(b)
            })
            .count();
        proptest::prop_assert_eq!(trial.problem.contacts().len() + inner_held, whole.contacts().len());
        let partial = trial.partial_world.as_ref().unwrap();
        let holding: Vec<&(usize, Vec<usize>)> = aggregates
            .iter()
            .filter(|(_, m)| m.iter().any(|&x| shallow[x]))
            .collect();
        proptest::prop_assert_eq!(partial.len(), w.len() + holding.len());
        for (k, (_, members)) in holding.iter().enumerate() {
            let carried: f64 = members
                .iter()
                .filter(|&&x| shallow[x])
                .map(|&x| w.mass_properties()[x].unwrap().mass)
                .sum();
            let mass = partial.mass_properties()[w.len() + k].unwrap().mass;
            proptest::prop_assert!((mass - carried).abs() <= 1e-12 * carried, "{} vs {}", mass, carried);
        }
    }

    /// Layers counted from seeds (the disturbed members of
    /// `TrialSplit::disturbed_only`) on the same stacks: a seed or a body
    /// that is no member is never held; a deeper trial holds a subset of
    /// a shallower one's; with no bound on the depth exactly the members
    /// that no seed reaches through contacts inside their aggregate are
    /// held (an aggregate cut by a free sphere is two groups), and with no
    /// seed every member is.
    #[test]
    fn layers_from_seeds_hold_what_no_seed_reaches(
        dims in (2usize..5, 2usize..4, 2usize..5),
        slabs in 1usize..3,
        free in proptest::collection::vec(proptest::bool::weighted(0.15), 7..13),
        seed_pattern in proptest::collection::vec(proptest::bool::weighted(0.05), 5..11),
        depth in 1usize..4,
    ) {
        let (nx, ny, nz) = dims;
        let (w, contacts, _, aggregates) = sliced_stack([nx, ny, nz], slabs.min(nx), &free);
        let seeds: Vec<bool> = (0..w.len())
            .map(|i| w.is_member(i) && seed_pattern[i % seed_pattern.len()])
            .collect();
        let shallow = held_beyond(&w, &contacts, Some(&seeds), Some(depth));
        let deep = held_beyond(&w, &contacts, Some(&seeds), Some(depth + 1));
        let unbounded = held_beyond(&w, &contacts, Some(&seeds), None);
        let unseeded = held_beyond(&w, &contacts, Some(&vec![false; w.len()]), None);
        for i in 0..w.len() {
            proptest::prop_assert!(!shallow[i] || (w.is_member(i) && !seeds[i]), "body {}", i);
            proptest::prop_assert!(!deep[i] || shallow[i], "body {}", i);
            proptest::prop_assert!(!unbounded[i] || deep[i], "body {}", i);
            proptest::prop_assert_eq!(unseeded[i], w.is_member(i), "body {}", i);
        }
        // the groups of members joined by contacts inside one aggregate
        let mut group: Vec<usize> = (0..w.len()).collect();
        fn root(group: &mut [usize], mut x: usize) -> usize {
            while group[x] != x {
                group[x] = group[group[x]];
                x = group[x];
            }
            x
        }
        for c in contacts.as_slice() {
            let (a, b) = (c.body_a(), c.body_b());
            if w.host_of(a).is_some() && w.host_of(a) == w.host_of(b) {
                let (ra, rb) = (root(&mut group, a), root(&mut group, b));
                group[ra] = rb;
            }
        }
        let mut seeded = vec![false; w.len()];
        for i in (0..w.len()).filter(|&i| seeds[i]) {
            let r = root(&mut group, i);
            seeded[r] = true;
        }
        for (_, members) in &aggregates {
            for &m in members {
                let r = root(&mut group, m);
                proptest::prop_assert_eq!(unbounded[m], !seeded[r], "member {}", m);
            }
        }
    }
}

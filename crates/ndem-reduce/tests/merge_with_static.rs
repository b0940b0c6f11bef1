//! Aggregates merged with static geometry
//! (`ReductionSettings::merge_with_static`): held at rest on a static
//! host, their contacts with the floor out of the solve, split as any
//! other aggregate.

use ndem_collide::Shape;
use ndem_math::{Material, Quat, Vec3};
use ndem_reduce::{AggregateId, Reducer, ReductionSettings, SensorSplit};
use ndem_step::{BodyId, MaterialId, Stepper, World};

mod common;
use common::{R, papers_stepper};

/// A simple-cubic stack of `n` spheres on the floor (body 0) after 200
/// steps without the reducer: at rest.
fn settled(n: [usize; 3]) -> (World, Stepper) {
    let mut w = World::on_floor(Material::default()).unwrap();
    w.add_sphere_stack(R, MaterialId::from_index(0), n).unwrap();
    let mut st = papers_stepper(100);
    for _ in 0..200 {
        st.step(&mut w).unwrap();
    }
    (w, st)
}

/// [`settled`] after 10 steps merging with the floor.
fn anchored(n: [usize; 3]) -> (World, Stepper) {
    let (mut w, mut st) = settled(n);
    st.set_hooks(reducer(true, Vec::new()));
    for _ in 0..10 {
        st.step(&mut w).unwrap();
    }
    (w, st)
}

fn reducer(merge_with_static: bool, sensors: Vec<SensorSplit>) -> Box<Reducer> {
    Box::new(
        Reducer::new(ReductionSettings {
            merge_with_static,
            sensors,
            ..ReductionSettings::default()
        })
        .unwrap(),
    )
}

/// The live aggregates: each one's handle, whether it is anchored, and
/// all their members, sorted.
fn aggregates(st: &mut Stepper, w: &World) -> (Vec<(AggregateId, bool)>, Vec<usize>) {
    let r = st.hooks_as::<Reducer>().unwrap();
    let mut members: Vec<usize> = r
        .aggregates()
        .flat_map(|(_, a)| a.members.iter().copied())
        .collect();
    members.sort_unstable();
    let ids = r
        .aggregates()
        .map(|(id, _)| (id, r.is_anchored(w, id)))
        .collect();
    (ids, members)
}

/// The 5 × 5 × 3 block at rest merges with the floor: every sphere a
/// member of an anchored aggregate (the settled lattice leaves gaps
/// between some columns wider than the merge's touching distance, so it
/// is four), every member at rest exactly, no contact left in the solve,
/// the floor's 25 contacts held with the impulses they had. With the
/// setting off the same block is dynamic aggregates standing on their 25
/// floor contacts.
#[test]
fn a_block_at_rest_on_the_floor_merges_with_it() {
    for on_static in [false, true] {
        let (mut w, mut st) = settled([5, 5, 3]);
        let potential = w.potential_energy();
        st.set_hooks(reducer(on_static, Vec::new()));
        let mut stats = st.step(&mut w).unwrap();
        for _ in 0..20 {
            stats = st.step(&mut w).unwrap();
        }
        let (ids, members) = aggregates(&mut st, &w);
        println!(
            "merge_with_static {on_static}: {} aggregates, contacts in the solve {} of {}",
            ids.len(),
            stats.contacts,
            stats.detected_contacts
        );
        assert_eq!(members, (1..=75).collect::<Vec<_>>());
        assert!(ids.iter().all(|&(_, anchored)| anchored == on_static));
        // the members' potential energy stays in the world's sums, through
        // a dynamic host or by themselves on a static one
        let change = (w.potential_energy() - potential).abs() / potential.abs();
        println!("potential energy {potential:e} J, relative change {change:e}");
        // measured 1.8e-12 (the dynamic aggregate's centre) and 0
        assert!(change < 1e-11, "{change:e}");
        if on_static {
            assert_eq!(stats.contacts, 0);
            for m in members {
                let v = w.velocity(BodyId::from_index(m));
                assert_eq!(v.linear, Vec3::zeros(), "member {m}");
                assert_eq!(v.angular, Vec3::zeros(), "member {m}");
            }
            // the floor contacts keep their last solved impulses: the
            // block's weight, to the last full solve's accuracy
            let history = st.history().unwrap();
            let held: f64 = st
                .contacts()
                .iter()
                .filter(|c| c.body_a() == 0 || c.body_b() == 0)
                .map(|c| history.get(&c.key).map_or(0.0, |i| i.normal))
                .sum();
            let weight = 75.0 * w.mass_properties()[1].unwrap().mass * 9.81 * st.settings().dt;
            let error = (held - weight).abs() / weight;
            println!("held floor impulse {held:e} N s, {error:e} from the weight's");
            assert!(error < 1e-12, "{held} vs {weight}");
        } else {
            assert_eq!(ids.len(), 1);
            assert_eq!(stats.contacts, 25);
        }
    }
}

/// A sphere dropped on the anchored column splits its top two members
/// (contact split, depth 2) before the impact stage and rebounds; at rest
/// again after the solve, the freed members merge back with the anchored
/// column in the same step (as a dynamic aggregate's do).
#[test]
fn a_sphere_dropped_on_an_anchored_column_splits_its_top_and_rebounds() {
    let (mut w, mut st) = anchored([1, 1, 25]);
    let (ids, members) = aggregates(&mut st, &w);
    assert_eq!(ids.len(), 1);
    assert!(ids[0].1);
    assert_eq!(members, (1..=25).collect::<Vec<_>>());
    let split = common::drop_on_top(&mut w, &mut st, 25).expect("no split");
    let (freed, (before, after), ball) = (split.freed, split.ball_vz, split.ball);
    println!("{freed} members freed, ball v_z {before} -> {after}");
    assert_eq!(freed, 2);
    assert!(before < -0.15 && after > 0.0, "{before} -> {after}");
    let (ids, members) = aggregates(&mut st, &w);
    assert_eq!(ids.len(), 1);
    assert!(ids[0].1);
    assert_eq!(members, (1..=25).collect::<Vec<_>>());
    assert!(!w.is_member(ball.index()));
}

/// A sensor over the bottom layer of the anchored block frees it: the two
/// layers above no longer touch the floor and become a dynamic aggregate
/// starting at rest, which then stands on the freed layer (moving by
/// less than a micrometre).
#[test]
fn the_part_that_loses_the_floor_becomes_a_dynamic_aggregate() {
    let (mut w, mut st) = anchored([5, 5, 3]);
    let bottom = Shape::cuboid(Vec3::new(0.1, 0.1, 0.1 * R)).unwrap();
    let sensor = SensorSplit::fixed(bottom, Vec3::new(0.0, 0.0, R), Quat::identity());
    let z_before = w.positions()[75].z;
    let mut r = *reducer(true, vec![sensor]);
    let state = st.hooks_as::<Reducer>().unwrap().state();
    r = Reducer::restore(r.settings().clone(), state, &w).unwrap();
    st.set_hooks(Box::new(r));
    st.step(&mut w).unwrap();
    let (ids, members) = aggregates(&mut st, &w);
    assert_eq!(members, (26..=75).collect::<Vec<_>>());
    assert!(ids.iter().all(|&(_, anchored)| !anchored));
    for b in 1..=25 {
        assert!(!w.is_member(b), "body {b}");
    }
    for _ in 0..40 {
        st.step(&mut w).unwrap();
    }
    let sink = z_before - w.positions()[75].z;
    println!("top sphere sank {sink:e} m");
    // the bottom layer's contacts, now solved at full resolution, carry
    // the two layers: measured 0.76 µm (a rise), bound 7 µm
    assert!(sink.abs() < 7e-6, "{sink}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(16))]

    /// On any small stack merged with the floor and hit by a sphere
    /// dropped anywhere over it: every member of an anchored aggregate is
    /// at rest exactly and keeps its position (to the round-off of being
    /// placed again through a re-formed host's frame; bit for bit over a
    /// step that merged and split nothing), except over a step in which
    /// the pressed split released an anchored aggregate, whose rest is
    /// then dynamic for the step and may move before it anchors again;
    /// every sphere is free or a member of one aggregate; and no contact
    /// between two immovable carriers is in the solve (the solved contacts
    /// are the detected ones less those inside one carrier and those
    /// between two immovable carriers).
    #[test]
    fn anchored_members_rest_and_immovable_pairs_leave_the_solve(
        nx in 1usize..4, ny in 1usize..4, nz in 1usize..4,
        drop_x in 0.0f64..1.0, drop_y in 0.0f64..1.0,
    ) {
        let (mut w, mut st) = settled([nx, ny, nz]);
        st.set_hooks(reducer(true, Vec::new()));
        for _ in 0..5 {
            st.step(&mut w).unwrap();
        }
        let top = w.positions().iter().map(|p| p.z).fold(0.0, f64::max);
        let at = Vec3::new(drop_x * 2.0 * R * nx as f64, drop_y * 2.0 * R * ny as f64, top + 3.0 * R);
        let ball = w.add_sphere(R, MaterialId::from_index(0), at).unwrap();
        for _ in 0..30 {
            let anchored_before: Vec<(usize, Vec3)> = (0..w.len())
                .filter(|&b| w.host_of(b).is_some_and(|h| w.motions()[h] == ndem_step::Motion::Static))
                .map(|b| (b, w.positions()[b]))
                .collect();
            let stats = st.step(&mut w).unwrap();
            let fixed = |b: usize| {
                let c = w.carrier(b);
                w.motions()[c] != ndem_step::Motion::Dynamic
            };
            // memberships before the step's solve are those after its
            // split, which the merge after it may change: count with the
            // contacts' carriers only when nothing merged
            let rs = st.hooks_as::<Reducer>().unwrap().stats();
            if rs.merges == 0 {
                let expected = st
                    .contacts()
                    .iter()
                    .filter(|c| {
                        let (a, b) = (c.body_a(), c.body_b());
                        w.carrier(a) != w.carrier(b) && !(fixed(a) && fixed(b))
                    })
                    .count();
                proptest::prop_assert_eq!(stats.contacts, expected);
            }
            for (b, x) in anchored_before {
                let Some(now) = w.host_of(b) else { continue };
                if w.motions()[now] != ndem_step::Motion::Static {
                    continue;
                }
                let v = w.velocity(BodyId::from_index(b));
                proptest::prop_assert_eq!(v.linear, Vec3::zeros());
                proptest::prop_assert_eq!(v.angular, Vec3::zeros());
                // a split and re-merge places it again through its new
                // host's frame: the same position to the round-off of
                // positions and offsets (the stack is at most 6 R across);
                // a pressed aggregate's rest is dynamic for the step
                if rs.pressed_members == 0 {
                    let moved = (w.positions()[b] - x).norm();
                    let scale = x.norm() + 6.0 * R;
                    proptest::prop_assert!(moved <= 4.0 * f64::EPSILON * scale, "moved {moved:e}");
                }
                if rs.merges == 0 && rs.split_members == 0 {
                    proptest::prop_assert_eq!(w.positions()[b].map(f64::to_bits), x.map(f64::to_bits));
                }
            }
            let (_, members) = aggregates(&mut st, &w);
            let mut unique = members.clone();
            unique.dedup();
            proptest::prop_assert_eq!(unique.len(), members.len());
            proptest::prop_assert!(!w.is_member(ball.index()) || members.contains(&ball.index()));
        }
    }
}

/// A kinematic wall pushed slowly (10 mm/s, below the contact split's
/// 0.15 m/s) into the anchored block frees the members it meets and
/// leaves the rest of their aggregate dynamic, so that the solve can push
/// them. Measured largest overlap over 100 steps: 0.020 R against the
/// block left dynamic, 0.045 R anchored (each anchored aggregate behind
/// is squeezed for a step before it is pressed too), 0.224 R when only
/// the members the wall touches are freed; bound 3 times the dynamic
/// block's.
#[test]
fn a_kinematic_wall_pushed_into_an_anchored_block_frees_what_it_meets() {
    let push = |on_static: bool| {
        let mut w = World::on_floor(Material::default()).unwrap();
        w.add_sphere_stack(R, MaterialId::from_index(0), [5, 5, 3])
            .unwrap();
        // the block spans x in [0, 10 R]; the wall's face at x = -1 mm
        let half = Vec3::new(R, 6.0 * R, 3.0 * R);
        let mut desc = ndem_step::BodyDesc::fixed(
            Shape::cuboid(half).unwrap(),
            MaterialId::from_index(0),
            Vec3::new(-R - 1e-3 - half.x, 4.0 * R, 3.0 * R),
        );
        desc.motion = ndem_step::Motion::Kinematic;
        let wall = w.add_body(desc).unwrap();
        let mut st = papers_stepper(100);
        for _ in 0..200 {
            st.step(&mut w).unwrap();
        }
        st.set_hooks(reducer(on_static, Vec::new()));
        for _ in 0..10 {
            st.step(&mut w).unwrap();
        }
        let (ids, _) = aggregates(&mut st, &w);
        assert!(!ids.is_empty() && ids.iter().all(|&(_, a)| a == on_static));
        w.set_velocity(
            wall,
            ndem_math::Velocity6::new(Vec3::new(0.01, 0.0, 0.0), Vec3::zeros()),
        )
        .unwrap();
        let (mut overlap, mut freed) = (0.0f64, 0);
        for _ in 0..100 {
            let s = st.step(&mut w).unwrap();
            overlap = overlap.max(s.overlap_max);
            freed += st.hooks_as::<Reducer>().unwrap().stats().split_members;
        }
        println!(
            "merge_with_static {on_static}: largest overlap {overlap:.4} R, {freed} members freed"
        );
        (overlap, freed)
    };
    let (dynamic, _) = push(false);
    let (anchored, freed) = push(true);
    assert!(freed > 0);
    assert!(anchored <= 3.0 * dynamic, "{anchored} against {dynamic}");
}

/// The forces a frame writes for the merged 5 × 5 × 3 block: the solved
/// contacts (`held` false) and, marked `held`, the contacts inside the
/// aggregates with the impulses they had when last solved. Every detected
/// contact of the block with an impulse is one or the other. Dynamic aggregates stand on
/// their 25 solved floor contacts; merged with the floor, the block's
/// floor contacts are held too. Either way the contacts under each layer
/// carry the weight of the layers above it (75, 50 and 25 spheres): the
/// settled block's state, which the held contacts keep (measured: 9.8e-14
/// relative or less, on the solved floor contacts; bound 1e-12).
#[test]
fn held_contact_forces_carry_the_block_as_last_solved() {
    for on_static in [false, true] {
        let (mut w, mut st) = settled([5, 5, 3]);
        st.set_hooks(reducer(on_static, Vec::new()));
        let mut stats = st.step(&mut w).unwrap();
        for _ in 0..20 {
            stats = st.step(&mut w).unwrap();
        }
        let solved: Vec<_> = st.contact_forces_iter().collect();
        let held: Vec<_> = st.held_contact_forces_iter().collect();
        assert!(solved.iter().all(|f| !f.held) && held.iter().all(|f| f.held));
        assert_eq!(solved.len(), stats.contacts);
        // the rest of the detected contacts came into touch inside an
        // aggregate after it formed (side neighbours of the lattice at
        // gaps of 1e-17 m): never solved, they hold no impulse
        let history = st.history().unwrap();
        let listed = |k| solved.iter().chain(&held).any(|f| f.key == k);
        let unlisted: Vec<_> = st.contacts().iter().filter(|c| !listed(c.key)).collect();
        println!(
            "{} solved, {} held, {} without an impulse",
            solved.len(),
            held.len(),
            unlisted.len()
        );
        assert!(unlisted.iter().all(|c| history.get(&c.key).is_none()));
        assert_eq!(
            solved.len() + held.len() + unlisted.len(),
            stats.detected_contacts
        );
        assert_eq!(solved.len(), if on_static { 0 } else { 25 });
        let weight = w.mass_properties()[1].unwrap().mass * 9.81;
        for (layer, above) in [(0.0, 75.0), (2.0, 50.0), (4.0, 25.0)] {
            // the contacts whose point lies at the layer's top
            let carried: f64 = solved
                .iter()
                .chain(&held)
                .filter(|f| (f.point.z - layer * R).abs() < 0.5 * R)
                .map(|f| f.force_on_a.z.abs())
                .sum();
            let error = (carried - above * weight).abs() / (above * weight);
            println!("merge_with_static {on_static}, z = {layer} R: {carried:e} N, {error:e} off");
            assert!(error < 1e-12, "{carried} vs {}", above * weight);
        }
    }
}

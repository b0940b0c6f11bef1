//! Model reduction across the cut: the settled bed (200 spheres, 20 cm
//! along x, which the bisection cuts) merges into an aggregate whose
//! members lie on every rank; a sphere dropped onto it splits members off.

use super::{History, largest_difference, settings, settled_bed};
use ndem_collide::Shape;
use ndem_math::{Vec3, Velocity6};
use ndem_mpi::*;
use ndem_reduce::{ReducerState, ReductionSettings, TrialSplit};
use ndem_step::{BodyDesc, BodyId, MaterialId, World};

/// What a reduced run records.
struct Reduced {
    world: World,
    /// `h` after every step.
    level: Vec<f64>,
    /// The aggregates after the first step, and after the first step that
    /// split members (with its number).
    first: ReducerState,
    first_split: Option<(u64, ReducerState)>,
    end: ReducerState,
    /// Per aggregate at the end: how many ranks own some of its members.
    spans: Vec<usize>,
}

/// `scene` on the ranks of `comm`, warm-started from `history`, with
/// model reduction from no aggregates.
fn reduced_on<C: Communicator + Clone + 'static>(
    comm: C,
    (scene, history): (&World, &History),
    reduction: &ReductionSettings,
) -> DistributedNdem<C> {
    let mut run = DistributedNdem::new(comm, scene, settings(1e-6, 3000)).unwrap();
    run.set_history(history);
    run.set_reduction(reduction.clone(), ReducerState::default())
        .unwrap();
    run
}

/// `steps` steps of `scene` warm-started from `history`, with model
/// reduction, on `ranks` ranks.
fn run_reduced(
    (scene, history): (&World, &History),
    ranks: usize,
    reduction: &ReductionSettings,
    steps: usize,
) -> Reduced {
    let out = run_on_threads(ranks, |comm| {
        let mut run = reduced_on(comm, (scene, history), reduction);
        let (mut level, mut first, mut first_split) = (Vec::new(), None, None);
        for _ in 0..steps {
            let st = run.step().unwrap();
            let r = run.reduction_stats().unwrap();
            level.push(r.level);
            first.get_or_insert_with(|| run.reducer_state().unwrap());
            if r.split_members > 0 && first_split.is_none() {
                first_split = Some((st.local.step, run.reducer_state().unwrap()));
            }
        }
        let end = run.reducer_state().unwrap();
        let spans = ranks_holding_members(&run, &end);
        let world = run.gather().unwrap();
        (world, level, first.unwrap(), first_split, end, spans)
    });
    let o = out.into_iter().next().unwrap();
    Reduced {
        world: o.0.unwrap(),
        level: o.1,
        first: o.2,
        first_split: o.3,
        end: o.4,
        spans: o.5,
    }
}

/// Per aggregate of `state`, the number of ranks that own some member.
/// Collective.
fn ranks_holding_members<C: Communicator + Clone>(
    run: &DistributedNdem<C>,
    state: &ReducerState,
) -> Vec<usize> {
    let d = run.domain();
    let owned = |g: usize| {
        d.global_indices()
            .binary_search(&(g as u64))
            .is_ok_and(|i| d.roles()[i] == Role::Owned)
    };
    let mine: Vec<f64> = state
        .aggregates
        .iter()
        .map(|(_, a)| f64::from(u8::from(a.members.iter().any(|&m| owned(m)))))
        .collect();
    d.comm().sum(&mine).iter().map(|&x| x as usize).collect()
}

/// The settled bed merges in the first step into one aggregate of the
/// same members on 1, 2 and 3 ranks, which on 2 and 3 ranks has members
/// on every rank; it rests as one rank's does, with the same `h` in every
/// step. Measured: 4.7e-10 m and 5.4e-10 m from one rank after 20 steps
/// (4.0e-10 m for the restart below); bound 5e-9 m (9.3× the largest).
#[test]
fn a_bed_across_the_cut_merges_alike_on_every_rank_count() {
    let (settled, history) = settled_bed();
    let reduction = ReductionSettings::default();
    let one = run_reduced((settled, history), 1, &reduction, 20);
    assert_eq!(one.first.aggregates.len(), 1, "one aggregate");
    let members = one.first.aggregates[0].1.members.len();
    println!("reduced bed: {members} of 200 spheres in the aggregate");
    assert!(members > 150, "{members} of 200 spheres merged");
    for ranks in [2, 3] {
        let many = run_reduced((settled, history), ranks, &reduction, 20);
        let d = largest_difference(&one.world, &many.world);
        println!(
            "reduced bed, {ranks} ranks: {d:.3e} m from one rank, spans {:?}",
            many.spans
        );
        assert_eq!(many.first, one.first, "{ranks} ranks: the same aggregate");
        assert_eq!(
            many.end, one.end,
            "{ranks} ranks: the same aggregate at the end"
        );
        assert_eq!(
            many.spans,
            vec![ranks],
            "{ranks} ranks: members on every rank"
        );
        assert_eq!(many.level, one.level, "{ranks} ranks: h in every step");
        assert!(d <= 5e-9, "{ranks} ranks: {d:.3e} m");
    }
}

/// A sphere dropped at 1 m/s onto the reduced bed frees the same members
/// in the same step on 1, 2 and 3 ranks (contact events; with the trial
/// solve too), and `h` stays within 0.05 of one rank's over 50 steps
/// (10 of its 201 particles; measured: 0.020 and 0.010 without the trial
/// solve, 0.015 and 0 with it, on 2 and 3 ranks: the solves after the
/// impact stop at their 3000-sweep cap, and the ranks' iterates part
/// there).
#[test]
fn an_impact_on_the_bed_splits_alike_on_every_rank_count() {
    let (settled, history) = settled_bed();
    let mut scene = settled.clone();
    let mut ball = BodyDesc::dynamic(
        Shape::Sphere { radius: 0.006 },
        MaterialId::from_index(0),
        Vec3::new(0.001, 0.002, 0.06),
    );
    ball.velocity = Velocity6::new(Vec3::new(0.0, 0.0, -1.0), Vec3::zeros());
    scene.add_body(ball).unwrap();
    for trial in [None, Some(TrialSplit::default())] {
        let reduction = ReductionSettings {
            trial_split: trial,
            ..ReductionSettings::default()
        };
        let one = run_reduced((&scene, history), 1, &reduction, 50);
        let (step, split) = one.first_split.clone().expect("the impact splits members");
        for ranks in [2, 3] {
            let many = run_reduced((&scene, history), ranks, &reduction, 50);
            let dh = one
                .level
                .iter()
                .zip(&many.level)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            println!(
                "impact, trial {}, {ranks} ranks: split at step {step}, |Δh| ≤ {dh:.4}",
                trial.is_some()
            );
            assert_eq!(
                many.first_split,
                Some((step, split.clone())),
                "{ranks} ranks: the same members freed in the same step"
            );
            assert!(dh <= 0.05, "{ranks} ranks: |Δh| = {dh:.4}");
        }
    }
}

/// A checkpoint of the reduced bed gathered from 2 ranks (the scene with
/// its memberships, the aggregates by global index, the impulses)
/// continues on 3 ranks: the same aggregate at the end as an uninterrupted
/// one-rank run, and the rest state within the bound above.
#[test]
fn a_reduced_checkpoint_from_two_ranks_continues_on_three() {
    let (settled, history) = settled_bed();
    let reduction = ReductionSettings::default();
    let one = run_reduced((settled, history), 1, &reduction, 20);
    let s = settings(1e-6, 3000);
    let saved = run_on_threads(2, |comm| {
        let mut run = DistributedNdem::new(comm, settled, s).unwrap();
        run.set_history(history);
        run.set_reduction(reduction.clone(), ReducerState::default())
            .unwrap();
        for _ in 0..10 {
            run.step().unwrap();
        }
        let clock = (run.stepper().time(), run.stepper().step_count());
        let state = run.reducer_state().unwrap();
        (run.gather().unwrap(), run.gather_history(), state, clock)
    });
    let (world, saved_history, state, clock) = saved.into_iter().next().unwrap();
    let (world, saved_history) = (world.unwrap(), saved_history.unwrap());
    assert!(
        (0..world.len()).any(|i| world.is_member(i)),
        "members saved"
    );
    let out = run_on_threads(3, |comm| {
        let mut run = DistributedNdem::new(comm, &world, s).unwrap();
        run.set_history(&saved_history);
        run.set_clock(clock.0, clock.1);
        run.set_reduction(reduction.clone(), state.clone()).unwrap();
        for _ in 0..10 {
            run.step().unwrap();
        }
        (run.gather().unwrap(), run.reducer_state().unwrap())
    });
    let (restarted, end) = out.into_iter().next().unwrap();
    let d = largest_difference(&one.world, &restarted.unwrap());
    println!("reduced bed restarted on 3 ranks: {d:.3e} m from one rank");
    assert_eq!(end, one.end, "the same aggregate");
    assert!(d <= 5e-9, "{d:.3e} m");
}

/// A split sensor (a 3 cm ball) moved onto the middle of the merged bed,
/// where the bisection cuts it, frees the members it overlaps, and the
/// rest re-forms: the same aggregates on 1, 2 and 3 ranks, and no member
/// left inside the sensor.
#[test]
fn a_sensor_moved_onto_the_bed_splits_alike_on_every_rank_count() {
    let far = Vec3::new(0.0, 0.0, 10.0);
    let reduction = ReductionSettings {
        sensors: vec![ndem_reduce::SensorSplit::fixed(
            Shape::Sphere { radius: 0.03 },
            far,
            ndem_math::Quat::identity(),
        )],
        ..ReductionSettings::default()
    };
    let moved = Some((5, Vec3::new(0.0, 0.0, 0.02)));
    let run = |ranks: usize| sensor_run(ranks, &reduction, 10, moved);
    let (one, world) = run(1);
    let members: usize = one.aggregates.iter().map(|(_, a)| a.members.len()).sum();
    let sensor = ndem_reduce::SensorSplit {
        position: Vec3::new(0.0, 0.0, 0.02),
        ..reduction.sensors[0].clone()
    };
    let inside = one
        .aggregates
        .iter()
        .flat_map(|(_, a)| &a.members)
        .filter(|&&m| {
            let r = world.shapes()[m].bounding_radius();
            sensor.overlaps(&world.positions()[m], r)
        })
        .count();
    println!("sensor: {members} members left, {inside} inside the sensor");
    assert!(members > 0 && members < 178, "{members} members");
    assert_eq!(inside, 0, "members inside the sensor");
    for ranks in [2, 3] {
        assert_eq!(run(ranks).0, one, "{ranks} ranks: the same aggregates");
    }
}

/// The settled bed reduced with `reduction` for `steps` steps on `ranks`
/// ranks, sensor 0 moved to `moved.1` before step `moved.0`: the
/// aggregates and the gathered world.
fn sensor_run(
    ranks: usize,
    reduction: &ReductionSettings,
    steps: usize,
    moved: Option<(usize, Vec3)>,
) -> (ReducerState, World) {
    let (settled, history) = settled_bed();
    let out = run_on_threads(ranks, |comm| {
        let mut run = reduced_on(comm, (settled, history), reduction);
        for k in 0..steps {
            if let Some((at, centre)) = moved
                && k == at
            {
                run.move_sensor(0, centre, ndem_math::Quat::identity())
                    .unwrap();
            }
            run.step().unwrap();
        }
        (run.reducer_state().unwrap(), run.gather().unwrap())
    });
    let (state, world) = out.into_iter().next().unwrap();
    (state, world.unwrap())
}

/// A split sensor that moves with the static floor (every rank holds it),
/// 2 cm above the floor's origin: the same aggregates on 1, 2 and 3 ranks
/// as a fixed sensor at that place on one.
#[test]
fn a_sensor_that_follows_a_body_every_rank_holds_splits_alike() {
    let (settled, _) = settled_bed();
    assert_eq!(settled.motions()[0], ndem_step::Motion::Static);
    let offset = Vec3::new(0.0, 0.0, 0.02);
    let shape = Shape::Sphere { radius: 0.03 };
    let run = |ranks: usize, sensor: ndem_reduce::SensorSplit| {
        let reduction = ReductionSettings {
            sensors: vec![sensor],
            ..ReductionSettings::default()
        };
        sensor_run(ranks, &reduction, 6, None).0
    };
    let follows = ndem_reduce::SensorSplit::following(shape.clone(), BodyId::from_index(0), offset);
    let fixed = ndem_reduce::SensorSplit::fixed(shape, offset, ndem_math::Quat::identity());
    let one = run(1, fixed);
    // the sensor keeps part of the bed out of the aggregates (as in the
    // test of the moved sensor)
    let members: usize = one.aggregates.iter().map(|(_, a)| a.members.len()).sum();
    assert!(members > 0 && members < 178, "{members} members");
    for ranks in [1, 2, 3] {
        assert_eq!(run(ranks, follows.clone()), one, "{ranks} ranks");
    }
}

/// The partial trial solve (`TrialSplit::depth`) finds an aggregate's
/// layers in one process's contacts, so does the trial restricted to
/// disturbed members (`TrialSplit::disturbed_only`), carried loads
/// merge particles into machine parts, aggregates merged with static
/// geometry rest on static hosts, and a sensor that moves with a
/// sphere needs the sphere on every rank: a distributed run refuses each
/// with a typed error naming the field, on any rank count.
#[test]
fn settings_a_distributed_run_cannot_follow_are_refused_naming_their_field() {
    let (settled, _) = settled_bed();
    let partial = ReductionSettings {
        trial_split: Some(TrialSplit {
            depth: Some(2),
            ..TrialSplit::default()
        }),
        ..ReductionSettings::default()
    };
    let disturbed = ReductionSettings {
        trial_split: Some(TrialSplit {
            disturbed_only: true,
            ..TrialSplit::default()
        }),
        ..ReductionSettings::default()
    };
    let carried = ReductionSettings {
        carried_loads: true,
        ..ReductionSettings::default()
    };
    let on_static = ReductionSettings {
        merge_with_static: true,
        ..ReductionSettings::default()
    };
    // a sensor that moves with a sphere, which only the ranks near it hold
    let sphere = BodyId::from_index(settled.len() - 1);
    assert_eq!(
        settled.motions()[sphere.index()],
        ndem_step::Motion::Dynamic
    );
    let on_a_sphere = ReductionSettings {
        sensors: vec![ndem_reduce::SensorSplit::following(
            Shape::Sphere { radius: 0.03 },
            sphere,
            Vec3::zeros(),
        )],
        ..ReductionSettings::default()
    };
    let s = settings(1e-6, 3000);
    for (reduction, field) in [
        (partial, "trial_split.depth"),
        (disturbed, "trial_split.disturbed_only"),
        (carried, "carried_loads"),
        (on_static, "merge_with_static"),
        (on_a_sphere, "reduction.sensors.follows"),
    ] {
        for ranks in [1, 2] {
            let out = run_on_threads(ranks, |comm| {
                let mut run = DistributedNdem::new(comm, settled, s).unwrap();
                run.set_reduction(reduction.clone(), ReducerState::default())
                    .err()
            });
            for e in out {
                assert!(
                    matches!(&e, Some(MpiError::InvalidSettings { field: f, .. }) if *f == field),
                    "{field}, {ranks} ranks: {e:?}"
                );
            }
        }
    }
}

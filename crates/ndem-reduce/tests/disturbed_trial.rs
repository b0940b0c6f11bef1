//! The trial solve restricted to disturbed members
//! (`TrialSplit::disturbed_only`) on a 5×5×3 simple-cubic block resting on
//! a floor and merged into one aggregate: a resting block runs no trial,
//! a sphere falling onto it disturbs the members it reaches, and a block
//! whose load changes (gravity tilted past the friction angle) is split
//! once it moves.

use ndem_collide::Shape;
use ndem_math::{Vec3, Velocity6};
use ndem_reduce::trial::disturbed_members;
use ndem_reduce::*;
use ndem_step::{BodyDesc, MaterialId, Stepper, World};

mod common;
use common::R;

/// The block merged with a trial split restricted to disturbed members,
/// reaching `depth` layers from them.
fn merged_block(depth: Option<usize>) -> (World, Stepper) {
    common::merged_block(Some(TrialSplit {
        depth,
        disturbed_only: true,
        ..TrialSplit::default()
    }))
}

fn stats(st: &mut Stepper) -> ReductionStats {
    st.hooks_as::<Reducer>().unwrap().stats()
}

/// Once merged, nothing touches the block but the floor it rests on: no
/// contact is new or moving, so no trial solve runs (0 sweeps in each of
/// 50 steps) and no member is split. Without a history every member on
/// the floor counts as disturbed (the 25 of the bottom layer).
#[test]
fn a_resting_block_runs_no_trial_solve() {
    let (mut w, mut st) = merged_block(None);
    for _ in 0..50 {
        st.step(&mut w).unwrap();
        let s = stats(&mut st);
        assert_eq!((s.trial_iterations, s.split_members), (0, 0));
    }
    let contacts = st.contacts().clone();
    let merge = MergeThresholds::default();
    let dt = st.settings().dt;
    let none = disturbed_members(&w, &contacts, st.history(), &merge, dt);
    assert!(!none.contains(&true));
    let all = disturbed_members(&w, &contacts, None, &merge, dt);
    assert_eq!(all.iter().filter(|&&d| d).count(), 25);
}

/// A sphere dropped onto the middle of the block's top face at 0.5 m/s
/// disturbs, while it bounces, the member it lands on and no other (its
/// contact approaches or separates faster than the merge thresholds); the
/// trial runs on those steps, and no more once the sphere rests (the last
/// 20 of 40 steps run none).
#[test]
fn a_falling_sphere_disturbs_the_member_it_lands_on() {
    let (mut w, mut st) = merged_block(None);
    let top = w.positions().iter().map(|p| p.z).fold(f64::MIN, f64::max);
    let landing = Vec3::new(4.0 * R, 4.0 * R, top);
    let below = (0..w.len())
        .filter(|&i| w.is_member(i))
        .min_by(|&a, &b| {
            let d = |i: usize| (w.positions()[i] - landing).norm();
            d(a).total_cmp(&d(b))
        })
        .unwrap();
    let ball = BodyDesc::dynamic(
        Shape::Sphere { radius: R },
        MaterialId::from_index(0),
        landing + Vec3::new(0.0, 0.0, 2.0 * R + 0.002),
    )
    .with_velocity(Velocity6::new(Vec3::new(0.0, 0.0, -0.5), Vec3::zeros()));
    w.add_body(ball).unwrap();
    let merge = MergeThresholds::default();
    let mut trials = Vec::new();
    for _ in 0..40 {
        st.step(&mut w).unwrap();
        trials.push(stats(&mut st).trial_iterations);
        let dt = st.settings().dt;
        let d = disturbed_members(&w, st.contacts(), st.history(), &merge, dt);
        let flagged: Vec<usize> = (0..w.len()).filter(|&i| d[i]).collect();
        assert!(flagged.is_empty() || flagged == [below], "{flagged:?}");
    }
    println!("trial sweeps per step: {trials:?}");
    assert!(trials[..20].iter().any(|&t| t > 0));
    assert!(trials[20..].iter().all(|&t| t == 0));
}

/// Gravity tilted by 60° (tan 60° > μ = 0.91) changes the block's load
/// without a contact event: the trial sees it one step later, through the
/// sliding it causes at the floor, and splits the block. Restricted to the
/// first layer (the disturbed members on the floor) it splits at most
/// those 25 in a step; the whole disturbed aggregate splits more
/// (measured, members split in each of 5 steps: 0, 0, 0, 0, 17 at depth 1;
/// 0, 50, 50, 75, 75 with the whole aggregate, whose members re-merge
/// between steps).
#[test]
fn a_load_change_is_seen_through_the_motion_it_causes() {
    let run = |depth: Option<usize>| {
        let (mut w, mut st) = merged_block(depth);
        let (g, a) = (9.81, 60f64.to_radians());
        w.gravity = Vec3::new(g * a.sin(), 0.0, -g * a.cos());
        let mut split = Vec::new();
        for _ in 0..5 {
            st.step(&mut w).unwrap();
            split.push(stats(&mut st).split_members);
        }
        split
    };
    let (near, whole) = (run(Some(1)), run(None));
    println!("members split per step, depth 1: {near:?}; whole aggregate: {whole:?}");
    assert_eq!((near[0], whole[0]), (0, 0));
    assert!(near.iter().any(|&s| s > 0), "{near:?}");
    assert!(near.iter().all(|&s| s <= 25), "{near:?}");
    assert!(whole.iter().any(|&s| s > 25), "{whole:?}");
}

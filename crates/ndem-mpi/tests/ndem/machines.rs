//! Machines across the cut: a jointed chain of spheres lying across a row
//! of free spheres that the bisection splits. The chain's bodies are
//! machine bodies (rank 0's, held by every rank); its joints are solved
//! alike on every rank after each sweep's exchange.

use super::{common::chain_on_a_row, largest_difference, settings, stepped};
use ndem_mpi::*;
use ndem_solve::JointRows;
use ndem_step::World;

/// Runs the chain scene `steps` steps on `ranks` ranks: the gathered
/// scene, the most sweeps of a continuous solve and whether every solve,
/// impact solves included, converged.
fn run_chain(
    scene: &World,
    ranks: usize,
    s: DistributedNdemSettings,
    steps: usize,
) -> (World, usize, bool) {
    let out = run_on_threads(ranks, |comm| {
        let mut run = DistributedNdem::new(comm, scene, s).unwrap();
        let (mut most, mut converged) = (0, true);
        let ok = |x: ndem_solve::SolverStatus| x == ndem_solve::SolverStatus::Converged;
        for _ in 0..steps {
            let st = run.step().unwrap();
            most = most.max(st.local.iterations);
            converged &= ok(st.local.status) && st.local.impact_status.is_none_or(ok);
        }
        (run.gather().unwrap(), most, converged)
    });
    let o = &out[0];
    (o.0.clone().unwrap(), o.1, o.2)
}

/// The chain falls onto the row and settles: on 2 and 3 ranks every body
/// ends where one rank puts it, with the joints solved directly (the
/// excavator's split solver) and row by row. Every solve, the impact
/// stage's included, is converged, so the runs agree to the solver
/// tolerance: measured 9.3e-11 m and 1.5e-10 m (direct, 2 and 3 ranks),
/// 2.7e-10 m and 1.2e-10 m (row by row); the difference falls tenfold
/// with each decade of tolerance (1.4e-8 m at 1e-8 m/s, 2.8e-9 m at
/// 1e-9 m/s, direct joints without the impact stage). Bound: 1e-9 m,
/// 3.7× the largest.
#[test]
fn a_jointed_chain_across_the_cut_settles_as_on_one_rank() {
    let scene = chain_on_a_row();
    for joints in [JointRows::Direct, JointRows::Iterative] {
        let mut s = settings(1e-10, 10_000);
        s.pgs.joints = joints;
        s.step.impact_iterations = 10_000;
        let (one, _, converged) = run_chain(&scene, 1, s, 200);
        assert!(converged, "{joints:?}: one rank converged");
        for ranks in [2, 3] {
            let (many, iterations, converged) = run_chain(&scene, ranks, s, 200);
            let d = largest_difference(&one, &many);
            println!(
                "chain, {joints:?}, {ranks} ranks: largest position difference {d:.3e} m, most iterations {iterations}"
            );
            assert!(
                converged,
                "{joints:?}, {ranks} ranks: every solve converged"
            );
            assert_eq!(
                many.joints().len(),
                8,
                "the gathered scene keeps its joints"
            );
            assert!(
                d <= 1e-9,
                "{joints:?}, {ranks} ranks: {d:.3e} m from one rank"
            );
        }
    }
}

/// The chain's bodies are held by every rank and owned by rank 0 alone.
#[test]
fn machine_bodies_are_on_every_rank_and_owned_by_the_first() {
    let scene = chain_on_a_row();
    let out = run_on_threads(2, |comm| {
        let run = DistributedNdem::new(comm, &scene, settings(1e-6, 10)).unwrap();
        let d = run.domain();
        let chain: Vec<Role> = (0..d.world().len())
            .filter(|&i| d.machine()[i])
            .map(|i| d.roles()[i])
            .collect();
        (chain, d.world().joints().len())
    });
    assert_eq!(out[0].0, vec![Role::Owned; 9]);
    assert_eq!(out[1].0, vec![Role::Ghost(0); 9]);
    assert!(out.iter().all(|o| o.1 == 8), "every rank holds every joint");
}

/// The smooth DEM's distributed step has no joints: a typed error naming
/// the joint and its bodies.
#[test]
fn a_joint_in_a_smooth_run_is_a_typed_error_naming_it() {
    let scene = chain_on_a_row();
    let err = run_on_threads(2, |comm| {
        DistributedSmooth::new(
            comm,
            &scene,
            ndem_smooth::SmoothSettings::default(),
            DomainSettings::default(),
        )
        .err()
    });
    assert!(
        matches!(
            err[0],
            Some(MpiError::UnsupportedJoint {
                joint: 0,
                bodies: [11, 12],
                ..
            })
        ),
        "{:?}",
        err[0]
    );
}

/// The chain's scene, contact impulses and joint multipliers gathered
/// after 100 steps on 2 ranks (what a checkpoint holds) continue for 100
/// steps on 3 ranks, warm-started: the joints and their multipliers come
/// back on every rank, and the rest state is the one-rank run's within
/// the bound of the chain test above (1e-9 m).
#[test]
fn a_chain_gathered_on_two_ranks_continues_on_three() {
    let scene = chain_on_a_row();
    let mut s = settings(1e-10, 10_000);
    s.pgs.joints = JointRows::Direct;
    s.step.impact_iterations = 10_000;
    let (one, _, _) = run_chain(&scene, 1, s, 200);
    let out = run_on_threads(2, |comm| {
        let run = stepped(comm, &scene, s, 100);
        let clock = (run.stepper().time(), run.stepper().step_count());
        let rows = run.joint_row_history();
        (run.gather().unwrap(), run.gather_history(), rows, clock)
    });
    let (world, history, rows, clock) = out[0].clone();
    let (world, history) = (world.unwrap(), history.unwrap());
    assert_eq!(world.joints().len(), 8);
    assert_eq!(rows.len(), 8 * 3, "three rows per ball joint");
    assert_eq!(
        rows, out[1].2,
        "every rank holds the same joint multipliers"
    );
    let out = run_on_threads(3, |comm| {
        let mut run = DistributedNdem::new(comm, &world, s).unwrap();
        assert!(run.set_history(&history));
        run.set_joint_row_history(&rows);
        run.set_clock(clock.0, clock.1);
        let first = run.step().unwrap();
        for _ in 1..100 {
            run.step().unwrap();
        }
        (run.gather().unwrap(), first.local.warm_contacts)
    });
    let restarted = out[0].0.as_ref().unwrap();
    assert!(out[0].1 > 0, "warm-started after the restart");
    let d = largest_difference(&one, restarted);
    println!("chain restarted on 3 ranks: {d:.3e} m from one rank");
    assert!(d <= 1e-9, "{d:.3e} m");
}

//! PGS in the coloured order: the same iterate on any number of threads.

use ndem_solve::generate::{PackingSpec, sphere_packing};
use ndem_solve::*;

fn coloured(threads: usize, iterations: usize) -> ProjectedGaussSeidel {
    ProjectedGaussSeidel::new(PgsSettings {
        stopping: Stopping::iterations(iterations),
        order: ContactOrder::Coloured,
        threads,
        ..PgsSettings::default()
    })
    .unwrap()
}

/// A packing large enough to be split across threads (the solver sweeps
/// on one thread below 4096 contacts) and into several blocks, in both
/// friction sets and both variants: λ and v bit-identical for 1, 2 and 3
/// threads.
#[test]
fn coloured_sweeps_do_not_depend_on_the_thread_count() {
    for (set, variant) in [
        (FrictionSet::Box, PgsVariant::RowWise),
        (FrictionSet::Disk, PgsVariant::RowWise),
        (FrictionSet::Disk, PgsVariant::Blocked),
    ] {
        let problem = sphere_packing(&PackingSpec {
            cells: [14, 14, 8],
            friction_set: set,
            ..PackingSpec::default()
        });
        assert!(
            problem.contacts().len() > 4096,
            "{}",
            problem.contacts().len()
        );
        let run = |threads: usize| {
            let mut pgs = coloured(threads, 30);
            let mut s = *pgs.settings();
            s.variant = variant;
            pgs.set_settings(s).unwrap();
            let mut lambda = vec![0.0; problem.len()];
            let mut v = problem.free_velocity().to_vec();
            let report = pgs.solve(&problem, &mut lambda, &mut v).unwrap();
            (lambda, v, report)
        };
        let (l1, v1, r1) = run(1);
        for threads in [2, 3] {
            let (l, v, r) = run(threads);
            assert!(
                l == l1 && v == v1,
                "{set:?} {variant:?}: {threads} threads differ"
            );
            assert_eq!(r.residuals, r1.residuals);
            assert_eq!(r.last_update, r1.last_update);
        }
    }
}

/// A solve that checks its residual between sweeps (early stop on, the
/// checks failing until the iterate reaches the tolerance): the same
/// iterate, velocities, sweep count and residuals on 1, 2 and 3 threads.
/// On several threads the residual is formed in the caller's stale copy
/// of the velocities, which must be current again after each check.
#[test]
fn residual_checks_do_not_depend_on_the_thread_count() {
    let problem = frictionless_packing();
    let run = |threads| solve_to(&problem, ContactOrder::Coloured, threads, (2000, 1e-8));
    let (l1, v1, r1) = run(1);
    eprintln!("{} sweeps, {:?}", r1.iterations, r1.status);
    // the checks failed at least once before the last one decided
    assert!(r1.iterations > 20 && r1.converged(), "{r1:?}");
    for threads in [2, 3] {
        let (l, v, r) = run(threads);
        assert!(l == l1 && v == v1, "{threads} threads differ");
        assert_eq!(r.residuals, r1.residuals);
        assert_eq!(r.iterations, r1.iterations);
        assert_eq!(r.status, r1.status);
    }
}

/// A packing whose contacts have only normal rows: an LCP whose matrix
/// `G M⁻¹ Gᵀ + Σ` is positive definite, so that projected Gauss-Seidel
/// reaches any tolerance.
fn frictionless_packing() -> ContactProblem {
    sphere_packing(&PackingSpec {
        cells: [14, 14, 8],
        rows: ContactRows::Normal,
        ..PackingSpec::default()
    })
}

/// `λ`, `v` and the report of a PGS solve from `λ = 0` in `order` on
/// `threads` threads, stopped at `(sweeps, tolerance)`.
fn solve_to(
    problem: &ContactProblem,
    order: ContactOrder,
    threads: usize,
    (sweeps, tolerance): (usize, f64),
) -> (Vec<f64>, Vec<ndem_math::Velocity6>, SolveReport) {
    let mut pgs = ProjectedGaussSeidel::new(PgsSettings {
        stopping: Stopping::to_tolerance(sweeps, tolerance),
        order,
        threads,
        ..PgsSettings::default()
    })
    .unwrap();
    let mut lambda = vec![0.0; problem.len()];
    let mut v = problem.free_velocity().to_vec();
    let report = pgs.solve(problem, &mut lambda, &mut v).unwrap();
    (lambda, v, report)
}

/// The coloured order is a Gauss-Seidel order like any other: on a
/// frictionless packing (an LCP whose matrix `G M⁻¹ Gᵀ + Σ` is positive
/// definite, so projected Gauss-Seidel converges in every order to the one
/// solution) both orders reach the tolerance and agree.
#[test]
fn coloured_order_converges_like_the_given_one() {
    let problem = frictionless_packing();
    let solve = |order, threads| {
        let (lambda, _, report) = solve_to(&problem, order, threads, (5000, 1e-10));
        (lambda, report)
    };
    let (given, rg) = solve(ContactOrder::Given, 1);
    let (coloured, rc) = solve(ContactOrder::Coloured, 2);
    assert!(rg.converged() && rc.converged(), "{rg:?} {rc:?}");
    let scale = given.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let diff = given
        .iter()
        .zip(&coloured)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    eprintln!(
        "sweeps to 1e-10: given {}, coloured {}; largest difference {:.2e} of {scale:.2e}",
        rg.iterations, rc.iterations, diff
    );
    // measured 1.9e-11 of the largest multiplier (both within the 1e-10
    // residual tolerance of the one solution); bound 10× that
    assert!(diff <= 1.9e-10 * scale, "{diff} of {scale}");
}

/// Several threads without the coloured order would make the answer
/// depend on the thread count: a typed error.
#[test]
fn threads_need_the_coloured_order() {
    let err = ProjectedGaussSeidel::new(PgsSettings {
        threads: 2,
        ..PgsSettings::default()
    })
    .unwrap_err();
    assert!(matches!(
        err,
        SolveError::InvalidSettings {
            field: "threads",
            ..
        }
    ));
}

/// `colour_blocks` changes the blocks, so the visiting order, but never
/// makes the iterate depend on the thread count.
#[test]
fn every_block_count_gives_one_iterate_on_any_thread_count() {
    let problem = sphere_packing(&PackingSpec {
        cells: [14, 14, 8],
        ..PackingSpec::default()
    });
    let run = |threads: usize, blocks: usize| {
        let mut pgs = ProjectedGaussSeidel::new(PgsSettings {
            stopping: Stopping::iterations(20),
            order: ContactOrder::Coloured,
            threads,
            colour_blocks: blocks,
            ..PgsSettings::default()
        })
        .unwrap();
        let mut lambda = vec![0.0; problem.len()];
        let mut v = problem.free_velocity().to_vec();
        pgs.solve(&problem, &mut lambda, &mut v).unwrap();
        (lambda, v)
    };
    let mut results = Vec::new();
    for blocks in [1, 3, 64] {
        let one = run(1, blocks);
        assert!(run(2, blocks) == one, "{blocks} blocks: 2 threads differ");
        results.push(one);
    }
    // one block is the problem's own order; three blocks visit it otherwise
    assert!(results[0].0 != results[1].0);
}

/// A block count outside `1..=64` is a typed error naming the field.
#[test]
fn colour_blocks_outside_the_range_are_refused() {
    for blocks in [0, 65] {
        let err = ProjectedGaussSeidel::new(PgsSettings {
            order: ContactOrder::Coloured,
            colour_blocks: blocks,
            ..PgsSettings::default()
        })
        .unwrap_err();
        assert!(matches!(
            err,
            SolveError::InvalidSettings {
                field: "colour_blocks",
                ..
            }
        ));
    }
}

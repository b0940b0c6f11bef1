//! The residual statistics summed by blocks (`metrics::SUM_BLOCK`) against
//! the stored row residuals summed in row order.

use ndem_math::Velocity6;
use ndem_solve::metrics::SUM_BLOCK;
use ndem_solve::*;
use ndem_testkit::generate::{PackingSpec, default_packing, sphere_packing};

/// Solves `problem` for a few sweeps (a non-trivial iterate) and returns
/// the block-summed statistics on `threads` threads and the row residuals.
fn evaluate(problem: &ContactProblem, threads: usize) -> (ResidualStats, Vec<f64>) {
    let mut pgs = ProjectedGaussSeidel::with_stopping(Stopping::iterations(7)).unwrap();
    let (mut lambda, mut v) = problem.cold_start();
    pgs.solve(problem, &mut lambda, &mut v).unwrap();
    let mut ev = ResidualEvaluator::new();
    ev.set_threads(threads);
    let stats = ev.stats(problem, &lambda, None);
    let rows = ev.row_residuals(problem, &lambda, None).to_vec();
    (stats, rows)
}

/// Mean and max of the normal rows in row order.
fn normal_rows(problem: &ContactProblem, rows: &[f64]) -> (usize, f64, f64) {
    let m = problem.contact_rows().count();
    let normal: Vec<f64> = rows[..problem.generic_offset()]
        .iter()
        .step_by(m)
        .copied()
        .collect();
    let sum: f64 = normal.iter().sum();
    let max = normal.iter().fold(0.0f64, |a, &b| a.max(b));
    (normal.len(), sum / normal.len() as f64, max)
}

/// Up to `SUM_BLOCK` contacts the statistics are the row-order sums
/// exactly; beyond it counts and maxima are exact and the means agree to
/// round-off of the other summation order, on any thread count.
#[test]
fn block_sums_equal_the_row_order_sums() {
    for (cells, one_block) in [([8, 8, 6], true), ([14, 14, 8], false)] {
        let problem = sphere_packing(&PackingSpec {
            cells,
            ..PackingSpec::default()
        })
        .expect("a valid spec");
        assert_eq!(problem.contacts().len() <= SUM_BLOCK, one_block);
        let (stats, rows) = evaluate(&problem, 1);
        let (count, mean, max) = normal_rows(&problem, &rows);
        assert_eq!(stats.normal.count, count);
        assert_eq!(stats.normal.max, max);
        let relative = (stats.normal.mean - mean).abs() / mean;
        if one_block {
            assert_eq!(stats.normal.mean, mean);
        } else {
            // measured 8.9e-16 (4480 normal rows in three blocks); 10x that
            assert!(relative <= 8.9e-15, "{relative:e}");
        }
        for threads in [2, 3] {
            assert_eq!(evaluate(&problem, threads).0, stats, "{threads} threads");
        }
    }
}

/// Records each sweep's progress measure.
struct Updates(Vec<f64>);

impl Observer for Updates {
    fn observe(&mut self, record: &IterationRecord<'_>) {
        self.0.push(record.update);
    }
}

/// PGS with `settings` from a cold start, observed by `observer` if given:
/// the multipliers, the velocity and the report.
fn cold_solve(
    problem: &ContactProblem,
    settings: PgsSettings,
    observer: Option<&mut Updates>,
) -> (Vec<f64>, Vec<Velocity6>, SolveReport) {
    let mut pgs = ProjectedGaussSeidel::new(settings).unwrap();
    let (mut lambda, mut v) = problem.cold_start();
    let report = match observer {
        Some(o) => pgs.solve_observed(problem, &mut lambda, &mut v, o),
        None => pgs.solve(problem, &mut lambda, &mut v),
    }
    .unwrap();
    (lambda, v, report)
}

/// Without an observer that reads it, PGS forms its largest correction
/// only in the last sweep (`Observer::wants_updates`): the iterate, the
/// report and that last figure are those of a solve whose observer reads
/// every sweep's, in both variants.
#[test]
fn skipping_the_progress_measure_changes_nothing_reported() {
    let problem = default_packing([8, 8, 6]);
    for variant in [PgsVariant::RowWise, PgsVariant::Blocked] {
        let settings = PgsSettings {
            stopping: Stopping::iterations(12),
            variant,
            ..PgsSettings::default()
        };
        let mut updates = Updates(Vec::new());
        let (l1, v1, r1) = cold_solve(&problem, settings, Some(&mut updates));
        let (l0, v0, r0) = cold_solve(&problem, settings, None);
        assert!(l0 == l1 && v0 == v1, "{variant:?}");
        assert_eq!(r0, r1, "{variant:?}");
        assert_eq!(updates.0.len(), 12);
        assert!(updates.0.iter().all(|&u| u > 0.0), "{:?}", updates.0);
        assert_eq!(*updates.0.last().unwrap(), r0.last_update);
    }
}

/// Solves `problem` cold with the early-stopping `settings`, observed (every
/// sweep's largest correction read) and not, and asserts the same iterate
/// and report, one observed figure per sweep, the last the report's, and
/// at least 16 sweeps whose figure was above the tolerance (so did not
/// call for a check, and was cut short where no observer read it).
/// Returns whether the solve stopped at a check its update called for.
fn observed_equals_unobserved(problem: &ContactProblem, settings: PgsSettings, case: &str) -> bool {
    let Stopping {
        tolerance,
        max_iterations,
        ..
    } = settings.stopping;
    let mut updates = Updates(Vec::new());
    let (l1, v1, r1) = cold_solve(problem, settings, Some(&mut updates));
    let (l0, v0, r0) = cold_solve(problem, settings, None);
    assert!(l0 == l1 && v0 == v1, "{case}");
    assert_eq!(r0, r1, "{case}");
    assert_eq!(updates.0.len(), r0.iterations, "{case}");
    assert_eq!(*updates.0.last().unwrap(), r0.last_update, "{case}");
    let above = updates.0.iter().filter(|&&u| u > tolerance).count();
    assert!(above >= 16, "{case}: {above} sweeps above the tolerance");
    r0.status == SolverStatus::Converged
        && r0.last_update <= tolerance
        && r0.iterations < max_iterations
}

/// An early-stopping PGS forms a sweep's largest correction only as far as
/// its tolerance unless an observer reads it: once the corrections formed
/// in a sweep exceed the tolerance, the rest of that sweep skips them
/// (`docs/performance.md`, "NDEM step"); the sweeps before a forced check
/// and the last are formed exactly. The iterate, the sweeps run, the
/// status and every reported figure are those of a solve whose observer
/// reads every sweep's, for solves that run to their cap and that stop at
/// a check their update called for, in the given order and in the
/// coloured order on one and on two threads (the paired and the parallel
/// sweeps; [`an_observer_changes_no_early_stop`] covers the variants).
#[test]
fn an_early_stop_reads_its_updates_only_as_far_as_its_tolerance() {
    for (order, threads) in [
        (ContactOrder::Given, 1),
        (ContactOrder::Coloured, 1),
        (ContactOrder::Coloured, 2),
    ] {
        let mut stopped_on_update = false;
        for (rows, cap, tolerance) in [
            (ContactRows::NormalFrictionRolling, 40, 1e-14),
            (ContactRows::Normal, 500, 1e-6),
            (ContactRows::NormalFrictionRolling, 300, 2.0),
        ] {
            let problem = sphere_packing(&PackingSpec {
                cells: [16, 16, 8],
                rows,
                ..PackingSpec::default()
            })
            .expect("a valid spec");
            // several blocks per thread; the sweep split at any size
            assert!(problem.contacts().len() > 4096, "several blocks per thread");
            let settings = PgsSettings {
                stopping: Stopping::to_tolerance(cap, tolerance),
                order,
                threads,
                parallel_min_contacts: 0,
                ..PgsSettings::default()
            };
            let case = format!("{order:?} on {threads} threads, {rows:?}, {tolerance:e}");
            stopped_on_update |= observed_equals_unobserved(&problem, settings, &case);
        }
        assert!(
            stopped_on_update,
            "{order:?} on {threads} threads: no solve stopped at a check its update called for"
        );
    }
}

/// The energy bound of the rows, `Σ_j ½ (|G_j v*| + |b_j|)² / (G_j M⁻¹ G_jᵀ)`,
/// against the same sum in row order from the problem's public products:
/// equal to round-off of the summation order (contacts summed in blocks of
/// `SUM_BLOCK`), and the same bits on any thread count and with a kept
/// scratch of block sums.
#[test]
fn row_energy_bound_is_the_row_order_sum_on_any_thread_count() {
    for cells in [[8, 8, 6], [14, 14, 8]] {
        let problem = sphere_packing(&PackingSpec {
            cells,
            speed: 0.05,
            ..PackingSpec::default()
        })
        .expect("a valid spec");
        let n = problem.len();
        let (mut gv, mut diagonal) = (vec![0.0; n], vec![0.0; n]);
        problem
            .jacobian_times(problem.free_velocity(), &mut gv)
            .unwrap();
        problem.diagonal(&mut diagonal).unwrap();
        let m = problem.contact_rows().count();
        let mut expected = 0.0;
        for i in 0..problem.generic_offset() {
            let contact = problem.contacts().get(i / m).unwrap();
            let d = diagonal[i] - contact.row_sigma(i % m);
            let b = contact.rhs[i % m];
            if d > 0.0 {
                expected += 0.5 * (gv[i].abs() + b.abs()).powi(2) / d;
            }
        }
        assert!(expected > 0.0);
        let bound = problem.row_energy_bound();
        let relative = (bound - expected).abs() / expected;
        // measured 5.3e-15 (4480 contacts in three blocks; 0 in one block)
        assert!(relative <= 1e-14, "{relative:e}");
        // a kept scratch of block sums, longer than the problem needs and
        // holding another problem's sums, changes nothing
        let mut kept = vec![f64::NAN; 64];
        for threads in [0, 2, 3, 4] {
            assert_eq!(
                problem.row_energy_bound_on(threads),
                bound,
                "{threads} threads"
            );
            assert_eq!(
                problem.row_energy_bound_in(threads, &mut kept),
                bound,
                "{threads} threads, kept block sums"
            );
        }
        if problem.contacts().len() <= SUM_BLOCK {
            assert_eq!(bound, expected);
        }
    }
}

/// At `λ = 0` the evaluator reads `v*` instead of forming `v* + M⁻¹Gᵀ0`:
/// the statistics equal those at the formed velocity exactly (two packings
/// of moving spheres, box and disk friction; a `λ` of positive and of
/// negative zeros), and one non-zero entry still forms `v`.
#[test]
fn a_cold_start_reads_the_free_velocity() {
    for (seed, set) in [(3, FrictionSet::Box), (4, FrictionSet::Disk)] {
        let problem = sphere_packing(&PackingSpec {
            cells: [6, 6, 4],
            friction_set: set,
            speed: 0.05,
            seed,
            ..PackingSpec::default()
        })
        .expect("a valid spec");
        let mut formed = vec![Velocity6::ZERO; problem.body_count()];
        let mut ev = ResidualEvaluator::new();
        for zero in [0.0, -0.0] {
            let lambda = vec![zero; problem.len()];
            problem.velocity_from(&lambda, &mut formed).unwrap();
            let given = ev.stats(&problem, &lambda, Some(&formed));
            assert_eq!(ev.stats(&problem, &lambda, None), given);
            assert!(
                given.max > 0.0,
                "a packing with a non-trivial start residual"
            );
        }
        // one non-zero multiplier: v is formed, not v*
        let mut lambda = vec![0.0; problem.len()];
        lambda[0] = 1e-3;
        problem.velocity_from(&lambda, &mut formed).unwrap();
        let given = ev.stats(&problem, &lambda, Some(&formed));
        let free = ev.stats(&problem, &lambda, Some(problem.free_velocity()));
        assert_ne!(given, free, "the impulse changes the residual");
        assert_eq!(ev.stats(&problem, &lambda, None), given);
    }
}

/// An observer that reads every sweep's largest correction changes nothing
/// of a solve that may stop early: the iterate, the stop and the report
/// are those without it, in both variants, for solves that run to their
/// cap, converge at a forced check, or converge at a check their update
/// called for (the frictional packings' updates stay near 1, so those
/// tolerances are large). It fails a correction formed from a lower bound
/// that can exceed the exact value. A sweep skips the correction for the
/// rest of a sweep once it is above the tolerance
/// ([`an_early_stop_reads_its_updates_only_as_far_as_its_tolerance`]).
#[test]
fn an_observer_changes_no_early_stop() {
    let mut stopped_on_update = false;
    for (cells, rows, cap, tolerance) in [
        ([8, 8, 6], ContactRows::NormalFrictionRolling, 30, 1e-14),
        ([8, 8, 6], ContactRows::NormalFrictionRolling, 400, 1e-7),
        ([4, 4, 2], ContactRows::Normal, 500, 1e-6),
        ([4, 4, 2], ContactRows::NormalFrictionRolling, 300, 0.4),
        ([8, 8, 6], ContactRows::NormalFrictionRolling, 300, 2.0),
    ] {
        let problem = sphere_packing(&PackingSpec {
            cells,
            rows,
            ..PackingSpec::default()
        })
        .expect("a valid spec");
        for variant in [PgsVariant::RowWise, PgsVariant::Blocked] {
            let settings = PgsSettings {
                stopping: Stopping::to_tolerance(cap, tolerance),
                variant,
                ..PgsSettings::default()
            };
            let case = format!("{variant:?}, {cells:?}, {rows:?}, tolerance {tolerance:e}");
            stopped_on_update |= observed_equals_unobserved(&problem, settings, &case);
        }
    }
    assert!(
        stopped_on_update,
        "no solve stopped at a check its update called for"
    );
}

/// The coupling of a subdomain that holds every contact alone (one rank).
struct Alone;

impl SubdomainCoupling for Alone {
    fn owned_contacts(
        &mut self,
        problem: &ContactProblem,
        owned: &mut Vec<bool>,
    ) -> Result<(), SolveError> {
        owned.clear();
        owned.resize(problem.contacts().len(), true);
        Ok(())
    }
    fn sum_over_holders(&mut self, _values: &mut [f64], _width: usize) {}
    fn leads(&self) -> bool {
        true
    }
    fn sum(&mut self, _values: &mut [f64]) {}
    fn max(&mut self, _values: &mut [f64]) {}
    fn share_impulses(&mut self, _: &ContactProblem, _: &[bool], _: &mut [f64]) {}
}

/// Records each sweep's progress measure without asking for it
/// (`Observer::wants_updates` is false): what a solve passes then.
struct Unasked(Vec<f64>);

impl Observer for Unasked {
    fn observe(&mut self, record: &IterationRecord<'_>) {
        self.0.push(record.update);
    }
    fn wants_updates(&self) -> bool {
        false
    }
}

/// The subdomain solver forms its sweeps' largest corrections as PGS does
/// (`SweepMode::of_sweep`): exactly for an observer that reads them, and
/// otherwise, in a solve that may stop early, exactly only as far as the
/// tolerance, while the iterate and the report stay those of the observed
/// solve. Each unasked figure is the exact one or a lower bound above the
/// tolerance, and some are bounds (the cut runs); without early stop the
/// unasked figures are zero but the last. One subdomain holding every
/// contact, a frictional packing with rolling rows, for a solve that runs
/// to its cap, one that stops at a check its update called for, and one
/// without early stop.
#[test]
fn the_subdomain_solver_forms_its_updates_as_pgs_does() {
    let problem = default_packing([8, 8, 6]);
    for stopping in [
        Stopping::to_tolerance(40, 1e-14),
        Stopping::to_tolerance(300, 2.0),
        Stopping::iterations(12),
    ] {
        let settings = PgsSettings {
            stopping,
            ..PgsSettings::default()
        };
        let solve = |observer: &mut dyn Observer| {
            let mut solver = SubdomainPgs::new(settings, Box::new(Alone)).unwrap();
            let (mut lambda, mut v) = problem.cold_start();
            let report = solver
                .solve_observed(&problem, &mut lambda, &mut v, observer)
                .unwrap();
            (lambda, v, report)
        };
        let mut exact = Updates(Vec::new());
        let mut unasked = Unasked(Vec::new());
        let (l1, v1, r1) = solve(&mut exact);
        let (l0, v0, r0) = solve(&mut unasked);
        let case = format!("{stopping:?}");
        assert!(l0 == l1 && v0 == v1, "{case}");
        assert_eq!(r0, r1, "{case}");
        assert_eq!(exact.0.len(), r0.iterations, "{case}");
        assert_eq!(unasked.0.len(), r0.iterations, "{case}");
        assert_eq!(*exact.0.last().unwrap(), r0.last_update, "{case}");
        assert_eq!(*unasked.0.last().unwrap(), r0.last_update, "{case}");
        let n = r0.iterations;
        let pairs = || exact.0.iter().zip(&unasked.0).take(n - 1);
        if stopping.early_stop {
            let tolerance = stopping.tolerance;
            for (&e, &u) in pairs() {
                assert!(u == e || (u > tolerance && u <= e), "{case}: {u} for {e}");
            }
            let bounds = pairs().filter(|&(e, u)| u < e).count();
            assert!(bounds > 0, "{case}: no figure was cut short");
        } else {
            assert!(pairs().all(|(&e, &u)| u == 0.0 && e > 0.0), "{case}");
        }
    }
}

//! The contracts of the `Solver` and `WarmStart` traits that every
//! implementation, ours or a user's, gets from the trait itself.

use ndem_math::Velocity6;
use ndem_solve::*;
use ndem_testkit::generate::{PackingSpec, default_packing, sphere_packing};

/// Counts the calls that reach the solver's own code.
struct Counting(usize);

impl Solver for Counting {
    fn solve_task(&mut self, task: SolveTask<'_>) -> Result<SolveReport, SolveError> {
        self.0 += 1;
        let (problem, lambda, velocity, _) = task.into_parts();
        assert_eq!(lambda.len(), problem.len());
        assert_eq!(velocity.len(), problem.body_count());
        ProjectedGaussSeidel::default().solve(problem, lambda, velocity)
    }
    fn name(&self) -> &'static str {
        "counting"
    }
    fn stopping(&self) -> Stopping {
        Stopping::default()
    }
}

/// A user's solver never sees slices of the wrong size or an empty
/// problem: `solve_observed` answers those before `solve_task` runs.
#[test]
fn solve_task_sees_only_checked_input() {
    let problem = sphere_packing(&PackingSpec::default()).expect("a valid spec");
    let mut solver = Counting(0);
    let mut v = problem.free_velocity().to_vec();
    let short = solver.solve(&problem, &mut vec![0.0; problem.len() - 1], &mut v);
    assert!(matches!(
        short,
        Err(SolveError::DimensionMismatch {
            field: "lambda",
            ..
        })
    ));
    let mut lam = vec![0.0; problem.len()];
    let few = solver.solve(&problem, &mut lam, &mut v[1..].to_vec());
    assert!(matches!(
        few,
        Err(SolveError::DimensionMismatch {
            field: "velocity",
            ..
        })
    ));
    let empty = ContactProblem::new(
        problem.inverse_mass().to_vec(),
        problem.free_velocity().to_vec(),
        problem.contact_rows(),
        problem.friction_set(),
        problem.dt(),
    )
    .unwrap();
    let report = solver.solve(&empty, &mut [], &mut v).unwrap();
    assert_eq!(report.status, SolverStatus::Converged);
    assert_eq!(report.solver, "counting");
    assert_eq!(solver.0, 0, "solve_task ran on unchecked input");
    solver.solve(&problem, &mut lam, &mut v).unwrap();
    assert_eq!(solver.0, 1);
}

/// The history warm start owns its history: after one
/// `solve_warm_started` every contact of the next (same) problem starts
/// warm, from β times the recorded impulse; the cold and model starts keep
/// none.
#[test]
fn history_policy_records_what_it_starts_from() {
    let problem = sphere_packing(&PackingSpec::default()).expect("a valid spec");
    let n = problem.contacts().len();
    let mut pgs = ProjectedGaussSeidel::with_stopping(Stopping::iterations(200)).unwrap();
    let mut warm = HistoryWarmStart::default();
    let mut lam = vec![0.0; problem.len()];
    let mut v = vec![Velocity6::ZERO; problem.body_count()];
    let (first, _) = solve_warm_started(&mut warm, &mut pgs, &problem, &mut lam, &mut v).unwrap();
    assert_eq!((first.warm, first.cold), (0, n));
    assert_eq!(warm.history().map(|h| h.len()), Some(n));
    let mut again = vec![0.0; problem.len()];
    let stats = warm.initialize(&problem, &mut again, &mut v).unwrap();
    assert_eq!((stats.warm, stats.cold), (n, 0));
    // β λ on the normal rows: stored as s_n λ_n and divided by s_n again,
    // three roundings (measured at most 1 ε relative; bound 4 ε)
    let m = problem.contact_rows().count();
    let mut worst = 0.0f64;
    for i in 0..n {
        let expected = warm.beta * lam[i * m];
        let err = (again[i * m] - expected).abs() / expected.abs().max(f64::MIN_POSITIVE);
        worst = worst.max(err / f64::EPSILON);
    }
    eprintln!("normal rows: worst relative error {worst} eps");
    assert!(worst <= 4.0, "{worst} eps");
    assert!(ColdStart.history().is_none());
    assert!(ModelWarmStart.history().is_none());
    let guarded = Safeguarded::new(warm.clone());
    assert_eq!(guarded.history(), warm.history());
}

/// `WarmStart::initialize` writes every entry of `λ₀` and `v₀`: a caller
/// may hand it vectors that still hold an earlier solve's values (the
/// stepper does), so each policy starting from vectors of NaN gives its
/// start from zeros, bit for bit: cold, history (all rows and the normal
/// rows only, one and two threads, half the contacts known), model, and
/// the safeguarded history.
#[test]
fn every_policy_writes_all_of_its_start() {
    // enough contacts for two threads' parts (at least 8192 each)
    let problem = default_packing([24, 24, 15]);
    assert!(problem.contacts().len() >= 2 * 8192);
    let mut pgs = ProjectedGaussSeidel::with_stopping(Stopping::iterations(20)).unwrap();
    let (mut lambda, mut v) = problem.cold_start();
    pgs.solve(&problem, &mut lambda, &mut v).unwrap();
    let mut recorded = ImpulseHistory::new();
    recorded.record(&problem, &lambda);
    let mut half = ImpulseHistory::new();
    half.extend(recorded.sorted_contacts().into_iter().step_by(2));
    let history = |rows, threads| HistoryWarmStart {
        history: half.clone(),
        rows,
        threads,
        ..HistoryWarmStart::default()
    };
    let mut policies: Vec<Box<dyn WarmStart>> = vec![
        Box::new(ColdStart),
        Box::new(history(WarmRows::All, 1)),
        Box::new(history(WarmRows::All, 2)),
        Box::new(history(WarmRows::NormalOnly, 1)),
        Box::new(ModelWarmStart),
        Box::new(Safeguarded::new(history(WarmRows::All, 1))),
    ];
    let bits = |x: &[f64]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    let velocity_bits = |x: &[Velocity6]| {
        x.iter()
            .flat_map(|v| v.linear.iter().chain(v.angular.iter()).map(|c| c.to_bits()))
            .collect::<Vec<_>>()
    };
    for policy in &mut policies {
        let mut start = |fill: f64| {
            let mut l0 = vec![fill; problem.len()];
            let nan = Velocity6::new(ndem_math::Vec3::repeat(fill), ndem_math::Vec3::repeat(fill));
            let mut v0 = vec![nan; problem.body_count()];
            let stats = policy.initialize(&problem, &mut l0, &mut v0).unwrap();
            (bits(&l0), velocity_bits(&v0), stats)
        };
        let (from_zero, from_nan) = (start(0.0), start(f64::NAN));
        assert!(from_zero.2.warm > 0 || from_zero.2.cold > 0);
        assert!(
            from_nan == from_zero,
            "{}: a stale entry survived",
            policy.name()
        );
    }
}

//! The contracts of the `Solver` and `WarmStart` traits that every
//! implementation, ours or a user's, gets from the trait itself.

use ndem_math::Velocity6;
use ndem_solve::generate::{PackingSpec, sphere_packing};
use ndem_solve::*;

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
    let problem = sphere_packing(&PackingSpec::default());
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
    let problem = sphere_packing(&PackingSpec::default());
    let n = problem.contacts().len();
    let mut pgs = ProjectedGaussSeidel::new(PgsSettings {
        stopping: Stopping::iterations(200),
        ..PgsSettings::default()
    })
    .unwrap();
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

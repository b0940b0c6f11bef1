//! Cone (disk) friction PGS must be Coulomb at its fixed point for any
//! frame and any row diagonals: contacts with non-orthonormal frames,
//! anisotropic bodies and lever arms off the normal, pressed and sliding.

use ndem_math::Velocity6;
use ndem_solve::metrics::coulomb_merit;
use ndem_solve::{
    ContactRows, LocalGaussSeidel, LocalProblem, LocalSolver, PgsSettings, PgsVariant,
    ProjectedGaussSeidel, SemismoothNewton, Solver, Stopping,
};
use ndem_testkit::strategies::{SkewedSpec, skewed_contacts};
use proptest::prelude::*;

fn solve(problem: &ndem_solve::ContactProblem, variant: PgsVariant, sweeps: usize) -> f64 {
    let mut pgs = ProjectedGaussSeidel::new(PgsSettings {
        stopping: Stopping::iterations(sweeps),
        variant,
        ..PgsSettings::default()
    })
    .unwrap();
    let (mut lambda, mut v) = problem.cold_start();
    pgs.solve(problem, &mut lambda, &mut v).unwrap();
    coulomb_merit(problem, &lambda)
}

/// The generated skewed problems (contacts with non-orthonormal frames,
/// anisotropic bodies, lever arms off the normal, pressed and sliding):
/// `cases` of them from proptest's deterministic runner, unfiltered.
fn skewed_cases(cases: usize) -> Vec<ndem_solve::ContactProblem> {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = (
        1usize..4,
        0usize..3,
        0.1f64..0.6,
        0.0f64..3.0,
        any::<bool>(),
        any::<u64>(),
    );
    (0..cases)
        .map(|_| {
            let (bodies, extra, skew, sliding, six_rows, seed) =
                strategy.new_tree(&mut runner).unwrap().current();
            let rows = if six_rows {
                ContactRows::NormalFrictionRolling
            } else {
                ContactRows::NormalFriction
            };
            skewed_contacts(&SkewedSpec {
                bodies,
                contacts: bodies + extra,
                skew,
                sliding,
                rows,
                seed,
            })
            .expect("a valid spec")
        })
        .collect()
}

/// How many of `problems` `variant` brings to a Coulomb merit of 1e-8 in
/// 20 000 sweeps (printed with the worst merit of the others).
fn count_coulomb(variant: PgsVariant, problems: &[ndem_solve::ContactProblem]) -> usize {
    let mut ok = 0;
    let mut worst = 0.0f64;
    for problem in problems {
        let merit = solve(problem, variant, 20_000);
        if merit <= 1e-8 {
            ok += 1;
        } else {
            worst = worst.max(merit);
        }
    }
    println!(
        "{variant:?} disk PGS: {ok} of {} skewed problems to merit 1e-8; worst other {worst:e}",
        problems.len()
    );
    ok
}

/// Row-wise disk PGS on 64 generated skewed problems: the count reaching
/// a Coulomb merit of 1e-8 is printed and asserted at its measured value
/// (MEASURED_ROW_WISE), not claimed for every case: random testing finds
/// a contact whose own Delassus block couples the
/// normal and tangent rows strongly, where PGS cycles
/// (`disk_pgs_can_cycle_on_a_strongly_coupled_contact`).
#[test]
fn row_wise_disk_pgs_on_skewed_problems_measured() {
    let ok = count_coulomb(PgsVariant::RowWise, &skewed_cases(64));
    assert!(ok >= MEASURED_ROW_WISE, "{ok} of 64");
}

/// Measured: 64 of 64 (deterministic runner).
const MEASURED_ROW_WISE: usize = 64;

/// The blocked variant (exact local solve per contact) on the same 64
/// problems: where several contacts share a body, block Gauss-Seidel can
/// cycle (measured: a generated 3-body, 5-contact case cycles at a merit
/// of 6.6e-2 where row-wise PGS reaches 1e-15 and Newton 1e-16). The count
/// reaching 1e-8 is printed and asserted at its measured value
/// (MEASURED_BLOCKED).
#[test]
fn blocked_disk_pgs_on_skewed_problems_measured() {
    let ok = count_coulomb(PgsVariant::Blocked, &skewed_cases(64));
    assert!(ok >= MEASURED_BLOCKED, "{ok} of 64");
}

/// Measured: 64 of 64.
const MEASURED_BLOCKED: usize = 64;

/// The case random testing found (when a property test claimed every case
/// converges): three independent contacts, one of whose 3×3 Delassus
/// blocks couples normal and tangent rows strongly (`W_NT` up to 1.5
/// `W_NN`, μ = 0.84). Alternating the normal row and the friction pair
/// cycles between two states at a Coulomb merit of 3.38e-3 in both
/// body-based variants: the contact penetrates (`u_N = −0.034`) with its
/// reaction inside the cone. The status says so. The local Gauss-Seidel
/// falls back on a per-contact Newton solve when the alternation does not
/// settle, and Newton on the whole problem converges.
#[test]
fn disk_pgs_can_cycle_on_a_strongly_coupled_contact() {
    let problem = skewed_contacts(&SkewedSpec {
        bodies: 3,
        contacts: 3,
        skew: 0.4590460078894995,
        sliding: 2.8478059677144185,
        rows: ContactRows::NormalFriction,
        seed: 18338334853925884404,
    })
    .expect("a valid spec");
    for variant in [PgsVariant::RowWise, PgsVariant::Blocked] {
        let mut pgs = ProjectedGaussSeidel::new(PgsSettings {
            stopping: Stopping::to_tolerance(20_000, 1e-6),
            variant,
            ..PgsSettings::default()
        })
        .unwrap();
        let (mut lambda, mut v) = problem.cold_start();
        let report = pgs.solve(&problem, &mut lambda, &mut v).unwrap();
        let merit = coulomb_merit(&problem, &lambda);
        println!(
            "{variant:?}: {:?} after {} sweeps, Coulomb merit {merit:e}",
            report.status, report.iterations
        );
        // measured 3.38e-3 in both variants
        assert!(merit > 3e-3, "{variant:?}: {merit:e}");
        assert!(!report.converged(), "{report:?}");
    }
    let local = LocalProblem::from_contact_problem(&problem).unwrap();
    let mut r = vec![0.0; 9];
    let nsgs = LocalGaussSeidel::default().solve(&local, &mut r).unwrap();
    let mut r = vec![0.0; 9];
    let newton = SemismoothNewton::default().solve(&local, &mut r).unwrap();
    println!("local NSGS {nsgs:?}\nNewton {newton:?}");
    // measured: NSGS 7.1e-17, Newton 8.2e-16
    assert!(nsgs.converged() && nsgs.merit <= 1e-8, "{nsgs:?}");
    assert!(newton.converged() && newton.merit <= 1e-10, "{newton:?}");
}

/// The case random testing found: blocked disk PGS cycles (the merit is
/// the same after 1000 and 20 000 sweeps) where row-wise PGS converges.
#[test]
fn blocked_disk_pgs_can_cycle_where_row_wise_converges() {
    let problem = skewed_contacts(&SkewedSpec {
        bodies: 3,
        contacts: 5,
        skew: 0.4896421364269963,
        sliding: 1.7561773354937624,
        rows: ContactRows::NormalFriction,
        seed: 7091396879900018566,
    })
    .expect("a valid spec");
    let row_wise = solve(&problem, PgsVariant::RowWise, 1000);
    let (b1, b2) = (
        solve(&problem, PgsVariant::Blocked, 1000),
        solve(&problem, PgsVariant::Blocked, 20_000),
    );
    println!("row-wise {row_wise:e}; blocked {b1:e} after 1000 sweeps, {b2:e} after 20 000");
    assert!(row_wise <= 1e-14);
    assert!(
        b2 > 1e-2 && (b1 - b2).abs() <= 1e-9 * b2,
        "blocked {b1:e} -> {b2:e}"
    );
}

/// One sliding contact of a rotated box on the ground: the smallest case.
#[test]
fn single_sliding_skewed_contact_reaches_coulomb() {
    let problem = skewed_contacts(&SkewedSpec {
        bodies: 1,
        contacts: 1,
        skew: 0.5,
        sliding: 2.0,
        rows: ContactRows::NormalFriction,
        seed: 7,
    })
    .expect("a valid spec");
    for variant in [PgsVariant::RowWise, PgsVariant::Blocked] {
        let merit = solve(&problem, variant, 5000);
        println!("{variant:?}: Coulomb merit {merit:e}");
        assert!(merit <= 1e-10, "{variant:?}: merit {merit:e}");
    }
    let _ = Velocity6::ZERO;
}

/// APGD inside the De Saxcé fixed point (`CoulombApgd`) on 32 generated
/// skewed sliding problems with 3 rows per contact (proptest's
/// deterministic runner): plain APGD solves the convex relaxation and stays
/// far from Coulomb on sliding contacts; the fixed point reaches a Coulomb
/// merit of 1e-8 on the count printed and asserted (MEASURED_APGD_COULOMB),
/// and says `converged` exactly then.
#[test]
fn apgd_in_the_de_saxce_fixed_point_reaches_coulomb() {
    use ndem_solve::{Apgd, ApgdSettings, CoulombApgd, CoulombApgdSettings, Solver, SolverStatus};
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = (1usize..4, 0usize..3, 0.1f64..0.6, 0.5f64..3.0, any::<u64>());
    let cases = 32;
    let (mut ok, mut plain_worst, mut worst) = (0, 0.0f64, 0.0f64);
    for _ in 0..cases {
        let (bodies, extra, skew, sliding, seed) =
            strategy.new_tree(&mut runner).unwrap().current();
        let problem = skewed_contacts(&SkewedSpec {
            bodies,
            contacts: bodies + extra,
            skew,
            sliding,
            rows: ContactRows::NormalFriction,
            seed,
        })
        .expect("a valid spec");
        let mut plain = Apgd::new(ApgdSettings {
            stopping: Stopping::to_tolerance(20_000, 1e-12),
            ..ApgdSettings::default()
        })
        .unwrap();
        let (mut lam, mut v) = problem.cold_start();
        plain.solve(&problem, &mut lam, &mut v).unwrap();
        plain_worst = plain_worst.max(ndem_solve::coulomb_merit(&problem, &lam));
        let mut fp = CoulombApgd::new(CoulombApgdSettings::default()).unwrap();
        let (mut lam, mut v) = problem.cold_start();
        let rep = fp.solve(&problem, &mut lam, &mut v).unwrap();
        let merit = ndem_solve::coulomb_merit(&problem, &lam);
        assert_eq!(
            rep.status == SolverStatus::Converged,
            merit <= 1e-8,
            "{rep:?} merit {merit:e}"
        );
        if merit <= 1e-8 {
            ok += 1
        } else {
            worst = worst.max(merit)
        }
    }
    println!(
        "plain APGD: worst Coulomb merit {plain_worst:e}; De Saxcé fixed point: {ok} of {cases} to 1e-8, worst other {worst:e}"
    );
    assert!(ok >= MEASURED_APGD_COULOMB, "{ok} of {cases}");
}

/// Measured: 30 of 32 (the other two at 5e-8 after 50 outer iterations).
const MEASURED_APGD_COULOMB: usize = 30;

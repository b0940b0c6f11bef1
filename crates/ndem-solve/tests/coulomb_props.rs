//! Cone (disk) friction PGS must be Coulomb at its fixed point for any
//! frame and any row diagonals: contacts with non-orthonormal frames,
//! anisotropic bodies and lever arms off the normal, pressed and sliding.

use ndem_math::Velocity6;
use ndem_solve::metrics::coulomb_merit;
use ndem_solve::testing::{SkewedSpec, skewed_contacts};
use ndem_solve::{ContactRows, PgsSettings, PgsVariant, ProjectedGaussSeidel, Solver, Stopping};
use proptest::prelude::*;

fn solve(problem: &ndem_solve::ContactProblem, variant: PgsVariant, sweeps: usize) -> f64 {
    let mut pgs = ProjectedGaussSeidel::new(PgsSettings {
        stopping: Stopping::iterations(sweeps),
        variant,
        ..PgsSettings::default()
    })
    .unwrap();
    let mut lambda = vec![0.0; problem.len()];
    let mut v = problem.free_velocity().to_vec();
    pgs.solve(problem, &mut lambda, &mut v).unwrap();
    coulomb_merit(problem, &lambda)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Row-wise disk PGS reaches a Coulomb merit of 1e-8 on every generated
    /// case (no filtering): skewed frames, anisotropic bodies, sliding.
    #[test]
    fn disk_pgs_is_coulomb_on_skewed_sliding_contacts(
        bodies in 1usize..4,
        extra in 0usize..3,
        skew in 0.1f64..0.6,
        sliding in 0.0f64..3.0,
        six_rows in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let rows = if six_rows { ContactRows::NormalFrictionRolling } else { ContactRows::NormalFriction };
        let problem = skewed_contacts(&SkewedSpec { bodies, contacts: bodies + extra, skew, sliding, rows, seed });
        let merit = solve(&problem, PgsVariant::RowWise, 20_000);
        prop_assert!(merit <= 1e-8, "merit {merit:e}");
    }
}

/// The blocked variant (exact local solve per contact) on 64 generated
/// skewed problems (proptest's deterministic runner): every case whose
/// contacts touch distinct bodies is Coulomb to 1e-8; where several
/// contacts share a body, block Gauss-Seidel can cycle (measured: a
/// generated 3-body, 5-contact case cycles at a merit of 6.6e-2 where
/// row-wise PGS reaches 1e-15 and Newton 1e-16). The count reaching 1e-8
/// is printed and asserted at its measured value (MEASURED_BLOCKED).
#[test]
fn blocked_disk_pgs_on_skewed_problems_measured() {
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
    let cases = 64;
    let mut ok = 0;
    let mut worst = 0.0f64;
    for _ in 0..cases {
        let (bodies, extra, skew, sliding, six_rows, seed) =
            strategy.new_tree(&mut runner).unwrap().current();
        let rows = if six_rows {
            ContactRows::NormalFrictionRolling
        } else {
            ContactRows::NormalFriction
        };
        let problem = skewed_contacts(&SkewedSpec {
            bodies,
            contacts: bodies + extra,
            skew,
            sliding,
            rows,
            seed,
        });
        let merit = solve(&problem, PgsVariant::Blocked, 20_000);
        if merit <= 1e-8 {
            ok += 1;
        } else {
            worst = worst.max(merit);
        }
    }
    println!(
        "blocked disk PGS: {ok} of {cases} skewed problems to merit 1e-8; worst other {worst:e}"
    );
    assert!(ok >= MEASURED_BLOCKED, "{ok} of {cases}");
}

/// Measured: 64 of 64.
const MEASURED_BLOCKED: usize = 64;

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
    });
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
    });
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
        });
        let mut plain = Apgd::new(ApgdSettings {
            stopping: Stopping::to_tolerance(20_000, 1e-12),
            ..ApgdSettings::default()
        })
        .unwrap();
        let mut lam = vec![0.0; problem.len()];
        let mut v = problem.free_velocity().to_vec();
        plain.solve(&problem, &mut lam, &mut v).unwrap();
        plain_worst = plain_worst.max(ndem_solve::coulomb_merit(&problem, &lam));
        let mut fp = CoulombApgd::new(CoulombApgdSettings::default()).unwrap();
        let mut lam = vec![0.0; problem.len()];
        let mut v = problem.free_velocity().to_vec();
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

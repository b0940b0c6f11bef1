//! Problems given by matrices, global form `(M, H, f, w, μ)`: solved
//! directly by [`GlobalGaussSeidel`] and through the local form
//! `W = Hᵀ M⁻¹ H`, the answers agree.

use nalgebra::{DMatrix, DVector};
use ndem_solve::*;
use ndem_testkit::strategies::*;
use proptest::prelude::*;

fn dense(a: &nalgebra_sparse::CsrMatrix<f64>) -> DMatrix<f64> {
    DMatrix::from(a)
}

fn max_abs(x: impl IntoIterator<Item = f64>) -> f64 {
    x.into_iter().fold(0.0, |a, b| a.max(b.abs()))
}

/// `W = Hᵀ M⁻¹ H` and `q = Hᵀ M⁻¹ f + w` formed densely (nalgebra's
/// Cholesky), an independent reference for `to_local`.
fn dense_local(p: &GlobalProblem) -> (DMatrix<f64>, DVector<f64>) {
    let m = dense(&p.m);
    let h = dense(&p.h);
    let chol = m.cholesky().unwrap();
    let minv_h = chol.solve(&h);
    let minv_f = chol.solve(&DVector::from_column_slice(&p.f));
    (
        h.transpose() * minv_h,
        h.transpose() * minv_f + DVector::from_column_slice(&p.w),
    )
}

fn gauss_seidel(sweeps: usize) -> LocalGaussSeidel {
    LocalGaussSeidel {
        stopping: Stopping::iterations(sweeps),
        ..LocalGaussSeidel::default()
    }
}

/// Solves `p` both ways with the same sweeps and returns the largest
/// difference of the reactions relative to their largest entry, the
/// global velocity error `‖v − M⁻¹(f + H r)‖` relative to `‖v‖`, and both
/// reports.
fn both_ways(p: &GlobalProblem, sweeps: usize) -> (f64, f64, LocalReport, LocalReport) {
    let n = p.mu.len();
    let mut r_global = vec![0.0; 3 * n];
    let mut v = vec![0.0; p.f.len()];
    let global = GlobalGaussSeidel {
        settings: gauss_seidel(sweeps),
    }
    .solve(p, &mut r_global, &mut v)
    .unwrap();
    let local = p.to_local().unwrap();
    let mut r_local = vec![0.0; 3 * n];
    let local_report = gauss_seidel(sweeps).solve(&local, &mut r_local).unwrap();
    let scale = max_abs(r_local.iter().copied()).max(1e-300);
    let diff = max_abs(r_global.iter().zip(&r_local).map(|(a, b)| a - b)) / scale;
    let m = dense(&p.m);
    let rhs =
        DVector::from_column_slice(&p.f) + dense(&p.h) * DVector::from_column_slice(&r_global);
    let v_ref = m.cholesky().unwrap().solve(&rhs);
    let v_err = max_abs(v_ref.iter().zip(&v).map(|(a, b)| a - b))
        / max_abs(v_ref.iter().copied()).max(1e-300);
    (diff, v_err, global, local_report)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The reduction to local form equals the dense reference
    /// `Hᵀ M⁻¹ H`, `Hᵀ M⁻¹ f + w` (measured over 2000 random cases: at
    /// most 6.2e-16 (W) and 6.7e-16 (q) of the largest entry; tolerance
    /// 10×).
    #[test]
    fn reduction_matches_the_dense_reference(p in arb_global_problem(false)) {
        let local = p.to_local().unwrap();
        let (w, q) = dense_local(&p);
        let w_err = max_abs((dense(local.w()) - &w).iter().copied()) / max_abs(w.iter().copied());
        let q_err = max_abs(local.q().iter().zip(q.iter()).map(|(a, b)| a - b)) / max_abs(q.iter().copied()).max(1.0);
        prop_assert!(w_err <= 6.2e-15 && q_err <= 6.7e-15, "W {w_err:e}, q {q_err:e}");
    }

    /// Global and local Gauss-Seidel run the same iteration (the same
    /// contact visits; only the velocity bookkeeping differs): after the
    /// same 300 sweeps they hold the same reactions, converged or not, and
    /// the global solver's velocity is `M⁻¹ (f + H r)` (measured over 2000
    /// random cases: reactions within 1.9e-12 of the largest, velocities
    /// within 1.1e-15; tolerances 10×).
    #[test]
    fn global_and_local_forms_run_the_same_iteration(p in arb_global_problem(false)) {
        let (diff, v_err, global, local) = both_ways(&p, 300);
        prop_assert!(diff <= 1.9e-11, "reactions differ by {diff:e} ({global:?} / {local:?})");
        prop_assert!(v_err <= 1.1e-14, "velocity error {v_err:e}");
        prop_assert!((global.merit - local.merit).abs() <= 1e-9 * global.merit.max(local.merit) + 1e-14,
            "merits {:e} / {:e}", global.merit, local.merit);
    }
}

/// A mass matrix that is not block diagonal (20 rigid bodies coupled in a
/// chain, 120 rows: one connected block above `DENSE_BLOCK_LIMIT`) goes
/// through the sparse Cholesky path: the reduction equals the dense
/// reference and both forms give the same answer.
#[test]
fn general_sparse_mass_matrix() {
    let p = random_global_problem(&GlobalSpec {
        block: 6,
        bodies: 20,
        contacts: 20,
        coupled: true,
        max_friction: 0.5,
        seed: 11,
    })
    .expect("a valid spec");
    assert!(p.m.nrows() > ndem_solve::local_problem::DENSE_BLOCK_LIMIT);
    let local = p.to_local().unwrap();
    let (w, q) = dense_local(&p);
    let w_err = max_abs((dense(local.w()) - &w).iter().copied()) / max_abs(w.iter().copied());
    let q_err = max_abs(local.q().iter().zip(q.iter()).map(|(a, b)| a - b))
        / max_abs(q.iter().copied()).max(1.0);
    let (diff, v_err, global, local_report) = both_ways(&p, 2000);
    println!(
        "coupled M: W error {w_err:e}, q error {q_err:e}; reactions differ by {diff:e}, velocity error {v_err:e}; {global:?} / {local_report:?}"
    );
    // measured: W 3.9e-16, q 1.8e-16, reactions 1.0e-15, velocity
    // 4.9e-16; tolerances 10×
    assert!(
        w_err <= 3.9e-15 && q_err <= 1.8e-15,
        "W {w_err:e}, q {q_err:e}"
    );
    assert!(diff <= 1e-14 && v_err <= 4.9e-15, "{diff:e} {v_err:e}");
}

/// Converged answers: on random global problems the global Gauss-Seidel
/// reaches a Coulomb merit of 1e-10 and agrees with semismooth Newton on
/// the local form where both converge (W positive definite, μ ≤ 0.6).
#[test]
fn global_gauss_seidel_agrees_with_newton() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = arb_global_problem(false);
    let (cases, mut both, mut worst) = (32, 0, 0.0f64);
    for _ in 0..cases {
        let p = strategy.new_tree(&mut runner).unwrap().current();
        let n = p.mu.len();
        let mut r = vec![0.0; 3 * n];
        let mut v = vec![0.0; p.f.len()];
        let gs = GlobalGaussSeidel {
            settings: LocalGaussSeidel {
                stopping: Stopping::to_tolerance(100_000, 1e-10),
                ..LocalGaussSeidel::default()
            },
        }
        .solve(&p, &mut r, &mut v)
        .unwrap();
        let local = p.to_local().unwrap();
        let mut rn = vec![0.0; 3 * n];
        let newton = SemismoothNewton::default().solve(&local, &mut rn).unwrap();
        assert_eq!(gs.converged(), gs.merit <= 1e-10, "{gs:?}");
        assert!((local.merit(&r) - gs.merit).abs() <= 1e-9 * gs.merit + 1e-15);
        if gs.converged() && newton.converged() {
            both += 1;
            let scale = max_abs(rn.iter().copied()).max(1e-300);
            worst = worst.max(max_abs(r.iter().zip(&rn).map(|(a, b)| a - b)) / scale);
        }
    }
    println!(
        "{both} of {cases} converged both ways; reactions differ by at most {worst:e} of the largest"
    );
    assert!(both >= MEASURED_BOTH, "{both} of {cases}");
    // measured 1.26e-9 (both stop at a merit of 1e-10); tolerance 8×
    assert!(worst <= 1e-8, "{worst:e}");
}

/// Measured: 32 of 32.
const MEASURED_BOTH: usize = 32;

/// Bad global problems give typed errors naming the field.
#[test]
fn bad_global_problems_name_the_field() {
    let good = random_global_problem(&GlobalSpec {
        block: 6,
        bodies: 2,
        contacts: 2,
        coupled: false,
        max_friction: 0.5,
        seed: 3,
    })
    .expect("a valid spec");
    assert!(good.validate().is_ok());
    let field = |p: &GlobalProblem| match p.validate() {
        Err(SolveError::DimensionMismatch { field, .. })
        | Err(SolveError::NonFinite { field, .. })
        | Err(SolveError::OutOfRange { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    let mut p = good.clone();
    p.w.pop();
    assert_eq!(field(&p), "w");
    let mut p = good.clone();
    p.f.push(0.0);
    assert_eq!(field(&p), "f");
    let mut p = good.clone();
    p.mu[1] = -0.1;
    assert_eq!(field(&p), "mu");
    let mut p = good.clone();
    p.mu.push(0.1);
    assert_eq!(field(&p), "H.ncols");
    let mut p = good.clone();
    p.h.values_mut()[3] = f64::NAN;
    assert_eq!(field(&p), "H");
    let mut p = good.clone();
    // an asymmetric mass matrix
    p.m.values_mut()[1] += 1.0;
    assert_eq!(field(&p), "M");
    // an indefinite one: a typed error from the factorization, not a panic
    let mut p = good.clone();
    for x in p.m.values_mut() {
        *x = -*x;
    }
    assert!(matches!(
        p.to_local(),
        Err(SolveError::OutOfRange { field: "M", .. })
    ));
    let mut r = vec![0.0; 5];
    let mut v = vec![0.0; good.f.len()];
    assert!(matches!(
        GlobalGaussSeidel::default().solve(&good, &mut r, &mut v),
        Err(SolveError::DimensionMismatch { field: "r", .. })
    ));
}

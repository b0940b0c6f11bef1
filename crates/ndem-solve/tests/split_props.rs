//! The split solver's direct block (PGS with `JointRows::Direct`) against
//! an independent dense reference on random joint trees: the Schur
//! complement `A = G M⁻¹ Gᵀ + Σ` assembled densely here from the rows'
//! 12 Jacobian entries and 6×6 inverse masses, solved by nalgebra's dense
//! Cholesky (no bounds) or by enumerating active sets (force-limited
//! rows): the strictly convex box QP has exactly one KKT point.

use nalgebra::{DMatrix, DVector};
use ndem_solve::{
    ContactProblem, JointRows, PgsSettings, ProjectedGaussSeidel, RowBounds, Solver, SolverStatus,
    Stopping,
};
use ndem_testkit::strategies::{TreeSpec, arb_joint_tree, joint_tree};
use proptest::prelude::*;

/// `(A, r, lower, upper)` of the bilateral rows, densely.
fn dense(problem: &ContactProblem) -> (DMatrix<f64>, DVector<f64>, Vec<f64>, Vec<f64>) {
    let rows = problem.generic_rows();
    let nb = problem.body_count();
    let n = rows.len();
    let mut g = DMatrix::zeros(n, 6 * nb);
    for (i, r) in rows.iter().enumerate() {
        let [a, b] = r.bodies.map(|x| x as usize);
        let j = &r.jacobian;
        for k in 0..3 {
            g[(i, 6 * a + k)] += j.linear_a[k];
            g[(i, 6 * a + 3 + k)] += j.angular_a[k];
            g[(i, 6 * b + k)] += j.linear_b[k];
            g[(i, 6 * b + 3 + k)] += j.angular_b[k];
        }
    }
    let mut minv = DMatrix::zeros(6 * nb, 6 * nb);
    let mut vstar = DVector::zeros(6 * nb);
    for (body, (m, v)) in problem
        .inverse_mass()
        .iter()
        .zip(problem.free_velocity())
        .enumerate()
    {
        for k in 0..3 {
            minv[(6 * body + k, 6 * body + k)] = m.inv_mass;
            for l in 0..3 {
                minv[(6 * body + 3 + k, 6 * body + 3 + l)] = m.inv_inertia[(k, l)];
            }
            vstar[6 * body + k] = v.linear[k];
            vstar[6 * body + 3 + k] = v.angular[k];
        }
    }
    let mut a = &g * &minv * g.transpose();
    let mut r = &g * &vstar;
    let (mut lower, mut upper) = (Vec::new(), Vec::new());
    for (i, row) in rows.iter().enumerate() {
        a[(i, i)] += row.sigma;
        r[i] += row.rhs;
        let RowBounds::Fixed {
            lower: lo,
            upper: hi,
        } = row.bounds
        else {
            panic!("tree rows have fixed bounds")
        };
        lower.push(lo);
        upper.push(hi);
    }
    (a, r, lower, upper)
}

/// The box QP's solution by enumerating which bounded rows sit at which
/// bound (exact for up to a handful of bounded rows).
fn reference(problem: &ContactProblem) -> Option<DVector<f64>> {
    let (a, r, lower, upper) = dense(problem);
    let n = r.len();
    let bounded: Vec<usize> = (0..n).filter(|&i| upper[i].is_finite()).collect();
    if bounded.len() > 6 {
        return None;
    }
    for code in 0..3usize.pow(bounded.len() as u32) {
        let mut state = vec![0u8; n]; // 0 free, 1 lower, 2 upper
        let mut c = code;
        for &i in &bounded {
            state[i] = (c % 3) as u8;
            c /= 3;
        }
        let mut lambda = DVector::zeros(n);
        for i in 0..n {
            lambda[i] = match state[i] {
                1 => lower[i],
                2 => upper[i],
                _ => 0.0,
            };
        }
        let free: Vec<usize> = (0..n).filter(|&i| state[i] == 0).collect();
        if !free.is_empty() {
            let aff = DMatrix::from_fn(free.len(), free.len(), |p, q| a[(free[p], free[q])]);
            let fixed_part = &a * &lambda;
            let rhs = DVector::from_fn(free.len(), |p, _| -r[free[p]] - fixed_part[free[p]]);
            let x = aff.cholesky()?.solve(&rhs);
            for (p, &i) in free.iter().enumerate() {
                lambda[i] = x[p];
            }
        }
        let w = &a * &lambda + &r;
        let kkt = (0..n).all(|i| match state[i] {
            0 => lambda[i] >= lower[i] && lambda[i] <= upper[i],
            1 => w[i] >= 0.0,
            _ => w[i] <= 0.0,
        });
        if kkt {
            return Some(lambda);
        }
    }
    None
}

fn split_solver(iterations: usize, tolerance: f64) -> ProjectedGaussSeidel {
    ProjectedGaussSeidel::new(PgsSettings {
        stopping: Stopping::to_tolerance(iterations, tolerance),
        joints: JointRows::Direct,
        ..PgsSettings::default()
    })
    .unwrap()
}

fn solve(problem: &ContactProblem, solver: &mut ProjectedGaussSeidel) -> (Vec<f64>, SolverStatus) {
    let (mut lambda, mut velocity) = problem.cold_start();
    let report = solver.solve(problem, &mut lambda, &mut velocity).unwrap();
    (lambda, report.status)
}

/// Per generic row, the sizes of the terms that form `r = G v* + b`,
/// `Σ |G_ij v*_j| + |b|`: where they cancel, forming `r` leaves a
/// round-off of ε times these, not of ε |r|.
fn rhs_terms(problem: &ContactProblem) -> DVector<f64> {
    let v = problem.free_velocity();
    let rows = problem.generic_rows();
    DVector::from_iterator(
        rows.len(),
        rows.iter().map(|r| {
            let [a, b] = r.bodies.map(|x| x as usize);
            let j = &r.jacobian;
            let side = |lin: &ndem_math::Vec3, ang: &ndem_math::Vec3, v: &ndem_math::Velocity6| {
                (0..3)
                    .map(|k| (lin[k] * v.linear[k]).abs() + (ang[k] * v.angular[k]).abs())
                    .sum::<f64>()
            };
            side(&j.linear_a, &j.angular_a, &v[a])
                + side(&j.linear_b, &j.angular_b, &v[b])
                + r.rhs.abs()
        }),
    )
}

fn smallest_eigenvalue(a: &DMatrix<f64>) -> f64 {
    a.clone().symmetric_eigenvalues().min()
}

fn difference(lambda: &[f64], reference: &DVector<f64>) -> f64 {
    lambda
        .iter()
        .zip(reference.iter())
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        .sqrt()
}

/// The 2-norm condition number of a symmetric positive definite matrix.
fn condition_number(a: &DMatrix<f64>) -> f64 {
    let eigen = a.clone().symmetric_eigenvalues();
    eigen.max() / eigen.min()
}

fn relative_error(lambda: &[f64], reference: &DVector<f64>) -> f64 {
    let diff: f64 = lambda
        .iter()
        .zip(reference.iter())
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        .sqrt();
    diff / reference.norm().max(1e-300)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Without bounds one block step is the exact solution: it equals the
    /// dense Cholesky solve to within 10 times the round-off a
    /// backward-stable solve and the forming of `r` leave (masses over
    /// five decades, Σ = 1e-6).
    #[test]
    fn one_direct_step_equals_the_dense_solve(problem in arb_joint_tree()) {
        let unbounded = problem.generic_rows().iter().all(
            |r| matches!(r.bounds, RowBounds::Fixed { upper, .. } if upper.is_infinite()),
        );
        let mut solver = split_solver(1, 1e-300);
        let (lambda, _) = solve(&problem, &mut solver);
        if unbounded {
            let (a, r, _, _) = dense(&problem);
            let exact = a.clone().cholesky().expect("A is positive definite").solve(&(-&r));
            // forward error of a backward-stable solve, κ(A) ε ‖λ‖, and of
            // forming r = G v* + b, whose terms may cancel: ε times their
            // sizes (`rhs_terms`) through ‖A⁻¹‖ = 1/λ_min. ‖r‖ in place
            // of the terms is too small: a one-row case with
            // |G v*| + |b| = 17 |r| measures 20 κ(A) ε ‖λ‖ (the regression
            // file keeps it).
            let terms = rhs_terms(&problem).norm() / smallest_eigenvalue(&a);
            let scale = exact.norm().max(terms);
            let error = difference(&lambda, &exact);
            let ratio = error / (condition_number(&a) * f64::EPSILON * scale);
            // largest seen over 2 × 3000 cases (1 250 without bounds): 1.7
            prop_assert!(ratio <= 10.0, "error {error:e} is {ratio:e} κ(A) ε ‖λ‖");
        }
    }

    /// With force-limited rows the active set converges to the box QP's
    /// KKT point found by enumeration.
    #[test]
    fn direct_block_with_bounds_equals_the_enumerated_kkt_point(problem in arb_joint_tree()) {
        let Some(exact) = reference(&problem) else {
            // more than 6 bounded rows: enumeration too costly; the honest
            // residual check below still applies
            let mut solver = split_solver(50, 1e-8);
            let (_, status) = solve(&problem, &mut solver);
            prop_assert_eq!(status, SolverStatus::Converged);
            return Ok(());
        };
        // multipliers reach 1e5 (Σ = 1e-6), so round-off leaves residuals
        // of about 3e-10: 1e-8 is the tightest tolerance every case meets
        let tolerance = 1e-8;
        let mut solver = split_solver(50, tolerance);
        let (lambda, status) = solve(&problem, &mut solver);
        prop_assert_eq!(status, SolverStatus::Converged);
        // a residual below the tolerance bounds the error by
        // tolerance/λ_min(A), plus the round-off of the final solve
        let (a, r, _, _) = dense(&problem);
        let low = smallest_eigenvalue(&a);
        let scale = exact.norm().max(r.norm() / low);
        let allowed = condition_number(&a) * f64::EPSILON * scale + tolerance / low;
        // The bound is the a priori one: a residual just under the
        // tolerance can leave an error up to tolerance/λ_min(A), and
        // sampling rarely reaches it. Largest seen: 8.0e-3 of it (a CI run
        // drew that case after 4 × 128 local cases had stayed below
        // 5.4e-4, so a sampled fraction is not used as the bound).
        let error = difference(&lambda, &exact);
        prop_assert!(error <= allowed, "error {error:e}, a priori bound {allowed:e}");
    }
}

/// Plain row-wise PGS on the same trees needs many sweeps where the
/// direct block needs one: the reason for the split solver.
#[test]
fn row_wise_pgs_needs_many_sweeps_on_a_heavy_tree() {
    let problem = joint_tree(&TreeSpec {
        bodies: 8,
        mass_ratio: 1e5,
        rows_per_joint: 6,
        ..TreeSpec::default()
    })
    .expect("a valid spec");
    let (a, r, _, _) = dense(&problem);
    let exact = a.cholesky().unwrap().solve(&(-r));
    let mut direct = split_solver(1, 1e-300);
    let (lambda, _) = solve(&problem, &mut direct);
    let e_direct = relative_error(&lambda, &exact);
    let mut pgs = ProjectedGaussSeidel::with_stopping(Stopping::iterations(25)).unwrap();
    let (lambda, status) = solve(&problem, &mut pgs);
    let e_pgs = relative_error(&lambda, &exact);
    println!(
        "relative error: direct, 1 sweep {e_direct:e}; row-wise PGS, 25 sweeps {e_pgs:e} ({status:?})"
    );
    // measured 1.3e-11
    assert!(e_direct <= 1e-10);
    assert!(e_pgs > 1e-2, "row-wise PGS reached {e_pgs:e}");
    assert_ne!(status, SolverStatus::Converged);
}

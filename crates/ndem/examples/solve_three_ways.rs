//! Contact problems posed by hand, each solved three ways.
//!
//! 1. Body-based: a 1 kg ball (r = 0.1 m) sliding at 1 m/s on a fixed
//!    floor while pressed into it at 0.05 m/s, posed with
//!    `Contact::builder`, solved by PGS, by APGD in the De Saxcé fixed point
//!    and by semismooth Newton on its local form. Analytic answer: the
//!    normal impulse stops the approach, `λ_n = m · 0.05 = 0.05 N s`; the
//!    ball keeps sliding (stopping it would take `1/(1/m + r²/I) = 0.286`
//!    N s, more than `μ λ_n`), so `λ_t = −μ λ_n = −0.025 N s`.
//! 2. Given by matrices `(W, q, μ)`: two contacts sharing a body, solved by
//!    non-smooth Gauss-Seidel, semismooth Newton and APGD in the De Saxcé
//!    fixed point. Each reports its status and the Coulomb merit
//!    `E = ‖r − P_K(r − û)‖ / (1 + ‖q‖)`.
use nalgebra_sparse::{CooMatrix, CsrMatrix};
use ndem::math::{ContactFrame, ContactJacobian, InverseMass, MassProperties};
use ndem::prelude::*;
use ndem::solve::{
    Contact, ContactRows, CoulombApgd, CoulombApgdSettings, FrictionSet, LocalApgd,
    LocalGaussSeidel,
};

/// Part 1: the sliding ball.
fn sliding_ball() -> Result<(), Box<dyn std::error::Error>> {
    let ball = MassProperties::sphere_with_mass(1.0, 0.1)?;
    let mut problem = ContactProblem::new(
        vec![InverseMass::INFINITE_MASS, ball.inverse(&Quat::identity())],
        vec![
            Velocity6::ZERO,
            Velocity6::new(Vec3::new(1.0, 0.0, -0.05), Vec3::zeros()),
        ],
        ContactRows::NormalFriction,
        FrictionSet::Disk,
        0.005,
    )?;
    let frame = ContactFrame::from_normal(&Vec3::z())?;
    let jacobian = ContactJacobian::new(frame, &Vec3::new(0.0, 0.0, -0.1), &Vec3::zeros(), 1.0);
    problem.push_contact(Contact::builder([1, 0], jacobian).friction(0.5).build()?)?;
    let (t1, t2) = (frame.tangent1, frame.tangent2);
    let mut solvers: Vec<Box<dyn Solver>> = vec![
        Box::new(ProjectedGaussSeidel::new(PgsSettings::default())?),
        Box::new(CoulombApgd::new(CoulombApgdSettings::default())?),
    ];
    for solver in &mut solvers {
        let (mut lambda, mut velocity) = problem.cold_start();
        let report = solver.solve(&problem, &mut lambda, &mut velocity)?;
        let along_x = lambda[1] * t1.x + lambda[2] * t2.x;
        println!(
            "{:14} {:10}: λ_n = {:.6}, λ_t along x = {:+.6} N s (analytic 0.05, -0.025)",
            report.solver,
            report.status.name(),
            lambda[0],
            along_x
        );
        // the solvers' tolerance (1e-6 on the residual) bounds the error
        if (lambda[0] - 0.05).abs() > 1e-6 || (along_x + 0.025).abs() > 1e-6 {
            return Err(format!("{} is off the analytic answer", report.solver).into());
        }
    }
    let local = LocalProblem::from_contact_problem(&problem)?;
    let mut r = vec![0.0; 3];
    let report = SemismoothNewton::default().solve(&local, &mut r)?;
    println!(
        "{:14} {:10}: r_n = {:.6}, r_t along x = {:+.6} N s",
        report.solver,
        report.status.name(),
        r[0],
        r[1] * t1.x + r[2] * t2.x
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    sliding_ball()?;
    // W (6×6, symmetric positive definite): two 3×3 contact blocks and a
    // coupling of their normal rows; q pushes both contacts closed and
    // sliding
    let mut w = CooMatrix::new(6, 6);
    for (i, d) in [2.0, 3.0, 3.0, 2.0, 3.0, 3.0].into_iter().enumerate() {
        w.push(i, i, d);
    }
    w.push(0, 3, 0.5);
    w.push(3, 0, 0.5);
    w.push(0, 1, 0.2);
    w.push(1, 0, 0.2);
    let q = vec![-1.0, 0.4, -0.2, -0.5, 0.0, 0.3];
    let problem = LocalProblem::new(CsrMatrix::from(&w), q, vec![0.3, 0.5])?;
    let mut solvers: Vec<Box<dyn LocalSolver>> = vec![
        Box::new(LocalGaussSeidel::default()),
        Box::new(SemismoothNewton::default()),
        Box::new(LocalApgd::default()),
    ];
    for solver in &mut solvers {
        let mut r = vec![0.0; 6];
        let report = solver.solve(&problem, &mut r)?;
        println!(
            "{:22} {:10} after {:3} iterations: merit {:.1e}, r = {:.6?}",
            report.solver,
            report.status.name(),
            report.sweeps,
            report.merit,
            r
        );
    }
    Ok(())
}

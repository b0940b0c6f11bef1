//! A contact problem given by matrices, solved three ways: non-smooth
//! Gauss-Seidel, semismooth Newton and APGD in the De Saxcé fixed point.
//!
//! Two contacts share a body: `W` couples them. Each solver reports its
//! status and the Coulomb merit `E = ‖r − P_K(r − û)‖ / (1 + ‖q‖)`.
use nalgebra_sparse::{CooMatrix, CsrMatrix};
use ndem::prelude::*;
use ndem::solve::{LocalApgd, LocalGaussSeidel};

fn main() -> Result<(), Box<dyn std::error::Error>> {
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

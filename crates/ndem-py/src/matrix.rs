//! Contact problems given by matrices `(W, q, μ)` (FCLIB's local form,
//! `u = W r + q`, `r ∈ K_μ`) and FCLIB files, solved by the library's
//! local solvers.

use std::path::PathBuf;

use nalgebra_sparse::CsrMatrix;
use ndem::solve::{
    LocalApgd, LocalGaussSeidel, LocalPortfolio, LocalProblem, LocalSolver, ProximalPoint,
    SemismoothNewton, Stopping,
};
use numpy::{PyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrays::{Floats, floats, read_floats};
use crate::errors::{invalid, value_error};

/// The local solvers by the names `solve(solver=…)` takes.
const SOLVERS: [&str; 5] = ["portfolio", "gauss-seidel", "newton", "apgd", "proximal"];

/// `W` from a scipy.sparse matrix (any format) or a dense 2-D array.
fn matrix(w: &Bound<'_, PyAny>) -> PyResult<CsrMatrix<f64>> {
    if w.hasattr("tocsr")? {
        let m = w.call_method0("tocsr")?.call_method0("copy")?;
        m.call_method0("sum_duplicates")?;
        let (rows, cols): (usize, usize) = m.getattr("shape")?.extract()?;
        let indptr: Vec<i64> = m
            .getattr("indptr")?
            .call_method1("astype", ("int64",))?
            .extract()?;
        let indices: Vec<i64> = m
            .getattr("indices")?
            .call_method1("astype", ("int64",))?
            .extract()?;
        let data: Vec<f64> = m
            .getattr("data")?
            .call_method1("astype", ("float64",))?
            .extract()?;
        let to_usize = |v: Vec<i64>| v.into_iter().map(|x| x.max(0) as usize).collect::<Vec<_>>();
        return CsrMatrix::try_from_csr_data(rows, cols, to_usize(indptr), to_usize(indices), data)
            .map_err(|e| invalid("W", e));
    }
    let dense: PyReadonlyArray2<'_, f64> = w
        .extract()
        .map_err(|_| invalid("W", "must be a scipy.sparse matrix or a 2-D float array"))?;
    let a = dense.as_array();
    let mut coo = nalgebra_sparse::CooMatrix::new(a.nrows(), a.ncols());
    for ((i, j), &x) in a.indexed_iter() {
        if x != 0.0 {
            coo.push(i, j, x);
        }
    }
    Ok(CsrMatrix::from(&coo))
}

fn stopping(max_iterations: Option<usize>, tolerance: Option<f64>, default: Stopping) -> Stopping {
    Stopping {
        max_iterations: max_iterations.unwrap_or(default.max_iterations),
        tolerance: tolerance.unwrap_or(default.tolerance),
        ..default
    }
}

/// The named local solver with the given cap and tolerance.
fn local_solver(
    name: &str,
    max_iterations: Option<usize>,
    tolerance: Option<f64>,
) -> PyResult<Box<dyn LocalSolver + Send>> {
    Ok(match name {
        "portfolio" => {
            let d = LocalPortfolio::default();
            Box::new(LocalPortfolio {
                tolerance: tolerance.unwrap_or(d.tolerance),
                sweeps: max_iterations.unwrap_or(d.sweeps),
                ..d
            })
        }
        "gauss-seidel" => {
            let d = LocalGaussSeidel::default();
            Box::new(LocalGaussSeidel {
                stopping: stopping(max_iterations, tolerance, d.stopping),
                ..d
            })
        }
        "newton" => {
            let mut s = SemismoothNewton::default();
            s.settings.stopping = stopping(max_iterations, tolerance, s.settings.stopping);
            Box::new(s)
        }
        "apgd" => {
            let d = LocalApgd::default();
            Box::new(LocalApgd {
                stopping: stopping(max_iterations, tolerance, d.stopping),
                ..d
            })
        }
        "proximal" => {
            let d = ProximalPoint::default();
            Box::new(ProximalPoint {
                stopping: stopping(max_iterations, tolerance, d.stopping),
                ..d
            })
        }
        other => {
            return Err(invalid(
                "solver",
                format!("unknown `{other}` (one of {})", SOLVERS.join(", ")),
            ));
        }
    })
}

/// Solves the frictional contact problem `u = W r + q`, `K_μ ∋ r ⊥ u +
/// μ‖u_t‖ e_n ∈ K_μ*` (FCLIB's local form; 3 rows per contact, normal
/// first) and returns `(r, info)`. `W` is a scipy.sparse matrix or a dense
/// array (symmetric or not), `q` `(3 n_c,)`, `mu` `(n_c,)`; `r0` starts
/// the iteration (default zeros). `info` holds `solver`, `status`,
/// `converged`, `iterations`, `merit` (the Coulomb merit of `r`) and
/// `initial_merit`; an answer that is not converged comes with a
/// `UserWarning`.
#[pyfunction]
#[pyo3(signature = (w, q, mu, *, solver = "portfolio", max_iterations = None, tolerance = None, r0 = None))]
pub fn solve<'py>(
    py: Python<'py>,
    w: &Bound<'py, PyAny>,
    q: Floats<'py>,
    mu: Floats<'py>,
    solver: &str,
    max_iterations: Option<usize>,
    tolerance: Option<f64>,
    r0: Option<Floats<'py>>,
) -> PyResult<(Bound<'py, PyArray1<f64>>, Bound<'py, PyDict>)> {
    let problem = LocalProblem::new(matrix(w)?, read_floats("q", &q)?, read_floats("mu", &mu)?)
        .map_err(value_error)?;
    let mut solver = local_solver(solver, max_iterations, tolerance)?;
    let mut r = match r0 {
        Some(r0) => read_floats("r0", &r0)?,
        None => vec![0.0; problem.q().len()],
    };
    let report = py
        .detach(|| solver.solve(&problem, &mut r))
        .map_err(value_error)?;
    let info = PyDict::new(py);
    info.set_item("solver", report.solver)?;
    info.set_item("status", report.status.name())?;
    info.set_item("converged", report.converged())?;
    info.set_item("iterations", report.sweeps)?;
    info.set_item("merit", report.merit)?;
    info.set_item("initial_merit", report.initial_merit)?;
    if !report.converged() {
        crate::errors::warn(
            py,
            &format!(
                "{}: {} after {} iterations (merit {:.3e}); the reactions are not a solution to the tolerance",
                report.solver,
                report.status.name(),
                report.sweeps,
                report.merit
            ),
        )?;
    }
    Ok((floats(py, r), info))
}

/// `(W, q, mu)` of an FCLIB file.
type Fclib<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
);

/// Reads an FCLIB file (HDF5) as `(W, q, mu)`: `W` a
/// `scipy.sparse.csr_array` (a global problem is reduced by `W = Hᵀ M⁻¹
/// H`), `q` and `mu` float64 arrays, ready for `solve(*read_fclib(p))`.
#[pyfunction]
pub fn read_fclib<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Fclib<'py>> {
    let problem = ndem::fclib::read(&path).map_err(|e| crate::errors::io_error(&path, e))?;
    let local = problem.to_local().map_err(value_error)?;
    let w = local.w();
    let (offsets, indices, values) = w.csr_data();
    let sparse = py.import("scipy.sparse")?;
    let data = (
        floats(py, values.to_vec()),
        crate::arrays::ints(py, indices.iter().map(|&i| i as i64).collect()),
        crate::arrays::ints(py, offsets.iter().map(|&i| i as i64).collect()),
    );
    let w = sparse.call_method1("csr_array", (data, (w.nrows(), w.ncols())))?;
    Ok((
        w,
        floats(py, local.q().to_vec()),
        floats(py, local.mu().to_vec()),
    ))
}

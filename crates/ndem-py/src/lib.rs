//! # ndem-py
//!
//! The `ndem` Python package's compiled core (`ndem._core`), a thin PyO3
//! layer over the `ndem` facade: it converts arguments and arrays, maps
//! the library's typed errors onto Python exceptions and releases the GIL
//! while stepping. No physics lives here; every number a Python user sees
//! is computed by the same code as `ndem run` (the pytest suite checks
//! positions bit for bit against the command).
//!
//! Layout: [`simulation`] (a scene with its stepper: stepping, state
//! arrays, contacts, statistics, frames and checkpoints), [`builder`]
//! (scenes from materials, numpy arrays of spheres, walls, boxes, meshes,
//! joints and emitters), [`matrix`] (contact problems `(W, q, μ)` and FCLIB
//! files), [`errors`] and [`arrays`] (the boundary's conversions).
//!
//! Invariant: `ndem-py` converts and forwards; it contains no physics.

use pyo3::prelude::*;

pub mod arrays;
pub mod builder;
pub mod errors;
pub mod matrix;
pub mod options;
pub mod simulation;
mod state;
mod stats;

/// The compiled module `ndem._core`; the Python package `ndem`
/// (`python/ndem/__init__.py`) re-exports it.
#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("SimulationError", py.get_type::<errors::SimulationError>())?;
    m.add_class::<simulation::Simulation>()?;
    m.add_class::<builder::SceneBuilder>()?;
    m.add_function(wrap_pyfunction!(matrix::solve, m)?)?;
    m.add_function(wrap_pyfunction!(matrix::read_fclib, m)?)?;
    m.add_function(wrap_pyfunction!(simulation::builtin_scenes, m)?)?;
    m.add_function(wrap_pyfunction!(stats::stats_columns, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

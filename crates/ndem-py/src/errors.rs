//! The library's typed errors as Python exceptions.
//!
//! Bad input (a setting, a shape parameter, an array of the wrong shape, a
//! non-finite value) raises `ValueError` with the library's message, which
//! names the field; a step that fails on its own (a blow-up, an overlap
//! beyond the contact's radius, an energy growth the guard refuses) raises
//! `ndem.SimulationError`, a `RuntimeError`; files that cannot be read or
//! written raise `OSError`.

use ndem::scenes::SceneError;
use ndem::step::StepError;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    ndem,
    SimulationError,
    PyRuntimeError,
    "A step failed (blow-up, overlap beyond the contact's radius, energy growth); \
     the state is that of the last completed step."
);

/// A `StepError` as the exception a user expects: `SimulationError` for a
/// failed step, `ValueError` for bad input.
pub fn step_error(e: StepError) -> PyErr {
    match e {
        StepError::StageFailed { .. }
        | StepError::NonFiniteVelocity { .. }
        | StepError::OverlapBeyondRadius { .. }
        | StepError::EnergyGrowth { .. }
        | StepError::ModelHook { .. } => SimulationError::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// A `SceneError` (a step's error inside it keeps its class).
pub fn scene_error(e: SceneError) -> PyErr {
    match e {
        SceneError::Step(s) => step_error(s),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// Any other error of the library's input checks (`ValueError`).
pub fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A file that could not be read or written.
pub fn io_error(path: &std::path::Path, e: impl std::fmt::Display) -> PyErr {
    PyOSError::new_err(format!("{}: {e}", path.display()))
}

/// `ValueError` naming `field`.
pub fn invalid(field: &str, reason: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("invalid `{field}`: {reason}"))
}

/// Shows `message` to the user as a Python `UserWarning`.
pub fn warn(py: Python<'_>, message: &str) -> PyResult<()> {
    let text = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
    PyErr::warn(
        py,
        &py.get_type::<pyo3::exceptions::PyUserWarning>(),
        &text,
        1,
    )
}

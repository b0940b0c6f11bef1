//! Typed errors of the solver layer.

use thiserror::Error;

/// A contact problem, settings or solve that cannot proceed. Convergence
/// failure is *not* an error: it is reported as `converged = false` in the
/// [`crate::SolveReport`].
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SolveError {
    /// Two pieces of data disagree in length.
    #[error("`{field}` has length {got}, expected {expected}")]
    DimensionMismatch {
        /// Name of the field.
        field: &'static str,
        /// Expected length.
        expected: usize,
        /// Actual length.
        got: usize,
    },
    /// A number that must be finite is NaN or infinite.
    #[error("`{field}` entry {index} is not finite ({value})")]
    NonFinite {
        /// Name of the field.
        field: &'static str,
        /// Index of the entry (contact, row or body).
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// A number is outside its admissible range (e.g. negative Σ or μ).
    #[error("`{field}` entry {index} = {value} is outside {range}")]
    OutOfRange {
        /// Name of the field.
        field: &'static str,
        /// Index of the entry.
        index: usize,
        /// The offending value.
        value: f64,
        /// Admissible range.
        range: &'static str,
    },
    /// A row or contact refers to a body that does not exist.
    #[error("`{field}` entry {index} refers to body {body}, but there are {body_count} bodies")]
    UnknownBody {
        /// Name of the field.
        field: &'static str,
        /// Index of the row or contact.
        index: usize,
        /// The body index.
        body: usize,
        /// Number of bodies.
        body_count: usize,
    },
    /// A sparse Jacobian row touches more than two bodies.
    #[error("sparse row {row} touches {bodies} bodies; contact rows act on at most two")]
    TooManyBodies {
        /// Row index.
        row: usize,
        /// Number of bodies touched.
        bodies: usize,
    },
    /// A friction row names a normal row that does not exist or is not unilateral.
    #[error(
        "friction row {row} refers to normal row {normal_row}, which is not a unilateral row of this problem"
    )]
    BadFrictionReference {
        /// Friction row index.
        row: usize,
        /// Referenced normal row.
        normal_row: usize,
    },
    /// Solver settings are invalid.
    #[error("invalid setting `{field}`: {reason}")]
    InvalidSettings {
        /// Setting name.
        field: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// The system refused a thread of the count the settings ask for
    /// ([`ndem_par::blocks::check_threads_start`]).
    #[error(transparent)]
    ThreadsRefused(#[from] ndem_par::ThreadsRefused),
    /// A reader of the contacts' model data was given a problem built
    /// without it (`ContactProblem::without_model_data`).
    #[error(
        "`{reader}` reads the contacts' model data (`g`, `ε_n`, `γ_t`, `γ_r`), but the problem was built without it"
    )]
    NoModelData {
        /// What needed the data.
        reader: &'static str,
    },
    /// The iteration produced a non-finite multiplier (diverged).
    #[error(
        "solver `{solver}` produced a non-finite multiplier in row {row} at iteration {iteration}"
    )]
    Diverged {
        /// Solver name.
        solver: &'static str,
        /// Row index.
        row: usize,
        /// Iteration index.
        iteration: usize,
    },
}

impl SolveError {
    /// `Ok` when `got == expected`, otherwise
    /// [`SolveError::DimensionMismatch`] naming `field`.
    pub fn require_len(field: &'static str, expected: usize, got: usize) -> Result<(), Self> {
        if got == expected {
            Ok(())
        } else {
            Err(Self::DimensionMismatch {
                field,
                expected,
                got,
            })
        }
    }
}

ndem_math::setting_error!(SolveError);

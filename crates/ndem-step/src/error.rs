//! Typed errors of the stepper.

use ndem_collide::CollideError;
use ndem_math::MathError;
use ndem_solve::SolveError;
use thiserror::Error;

/// Why a world could not be built or a step could not be taken. When a step
/// fails, the world is left exactly as it was before the step.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StepError {
    /// Bad material or mass data.
    #[error(transparent)]
    Math(#[from] MathError),
    /// Bad geometry or collision input.
    #[error(transparent)]
    Collide(#[from] CollideError),
    /// Bad contact problem or a solver failure.
    #[error(transparent)]
    Solve(#[from] SolveError),
    /// A body's state is NaN or infinite.
    #[error("body {body}: `{field}` is not finite")]
    NonFiniteState {
        /// Field name.
        field: &'static str,
        /// Body index.
        body: usize,
    },
    /// A setting outside its range.
    #[error("invalid setting `{field}`: {reason}")]
    InvalidSettings {
        /// Field name.
        field: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// The world has no dynamic body.
    #[error("the scene has no dynamic body")]
    EmptyScene,
    /// A body refers to a material that does not exist.
    #[error("body {body} refers to material {material}, but there are {count} materials")]
    UnknownMaterial {
        /// Body index.
        body: usize,
        /// Material index.
        material: usize,
        /// Number of materials.
        count: usize,
    },
    /// A joint refers to a body that does not exist or joins a body to itself.
    #[error("joint {joint}: invalid bodies {body_a} and {body_b}")]
    InvalidJoint {
        /// Joint index.
        joint: usize,
        /// First body.
        body_a: usize,
        /// Second body.
        body_b: usize,
    },
    /// A contact between two bodies that no impulse can move reached the
    /// solver (e.g. injected by a model hook).
    #[error("contact between bodies {body_a} and {body_b}, both of infinite mass")]
    InfiniteMassPair {
        /// First body.
        body_a: usize,
        /// Second body.
        body_b: usize,
    },
    /// A solver failed in one stage of a step.
    #[error("{stage} stage at t = {time} s: {source}")]
    StageFailed {
        /// "impact" or "continuous".
        stage: &'static str,
        /// Simulated time at the start of the step.
        time: f64,
        /// The solver's error.
        source: SolveError,
    },
    /// The solve returned a non-finite velocity.
    #[error("the {stage} stage produced a non-finite velocity for body {body}")]
    NonFiniteVelocity {
        /// "impact" or "continuous".
        stage: &'static str,
        /// Body index.
        body: usize,
    },
}

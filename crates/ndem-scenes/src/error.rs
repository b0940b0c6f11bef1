//! Errors of scene building.

use ndem_collide::CollideError;
use ndem_math::MathError;
use ndem_step::StepError;
use thiserror::Error;

/// Errors while building or running a scene.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SceneError {
    /// From the stepper or world.
    #[error(transparent)]
    Step(#[from] StepError),
    /// Invalid scene parameter.
    #[error("invalid scene parameter `{field}`: {reason}")]
    Invalid {
        /// Parameter name.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
}

impl From<CollideError> for SceneError {
    fn from(e: CollideError) -> Self {
        SceneError::Step(e.into())
    }
}

impl From<MathError> for SceneError {
    fn from(e: MathError) -> Self {
        SceneError::Step(e.into())
    }
}

impl From<ndem_par::ThreadsRefused> for SceneError {
    fn from(e: ndem_par::ThreadsRefused) -> Self {
        SceneError::Step(e.into())
    }
}

impl ndem_math::SettingError for SceneError {
    fn invalid_setting(field: &'static str, reason: &'static str) -> Self {
        SceneError::Invalid {
            field,
            reason: reason.into(),
        }
    }
}

//! Typed errors of model reduction.

use ndem_step::StepError;
use thiserror::Error;

/// Bad settings, bad bodies, or a failure of the world underneath.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ReduceError {
    /// A setting is outside its range.
    #[error("invalid reduction setting `{field}`: {reason}")]
    InvalidSettings {
        /// Setting name.
        field: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// A body cannot take part in an aggregate.
    #[error("body {body} cannot be merged: {reason}")]
    NotMergeable {
        /// Body index.
        body: usize,
        /// Why.
        reason: &'static str,
    },
    /// A reducer state to restore (a checkpoint's aggregates and retired
    /// bodies) that does not fit the world it is restored on.
    #[error("invalid reducer state: `{field}` entry {index}: {reason}")]
    InvalidState {
        /// `aggregates` or `retired`.
        field: &'static str,
        /// The entry's place in its list.
        index: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// No aggregate with this id.
    #[error("no aggregate with id {0}")]
    UnknownAggregate(usize),
    /// The world refused a change.
    #[error(transparent)]
    Step(#[from] StepError),
}

ndem_math::setting_error!(ReduceError);

impl From<ndem_math::MathError> for ReduceError {
    fn from(e: ndem_math::MathError) -> Self {
        ReduceError::Step(e.into())
    }
}

impl ReduceError {
    /// This error as the stepper's, from a model hook: a world error as it
    /// is, any other as [`StepError::ModelHook`] naming `stage` ("split"
    /// or "merge") and `step`.
    pub fn in_hook(self, stage: &'static str, step: u64) -> StepError {
        match self {
            ReduceError::Step(s) => s,
            other => StepError::ModelHook {
                stage,
                step,
                reason: other.to_string(),
            },
        }
    }
}

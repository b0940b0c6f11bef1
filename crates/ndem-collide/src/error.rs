//! Typed errors of collision detection.

use thiserror::Error;

/// Bad input to collision detection. Every variant names the field.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CollideError {
    /// A non-finite position, orientation or shape parameter.
    #[error("`{field}` of body {body} is not finite")]
    NonFinite {
        /// Field name.
        field: &'static str,
        /// Body index.
        body: usize,
    },
    /// A shape parameter outside its range (e.g. radius ≤ 0).
    #[error("shape parameter `{field}` = {value} must be > 0 and finite")]
    InvalidShape {
        /// Field name.
        field: &'static str,
        /// The value.
        value: f64,
    },
    /// A mesh or hull that cannot be built.
    #[error("invalid {what}: {reason}")]
    InvalidGeometry {
        /// "triangle mesh" or "convex hull".
        what: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// Per-body arrays disagree in length.
    #[error("`{field}` has length {got}, expected {expected}")]
    DimensionMismatch {
        /// Field name.
        field: &'static str,
        /// Expected length.
        expected: usize,
        /// Actual length.
        got: usize,
    },
    /// A shape pair no narrow-phase routine handles.
    #[error("no narrow phase for the shape pair of bodies {body_a} and {body_b}")]
    UnsupportedPair {
        /// First body.
        body_a: usize,
        /// Second body.
        body_b: usize,
    },
    /// A negative contact margin.
    #[error("contact margin must be finite and >= 0, got {0}")]
    InvalidMargin(f64),
}

//! Typed errors for bad input to the math layer.

use thiserror::Error;

/// Bad input detected by `ndem-math`. Every variant names the offending field.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum MathError {
    /// A value that must be finite is NaN or infinite.
    #[error("`{field}` must be finite, got {value}")]
    NonFinite {
        /// Name of the field.
        field: &'static str,
        /// The offending value (one component for vectors).
        value: f64,
    },
    /// A value that must be strictly positive is not.
    #[error("`{field}` must be > 0, got {value}")]
    NonPositive {
        /// Name of the field.
        field: &'static str,
        /// The offending value.
        value: f64,
    },
    /// A value lies outside its admissible interval.
    #[error("`{field}` = {value} is outside {range}")]
    OutOfRange {
        /// Name of the field.
        field: &'static str,
        /// The offending value.
        value: f64,
        /// Human-readable admissible range, e.g. `"(-1, 0.5)"`.
        range: &'static str,
    },
    /// A value the chosen model needs is not given.
    #[error("`{field}` is needed by {by} but not given")]
    Missing {
        /// Name of the field.
        field: &'static str,
        /// What needs it.
        by: &'static str,
    },
    /// A vector that must have unit (or non-zero) length does not.
    #[error("`{field}` must be a non-zero direction")]
    ZeroDirection {
        /// Name of the field.
        field: &'static str,
    },
}

/// An error type with a variant for an invalid setting (a field and what
/// is wrong): settings' `validate` checks then read one line each
/// (`SolveError::require_positive("tolerance", t)?`).
pub trait SettingError: Sized {
    /// The invalid setting `field` with `reason`.
    fn invalid_setting(field: &'static str, reason: &'static str) -> Self;

    /// `Ok` when `ok` holds, otherwise the invalid setting `field`.
    fn require(ok: bool, field: &'static str, reason: &'static str) -> Result<(), Self> {
        if ok {
            Ok(())
        } else {
            Err(Self::invalid_setting(field, reason))
        }
    }

    /// `Ok` for `Ok`, otherwise the invalid setting `field` with the
    /// check's reason.
    fn require_ok(field: &'static str, check: Result<(), &'static str>) -> Result<(), Self> {
        check.map_err(|reason| Self::invalid_setting(field, reason))
    }

    /// `value` finite and `> 0`, otherwise the invalid setting `field`.
    fn require_positive(field: &'static str, value: f64) -> Result<(), Self> {
        Self::require(
            value.is_finite() && value > 0.0,
            field,
            "must be finite and > 0",
        )
    }

    /// `value` finite and `>= 0`, otherwise the invalid setting `field`.
    fn require_non_negative(field: &'static str, value: f64) -> Result<(), Self> {
        Self::require(
            value.is_finite() && value >= 0.0,
            field,
            "must be finite and >= 0",
        )
    }
}

/// Implements [`SettingError`] for an error enum whose
/// `InvalidSettings { field, reason }` variant names an invalid setting.
#[macro_export]
macro_rules! setting_error {
    ($error:ty) => {
        impl $crate::SettingError for $error {
            fn invalid_setting(field: &'static str, reason: &'static str) -> Self {
                Self::InvalidSettings { field, reason }
            }
        }
    };
}

/// Checks that `value` is finite.
pub fn finite(field: &'static str, value: f64) -> Result<f64, MathError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(MathError::NonFinite { field, value })
    }
}

/// Checks that `value` is finite and strictly positive.
pub fn positive(field: &'static str, value: f64) -> Result<f64, MathError> {
    finite(field, value)?;
    if value > 0.0 {
        Ok(value)
    } else {
        Err(MathError::NonPositive { field, value })
    }
}

/// Checks that `value` is finite and `>= 0`.
pub fn non_negative(field: &'static str, value: f64) -> Result<f64, MathError> {
    finite(field, value)?;
    if value >= 0.0 {
        Ok(value)
    } else {
        Err(MathError::OutOfRange {
            field,
            value,
            range: "[0, inf)",
        })
    }
}

/// Checks that every component of a 3-vector is finite.
pub fn finite_vec(field: &'static str, v: &crate::Vec3) -> Result<(), MathError> {
    for &c in v.iter() {
        finite(field, c)?;
    }
    Ok(())
}

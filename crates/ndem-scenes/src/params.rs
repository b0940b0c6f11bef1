//! The papers' shared parameters and the checks on scene parameters.

use crate::error::SceneError;

/// Standard gravity [m/s²].
pub const G: f64 = 9.81;

/// The warm-starting paper's particle diameter d \[m\].
pub const D: f64 = 0.013;

/// The second (bi-disperse) diameter d₂ \[m\].
pub const D2: f64 = 0.010;

/// The most solver iterations per step a scene may ask for, of each stage
/// (`run.iterations`, `run.impact_iterations`; [`Scene::stepper`](crate::Scene::stepper)): the
/// papers use up to 1000, the compatible-CD static solve 50 000.
pub const MAX_ITERATIONS: usize = 1_000_000;

/// A scene parameter that must be finite and positive; the error names
/// the field.
pub(crate) fn positive(field: &'static str, x: f64) -> Result<(), SceneError> {
    if x.is_finite() && x > 0.0 {
        Ok(())
    } else {
        Err(SceneError::Invalid {
            field,
            reason: format!("must be finite and > 0, got {x}"),
        })
    }
}

/// A typed error naming `field` when `iterations` is above
/// [`MAX_ITERATIONS`]: fuzzing found `2⁶⁴ − 1` in each field, a request
/// that runs for ever (hours per step on a large scene even at 10⁷).
pub(crate) fn at_most_max_iterations(
    field: &'static str,
    iterations: usize,
) -> Result<(), SceneError> {
    if iterations > MAX_ITERATIONS {
        return Err(SceneError::Invalid {
            field,
            reason: format!(
                "{iterations} is more than {MAX_ITERATIONS} sweeps per step (hours per step on a large scene; found by fuzzing as a hang)"
            ),
        });
    }
    Ok(())
}

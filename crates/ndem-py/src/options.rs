//! The run settings a Python user passes as keyword arguments.

use ndem::scenes::{Scene, SolverChoice, WarmStartChoice};
use ndem::step::ImpactScope;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict};
use serde::Deserialize;

use ndem::scenes::reduction::ReductionSpec;

use crate::errors::invalid;

/// Settings that replace a scene's own, as `ndem run`'s options do; `None`
/// keeps the scene's.
#[derive(Debug, Clone, Default)]
pub struct RunSettings {
    /// Continuous-stage solver by its command-line name.
    pub solver: Option<String>,
    /// Iterations per step `N_it`.
    pub iterations: Option<usize>,
    /// Warm-start policy by its command-line name.
    pub warm_start: Option<String>,
    /// Threads (0: every core).
    pub threads: Option<usize>,
    /// Switch on adaptive model reduction (the scene's preset).
    pub reduce: bool,
    /// Adaptive model reduction with these settings (a `[reduction]`
    /// table given as a dict).
    pub reduction: Option<ndem::reduce::ReductionSettings>,
    /// PGS sweeps of the impact stage.
    pub impact_iterations: Option<usize>,
    /// Impact stage on an active set joined above this velocity \[m/s\].
    pub impact_join_velocity: Option<f64>,
    /// Reach growth in contact detection (`StepSettings::reach_growth`).
    pub reach_growth: Option<bool>,
    /// Time step Δt \[s\].
    pub dt: Option<f64>,
}

impl RunSettings {
    /// Applies the given settings to `scene`; a name that is not one of
    /// the choices, a zero iteration count or a non-finite velocity raises
    /// `ValueError` naming the keyword. Returns the scene's caveat for
    /// reduction, if it has one and `reduce` is set.
    pub fn apply(&self, scene: &mut Scene) -> PyResult<Option<String>> {
        if let Some(name) = &self.solver {
            scene.solver = SolverChoice::parse(name).map_err(|e| invalid("solver", e))?;
        }
        if let Some(name) = &self.warm_start {
            scene.warm_start =
                WarmStartChoice::parse(name).map_err(|e| invalid("warm_start", e))?;
        }
        if let Some(n) = self.iterations {
            if n == 0 {
                return Err(invalid("iterations", "must be at least 1"));
            }
            scene.iterations = n;
        }
        if let Some(n) = self.threads {
            scene.threads = n;
        }
        if let Some(n) = self.impact_iterations {
            if n == 0 {
                return Err(invalid("impact_iterations", "must be at least 1"));
            }
            scene.settings.impact_iterations = n;
        }
        if let Some(v) = self.impact_join_velocity {
            if !(v.is_finite() && v > 0.0) {
                return Err(invalid(
                    "impact_join_velocity",
                    format!("must be finite and > 0, got {v}"),
                ));
            }
            scene.settings.impact_scope = ImpactScope::ActiveSet { join_velocity: v };
        }
        if let Some(on) = self.reach_growth {
            scene.settings.reach_growth = on;
        }
        if let Some(dt) = self.dt {
            if !(dt.is_finite() && dt > 0.0) {
                return Err(invalid("dt", format!("must be finite and > 0, got {dt}")));
            }
            scene.settings.dt = dt;
        }
        if let Some(r) = &self.reduction {
            scene.reduction = Some(r.clone());
            return Ok(scene.reduce_caveat.clone());
        }
        if self.reduce {
            scene.switch_on_reduction();
            return Ok(scene.reduce_caveat.clone());
        }
        Ok(None)
    }
}

impl RunSettings {
    /// The keywords `solver`, `iterations`, `warm_start`, `threads`,
    /// `reduce`, `impact_iterations`, `impact_join_velocity`,
    /// `reach_growth` and `dt`
    /// (`None` values are skipped); another keyword raises `TypeError`
    /// naming it, a value of the wrong type `TypeError` naming its keyword.
    pub fn from_kwargs(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut s = Self::default();
        let Some(kwargs) = kwargs else {
            return Ok(s);
        };
        for (key, value) in kwargs.iter() {
            let key: String = key.extract()?;
            if value.is_none() {
                continue;
            }
            let typed = |e: PyErr| PyTypeError::new_err(format!("`{key}`: {e}"));
            match key.as_str() {
                "solver" => s.solver = Some(value.extract().map_err(typed)?),
                "iterations" => s.iterations = Some(value.extract().map_err(typed)?),
                "warm_start" => s.warm_start = Some(value.extract().map_err(typed)?),
                "threads" => s.threads = Some(value.extract().map_err(typed)?),
                "reduce" => {
                    if let Ok(table) = value.cast::<PyDict>() {
                        s.reduction = Some(reduction_settings(table)?);
                    } else {
                        s.reduce = value.extract().map_err(typed)?;
                    }
                }
                "impact_iterations" => s.impact_iterations = Some(value.extract().map_err(typed)?),
                "impact_join_velocity" => {
                    s.impact_join_velocity = Some(value.extract().map_err(typed)?)
                }
                "reach_growth" => s.reach_growth = Some(value.extract().map_err(typed)?),
                "dt" => s.dt = Some(value.extract().map_err(typed)?),
                other => {
                    return Err(PyTypeError::new_err(format!(
                        "unexpected keyword argument `{other}` (the run settings are {})",
                        KEYWORDS.join(", ")
                    )));
                }
            }
        }
        Ok(s)
    }
}

/// `reduce={…}`: the fields of a scene file's `[reduction]` table
/// (`docs/reduction.md`; every field defaults to Table 2, `inf` switches a
/// test off), checked: an unknown field or a bad value raises `ValueError`
/// naming it.
fn reduction_settings(table: &Bound<'_, PyDict>) -> PyResult<ndem::reduce::ReductionSettings> {
    let value = toml_value(table.as_any())?;
    let spec = ReductionSpec::deserialize(value).map_err(|e| invalid("reduce", e))?;
    spec.to_settings().map_err(crate::errors::scene_error)
}

/// A Python value of a TOML table (bool, int, float, str, list, dict).
fn toml_value(v: &Bound<'_, PyAny>) -> PyResult<toml::Value> {
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(toml::Value::Boolean(b.is_true()));
    }
    if let Ok(i) = v.extract::<i64>() {
        return Ok(toml::Value::Integer(i));
    }
    if let Ok(x) = v.extract::<f64>() {
        return Ok(toml::Value::Float(x));
    }
    if let Ok(t) = v.extract::<String>() {
        return Ok(toml::Value::String(t));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut table = toml::map::Map::new();
        for (k, x) in d.iter() {
            table.insert(k.extract::<String>()?, toml_value(&x)?);
        }
        return Ok(toml::Value::Table(table));
    }
    if let Ok(items) = v.extract::<Vec<Bound<'_, PyAny>>>() {
        return items
            .iter()
            .map(toml_value)
            .collect::<PyResult<_>>()
            .map(toml::Value::Array);
    }
    Err(PyTypeError::new_err(format!(
        "`reduce`: {} is not a bool, number, string, list or dict",
        v.get_type().name()?
    )))
}

/// The run settings' keywords.
pub const KEYWORDS: [&str; 9] = [
    "solver",
    "iterations",
    "warm_start",
    "threads",
    "reduce",
    "impact_iterations",
    "impact_join_velocity",
    "reach_growth",
    "dt",
];

/// Warns (Python `UserWarning`) with the scene's reduction caveat.
pub fn warn_caveat(py: Python<'_>, scene: &str, caveat: Option<String>) -> PyResult<()> {
    if let Some(c) = caveat {
        crate::errors::warn(py, &format!("reduce on `{scene}`: {c}"))?;
    }
    Ok(())
}

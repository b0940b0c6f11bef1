//! Per-step statistics as columns: the columns of `stats.csv`
//! (`ndem::output::STATS_HEADER`), in its order, with its names.

use ndem::reduce::ReductionStats;
use ndem::step::StepStats;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// One value of a statistics row.
#[derive(Debug, Clone, Copy)]
enum Value {
    Int(i64),
    Float(f64),
    Text(&'static str),
}

/// A step's statistics with the reducer's (zero without one).
pub type Row = (StepStats, ReductionStats);

/// The values of `stats.csv`'s columns for one step, in its order.
fn values((s, r): &Row) -> [Value; 31] {
    use Value::{Float as F, Int as I, Text as T};
    let secs = |d: std::time::Duration| F(d.as_secs_f64());
    [
        I(s.step as i64),
        F(s.time),
        I(s.contacts as i64),
        I(s.impacts as i64),
        I(s.iterations as i64),
        T(s.status.name()),
        I(i64::from(s.unresolved)),
        F(s.residual_tolerance),
        I(s.warm_contacts as i64),
        F(s.residuals.normal.mean),
        F(s.residuals.friction.mean),
        F(s.residuals.rolling.mean),
        F(s.residuals.max),
        F(s.kinetic_energy),
        F(s.potential_energy),
        F(s.momentum.x),
        F(s.momentum.y),
        F(s.momentum.z),
        secs(s.times.detection),
        secs(s.times.assembly),
        secs(s.times.impact),
        secs(s.times.continuous),
        secs(s.times.total),
        F(r.level),
        I(r.aggregates as i64),
        I(r.merges as i64),
        I(r.split_members as i64),
        secs(r.split_time + r.merge_time),
        T(s.impact_status.map_or("skipped", |x| x.name())),
        F(s.impact_residual),
        F(s.overlap_max),
    ]
}

/// The column names of `stats.csv`, in order.
#[pyfunction]
pub fn stats_columns() -> Vec<&'static str> {
    ndem::output::STATS_HEADER.split(',').collect()
}

/// One step's statistics as a dict (Python scalars).
pub fn row_dict<'py>(py: Python<'py>, row: &Row) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, v) in stats_columns().into_iter().zip(values(row)) {
        match v {
            Value::Int(x) => d.set_item(name, x)?,
            Value::Float(x) => d.set_item(name, x)?,
            Value::Text(x) => d.set_item(name, x)?,
        }
    }
    Ok(d)
}

/// Rows as a dict of columns: int64 and float64 numpy arrays, and numpy
/// string arrays for the two status columns (`pandas.DataFrame(d)` takes
/// it as is).
pub fn columns<'py>(py: Python<'py>, rows: &[Row]) -> PyResult<Bound<'py, PyDict>> {
    let names = stats_columns();
    let numpy = py.import("numpy")?;
    let table: Vec<[Value; 31]> = rows.iter().map(values).collect();
    // each column's kind, from a row of zeros
    let kinds = values(&Row::default());
    let d = PyDict::new(py);
    for (k, name) in names.into_iter().enumerate() {
        let column: Bound<'py, PyAny> = match kinds[k] {
            Value::Text(_) => {
                let texts: Vec<&str> = table
                    .iter()
                    .map(|r| if let Value::Text(t) = r[k] { t } else { "" })
                    .collect();
                numpy.call_method1("array", (texts, "U"))?
            }
            Value::Int(_) => {
                let v: Vec<i64> = table
                    .iter()
                    .map(|r| if let Value::Int(x) = r[k] { x } else { 0 })
                    .collect();
                crate::arrays::ints(py, v).into_any()
            }
            Value::Float(_) => {
                let v: Vec<f64> = table
                    .iter()
                    .map(|r| {
                        if let Value::Float(x) = r[k] {
                            x
                        } else {
                            f64::NAN
                        }
                    })
                    .collect();
                crate::arrays::floats(py, v).into_any()
            }
        };
        d.set_item(name, column)?;
    }
    Ok(d)
}

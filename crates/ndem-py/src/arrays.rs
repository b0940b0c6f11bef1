//! numpy arrays across the boundary.
//!
//! Arrays handed out are copies (one pass over the state, no per-element
//! Python objects): the state changes at every step and the GIL is
//! released while stepping, so a view into it could be read while a step
//! writes it. Arrays taken in are checked for shape and finiteness, and an
//! error names the argument.

use ndem::math::Vec3;
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use crate::errors::invalid;

/// An `(n, 3)` argument: a float array, or anything `numpy.asarray` turns
/// into one (lists, integer arrays).
pub type Vectors<'py> = numpy::PyArrayLike2<'py, f64, numpy::AllowTypeChange>;
/// A 1-D float argument (array-like).
pub type Floats<'py> = numpy::PyArrayLike1<'py, f64, numpy::AllowTypeChange>;
/// An integer `(n, 3)` argument (array-like).
pub type Indices<'py> = numpy::PyArrayLike2<'py, i64, numpy::AllowTypeChange>;

/// `n × 3` float64 array of vectors.
pub fn vectors<'py>(
    py: Python<'py>,
    v: impl ExactSizeIterator<Item = Vec3>,
) -> Bound<'py, PyArray2<f64>> {
    let n = v.len();
    let mut flat = Vec::with_capacity(3 * n);
    for x in v {
        flat.extend_from_slice(x.as_slice());
    }
    Array2::from_shape_vec((n, 3), flat)
        .unwrap_or_else(|_| Array2::zeros((0, 3)))
        .into_pyarray(py)
}

/// 1-D float64 array.
pub fn floats<'py>(py: Python<'py>, v: Vec<f64>) -> Bound<'py, PyArray1<f64>> {
    v.into_pyarray(py)
}

/// 1-D int64 array.
pub fn ints<'py>(py: Python<'py>, v: Vec<i64>) -> Bound<'py, PyArray1<i64>> {
    v.into_pyarray(py)
}

/// Rows of an `n × 3` array as vectors, each entry finite.
pub fn read_vectors(field: &str, a: &PyReadonlyArray2<'_, f64>) -> PyResult<Vec<Vec3>> {
    let view = a.as_array();
    if view.ncols() != 3 {
        return Err(invalid(
            field,
            format!("must have shape (n, 3), got {:?}", view.shape()),
        ));
    }
    view.rows()
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let v = Vec3::new(r[0], r[1], r[2]);
            if v.iter().all(|x| x.is_finite()) {
                Ok(v)
            } else {
                Err(invalid(field, format!("row {i} is not finite")))
            }
        })
        .collect()
}

/// A 1-D array's entries, each finite.
pub fn read_floats(field: &str, a: &PyReadonlyArray1<'_, f64>) -> PyResult<Vec<f64>> {
    let v: Vec<f64> = a.as_array().iter().copied().collect();
    match v.iter().position(|x| !x.is_finite()) {
        Some(i) => Err(invalid(field, format!("entry {i} is not finite"))),
        None => Ok(v),
    }
}

/// A 3-vector given as a sequence of three finite floats.
pub fn vec3(field: &str, v: [f64; 3]) -> PyResult<Vec3> {
    if v.iter().all(|x| x.is_finite()) {
        Ok(Vec3::new(v[0], v[1], v[2]))
    } else {
        Err(invalid(field, "must be three finite numbers"))
    }
}

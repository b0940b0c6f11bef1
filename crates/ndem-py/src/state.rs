//! The state of a world as numpy arrays, and its validated setters.

use ndem::math::{Vec3, Velocity6};
use ndem::reduce::Reducer;
use ndem::step::{BodyId, ContactForce, Drive, JointId, Motion, Motor, Stepper, World};
use numpy::{PyArray1, PyArray2, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrays::{floats, ints, read_vectors, vectors};
use crate::errors::{invalid, step_error};

/// Radii of the spheres, NaN for bodies of another shape.
pub fn radii<'py>(py: Python<'py>, w: &World) -> Bound<'py, PyArray1<f64>> {
    floats(
        py,
        w.shapes()
            .iter()
            .map(|s| s.sphere_radius().unwrap_or(f64::NAN))
            .collect(),
    )
}

/// Masses \[kg\] (infinite for fixed and kinematic bodies).
pub fn masses<'py>(py: Python<'py>, w: &World) -> Bound<'py, PyArray1<f64>> {
    floats(
        py,
        w.mass_properties()
            .iter()
            .zip(w.motions())
            .map(|(m, motion)| match (m, motion) {
                (Some(m), Motion::Dynamic) => m.mass,
                _ => f64::INFINITY,
            })
            .collect(),
    )
}

/// Orientations as `(n, 4)` unit quaternions `(x, y, z, w)`, scalar last
/// (scipy's `Rotation.from_quat` convention).
pub fn orientations<'py>(py: Python<'py>, w: &World) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let n = w.len();
    let mut flat = Vec::with_capacity(4 * n);
    for q in w.orientations() {
        flat.extend_from_slice(&[q.i, q.j, q.k, q.w]);
    }
    let a =
        numpy::ndarray::Array2::from_shape_vec((n, 4), flat).map_err(crate::errors::value_error)?;
    Ok(numpy::IntoPyArray::into_pyarray(a, py))
}

/// The aggregate holding each body (its index), -1 for a free body.
pub fn aggregate_ids<'py>(
    py: Python<'py>,
    w: &World,
    stepper: &mut Stepper,
) -> Bound<'py, PyArray1<i64>> {
    let ids = match stepper.hooks_as::<Reducer>() {
        Some(r) => w
            .body_ids()
            .map(|b| {
                r.aggregate_containing(w, b)
                    .map_or(-1, |a| a.index() as i64)
            })
            .collect(),
        None => vec![-1; w.len()],
    };
    ints(py, ids)
}

/// `(n, 3)` array that must have one row per body.
fn per_body(field: &str, w: &World, a: &PyReadonlyArray2<'_, f64>) -> PyResult<Vec<Vec3>> {
    let v = read_vectors(field, a)?;
    if v.len() != w.len() {
        return Err(invalid(
            field,
            format!("must have one row per body ({}), got {}", w.len(), v.len()),
        ));
    }
    Ok(v)
}

/// Sets every body's position.
pub fn set_positions(w: &mut World, a: &PyReadonlyArray2<'_, f64>) -> PyResult<()> {
    let v = per_body("positions", w, a)?;
    for (b, p) in w.body_ids().zip(v) {
        w.set_position(b, p).map_err(step_error)?;
    }
    Ok(())
}

/// Every body's linear (`angular = false`) or angular velocity, `(n, 3)`.
pub fn velocities<'py>(py: Python<'py>, w: &World, angular: bool) -> Bound<'py, PyArray2<f64>> {
    let part = |v: &Velocity6| if angular { v.angular } else { v.linear };
    vectors(py, w.velocities().iter().map(part))
}

/// Sets every body's linear (`angular = false`) or angular velocity.
pub fn set_velocities(w: &mut World, a: &PyReadonlyArray2<'_, f64>, angular: bool) -> PyResult<()> {
    let field = if angular {
        "angular_velocities"
    } else {
        "velocities"
    };
    let v = per_body(field, w, a)?;
    for (b, x) in w.body_ids().zip(v) {
        let mut vel = w.velocity(b);
        if angular {
            vel.angular = x;
        } else {
            vel.linear = x;
        }
        w.set_velocity(b, Velocity6 { ..vel }).map_err(step_error)?;
    }
    Ok(())
}

/// A body handle from a Python index.
pub fn body(w: &World, field: &str, index: usize) -> PyResult<BodyId> {
    if index < w.len() {
        Ok(BodyId::from_index(index))
    } else {
        Err(invalid(
            field,
            format!("no body {index} ({} bodies)", w.len()),
        ))
    }
}

/// A joint handle from a Python index.
pub fn joint(w: &World, index: usize) -> PyResult<JointId> {
    let n = w.joints().len();
    if index < n {
        Ok(JointId::from_index(index))
    } else {
        Err(invalid("joint", format!("no joint {index} ({n} joints)")))
    }
}

/// A drive from `speed` or `position` with `max_force` (neither: none).
pub fn drive(speed: Option<f64>, position: Option<f64>, max_force: f64) -> PyResult<Option<Drive>> {
    match (speed, position) {
        (Some(_), Some(_)) => Err(invalid("position", "give `speed` or `position`, not both")),
        (Some(target_speed), None) => Ok(Some(Drive::Speed(Motor {
            target_speed,
            max_force,
        }))),
        (None, Some(target)) => Ok(Some(Drive::Position { target, max_force })),
        (None, None) => Ok(None),
    }
}

/// Contact forces as arrays: `body_a`, `body_b`, `point`, `normal`,
/// `normal_force`, `tangential_force` (on a) and `overlap`.
pub fn contacts<'py>(py: Python<'py>, forces: &[ContactForce]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(
        "body_a",
        ints(py, forces.iter().map(|f| i64::from(f.key.body_a)).collect()),
    )?;
    d.set_item(
        "body_b",
        ints(py, forces.iter().map(|f| i64::from(f.key.body_b)).collect()),
    )?;
    d.set_item("point", vectors(py, forces.iter().map(|f| f.point)))?;
    d.set_item("normal", vectors(py, forces.iter().map(|f| f.normal)))?;
    d.set_item(
        "normal_force",
        floats(py, forces.iter().map(|f| f.normal_force).collect()),
    )?;
    d.set_item(
        "tangential_force",
        vectors(
            py,
            forces
                .iter()
                .map(|f| f.force_on_a - f.normal_force * f.normal),
        ),
    )?;
    d.set_item(
        "overlap",
        floats(py, forces.iter().map(|f| f.overlap).collect()),
    )?;
    Ok(d)
}

/// The joints' reactions of the last step as arrays.
pub fn joint_reactions<'py>(
    py: Python<'py>,
    w: &World,
    stepper: &Stepper,
) -> PyResult<Bound<'py, PyDict>> {
    let r = stepper.joint_reactions(w);
    let d = PyDict::new(py);
    d.set_item("force", vectors(py, r.iter().map(|x| x.force)))?;
    d.set_item("torque", vectors(py, r.iter().map(|x| x.torque)))?;
    d.set_item(
        "drive_force",
        floats(
            py,
            r.iter()
                .map(|x| x.drive_force.unwrap_or(f64::NAN))
                .collect(),
        ),
    )?;
    Ok(d)
}

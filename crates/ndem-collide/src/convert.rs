//! Conversions between nalgebra (ndem) and glam (parry) types. This module
//! is the only place where the two meet.

use ndem_math::{Quat, Vec3};
use parry3d_f64::math::{Pose, Rotation, Vector};

pub(crate) fn to_parry(v: &Vec3) -> Vector {
    Vector::new(v.x, v.y, v.z)
}

pub(crate) fn from_parry(v: &Vector) -> Vec3 {
    Vec3::new(v.x, v.y, v.z)
}

pub(crate) fn rotation(q: &Quat) -> Rotation {
    let c = q.quaternion().coords;
    Rotation::from_xyzw(c.x, c.y, c.z, c.w)
}

pub(crate) fn pose(position: &Vec3, orientation: &Quat) -> Pose {
    Pose::from_parts(to_parry(position), rotation(orientation))
}

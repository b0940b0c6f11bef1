//! Reusable proptest strategies for the math layer (feature
//! `proptest-support`).

use crate::{InverseMass, MassProperties, Material, Quat, Vec3, Velocity6};
use proptest::prelude::*;

/// A vector with components uniformly in `[-scale, scale]`.
pub fn vec3(scale: f64) -> impl Strategy<Value = Vec3> {
    [-scale..=scale, -scale..=scale, -scale..=scale].prop_map(|[x, y, z]| Vec3::new(x, y, z))
}

/// A unit vector (rejection-free: normalised non-tiny Gaussian-free cube
/// samples; directions near the axes are included on purpose).
pub fn unit_vector() -> impl Strategy<Value = Vec3> {
    prop_oneof![
        4 => vec3(1.0).prop_filter("non-degenerate", |v| v.norm() > 1e-3).prop_map(|v| v.normalize()),
        1 => (0usize..6).prop_map(|i| {
            let mut v = Vec3::zeros();
            v[i % 3] = if i < 3 { 1.0 } else { -1.0 };
            v
        }),
    ]
}

/// A unit quaternion.
pub fn rotation() -> impl Strategy<Value = Quat> {
    (unit_vector(), 0.0..std::f64::consts::TAU)
        .prop_map(|(axis, angle)| Quat::from_scaled_axis(axis * angle))
}

/// A generalized velocity with speeds up to `scale`.
pub fn velocity(scale: f64) -> impl Strategy<Value = Velocity6> {
    (vec3(scale), vec3(scale)).prop_map(|(l, a)| Velocity6::new(l, a))
}

/// A radius in `[min, max]`.
pub fn radius(min: f64, max: f64) -> impl Strategy<Value = f64> {
    min..=max
}

/// Inverse mass of a random box-shaped body with random orientation, or (one
/// time in eight) an infinite-mass body.
pub fn inverse_mass() -> impl Strategy<Value = InverseMass> {
    prop_oneof![
        7 => (0.1f64..10.0, vec3(1.0), rotation()).prop_map(|(m, h, q)| {
            let he = h.map(|x| x.abs() + 0.05);
            MassProperties::solid_box(m, he).expect("valid box").inverse(&q)
        }),
        1 => Just(InverseMass::INFINITE_MASS),
    ]
}

/// A valid material: Young's modulus 10⁶-10¹² Pa, Poisson's ratio in
/// (−1, 0.5), surface coefficients in their ranges, and (one time in two)
/// a linear stiffness.
pub fn material() -> impl Strategy<Value = Material> {
    (
        (1e2f64..2e4, 1e6f64..1e12, -0.99f64..0.499),
        (0.0f64..=1.0, 0.0f64..2.0, 0.0f64..0.5, 0.0f64..1e-3),
        proptest::option::of(1e2f64..1e8),
    )
        .prop_map(
            |(
                (density, youngs_modulus, poisson_ratio),
                (restitution, friction, rolling, damping),
                k,
            )| {
                Material {
                    density,
                    youngs_modulus,
                    poisson_ratio,
                    restitution,
                    friction,
                    rolling_resistance: rolling,
                    damping,
                    linear_stiffness: k,
                }
            },
        )
}

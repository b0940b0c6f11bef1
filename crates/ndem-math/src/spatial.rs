//! Spatial algebra: the 6-entry generalized velocity of a rigid body and the
//! exact orientation update.

use crate::{MathError, Quat, Vec3, error::finite_vec};
use std::ops::{Add, AddAssign, Mul, Neg, Sub};

/// Generalized velocity of one rigid body, `(v, ω)`: linear velocity of the
/// centre of mass and angular velocity, both in the world frame (`docs/theory.md`, "Conventions";
/// "Generalized velocity per body").
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Velocity6 {
    /// Linear velocity `v` [m/s].
    pub linear: Vec3,
    /// Angular velocity `ω` [rad/s], world frame.
    pub angular: Vec3,
}

impl Velocity6 {
    /// Zero velocity.
    pub const ZERO: Velocity6 = Velocity6 {
        linear: Vec3::new(0.0, 0.0, 0.0),
        angular: Vec3::new(0.0, 0.0, 0.0),
    };

    /// Builds a velocity from its parts.
    pub fn new(linear: Vec3, angular: Vec3) -> Self {
        Self { linear, angular }
    }

    /// Returns a typed error naming `field` if any entry is not finite.
    pub fn validate(&self, field: &'static str) -> Result<(), MathError> {
        finite_vec(field, &self.linear)?;
        finite_vec(field, &self.angular)
    }

    /// Velocity of the material point at lever arm `d` from the centre:
    /// `v + ω × d`.
    #[inline]
    pub fn point_velocity(&self, d: &Vec3) -> Vec3 {
        self.linear + self.angular.cross(d)
    }

    /// Euclidean inner product of the 6-vectors.
    pub fn dot(&self, other: &Velocity6) -> f64 {
        self.linear.dot(&other.linear) + self.angular.dot(&other.angular)
    }

    /// The six entries `[v; ω]` as an array.
    pub fn to_array(&self) -> [f64; 6] {
        [
            self.linear.x,
            self.linear.y,
            self.linear.z,
            self.angular.x,
            self.angular.y,
            self.angular.z,
        ]
    }

    /// Builds a velocity from `[v; ω]`.
    pub fn from_slice(s: &[f64]) -> Self {
        Self {
            linear: Vec3::new(s[0], s[1], s[2]),
            angular: Vec3::new(s[3], s[4], s[5]),
        }
    }
}

impl Add for Velocity6 {
    type Output = Velocity6;
    fn add(self, o: Velocity6) -> Velocity6 {
        Velocity6::new(self.linear + o.linear, self.angular + o.angular)
    }
}

impl Sub for Velocity6 {
    type Output = Velocity6;
    fn sub(self, o: Velocity6) -> Velocity6 {
        Velocity6::new(self.linear - o.linear, self.angular - o.angular)
    }
}

impl AddAssign for Velocity6 {
    fn add_assign(&mut self, o: Velocity6) {
        self.linear += o.linear;
        self.angular += o.angular;
    }
}

impl Neg for Velocity6 {
    type Output = Velocity6;
    fn neg(self) -> Velocity6 {
        Velocity6::new(-self.linear, -self.angular)
    }
}

impl Mul<f64> for Velocity6 {
    type Output = Velocity6;
    fn mul(self, s: f64) -> Velocity6 {
        Velocity6::new(self.linear * s, self.angular * s)
    }
}

/// Exact orientation update for a constant world-frame angular velocity over
/// a step `Δt`: `q ← exp(Δt ω / 2) ⊗ q` (the exponential map of SO(3)),
/// followed by a renormalisation that only removes round-off.
///
/// This is the "velocity and position update" of Algorithm 1 of the
/// warm-starting paper, with the rotation integrated exactly rather than by
/// the first-order quaternion derivative.
pub fn integrate_orientation(q: &Quat, angular_velocity: &Vec3, dt: f64) -> Quat {
    let dq = Quat::from_scaled_axis(angular_velocity * dt);
    let mut out = dq * q;
    out.renormalize();
    out
}

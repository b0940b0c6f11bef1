//! Mass properties of the papers' rigid bodies and their world-frame inverse.

use crate::{Mat3, MathError, Quat, Vec3, error::positive};

/// Mass and body-frame (principal) inertia of a rigid body.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MassProperties {
    /// Mass `m` \[kg\].
    pub mass: f64,
    /// Principal moments of inertia in the body frame [kg m²].
    pub principal_inertia: Vec3,
}

impl MassProperties {
    /// Builds mass properties, checking that mass and all moments are
    /// finite and positive.
    pub fn new(mass: f64, principal_inertia: Vec3) -> Result<Self, MathError> {
        positive("mass", mass)?;
        for &i in principal_inertia.iter() {
            positive("principal_inertia", i)?;
        }
        Ok(Self {
            mass,
            principal_inertia,
        })
    }

    /// Solid sphere of density `ρ` and radius `r`: `m = 4/3 π r³ ρ`,
    /// `I = 2/5 m r²`.
    pub fn solid_sphere(density: f64, radius: f64) -> Result<Self, MathError> {
        positive("density", density)?;
        positive("radius", radius)?;
        let mass = 4.0 / 3.0 * std::f64::consts::PI * radius.powi(3) * density;
        Self::sphere_with_mass(mass, radius)
    }

    /// Solid sphere of given mass and radius.
    pub fn sphere_with_mass(mass: f64, radius: f64) -> Result<Self, MathError> {
        positive("mass", mass)?;
        positive("radius", radius)?;
        let i = 0.4 * mass * radius * radius;
        Self::new(mass, Vec3::new(i, i, i))
    }

    /// Solid box of given mass and half extents `(a, b, c)`:
    /// `I_x = m (b² + c²) / 3` and cyclic.
    pub fn solid_box(mass: f64, half_extents: Vec3) -> Result<Self, MathError> {
        positive("mass", mass)?;
        for &h in half_extents.iter() {
            positive("half_extents", h)?;
        }
        let (a2, b2, c2) = (
            half_extents.x * half_extents.x,
            half_extents.y * half_extents.y,
            half_extents.z * half_extents.z,
        );
        Self::new(
            mass,
            Vec3::new(
                mass * (b2 + c2) / 3.0,
                mass * (a2 + c2) / 3.0,
                mass * (a2 + b2) / 3.0,
            ),
        )
    }

    /// Solid cylinder with its axis along the body z axis, radius `r` and
    /// half height `h`: `I_z = m r² / 2`, `I_x = I_y = m (3 r² + 4 h²) / 12`.
    pub fn solid_cylinder(mass: f64, radius: f64, half_height: f64) -> Result<Self, MathError> {
        positive("mass", mass)?;
        positive("radius", radius)?;
        positive("half_height", half_height)?;
        let r2 = radius * radius;
        let len = 2.0 * half_height;
        let ix = mass * (3.0 * r2 + len * len) / 12.0;
        Self::new(mass, Vec3::new(ix, ix, 0.5 * mass * r2))
    }

    /// `true` when all principal moments are equal (spheres): the world
    /// inertia is then `I 1` whatever the orientation.
    pub fn is_isotropic(&self) -> bool {
        let i = &self.principal_inertia;
        i.x == i.y && i.y == i.z
    }

    /// World-frame inertia tensor `R diag(I) Rᵀ` for orientation `q`.
    pub fn world_inertia(&self, q: &Quat) -> Mat3 {
        if self.is_isotropic() {
            return Mat3::identity() * self.principal_inertia.x;
        }
        let r = q.to_rotation_matrix().into_inner();
        r * Mat3::from_diagonal(&self.principal_inertia) * r.transpose()
    }

    /// Inverse mass and world-frame inverse inertia for orientation `q`.
    pub fn inverse(&self, q: &Quat) -> InverseMass {
        if self.is_isotropic() {
            return InverseMass {
                inv_mass: 1.0 / self.mass,
                inv_inertia: Mat3::identity() * (1.0 / self.principal_inertia.x),
            };
        }
        let r = q.to_rotation_matrix().into_inner();
        let inv = Mat3::from_diagonal(&self.principal_inertia.map(|i| 1.0 / i));
        InverseMass {
            inv_mass: 1.0 / self.mass,
            inv_inertia: r * inv * r.transpose(),
        }
    }
}

/// The inverse mass block of one body, `M⁻¹ = diag(m⁻¹ 1, I⁻¹_world)`.
/// Static and kinematic bodies use [`InverseMass::INFINITE_MASS`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InverseMass {
    /// `1/m` [1/kg]; zero for infinite mass.
    pub inv_mass: f64,
    /// World-frame inverse inertia `R I⁻¹ Rᵀ` [1/(kg m²)].
    pub inv_inertia: Mat3,
}

impl InverseMass {
    /// A body that no impulse can move (static or kinematic).
    pub const INFINITE_MASS: InverseMass = InverseMass {
        inv_mass: 0.0,
        inv_inertia: Mat3::new(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    };

    /// `true` when no impulse can move this body.
    pub fn is_infinite(&self) -> bool {
        self.inv_mass == 0.0 && self.inv_inertia.iter().all(|&x| x == 0.0)
    }

    /// `Some(k)` when `I⁻¹ = k 1` exactly (a sphere's, or an infinite
    /// mass's with `k = 0`): then `I⁻¹ x` is `k x`, the same numbers as the
    /// matrix product (its off-diagonal zeros add only zeros, which change
    /// at most the sign of a zero entry) without its nine multiplications.
    #[inline]
    pub fn isotropic_inertia(&self) -> Option<f64> {
        let i = &self.inv_inertia;
        let d = i[(0, 0)];
        let off = [
            i[(0, 1)],
            i[(0, 2)],
            i[(1, 0)],
            i[(1, 2)],
            i[(2, 0)],
            i[(2, 1)],
        ];
        (off.iter().all(|&x| x == 0.0) && i[(1, 1)] == d && i[(2, 2)] == d).then_some(d)
    }

    /// Applies `M⁻¹` to a generalized impulse `(p, L)`.
    pub fn apply(&self, linear: &Vec3, angular: &Vec3) -> (Vec3, Vec3) {
        (linear * self.inv_mass, self.inv_inertia * angular)
    }
}

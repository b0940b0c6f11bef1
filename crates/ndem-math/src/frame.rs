//! Deterministic contact frames and persistent contact identities.

use crate::{MathError, Vec3, error::finite_vec};

/// Orthonormal, right-handed contact frame `(n, t1, t2)` with `t1 × t2 = n`.
///
/// The tangents are a deterministic, branch-free function of `n` alone
/// (Duff et al., "Building an orthonormal basis, revisited", JCGT 2017), so
/// the same normal always gives the same tangents. Because a slowly rotating
/// normal can still swing the tangents, warm-start policies store friction
/// and rolling impulses as world-frame vectors rather than per-tangent values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContactFrame {
    /// Unit normal, from body b to body a.
    pub normal: Vec3,
    /// First unit tangent.
    pub tangent1: Vec3,
    /// Second unit tangent, `t2 = n × t1`.
    pub tangent2: Vec3,
}

impl ContactFrame {
    /// Builds the frame from a (not necessarily unit) normal direction.
    pub fn from_normal(normal: &Vec3) -> Result<Self, MathError> {
        finite_vec("normal", normal)?;
        let len = normal.norm();
        if len <= 1e-300 {
            return Err(MathError::ZeroDirection { field: "normal" });
        }
        Ok(Self::from_unit_normal(normal / len))
    }

    /// Builds the frame from a unit normal, without checks: the caller
    /// guarantees `|n| = 1` (the stepper's joint axes are checked by
    /// `Joint::validate` before every step, and collision normals are
    /// normalised by the collider). For a direction from user input use
    /// [`ContactFrame::from_normal`], which checks and normalises.
    pub fn from_unit_normal(n: Vec3) -> Self {
        let sign = 1.0f64.copysign(n.z);
        let a = -1.0 / (sign + n.z);
        let b = n.x * n.y * a;
        let t1 = Vec3::new(1.0 + sign * n.x * n.x * a, sign * b, -sign * n.x);
        let t2 = Vec3::new(b, sign + n.y * n.y * a, -n.y);
        Self {
            normal: n,
            tangent1: t1,
            tangent2: t2,
        }
    }

    /// Express a world vector in the frame: `(n·x, t1·x, t2·x)`.
    pub fn to_local(&self, x: &Vec3) -> Vec3 {
        Vec3::new(
            self.normal.dot(x),
            self.tangent1.dot(x),
            self.tangent2.dot(x),
        )
    }

    /// World vector from frame components `(x_n, x_t1, x_t2)`.
    pub fn to_world(&self, local: &Vec3) -> Vec3 {
        self.normal * local.x + self.tangent1 * local.y + self.tangent2 * local.z
    }
}

/// Stable identity of a contact: the ordered body pair plus a feature id that
/// tells apart several contact points between the same two bodies (e.g. a
/// sphere touching two faces of a mesh, or a box on a plane at four corners).
///
/// Collision detection produces the same key for as long as the contact
/// persists; warm starting carries multipliers from one step to the next by
/// this key (warm-starting paper, section 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ContactKey {
    /// Index of body a.
    pub body_a: u32,
    /// Index of body b.
    pub body_b: u32,
    /// Feature id within the pair (0 when a pair touches at one point).
    pub feature: u32,
}

impl ContactKey {
    /// Builds a key.
    pub const fn new(body_a: u32, body_b: u32, feature: u32) -> Self {
        Self {
            body_a,
            body_b,
            feature,
        }
    }
}

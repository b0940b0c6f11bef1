//! Bilateral joints and motors, added to the same contact problem as
//! generic rows (warm-starting paper, section 5: the excavator; section 4.4:
//! walls on prismatic motors).

use crate::{StepError, World};
use ndem_math::{ContactKey, JacobianRow, Quat, RowKind, Vec3, Velocity6};
use ndem_solve::{GenericRow, RowBounds};

/// A linear motor on a prismatic joint: drives the speed of body b relative
/// to body a along the joint axis towards `target_speed`, with a force no
/// larger than `max_force` in magnitude. A motor whose target speed cannot be
/// reached acts as a constant force `max_force` (force control).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Motor {
    /// Target speed of b relative to a along the axis [m/s].
    pub target_speed: f64,
    /// Force bound [N] (≥ 0).
    pub max_force: f64,
}

/// The kind of a joint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum JointKind {
    /// All six relative degrees of freedom locked.
    Lock,
    /// Relative translation along one axis free (or motor driven); the
    /// other five locked.
    Prismatic {
        /// Joint axis in body a's frame (unit).
        axis: Vec3,
        /// Optional motor along the axis.
        motor: Option<Motor>,
    },
}

/// A joint between bodies a and b (b may be a static body: a joint to the
/// ground).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Joint {
    /// Body a.
    pub body_a: usize,
    /// Body b.
    pub body_b: usize,
    /// Kind.
    pub kind: JointKind,
    /// Anchor in a's frame.
    pub anchor_a: Vec3,
    /// Anchor in b's frame.
    pub anchor_b: Vec3,
    /// Relative orientation `q_a⁻¹ q_b` to keep.
    pub relative_orientation: Quat,
    /// Compliance ε of the locked rows [m/N] (SPOOK regularization; small).
    pub compliance: f64,
}

impl Joint {
    fn new(
        world: &World,
        a: usize,
        b: usize,
        anchor: Vec3,
        kind: JointKind,
    ) -> Result<Self, StepError> {
        if a >= world.len() || b >= world.len() || a == b {
            return Err(StepError::InvalidJoint {
                joint: world.joints.len(),
                body_a: a,
                body_b: b,
            });
        }
        let (qa, qb) = (world.orientation[a], world.orientation[b]);
        Ok(Self {
            body_a: a,
            body_b: b,
            kind,
            anchor_a: qa.inverse() * (anchor - world.position[a]),
            anchor_b: qb.inverse() * (anchor - world.position[b]),
            relative_orientation: qa.inverse() * qb,
            compliance: 1e-10,
        })
    }

    /// A lock joint holding a and b in their current relative pose, anchored
    /// at the world point `anchor`.
    pub fn lock(world: &World, a: usize, b: usize, anchor: Vec3) -> Result<Self, StepError> {
        Self::new(world, a, b, anchor, JointKind::Lock)
    }

    /// A prismatic joint along the world direction `axis` (as it is now).
    pub fn prismatic(
        world: &World,
        a: usize,
        b: usize,
        anchor: Vec3,
        axis: Vec3,
        motor: Option<Motor>,
    ) -> Result<Self, StepError> {
        let n = axis.norm();
        if !(n.is_finite() && n > 0.0) {
            return Err(StepError::InvalidSettings {
                field: "axis",
                reason: "must be a finite non-zero direction",
            });
        }
        if let Some(m) = motor
            && !(m.max_force.is_finite() && m.max_force >= 0.0 && m.target_speed.is_finite())
        {
            {
                return Err(StepError::InvalidSettings {
                    field: "motor",
                    reason: "target speed must be finite and max force finite and >= 0",
                });
            }
        }
        let local_axis = world.orientation[a].inverse() * (axis / n);
        Self::new(
            world,
            a,
            b,
            anchor,
            JointKind::Prismatic {
                axis: local_axis,
                motor,
            },
        )
    }

    /// Number of rows this joint adds.
    pub fn row_count(&self) -> usize {
        match self.kind {
            JointKind::Lock => 6,
            JointKind::Prismatic { motor, .. } => 5 + usize::from(motor.is_some()),
        }
    }

    /// Appends this joint's rows for the current state. `joint` is the
    /// joint's index (for warm-start keys).
    /// `velocity` is the velocity at the start of the continuous stage
    /// (after impacts), entering `b = (4/Δt) Υ g − Υ G v`.
    pub(crate) fn rows(
        &self,
        world: &World,
        velocity: &[Velocity6],
        joint: usize,
        dt: f64,
        out: &mut Vec<GenericRow>,
    ) {
        let (a, b) = (self.body_a, self.body_b);
        let (xa, xb) = (world.position[a], world.position[b]);
        let (qa, qb) = (world.orientation[a], world.orientation[b]);
        let (va, vb) = (velocity[a], velocity[b]);
        let da = qa * self.anchor_a;
        let db = qb * self.anchor_b;
        let sep = xa + da - xb - db;
        let target_b = qa * self.relative_orientation;
        let theta = (qb * target_b.inverse()).scaled_axis();
        let tau = 2.0 * dt;
        let upsilon = 1.0 / (1.0 + 4.0 * tau / dt);
        let sigma = 4.0 / (dt * dt) * self.compliance * upsilon;
        let key = |k: usize| {
            ContactKey::new(
                a as u32,
                b as u32,
                0x8000_0000 | ((joint as u32) << 4) | k as u32,
            )
        };
        let mut push = |k: usize,
                        jac: JacobianRow,
                        g: f64,
                        bounds: RowBounds,
                        rhs_override: Option<f64>,
                        sigma: f64| {
            let gv = jac.dot(&va, &vb);
            let rhs = rhs_override.unwrap_or(4.0 / dt * upsilon * g - upsilon * gv);
            out.push(GenericRow {
                bodies: [a as u32, b as u32],
                jacobian: jac,
                sigma,
                rhs,
                bounds,
                kind: RowKind::Bilateral,
                key: Some(key(k)),
            });
        };
        let free = RowBounds::Fixed {
            lower: f64::NEG_INFINITY,
            upper: f64::INFINITY,
        };
        let lin = |e: Vec3| JacobianRow {
            linear_a: e,
            angular_a: da.cross(&e),
            linear_b: -e,
            angular_b: -db.cross(&e),
        };
        let ang = |e: Vec3| JacobianRow {
            linear_a: Vec3::zeros(),
            angular_a: e,
            linear_b: Vec3::zeros(),
            angular_b: -e,
        };
        let (translational, axis, motor) = match self.kind {
            JointKind::Lock => (vec![Vec3::x(), Vec3::y(), Vec3::z()], None, None),
            JointKind::Prismatic { axis, motor } => {
                let u = qa * axis;
                let f = ndem_math::ContactFrame::from_unit_normal(u);
                (vec![f.tangent1, f.tangent2], Some(u), motor)
            }
        };
        let mut k = 0;
        for e in translational {
            push(k, lin(e), e.dot(&sep), free, None, sigma);
            k += 1;
        }
        for e in [Vec3::x(), Vec3::y(), Vec3::z()] {
            push(k, ang(e), -e.dot(&theta), free, None, sigma);
            k += 1;
        }
        if let (Some(u), Some(m)) = (axis, motor) {
            let bound = m.max_force * dt;
            push(
                k,
                lin(u),
                0.0,
                RowBounds::Fixed {
                    lower: -bound,
                    upper: bound,
                },
                Some(m.target_speed),
                1e-12 / dt,
            );
        }
    }
}

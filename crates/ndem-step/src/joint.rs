//! Bilateral joints, drives and linear actuators, added to the same
//! contact problem as generic rows (warm-starting paper, section 5: the
//! excavator, "10 bodies, 8 joints, 3 linear actuators and one rotational
//! motor"; section 4.4: walls on prismatic motors).
//!
//! Every row follows SPOOK (`docs/theory.md`, "SPOOK"):
//! `b = (4/Δt) Υ g − Υ G v`, `Σ = (4/Δt²) ε Υ`, `Υ = 1/(1 + 4τ/Δt)`,
//! `τ = 2Δt`, with `g` the constraint value whose rate is `G v`.
//! Rows carry keys `joint << 4 | row` so that warm starting and
//! [`crate::Stepper::joint_reactions`] find them; the drive row is row
//! [`DRIVE_ROW`].

use crate::StepError;
use crate::handles::BodyId;
use ndem_math::{ContactKey, JacobianRow, Quat, RowKind, SettingError, Vec3, Velocity6};
use ndem_solve::{GenericRow, RowBounds};

mod rows;

/// Row number (in a joint's keys) of the drive row.
pub const DRIVE_ROW: u32 = 15;

/// A velocity-driven motor: drives the joint coordinate's rate towards
/// `target_speed` with a force no larger than `max_force` in magnitude. A
/// motor whose target speed cannot be reached acts as a constant force
/// `max_force` (force control).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Motor {
    /// Target rate of the joint coordinate [m/s or rad/s].
    pub target_speed: f64,
    /// Force bound [N, or N·m for a hinge] (≥ 0).
    pub max_force: f64,
}

/// How a drive acts on its joint's coordinate (the prismatic displacement,
/// the hinge angle, or the actuator's length).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Drive {
    /// Velocity-driven motor.
    Speed(Motor),
    /// Position-driven motor (a servo): holds the coordinate at `target`
    /// with SPOOK stiffness `1/compliance`, with a force no larger than
    /// `max_force`.
    Position {
        /// Target coordinate [m or rad].
        target: f64,
        /// Force bound [N or N·m] (≥ 0).
        max_force: f64,
    },
}

impl Drive {
    fn validate(&self) -> Result<(), StepError> {
        let (target, max_force) = match *self {
            Drive::Speed(m) => (m.target_speed, m.max_force),
            Drive::Position { target, max_force } => (target, max_force),
        };
        StepError::require_non_negative("drive.max_force", max_force)?;
        StepError::require(target.is_finite(), "drive.target", "must be finite")?;
        Ok(())
    }

    /// The force bound.
    pub fn max_force(&self) -> f64 {
        match *self {
            Drive::Speed(m) => m.max_force,
            Drive::Position { max_force, .. } => max_force,
        }
    }
}

/// The kind of a joint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum JointKind {
    /// All six relative degrees of freedom locked.
    Lock,
    /// Relative translation along one axis free (or driven); the other five
    /// locked. Coordinate: displacement of b's anchor from a's along the
    /// axis \[m\].
    Prismatic {
        /// Joint axis in body a's frame (unit).
        axis: Vec3,
        /// Optional speed motor along the axis.
        motor: Option<Motor>,
    },
    /// Relative rotation about one axis free (or driven); the anchors
    /// coincide. Coordinate: rotation angle of b relative to a about the
    /// axis, from the pose at creation \[rad\], in (−π, π].
    Hinge {
        /// Joint axis in body a's frame (unit).
        axis: Vec3,
        /// Optional drive about the axis.
        drive: Option<Drive>,
    },
    /// The anchors coincide; rotation free (three rows).
    Ball,
    /// A massless linear actuator (a hydraulic cylinder with ball ends)
    /// between the anchors: one row on their distance. Coordinate: the
    /// distance `L = |p_a − p_b|` \[m\]. Without a drive it is a rigid rod.
    Actuator {
        /// Optional drive of the length.
        drive: Option<Drive>,
        /// Length held when undriven \[m\] (the length at creation).
        rest_length: f64,
    },
}

/// A joint between bodies a and b (b may be a static body: a joint to the
/// ground).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Joint {
    /// Body a.
    pub body_a: BodyId,
    /// Body b.
    pub body_b: BodyId,
    /// Kind.
    pub kind: JointKind,
    /// Anchor in a's frame.
    pub anchor_a: Vec3,
    /// Anchor in b's frame.
    pub anchor_b: Vec3,
    /// Relative orientation `q_a⁻¹ q_b` to keep.
    pub relative_orientation: Quat,
    /// Compliance ε of the locked rows and of position drives [m/N]
    /// (SPOOK regularization; small).
    pub compliance: f64,
}

fn unit_axis(axis: Vec3) -> Result<Vec3, StepError> {
    let n = axis.norm();
    StepError::require(
        n.is_finite() && n > 0.0,
        "axis",
        "must be a finite non-zero direction",
    )?;
    Ok(axis / n)
}

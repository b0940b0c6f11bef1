//! A joint's constructors from the world's bodies, its coordinate and its
//! SPOOK rows (the pose of its two bodies, one row builder per joint).

use super::*;
use crate::World;
use ndem_math::SettingError;

impl Joint {
    /// Body indices that exist and differ (checked before they index the
    /// world).
    fn check_bodies(world: &World, a: BodyId, b: BodyId) -> Result<(), StepError> {
        let (a, b) = (a.index(), b.index());
        if a >= world.len() || b >= world.len() || a == b {
            return Err(StepError::InvalidJoint {
                joint: world.joints.len(),
                body_a: a,
                body_b: b,
            });
        }
        Ok(())
    }

    /// A joint of `kind` keeping a and b in their current relative pose,
    /// with world anchors `(anchor_a, anchor_b)`, checked by
    /// [`Joint::validate`].
    fn between(
        world: &World,
        a: BodyId,
        b: BodyId,
        (anchor_a, anchor_b): (Vec3, Vec3),
        kind: JointKind,
    ) -> Result<Self, StepError> {
        Self::check_bodies(world, a, b)?;
        let (qa, qb) = (world.orientation(a), world.orientation(b));
        let joint = Self {
            body_a: a,
            body_b: b,
            kind,
            anchor_a: qa.inverse() * (anchor_a - world.position(a)),
            anchor_b: qb.inverse() * (anchor_b - world.position(b)),
            relative_orientation: qa.inverse() * qb,
            compliance: 1e-10,
        };
        joint.validate(world.joints.len(), world.len())?;
        Ok(joint)
    }

    /// A joint about the world direction `axis` through `anchor`: `kind`
    /// receives the axis in a's frame.
    fn about_axis(
        world: &World,
        (a, b): (BodyId, BodyId),
        anchor: Vec3,
        axis: Vec3,
        kind: impl FnOnce(Vec3) -> JointKind,
    ) -> Result<Self, StepError> {
        let axis = unit_axis(axis)?;
        Self::check_bodies(world, a, b)?;
        let local_axis = world.orientation(a).inverse() * axis;
        Self::between(world, a, b, (anchor, anchor), kind(local_axis))
    }

    /// A lock joint holding a and b in their current relative pose, anchored
    /// at the world point `anchor`.
    pub fn lock(world: &World, a: BodyId, b: BodyId, anchor: Vec3) -> Result<Self, StepError> {
        Self::between(world, a, b, (anchor, anchor), JointKind::Lock)
    }

    /// A prismatic joint along the world direction `axis` (as it is now).
    pub fn prismatic(
        world: &World,
        a: BodyId,
        b: BodyId,
        anchor: Vec3,
        axis: Vec3,
        motor: Option<Motor>,
    ) -> Result<Self, StepError> {
        Self::about_axis(world, (a, b), anchor, axis, |axis| JointKind::Prismatic {
            axis,
            motor,
        })
    }

    /// A hinge about the world direction `axis` through `anchor` (as it is
    /// now), optionally driven.
    pub fn hinge(
        world: &World,
        a: BodyId,
        b: BodyId,
        anchor: Vec3,
        axis: Vec3,
        drive: Option<Drive>,
    ) -> Result<Self, StepError> {
        Self::about_axis(world, (a, b), anchor, axis, |axis| JointKind::Hinge {
            axis,
            drive,
        })
    }

    /// A ball joint at the world point `anchor`.
    pub fn ball(world: &World, a: BodyId, b: BodyId, anchor: Vec3) -> Result<Self, StepError> {
        Self::between(world, a, b, (anchor, anchor), JointKind::Ball)
    }

    /// A linear actuator from the world point `anchor_a` on a to
    /// `anchor_b` on b (at least 1 mm apart), optionally driven.
    pub fn actuator(
        world: &World,
        a: BodyId,
        b: BodyId,
        (anchor_a, anchor_b): (Vec3, Vec3),
        drive: Option<Drive>,
    ) -> Result<Self, StepError> {
        let rest_length = (anchor_a - anchor_b).norm();
        StepError::require(
            rest_length >= 1e-3,
            "anchor_b",
            "an actuator's anchors must be at least 1 mm apart",
        )?;
        Self::between(
            world,
            a,
            b,
            (anchor_a, anchor_b),
            JointKind::Actuator { drive, rest_length },
        )
    }

    /// Checks a joint's fields (also for joints built field by field, as
    /// scene files do): distinct bodies, finite anchors, finite positive
    /// compliance, unit axes, valid drives.
    pub fn validate(&self, joint: usize, body_count: usize) -> Result<(), StepError> {
        let (a, b) = (self.body_a.index(), self.body_b.index());
        if a >= body_count || b >= body_count || a == b {
            return Err(StepError::InvalidJoint {
                joint,
                body_a: a,
                body_b: b,
            });
        }
        let finite = |v: &Vec3| v.iter().all(|x| x.is_finite());
        StepError::require(
            finite(&self.anchor_a) && finite(&self.anchor_b),
            "anchor",
            "must be finite",
        )?;
        StepError::require_positive("compliance", self.compliance)?;
        if let JointKind::Prismatic { axis, .. } | JointKind::Hinge { axis, .. } = self.kind
            && ((axis.norm() - 1.0).abs() >= 1e-9 || axis.norm().is_nan())
        {
            return Err(StepError::InvalidSettings {
                field: "axis",
                reason: "must be a unit vector",
            });
        }
        if let JointKind::Actuator { rest_length, .. } = self.kind
            && !(rest_length.is_finite() && rest_length > 0.0)
        {
            return Err(StepError::InvalidSettings {
                field: "rest_length",
                reason: "must be finite and > 0",
            });
        }
        if let Some(d) = self.drive() {
            d.validate()?;
        }
        Ok(())
    }

    /// The drive of this joint, if any.
    pub fn drive(&self) -> Option<Drive> {
        match self.kind {
            JointKind::Prismatic { motor, .. } => motor.map(Drive::Speed),
            JointKind::Hinge { drive, .. } | JointKind::Actuator { drive, .. } => drive,
            JointKind::Lock | JointKind::Ball => None,
        }
    }

    /// Replaces the drive (e.g. a dig cycle's next target). Errors on a
    /// joint kind without a drive row or an invalid drive.
    pub fn set_drive(&mut self, new: Option<Drive>) -> Result<(), StepError> {
        if let Some(d) = new {
            d.validate()?;
        }
        match &mut self.kind {
            JointKind::Hinge { drive, .. } | JointKind::Actuator { drive, .. } => *drive = new,
            JointKind::Prismatic { motor, .. } => match new {
                None => *motor = None,
                Some(Drive::Speed(m)) => *motor = Some(m),
                Some(Drive::Position { .. }) => {
                    return Err(StepError::InvalidSettings {
                        field: "drive",
                        reason: "prismatic joints take speed motors only",
                    });
                }
            },
            JointKind::Lock | JointKind::Ball => {
                return Err(StepError::InvalidSettings {
                    field: "drive",
                    reason: "lock and ball joints have no drive",
                });
            }
        }
        Ok(())
    }

    /// The joint coordinate in the world's current state: prismatic
    /// displacement, hinge angle or actuator length (`None` for lock and
    /// ball joints).
    pub fn coordinate(&self, world: &World) -> Option<f64> {
        let pose = JointPose::new(self, world);
        match self.kind {
            JointKind::Prismatic { axis, .. } => Some(-(pose.qa * axis).dot(&pose.separation)),
            JointKind::Hinge { axis, .. } => Some(pose.hinge_angle(pose.qa * axis)),
            JointKind::Actuator { .. } => Some(pose.separation.norm()),
            JointKind::Lock | JointKind::Ball => None,
        }
    }

    /// Number of rows this joint adds.
    pub fn row_count(&self) -> usize {
        let drive = usize::from(self.drive().is_some());
        match self.kind {
            JointKind::Lock => 6,
            JointKind::Prismatic { .. } | JointKind::Hinge { .. } => 5 + drive,
            JointKind::Ball => 3,
            JointKind::Actuator { .. } => 1,
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
        let pose = JointPose::new(self, world);
        let rows = RowBuilder {
            bodies: [self.body_a.index(), self.body_b.index()],
            velocity: [velocity[self.body_a.index()], velocity[self.body_b.index()]],
            key_base: (joint as u32) << 4,
            dt,
            compliance: self.compliance,
        };
        let sep = pose.separation;
        let basis = [Vec3::x(), Vec3::y(), Vec3::z()];
        let translational = |out: &mut Vec<GenericRow>, axes: &[Vec3]| {
            for (k, e) in axes.iter().enumerate() {
                out.push(rows.locked(k as u32, pose.linear(*e), e.dot(&sep)));
            }
        };
        let rotational = |out: &mut Vec<GenericRow>, axes: &[Vec3], error: &Vec3| {
            for (k, e) in axes.iter().enumerate() {
                out.push(rows.locked(3 + k as u32, pose.angular(*e), -e.dot(error)));
            }
        };
        match self.kind {
            JointKind::Lock => {
                translational(out, &basis);
                rotational(out, &basis, &pose.rotation_error());
            }
            JointKind::Ball => translational(out, &basis),
            JointKind::Prismatic { axis, motor } => {
                let u = pose.qa * axis;
                let f = ndem_math::ContactFrame::from_unit_normal(u);
                translational(out, &[f.tangent1, f.tangent2]);
                rotational(out, &basis, &pose.rotation_error());
                if let Some(m) = motor {
                    // G v = −ds/dt (kept from the triaxial cell's walls), so
                    // G v + b = 0 holds ds/dt at the target speed
                    out.push(rows.speed(pose.linear(u), m.target_speed, m.max_force));
                }
            }
            JointKind::Hinge { axis, drive } => {
                let u = pose.qa * axis;
                let f = ndem_math::ContactFrame::from_unit_normal(u);
                translational(out, &basis);
                let ub = pose.qb * (self.relative_orientation.inverse() * axis);
                rotational(out, &[f.tangent1, f.tangent2], &u.cross(&ub));
                if let Some(d) = drive {
                    out.push(rows.drive(d, pose.angular(-u), pose.hinge_angle(u)));
                }
            }
            JointKind::Actuator { drive, rest_length } => {
                let length = sep.norm();
                let u = if length > 0.0 {
                    sep / length
                } else {
                    Vec3::x()
                };
                match drive {
                    Some(d) => out.push(rows.drive(d, pose.linear(u), length)),
                    // a rigid rod at its creation length
                    None => out.push(rows.locked(0, pose.linear(u), length - rest_length)),
                }
            }
        }
    }
}

/// Positions, orientations and anchors of a joint's two bodies.
struct JointPose {
    qa: Quat,
    qb: Quat,
    /// World lever arms of the anchors.
    arm_a: Vec3,
    arm_b: Vec3,
    /// `p_a − p_b`, the anchors' separation.
    separation: Vec3,
    /// `q_a q_rel` (b's orientation at rest relative to a).
    target_b: Quat,
}

impl JointPose {
    fn new(joint: &Joint, world: &World) -> Self {
        let (a, b) = (joint.body_a, joint.body_b);
        let (qa, qb) = (world.orientation(a), world.orientation(b));
        let arm_a = qa * joint.anchor_a;
        let arm_b = qb * joint.anchor_b;
        Self {
            qa,
            qb,
            arm_a,
            arm_b,
            separation: world.position(a) + arm_a - world.position(b) - arm_b,
            target_b: qa * joint.relative_orientation,
        }
    }

    /// Rotation vector of b's excess rotation over its rest pose (world).
    fn rotation_error(&self) -> Vec3 {
        (self.qb * self.target_b.inverse()).scaled_axis()
    }

    /// Angle of b's excess rotation about the unit axis `u`, in (−π, π].
    fn hinge_angle(&self, u: Vec3) -> f64 {
        let r = self.qb * self.target_b.inverse();
        let q = r.quaternion();
        let angle = 2.0 * q.imag().dot(&u).atan2(q.w);
        if angle > std::f64::consts::PI {
            angle - 2.0 * std::f64::consts::PI
        } else if angle <= -std::f64::consts::PI {
            angle + 2.0 * std::f64::consts::PI
        } else {
            angle
        }
    }

    /// Row with `G v = e·(ṗ_a − ṗ_b)` at the anchors.
    fn linear(&self, e: Vec3) -> JacobianRow {
        JacobianRow {
            linear_a: e,
            angular_a: self.arm_a.cross(&e),
            linear_b: -e,
            angular_b: -self.arm_b.cross(&e),
        }
    }

    /// Row with `G v = e·(ω_a − ω_b)`.
    fn angular(&self, e: Vec3) -> JacobianRow {
        JacobianRow {
            linear_a: Vec3::zeros(),
            angular_a: e,
            linear_b: Vec3::zeros(),
            angular_b: -e,
        }
    }
}

/// Builds a joint's SPOOK rows.
struct RowBuilder {
    bodies: [usize; 2],
    velocity: [Velocity6; 2],
    key_base: u32,
    dt: f64,
    compliance: f64,
}

impl RowBuilder {
    fn key(&self, k: u32) -> ContactKey {
        ContactKey::new(
            self.bodies[0] as u32,
            self.bodies[1] as u32,
            0x8000_0000 | self.key_base | k,
        )
    }

    /// SPOOK's Υ and Σ for compliance `ε`.
    fn spook(&self, epsilon: f64) -> (f64, f64) {
        let tau = 2.0 * self.dt;
        let upsilon = 1.0 / (1.0 + 4.0 * tau / self.dt);
        (upsilon, 4.0 / (self.dt * self.dt) * epsilon * upsilon)
    }

    fn row(&self, k: u32, jacobian: JacobianRow, sigma: f64, rhs: f64, bound: f64) -> GenericRow {
        GenericRow {
            bodies: self.bodies.map(|x| x as u32),
            jacobian,
            sigma,
            rhs,
            bounds: RowBounds::Fixed {
                lower: -bound,
                upper: bound,
            },
            kind: RowKind::Bilateral,
            key: Some(self.key(k)),
        }
    }

    /// A locked row with constraint value `g` (whose rate is `G v`).
    fn locked(&self, k: u32, jacobian: JacobianRow, g: f64) -> GenericRow {
        let (upsilon, sigma) = self.spook(self.compliance);
        let gv = jacobian.dot(&self.velocity[0], &self.velocity[1]);
        let rhs = 4.0 / self.dt * upsilon * g - upsilon * gv;
        self.row(k, jacobian, sigma, rhs, f64::INFINITY)
    }

    /// A speed motor row: `G v + rhs = 0` within `±max_force Δt`.
    fn speed(&self, jacobian: JacobianRow, rhs: f64, max_force: f64) -> GenericRow {
        self.row(
            DRIVE_ROW,
            jacobian,
            1e-12 / self.dt,
            rhs,
            max_force * self.dt,
        )
    }

    /// A drive row on coordinate `s` with `G v = ds/dt`.
    fn drive(&self, drive: Drive, jacobian: JacobianRow, s: f64) -> GenericRow {
        match drive {
            Drive::Speed(m) => self.speed(jacobian, -m.target_speed, m.max_force),
            Drive::Position { target, max_force } => {
                let mut row = self.locked(DRIVE_ROW, jacobian, s - target);
                row.bounds = RowBounds::Fixed {
                    lower: -max_force * self.dt,
                    upper: max_force * self.dt,
                };
                row
            }
        }
    }
}

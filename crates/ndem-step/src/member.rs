//! Bodies carried by a host body: the particles of a rigid aggregate
//! (adaptive-model-reduction paper, section 2.4).
//!
//! A member keeps its shape, material and mass properties and still
//! collides, but has no degrees of freedom of its own: it co-moves rigidly
//! with its host (eqs. 11-13), its contacts act on the host with the lever
//! arm from the host's centre of mass (the member's curvature kept), and
//! contacts between two members of one host leave the solve. The host is
//! an ordinary dynamic body (usually with [`ndem_collide::Shape::Empty`]),
//! so joints, warm starting and output treat it like any other body, or a
//! static one: its members are then held at rest, and their contacts with
//! static bodies and with members of static hosts leave the solve too.
//!
//! Invariant: energy, momentum and the solve count a member only through
//! its host (its own mass is part of the host's); a member of a static
//! host, which has no mass, is at rest and counts only its own potential
//! energy.

pub use crate::state::Membership;
use crate::{BodyId, Motion, StepError, World};
use ndem_math::{MassProperties, Quat, SettingError, Vec3, Velocity6};

impl World {
    /// The membership of `body`, if it is carried by a host.
    pub fn membership(&self, body: usize) -> Option<&Membership> {
        membership_in(self.kinds.membership(), body)
    }

    /// A counter that changes whenever a membership is made or undone, so
    /// that per-membership data can be rebuilt only when needed.
    pub fn membership_version(&self) -> u64 {
        self.membership_version
    }

    /// The host of `body`, if any.
    pub fn host_of(&self, body: usize) -> Option<usize> {
        self.membership(body).map(|m| m.host)
    }

    /// `true` when `body` is carried by a host.
    pub fn is_member(&self, body: usize) -> bool {
        self.membership(body).is_some()
    }

    /// The body that carries `body`'s degrees of freedom: its host, or
    /// itself.
    pub fn carrier(&self, body: usize) -> usize {
        self.host_of(body).unwrap_or(body)
    }

    /// Appends body `body`'s [`Self::inverse_mass`] to `out`, a sphere's
    /// and a static body's as `(m⁻¹, k)` without forming a matrix (the
    /// same entry: [`ndem_solve::InverseMasses::push_isotropic`]).
    pub fn push_inverse_mass(&self, body: usize, out: &mut ndem_solve::InverseMasses) {
        match self.mass_properties()[body] {
            _ if self.kinds.membership()[body].is_some() => out.push_isotropic(0.0, 0.0),
            Some(m) if m.is_isotropic() => {
                out.push_isotropic(1.0 / m.mass, 1.0 / m.principal_inertia.x)
            }
            Some(m) => out.push(m.inverse(&self.orientations()[body])),
            None => out.push_isotropic(0.0, 0.0),
        }
    }

    /// Inverse mass of a body from its own mass properties, member or not.
    pub fn own_inverse_mass(&self, body: usize) -> ndem_math::InverseMass {
        match self.mass_properties()[body] {
            Some(m) => m.inverse(&self.orientations()[body]),
            None => ndem_math::InverseMass::INFINITE_MASS,
        }
    }

    /// Makes `member` co-move with `host` from its current pose relative
    /// to the host. The member must be dynamic; the host dynamic, or
    /// static (an aggregate merged with static geometry: its members are
    /// held at rest and their contacts with other immovable bodies leave
    /// the solve); the two distinct, and neither already a member. A
    /// member's joint rows are re-expressed on its host (an excavator
    /// bucket merged with its load keeps its joints). Velocities are not
    /// changed: set the host's velocity, then call [`World::co_move`].
    pub fn attach(&mut self, member: BodyId, host: BodyId) -> Result<(), StepError> {
        let (member, host) = (member.index(), host.index());
        let n = self.len();
        let bad = |reason: &'static str| StepError::InvalidMembership {
            member,
            host,
            reason,
        };
        if member >= n || host >= n {
            return Err(bad("no such body"));
        }
        if member == host {
            return Err(bad("a body cannot host itself"));
        }
        if self.motions()[member] != Motion::Dynamic || self.motions()[host] == Motion::Kinematic {
            return Err(bad(
                "the member must be dynamic, the host dynamic or static",
            ));
        }
        if self.is_member(member) || self.is_member(host) {
            return Err(bad("members cannot host or be attached twice"));
        }
        let qh = self.orientations()[host];
        let offset = qh.inverse() * (self.positions()[member] - self.positions()[host]);
        let relative_orientation = qh.inverse() * self.orientations()[member];
        self.kinds.all_mut().membership[member] = Some(Box::new(Membership {
            host,
            offset,
            relative_orientation,
        }));
        self.membership_version += 1;
        Ok(())
    }

    /// Restores a membership exactly as recorded (checkpoint restart); the
    /// same checks as [`World::attach`].
    pub fn restore_membership(
        &mut self,
        member: usize,
        membership: Membership,
    ) -> Result<(), StepError> {
        let finite = membership.offset.iter().all(|x| x.is_finite())
            && membership
                .relative_orientation
                .coords
                .iter()
                .all(|x| x.is_finite());
        if !finite {
            return Err(StepError::InvalidMembership {
                member,
                host: membership.host,
                reason: "offset and orientation must be finite",
            });
        }
        self.attach(
            BodyId::from_index(member),
            BodyId::from_index(membership.host),
        )?;
        self.kinds.all_mut().membership[member] = Some(Box::new(membership));
        Ok(())
    }

    /// Frees a member: it keeps its current (co-moving) pose and velocity
    /// and becomes an independent dynamic body again.
    pub fn detach(&mut self, member: BodyId) -> Result<(), StepError> {
        let member = member.index();
        if !self.is_member(member) {
            return Err(StepError::InvalidMembership {
                member,
                host: usize::MAX,
                reason: "not a member",
            });
        }
        // a member: `member` is a body's index
        self.kinds.all_mut().membership[member] = None;
        self.membership_version += 1;
        Ok(())
    }

    /// Sets every member's pose and velocity from its host (eqs. 11-13):
    /// `x_a = x_A + R_A r_a`, `q_a = q_A ⊗ q_rel`, `v_a = v_A + ω_A × (x_a − x_A)`,
    /// `ω_a = ω_A`.
    pub fn co_move(&mut self) {
        let mut state = self.state.all_mut();
        for i in 0..self.kinds.membership().len() {
            co_move_body(self.kinds.membership(), &mut state, i);
        }
    }

    /// [`Self::co_move`] for `bodies` only (those that are not members, or
    /// not bodies of the world, are left alone): what model reduction
    /// needs when it forms or dissolves one aggregate, whose members are
    /// the only bodies whose host changed. The same sums as
    /// [`Self::co_move`], so a member gets the same bits either way.
    pub fn co_move_bodies(&mut self, bodies: &[usize]) {
        let mut state = self.state.all_mut();
        for &i in bodies {
            if i < self.kinds.membership().len() {
                co_move_body(self.kinds.membership(), &mut state, i);
            }
        }
    }

    /// Replaces a dynamic body's mass properties and orientation (the
    /// principal frame of a new aggregate). Members' relative poses are
    /// kept in world terms: call before [`World::attach`]ing them.
    pub fn set_mass_properties(
        &mut self,
        body: usize,
        mass: MassProperties,
        orientation: Quat,
    ) -> Result<(), StepError> {
        StepError::require(
            body < self.len() && self.motions()[body] == Motion::Dynamic,
            "body",
            "mass properties can only be set on an existing dynamic body",
        )?;
        let m = MassProperties::new(mass.mass, mass.principal_inertia)?;
        if !orientation.coords.iter().all(|x| x.is_finite()) {
            return Err(StepError::NonFiniteState {
                field: "orientation",
                body,
            });
        }
        self.kinds.all_mut().mass[body] = Some(m);
        self.state.orientations_mut()[body] = orientation;
        Ok(())
    }

    /// Turns a dynamic body without members into a static one with no mass
    /// (a retired aggregate kept for reuse, so body indices stay stable),
    /// or back: `Some(mass)` makes it dynamic with that mass.
    pub fn set_active(
        &mut self,
        body: usize,
        mass: Option<MassProperties>,
    ) -> Result<(), StepError> {
        StepError::require(
            body < self.len() && !self.is_member(body),
            "body",
            "no such body, or it is a member",
        )?;
        match mass {
            Some(m) => {
                let m = MassProperties::new(m.mass, m.principal_inertia)?;
                let kinds = self.kinds.all_mut();
                kinds.mass[body] = Some(m);
                kinds.motion[body] = Motion::Dynamic;
                kinds.fixed[body] = false;
            }
            None => {
                if self
                    .kinds
                    .membership()
                    .iter()
                    .flatten()
                    .any(|m| m.host == body)
                {
                    return Err(StepError::InvalidSettings {
                        field: "body",
                        reason: "a body that hosts members cannot be deactivated",
                    });
                }
                let kinds = self.kinds.all_mut();
                kinds.mass[body] = None;
                kinds.motion[body] = Motion::Static;
                kinds.fixed[body] = true;
                self.state.velocities_mut()[body] = Velocity6::ZERO;
            }
        }
        Ok(())
    }
}

/// Eqs. 11-13 for body `i` (`i < membership.len()`), if it is a member:
/// its pose and velocity from its host's, in `state` (positions,
/// orientations, velocities).
fn co_move_body(
    membership: &[Option<Box<Membership>>],
    (position, orientation, velocity): &mut (&mut [Vec3], &mut [Quat], &mut [Velocity6]),
    i: usize,
) {
    if let Some(m) = membership[i].as_deref().copied() {
        let (xh, qh, vh) = (position[m.host], orientation[m.host], velocity[m.host]);
        let r = qh * m.offset;
        position[i] = xh + r;
        orientation[i] = qh * m.relative_orientation;
        velocity[i] = Velocity6::new(vh.linear + vh.angular.cross(&r), vh.angular);
    }
}

/// The membership of `body` in a world's `membership` vector (for code that
/// holds other fields of the world mutably).
pub(crate) fn membership_in(
    membership: &[Option<Box<Membership>>],
    body: usize,
) -> Option<&Membership> {
    membership.get(body).and_then(Option::as_deref)
}

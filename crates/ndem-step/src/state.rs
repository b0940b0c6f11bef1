//! The bodies' positions, orientations and velocities, and what each body
//! is (shape, motion, mass properties, membership), held so that every way
//! of writing them renews a stamp: a stepper that left the state finite can
//! tell, from the stamp alone, that nobody has written it since and pass
//! over the per-body finiteness check of the next step
//! ([`crate::World::validate_state_unless`]); one that keeps per-body
//! records can tell that the bodies are what they were.

use ndem_collide::Shape;
use ndem_math::{MassProperties, Quat, Vec3, Velocity6};
use std::collections::TryReserveError;
use std::sync::atomic::{AtomicU64, Ordering};

/// One version of a world's positions, orientations and velocities. Every
/// mutable access to them takes a fresh stamp from a process-wide counter,
/// so two worlds with equal stamps hold the same state (one is a copy of the
/// other, neither written since). Only compared, never ordered or stored:
/// trajectories do not depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateStamp(u64);

/// The next stamp to hand out (a `u64` counter does not wrap in practice:
/// 2⁶⁴ writes at one per nanosecond take 584 years).
static NEXT_STAMP: AtomicU64 = AtomicU64::new(0);

impl StateStamp {
    fn fresh() -> Self {
        Self(NEXT_STAMP.fetch_add(1, Ordering::Relaxed))
    }
}

/// Positions, orientations and velocities of the bodies (structure of
/// arrays) and the stamp of their version. The fields are private to this
/// module: crate code writes them only through the accessors below, each of
/// which renews the stamp.
#[derive(Debug, Clone)]
pub(crate) struct BodyState {
    position: Vec<Vec3>,
    orientation: Vec<Quat>,
    velocity: Vec<Velocity6>,
    stamp: StateStamp,
}

impl BodyState {
    pub(crate) fn new() -> Self {
        Self {
            position: Vec::new(),
            orientation: Vec::new(),
            velocity: Vec::new(),
            stamp: StateStamp::fresh(),
        }
    }

    pub(crate) fn stamp(&self) -> StateStamp {
        self.stamp
    }

    pub(crate) fn positions(&self) -> &[Vec3] {
        &self.position
    }

    pub(crate) fn orientations(&self) -> &[Quat] {
        &self.orientation
    }

    pub(crate) fn velocities(&self) -> &[Velocity6] {
        &self.velocity
    }

    /// All three, writable (a fresh stamp).
    pub(crate) fn all_mut(&mut self) -> (&mut [Vec3], &mut [Quat], &mut [Velocity6]) {
        self.stamp = StateStamp::fresh();
        (
            &mut self.position,
            &mut self.orientation,
            &mut self.velocity,
        )
    }

    /// Writable positions (a fresh stamp).
    pub(crate) fn positions_mut(&mut self) -> &mut [Vec3] {
        self.all_mut().0
    }

    /// Writable orientations (a fresh stamp).
    pub(crate) fn orientations_mut(&mut self) -> &mut [Quat] {
        self.all_mut().1
    }

    /// Writable velocities (a fresh stamp).
    pub(crate) fn velocities_mut(&mut self) -> &mut [Velocity6] {
        self.all_mut().2
    }

    /// Swaps the velocity vector with `other` (of any length: the caller
    /// restores one of the bodies' length before the world is used again),
    /// a fresh stamp.
    pub(crate) fn swap_velocities(&mut self, other: &mut Vec<Velocity6>) {
        self.stamp = StateStamp::fresh();
        std::mem::swap(&mut self.velocity, other);
    }

    /// Appends a body's state (a fresh stamp).
    pub(crate) fn push(&mut self, position: Vec3, orientation: Quat, velocity: Velocity6) {
        self.stamp = StateStamp::fresh();
        self.position.push(position);
        self.orientation.push(orientation);
        self.velocity.push(velocity);
    }

    /// Room for exactly `additional` more bodies in each vector.
    pub(crate) fn try_reserve_exact(&mut self, additional: usize) -> Result<(), TryReserveError> {
        self.position.try_reserve_exact(additional)?;
        self.orientation.try_reserve_exact(additional)?;
        self.velocity.try_reserve_exact(additional)
    }
}

/// What each body is: shape, motion, mass properties (`None` without),
/// whether no contact can move it, and its membership of an aggregate;
/// with the stamp of their version. The fields are private to this module:
/// crate code writes them only through [`BodyKinds::all_mut`] and
/// [`BodyKinds::push`], which renew the stamp.
#[derive(Debug, Clone)]
pub(crate) struct BodyKinds {
    shapes: Vec<Shape>,
    motion: Vec<Motion>,
    mass: Vec<Option<MassProperties>>,
    fixed: Vec<bool>,
    /// Boxed: 8 bytes for a body that is no member (most of a scene).
    membership: Vec<Option<Box<Membership>>>,
    stamp: StateStamp,
}

/// [`BodyKinds`], writable.
pub(crate) struct BodyKindsMut<'a> {
    pub(crate) motion: &'a mut [Motion],
    pub(crate) mass: &'a mut [Option<MassProperties>],
    pub(crate) fixed: &'a mut [bool],
    pub(crate) membership: &'a mut [Option<Box<Membership>>],
}

impl BodyKinds {
    pub(crate) fn new() -> Self {
        Self {
            shapes: Vec::new(),
            motion: Vec::new(),
            mass: Vec::new(),
            fixed: Vec::new(),
            membership: Vec::new(),
            stamp: StateStamp::fresh(),
        }
    }

    pub(crate) fn stamp(&self) -> StateStamp {
        self.stamp
    }

    pub(crate) fn shapes(&self) -> &[Shape] {
        &self.shapes
    }

    pub(crate) fn motions(&self) -> &[Motion] {
        &self.motion
    }

    pub(crate) fn mass(&self) -> &[Option<MassProperties>] {
        &self.mass
    }

    pub(crate) fn fixed(&self) -> &[bool] {
        &self.fixed
    }

    pub(crate) fn membership(&self) -> &[Option<Box<Membership>>] {
        &self.membership
    }

    /// Motions, masses, fixed flags and memberships, writable (a fresh
    /// stamp; shapes do not change once added).
    pub(crate) fn all_mut(&mut self) -> BodyKindsMut<'_> {
        self.stamp = StateStamp::fresh();
        BodyKindsMut {
            motion: &mut self.motion,
            mass: &mut self.mass,
            fixed: &mut self.fixed,
            membership: &mut self.membership,
        }
    }

    /// Appends a body that is no member (a fresh stamp).
    pub(crate) fn push(&mut self, shape: Shape, motion: Motion, mass: Option<MassProperties>) {
        self.stamp = StateStamp::fresh();
        self.shapes.push(shape);
        self.fixed.push(motion != Motion::Dynamic);
        self.motion.push(motion);
        self.mass.push(mass);
        self.membership.push(None);
    }

    /// Room for exactly `additional` more bodies in each vector.
    pub(crate) fn try_reserve_exact(&mut self, additional: usize) -> Result<(), TryReserveError> {
        self.shapes.try_reserve_exact(additional)?;
        self.motion.try_reserve_exact(additional)?;
        self.mass.try_reserve_exact(additional)?;
        self.fixed.try_reserve_exact(additional)?;
        self.membership.try_reserve_exact(additional)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every writable access renews the stamp; reads and copies keep it.
    #[test]
    fn every_write_renews_the_stamp() {
        let mut s = BodyState::new();
        let mut last = s.stamp();
        let mut renewed = |s: &BodyState, what: &str| {
            assert_ne!(s.stamp(), last, "{what}");
            last = s.stamp();
        };
        s.push(Vec3::zeros(), Quat::identity(), Velocity6::ZERO);
        renewed(&s, "push");
        s.positions_mut();
        renewed(&s, "positions_mut");
        s.orientations_mut();
        renewed(&s, "orientations_mut");
        s.velocities_mut();
        renewed(&s, "velocities_mut");
        s.all_mut();
        renewed(&s, "all_mut");
        let mut other = Vec::new();
        s.swap_velocities(&mut other);
        renewed(&s, "swap_velocities");
        let copy = s.clone();
        let _ = (s.positions(), s.orientations(), s.velocities());
        s.try_reserve_exact(10).unwrap();
        assert_eq!(s.stamp(), last, "reads, clones and reservations");
        assert_eq!(copy.stamp(), s.stamp());
    }

    /// The same for what the bodies are.
    #[test]
    fn every_change_of_what_a_body_is_renews_its_stamp() {
        let mut k = BodyKinds::new();
        let first = k.stamp();
        k.push(Shape::sphere(0.01).unwrap(), Motion::Dynamic, None);
        let pushed = k.stamp();
        assert_ne!(pushed, first);
        k.all_mut();
        assert_ne!(k.stamp(), pushed);
        let changed = k.stamp();
        let copy = k.clone();
        let _ = (k.shapes(), k.motions(), k.mass(), k.fixed(), k.membership());
        k.try_reserve_exact(3).unwrap();
        assert_eq!(k.stamp(), changed);
        assert_eq!(copy.stamp(), changed);
    }
}

/// How a body moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Motion {
    /// Moved by forces and contacts.
    Dynamic,
    /// Moves with its prescribed velocity and angular velocity (a rotating
    /// drum, a moving wall); contacts cannot push it.
    Kinematic,
    /// Never moves.
    Static,
}

/// Where a member sits in its host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Membership {
    /// The host body.
    pub host: usize,
    /// Member centre in the host's body frame \[m\].
    pub offset: Vec3,
    /// Member orientation relative to the host: `q_member = q_host ⊗ q_rel`.
    pub relative_orientation: Quat,
}

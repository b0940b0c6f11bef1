//! The bodies' positions, orientations and velocities, held so that every
//! way of writing them renews a stamp: a stepper that left the state finite
//! can tell, from the stamp alone, that nobody has written it since and
//! pass over the per-body finiteness check of the next step
//! ([`crate::World::validate_state_unless`]).

use ndem_math::{Quat, Vec3, Velocity6};
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
}

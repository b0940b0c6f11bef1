//! Typed handles of a world's bodies, materials and joints.
//!
//! [`World::add_body`](crate::World::add_body) returns a [`BodyId`],
//! [`World::add_material`](crate::World::add_material) a [`MaterialId`],
//! [`World::add_joint`](crate::World::add_joint) a [`JointId`], and the bulk
//! insertions a [`BodyRange`]. The APIs that build or change a world take
//! them: [`BodyDesc`](crate::BodyDesc)'s material, the joint constructors'
//! bodies and [`Joint`](crate::Joint)'s fields, `set_position`,
//! `set_velocity`, `set_force`, `set_pair`, `set_joint_drive`, `attach`,
//! `detach`, and the per-body getters (`position`, `velocity`,
//! `orientation`, `inverse_mass`, `surface_velocity`, `user_force`,
//! `body_desc`); `ndem_reduce` adds `AggregateId`, and the scenes name
//! their gates, belts and machine parts by handle.
//!
//! A handle is the entry's place in the world's arrays, so
//! `positions()[id.index()]` is `position(id)`. The arrays, the membership
//! queries the stepper's loops use (`carrier`, `is_member`, `host_of`),
//! detected contacts (`body_a`, `body_b`) and the structs scene files write
//! (`TriaxialControl::walls`, `DriveSchedule::joints`) stay by index.
//! [`BodyId::from_index`] and its kin name an entry known by its index (a
//! scene file's, a loop over `0..world.len()`); the world checks every
//! handle it is given and answers a typed error for one it does not hold.

use std::fmt;

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(usize);

        impl $name {
            #[doc = concat!("The ", $what, " at `index` of its world's arrays.")]
            pub const fn from_index(index: usize) -> Self {
                Self(index)
            }

            #[doc = concat!("The ", $what, "'s index in its world's arrays.")]
            pub const fn index(self) -> usize {
                self.0
            }
        }

        impl From<$name> for usize {
            fn from(id: $name) -> usize {
                id.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($what, " {}"), self.0)
            }
        }
    };
}

handle!(
    /// A body of a [`World`](crate::World).
    BodyId,
    "body"
);
handle!(
    /// A material of a [`World`](crate::World).
    MaterialId,
    "material"
);
handle!(
    /// A joint of a [`World`](crate::World).
    JointId,
    "joint"
);

/// Consecutive bodies added together ([`World::add_bodies`](crate::World::add_bodies),
/// [`World::add_spheres`](crate::World::add_spheres)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BodyRange {
    start: usize,
    end: usize,
}

impl BodyRange {
    pub(crate) fn new(start: usize, end: usize) -> Self {
        Self { start, end }
    }

    /// How many bodies.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// `true` when no body was added.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// The first body, if any.
    pub fn first(&self) -> Option<BodyId> {
        (!self.is_empty()).then_some(BodyId(self.start))
    }

    /// Whether `body` is one of these.
    pub fn contains(&self, body: BodyId) -> bool {
        (self.start..self.end).contains(&body.0)
    }

    /// The bodies in the order they were added.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = BodyId> + use<> {
        (*self).into_iter()
    }
}

impl IntoIterator for BodyRange {
    type Item = BodyId;
    type IntoIter = std::iter::Map<std::ops::Range<usize>, fn(usize) -> BodyId>;

    fn into_iter(self) -> Self::IntoIter {
        (self.start..self.end).map(BodyId as fn(usize) -> BodyId)
    }
}

//! # ndem-collide
//!
//! Contact detection for nonsmooth DEM: the shapes of the papers' scenes,
//! a broad phase (hashed uniform grid for spheres, bounding-box queries for
//! the few large bodies and for the few spheres whose sweep would widen
//! every cell), closed-form narrow phases for the common pairs and
//! parry3d-f64 for every other pair, and key-sorted [`ContactSet`]s whose
//! [`ndem_math::ContactKey`]s persist while a contact persists.
//!
//! Conventions (`docs/theory.md`, "Conventions"): the normal points from body b to body a, the gap
//! is negative when overlapping, lever arms run from the body centres to the
//! contact point (midway between the surfaces). Pairs are ordered: two
//! spheres with `a < b`; a sphere and a larger body with the sphere as a;
//! two large bodies with `a < b`.
//!
//! Invariant: this crate knows nothing about masses, velocities, solvers or
//! time stepping, and no parry3d type appears in its public API.

pub mod contact;
mod convert;
pub mod error;
pub mod narrow;
pub mod shape;
mod slots;
pub mod world;

#[cfg(feature = "proptest-support")]
pub mod proptest_support;

pub use contact::{ContactPoint, ContactSet};
pub use error::CollideError;
pub use shape::Shape;
pub use world::{BodyView, CollisionSettings, CollisionWorld};

//! # ndem-math
//!
//! The math layer of ndem: spatial algebra for rigid bodies, mass properties,
//! deterministic contact frames, the persistent [`ContactKey`], the compact
//! constraint Jacobian blocks of one contact, and the mapping from material
//! data to the SPOOK regularization parameters.
//!
//! Conventions follow `docs/theory.md`, "Conventions":
//! the contact normal `n` points from body b to body a, lever arms `d_a`,
//! `d_b` run from the body centres to the contact point, the signed gap `φ`
//! is negative when overlapping and the overlap is `δ = max(0, −φ)`.
//!
//! Invariant: this crate knows nothing about shapes, collision detection,
//! solvers or time stepping. It depends only on nalgebra(-sparse) and thiserror.

pub mod error;
pub mod frame;
pub mod inertia;
pub mod jacobian;
pub mod locality;
pub mod material;
pub mod rng;
pub mod sparse;
pub mod spatial;

#[cfg(feature = "proptest-support")]
pub mod proptest_support;

pub use error::{MathError, SettingError};
pub use frame::{ContactFrame, ContactKey};
pub use inertia::{InverseMass, MassProperties};
pub use jacobian::{ContactJacobian, JacobianRow, ROWS_PER_CONTACT, RowKind};
pub use material::{
    ContactLaw, ContactParameters, Material, PairOverride, PairProperties, SpookSettings,
};
pub use spatial::{Velocity6, integrate_orientation};

/// 3-vector of f64 (SI units).
pub type Vec3 = nalgebra::Vector3<f64>;
/// 3×3 matrix of f64.
pub type Mat3 = nalgebra::Matrix3<f64>;
/// Unit quaternion orientation (body to world).
pub type Quat = nalgebra::UnitQuaternion<f64>;

//! # ndem-scenes
//!
//! Builders for the papers' scenes with their parameters as defaults
//! (`shared/papers/NOTES.md`, warm-starting paper Table 1), particle
//! emitters, and reusable measurements (column height error, pile height,
//! kinetic energy, coordination number, wall and floor forces).
//!
//! Invariant: `ndem-scenes` builds worlds and measures them through the
//! public APIs of `ndem-step` and `ndem-collide`; it knows nothing about
//! solver internals, command lines or output formats.

pub mod builders;
pub mod emitter;
pub mod measure;
pub mod rng;

pub use builders::{Scene, SceneError};
pub use emitter::Emitter;

//! # ndem-scenes
//!
//! Builders for the papers' scenes with their parameters as defaults
//! (warm-starting paper, Table 1; `docs/theory.md`), particle
//! emitters, and reusable measurements (column height error, pile height,
//! kinetic energy, coordination number, wall and floor forces).
//!
//! A scene file format (TOML through serde, [`SceneFile`]) describes any
//! scene: bodies, materials, joints, emitters, solver and warm-start choice,
//! time step, duration and outputs; every built-in scene can be written out
//! and read back to the same scene.
//!
//! Invariant: `ndem-scenes` builds worlds and measures them through the
//! public APIs of `ndem-step` and `ndem-collide`; it knows nothing about
//! solver internals, command lines or output writers.

pub mod builders;
pub mod choice;
pub mod collapse;
pub mod compatible;
pub mod conveyor;
pub mod emitter;
mod error;
pub mod excavator;
pub mod file;
pub mod measure;
pub mod motion;
mod params;
pub mod reduction;
pub mod rng;
mod scene;
pub mod schedule;
mod shape_spec;
pub mod triaxial;
mod walls;

pub use choice::{SolverChoice, WarmStartChoice};
pub use emitter::Emitter;
pub use error::SceneError;
pub use file::SceneFile;
pub use motion::KinematicMotion;
pub use scene::{ALL_CORES, OutputSpec, Scene};
pub use schedule::DriveSchedule;
pub use triaxial::{TriaxialControl, TriaxialSpec, TriaxialState};

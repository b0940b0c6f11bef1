//! # ndem
//!
//! Facade of the ndem workspace (nonsmooth DEM for granular matter) and the
//! library behind the `ndem` command: running scenes with progress,
//! statistics, ParaView (VTK XML) output, and checkpoint/restart.
//!
//! Invariant: `ndem` orchestrates the lower crates and owns file output and
//! the command line; it contains no physics.

pub use ndem_collide as collide;
pub use ndem_math as math;
pub use ndem_reduce as reduce;
pub use ndem_scenes as scenes;
pub use ndem_solve as solve;
pub use ndem_step as step;

pub mod checkpoint;
pub mod output;
pub mod run;

pub use run::{RunError, RunOptions, RunSummary, run_scene};

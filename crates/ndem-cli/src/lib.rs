//! # ndem-cli
//!
//! The library behind the `ndem` command: running a scene with progress,
//! streaming statistics, ParaView frames and checkpoints ([`run_scene`]).
//! Library users depend on the `ndem` facade instead, which does not build
//! the command line's dependencies (`clap`, `indicatif`,
//! `tracing-subscriber`).
//!
//! Invariant: `ndem-cli` orchestrates the facade and owns the command line
//! and the run loop's files; it contains no physics.

pub mod allocator;
#[cfg(feature = "mpi")]
pub mod distributed;
pub mod fuzz;
pub mod progress;
pub mod run;

pub use run::{FolderPolicy, ProgressStyle, RunError, RunOptions, RunSummary, run_scene};

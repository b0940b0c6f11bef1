//! # ndem-testkit
//!
//! Seeded contact problems for tests, benches and solver experiments,
//! apart from the solver library, which does not need them:
//!
//! - [`generate`]: sphere packings with the warm-starting paper's SPOOK
//!   parameters, joint trees, skewed contacts, random sparse and global
//!   problems, manufactured local problems with a known solution;
//! - `strategies` (feature `proptest-support`): proptest strategies over
//!   them.
//!
//! `ndem-solve`'s own unit tests compile these two files into that crate
//! (`#[path]` modules under `cfg(test)`, where `ndem_solve` names the crate
//! itself), so that they build problems of the crate's own types; every
//! other user depends on this crate.
//!
//! Invariant: `ndem-testkit` builds problems through `ndem-solve`'s public
//! API only, and only tests, benches and `xtask` depend on it.

pub mod generate;
#[cfg(feature = "proptest-support")]
pub mod strategies;

pub use generate::*;

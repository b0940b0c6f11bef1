//! # ndem-par
//!
//! The plumbing under the solver's and the stepper's hot loops, apart from
//! their mathematics:
//!
//! - [`blocks`]: per-item passes split into consecutive blocks on scoped
//!   threads, whose results come back in block order so that the caller
//!   combines them as a serial loop would (the result does not depend on
//!   the thread count), and the check that a thread count can be started;
//! - [`capacity`]: growth of the vectors a stepper reuses from step to
//!   step;
//! - [`prefetch`]: a cache hint for bodies a sweep is about to read.
//!
//! Invariant: `ndem-par` knows nothing of contacts, bodies or solvers; it
//! depends on the standard library and `thiserror` only.

pub mod blocks;
pub mod capacity;
pub mod prefetch;

pub use blocks::ThreadsRefused;

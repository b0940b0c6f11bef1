//! # ndem-benches
//!
//! The workspace's criterion benchmarks, in one place (`benches/benches/`):
//!
//! * `pgs`: PGS sweeps on sphere packings, ns per contact-iteration;
//! * `collide`: collision detection, ns per particle per pass;
//! * `smooth`: the smooth DEM step, ns per particle-step.
//!
//! Run with `cargo bench -p ndem-benches --bench <name>`.
//!
//! Invariant: `ndem-benches` only measures; it has no library code and no
//! crate depends on it.

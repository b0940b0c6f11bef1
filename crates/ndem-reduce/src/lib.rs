//! # ndem-reduce
//!
//! Adaptive model reduction for nonsmooth DEM (Servin, Wang et al.,
//! "Adaptive model reduction for nonsmooth discrete element simulation",
//! see `docs/reduction.md`): particles that move together as a rigid body
//! are merged into a rigid aggregate with few degrees of freedom, and split
//! back into particles where contact events or sensors say the material is
//! about to flow.
//!
//! * [`ReductionSettings`]: the paper's Table 2 thresholds, named, with its
//!   values as defaults and `validate()`.
//! * [`aggregate_state`]: mass properties and motion of an aggregate (eqs.
//!   6-10 with each particle's own inertia: merging and splitting conserve
//!   mass, linear and angular momentum).
//! * [`Reducer`]: the merge and split steps as `ndem_step::ModelHooks`
//!   (merge after the continuous solve with `v_{i+1}`, split after contact
//!   detection), the explicit [`Reducer::merge_bodies`] /
//!   [`Reducer::split`] API, and per-step [`ReductionStats`] (reduction
//!   level `h`, aggregates, merges, splits, time).
//!
//! Invariant: the reducer changes which bodies carry degrees of freedom,
//! never positions or momenta: every merge and split conserves mass, linear
//! and angular momentum; aggregates are ordinary dynamic bodies to the
//! stepper and solvers.

pub mod aggregate;
pub mod criteria;
pub mod error;
pub mod hooks;
pub mod reducer;
pub mod settings;
pub mod stats;
pub mod trial;

pub use aggregate::{AggregateState, FirstMoments, SecondMoments, aggregate_state};
pub use error::ReduceError;
pub use reducer::{Aggregate, AggregateId, Reducer, ReducerState};
pub use settings::{
    ContactSplit, MergeThresholds, ReductionSettings, SensorMount, SensorSplit, TrialSplit,
};
pub use stats::ReductionStats;

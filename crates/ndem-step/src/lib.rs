//! # ndem-step
//!
//! Bodies and the SPOOK time stepper of nonsmooth DEM (warm-starting paper,
//! Algorithm 1): contact detection, impact stage with Newton restitution,
//! continuous stage with a swappable [`ndem_solve::Solver`] and
//! [`ndem_solve::WarmStart`], bilateral joints and motors, and the
//! model-reduction hook points of the adaptive-model-reduction paper.
//!
//! Invariant: the stepper talks to solvers only through
//! [`ndem_solve::ContactProblem`]; it knows no solver internals, and it
//! knows nothing about scenes, file formats or output.

pub mod body;
pub mod error;
pub mod guard;
pub mod handles;
pub mod joint;
pub mod member;
pub mod reach;
mod settings;
mod stages;
pub mod state;
pub mod stepper;
pub mod verification;

pub use body::{BodyDesc, BodySums, Motion, World};
pub use error::StepError;
pub use guard::{ResidualCheck, ScenePart};
pub use handles::{BodyId, BodyRange, JointId, MaterialId};
pub use joint::{DRIVE_ROW, Drive, Joint, JointKind, Motor};
pub use member::Membership;
pub use stages::{partly_unfolded_problem, unfolded_problem};
pub use state::StateStamp;
pub use stepper::{
    ContactForce, DetectedView, ImpactScope, JointReaction, ModelHooks, NoHooks, SolvedView,
    StageTimes, StepSettings, StepStats, Stepper,
};

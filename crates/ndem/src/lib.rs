//! # ndem
//!
//! Nonsmooth DEM (contact dynamics) for granular matter: the one import path
//! over the ndem crates. `use ndem::prelude::*;` brings what it takes to
//! build a world by hand, step it, pose and solve contact problems with any
//! solver, and swap warm-start policies; the crates themselves are
//! re-exported under short names ([`math`], [`collide`], [`solve`],
//! [`fclib`], [`step`], [`reduce`], [`smooth`], [`scenes`]).
//!
//! Besides, this crate holds what a program needs around a run: ParaView
//! (VTK XML) output ([`output`]) and checkpoints ([`checkpoint`]). The
//! command line (`ndem run …`) lives in `ndem-cli`, so library users do not
//! build `clap`, `indicatif` or `tracing-subscriber`.
//!
//! Two ways to advance time, side by side:
//! * [`scenes::Scene::step`]: advances a scene **with its drivers**
//!   (emitters, drive schedules, the triaxial servo) and then the world;
//!   what `ndem run` does.
//! * [`step::Stepper::step`]: advances a bare [`step::World`] by one SPOOK
//!   step (detection, impact stage, continuous stage); nothing else.
//!
//! Invariant: `ndem` re-exports and writes files; it contains no physics.

pub use ndem_collide as collide;
pub use ndem_fclib as fclib;
pub use ndem_math as math;
pub use ndem_par as par;
pub use ndem_reduce as reduce;
pub use ndem_scenes as scenes;
pub use ndem_smooth as smooth;
pub use ndem_solve as solve;
pub use ndem_step as step;

pub mod checkpoint;
pub mod error;
pub mod output;

pub use error::Error;

/// What most programs need, in one import.
pub mod prelude {
    pub use ndem_collide::Shape;
    pub use ndem_math::{Material, Quat, SpookSettings, Vec3, Velocity6};
    pub use ndem_scenes::{Scene, SceneFile, SolverChoice, WarmStartChoice, builders};
    pub use ndem_solve::{
        Apgd, ApgdSettings, ColdStart, ContactProblem, HistoryWarmStart, IterationRecord,
        LocalProblem, LocalSolver, ModelWarmStart, Observer, PgsSettings, PgsVariant,
        ProjectedGaussSeidel, SemismoothNewton, SolveReport, SolveTask, Solver, SolverStatus,
        Stopping, WarmStart,
    };
    pub use ndem_step::{
        BodyDesc, BodyId, BodyRange, JointId, MaterialId, Motion, StepSettings, StepStats, Stepper,
        World,
    };

    pub use crate::Error;
}

//! Typed errors of the stepper.

use ndem_collide::CollideError;
use ndem_math::MathError;
use ndem_solve::SolveError;
use thiserror::Error;

/// Why a world could not be built or a step could not be taken. When a step
/// fails, the world is left exactly as it was before the step.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StepError {
    /// Bad material or mass data.
    #[error(transparent)]
    Math(#[from] MathError),
    /// Bad geometry or collision input.
    #[error(transparent)]
    Collide(#[from] CollideError),
    /// Bad contact problem or a solver failure.
    #[error(transparent)]
    Solve(#[from] SolveError),
    /// The system refused the threads a setting asks for.
    #[error(transparent)]
    Threads(#[from] ndem_par::ThreadsRefused),
    /// A body's state is NaN or infinite.
    #[error("body {body}: `{field}` is not finite")]
    NonFiniteState {
        /// Field name.
        field: &'static str,
        /// Body index.
        body: usize,
    },
    /// A setting outside its range.
    #[error("invalid setting `{field}`: {reason}")]
    InvalidSettings {
        /// Field name.
        field: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// A dynamic body whose shape has no mass properties from its density
    /// alone (a convex hull, a triangle mesh).
    #[error(
        "body {body}: a dynamic {shape} needs its mass and principal inertia given \
         (`mass`, `inertia`; the body frame is taken as its principal frame at its \
         centre of mass); mass follows from the density only for spheres, boxes and cylinders"
    )]
    MassPropertiesNeeded {
        /// Body index.
        body: usize,
        /// The shape's kind.
        shape: &'static str,
    },
    /// The world has no dynamic body.
    #[error("the scene has no dynamic body")]
    EmptyScene,
    /// A body refers to a material that does not exist.
    #[error("body {body} refers to material {material}, but there are {count} materials")]
    UnknownMaterial {
        /// Body index.
        body: usize,
        /// Material index.
        material: usize,
        /// Number of materials.
        count: usize,
    },
    /// A body index past the world's bodies.
    #[error("`{field}`: body {body} does not exist ({count} bodies)")]
    UnknownBody {
        /// What was asked for the body.
        field: &'static str,
        /// Body index.
        body: usize,
        /// Number of bodies.
        count: usize,
    },
    /// A joint refers to a body that does not exist or joins a body to itself.
    #[error("joint {joint}: invalid bodies {body_a} and {body_b}")]
    InvalidJoint {
        /// Joint index.
        joint: usize,
        /// First body.
        body_a: usize,
        /// Second body.
        body_b: usize,
    },
    /// Another part of a decomposed scene ([`crate::ScenePart`]) failed
    /// this step before its solve; this part stopped there with it, so
    /// that no part goes on to the solve's exchanges alone.
    #[error("step {step} (t = {time} s): another part of the scene failed")]
    FailedElsewhere {
        /// Number of the step that failed.
        step: u64,
        /// Simulated time at the start of the step.
        time: f64,
    },
    /// A model hook (e.g. model reduction) failed; the world may hold the
    /// hook's changes up to the failure.
    #[error("step {step}: model {stage} failed: {reason}")]
    ModelHook {
        /// "split" or "merge".
        stage: &'static str,
        /// Number of the step.
        step: u64,
        /// What failed.
        reason: String,
    },
    /// A body cannot become (or stop being) a member of a host.
    #[error("body {member} cannot be a member of body {host}: {reason}")]
    InvalidMembership {
        /// The member.
        member: usize,
        /// The host (`usize::MAX` when not applicable).
        host: usize,
        /// Why.
        reason: &'static str,
    },
    /// A contact between two bodies that no impulse can move reached the
    /// solver (e.g. injected by a model hook).
    #[error("contact between bodies {body_a} and {body_b}, both of infinite mass")]
    InfiniteMassPair {
        /// First body.
        body_a: usize,
        /// Second body.
        body_b: usize,
    },
    /// A solver failed in one stage of a step.
    #[error("step {step} (t = {time} s), {stage} stage: {source}")]
    StageFailed {
        /// "impact" or "continuous".
        stage: &'static str,
        /// Number of the step that failed (1 for the first).
        step: u64,
        /// Simulated time at the start of the step.
        time: f64,
        /// The solver's error.
        source: SolveError,
    },
    /// The solve returned a non-finite velocity.
    #[error(
        "step {step} (t = {time} s): the {stage} stage produced a non-finite velocity for body {body}"
    )]
    NonFiniteVelocity {
        /// "impact", "warm start" or "continuous".
        stage: &'static str,
        /// Body index.
        body: usize,
        /// Number of the step that failed.
        step: u64,
        /// Simulated time at the start of the step.
        time: f64,
    },
    /// Two bodies overlap by more than the smaller radius of curvature at
    /// their contact: the contact law (Hertz or linear, a small-strain
    /// model) no longer describes them; the bodies have passed through
    /// each other (e.g. a load no contact stiffness can carry).
    #[error(
        "step {step} (t = {time} s): bodies {body_a} and {body_b} overlap by {overlap:e} m, more than the radius {radius:e} m at their contact: the contact law no longer holds (are the densities, loads or time step sensible?)"
    )]
    OverlapBeyondRadius {
        /// Number of the step that failed.
        step: u64,
        /// Simulated time at the start of the step.
        time: f64,
        /// First body.
        body_a: usize,
        /// Second body.
        body_b: usize,
        /// Overlap `δ` \[m\].
        overlap: f64,
        /// The smaller radius of curvature \[m\].
        radius: f64,
    },
    /// The step ended with more mechanical energy than the scene could have
    /// supplied (see `StepSettings::energy_guard`): the bodies blew up.
    #[error(
        "step {step} (t = {time} s): the bodies blew up: kinetic plus gravitational energy went from {before:e} J to {after:e} J, above the {bound:e} J the scene may hold: the most it ever held (elastic energy included) plus all the work its constraints and drives could have supplied"
    )]
    EnergyGrowth {
        /// Number of the step that failed.
        step: u64,
        /// Simulated time at the start of the step.
        time: f64,
        /// Kinetic, gravitational and elastic energy before the step \[J\].
        before: f64,
        /// The same after the step \[J\].
        after: f64,
        /// The bound it exceeded \[J\].
        bound: f64,
    },
}

ndem_math::setting_error!(StepError);

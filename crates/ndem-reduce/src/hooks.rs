//! The order in which a model reduction runs inside a step, shared by every
//! implementation of its passes ([`crate::Reducer`] in one process, the
//! distributed one of `ndem-mpi`): the sensors moved with their bodies and
//! the split after contact detection, the
//! merge after the solve from [`ReductionSettings::start_time`] on, then the
//! counts of the step's statistics.

use crate::{ReduceError, ReductionSettings, ReductionStats};
use ndem_collide::ContactSet;
use ndem_step::{DetectedView, SolvedView, StepError, World};
use std::time::Instant;

/// The passes of a model reduction that [`after_detection`] and
/// [`after_solve`] run as a stepper's [`ndem_step::ModelHooks`].
pub trait ReductionPasses {
    /// Sets the pose of every sensor that moves with a body from the
    /// body's pose in `world` ([`ReductionSettings::follow_bodies`]).
    fn follow_sensors(&mut self, world: &World) -> Result<(), ReduceError>;

    /// The split (paper section 3.2): members whose contacts or sensors say
    /// the material is about to flow are freed.
    fn split_step(
        &mut self,
        world: &mut World,
        contacts: &ContactSet,
        detected: &DetectedView<'_>,
    ) -> Result<(), ReduceError>;

    /// The merge (paper section 3.1): resting particles and aggregates that
    /// move together join one aggregate.
    fn merge_step(&mut self, world: &mut World, solved: &SolvedView<'_>)
    -> Result<(), ReduceError>;

    /// Counts particles, free particles and aggregates into the statistics.
    fn count(&mut self, world: &World);

    /// The settings the passes run with.
    fn settings(&self) -> &ReductionSettings;

    /// The statistics of the step and the count of steps begun.
    fn progress(&mut self) -> (&mut ReductionStats, &mut u64);
}

/// Begins a step and runs the split: what
/// [`ndem_step::ModelHooks::after_detection`] does for a reduction.
pub fn after_detection(
    passes: &mut impl ReductionPasses,
    world: &mut World,
    contacts: &ContactSet,
    detected: &DetectedView<'_>,
) -> Result<(), StepError> {
    let t = Instant::now();
    let (stats, step) = passes.progress();
    stats.start_step();
    *step += 1;
    let step = *step;
    passes
        .follow_sensors(world)
        .map_err(|e| e.in_hook("split", step))?;
    passes
        .split_step(world, contacts, detected)
        .map_err(|e| e.in_hook("split", step))?;
    passes.progress().0.split_time = t.elapsed();
    Ok(())
}

/// Runs the merge once the start time is reached, then the counts: what
/// [`ndem_step::ModelHooks::after_solve`] does for a reduction.
pub fn after_solve(
    passes: &mut impl ReductionPasses,
    world: &mut World,
    solved: &SolvedView<'_>,
) -> Result<(), StepError> {
    let t = Instant::now();
    if solved.time >= passes.settings().start_time {
        let step = *passes.progress().1;
        passes
            .merge_step(world, solved)
            .map_err(|e| e.in_hook("merge", step))?;
    }
    passes.count(world);
    passes.progress().0.merge_time = t.elapsed();
    Ok(())
}

/// Implements [`ndem_step::ModelHooks`] for a type of [`ReductionPasses`]
/// by [`after_detection`] and [`after_solve`]; generic parameters go in
/// brackets: `reduction_hooks!(impl [C: Clone] for Mine<C>)`.
#[macro_export]
macro_rules! reduction_hooks {
    (impl $([$($generics:tt)*])? for $ty:ty) => {
        impl $(<$($generics)*>)? $crate::hooks::private::ModelHooks for $ty {
            fn after_detection(
                &mut self,
                world: &mut $crate::hooks::private::World,
                contacts: &mut $crate::hooks::private::ContactSet,
                detected: &$crate::hooks::private::DetectedView<'_>,
            ) -> Result<(), $crate::hooks::private::StepError> {
                $crate::hooks::after_detection(self, world, contacts, detected)
            }

            fn after_solve(
                &mut self,
                world: &mut $crate::hooks::private::World,
                solved: &$crate::hooks::private::SolvedView<'_>,
            ) -> Result<(), $crate::hooks::private::StepError> {
                $crate::hooks::after_solve(self, world, solved)
            }
        }
    };
}

/// The paths [`reduction_hooks!`] names, for crates that do not depend on
/// `ndem-step` and `ndem-collide` themselves.
#[doc(hidden)]
pub mod private {
    pub use ndem_collide::ContactSet;
    pub use ndem_step::{DetectedView, ModelHooks, SolvedView, StepError, World};
}

//! Step 1 of compatible contact dynamics on a packing at rest
//! (compatible-contact-dynamics paper, section 7; `docs/theory.md`, "Compatible
//! contact dynamics"): a contact-dynamics solve whose velocity change is
//! the static load.
//!
//! A rigid, over-coordinated packing settled with a fixed number of sweeps
//! keeps creeping: its last step carries residual accelerations in the load
//! `M(v⁺ − v*)/Δt` and leaves some touching pairs open by fractions of a
//! micrometre, and the truss problem takes both at face value. The static
//! solve removes both: the settled positions at rest (all velocities zero),
//! a contact margin so that touching pairs are in the network, no SPOOK
//! position correction (`Υ_n → 0`), and APGD to a tight tolerance.

use crate::builders::{Scene, SceneError};
use ndem_math::Velocity6;
use ndem_solve::{Apgd, ApgdSettings, ColdStart, ContactProblem, Stopping};
use ndem_step::{StepError, StepStats, Stepper};

/// Settings of [`static_solve`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StaticSolveSettings {
    /// Contact margin \[m\]: pairs closer than this are in the network
    /// (choose it far below the gaps of pairs that should not touch).
    pub margin: f64,
    /// APGD iteration cap and projected-gradient tolerance.
    pub stopping: Stopping,
}

impl Default for StaticSolveSettings {
    fn default() -> Self {
        Self {
            margin: 1e-3 * 0.5 * crate::builders::D,
            stopping: Stopping::to_tolerance(50_000, 1e-12),
        }
    }
}

/// The static solve of a settled scene: the scene one step later (at rest,
/// positions unchanged up to the solve's residual) and the stepper whose
/// [`Stepper::last_problem`] holds the problem and multipliers of step 1.
pub struct StaticSolve {
    /// The scene after the solve.
    pub scene: Scene,
    /// The stepper that took the step.
    pub stepper: Stepper,
    /// The step's statistics (iterations, residuals).
    pub stats: StepStats,
}

impl StaticSolve {
    /// The problem and multipliers of the static step, and the velocities
    /// `v⁺ = v* + M⁻¹Gᵀλ` they give (the input of
    /// [`ndem_solve::compatible_forces`]).
    pub fn step_one(&self) -> Option<(&ContactProblem, &[f64], Vec<Velocity6>)> {
        let (problem, lambda) = self.stepper.last_problem()?;
        let mut velocity = vec![Velocity6::ZERO; problem.body_count()];
        problem.velocity_from(lambda, &mut velocity).ok()?;
        Some((problem, lambda, velocity))
    }
}

/// Solves the contact problem of `settled` at rest (see the module docs).
pub fn static_solve(
    settled: &Scene,
    settings: &StaticSolveSettings,
) -> Result<StaticSolve, SceneError> {
    if !(settings.margin.is_finite() && settings.margin >= 0.0) {
        return Err(SceneError::Invalid {
            field: "margin",
            reason: format!("{} is not a finite value >= 0", settings.margin),
        });
    }
    let mut scene = settled.clone();
    for v in scene.world.state_mut().2 {
        *v = Velocity6::ZERO;
    }
    scene.settings.margin = settings.margin;
    scene.settings.spook.relaxation_steps = 1e12;
    let apgd = Apgd::new(ApgdSettings {
        stopping: settings.stopping,
        ..ApgdSettings::default()
    })
    .map_err(StepError::from)?;
    let mut stepper = Stepper::new(scene.settings, Box::new(apgd), Box::new(ColdStart))?;
    let stats = scene.step(&mut stepper)?;
    Ok(StaticSolve {
        scene,
        stepper,
        stats,
    })
}

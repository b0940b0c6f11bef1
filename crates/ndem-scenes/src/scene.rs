//! A scene: a world with its step settings, drivers and run length.

use crate::choice::{SolverChoice, WarmStartChoice};
use crate::emitter::Emitter;
use crate::error::SceneError;
use crate::motion::KinematicMotion;
use crate::params::at_most_max_iterations;
use crate::schedule::DriveSchedule;
use crate::triaxial::control::TriaxialControl;
use ndem_math::SettingError;
use ndem_step::{Motion, StepError, StepSettings, StepStats, Stepper, World};
use serde::{Deserialize, Serialize};

/// A world with its step settings, emitters and default run length.
#[derive(Debug, Clone)]
pub struct Scene {
    /// Name (built-in scene name or file stem).
    pub name: String,
    /// Bodies, materials, gravity, joints.
    pub world: World,
    /// Step settings.
    pub settings: StepSettings,
    /// Emitters, run before every step.
    pub emitters: Vec<Emitter>,
    /// Default simulated duration \[s\].
    pub duration: f64,
    /// Default iterations per step (N_it).
    pub iterations: usize,
    /// Continuous-stage solver.
    pub solver: SolverChoice,
    /// Warm-start policy.
    pub warm_start: WarmStartChoice,
    /// Servo of a triaxial cell (motor targets set before every step).
    pub triaxial: Option<TriaxialControl>,
    /// Adaptive model reduction, if on.
    pub reduction: Option<ndem_reduce::ReductionSettings>,
    /// Position targets of driven joints over time (a machine's control
    /// signal), applied before every step.
    pub schedule: Option<DriveSchedule>,
    /// Prescribed velocities of kinematic bodies over time (a gate raised
    /// once the bed has settled), applied before every step.
    pub motions: Vec<KinematicMotion>,
    /// The reduction `ndem run --reduce` switches on when `reduction` is
    /// `None`: what the scene needs to keep the full run's physics (the
    /// collapse's trial split); `None` for the paper's Table 2 with the
    /// contact split ([`ndem_reduce::ReductionSettings::default`]).
    pub reduce_preset: Option<ndem_reduce::ReductionSettings>,
    /// Why reduction does not keep this scene's physics, where it is
    /// known not to (measured against the full run; `ndem run --reduce`
    /// prints it); `None` where nothing is known against it.
    pub reduce_caveat: Option<String>,
    /// What a run writes and how often (`[output]` of scene files):
    /// frames every `frame_every` steps, a statistics line every
    /// `stats_every` steps.
    pub output: OutputSpec,
    /// Threads of the parts of a step that can use several (contact
    /// detection and the [`SolverChoice::PgsColoured`] and
    /// [`SolverChoice::PgsDirectColoured`] sweeps);
    /// [`ALL_CORES`] (0) for every core. Results do not depend on it.
    pub threads: usize,
}

/// `threads = 0`: every core of the machine.
pub const ALL_CORES: usize = 0;

impl Scene {
    /// A scene of `world` called `name` with the papers' step settings
    /// (`StepSettings::papers`), 1 s long, 50 PGS iterations per step with
    /// history warm starting, every core, no drivers and the default
    /// output; set the rest with struct-update syntax,
    /// `Scene { duration: 3.0, ..Scene::new("column", world) }`.
    pub fn new(name: impl Into<String>, world: World) -> Self {
        Self {
            name: name.into(),
            world,
            settings: StepSettings::papers(),
            emitters: Vec::new(),
            duration: 1.0,
            iterations: 50,
            solver: SolverChoice::Pgs,
            warm_start: WarmStartChoice::History,
            triaxial: None,
            reduction: None,
            schedule: None,
            motions: Vec::new(),
            reduce_preset: None,
            reduce_caveat: None,
            output: OutputSpec::default(),
            threads: ALL_CORES,
        }
    }

    /// Runs the emitters, the triaxial servo, the drive schedule and the
    /// kinematic motions, then one step (only the
    /// clock advances while emitters have not yet produced a body).
    pub fn step(&mut self, stepper: &mut Stepper) -> Result<StepStats, SceneError> {
        for e in &mut self.emitters {
            e.emit(&mut self.world, self.settings.dt)?;
        }
        if let Some(c) = &mut self.triaxial {
            c.apply(&mut self.world, stepper.time())?;
        }
        if let Some(s) = &self.schedule {
            s.apply(&mut self.world, stepper.time() + self.settings.dt)?;
        }
        for m in &self.motions {
            m.apply(&mut self.world, stepper.time(), self.settings.dt)?;
        }
        if !self.emitters_done() && !self.world.motions().contains(&Motion::Dynamic) {
            // nothing to simulate until the emitters produce a body: only
            // the clock advances
            let (time, step) = (stepper.time() + self.settings.dt, stepper.step_count() + 1);
            stepper.set_clock(time, step);
            return Ok(StepStats {
                step,
                time,
                ..StepStats::default()
            });
        }
        Ok(stepper.step(&mut self.world)?)
    }

    /// A stepper with the scene's settings, solver and warm start.
    pub fn stepper(&self) -> Result<Stepper, SceneError> {
        SceneError::require(
            self.iterations != 0,
            "run.iterations",
            "must be at least 1: no iteration produces no contact forces",
        )?;
        at_most_max_iterations("run.iterations", self.iterations)?;
        if self.settings.impact_stage {
            at_most_max_iterations("run.impact_iterations", self.settings.impact_iterations)?;
        }
        if let Err(reason) = ndem_par::blocks::count_allowed(self.threads) {
            return Err(SceneError::Invalid {
                field: "run.threads",
                reason: format!("{} threads: {reason}", self.threads),
            });
        }
        // the solver's, assembly's and detection's threads: one count
        ndem_par::blocks::check_threads_start("run.threads", self.threads)?;
        let solver = self
            .solver
            .build_on(self.iterations, self.threads)
            .map_err(StepError::from)?;
        // detection and assembly on `threads` threads (the same
        // contact set, the same problems)
        let settings = StepSettings {
            detection_threads: self.threads,
            assembly_threads: self.threads,
            ..self.settings
        };
        let mut stepper = Stepper::new(settings, solver, self.warm_start.build())?;
        if let Some(impact) = self
            .solver
            .impact_solver(settings.impact_iterations, self.threads)
            .map_err(StepError::from)?
        {
            stepper.set_impact_solver(impact);
        }
        if let Some(r) = &self.reduction {
            let reducer =
                ndem_reduce::Reducer::new(r.clone()).map_err(|e| SceneError::Invalid {
                    field: "reduction",
                    reason: e.to_string(),
                })?;
            stepper.set_hooks(Box::new(reducer));
        }
        Ok(stepper)
    }

    /// Switches reduction on as `ndem run --reduce` does: the scene's
    /// [`Scene::reduce_preset`] (or Table 2 with the contact split) unless
    /// `reduction` is already set.
    pub fn switch_on_reduction(&mut self) {
        if self.reduction.is_none() {
            self.reduction = Some(self.reduce_preset.clone().unwrap_or_default());
        }
    }

    /// [`Self::switch_on_reduction`] for a run on MPI ranks: a preset whose
    /// trial solves part of the unfolded model
    /// ([`ndem_reduce::TrialSplit::is_partial`], which needs one process's
    /// contacts) solves all of it ([`ndem_reduce::TrialSplit::whole`]), and
    /// a preset that merges with static geometry
    /// ([`ndem_reduce::ReductionSettings::merge_with_static`], static hosts in one
    /// process) does not. Returns whether it changed either; a
    /// `[reduction]` table is left as written (a distributed run refuses
    /// those settings, naming the field).
    pub fn switch_on_distributed_reduction(&mut self) -> bool {
        let preset = self.reduction.is_none();
        self.switch_on_reduction();
        let Some(r) = self.reduction.as_mut().filter(|_| preset) else {
            return false;
        };
        let mut changed = std::mem::replace(&mut r.merge_with_static, false);
        if let Some(t) = r.trial_split.as_mut().filter(|t| t.is_partial()) {
            *t = t.whole();
            changed = true;
        }
        changed
    }

    /// `true` when every emitter has emitted all its particles.
    pub fn emitters_done(&self) -> bool {
        self.emitters.iter().all(Emitter::done)
    }
}

/// `[output]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Write a VTK frame every this many steps (0: none).
    pub frame_every: usize,
    /// Append a line to the statistics CSV every this many steps.
    pub stats_every: usize,
}

impl Default for OutputSpec {
    fn default() -> Self {
        Self {
            frame_every: 100,
            stats_every: 1,
        }
    }
}

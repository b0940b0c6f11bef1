//! The SPOOK stepper (warm-starting paper, Algorithm 1), with an impact
//! stage and the hook points of the adaptive-model-reduction paper's
//! Algorithm 1.
//!
//! One step of length `Δt`:
//! 1. contact detection at the current positions;
//! 2. model-refinement hook (split), [`ModelHooks::after_detection`];
//! 3. impact stage: if some contact approaches faster than `v_imp`, solve
//!    `G_n v⁺ ≥ −e G_n v⁻` (complementary) for those contacts and
//!    `G v⁺ = 0` within bounds (normal rows `≥ 0`) for the rest, from the
//!    current velocities, with no warm start;
//! 4. continuous stage: the SPOOK MCP with `v* = v + Δt M⁻¹ f_ext`, warm
//!    started by the chosen policy and solved by the chosen solver;
//! 5. model-reduction hook (merge), [`ModelHooks::after_solve`];
//! 6. position update `x ← x + Δt v`, `q ← exp(Δt ω/2) ⊗ q`.
//!
//! All work is done on scratch copies; the world is written only when the
//! whole step has succeeded, so a failed step leaves it unchanged.

use crate::guard;
pub use crate::settings::{ImpactScope, StepSettings};
use crate::stages;
use crate::{Motion, StepError, World};
use ndem_collide::{CollisionSettings, CollisionWorld, ContactSet};
use ndem_math::{ContactKey, ContactLaw, Vec3, Velocity6, integrate_orientation};
use ndem_par::blocks::position_in_parts;
use ndem_par::capacity::{refill_in_parts, resize_for_overwrite};
use ndem_solve::{
    ColdStart, ContactProblem, HistoryWarmStart, ImpulseHistory, NoObserver, ProblemStorage,
    ProjectedGaussSeidel, ResidualEvaluator, ResidualStats, SolveReport, Solver, SolverStatus,
    Stopping, WarmStart,
};
use std::time::{Duration, Instant};

mod forces;
mod impact_set;
mod solve;

/// What the merge hook sees after the continuous solve.
#[derive(Debug, Clone, Copy)]
pub struct SolvedView<'a> {
    /// Contacts of this step (member contacts included).
    pub contacts: &'a ContactSet,
    /// The continuous-stage problem.
    pub problem: &'a ContactProblem,
    /// Its multipliers (impulses).
    pub lambda: &'a [f64],
    /// Contact-set index of each contact of `problem` (contacts inside one
    /// host are not in the problem).
    pub contact_index: &'a [u32],
    /// Body velocities at the start of the step, `v_i`.
    pub previous_velocity: &'a [Velocity6],
    /// Time step.
    pub dt: f64,
    /// Simulated time at the start of the step \[s\].
    pub time: f64,
}

/// What the split hook sees after contact detection.
#[derive(Debug, Clone, Copy)]
pub struct DetectedView<'a> {
    /// The stepper's settings (to build trial problems).
    pub settings: &'a StepSettings,
    /// Impulses of the last step by contact key (contacts inside a host
    /// keep the impulses they had when they were last solved); `None` when
    /// the warm-start policy keeps no history.
    pub history: Option<&'a ImpulseHistory>,
    /// Steps completed before this one ([`Stepper::step_count`]; restored
    /// with the clock, so it continues across checkpoints).
    pub step: u64,
}

/// Hook points of the adaptive-model-reduction paper's Algorithm 1. The
/// default methods do nothing.
pub trait ModelHooks: Send + std::any::Any {
    /// After contact detection, before the impact stage (line 6: model
    /// refinement, i.e. split aggregates). Positions are `x_i`, velocities
    /// `v_i`.
    fn after_detection(
        &mut self,
        _world: &mut World,
        _contacts: &mut ContactSet,
        _detected: &DetectedView<'_>,
    ) -> Result<(), StepError> {
        Ok(())
    }
    /// After the continuous solve and the velocity update, before the
    /// position update (lines 12-13: co-move, then model reduction, i.e.
    /// merge resting bodies). Positions are `x_i`, velocities `v_{i+1}`
    /// (members already co-moving with their hosts).
    fn after_solve(
        &mut self,
        _world: &mut World,
        _solved: &SolvedView<'_>,
    ) -> Result<(), StepError> {
        Ok(())
    }
}

/// No model reduction.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;
impl ModelHooks for NoHooks {}

/// Wall-clock time per stage of one step.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StageTimes {
    /// Contact detection.
    pub detection: Duration,
    /// The continuous problem's assembly (Jacobians, Σ, Υ and `b`;
    /// warm-starting paper, Algorithm 1 lines 5 and 7).
    pub assembly: Duration,
    /// Everything before the continuous assembly from the detected
    /// contacts on: the solver contacts' data pass (the overlap check,
    /// contacts inside one host left out), then the impact stage
    /// (Algorithm 1 line 6): its count of impacting contacts or its own
    /// problem's assembly, its solve, and the energy guard's figures of
    /// that problem. On a step without an impacting contact, the data pass
    /// and the count (or an assembly dropped when the last step's impacts
    /// suggested one).
    pub impact: Duration,
    /// Warm start and continuous solve (its preparation and final
    /// residual check included).
    pub continuous: Duration,
    /// Model hooks: split (after detection) and merge (after the solve).
    pub reduction: Duration,
    /// The whole step.
    pub total: Duration,
}

/// Statistics of one step.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepStats {
    /// Step index (1 for the first step).
    pub step: u64,
    /// Time at the end of the step \[s\].
    pub time: f64,
    /// Contacts in the solve (contacts inside one host excluded).
    pub contacts: usize,
    /// Contacts found by detection.
    pub detected_contacts: usize,
    /// Largest overlap `δ/R` over the detected contacts at the start of
    /// the step, relative to the contact's radius `R` (the smaller
    /// curvature radius of the two surfaces; 0 between flat faces). The
    /// step refuses `δ/R > 1` ([`StepError::OverlapBeyondRadius`]); a value
    /// that creeps up over the steps is the "artificial compression" of an
    /// under-resolved solve (warm-starting paper, section 5).
    pub overlap_max: f64,
    /// Contacts treated as impacts.
    pub impacts: usize,
    /// Iterations of the continuous solve.
    pub iterations: usize,
    /// How the continuous solve ended.
    pub status: SolverStatus,
    /// The tolerance on the mean normal residual this step was checked
    /// against ([`StepSettings::residual_check`]).
    pub residual_tolerance: f64,
    /// The mean normal residual exceeds [`Self::residual_tolerance`]: the
    /// overlaps (and a rest state reached with them) are not the contact
    /// law's.
    pub unresolved: bool,
    /// Iterations of the impact solve (0 when skipped; with
    /// [`ImpactScope::ActiveSet`], summed over its rounds).
    pub impact_iterations: usize,
    /// Contacts in the impact problem (0 when the stage did not run; every
    /// solver contact with [`ImpactScope::WholeNetwork`]).
    pub impact_contacts: usize,
    /// How the impact solve ended; `None` when the stage did not run (no
    /// contact impacted). Anything but `Converged` means the post-impact
    /// velocities `v⁺` are the solver's best iterate, not a solution of
    /// the impact problem to its tolerance.
    pub impact_status: Option<SolverStatus>,
    /// Largest natural-map residual of the impact solve's normal rows
    /// \[m/s\] (0 when the stage did not run).
    pub impact_residual: f64,
    /// Residuals of the continuous solve by row kind.
    pub residuals: ResidualStats,
    /// Contacts warm started from history.
    pub warm_contacts: usize,
    /// Kinetic energy after the step \[J\].
    pub kinetic_energy: f64,
    /// Potential energy after the step \[J\].
    pub potential_energy: f64,
    /// Linear momentum after the step.
    pub momentum: Vec3,
    /// Angular momentum (about the origin) after the step.
    pub angular_momentum: Vec3,
    /// Stage times.
    pub times: StageTimes,
}

/// The force a contact transmits, from the last continuous solve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContactForce {
    /// Contact identity.
    pub key: ContactKey,
    /// Contact point.
    pub point: Vec3,
    /// Normal (from b to a).
    pub normal: Vec3,
    /// Normal force magnitude `s_n λ_n / Δt` \[N\].
    pub normal_force: f64,
    /// Total force on body a (normal plus friction) \[N\].
    pub force_on_a: Vec3,
    /// Overlap `δ` (0 when apart) \[m\].
    pub overlap: f64,
    /// `true` for a contact inside a rigid aggregate (model reduction),
    /// which is not in the solve: its force is the impulse it holds, the
    /// one it had when last solved ([`Stepper::held_contact_forces_iter`]).
    pub held: bool,
}

/// Forces of one joint in the last step ([`Stepper::joint_reactions`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct JointReaction {
    /// Force on body a \[N\], world frame.
    pub force: Vec3,
    /// Torque on body a about its carrier's centre [N·m], world frame.
    pub torque: Vec3,
    /// Drive force along the joint coordinate [N or N·m], if driven.
    pub drive_force: Option<f64>,
}

/// The SPOOK stepper. Solver and warm-start policy are trait objects that
/// can be swapped between steps.
pub struct Stepper {
    settings: StepSettings,
    solver: Box<dyn Solver>,
    warm_start: Box<dyn WarmStart>,
    impact_solver: Box<dyn Solver>,
    hooks: Box<dyn ModelHooks>,
    collision: CollisionWorld,
    contacts: ContactSet,
    problem: Option<ContactProblem>,
    lambda: Vec<f64>,
    /// One vector of body velocities, recycled: the stages' working
    /// velocities, then the continuous solve's, then the world's (the
    /// world's old vector, holding `v_i`, comes back here).
    velocity: Vec<Velocity6>,
    /// The vectors of the last released problem, for the next.
    storage: ProblemStorage,
    /// Each contact's impact flag, formed with the impact problem.
    impact_flags: Vec<bool>,
    /// The world's materials combined pair by pair, once per step.
    material_pairs: stages::MaterialPairs,
    /// The energy guard's block sums of a problem's row bound.
    energy_sums: Vec<f64>,
    /// Whether the last step had impacts: the impact problem is then built
    /// without counting its impacts first (the same problem either way).
    impacts_last_step: bool,
    /// Per body: the reach stage 1 grows pairs by, its own sweep, and
    /// scratch for the partners' shares (`reach.rs`).
    sweep: [Vec<f64>; 3],
    time: f64,
    step: u64,
    warned_unresolved: bool,
    warned_impact: bool,
    energy_budget: Option<f64>,
    /// The scene the world is a part of, when it is one part of a
    /// decomposed scene ([`Self::set_scene_part`]).
    scene_part: Option<Box<dyn guard::ScenePart>>,
    /// The bodies the scene part counts, refreshed every step.
    counted: Vec<bool>,
    /// Contact-set index of each contact of the last problem; during a
    /// step, of each solver contact (the same vector, 4 bytes per contact).
    contact_index: Vec<u32>,
    held_version: Option<u64>,
}

impl std::fmt::Debug for Stepper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stepper")
            .field("settings", &self.settings)
            .field("solver", &self.solver.name())
            .field("warm_start", &self.warm_start.name())
            .field("time", &self.time)
            .field("step", &self.step)
            .finish()
    }
}

impl Stepper {
    /// A stepper with the given settings, solver and warm-start policy.
    pub fn new(
        settings: StepSettings,
        solver: Box<dyn Solver>,
        mut warm_start: Box<dyn WarmStart>,
    ) -> Result<Self, StepError> {
        settings.validate()?;
        // the threads the passes will spawn, refused now as an error rather
        // than by a panic in a step
        ndem_par::blocks::check_threads_start("assembly_threads", settings.assembly_threads)?;
        ndem_par::blocks::check_threads_start("detection_threads", settings.detection_threads)?;
        // the warm start runs on the assembly's threads (its result does
        // not depend on the count)
        warm_start.set_threads(settings.assembly_threads);
        let impact_solver = ProjectedGaussSeidel::with_stopping(Stopping::to_tolerance(
            settings.impact_iterations.max(1),
            1e-10,
        ))?;
        Ok(Self {
            collision: CollisionWorld::new(CollisionSettings {
                margin: settings.margin,
                ..CollisionSettings::default()
            })?,
            settings,
            solver,
            warm_start,
            impact_solver: Box::new(impact_solver),
            hooks: Box::new(NoHooks),
            contacts: ContactSet::new(),
            problem: None,
            lambda: Vec::new(),
            velocity: Vec::new(),
            storage: ProblemStorage::new(),
            impact_flags: Vec::new(),
            material_pairs: stages::MaterialPairs::default(),
            energy_sums: Vec::new(),
            impacts_last_step: false,
            sweep: Default::default(),
            time: 0.0,
            step: 0,
            warned_unresolved: false,
            warned_impact: false,
            energy_budget: None,
            scene_part: None,
            counted: Vec::new(),
            contact_index: Vec::new(),
            held_version: None,
        })
    }

    /// PGS with `iterations` sweeps and cold starting.
    pub fn with_pgs(settings: StepSettings, iterations: usize) -> Result<Self, StepError> {
        let pgs = ProjectedGaussSeidel::with_stopping(Stopping::iterations(iterations))?;
        Self::new(settings, Box::new(pgs), Box::new(ColdStart))
    }

    /// PGS with `iterations` sweeps, warm-started from the previous step's
    /// impulses ([`HistoryWarmStart`]).
    pub fn with_warm_pgs(settings: StepSettings, iterations: usize) -> Result<Self, StepError> {
        let pgs = ProjectedGaussSeidel::with_stopping(Stopping::iterations(iterations))?;
        Self::new(
            settings,
            Box::new(pgs),
            Box::new(HistoryWarmStart::default()),
        )
    }

    /// The settings.
    pub fn settings(&self) -> &StepSettings {
        &self.settings
    }
    /// Replaces the continuous-stage solver.
    pub fn set_solver(&mut self, solver: Box<dyn Solver>) {
        self.solver = solver;
    }
    /// The continuous-stage solver.
    pub fn solver_mut(&mut self) -> &mut dyn Solver {
        self.solver.as_mut()
    }
    /// Replaces the impact-stage solver (default: PGS to 1e-10 within
    /// `StepSettings::impact_iterations` sweeps, cold started: the impact
    /// stage has no warm start, warm-starting paper section 2). Its
    /// iterations are reported as `StepStats::impact_iterations`.
    pub fn set_impact_solver(&mut self, solver: Box<dyn Solver>) {
        self.impact_solver = solver;
    }
    /// Steps worlds that are one part of a larger scene (a rank's local
    /// world in a decomposed run): the energy guard counts only the bodies
    /// `part` counts and compares the sums over all parts, so every part
    /// refuses or accepts a step alike; and a part may hold no dynamic
    /// body (it still takes part in the solvers' exchanges).
    pub fn set_scene_part(&mut self, part: Box<dyn guard::ScenePart>) {
        self.scene_part = Some(part);
    }
    /// The impact-stage solver.
    pub fn impact_solver_mut(&mut self) -> &mut dyn Solver {
        self.impact_solver.as_mut()
    }
    /// Replaces the warm-start policy. The policy owns the multipliers it
    /// carries between steps, so the new one starts with its own (empty
    /// for a fresh policy); move a history over with [`Self::history`]
    /// and [`Self::set_history`].
    pub fn set_warm_start(&mut self, mut warm_start: Box<dyn WarmStart>) {
        warm_start.set_threads(self.settings.assembly_threads);
        self.warm_start = warm_start;
        self.held_version = None;
    }
    /// The warm-start policy.
    pub fn warm_start(&self) -> &dyn WarmStart {
        self.warm_start.as_ref()
    }
    /// Installs model hooks.
    pub fn set_hooks(&mut self, hooks: Box<dyn ModelHooks>) {
        self.hooks = hooks;
    }
    /// The installed hooks, [`NoHooks`] left in their place (to wrap
    /// them: take, wrap, [`Self::set_hooks`]).
    pub fn take_hooks(&mut self) -> Box<dyn ModelHooks> {
        std::mem::replace(&mut self.hooks, Box::new(NoHooks))
    }
    /// The installed hooks as their concrete type (e.g. a model reducer,
    /// for its statistics and explicit merge/split calls).
    pub fn hooks_as<T: ModelHooks>(&mut self) -> Option<&mut T> {
        let any: &mut dyn std::any::Any = self.hooks.as_mut();
        any.downcast_mut::<T>()
    }
    /// Simulated time \[s\].
    pub fn time(&self) -> f64 {
        self.time
    }
    /// Steps taken.
    pub fn step_count(&self) -> u64 {
        self.step
    }
    /// Restores time and step counter (checkpoint restart). The energy
    /// budget of the guard starts afresh from the state of the next step.
    pub fn set_clock(&mut self, time: f64, step: u64) {
        self.time = time;
        self.step = step;
        self.energy_budget = None;
    }
    /// Multipliers the warm-start policy carries between steps (`None`
    /// for a policy that keeps none, such as the cold and model starts).
    pub fn history(&self) -> Option<&ImpulseHistory> {
        self.warm_start.history()
    }
    /// Replaces the warm-start policy's history (checkpoint restart, a run
    /// continued from another's state). Returns `false`, and keeps nothing,
    /// when the policy keeps no history.
    #[must_use = "false means the policy keeps no history and nothing was set"]
    pub fn set_history(&mut self, history: ImpulseHistory) -> bool {
        self.held_version = None;
        match self.warm_start.history_mut() {
            Some(h) => {
                *h = history;
                true
            }
            None => false,
        }
    }
    /// Contacts of the last step.
    pub fn contacts(&self) -> &ContactSet {
        &self.contacts
    }
    /// The continuous-stage problem of the last successful step and its
    /// solution (`None` after a failed step: the stepper releases the last
    /// problem before it assembles the next). It holds its contacts'
    /// model data only when the warm start reads it
    /// ([`ndem_solve::WarmStart::reads_model_data`],
    /// [`ContactProblem::has_model_data`]).
    pub fn last_problem(&self) -> Option<(&ContactProblem, &[f64])> {
        self.problem.as_ref().map(|p| (p, self.lambda.as_slice()))
    }

    /// The SPOOK parameters of the last continuous problem's contacts, in
    /// its order ([`Self::last_problem`]), formed as the step forms them
    /// under contact law `law` (the step's own is
    /// `settings().contact_law`): each pair's materials and `[[pairs]]`
    /// override (friction, `E*`, linear stiffness) and the contact's
    /// effective radius `R*` (so `k_n = (4/3) E* √R*` under Hertz).
    /// `world` is the world the step ran on. Empty when there is no last
    /// problem.
    pub fn last_contact_parameters(
        &self,
        world: &World,
        law: ContactLaw,
    ) -> Result<Vec<ndem_math::ContactParameters>, StepError> {
        let Some(problem) = self.problem.as_ref() else {
            return Ok(Vec::new());
        };
        let settings = StepSettings {
            contact_law: law,
            ..self.settings
        };
        let pairs = stages::MaterialPairs::of(world, &settings);
        problem
            .contacts()
            .iter()
            .map(|c| {
                let point = self
                    .contacts
                    .find(&c.key)
                    .map(|i| &self.contacts.as_slice()[i])
                    .ok_or(StepError::InvalidSettings {
                        field: "world",
                        reason: "is not the world of the last step (a contact of its problem is missing)",
                    })?;
                stages::contact_parameters(world, (&settings, &pairs), point)
            })
            .collect()
    }

    /// Forces of the joint rows of the last step, `λ/Δt` per row in joint
    /// order (for a motor row: the force on body a along the axis; the
    /// force on b is its negative).
    pub fn joint_forces(&self) -> Vec<f64> {
        let Some(p) = &self.problem else {
            return Vec::new();
        };
        self.lambda[p.generic_offset()..]
            .iter()
            .map(|l| l / self.settings.dt)
            .collect()
    }

    /// Per-joint forces of the last step (joint order), from the rows'
    /// multipliers `λ/Δt`: the total force and torque the joint applies to
    /// body a (world frame, torque about the centre of a's carrier), and
    /// the drive's force along its coordinate (positive: pushing the
    /// coordinate up; an actuator's positive force extends it).
    pub fn joint_reactions(&self, world: &World) -> Vec<JointReaction> {
        let mut out = vec![JointReaction::default(); world.joints().len()];
        let Some(p) = &self.problem else {
            return out;
        };
        let dt = self.settings.dt;
        let off = p.generic_offset();
        for (i, r) in p.generic_rows().iter().enumerate() {
            let Some(key) = r.key else { continue };
            let feature = key.feature;
            if feature & 0x8000_0000 == 0 {
                continue;
            }
            let joint = ((feature & 0x7fff_ffff) >> 4) as usize;
            let Some(reaction) = out.get_mut(joint) else {
                continue;
            };
            let force = self.lambda[off + i] / dt;
            reaction.force += r.jacobian.linear_a * force;
            reaction.torque += r.jacobian.angular_a * force;
            if feature & 0xf == crate::joint::DRIVE_ROW {
                let sign = match world.joints()[joint].kind {
                    crate::JointKind::Prismatic { .. } => -1.0,
                    _ => 1.0,
                };
                reaction.drive_force = Some(sign * force);
            }
        }
        out
    }

    /// Takes one step (adaptive-model-reduction paper, Algorithm 1, which
    /// extends the warm-starting paper's):
    ///
    /// 1. contact detection at `x_i`;
    /// 2. model refinement (split) through [`ModelHooks::after_detection`];
    /// 3. contact data, impact stage and continuous stage
    ///    (`solve_stages`);
    /// 4. velocity update `v_{i+1}` and co-motion of members with their
    ///    hosts, refused if the scene would gain energy from nowhere;
    /// 5. model reduction (merge) through [`ModelHooks::after_solve`],
    ///    seeing `x_i` and `v_{i+1}`;
    /// 6. position update `x_{i+1} = x_i + Δt v_{i+1}` (members placed
    ///    rigidly on their hosts).
    ///
    /// On error the world is unchanged.
    pub fn step(&mut self, world: &mut World) -> Result<StepStats, StepError> {
        let t_start = Instant::now();
        // members count: a world resting entirely in aggregates merged
        // with static geometry is at rest, not empty
        if !world.motions().contains(&Motion::Dynamic) && self.scene_part.is_none() {
            return Err(StepError::EmptyScene);
        }
        // the contact set is the stepper's again whatever the step's end
        let mut contacts = std::mem::take(&mut self.contacts);
        let result = self.step_stages(world, &mut contacts, t_start);
        self.contacts = contacts;
        result
    }

    /// Stages 1-6 of [`Self::step`] on `contacts`.
    fn step_stages(
        &mut self,
        world: &mut World,
        contacts: &mut ContactSet,
        t_start: Instant,
    ) -> Result<StepStats, StepError> {
        let mut times = StageTimes::default();
        // 1. detection, of a state checked first (one agreement among the
        // parts of a decomposed scene for both)
        let t = Instant::now();
        let detected = world
            .validate_state()
            .and_then(|()| self.detect(world, contacts));
        self.agree_across_parts(detected)?;
        times.detection = t.elapsed();
        // 2. model refinement (split)
        let t = Instant::now();
        let detected = DetectedView {
            settings: &self.settings,
            history: self.warm_start.history(),
            step: self.step,
        };
        self.hooks.after_detection(world, contacts, &detected)?;
        let split_time = t.elapsed();
        // 3. the two solve stages; the last step's problem is released
        // first, so that the stepper never holds two (after a failed step
        // `last_problem` is `None`)
        if let Some(p) = self.problem.take() {
            self.storage = p.into_storage();
        }
        let mut solved = self.solve_stages(world, contacts, &mut times)?;
        // 4. velocity update, refused if the scene would gain energy
        let previous_velocity = self.update_velocities(world, &mut solved)?;
        self.warn_once(&solved.stats);
        self.record_history(world, contacts, &solved);
        // 5. model reduction (merge), at x_i with v_{i+1}
        let t = Instant::now();
        self.hooks.after_solve(
            world,
            &SolvedView {
                contacts,
                problem: &solved.problem,
                lambda: &solved.lambda,
                contact_index: &solved.contact_index,
                previous_velocity: &previous_velocity,
                dt: self.settings.dt,
                time: self.time,
            },
        )?;
        times.reduction = split_time + t.elapsed();
        // 6. position update
        let threads = ndem_par::blocks::resolve_threads(self.settings.assembly_threads);
        update_positions(
            world,
            self.settings.dt,
            threads.min(world.len() / BODIES_PER_THREAD).max(1),
        );
        let mut stats = self.keep_for_next_step(solved, previous_velocity);
        let sums = world.energies_and_momentum();
        stats.kinetic_energy = sums.kinetic_energy;
        stats.potential_energy = sums.potential_energy;
        (stats.momentum, stats.angular_momentum) = (sums.momentum, sums.angular_momentum);
        times.total = t_start.elapsed();
        stats.times = times;
        Ok(stats)
    }

    /// `result`, agreed among the parts of a decomposed scene
    /// ([`ScenePart`]; without one, `result` itself): when some part
    /// failed, a part whose own `result` passed returns
    /// [`StepError::FailedElsewhere`], so that every part stops before the
    /// step's next exchange. One maximum over the parts.
    pub(crate) fn agree_across_parts<T>(
        &mut self,
        result: Result<T, StepError>,
    ) -> Result<T, StepError> {
        let Some(part) = self.scene_part.as_mut() else {
            return result;
        };
        let mut failed = [if result.is_err() { 1.0 } else { 0.0 }];
        part.max(&mut failed);
        match result {
            Ok(_) if failed[0] > 0.0 => Err(StepError::FailedElsewhere {
                step: self.step + 1,
                time: self.time,
            }),
            other => other,
        }
    }

    /// Stage 1: the contacts at `x_i`, each pair's box grown by the
    /// bodies' reaches over `Δt`: their sweeps, grown by the share of a
    /// partner's that the step's impulses can pass on, with another pass
    /// while a reach grows ([`crate::reach`]; with
    /// [`StepSettings::reach_growth`], and not in a part of a decomposed
    /// scene, where a ghost's partners on other parts are not in the world).
    fn detect(&mut self, world: &World, contacts: &mut ContactSet) -> Result<(), StepError> {
        let [mut reach, mut own, mut partner] = std::mem::take(&mut self.sweep);
        world.sweep_distances(self.settings.dt, &mut reach);
        let threads = self.settings.detection_threads;
        let mut detected = self
            .collision
            .detect_on(&world.body_view(&reach), contacts, threads);
        let rounds = match (self.settings.reach_growth, &self.scene_part) {
            (true, None) => crate::reach::REACH_ROUNDS,
            _ => 0,
        };
        if rounds > 0 {
            own.clone_from(&reach);
        }
        for _ in 0..rounds {
            if detected.is_err()
                || !crate::reach::grow_reach(
                    world,
                    (&own, &mut reach, &mut partner),
                    contacts,
                    self.settings.dt,
                )
            {
                break;
            }
            detected = self
                .collision
                .detect_on(&world.body_view(&reach), contacts, threads);
        }
        self.sweep = [reach, own, partner];
        Ok(detected?)
    }

    /// Stage 4: `v_{i+1}` from the solve into the world (bodies that are
    /// not free keep theirs) and members co-moved with their hosts; with
    /// the energy guard, refused (the world's velocities restored) if the
    /// scene would hold more energy than it ever had plus all the work
    /// supplied (passivity). Returns `v_i`.
    fn update_velocities(
        &mut self,
        world: &mut World,
        solved: &mut SolvedStep,
    ) -> Result<Vec<Velocity6>, StepError> {
        let dt = self.settings.dt;
        let (kinetic, potential) = match &self.scene_part {
            Some(part) if self.settings.energy_guard => {
                part.counted_bodies(world.len(), &mut self.counted);
                world.energies_where(|i| self.counted[i])
            }
            _ => world.energies(),
        };
        let held = kinetic + potential + solved.elastic_energy;
        // the solve's vector becomes the world's, and the world's old one
        // keeps v_i for the hooks and a refused step: no third vector of
        // body velocities
        let mut velocity = std::mem::take(&mut solved.velocity);
        debug_assert_eq!(velocity.len(), world.len());
        for (i, v) in velocity.iter_mut().enumerate() {
            if world.motions()[i] != Motion::Dynamic || world.is_member(i) {
                *v = world.velocities()[i];
            }
        }
        world.state.swap_velocities(&mut velocity);
        let previous_velocity = velocity;
        world.co_move();
        if self.settings.energy_guard {
            let threads = stages::assembly_threads(&self.settings, solved.problem.contacts().len());
            let sums = &mut self.energy_sums;
            let mut problems = vec![guard::ProblemWork::of(
                world,
                &solved.problem,
                threads,
                sums,
            )];
            problems.extend(std::mem::take(&mut solved.impact));
            let free = solved.problem.free_velocity();
            let energy = match &mut self.scene_part {
                None => guard::StepEnergy {
                    held,
                    after: world.energy_after_positions(dt),
                    work: guard::StepWork::of(world, free, &problems, dt, |_| true),
                },
                Some(part) => {
                    let counted = |i: usize| self.counted[i];
                    let mut e = guard::StepEnergy {
                        held,
                        after: world.energy_after_positions_where(dt, counted),
                        work: guard::StepWork::of(world, free, &problems, dt, counted),
                    };
                    e.reduce(part.as_mut());
                    e
                }
            };
            let available = self
                .energy_budget
                .map_or(energy.held, |b| b.max(energy.held));
            let bound = guard::energy_bound(available, &energy.work);
            let (held, after) = (energy.held, energy.after);
            if let Err(e) = guard::check_energy(self.step + 1, self.time, held, after, bound) {
                world
                    .state
                    .velocities_mut()
                    .copy_from_slice(&previous_velocity);
                self.velocity = previous_velocity;
                return Err(e);
            }
            self.energy_budget = Some(bound);
        }
        Ok(previous_velocity)
    }

    /// The run's first unresolved step and first impact solve short of its
    /// tolerance each say once what to change.
    fn warn_once(&mut self, stats: &StepStats) {
        if stats.unresolved && !self.warned_unresolved {
            self.warned_unresolved = true;
            tracing::warn!(
                step = self.step + 1,
                time = self.time,
                residual = stats.residuals.normal.mean,
                tolerance = stats.residual_tolerance,
                status = stats.status.name(),
                "contact solve not accurate enough: the mean normal residual leaves overlaps off the contact law, so a rest state reached now is not the physical one (more iterations, a smaller time step, or warm starting help); the `unresolved` column of the step statistics marks every such step"
            );
        }
        if let Some(status) = stats.impact_status
            && status != SolverStatus::Converged
            && !self.warned_impact
        {
            self.warned_impact = true;
            tracing::warn!(
                step = self.step + 1,
                time = self.time,
                status = status.name(),
                normal_residual = stats.impact_residual,
                sweeps = stats.impact_iterations,
                "impact stage not solved to its tolerance: the post-impact velocities are the solver's best iterate (in a packing the impact problem spans the whole contact network; more sweeps help: `StepSettings::impact_iterations`, `run.impact_iterations` in a scene file); the `impact_status` column of the step statistics marks every such step"
            );
        }
    }

    /// After the position update: the solve's problem, multipliers and
    /// vectors kept for the next step, the clock advanced; the step's
    /// statistics with its number and time.
    fn keep_for_next_step(
        &mut self,
        solved: SolvedStep,
        previous_velocity: Vec<Velocity6>,
    ) -> StepStats {
        let mut stats = solved.stats;
        self.problem = Some(solved.problem);
        self.lambda = solved.lambda;
        self.contact_index = solved.contact_index;
        self.velocity = previous_velocity;
        self.time += self.settings.dt;
        self.step += 1;
        stats.step = self.step;
        stats.time = self.time;
        stats
    }

    /// Records this step's multipliers for warm starting. Contacts inside a
    /// host (not solved) keep the impulse they had when last solved, so the
    /// history survives merges and splits: a contact that leaves an
    /// aggregate starts from its last impulse, not from zero. The held set
    /// is rebuilt only when memberships changed (a merge or split), since
    /// a resting aggregate can hold most contacts of a scene.
    fn record_history(&mut self, world: &World, contacts: &ContactSet, solved: &SolvedStep) {
        let version = world.membership_version();
        if self.held_version != Some(version) {
            let mut solved_contact = vec![false; contacts.len()];
            for &k in &solved.contact_index {
                solved_contact[k as usize] = true;
            }
            let internal = contacts
                .iter()
                .zip(&solved_contact)
                .filter(|(_, s)| !**s)
                .map(|(c, _)| c.key);
            if let Some(history) = self.warm_start.history_mut() {
                history.hold(internal);
            }
            self.held_version = Some(version);
        }
        self.warm_start.record(&solved.problem, &solved.lambda);
    }
}

fn check_velocity(
    v: &[Velocity6],
    stage: &'static str,
    (step, time): (u64, f64),
    threads: usize,
) -> Result<(), StepError> {
    let not_finite = |x: &Velocity6| {
        !(x.linear.iter().all(|c| c.is_finite()) && x.angular.iter().all(|c| c.is_finite()))
    };
    match position_in_parts(v, threads, BODIES_PER_CHECK, not_finite) {
        Some(body) => Err(StepError::NonFiniteVelocity {
            stage,
            body,
            step,
            time,
        }),
        None => Ok(()),
    }
}

/// What the two solve stages of a step produced.
struct SolvedStep {
    velocity: Vec<Velocity6>,
    problem: ContactProblem,
    lambda: Vec<f64>,
    stats: StepStats,
    /// The impact stage's contribution to the energy bound (when the
    /// guard is on and the stage ran).
    impact: Option<guard::ProblemWork>,
    /// Contact-set index of each contact of `problem`.
    contact_index: Vec<u32>,
    /// The elastic energy of `problem`'s overlaps
    /// ([`stages::ContinuousProblem::elastic_energy`]).
    elastic_energy: f64,
}

/// Bodies per thread of the position update below which a thread is not
/// worth its start.
const BODIES_PER_THREAD: usize = 8192;

/// Fewest bodies per thread in a check or refill of body velocities (a
/// thread's start costs about what a pass over 10⁴ of them does).
const BODIES_PER_CHECK: usize = 16_384;

/// Fewest multipliers per thread in a check or refill of `λ`.
const ROWS_PER_THREAD: usize = 65_536;

/// Stage 6: `x ← x + Δt v`, `q ← exp(Δt ω/2) ⊗ q` for every moving body
/// that carries its own degrees of freedom, then members placed rigidly on
/// their hosts.
fn update_positions(world: &mut World, dt: f64, threads: usize) {
    // each body on its own: the same bits on any thread count
    let per_thread = ndem_par::blocks::block_len(world.len(), threads);
    let (motion, membership) = (world.kinds.motions(), world.kinds.membership());
    let (positions, orientations, velocity) = world.state.all_mut();
    let velocity = &*velocity;
    let parts = positions
        .chunks_mut(per_thread)
        .zip(orientations.chunks_mut(per_thread))
        .enumerate();
    ndem_par::blocks::map_parts(parts, |(k, (positions, orientations))| {
        let first = k * per_thread;
        for (j, (x, q)) in positions.iter_mut().zip(orientations).enumerate() {
            let i = first + j;
            let member = crate::member::membership_in(membership, i).is_some();
            if motion[i] != Motion::Static && !member {
                let v = velocity[i];
                *x += v.linear * dt;
                *q = integrate_orientation(q, &v.angular, dt);
            }
        }
    });
    world.co_move();
}

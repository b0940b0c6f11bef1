//! Settings of the SPOOK stepper.

use crate::StepError;
use crate::guard::ResidualCheck;
use ndem_math::{ContactLaw, SettingError, SpookSettings};
use ndem_solve::{ContactRows, FrictionSet};

/// Settings of a [`Stepper`](crate::Stepper).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepSettings {
    /// Time step `Δt` \[s\] (paper: 5 ms).
    pub dt: f64,
    /// Normal force law (Hertz by default).
    pub contact_law: ContactLaw,
    /// SPOOK compliances and relaxation.
    pub spook: SpookSettings,
    /// Impact threshold `v_imp` [m/s] (paper: 0.05).
    pub impact_velocity: f64,
    /// Run the impact stage.
    pub impact_stage: bool,
    /// PGS iterations of the impact stage (the papers give none; 20 sweeps
    /// resolve isolated impacts exactly and cost less than the continuous
    /// solve in a pile where impacts happen every step).
    pub impact_iterations: usize,
    /// Which contacts the impact stage solves: the whole network (the
    /// papers' Algorithm 1, the default) or an active set grown from the
    /// impacting contacts ([`ImpactScope`]).
    pub impact_scope: ImpactScope,
    /// Rows per contact.
    pub contact_rows: ContactRows,
    /// Friction set: the disk (Coulomb's cone, the default) or the papers'
    /// box, which makes friction depend on the tangent basis (a block
    /// sliding along the basis diagonal sticks where Coulomb says it
    /// slides); [`StepSettings::papers`] uses the box.
    pub friction_set: FrictionSet,
    /// Contact margin \[m\].
    pub margin: f64,
    /// Grow each body's reach in stage 1 by the share of its partners'
    /// speeds that the step's impulses can pass on, and detect again while
    /// a reach grows ([`crate::reach`]), so that a body struck within the
    /// step meets the contacts it is driven into in that step; off, each
    /// pair's box grows by the bodies' own sweeps only, and such a contact
    /// is met at the next step, overlapping. Default off: the built-in
    /// reproductions are measured with the own sweeps, and on a bed with
    /// impacts in every step the extra passes cost a step time
    /// (`docs/theory.md`, "Zero overlap"). A part of a decomposed scene
    /// ([`Stepper::set_scene_part`](crate::Stepper::set_scene_part))
    /// keeps the own sweeps whatever this says: a ghost's partners on
    /// other parts are not in its world.
    pub reach_growth: bool,
    /// Threads of contact detection: the particles' pairs in one block
    /// per thread, the grid built in parts (above 4096 particles; the
    /// contact set is the same on any count). 1 (the default) detects on
    /// the calling thread, 0 on every core. At most
    /// [`ndem_par::blocks::MAX_THREADS`]; [`Stepper::new`](crate::Stepper::new)
    /// refuses a count the system does not give at once
    /// ([`StepError::Threads`](crate::StepError::Threads)).
    pub detection_threads: usize,
    /// Threads of the problem assembly: the impact and continuous
    /// problems' contacts are formed in consecutive blocks, at most one
    /// per 4096 contacts. 1 (the default) assembles on the calling thread,
    /// 0 on every core; the problems are the same on any thread count.
    /// At most [`ndem_par::blocks::MAX_THREADS`]; [`Stepper::new`](crate::Stepper::new) refuses
    /// a count the system does not give at once
    /// ([`StepError::Threads`](crate::StepError::Threads)).
    pub assembly_threads: usize,
    /// When a continuous solve is flagged as too inaccurate for its rest
    /// state to be physical ([`StepStats::unresolved`](crate::StepStats::unresolved)).
    pub residual_check: ResidualCheck,
    /// Refuse a step that ends with more mechanical energy than the scene
    /// could supply ([`StepError::EnergyGrowth`]); the world is restored.
    pub energy_guard: bool,
}

impl Default for StepSettings {
    fn default() -> Self {
        Self {
            dt: 5e-3,
            contact_law: ContactLaw::Hertz,
            spook: SpookSettings::default(),
            impact_velocity: 0.05,
            impact_stage: true,
            impact_iterations: 20,
            impact_scope: ImpactScope::WholeNetwork,
            contact_rows: ContactRows::NormalFrictionRolling,
            friction_set: FrictionSet::Disk,
            margin: 0.0,
            detection_threads: 1,
            assembly_threads: 1,
            residual_check: ResidualCheck::default(),
            energy_guard: true,
            reach_growth: false,
        }
    }
}

impl StepSettings {
    /// The warm-starting paper's settings (Table 1 and section 2): the
    /// defaults with the papers' box friction, for reproductions.
    pub fn papers() -> Self {
        Self {
            friction_set: FrictionSet::Box,
            ..Self::default()
        }
    }

    /// Checks the fields.
    pub fn validate(&self) -> Result<(), StepError> {
        StepError::require_positive("dt", self.dt)?;
        StepError::require_non_negative("impact_velocity", self.impact_velocity)?;
        StepError::require_non_negative("margin", self.margin)?;
        // `Σ_n = (4/Δt²) ε_n Υ_n` (docs/theory.md, "SPOOK") needs a normal Δt²
        StepError::require(
            self.dt * self.dt >= f64::MIN_POSITIVE,
            "dt",
            "too small: Δt² underflows and the contact compliances overflow (Δt ≥ 1.5e-154 s)",
        )?;
        if let ContactLaw::Linear { stiffness } = self.contact_law
            && !(stiffness.is_finite() && stiffness > 0.0)
        {
            return Err(StepError::InvalidSettings {
                field: "contact_law.stiffness",
                reason: "must be finite and > 0",
            });
        }
        StepError::require(
            !(self.impact_stage && self.impact_iterations == 0),
            "impact_iterations",
            "must be at least 1 when the impact stage is on",
        )?;
        StepError::require_ok(
            "assembly_threads",
            ndem_par::blocks::count_allowed(self.assembly_threads),
        )?;
        StepError::require_ok(
            "detection_threads",
            ndem_par::blocks::count_allowed(self.detection_threads),
        )?;
        if let ImpactScope::ActiveSet { join_velocity } = self.impact_scope {
            StepError::require_positive("impact_scope.join_velocity", join_velocity)?;
        }
        self.residual_check.validate()?;
        self.spook.validate()?;
        Ok(())
    }
}

/// The contacts of the impact problem (warm-starting paper, Algorithm 1,
/// lines 8-9).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ImpactScope {
    /// Every contact, as the paper's stepper does: on a step with an
    /// impact the impact problem spans the whole contact network, and the
    /// solve also removes every slower approach of resting contacts.
    WholeNetwork,
    /// The contacts the impacts reach. The set starts with the impacting
    /// contacts and the contacts approaching faster than `join_velocity`
    /// beyond their bound (`G_n v⁻ + b_n < −join_velocity`); after each
    /// solve on the set, every contact outside it that touches a body
    /// whose velocity the solve changed joins when its row is violated by
    /// more than `join_velocity` at the new velocities, and the set is
    /// solved again, warm, until none joins. The answer satisfies every
    /// row of the whole-network problem to `join_velocity` on the rows
    /// outside the set and to the solver's tolerance on the set's
    /// (`docs/theory.md`, "Impact stage").
    ActiveSet {
        /// Violation \[m/s\] above which a contact joins the set
        /// (default 5e-3 m/s, 10 % of the paper's `v_imp`: slower approaches
        /// are no impacts and are left to the continuous stage).
        join_velocity: f64,
    },
}

impl ImpactScope {
    /// [`ImpactScope::ActiveSet`] with the default join velocity, 5e-3 m/s.
    pub const fn active_set() -> Self {
        Self::ActiveSet {
            join_velocity: 5e-3,
        }
    }

    /// The join velocity of an active set \[m/s\]; `None` for the whole
    /// network.
    pub const fn join_velocity(self) -> Option<f64> {
        match self {
            Self::ActiveSet { join_velocity } => Some(join_velocity),
            Self::WholeNetwork => None,
        }
    }
}

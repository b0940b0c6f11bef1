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
    /// Rows per contact.
    pub contact_rows: ContactRows,
    /// Friction set: the disk (Coulomb's cone, the default) or the papers'
    /// box, which makes friction depend on the tangent basis (a block
    /// sliding along the basis diagonal sticks where Coulomb says it
    /// slides); [`StepSettings::papers`] uses the box.
    pub friction_set: FrictionSet,
    /// Contact margin \[m\].
    pub margin: f64,
    /// Detect contacts on every core, one block of particles per core on
    /// scoped threads (the contact set is the same).
    pub parallel_detection: bool,
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
            contact_rows: ContactRows::NormalFrictionRolling,
            friction_set: FrictionSet::Disk,
            margin: 0.0,
            parallel_detection: false,
            assembly_threads: 1,
            residual_check: ResidualCheck::default(),
            energy_guard: true,
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
        if let ContactLaw::Linear { stiffness } = self.contact_law
            && !(stiffness.is_finite() && stiffness > 0.0)
        {
            {
                return Err(StepError::InvalidSettings {
                    field: "contact_law.stiffness",
                    reason: "must be finite and > 0",
                });
            }
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
        self.residual_check.validate()?;
        self.spook.validate()?;
        Ok(())
    }
}

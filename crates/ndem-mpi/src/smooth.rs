//! The smooth DEM step on a decomposed scene: each rank steps its local
//! world (owned bodies, ghosts, replicated bodies) with the ordinary
//! [`SmoothStepper`], after the owners' states were copied onto the
//! ghosts. The ghost layer holds every body an owned body can touch before
//! the next rebuild, so each owned body sees all its contacts, evaluated
//! and summed in the order of a one-rank run: owned trajectories are
//! bit-identical to one rank's for every rank count.

use crate::comm::Communicator;
use crate::domain::{Carried, Domain, DomainSettings, GhostReach, Role};
use crate::error::MpiError;
use crate::ndem::ExchangeCounters;
use ndem_math::SettingError;
use ndem_math::Vec3;
use ndem_smooth::{ContactHistory, SmoothSettings, SmoothStepper};
use ndem_step::World;

impl Carried for ContactHistory {
    const WIDTH: usize = 6;
    fn pack(&self, out: &mut Vec<f64>) {
        out.extend_from_slice(self.xi.as_slice());
        out.extend_from_slice(self.rolling.as_slice());
    }
    fn unpack(v: &[f64]) -> Self {
        ContactHistory {
            xi: Vec3::new(v[0], v[1], v[2]),
            rolling: Vec3::new(v[3], v[4], v[5]),
        }
    }
}

/// Statistics of one distributed smooth step, summed over ranks.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DistributedSmoothStats {
    /// Touching contacts (each counted once, by the rank that owns it).
    pub contacts: usize,
    /// Kinetic energy of all dynamic bodies \[J\] (summed in rank order: equal
    /// to a one-rank run's to round-off).
    pub kinetic_energy: f64,
    /// Linear momentum of all dynamic bodies \[kg m/s\].
    pub momentum: Vec3,
    /// Time at the end of the step \[s\].
    pub time: f64,
    /// Whether the layout was rebuilt before this step (a layout kept
    /// as it was, [`crate::Domain::keep_layout`], is not a rebuild).
    pub rebuilt: bool,
    /// `f64` values this rank sent for ghost updates this step.
    pub ghost_values_sent: usize,
}

/// Explicit smooth DEM on a decomposed scene (see the module docs).
#[derive(Debug)]
pub struct DistributedSmooth<C: Communicator> {
    domain: Domain<C>,
    stepper: SmoothStepper,
    dt: f64,
    counters: ExchangeCounters,
}

impl<C: Communicator> DistributedSmooth<C> {
    /// Splits `scene` (the same whole scene on every rank) and prepares the
    /// stepper; the time step is checked against the whole scene's critical
    /// one, and the stepper must keep its contacts
    /// ([`SmoothSettings::record_contacts`]: the statistics count them).
    /// Collective.
    pub fn new(
        comm: C,
        scene: &World,
        settings: SmoothSettings,
        domain: DomainSettings,
    ) -> Result<Self, MpiError> {
        MpiError::require(
            settings.record_contacts,
            "record_contacts",
            "a distributed run counts each step's owned touching contacts, which needs them kept",
        )?;
        let stepper = SmoothStepper::new(settings, scene).map_err(|e| MpiError::Step {
            rank: comm.rank(),
            message: e.to_string(),
        })?;
        MpiError::require(
            domain.ghost_reach == GhostReach::Uniform,
            "ghost_reach",
            "the smooth DEM sums each body's contact forces where it is owned, which needs every rank to hold both bodies of its bodies' contacts (`GhostReach::Uniform`)",
        )?;
        crate::domain::check_free_spheres(scene)?;
        let domain = Domain::new(comm, scene, domain)?;
        Ok(Self {
            domain,
            stepper,
            dt: settings.dt,
            counters: ExchangeCounters::default(),
        })
    }

    /// The decomposition and local world.
    pub fn domain(&self) -> &Domain<C> {
        &self.domain
    }

    /// This rank's ghost exchanges so far (updates and rebuilds; values
    /// count the updates).
    pub fn exchange_counters(&self) -> ExchangeCounters {
        self.counters
    }

    /// Simulated time \[s\].
    pub fn time(&self) -> f64 {
        self.stepper.time()
    }

    /// One step on every rank: rebuild the layout if some body may have
    /// left the ghost layer's reach (carrying the contacts' springs along),
    /// otherwise update the ghosts; then the local smooth step. Collective;
    /// an error on any rank is returned by all.
    pub fn step(&mut self) -> Result<DistributedSmoothStats, MpiError> {
        let t = std::time::Instant::now();
        let travel = self.step_travel();
        let relayout = self.domain.needs_rebuild(&travel);
        let rebuilt = relayout && !self.domain.keep_layout();
        let mut sent = 0;
        if rebuilt {
            let carried = self.stepper.contact_histories().to_vec();
            let histories = self.domain.rebuild(&carried)?;
            self.stepper.renumber(histories);
        } else {
            sent = self.domain.ghosts_sent().iter().map(|l| l.len() * 13).sum();
            self.domain.update_ghosts();
        }
        self.counters.exchanges += 1;
        self.counters.values_sent += sent as u64;
        self.counters.seconds += t.elapsed().as_secs_f64();
        let result = self
            .stepper
            .step(self.domain.world_mut())
            .map_err(|e| e.to_string());
        let local = self.domain.agree(result)?;
        let contacts = self.domain.total(self.owned_touching_contacts());
        let (kinetic_energy, momentum) = self.domain.owned_energy_momentum();
        Ok(DistributedSmoothStats {
            contacts,
            kinetic_energy,
            momentum,
            time: local.time,
            rebuilt,
            ghost_values_sent: sent,
        })
    }

    /// `Δt |v|` per local body: how far each can travel in one step.
    fn step_travel(&self) -> Vec<f64> {
        let w = self.domain.world();
        w.velocities()
            .iter()
            .map(|v| self.dt * v.linear.norm())
            .collect()
    }

    /// Touching contacts of the last step that this rank owns: those whose
    /// first dynamic body (lowest global index) is owned here.
    fn owned_touching_contacts(&self) -> usize {
        let w = self.domain.world();
        let roles = self.domain.roles();
        // `new` refused a stepper that does not keep its contacts
        self.stepper
            .contacts()
            .into_iter()
            .flat_map(|set| set.iter())
            .filter(|c| c.gap < 0.0)
            .filter(|c| {
                let first = [c.key.body_a as usize, c.key.body_b as usize]
                    .into_iter()
                    .find(|&i| w.motions()[i] == ndem_step::Motion::Dynamic);
                first.is_some_and(|i| roles[i] == Role::Owned)
            })
            .count()
    }

    /// The whole scene on rank 0 (`None` elsewhere). Collective.
    pub fn gather(&self) -> Result<Option<World>, MpiError> {
        self.domain.gather()
    }
}

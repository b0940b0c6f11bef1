//! The NDEM (SPOOK) step on a decomposed scene: each rank runs the ordinary
//! [`Stepper`] on its local world, with [`SubdomainPgs`] for both solve
//! stages, coupled through [`DomainCoupling`]. A contact is owned by the
//! rank that owns its particle (dynamic body that is not a machine body)
//! with the smaller reach budget, the lower global index on a tie
//! ([`crate::GhostReach`]), by rank 0 when it has none; after every sweep
//! the velocity corrections of bodies held by several ranks are sent to
//! the owner, summed there in rank order, and the sum sent back (Preclik
//! and Rüde 2015); with
//! [`SubdomainSweep::Phased`] the ranks sweep in phases, Gauss-Seidel-wise
//! between them. Warm-start impulses migrate with the bodies.
//!
//! Machines: their bodies are held by every rank (owned by rank 0,
//! [`crate::Domain`]) and so are their joints, whose rows every rank
//! solves alike after each sweep's exchange ([`SubdomainPgs`]); the
//! joints' warm-start multipliers stay on every rank through rebuilds.
//!
//! What depends on the rank count: the sweep couples subdomains
//! Jacobi-wise (or, phased, in another Gauss-Seidel order), so the iterates (and a solve stopped by its iteration cap)
//! differ from one rank's; converged solves agree to the solver tolerance.
//! For a fixed rank count runs are deterministic.

use crate::comm::Communicator;
use crate::domain::{Carried, Domain, DomainSettings, GhostReach, GlobalKey};
use crate::error::MpiError;
use ndem_math::{ContactKey, SettingError, Vec3};
use ndem_solve::{
    HistoryWarmStart, ImpulseHistory, PgsSettings, SolveError, Stopping, StoredImpulse,
    SubdomainPgs, SubdomainSweep,
};
use ndem_step::{StepSettings, StepStats, Stepper, World};
use std::sync::{Arc, Mutex};

mod coupling;
mod reduce;

pub use coupling::{DomainCoupling, ExchangeCounters};
use coupling::{DomainPart, Plan, detected_bodies};

impl Carried for StoredImpulse {
    const WIDTH: usize = 7;
    fn pack(&self, out: &mut Vec<f64>) {
        out.push(self.normal);
        out.extend_from_slice(self.friction.as_slice());
        out.extend_from_slice(self.rolling.as_slice());
    }
    fn unpack(v: &[f64]) -> Self {
        StoredImpulse {
            normal: v[0],
            friction: Vec3::new(v[1], v[2], v[3]),
            rolling: Vec3::new(v[4], v[5], v[6]),
        }
    }
}

/// Settings of a distributed NDEM run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DistributedNdemSettings {
    /// The stepper's settings. The energy guard, when on, balances the
    /// whole scene: the owned bodies' energies and the work of every
    /// rank's step summed over ranks (`docs/distributed.md`).
    pub step: StepSettings,
    /// The continuous stage's PGS (order given, reversed or shuffled; one
    /// thread).
    pub pgs: PgsSettings,
    /// Warm start from the last step's impulses (the warm-starting paper's
    /// history policy with its default `β`); cold otherwise.
    pub warm_start: bool,
    /// The decomposition.
    pub domain: DomainSettings,
    /// How the ranks' sweeps are coupled (both stages and the trial
    /// solve of model reduction).
    pub subdomain_sweep: SubdomainSweep,
}

impl Default for DistributedNdemSettings {
    fn default() -> Self {
        Self {
            step: StepSettings::default(),
            pgs: PgsSettings {
                stopping: Stopping::iterations(25),
                ..PgsSettings::default()
            },
            warm_start: true,
            domain: DomainSettings {
                ghost_reach: GhostReach::PerBody,
                ..DomainSettings::default()
            },
            subdomain_sweep: SubdomainSweep::default(),
        }
    }
}

/// Statistics of one distributed NDEM step.
#[derive(Debug, Clone, PartialEq)]
pub struct DistributedNdemStats {
    /// This rank's step statistics (iterations, status and residuals are
    /// those of the whole problem; counts are this rank's).
    pub local: StepStats,
    /// Contacts in the continuous problem, each counted once.
    pub contacts: usize,
    /// Kinetic energy of all dynamic bodies \[J\].
    pub kinetic_energy: f64,
    /// Linear momentum of all dynamic bodies \[kg m/s\].
    pub momentum: Vec3,
    /// Whether the layout was rebuilt before this step (a layout kept
    /// as it was, [`crate::Domain::keep_layout`], is not a rebuild).
    pub rebuilt: bool,
}

/// NDEM on a decomposed scene (see the module docs).
pub struct DistributedNdem<C: Communicator + Clone + 'static> {
    domain: Domain<C>,
    stepper: Stepper,
    plan: Arc<Mutex<Plan>>,
    counters: Arc<Mutex<ExchangeCounters>>,
    dt: f64,
    sweep: SubdomainSweep,
}

impl<C: Communicator + Clone + 'static> std::fmt::Debug for DistributedNdem<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DistributedNdem")
            .field("domain", &self.domain)
            .finish_non_exhaustive()
    }
}

impl<C: Communicator + Clone + 'static> DistributedNdem<C> {
    /// Splits `scene` (the same whole scene on every rank) and builds each
    /// rank's stepper. Collective.
    pub fn new(
        comm: C,
        scene: &World,
        settings: DistributedNdemSettings,
    ) -> Result<Self, MpiError> {
        MpiError::require(
            settings.step.impact_scope == ndem_step::ImpactScope::WholeNetwork,
            "step.impact_scope",
            "the active-set impact stage sweeps one process's contacts; distributed runs solve the whole network",
        )?;
        let domain_settings = DomainSettings {
            margin: settings.domain.margin.max(settings.step.margin),
            ..settings.domain
        };
        let domain = Domain::new(comm.clone(), scene, domain_settings)?;
        let plan = Arc::new(Mutex::new(Plan::default()));
        let counters = Arc::new(Mutex::new(ExchangeCounters::default()));
        let coupling = || {
            Box::new(DomainCoupling {
                comm: comm.clone(),
                plan: plan.clone(),
                counters: counters.clone(),
            })
        };
        let rank = comm.rank();
        let solve_err = |e: SolveError| MpiError::Step {
            rank,
            message: e.to_string(),
        };
        let solver = SubdomainPgs::new(settings.pgs, coupling())
            .map_err(solve_err)?
            .with_sweep(settings.subdomain_sweep);
        let impact = SubdomainPgs::new(
            PgsSettings {
                stopping: Stopping::to_tolerance(settings.step.impact_iterations.max(1), 1e-10),
                ..PgsSettings::default()
            },
            coupling(),
        )
        .map_err(solve_err)?
        .with_sweep(settings.subdomain_sweep);
        let warm: Box<dyn ndem_solve::WarmStart> = if settings.warm_start {
            Box::new(HistoryWarmStart::default())
        } else {
            Box::new(ndem_solve::ColdStart)
        };
        let mut stepper =
            Stepper::new(settings.step, Box::new(solver), warm).map_err(|e| MpiError::Step {
                rank,
                message: e.to_string(),
            })?;
        stepper.set_impact_solver(Box::new(impact));
        stepper.set_scene_part(Box::new(DomainPart {
            comm: comm.clone(),
            plan: plan.clone(),
        }));
        let mut run = Self {
            domain,
            stepper,
            plan,
            counters,
            dt: settings.step.dt,
            sweep: settings.subdomain_sweep,
        };
        run.refresh_plan();
        Ok(run)
    }

    /// The decomposition and local world.
    pub fn domain(&self) -> &Domain<C> {
        &self.domain
    }

    /// The local stepper.
    pub fn stepper(&self) -> &Stepper {
        &self.stepper
    }

    /// This rank's exchange counters so far.
    pub fn exchange_counters(&self) -> ExchangeCounters {
        *self.counters.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn refresh_plan(&mut self) {
        let w = self.domain.world();
        let mut holders = vec![Vec::new(); w.len()];
        for (s, list) in self.domain.ghosts_sent().iter().enumerate() {
            for &i in list {
                holders[i as usize].push(s as u32);
            }
        }
        let plan = Plan {
            gid: self.domain.global_indices().to_vec(),
            role: self.domain.roles().to_vec(),
            free: w
                .motions()
                .iter()
                .zip(self.domain.machine())
                .map(|(m, machine)| *m == ndem_step::Motion::Dynamic && !machine)
                .collect(),
            budget: self.domain.ownership_budgets().to_vec(),
            send: self.domain.ghosts_sent().to_vec(),
            recv: self.domain.ghosts_received().to_vec(),
            holders,
            next_gid: self.domain.scene_len(),
        };
        *self.plan.lock().unwrap_or_else(|e| e.into_inner()) = plan;
    }

    /// One SPOOK step on every rank: rebuild the layout when some body may
    /// leave the ghost layer's reach (warm-start impulses migrate), else
    /// update the ghosts; then the local step with the coupled solvers.
    /// Collective.
    pub fn step(&mut self) -> Result<DistributedNdemStats, MpiError> {
        if self.domain.dynamic_len() == 0 {
            // nothing to simulate until an emitter produces a body: only
            // the clock advances, as in a one-rank scene
            let (time, step) = (self.stepper.time() + self.dt, self.stepper.step_count() + 1);
            self.stepper.set_clock(time, step);
            return Ok(DistributedNdemStats {
                local: StepStats {
                    step,
                    time,
                    ..StepStats::default()
                },
                contacts: 0,
                kinetic_energy: 0.0,
                momentum: Vec3::zeros(),
                rebuilt: false,
            });
        }
        let mut sweep = Vec::new();
        self.domain.world().sweep_distances(self.dt, &mut sweep);
        let relayout = self.domain.needs_rebuild(&sweep);
        let rebuilt = relayout && !self.domain.keep_layout();
        if rebuilt {
            let carried: Vec<(ContactKey, StoredImpulse)> = self
                .stepper
                .history()
                .map(ImpulseHistory::sorted_contacts)
                .unwrap_or_default();
            let rows = self.joint_row_history();
            let moved = self.domain.rebuild(&carried)?;
            if self.stepper.history().is_some() {
                let mut history = ImpulseHistory::new();
                history.extend(moved);
                let _kept = self.stepper.set_history(history);
                self.set_joint_row_history(&rows);
            }
            self.refresh_plan();
        } else {
            self.domain.update_ghosts();
        }
        let result = self.stepper.step(self.domain.world_mut());
        let secondary = matches!(result, Err(ndem_step::StepError::FailedElsewhere { .. }));
        let result = result.map_err(|e| e.to_string());
        let adopted = self.domain.adopt_new_bodies();
        if adopted > 0 {
            self.refresh_plan();
        }
        let local = self.domain.agree_ranked(result, secondary)?;
        let owned_contacts = self.owned_problem_contacts();
        let contacts = self.domain.total(owned_contacts);
        let (kinetic_energy, momentum) = self.domain.owned_energy_momentum();
        Ok(DistributedNdemStats {
            local,
            contacts,
            kinetic_energy,
            momentum,
            rebuilt,
        })
    }

    /// Contacts of the last continuous problem that this rank owns.
    fn owned_problem_contacts(&mut self) -> usize {
        let Some((problem, _)) = self.stepper.last_problem() else {
            return 0;
        };
        let plan = self.plan.lock().unwrap_or_else(|e| e.into_inner());
        let rank = self.domain.comm().rank();
        problem
            .contacts()
            .iter()
            .filter(|c| {
                let [a, b] = detected_bodies(&c.key);
                plan.owns(rank, a, b)
            })
            .count()
    }

    /// Runs `emitters` before a step ([`crate::emit()`]): each particle
    /// joins the local world of the rank that owns it and of the ranks
    /// that hold it as a ghost. Returns the particles added. Collective.
    pub fn emit(
        &mut self,
        emitters: &mut [ndem::scenes::Emitter],
    ) -> Result<Vec<ndem_step::BodyDesc>, MpiError> {
        let added = crate::emit::emit(&mut self.domain, emitters, self.dt)?;
        if !added.is_empty() {
            self.refresh_plan();
        }
        Ok(added)
    }

    /// Sets the kinematic bodies' velocities from their prescribed
    /// motions for the next step (`Scene::motions`; every rank holds every
    /// kinematic body and sets it alike). Not collective.
    pub fn apply_motions(
        &mut self,
        motions: &[ndem::scenes::KinematicMotion],
    ) -> Result<(), MpiError> {
        let time = self.stepper.time();
        for m in motions {
            let local = self
                .domain
                .global_indices()
                .binary_search(&(m.body as u64))
                .map_err(|_| MpiError::Unsupported {
                    body: m.body,
                    reason: "a prescribed motion of a body that is not kinematic",
                })?;
            let body = ndem_step::BodyId::from_index(local);
            m.apply_to(self.domain.world_mut(), body, time, self.dt)
                .map_err(|e| MpiError::Step {
                    rank: self.domain.comm().rank(),
                    message: e.to_string(),
                })?;
        }
        Ok(())
    }

    /// The whole scene on rank 0 (`None` elsewhere). Collective.
    pub fn gather(&self) -> Result<Option<World>, MpiError> {
        self.domain.gather()
    }

    /// The warm-start impulses of the whole scene on rank 0, by global key
    /// (`None` elsewhere; empty when the policy keeps none): each contact
    /// sent by the rank that owns it. With [`Self::gather`] this is what a
    /// checkpoint holds. Collective.
    pub fn gather_history(&self) -> Option<Vec<(GlobalKey, StoredImpulse)>> {
        let mut out = vec![Vec::new(); self.domain.comm().size()];
        if let Some(h) = self.stepper.history() {
            let plan = self.plan.lock().unwrap_or_else(|e| e.into_inner());
            let rank = self.domain.comm().rank();
            for (k, v) in h.sorted_contacts() {
                if plan.owns(rank, k.body_a as usize, k.body_b as usize) {
                    let g = self.domain.global_key(&k);
                    out[0].extend_from_slice(&[g.0 as f64, g.1 as f64, g.2 as f64]);
                    v.pack(&mut out[0]);
                }
            }
        }
        let received = self.domain.comm().exchange(out);
        if self.domain.comm().rank() != 0 {
            return None;
        }
        let mut all: Vec<(GlobalKey, StoredImpulse)> = received
            .iter()
            .flat_map(|b| {
                b.chunks_exact(3 + StoredImpulse::WIDTH).map(|e| {
                    (
                        (e[0] as u64, e[1] as u64, e[2] as u32),
                        StoredImpulse::unpack(&e[3..]),
                    )
                })
            })
            .collect();
        all.sort_by_key(|e| e.0);
        Some(all)
    }

    /// Sets the warm-start impulses from global keys (a checkpoint's, on
    /// every rank): each rank keeps those of its local contacts. Returns
    /// `false` when the policy keeps no history.
    pub fn set_history(&mut self, entries: &[(GlobalKey, StoredImpulse)]) -> bool {
        let mut history = ImpulseHistory::new();
        history.extend(
            entries
                .iter()
                .filter_map(|(k, v)| Some((self.domain.local_key(k)?, *v))),
        );
        self.stepper.set_history(history)
    }

    /// The warm-start multipliers of the joints' rows, by global key (the
    /// same on every rank; empty when the policy keeps none). Not
    /// collective.
    pub fn joint_row_history(&self) -> Vec<(GlobalKey, f64)> {
        let Some(h) = self.stepper.history() else {
            return Vec::new();
        };
        h.sorted_rows()
            .into_iter()
            .map(|(k, l)| (self.domain.global_key(&k), l))
            .collect()
    }

    /// Sets the joints' warm-start multipliers from global keys (a
    /// checkpoint's rows, the same on every rank), keeping the contacts'.
    /// Not collective.
    pub fn set_joint_row_history(&mut self, rows: &[(GlobalKey, f64)]) {
        let mut history = self.stepper.history().cloned().unwrap_or_default();
        for (k, l) in rows {
            if let Some(key) = self.domain.local_key(k) {
                history.insert_row(key, *l);
            }
        }
        let _kept = self.stepper.set_history(history);
    }

    /// Forces of the machine's joints in the last step (joint order; the
    /// same on every rank, [`Stepper::joint_reactions`]).
    pub fn joint_reactions(&self) -> Vec<ndem_step::JointReaction> {
        self.stepper.joint_reactions(self.domain.world())
    }

    /// Sets the driven joints' targets for the next step from a drive
    /// schedule (`Scene::schedule`; every rank holds every joint and sets
    /// it alike). Not collective.
    pub fn apply_schedule(
        &mut self,
        schedule: &ndem::scenes::DriveSchedule,
    ) -> Result<(), MpiError> {
        let time = self.stepper.time() + self.dt;
        schedule
            .apply(self.domain.world_mut(), time)
            .map_err(|e| MpiError::Step {
                rank: self.domain.comm().rank(),
                message: e.to_string(),
            })
    }

    /// Runs the triaxial servo before the next step (`Scene::triaxial`):
    /// it sets the walls' motors from the walls' positions, and every rank
    /// holds the walls (machine bodies) and their joints alike. `control`
    /// names walls by global index. Not collective.
    pub fn apply_triaxial(
        &mut self,
        control: &mut ndem::scenes::TriaxialControl,
    ) -> Result<(), MpiError> {
        let rank = self.domain.comm().rank();
        let mut local = *control;
        for w in &mut local.walls {
            *w = self
                .domain
                .global_indices()
                .binary_search(&(*w as u64))
                .map_err(|_| MpiError::Unsupported {
                    body: *w,
                    reason: "a triaxial wall that is not a dynamic body of the scene",
                })?;
        }
        let time = self.stepper.time();
        local
            .apply(self.domain.world_mut(), time)
            .map_err(|e| MpiError::Step {
                rank,
                message: e.to_string(),
            })?;
        control.shear_start_lengths = local.shear_start_lengths;
        Ok(())
    }

    /// Turns on model reduction ([`ndem::reduce`], the same settings on
    /// every rank), continuing from `state` (the aggregates by global
    /// index, a checkpoint's; the default for none). The local world's
    /// memberships must be those `state` lists. Not collective.
    pub fn set_reduction(
        &mut self,
        settings: ndem::reduce::ReductionSettings,
        state: ndem::reduce::ReducerState,
    ) -> Result<(), MpiError> {
        MpiError::require(
            settings.trial_split.is_none_or(|t| t.depth.is_none()),
            "trial_split.depth",
            "the partial trial solve finds an aggregate's layers in one process's contacts; distributed runs solve the whole unfolded model",
        )?;
        MpiError::require(
            settings.trial_split.is_none_or(|t| !t.disturbed_only),
            "trial_split.disturbed_only",
            "the layers around disturbed members are found in one process's contacts; distributed runs solve the whole unfolded model",
        )?;
        MpiError::require(
            !settings.carried_loads,
            "carried_loads",
            "distributed runs merge particles only; machines carry their load merged in one process",
        )?;
        MpiError::require(
            !settings.merge_with_static,
            "merge_with_static",
            "distributed aggregates are dynamic bodies every rank integrates; an aggregate anchored to static geometry runs in one process",
        )?;
        MpiError::require(
            settings.sensors.iter().all(|s| {
                s.follows
                    .is_none_or(|m| self.on_every_rank(m.body.index() as u64))
            }),
            "reduction.sensors.follows",
            "a sensor moves with a machine part or a static or kinematic body, which every rank holds",
        )?;
        let rank = self.domain.comm().rank();
        let reducer = reduce::DistributedReducer::new(
            self.domain.comm().clone(),
            self.plan.clone(),
            self.counters.clone(),
            (settings, self.sweep),
            state,
        )
        .map_err(|e| MpiError::Step {
            rank,
            message: e.to_string(),
        })?;
        self.stepper.set_hooks(Box::new(reducer));
        Ok(())
    }

    /// Whether the body of global index `gid` is one every rank holds: a
    /// machine body, or a static or kinematic one.
    fn on_every_rank(&self, gid: u64) -> bool {
        let d = &self.domain;
        d.global_indices()
            .binary_search(&gid)
            .is_ok_and(|i| d.machine()[i] || d.roles()[i] == crate::domain::Role::Replicated)
    }

    /// Moves split sensor `index` of model reduction (a region that
    /// follows a machine part; every rank must move it alike). Not
    /// collective. A typed error without reduction, for a missing sensor
    /// or a non-finite pose.
    pub fn move_sensor(
        &mut self,
        index: usize,
        position: Vec3,
        orientation: ndem_math::Quat,
    ) -> Result<(), MpiError> {
        let rank = self.domain.comm().rank();
        let reducer = self
            .stepper
            .hooks_as::<reduce::DistributedReducer<C>>()
            .ok_or_else(|| MpiError::Step {
                rank,
                message: "move_sensor: model reduction is off (set_reduction)".into(),
            })?;
        reducer
            .move_sensor(index, position, orientation)
            .map_err(|e| MpiError::Step {
                rank,
                message: e.to_string(),
            })
    }

    /// Model reduction's statistics of the last step, counted over the
    /// whole scene (`None` without reduction).
    pub fn reduction_stats(&mut self) -> Option<ndem::reduce::ReductionStats> {
        self.stepper
            .hooks_as::<reduce::DistributedReducer<C>>()
            .map(|r| r.stats())
    }

    /// The aggregates by global index, the same on every rank: with
    /// [`Self::gather`] what a checkpoint holds (`None` without
    /// reduction).
    pub fn reducer_state(&mut self) -> Option<ndem::reduce::ReducerState> {
        self.stepper
            .hooks_as::<reduce::DistributedReducer<C>>()
            .map(|r| r.state())
    }

    /// Sets the clock (a checkpoint's).
    pub fn set_clock(&mut self, time: f64, step: u64) {
        self.stepper.set_clock(time, step);
    }
}

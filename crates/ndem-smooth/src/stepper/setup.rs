//! Building a [`SmoothStepper`] and what it tells about its state: the time step, rebuilds, contact histories and forces.

use super::*;
use ndem_math::SettingError;

impl SmoothStepper {
    /// A stepper for `world`; checks `Δt` against the critical time step.
    pub fn new(settings: SmoothSettings, world: &World) -> Result<Self, SmoothError> {
        SmoothError::require_positive("dt", settings.dt)?;
        SmoothError::require(
            settings.safety > 0.0 && settings.safety <= 1.0,
            "safety",
            "must lie in (0, 1]",
        )?;
        let critical = critical_time_step(world, &settings.law);
        if settings.dt > settings.safety * critical {
            return Err(SmoothError::TimeStepTooLarge {
                dt: settings.dt,
                critical,
                safety: settings.safety,
            });
        }
        SmoothError::require_non_negative("rolling_damping", settings.rolling_damping)?;
        SmoothError::require_non_negative("skin", settings.skin)?;
        SmoothError::require_ok("threads", ndem_par::blocks::count_allowed(settings.threads))?;
        ndem_par::blocks::check_threads_start("threads", settings.threads)
            .map_err(StepError::from)?;
        let r_min = world
            .shapes()
            .iter()
            .filter_map(|s| s.sphere_radius())
            .fold(f64::INFINITY, f64::min);
        let skin = if r_min.is_finite() {
            settings.skin * r_min
        } else {
            0.0
        };
        let threads = ndem_par::blocks::resolve_threads(settings.threads);
        Ok(Self {
            settings,
            collision: CollisionWorld::new(CollisionSettings {
                margin: skin,
                ..CollisionSettings::default()
            })?,
            skin,
            candidates: Vec::new(),
            pairs: Vec::new(),
            bodies_changed: true,
            reference: Vec::new(),
            raw: Vec::new(),
            rebuilds: 0,
            contacts: ContactSet::new(),
            history: Vec::new(),
            next_history: Vec::new(),
            zeta: Vec::new(),
            pair_table: Vec::new(),
            new_velocity: Vec::new(),
            force: Vec::new(),
            torque: Vec::new(),
            records: Vec::new(),
            touching: Vec::new(),
            evaluated: Vec::new(),
            threads,
            time: 0.0,
            critical,
            trusted_state: None,
            records_of: None,
        })
    }

    /// The critical time step estimate used by the check.
    pub fn critical_time_step(&self) -> f64 {
        self.critical
    }

    /// How many times the Verlet list was rebuilt (full detection passes).
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds
    }

    /// Tangential springs and rolling moments of the contacts that touched
    /// in the last step, sorted by key: the state a contact carries into
    /// the next step.
    pub fn contact_histories(&self) -> &[(ContactKey, ContactHistory)] {
        &self.history
    }

    /// Starts over on a world whose bodies were renumbered, added or
    /// removed (a distributed run's new layout): replaces the contact
    /// histories by `histories` (keys of the new numbering; sorted here,
    /// duplicate keys dropped) and forgets the Verlet list, so that the
    /// next step detects afresh. Contacts without an entry start from
    /// rest, as new contacts do.
    pub fn renumber(&mut self, mut histories: Vec<(ContactKey, ContactHistory)>) {
        histories.sort_by_key(|e| e.0);
        histories.dedup_by(|a, b| a.0 == b.0);
        self.history = histories;
        self.next_history.clear();
        self.reference.clear();
        self.candidates.clear();
    }

    /// Simulated time.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// The contacts of the last step, or `None` when
    /// [`SmoothSettings::record_contacts`] is off.
    pub fn contacts(&self) -> Option<&ContactSet> {
        self.settings.record_contacts.then_some(&self.contacts)
    }

    /// Total contact force on each body in the last step \[N\].
    pub fn contact_forces(&self) -> &[Vec3] {
        &self.force
    }

    /// Normal force \[N\] of each touching contact of the last step, `(contact,
    /// f_n)` with `f_n = n · f` (spring and dashpot), evaluated with the
    /// current velocities and the tangential history the step left. Not
    /// used by `step`; for force networks of a settled packing. Needs
    /// [`SmoothSettings::record_contacts`] (an `InvalidSettings` error
    /// naming it otherwise).
    pub fn normal_forces(
        &mut self,
        world: &World,
    ) -> Result<Vec<(ContactPoint, f64)>, SmoothError> {
        SmoothError::require(
            self.settings.record_contacts,
            "record_contacts",
            "the normal forces are those of the last step's contacts, which were not kept",
        )?;
        let contacts: Vec<ContactPoint> = self
            .contacts
            .iter()
            .filter(|c| c.gap < 0.0)
            .copied()
            .collect();
        self.refresh_pair_table(world)?;
        let mut out = Vec::with_capacity(contacts.len());
        for c in contacts {
            let old = self
                .history
                .binary_search_by(|(k, _)| k.cmp(&c.key))
                .map(|i| self.history[i].1)
                .unwrap_or_default();
            let law = ForceLaw {
                settings: &self.settings,
                pairs: &self.pair_table,
            };
            let bodies =
                PairInvariants::new(world, c.body_a(), c.body_b(), c.curvature(world.shapes()));
            let (f, _, _) = law.force(world, &c, &bodies, old);
            out.push((c, f.dot(&c.normal)));
        }
        Ok(out)
    }
}

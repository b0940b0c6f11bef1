//! The explicit smooth-DEM stepper.

use crate::force::{ContactHistory, ForceLaw, PairConstants, PairInvariants};
use crate::law::{SmoothLaw, damping_for_restitution};
pub use crate::settings::SmoothSettings;
use ndem_collide::{CollisionSettings, CollisionWorld, ContactPoint, ContactSet};
use ndem_math::capacity::resize_for_overwrite;
use ndem_math::{ContactKey, Material, Vec3, integrate_orientation};
use ndem_step::{Motion, StepError, World};
use thiserror::Error;

/// Errors of the smooth stepper.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SmoothError {
    /// World, collision or material error.
    #[error(transparent)]
    Step(#[from] StepError),
    /// The time step exceeds the allowed fraction of the critical one.
    #[error(
        "time step {dt} s exceeds {safety} × the critical time step {critical:.3e} s of this scene"
    )]
    TimeStepTooLarge {
        /// Requested Δt.
        dt: f64,
        /// Critical time step estimate.
        critical: f64,
        /// Allowed fraction.
        safety: f64,
    },
    /// The narrow phase wrote a contact whose key does not follow the last
    /// one's. It writes the candidate pairs in order and each pair's
    /// contacts in feature order, so this is a broken invariant of this
    /// crate, reported rather than stepped on (the histories are merged
    /// in key order).
    #[error(
        "contact of bodies {body_a} and {body_b} (feature {feature}) came out of key order: please report"
    )]
    ContactOrder {
        /// Body a.
        body_a: usize,
        /// Body b.
        body_b: usize,
        /// Feature id.
        feature: u32,
    },
    /// Invalid setting.
    #[error("invalid setting `{field}`: {reason}")]
    InvalidSettings {
        /// Field.
        field: &'static str,
        /// Reason.
        reason: &'static str,
    },
}

impl From<ndem_collide::CollideError> for SmoothError {
    fn from(e: ndem_collide::CollideError) -> Self {
        SmoothError::Step(e.into())
    }
}

impl From<ndem_math::MathError> for SmoothError {
    fn from(e: ndem_math::MathError) -> Self {
        SmoothError::Step(e.into())
    }
}

/// Statistics of one smooth step.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SmoothStats {
    /// Contacts in overlap.
    pub contacts: usize,
    /// Kinetic energy after the step \[J\].
    pub kinetic_energy: f64,
    /// Time at the end of the step \[s\].
    pub time: f64,
}

/// Force on body a, moment on a, and new history of one contact.
type Evaluated = (Vec3, Vec3, ContactHistory);

/// Explicit DEM with Hertz-Mindlin contacts (see the crate docs).
#[derive(Debug, Clone)]
pub struct SmoothStepper {
    settings: SmoothSettings,
    collision: CollisionWorld,
    contacts: ContactSet,
    history: Vec<(ContactKey, ContactHistory)>,
    next_history: Vec<(ContactKey, ContactHistory)>,
    zeta: Vec<(u64, f64, f64)>,
    /// Constants of every material pair for this step, `[ia * n + ib]`.
    pair_table: Vec<PairConstants>,
    new_velocity: Vec<ndem_math::Velocity6>,
    skin: f64,
    /// The Verlet list: body pairs within the skin at the last rebuild,
    /// sorted.
    candidates: Vec<Candidate>,
    /// The body pairs of the last rebuild (scratch).
    pairs: Vec<(u32, u32)>,
    /// Whether a body's record (motion, membership, mass properties) or
    /// the body count changed since the last rebuild: the candidates hold
    /// masses, so the list is then rebuilt.
    bodies_changed: bool,
    reference: Vec<(Vec3, ndem_math::Quat)>,
    raw: Vec<ndem_collide::narrow::RawContact>,
    rebuilds: u64,
    force: Vec<Vec3>,
    torque: Vec<Vec3>,
    /// Per body, what integration and the candidates' invariants read of
    /// it, refreshed at the start of each step.
    records: Vec<BodyRecord>,
    /// Touching contacts of this step: index in the contact set, history.
    touching: Vec<Touching>,
    /// Force, moment and new history of each touching contact.
    evaluated: Vec<Evaluated>,
    /// Threads that evaluate contact forces (this one included).
    threads: usize,
    time: f64,
    critical: f64,
    /// The world state this stepper's last integration left, finite: when
    /// the next step finds the same stamp, nobody has written the state
    /// since, and its per-body finiteness check is passed over.
    trusted_state: Option<ndem_step::StateStamp>,
    /// The world's [`World::kinds_stamp`] that `records` were formed from:
    /// while it holds, the bodies are what they were and the records stand.
    records_of: Option<ndem_step::StateStamp>,
}

/// Shear compliance `2(2 − ν)(1 + ν)/E` of a material (for `1/G*`).
fn shear_compliance(m: &Material) -> f64 {
    2.0 * (2.0 - m.poisson_ratio) * (1.0 + m.poisson_ratio) / m.youngs_modulus
}

impl SmoothStepper {
    /// A stepper for `world`; checks `Δt` against the critical time step.
    pub fn new(settings: SmoothSettings, world: &World) -> Result<Self, SmoothError> {
        if !(settings.dt.is_finite() && settings.dt > 0.0) {
            return Err(SmoothError::InvalidSettings {
                field: "dt",
                reason: "must be finite and > 0",
            });
        }
        if !(settings.safety > 0.0 && settings.safety <= 1.0) {
            return Err(SmoothError::InvalidSettings {
                field: "safety",
                reason: "must lie in (0, 1]",
            });
        }
        let critical = critical_time_step(world, &settings.law);
        if settings.dt > settings.safety * critical {
            return Err(SmoothError::TimeStepTooLarge {
                dt: settings.dt,
                critical,
                safety: settings.safety,
            });
        }
        if !(settings.rolling_damping.is_finite() && settings.rolling_damping >= 0.0) {
            return Err(SmoothError::InvalidSettings {
                field: "rolling_damping",
                reason: "must be finite and >= 0",
            });
        }
        if !(settings.skin.is_finite() && settings.skin >= 0.0) {
            return Err(SmoothError::InvalidSettings {
                field: "skin",
                reason: "must be finite and >= 0",
            });
        }
        if settings.threads > ndem_math::blocks::MAX_THREADS {
            return Err(SmoothError::InvalidSettings {
                field: "threads",
                reason: ndem_math::blocks::THREADS_ABOVE_MAX,
            });
        }
        ndem_math::blocks::check_threads_start("threads", settings.threads)
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
        let threads = ndem_math::blocks::resolve_threads(settings.threads);
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
        if !self.settings.record_contacts {
            return Err(SmoothError::InvalidSettings {
                field: "record_contacts",
                reason: "the normal forces are those of the last step's contacts, which were not kept",
            });
        }
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

    fn zeta_for(&mut self, e: f64) -> f64 {
        let p = self.settings.law.exponent();
        if let Some(z) = self.zeta.iter().find(|z| z.0 == e.to_bits() && z.1 == p) {
            return z.2;
        }
        let z = damping_for_restitution(e, p);
        self.zeta.push((e.to_bits(), p, z));
        z
    }

    /// The material-pair table of this step: every pair's properties
    /// (the world's pair overrides applied) and ζ of its restitution.
    fn refresh_pair_table(&mut self, world: &World) -> Result<(), SmoothError> {
        let n = world.materials.len();
        self.pair_table.clear();
        for ia in 0..n {
            for ib in 0..n {
                // unit radii: the radius-free part of the pair's properties
                let pair = world.pair_properties(ia, 1.0, ib, 1.0)?;
                let zeta = self.zeta_for(pair.restitution);
                let shear_modulus = 1.0
                    / (shear_compliance(&world.materials[ia])
                        + shear_compliance(&world.materials[ib]));
                let (stiffness_factor, tangential_ratio) = match self.settings.law {
                    SmoothLaw::Hertz => (
                        4.0 / 3.0 * pair.effective_modulus,
                        6.0 * shear_modulus / pair.effective_modulus,
                    ),
                    SmoothLaw::Linear { stiffness } => (stiffness, 2.0 / 7.0),
                    SmoothLaw::LinearModulus { length } => {
                        (pair.effective_modulus * length, 2.0 / 7.0)
                    }
                };
                self.pair_table.push(PairConstants {
                    stiffness_factor,
                    damping_factor: zeta * stiffness_factor.sqrt(),
                    tangential_ratio,
                    tangential_damping_ratio: tangential_ratio.sqrt(),
                    friction: pair.friction,
                    rolling_resistance: pair.rolling_resistance,
                    zeta,
                });
            }
        }
        Ok(())
    }

    /// Largest displacement of a body since the last Verlet rebuild, plus
    /// its turn times its bounding radius for shapes that are not spheres;
    /// infinite when the list must be rebuilt anyway.
    fn largest_move(&self, world: &World) -> f64 {
        let nb = world.len();
        if self.reference.len() != nb || self.skin == 0.0 {
            return f64::INFINITY;
        }
        let mut sphere_sq = 0.0f64;
        let mut other = 0.0f64;
        for (i, (x0, q0)) in self.reference.iter().enumerate() {
            let d = world.positions()[i] - x0;
            match world.shapes()[i] {
                // a sphere's geometry does not change when it turns
                ndem_collide::Shape::Sphere { .. } => sphere_sq = sphere_sq.max(d.norm_squared()),
                ref shape => {
                    let turn = world.orientations()[i].angle_to(q0) * shape.bounding_radius();
                    other = other.max(d.norm() + turn);
                }
            }
        }
        sphere_sq.sqrt().max(other)
    }

    /// Refreshes the per-body records; a changed record (a body added, its
    /// mass properties set, made a member or released, activated or
    /// retired) marks the candidate list for a rebuild. Passed over while
    /// the world's [`World::kinds_stamp`] is the one they were formed from.
    fn refresh_records(&mut self, world: &World) {
        let nb = world.len();
        let stamp = world.kinds_stamp();
        if self.records_of == Some(stamp) && self.records.len() == nb {
            return;
        }
        self.records_of = Some(stamp);
        if self.records.len() != nb {
            self.records.clear();
            self.bodies_changed = true;
        }
        let mut changed = false;
        let orientations = self.settings.sphere_orientations;
        let fresh = (0..nb).map(|i| BodyRecord {
            motion: world.motions()[i],
            turning: orientations
                || !matches!(world.shapes()[i], ndem_collide::Shape::Sphere { .. }),
            member: world.is_member(i),
            mass: world.mass_properties()[i],
        });
        if self.records.is_empty() {
            self.records.extend(fresh);
        } else {
            for (r, f) in self.records.iter_mut().zip(fresh) {
                changed |= *r != f;
                *r = f;
            }
        }
        self.bodies_changed |= changed;
    }

    /// Rebuilds the Verlet candidate list when some body has moved (or
    /// turned) half the skin since the last rebuild, or a body's record
    /// changed: the pairs that detection with the skin as margin finds in
    /// contact ([`CollisionWorld::detect_pairs`], without forming the
    /// contacts).
    fn refresh_candidates(&mut self, world: &World) -> Result<(), SmoothError> {
        let nb = world.len();
        if self.bodies_changed || 2.0 * self.largest_move(world) >= self.skin {
            self.rebuilds += 1;
            self.collision
                .detect_pairs(&world.body_view(&[]), &mut self.pairs)?;
            self.candidates.clear();
            self.candidates.extend(
                self.pairs
                    .iter()
                    .map(|&(a, b)| Candidate::new(world, a as usize, b as usize)),
            );
            self.bodies_changed = false;
            self.reference.clear();
            self.reference
                .extend((0..nb).map(|i| (world.positions()[i], world.orientations()[i])));
        }
        Ok(())
    }

    /// One explicit step: detection, forces, symplectic Euler.
    pub fn step(&mut self, world: &mut World) -> Result<SmoothStats, SmoothError> {
        world.validate_state_unless(self.trusted_state)?;
        self.refresh_pair_table(world)?;
        self.refresh_records(world);
        let mut contacts = std::mem::take(&mut self.contacts);
        let found = self
            .refresh_candidates(world)
            .and_then(|()| self.contacts_and_forces(world, &mut contacts));
        self.contacts = contacts;
        let in_contact = found?;
        let kinetic_energy = self.integrate(world)?;
        self.time += self.settings.dt;
        Ok(SmoothStats {
            contacts: in_contact,
            kinetic_energy,
            time: self.time,
        })
    }

    /// This step's contacts from the candidate list and the forces of the
    /// touching ones; returns how many touch. On one thread the forces are
    /// evaluated as each contact is found, while its bodies' data are in
    /// cache ([`ContactForces`]); on several, after the narrow phase, in
    /// parallel. Either way the sums are taken in contact order.
    fn contacts_and_forces(
        &mut self,
        world: &World,
        contacts: &mut ContactSet,
    ) -> Result<usize, SmoothError> {
        contacts.clear();
        if self.threads > 1 {
            let found = narrow_phase(
                world,
                &self.candidates,
                &mut self.raw,
                &mut ContactOut::Set(contacts),
                &mut Discard,
            );
            if let Err(e) = found {
                contacts.clear();
                return Err(e);
            }
            return Ok(self.accumulate_contact_forces(world, contacts));
        }
        let mut history = self.reset_sums(world.len());
        let mut sums = ContactForces {
            law: ForceLaw {
                settings: &self.settings,
                pairs: &self.pair_table,
            },
            world,
            force: &mut self.force,
            torque: &mut self.torque,
            old: &self.history,
            cursor: 0,
            new: &mut history,
        };
        let mut out = if self.settings.record_contacts {
            ContactOut::Set(contacts)
        } else {
            ContactOut::Checked(None)
        };
        let found = narrow_phase(world, &self.candidates, &mut self.raw, &mut out, &mut sums);
        if let Err(e) = found {
            // the history stays the previous step's; no contact set
            self.next_history = history;
            contacts.clear();
            return Err(e);
        }
        let touching = history.len();
        self.next_history = std::mem::replace(&mut self.history, history);
        Ok(touching)
    }

    /// Zeroes the force and torque sums of `bodies` bodies and hands out
    /// the (cleared) history buffer of this step.
    fn reset_sums(&mut self, bodies: usize) -> Vec<(ContactKey, ContactHistory)> {
        self.force.clear();
        self.force.resize(bodies, Vec3::zeros());
        self.torque.clear();
        self.torque.resize(bodies, Vec3::zeros());
        let mut history = std::mem::take(&mut self.next_history);
        history.clear();
        history
    }

    /// Forces and torques of every touching contact, accumulated per body
    /// in contact order, and the contacts' new histories; returns how many
    /// contacts touch. Each contact's force is evaluated on its own (in
    /// parallel when the stepper has threads), so the sums, taken serially,
    /// do not depend on the thread count.
    fn accumulate_contact_forces(&mut self, world: &World, contacts: &ContactSet) -> usize {
        // the previous step's history, key-sorted like the contact set:
        // matched by a linear merge
        self.touching.clear();
        let mut cursor = 0;
        for (k, c) in contacts.iter().enumerate() {
            if c.gap < 0.0 {
                self.touching.push(Touching {
                    index: k as u32,
                    old: previous_history(&self.history, &mut cursor, &c.key),
                    // the values the serial path takes from the candidates,
                    // formed from the same inputs
                    bodies: PairInvariants::new(
                        world,
                        c.body_a(),
                        c.body_b(),
                        c.curvature(world.shapes()),
                    ),
                });
            }
        }
        let law = ForceLaw {
            settings: &self.settings,
            pairs: &self.pair_table,
        };
        let set = contacts.as_slice();
        let evaluate = |t: &Touching| law.force(world, &set[t.index as usize], &t.bodies, t.old);
        self.evaluated.clear();
        let zero = (Vec3::zeros(), Vec3::zeros(), ContactHistory::default());
        self.evaluated.resize(self.touching.len(), zero);
        let threads = self.threads.max(1);
        let block = self.touching.len().div_ceil(threads).max(1);
        let blocks = self
            .evaluated
            .chunks_mut(block)
            .zip(self.touching.chunks(block));
        // the first block on this thread, the others on scoped threads (a
        // block whose thread the system refuses on this one)
        ndem_math::blocks::map_parts(blocks, |(out, input): (&mut [Evaluated], &[Touching])| {
            for (o, i) in out.iter_mut().zip(input) {
                *o = evaluate(i);
            }
        });
        let mut history = self.reset_sums(world.len());
        for (t, &(f, m, h)) in self.touching.iter().zip(&self.evaluated) {
            let c = &set[t.index as usize];
            let sums = (&mut self.force[..], &mut self.torque[..]);
            add_contact_force(sums, c, world.positions(), (f, m));
            history.push((c.key, h));
        }
        self.next_history = std::mem::replace(&mut self.history, history);
        self.touching.len()
    }

    /// Symplectic Euler: velocities from this step's forces, then positions
    /// (and orientations of bodies that need them) from the new velocities.
    /// Returns the kinetic energy after the step, summed as
    /// [`World::kinetic_energy`] does. A non-finite velocity is an error and
    /// leaves the world as it was.
    fn integrate(&mut self, world: &mut World) -> Result<f64, SmoothError> {
        let dt = self.settings.dt;
        let nb = world.len();
        let g = world.gravity;
        // the new velocities of the bodies with mass, in a vector of the
        // step's own (a non-finite one leaves the world as it was); the
        // other entries are not read
        let mut new_v = std::mem::take(&mut self.new_velocity);
        resize_for_overwrite(&mut new_v, nb, ndem_math::Velocity6::ZERO);
        // the velocities that change are checked as they are formed (the
        // others passed `validate_state` at the start of the step)
        let mut non_finite = false;
        for i in 0..nb {
            if let Some(mp) = &world.mass_properties()[i] {
                let (uf, ut) = world.user_force(i);
                let torque = self.torque[i] + ut;
                let mut v = world.velocities()[i];
                if mp.is_isotropic() {
                    // R I⁻¹ Rᵀ = I⁻¹ 1: the product without the matrix
                    // (the same value: the off-diagonal terms add zeros)
                    v.linear += (g + (self.force[i] + uf) * (1.0 / mp.mass)) * dt;
                    v.angular += torque * (1.0 / mp.principal_inertia.x) * dt;
                } else {
                    let inv = mp.inverse(&world.orientations()[i]);
                    v.linear += (g + (self.force[i] + uf) * inv.inv_mass) * dt;
                    v.angular += inv.inv_inertia * torque * dt;
                }
                non_finite |= !v
                    .linear
                    .iter()
                    .chain(v.angular.iter())
                    .all(|x| x.is_finite());
                new_v[i] = v;
            }
        }
        let bad = |i: &usize| {
            let v = &new_v[*i];
            world.mass_properties()[*i].is_some()
                && !(v.linear.iter().all(|x| x.is_finite())
                    && v.angular.iter().all(|x| x.is_finite()))
        };
        if let Some(i) = non_finite.then(|| (0..nb).find(bad)).flatten() {
            self.new_velocity = new_v;
            return Err(StepError::NonFiniteVelocity {
                stage: "smooth",
                body: i,
                step: (self.time / dt).round() as u64 + 1,
                time: self.time,
            }
            .into());
        }
        let (pos, ori, vel) = world.state_mut();
        let mut kinetic = 0.0;
        // whether the positions and orientations written are finite (the
        // velocities written were checked above); if so the next step need
        // not check the state again
        let mut finite = true;
        for (i, r) in self.records.iter().enumerate() {
            // a dynamic body has mass (`World::add_body`); its entry was
            // formed above
            if r.motion == Motion::Dynamic && r.mass.is_some() {
                vel[i] = new_v[i];
            }
            if r.motion != Motion::Static {
                pos[i] += vel[i].linear * dt;
                let x = &pos[i];
                finite &= x.x.is_finite() & x.y.is_finite() & x.z.is_finite();
                if r.turning {
                    ori[i] = integrate_orientation(&ori[i], &vel[i].angular, dt);
                    finite &= ori[i].coords.iter().all(|c| c.is_finite());
                }
            }
            if let (Some(m), false) = (r.mass, r.member) {
                let v = &vel[i];
                let iw_omega = if m.is_isotropic() {
                    v.angular * m.principal_inertia.x
                } else {
                    m.world_inertia(&ori[i]) * v.angular
                };
                kinetic += 0.5 * m.mass * v.linear.norm_squared() + 0.5 * v.angular.dot(&iw_omega);
            }
        }
        self.new_velocity = new_v;
        self.trusted_state = finite.then(|| world.state_stamp());
        Ok(kinetic)
    }
}

/// Where the narrow phase writes a step's contacts. Either way each key
/// must follow the last one's (the pairs come sorted, each pair's contacts
/// in feature order): the histories are merged in key order.
enum ContactOut<'a> {
    /// Into the step's contact set.
    Set(&'a mut ContactSet),
    /// Nowhere ([`SmoothSettings::record_contacts`] off): the last key
    /// written, for the order check.
    Checked(Option<ContactKey>),
}

impl ContactOut<'_> {
    /// Writes `c` after checking its key's order.
    #[inline(always)]
    fn write(&mut self, c: &ContactPoint) -> Result<(), SmoothError> {
        let in_order = match self {
            ContactOut::Set(set) => set.push_in_order(*c),
            ContactOut::Checked(last) => {
                let follows = last.is_none_or(|k| k < c.key);
                *last = Some(c.key);
                follows
            }
        };
        if in_order {
            Ok(())
        } else {
            Err(out_of_order(c))
        }
    }
}

#[cold]
fn out_of_order(c: &ContactPoint) -> SmoothError {
    SmoothError::ContactOrder {
        body_a: c.body_a(),
        body_b: c.body_b(),
        feature: c.key.feature,
    }
}

/// The contacts of the candidate pairs, in key order (candidates are
/// sorted by body pair): sphere pairs through the closed form, other pairs
/// through the generic narrow phase; `each` sees every contact as it is
/// written.
fn narrow_phase(
    world: &World,
    candidates: &[Candidate],
    raw: &mut Vec<ndem_collide::narrow::RawContact>,
    out: &mut ContactOut<'_>,
    each: &mut impl ContactSink,
) -> Result<(), SmoothError> {
    let (pos, shapes) = (world.positions(), world.shapes());
    for candidate in candidates {
        let [a, b] = candidate.bodies.map(|i| i as usize);
        let [ra, rb] = candidate.radii;
        match candidate.kind {
            PairKind::Spheres => {
                if let Some(r) = ndem_collide::narrow::sphere_sphere(&pos[a], ra, &pos[b], rb, 0.0)
                {
                    let c = contact_point(a, b, &r);
                    out.write(&c)?;
                    each.contact(&c, Some(&candidate.invariants));
                }
                continue;
            }
            PairKind::PlaneFirst | PairKind::PlaneSecond => {
                // as the generic narrow phase: sphere against the plane's
                // world normal, the normal flipped when the plane is body a
                let plane_first = candidate.kind == PairKind::PlaneFirst;
                let (sphere, radius, plane) = if plane_first { (b, rb, a) } else { (a, ra, b) };
                if let ndem_collide::Shape::HalfSpace { normal } = &shapes[plane] {
                    let n = world.orientations()[plane] * normal;
                    if let Some(mut r) = ndem_collide::narrow::sphere_plane(
                        &pos[sphere],
                        radius,
                        &pos[plane],
                        &n,
                        0.0,
                    ) {
                        if plane_first {
                            r.normal = -r.normal;
                        }
                        let c = contact_point(a, b, &r);
                        out.write(&c)?;
                        each.contact(&c, Some(&candidate.invariants));
                    }
                    continue;
                }
            }
            PairKind::Other => {}
        }
        raw.clear();
        let placed = |i: usize| ndem_collide::narrow::Placed {
            shape: &shapes[i],
            position: pos[i],
            orientation: world.orientations()[i],
        };
        if !ndem_collide::narrow::collide(&placed(a), &placed(b), 0.0, raw) {
            return Err(ndem_collide::CollideError::UnsupportedPair {
                body_a: a,
                body_b: b,
            }
            .into());
        }
        // the pair's contacts in feature order, each feature once (the
        // generic narrow phase gives them in any order): with the pairs in
        // order, every key then follows the last, so the serial force pass
        // can merge the histories as the contacts come
        raw.sort_by_key(|r| r.feature);
        raw.dedup_by_key(|r| r.feature);
        for r in raw.iter() {
            let c = contact_point(a, b, r);
            out.write(&c)?;
            each.contact(&c, None);
        }
    }
    Ok(())
}

/// A pair of the Verlet list: which narrow phase it takes and, for the
/// closed forms, the radii of curvature and the invariants of the pair's
/// force, which hold until the next rebuild (64 bytes, read in order each
/// step).
#[derive(Debug, Clone, Copy)]
struct Candidate {
    bodies: [u32; 2],
    kind: PairKind,
    /// Radii of curvature (infinite for the half-space).
    radii: [f64; 2],
    /// Of `radii` and the bodies' masses (unused for [`PairKind::Other`],
    /// whose curvatures vary by contact).
    invariants: PairInvariants,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PairKind {
    /// Two spheres.
    Spheres,
    /// A half-space (body a) and a sphere (body b).
    PlaneFirst,
    /// A sphere (body a) and a half-space (body b).
    PlaneSecond,
    /// Anything else: the generic narrow phase.
    Other,
}

impl Candidate {
    fn new(world: &World, a: usize, b: usize) -> Self {
        use ndem_collide::Shape;
        let shapes = world.shapes();
        let kind = match (&shapes[a], &shapes[b]) {
            (Shape::Sphere { .. }, Shape::Sphere { .. }) => PairKind::Spheres,
            (Shape::HalfSpace { .. }, Shape::Sphere { .. }) => PairKind::PlaneFirst,
            (Shape::Sphere { .. }, Shape::HalfSpace { .. }) => PairKind::PlaneSecond,
            _ => PairKind::Other,
        };
        let radii = [shapes[a].curvature_radius(), shapes[b].curvature_radius()];
        Self {
            bodies: [a as u32, b as u32],
            kind,
            radii,
            invariants: PairInvariants::new(world, a, b, radii),
        }
    }
}

/// What integration and the candidates read of a body.
#[derive(Debug, Clone, Copy, PartialEq)]
struct BodyRecord {
    motion: Motion,
    /// Whether its orientation is integrated.
    turning: bool,
    /// A member of an aggregate (its own mass is not integrated).
    member: bool,
    mass: Option<ndem_math::MassProperties>,
}

/// A touching contact of this step on the threaded path: its index in the
/// contact set, its previous history and its bodies' invariants.
#[derive(Debug, Clone, Copy)]
struct Touching {
    index: u32,
    old: ContactHistory,
    bodies: PairInvariants,
}

/// What the narrow phase hands each contact to as it is written: the
/// contact and, for a closed-form pair, the pair's invariants.
trait ContactSink {
    fn contact(&mut self, c: &ContactPoint, bodies: Option<&PairInvariants>);
}

/// The threaded path's sink: its forces are evaluated on the finished set.
struct Discard;

impl ContactSink for Discard {
    #[inline(always)]
    fn contact(&mut self, _: &ContactPoint, _: Option<&PairInvariants>) {}
}

/// The serial force pass, fed contact by contact in key order: each
/// touching contact's force from its previous history (found by a linear
/// merge), added to its bodies' sums, and its new history appended.
struct ContactForces<'a> {
    law: ForceLaw<'a>,
    world: &'a World,
    force: &'a mut [Vec3],
    torque: &'a mut [Vec3],
    /// The previous step's histories, key-sorted.
    old: &'a [(ContactKey, ContactHistory)],
    cursor: usize,
    new: &'a mut Vec<(ContactKey, ContactHistory)>,
}

impl ContactSink for ContactForces<'_> {
    #[inline(always)]
    fn contact(&mut self, c: &ContactPoint, bodies: Option<&PairInvariants>) {
        if c.gap >= 0.0 {
            return;
        }
        let own;
        let bodies = match bodies {
            Some(b) => b,
            None => {
                own = PairInvariants::new(
                    self.world,
                    c.body_a(),
                    c.body_b(),
                    c.curvature(self.world.shapes()),
                );
                &own
            }
        };
        let old = previous_history(self.old, &mut self.cursor, &c.key);
        let (f, m, h) = self.law.force(self.world, c, bodies, old);
        let sums = (&mut *self.force, &mut *self.torque);
        add_contact_force(sums, c, self.world.positions(), (f, m));
        self.new.push((c.key, h));
    }
}

/// Adds contact `c`'s force `f` on body a (and `−f` on b) and its moment
/// `m` to the bodies' force and torque sums; `positions` are those the
/// contact was found at (its lever arms).
#[inline(always)]
fn add_contact_force(
    (force, torque): (&mut [Vec3], &mut [Vec3]),
    c: &ContactPoint,
    positions: &[Vec3],
    (f, m): (Vec3, Vec3),
) {
    let (a, b) = (c.body_a(), c.body_b());
    force[a] += f;
    force[b] -= f;
    torque[a] += c.arm(&positions[a]).cross(&f) + m;
    torque[b] -= c.arm(&positions[b]).cross(&f) + m;
}

/// The history the previous step left for contact `key`, found by a
/// linear merge: `history` is key-sorted and so are the keys asked for, so
/// the cursor `j` only moves forward. A new contact starts from rest.
#[inline(always)]
fn previous_history(
    history: &[(ContactKey, ContactHistory)],
    j: &mut usize,
    key: &ContactKey,
) -> ContactHistory {
    while *j < history.len() && history[*j].0 < *key {
        *j += 1;
    }
    match history.get(*j) {
        Some((k, h)) if k == key => *h,
        _ => ContactHistory::default(),
    }
}

/// The contact of bodies `a`, `b` from the narrow phase's `raw` one.
fn contact_point(a: usize, b: usize, raw: &ndem_collide::narrow::RawContact) -> ContactPoint {
    ContactPoint {
        key: ContactKey::new(a as u32, b as u32, raw.feature),
        point: raw.point,
        normal: raw.normal,
        gap: raw.gap,
    }
}

/// Critical time step: for Hertz the Rayleigh time step
/// `Δt_R = π r √(ρ/G) / (0.1631 ν + 0.8766)` of the smallest dynamic
/// sphere (Li et al. 2005; the standard DEM estimate); for the linear law
/// `2 √(m/(2k))`, the stability bound `ω Δt < 2` of symplectic Euler for two
/// equal bodies, with the lightest dynamic body (for `LinearModulus`, `k`
/// of the body's material against itself; against a stiffer species the
/// bound is smaller, so use a safety factor accordingly).
pub fn critical_time_step(world: &World, law: &SmoothLaw) -> f64 {
    let mut best = f64::INFINITY;
    for i in 0..world.len() {
        let Some(mp) = world.mass_properties()[i] else {
            continue;
        };
        let mat = &world.materials[world.body_materials()[i] as usize];
        let dt = match law {
            SmoothLaw::Hertz => {
                let r = world.shapes()[i].curvature_radius();
                let g = mat.youngs_modulus / (2.0 * (1.0 + mat.poisson_ratio));
                std::f64::consts::PI * r * (mat.density / g).sqrt()
                    / (0.1631 * mat.poisson_ratio + 0.8766)
            }
            SmoothLaw::Linear { stiffness } => 2.0 * (mp.mass / (2.0 * stiffness)).sqrt(),
            SmoothLaw::LinearModulus { length } => {
                // stiffest pair: this material against itself
                let e_star =
                    mat.youngs_modulus / (2.0 * (1.0 - mat.poisson_ratio * mat.poisson_ratio));
                2.0 * (mp.mass / (2.0 * e_star * length)).sqrt()
            }
        };
        best = best.min(dt);
    }
    best
}

#[cfg(test)]
mod tests;

//! A step of the [`SmoothStepper`]: the pair table, the Verlet candidates, the forces and the integration.

use super::*;
use ndem_step::BodyId;

impl SmoothStepper {
    pub(super) fn zeta_for(&mut self, e: f64) -> f64 {
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
    pub(super) fn refresh_pair_table(&mut self, world: &World) -> Result<(), SmoothError> {
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
    pub(super) fn largest_move(&self, world: &World) -> f64 {
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
    pub(super) fn refresh_records(&mut self, world: &World) {
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
    pub(super) fn refresh_candidates(&mut self, world: &World) -> Result<(), SmoothError> {
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
    pub(super) fn contacts_and_forces(
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
    pub(super) fn reset_sums(&mut self, bodies: usize) -> Vec<(ContactKey, ContactHistory)> {
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
    pub(super) fn accumulate_contact_forces(
        &mut self,
        world: &World,
        contacts: &ContactSet,
    ) -> usize {
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
        ndem_par::blocks::map_parts(blocks, |(out, input): (&mut [Evaluated], &[Touching])| {
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
    pub(super) fn integrate(&mut self, world: &mut World) -> Result<f64, SmoothError> {
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
                let (uf, ut) = world.user_force(BodyId::from_index(i));
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

//! The explicit smooth-DEM stepper.

use crate::law::{SmoothLaw, damping_for_restitution};
use ndem_collide::{CollisionSettings, CollisionWorld, ContactPoint, ContactSet};
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

/// Settings of the smooth stepper.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SmoothSettings {
    /// Time step \[s\].
    pub dt: f64,
    /// Normal law.
    pub law: SmoothLaw,
    /// Largest allowed `Δt / Δt_c` (default 0.2: with tangential and rolling
    /// springs a dense close packing was measured unstable at 0.3 Δt_R and
    /// stable at 0.1).
    pub safety: f64,
    /// Apply rolling resistance (elastic-plastic spring-dashpot, Ai et al.
    /// 2011, model C).
    pub rolling: bool,
    /// Damping ratio `η_r` of the rolling dashpot (model C: the dashpot
    /// `C_r = η_r 2 √(I_r k_r)` acts while the spring is below its limit;
    /// Ai et al. use 0.3). 0 leaves the rolling spring undamped, and a bed
    /// then keeps rotational oscillations that never die out.
    pub rolling_damping: f64,
    /// Verlet skin as a fraction of the smallest sphere radius: detection
    /// runs with this extra margin and only when some body has moved (or
    /// turned, times its bounding radius) more than half the skin since;
    /// in between, the narrow phase runs on the stored candidate pairs.
    /// 0 detects every step.
    pub skin: f64,
    /// Integrate the orientations of spheres. A sphere's geometry, inertia
    /// and contacts do not depend on its orientation, so by default only
    /// its angular velocity is integrated and its quaternion stays as it
    /// was (saving a `sin`/`cos` per sphere and step); set this to track
    /// it, e.g. for output that draws rotation markers. Other shapes are
    /// always integrated.
    pub sphere_orientations: bool,
}

impl Default for SmoothSettings {
    fn default() -> Self {
        Self {
            dt: 1e-5,
            law: SmoothLaw::Hertz,
            safety: 0.2,
            rolling: true,
            rolling_damping: 0.3,
            skin: 0.2,
            sphere_orientations: false,
        }
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

/// What a contact's force needs from its two materials (pair overrides
/// applied): everything of [`ndem_math::PairProperties`] but the effective radius,
/// which depends on the contact's curvatures, plus the shear modulus and
/// the damping ratio ζ of the pair's restitution.
#[derive(Debug, Clone, Copy, PartialEq)]
struct PairConstants {
    /// `E*` \[Pa\].
    effective_modulus: f64,
    /// `1/G* = 2(2−ν_a)(1+ν_a)/E_a + 2(2−ν_b)(1+ν_b)/E_b`.
    shear_compliance: f64,
    friction: f64,
    rolling_resistance: f64,
    /// ζ of the pair's restitution for the law's exponent.
    zeta: f64,
}

/// Tangential spring and rolling moment carried by a contact.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct History {
    xi: Vec3,
    rolling: Vec3,
}

/// Explicit DEM with Hertz-Mindlin contacts (see the crate docs).
#[derive(Debug, Clone)]
pub struct SmoothStepper {
    settings: SmoothSettings,
    collision: CollisionWorld,
    contacts: ContactSet,
    history: Vec<(ContactKey, History)>,
    next_history: Vec<(ContactKey, History)>,
    zeta: Vec<(u64, f64, f64)>,
    /// Constants of every material pair for this step, `[ia * n + ib]`.
    pair_table: Vec<PairConstants>,
    new_velocity: Vec<ndem_math::Velocity6>,
    skin: f64,
    candidates: Vec<(u32, u32)>,
    reference: Vec<(Vec3, ndem_math::Quat)>,
    raw: Vec<ndem_collide::narrow::RawContact>,
    rebuilds: u64,
    force: Vec<Vec3>,
    torque: Vec<Vec3>,
    /// Per body: its motion and whether its orientation is integrated.
    turning: Vec<(Motion, bool)>,
    time: f64,
    critical: f64,
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
        Ok(Self {
            settings,
            collision: CollisionWorld::new(CollisionSettings {
                margin: skin,
                ..CollisionSettings::default()
            })?,
            skin,
            candidates: Vec::new(),
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
            turning: Vec::new(),
            time: 0.0,
            critical,
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

    /// Simulated time.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// The contacts of the last step.
    pub fn contacts(&self) -> &ContactSet {
        &self.contacts
    }

    /// Total contact force on each body in the last step \[N\].
    pub fn contact_forces(&self) -> &[Vec3] {
        &self.force
    }

    /// Normal force \[N\] of each touching contact of the last step, `(contact,
    /// f_n)` with `f_n = n · f` (spring and dashpot), evaluated with the
    /// current velocities and the tangential history the step left. Not
    /// used by `step`; for force networks of a settled packing.
    pub fn normal_forces(
        &mut self,
        world: &World,
    ) -> Result<Vec<(ContactPoint, f64)>, SmoothError> {
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
            let (f, _, _) = self.contact_force(world, &c, old);
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
                self.pair_table.push(PairConstants {
                    effective_modulus: pair.effective_modulus,
                    shear_compliance: shear_compliance(&world.materials[ia])
                        + shear_compliance(&world.materials[ib]),
                    friction: pair.friction,
                    rolling_resistance: pair.rolling_resistance,
                    zeta,
                });
            }
        }
        Ok(())
    }

    /// Per-contact force on body a and moment on a about the contact
    /// (rolling), and the contact's new history.
    fn contact_force(
        &self,
        world: &World,
        c: &ContactPoint,
        old: History,
    ) -> (Vec3, Vec3, History) {
        let (a, b) = (c.body_a(), c.body_b());
        let dt = self.settings.dt;
        let (ia, ib) = (world.body_materials()[a], world.body_materials()[b]);
        let pair = &self.pair_table[ia * world.materials.len() + ib];
        // R*, as PairProperties::combine forms it
        let effective_radius = 1.0 / (1.0 / c.curvature[0] + 1.0 / c.curvature[1]);
        let mass = |i: usize| world.mass_properties()[i].map_or(f64::INFINITY, |m| m.mass);
        let (m1, m2) = (mass(a), mass(b));
        let m_eff = if m1.is_infinite() {
            m2
        } else if m2.is_infinite() {
            m1
        } else {
            m1 * m2 / (m1 + m2)
        };
        let delta = -c.gap;
        let v = world.velocities();
        let u = v[a].point_velocity(&c.arm_a) - v[b].point_velocity(&c.arm_b);
        let n = c.normal;
        let un = n.dot(&u);
        let ut = u - n * un;
        let zeta = pair.zeta;
        let (kn, p) = match self.settings.law {
            SmoothLaw::Hertz => (
                4.0 / 3.0 * pair.effective_modulus * effective_radius.sqrt(),
                1.5,
            ),
            SmoothLaw::Linear { stiffness } => (stiffness, 1.0),
            SmoothLaw::LinearModulus { length } => (pair.effective_modulus * length, 1.0),
        };
        let eta = zeta * (m_eff * kn).sqrt();
        // δ^p and δ^{(p−1)/2} without powf for the two laws
        let (dp, dd) = if p == 1.5 {
            let sq = delta.sqrt();
            (delta * sq, sq.sqrt())
        } else {
            (delta, 1.0)
        };
        let fn_ = (kn * dp - eta * dd * un).max(0.0);
        // normal stiffness dF/dδ for the tangential and rolling springs
        let k_lin = match self.settings.law {
            SmoothLaw::Hertz => 1.5 * kn * delta.sqrt(),
            SmoothLaw::Linear { .. } | SmoothLaw::LinearModulus { .. } => kn,
        };
        let kt = match self.settings.law {
            SmoothLaw::Hertz => {
                let g_star = 1.0 / pair.shear_compliance;
                8.0 * g_star * (effective_radius * delta).sqrt()
            }
            SmoothLaw::Linear { .. } | SmoothLaw::LinearModulus { .. } => 2.0 / 7.0 * kn,
        };
        // Cundall-Strack: keep the spring in the current tangent plane
        let mut xi = old.xi - n * n.dot(&old.xi);
        let old_len = old.xi.norm();
        let new_len = xi.norm();
        if new_len > 0.0 {
            xi *= old_len / new_len;
        }
        xi += ut * dt;
        let eta_t = zeta * (m_eff * kt).sqrt();
        let mut ft = -xi * kt - ut * eta_t;
        let cap = pair.friction * fn_;
        let ft_norm = ft.norm();
        if ft_norm > cap {
            ft *= if ft_norm > 0.0 { cap / ft_norm } else { 0.0 };
            xi = if kt > 0.0 {
                -(ft + ut * eta_t) / kt
            } else {
                Vec3::zeros()
            };
        }
        // rolling and twisting: elastic-plastic spring-dashpot, Ai et al.
        // (2011) model C; the dashpot acts while the spring is below its limit
        let mut rolling = old.rolling;
        let mut moment = Vec3::zeros();
        if self.settings.rolling && pair.rolling_resistance > 0.0 {
            let kr = 2.25 * k_lin * (pair.rolling_resistance * effective_radius).powi(2);
            let w_rel = v[a].angular - v[b].angular;
            rolling -= w_rel * (kr * dt);
            let rcap = pair.rolling_resistance * effective_radius * fn_;
            let rn = rolling.norm();
            if rn > rcap {
                rolling *= if rn > 0.0 { rcap / rn } else { 0.0 };
                moment = rolling;
            } else {
                let i_r = rolling_inertia(world, a, &c.arm_a, b, &c.arm_b);
                let c_r = self.settings.rolling_damping * 2.0 * (i_r * kr).sqrt();
                moment = rolling - w_rel * c_r;
            }
        } else {
            rolling = Vec3::zeros();
        }
        (n * fn_ + ft, moment, History { xi, rolling })
    }

    /// Contacts for this step, through the Verlet candidate list.
    fn find_contacts(
        &mut self,
        world: &World,
        contacts: &mut ContactSet,
    ) -> Result<(), SmoothError> {
        let nb = world.len();
        let moved = if self.reference.len() != nb || self.skin == 0.0 {
            f64::INFINITY
        } else {
            (0..nb)
                .map(|i| {
                    let (x0, q0) = &self.reference[i];
                    let turn = match world.shapes()[i] {
                        // a sphere's geometry does not change when it turns
                        ndem_collide::Shape::Sphere { .. } => 0.0,
                        ref shape => world.orientations()[i].angle_to(q0) * shape.bounding_radius(),
                    };
                    (world.positions()[i] - x0).norm() + turn
                })
                .fold(0.0, f64::max)
        };
        if 2.0 * moved >= self.skin {
            self.rebuilds += 1;
            self.collision.detect(&world.body_view(&[]), contacts)?;
            self.candidates.clear();
            self.candidates
                .extend(contacts.iter().map(|c| (c.key.body_a, c.key.body_b)));
            self.candidates.dedup();
            self.reference.clear();
            self.reference
                .extend((0..nb).map(|i| (world.positions()[i], world.orientations()[i])));
        }
        let mut out = Vec::with_capacity(self.candidates.len());
        let placed = |i: usize| ndem_collide::narrow::Placed {
            shape: &world.shapes()[i],
            position: world.positions()[i],
            orientation: world.orientations()[i],
        };
        for &(a, b) in &self.candidates {
            let (a, b) = (a as usize, b as usize);
            self.raw.clear();
            if !ndem_collide::narrow::collide(&placed(a), &placed(b), 0.0, &mut self.raw) {
                return Err(ndem_collide::CollideError::UnsupportedPair {
                    body_a: a,
                    body_b: b,
                }
                .into());
            }
            for r in &self.raw {
                out.push(ContactPoint {
                    key: ContactKey::new(a as u32, b as u32, r.feature),
                    point: r.point,
                    normal: r.normal,
                    gap: r.gap,
                    arm_a: r.point - world.positions()[a],
                    arm_b: r.point - world.positions()[b],
                    curvature: [
                        world.shapes()[a].curvature_radius(),
                        world.shapes()[b].curvature_radius(),
                    ],
                });
            }
        }
        *contacts = ContactSet::from_sorted(out);
        Ok(())
    }

    /// One explicit step: detection, forces, symplectic Euler.
    pub fn step(&mut self, world: &mut World) -> Result<SmoothStats, SmoothError> {
        world.validate_state()?;
        let dt = self.settings.dt;
        self.refresh_pair_table(world)?;
        let mut contacts = std::mem::take(&mut self.contacts);
        self.find_contacts(world, &mut contacts)?;
        let nb = world.len();
        self.force.clear();
        self.force.resize(nb, Vec3::zeros());
        self.torque.clear();
        self.torque.resize(nb, Vec3::zeros());
        // History of the previous step, key-sorted like the contact set:
        // matched by a linear merge (sequential memory access).
        let mut history = std::mem::take(&mut self.next_history);
        history.clear();
        let mut in_contact = 0;
        let mut j = 0;
        for c in contacts.iter() {
            if c.gap >= 0.0 {
                continue;
            }
            in_contact += 1;
            while j < self.history.len() && self.history[j].0 < c.key {
                j += 1;
            }
            let old = match self.history.get(j) {
                Some((k, h)) if *k == c.key => *h,
                _ => History::default(),
            };
            let (f, m, h) = self.contact_force(world, c, old);
            let (a, b) = (c.body_a(), c.body_b());
            self.force[a] += f;
            self.force[b] -= f;
            self.torque[a] += c.arm_a.cross(&f) + m;
            self.torque[b] -= c.arm_b.cross(&f) + m;
            history.push((c.key, h));
        }
        self.next_history = std::mem::replace(&mut self.history, history);
        self.contacts = contacts;
        let g = world.gravity;
        let mut new_v = std::mem::take(&mut self.new_velocity);
        new_v.clear();
        new_v.extend_from_slice(world.velocities());
        for i in 0..nb {
            if let Some(mp) = world.mass_properties()[i] {
                let inv = mp.inverse(&world.orientations()[i]);
                let (uf, ut) = world.user_force(i);
                new_v[i].linear += (g + (self.force[i] + uf) * inv.inv_mass) * dt;
                new_v[i].angular += inv.inv_inertia * (self.torque[i] + ut) * dt;
            }
        }
        if let Some(i) = new_v.iter().position(|v| {
            !(v.linear.iter().all(|x| x.is_finite()) && v.angular.iter().all(|x| x.is_finite()))
        }) {
            return Err(StepError::NonFiniteVelocity {
                stage: "smooth",
                body: i,
                step: (self.time / dt).round() as u64 + 1,
                time: self.time,
            }
            .into());
        }
        let turns = |i: usize| {
            self.settings.sphere_orientations
                || !matches!(world.shapes()[i], ndem_collide::Shape::Sphere { .. })
        };
        self.turning.clear();
        self.turning
            .extend((0..nb).map(|i| (world.motions()[i], turns(i))));
        let (pos, ori, vel) = world.state_mut();
        for (i, &(motion, turning)) in self.turning.iter().enumerate() {
            if motion == Motion::Dynamic {
                vel[i] = new_v[i];
            }
            if motion != Motion::Static {
                pos[i] += vel[i].linear * dt;
                if turning {
                    ori[i] = integrate_orientation(&ori[i], &vel[i].angular, dt);
                }
            }
        }
        self.new_velocity = new_v;
        self.time += dt;
        Ok(SmoothStats {
            contacts: in_contact,
            kinetic_energy: world.kinetic_energy(),
            time: self.time,
        })
    }
}

/// Equivalent moment of inertia of a contact for relative rotation (Ai et
/// al. 2011, eq. 16): `I_r = 1/(1/I_a + 1/I_b)` with each body's inertia
/// about the contact point, `I + m |d|²` (`I` the mean principal moment, `d`
/// the arm). A body without mass properties (static, kinematic) counts as
/// infinite.
fn rolling_inertia(world: &World, a: usize, arm_a: &Vec3, b: usize, arm_b: &Vec3) -> f64 {
    let about_contact = |i: usize, arm: &Vec3| {
        world.mass_properties()[i].map_or(0.0, |m| {
            1.0 / (m.principal_inertia.sum() / 3.0 + m.mass * arm.norm_squared())
        })
    };
    let inverse = about_contact(a, arm_a) + about_contact(b, arm_b);
    if inverse > 0.0 { 1.0 / inverse } else { 0.0 }
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
        let mat = &world.materials[world.body_materials()[i]];
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

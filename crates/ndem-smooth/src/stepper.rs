//! The explicit smooth-DEM stepper.

use crate::force::{ContactHistory, ForceLaw, PairConstants, PairInvariants};
use crate::law::{SmoothLaw, damping_for_restitution};
pub use crate::settings::SmoothSettings;
use ndem_collide::{CollisionSettings, CollisionWorld, ContactPoint, ContactSet};
use ndem_math::{ContactKey, Material, Vec3, integrate_orientation};
use ndem_par::capacity::resize_for_overwrite;
use ndem_step::{Motion, StepError, World};
use thiserror::Error;

mod setup;
mod step;

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

ndem_math::setting_error!(SmoothError);

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

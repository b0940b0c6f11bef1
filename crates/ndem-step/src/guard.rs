//! Guards of the stepper: a step whose answer cannot be trusted is either
//! refused (energy the step could not have supplied) or flagged (a contact
//! solve whose residual leaves the rest state unphysical). A
//! [`ScenePart`] extends the energy guard over the parts of a decomposed
//! scene.

use crate::{Motion, StepError, World};
use ndem_math::{ContactLaw, SettingError, Velocity6};
use ndem_par::blocks::{block_len, map_parts};
use ndem_solve::{ContactProblem, DEFAULT_TOLERANCE};

/// When the stepper flags a continuous solve as not accurate enough for
/// its rest state to be the physical one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ResidualCheck {
    /// Derived from the contact law. A residual `r` on a normal row is an
    /// error `Δg = r Δt / (4 Υ_n)` in its constraint `g = −δ^{e_H}`
    /// (`docs/theory.md`, "SPOOK"), i.e. a relative overlap error
    /// `Δδ/δ = r Δt / (4 Υ_n e_H |g|)`. The step is flagged when the mean
    /// normal residual exceeds `relative_overlap · e_H · mean(4 Υ_n |g|) / Δt`
    /// over the overlapping contacts. With rigid contacts, or when nothing
    /// overlaps, [`DEFAULT_TOLERANCE`] is used.
    FromContactLaw {
        /// Allowed relative overlap error (default 0.1).
        relative_overlap: f64,
    },
    /// Flag when the mean normal residual exceeds this value.
    Absolute {
        /// Tolerance on the mean normal-row residual.
        tolerance: f64,
    },
}

impl Default for ResidualCheck {
    fn default() -> Self {
        ResidualCheck::FromContactLaw {
            relative_overlap: 0.1,
        }
    }
}

impl ResidualCheck {
    /// Checks the fields.
    pub fn validate(&self) -> Result<(), StepError> {
        let (field, x) = match *self {
            ResidualCheck::FromContactLaw { relative_overlap } => {
                ("residual_check.relative_overlap", relative_overlap)
            }
            ResidualCheck::Absolute { tolerance } => ("residual_check.tolerance", tolerance),
        };
        StepError::require_positive(field, x)?;
        Ok(())
    }
}

/// Accumulates the contact-law tolerance of [`ResidualCheck::FromContactLaw`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct OverlapScale {
    sum: f64,
    count: usize,
}

impl OverlapScale {
    /// What [`Self::term`] gives for a contact without a term (NaN: kept
    /// as one `f64` per contact, 8 bytes where an `Option` takes 16).
    pub(crate) const NO_TERM: f64 = f64::NAN;

    /// One contact's term, for constraint value `g` and relaxation `Υ_n`:
    /// `4 Υ_n |g| / Δt` for an overlapping compliant contact, else
    /// [`Self::NO_TERM`].
    pub(crate) fn term(law: ContactLaw, g: f64, upsilon: f64, dt: f64) -> f64 {
        if g < 0.0 && !matches!(law, ContactLaw::Rigid) {
            4.0 * upsilon * g.abs() / dt
        } else {
            Self::NO_TERM
        }
    }

    /// Adds one contact's [`Self::term`] (in contact order, so that the
    /// sum does not depend on how the terms were formed).
    pub(crate) fn add_term(&mut self, term: f64) {
        if !term.is_nan() {
            self.sum += term;
            self.count += 1;
        }
    }

    /// The tolerance on the mean normal residual for this step.
    pub(crate) fn tolerance(&self, check: ResidualCheck, law: ContactLaw) -> f64 {
        match check {
            ResidualCheck::Absolute { tolerance } => tolerance,
            ResidualCheck::FromContactLaw { relative_overlap } => {
                if self.count == 0 {
                    DEFAULT_TOLERANCE
                } else {
                    relative_overlap * law.exponent() * self.sum / self.count as f64
                }
            }
        }
    }
}

/// A world that is one part of a larger scene: a rank's local world in a
/// decomposed run, whose ghost bodies are copies of bodies another part
/// counts. The energy guard then counts only this part's bodies and
/// compares the sums over all parts, so every part takes the same
/// decision ([`crate::Stepper::set_scene_part`]).
pub trait ScenePart: Send {
    /// Sets `counted[i]` (of `body_count` bodies) for each body whose
    /// energy and the work done on it this part counts (each body of the
    /// scene in exactly one part).
    fn counted_bodies(&self, body_count: usize, counted: &mut Vec<bool>);
    /// Replaces each of `values` by its sum over all parts (the same
    /// numbers on every part).
    fn sum(&mut self, values: &mut [f64]);
    /// Replaces each of `values` by its maximum over all parts.
    fn max(&mut self, values: &mut [f64]);
}

/// The work one step may supply, in parts ([`energy_bound`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct StepWork {
    /// What every constraint row could add acting alone.
    rows: f64,
    /// Largest speed of a driven body \[m/s\].
    drive: f64,
    /// `Σ m_i (|g| Δt + 2|v*_i| + 2V)` over the counted dynamic bodies.
    driven: f64,
    /// `Σ |f_i| (|v*_i| + V) Δt + |τ_i| |ω*_i| Δt` over them.
    external: f64,
}

impl StepWork {
    /// The parts of a world whose counted bodies `counted` keeps.
    pub(crate) fn of(
        world: &World,
        free: &[Velocity6],
        problems: &[ProblemWork],
        dt: f64,
        counted: impl Fn(usize) -> bool,
    ) -> Self {
        let rows: f64 = problems.iter().map(|p| p.rows).sum();
        let drive = problems.iter().fold(0.0f64, |d, p| d.max(p.drive));
        let g = world.gravity.norm();
        let mut driven = 0.0;
        let mut external = 0.0;
        for i in 0..world.len() {
            if world.motions()[i] != Motion::Dynamic || world.is_member(i) || !counted(i) {
                continue;
            }
            if let Some(m) = world.mass_properties()[i] {
                let v = free[i].linear.norm();
                driven += m.mass * (g * dt + 2.0 * v + 2.0 * drive);
                external += (world.force.get(i).norm() * (v + drive)
                    + world.torque.get(i).norm() * free[i].angular.norm())
                    * dt;
            }
        }
        Self {
            rows,
            drive,
            driven,
            external,
        }
    }

    /// The work `rows + V driven + external`.
    fn total(&self) -> f64 {
        self.rows + self.drive * self.driven + self.external
    }
}

/// The most mechanical energy (kinetic plus gravitational) a step may end
/// with, derived from the scene by passivity: the most energy the scene
/// may hold at the start (`available`: the larger of what it holds now,
/// elastic energy of compliant overlaps included
/// ([`ContactProblem::elastic_energy`], which a rebound may return as
/// motion), and the previous step's bound, so that energy dissipated
/// earlier is not held against a later step), plus what every
/// constraint row could add acting alone
/// ([`ContactProblem::row_energy_bound`]), plus the work driven bodies can
/// do in one step (a kinematic body, conveyor surface or motor moving at
/// speed `V` can at most carry every dynamic body's weight over `V Δt` and
/// reverse its momentum relative to `V`:
/// `V Σ m_i (|g| Δt + 2|v*_i| + 2V)`), plus the work of external forces
/// `Σ |f_i| (|v*_i| + drive) Δt` ([`StepWork`]). It is a loose bound meant
/// to catch a step that created energy from nothing (a diverged or garbage
/// solve), not a conservation law.
pub(crate) fn energy_bound(energy_before: f64, work: &StepWork) -> f64 {
    let work = work.total();
    // round-off of the energy sums
    let slack = 1e-12 * (energy_before.abs() + work) + 1e-300;
    energy_before + work + slack
}

/// The guard's figures of one step, summed over the parts of a scene:
/// the energy held at the start (bodies and elastic energy), after the
/// step, and the work; for a world that is not a part, its own figures.
pub(crate) struct StepEnergy {
    /// Energy held at the start (kinetic, potential, elastic) \[J\].
    pub held: f64,
    /// Energy after the step ([`World::energy_after_positions`]) \[J\].
    pub after: f64,
    /// The work the step may supply.
    pub work: StepWork,
}

impl StepEnergy {
    /// Sums the figures over the parts of a scene (contact terms, formed
    /// over this part's whole problem, count on every part that holds the
    /// contact: a looser bound than one part's, never a tighter one).
    pub(crate) fn reduce(&mut self, part: &mut dyn ScenePart) {
        let mut sums = [
            self.held,
            self.after,
            self.work.rows,
            self.work.driven,
            self.work.external,
        ];
        part.sum(&mut sums);
        let mut drive = [self.work.drive];
        part.max(&mut drive);
        [
            self.held,
            self.after,
            self.work.rows,
            self.work.driven,
            self.work.external,
        ] = sums;
        self.work.drive = drive[0];
    }
}

/// What one solved problem contributes to the energy bound: the work its
/// rows can do ([`ContactProblem::row_energy_bound`]) and the largest speed
/// of a driven body it touches. Taken right after a stage's solve, so that
/// the stage's problem can be released before the next one is assembled.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProblemWork {
    rows: f64,
    drive: f64,
}

impl ProblemWork {
    /// Both figures of `problem`, each formed on `threads` threads (the
    /// same numbers on any count), the row bound's block sums in
    /// `block_sums` (the stepper's, kept from step to step).
    pub(crate) fn of(
        world: &World,
        problem: &ContactProblem,
        threads: usize,
        block_sums: &mut Vec<f64>,
    ) -> Self {
        Self::of_part(world, problem, None, threads, block_sums)
    }

    /// [`Self::of`] a problem over some of the world's bodies: its body
    /// `i` is the world's `world_of[i]` (all of them, in order, for
    /// `None`).
    pub(crate) fn of_part(
        world: &World,
        problem: &ContactProblem,
        world_of: Option<&[usize]>,
        threads: usize,
        block_sums: &mut Vec<f64>,
    ) -> Self {
        Self {
            rows: problem.row_energy_bound_in(threads, block_sums),
            drive: drive_speed(world, problem, world_of, threads),
        }
    }
}

/// Largest speed at which a driven body (kinematic body, conveyor surface,
/// motor or stabilisation target of a generic row) moves a contact or row:
/// the largest over `threads` consecutive ranges of contacts (a maximum,
/// the same on any count).
fn drive_speed(
    world: &World,
    p: &ContactProblem,
    world_of: Option<&[usize]>,
    threads: usize,
) -> f64 {
    let contacts = p.contacts();
    // a contact drives only through a kinematic body or a tangential
    // right-hand side: without either (a packing at rest) every contact's
    // speed is zero and none is read
    let kinematic = world.motions().contains(&Motion::Kinematic);
    let read = if kinematic || !p.tangential_rhs_is_zero() {
        contacts.len()
    } else {
        0
    };
    let per_thread = block_len(read, threads);
    let ranges = (0..read)
        .step_by(per_thread)
        .map(|s| s..(s + per_thread).min(read));
    let parts = map_parts(ranges, |range| {
        range.fold(0.0f64, |speed, i| {
            contacts.get(i).map_or(speed, |c| {
                speed.max(contact_drive_speed(world, &c, world_of))
            })
        })
    });
    let mut speed = parts.into_iter().fold(0.0f64, f64::max);
    for r in p.generic_rows() {
        let len = r.jacobian.linear_a.norm().max(r.jacobian.linear_b.norm());
        if len > 0.0 {
            speed = speed.max(r.rhs.abs() / len);
        }
    }
    speed
}

/// [`drive_speed`] of one contact: its kinematic bodies' speeds along
/// its rows and its surface-velocity target.
fn contact_drive_speed(world: &World, c: &ndem_solve::Contact, world_of: Option<&[usize]>) -> f64 {
    let mut speed = 0.0f64;
    for body in c.bodies {
        let b = world_of.map_or(body as usize, |w| w[body as usize]);
        if world.motions()[b] == Motion::Kinematic {
            let v = world.velocities()[b];
            let zero = Velocity6::ZERO;
            let (va, vb) = if body == c.bodies[0] {
                (v, zero)
            } else {
                (zero, v)
            };
            let gv = c.jacobian.velocity(&va, &vb);
            let s = c.jacobian.normal_scale.max(f64::MIN_POSITIVE);
            let u = Velocity6::new(
                ndem_math::Vec3::new(gv[0] / s, gv[1], gv[2]),
                ndem_math::Vec3::zeros(),
            );
            speed = speed.max(u.linear.norm());
        }
    }
    speed.max(c.rhs[1].hypot(c.rhs[2]))
}

/// Fails when the mechanical energy after a step exceeds its bound.
pub(crate) fn check_energy(
    step: u64,
    time: f64,
    before: f64,
    after: f64,
    bound: f64,
) -> Result<(), StepError> {
    if after.is_finite() && after <= bound {
        Ok(())
    } else {
        Err(StepError::EnergyGrowth {
            step,
            time,
            before,
            after,
            bound,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BodyDesc, MaterialId};
    use ndem_math::{ContactFrame, ContactJacobian, Material, Vec3};
    use ndem_solve::{Contact, ContactRows, FrictionSet, InverseMasses};

    /// A problem over some of the world's bodies, numbered apart, finds
    /// the driven body's speed through `world_of` as the problem over all
    /// of them in the world's numbering finds it; read in the world's
    /// numbering its bodies are the floor and the dynamic sphere, and it
    /// finds none.
    #[test]
    fn a_part_finds_its_driven_body_through_its_numbering() {
        let r = 0.01;
        let mut world = World::on_floor(Material::default()).unwrap();
        let material = MaterialId::from_index(0);
        let resting = BodyDesc::sphere(r, material, Vec3::new(0.0, 0.0, r)).unwrap();
        let mut driven = BodyDesc::sphere(r, material, Vec3::new(-2.0 * r, 0.0, r)).unwrap();
        driven.motion = Motion::Kinematic;
        let speed = Velocity6::new(Vec3::new(2.0, 0.0, 0.0), Vec3::zeros());
        world.add_body(resting).unwrap();
        world.add_body(driven.with_velocity(speed)).unwrap();
        // the driven sphere (a) pushes the resting one (b) along x
        let frame = ContactFrame::from_unit_normal(-Vec3::x());
        let jacobian = ContactJacobian::new(
            frame,
            &Vec3::new(r, 0.0, 0.0),
            &Vec3::new(-r, 0.0, 0.0),
            1.0,
        );
        let problem = |bodies: &[usize], contact: [u32; 2]| {
            let mut inverse_mass = InverseMasses::new();
            for &b in bodies {
                world.push_inverse_mass(b, &mut inverse_mass);
            }
            let free = bodies.iter().map(|&b| world.velocities()[b]).collect();
            let rows = ContactRows::NormalFrictionRolling;
            let mut p =
                ContactProblem::new(inverse_mass, free, rows, FrictionSet::Disk, 1e-3).unwrap();
            p.push_contact(Contact::builder(contact, jacobian).build().unwrap())
                .unwrap();
            p
        };
        let whole = problem(&[0, 1, 2], [2, 1]);
        let part = problem(&[2, 1], [0, 1]);
        assert_eq!(drive_speed(&world, &whole, None, 1), 2.0);
        assert_eq!(drive_speed(&world, &part, Some(&[2, 1]), 1), 2.0);
        assert_eq!(drive_speed(&world, &part, None, 1), 0.0);
    }
}

//! The impact stage on an active set ([`crate::ImpactScope::ActiveSet`]):
//! the impact problem of Algorithm 1 (lines 8-9) solved over the contacts
//! the impacts reach instead of the whole network.

use super::solve::StageState;
use super::*;
use ndem_solve::InverseMasses;
use std::collections::HashMap;
use std::collections::hash_map::Entry;

/// The share of the solver contacts above which the set gives way to the
/// whole-network stage: an impact that reaches that much of it is solved
/// as the papers' stepper solves every impact, over every contact from
/// `λ = 0` (the step's `v⁺` is then the whole-network stage's). The set
/// also gives way once its rounds have cost an eighth of the
/// whole-network stage's budget (`impact_iterations` sweeps of every
/// contact), each round charged what it costs in sweeps of one contact:
/// its sweeps, its solve's other passes ([`SOLVE_PASSES`]), the assembly
/// of the contacts that joined ([`ROUND_ASSEMBLY_SWEEPS`]), one for every
/// contact it examined for joining, and its per-body work
/// ([`BODIES_PER_CONTACT_SWEEP`]).
const WHOLE_SHARE: f64 = 0.25;

/// The impact solves' tolerance (the whole-network stage's, 1e-10).
const TOLERANCE: f64 = 1e-10;

/// PGS sweeps of a round while the set grows.
const GROWTH_SWEEPS: usize = 2;

/// A solve's passes besides its sweeps, in sweeps of the set's contacts:
/// the preparation and the residuals at its start and end (on the built-in
/// excavator 2.5 sweeps' time per contact, fitted over the rounds of 1600
/// steps: 156 ns per contact and solve against 63 ns per contact and
/// sweep, one thread of this project's 2-core host).
const SOLVE_PASSES: usize = 3;

/// What the contacts that joined cost besides their sweeps, in sweeps of
/// them: their rows are assembled from the contact geometry (on the
/// built-in excavator about four sweeps' time per contact). A contact
/// examined for joining costs about one sweep of it (measured as above:
/// 50 ns).
const ROUND_ASSEMBLY_SWEEPS: usize = 4;

/// The set's bodies whose per-body work in a round (the solver's
/// preparation and residual checks, the velocities written back) costs
/// about one contact's sweep.
const BODIES_PER_CONTACT_SWEEP: usize = 4;

/// The solver contacts as an adjacency: for each carrier body, the
/// positions (in the solver-contact list) of the contacts it touches.
struct Adjacency {
    start: Vec<u32>,
    contacts: Vec<u32>,
}

impl Adjacency {
    fn of(world: &World, set: &[ndem_collide::ContactPoint], solver_contacts: &[u32]) -> Self {
        let n = world.len();
        let mut start = vec![0u32; n + 1];
        for &k in solver_contacts {
            for b in stages::carriers(world, set, k) {
                start[b + 1] += 1;
            }
        }
        for b in 0..n {
            start[b + 1] += start[b];
        }
        let mut fill = start.clone();
        let mut contacts = vec![0u32; start[n] as usize];
        for (i, &k) in solver_contacts.iter().enumerate() {
            for b in stages::carriers(world, set, k) {
                contacts[fill[b] as usize] = i as u32;
                fill[b] += 1;
            }
        }
        Self { start, contacts }
    }

    fn of_body(&self, b: usize) -> &[u32] {
        &self.contacts[self.start[b] as usize..self.start[b + 1] as usize]
    }
}

/// The set's bodies: those its contacts touch, numbered in the order
/// they joined. The set's problem holds only these, so that a round's work
/// follows the set, not the world.
#[derive(Default)]
struct SetBodies {
    /// The world's index of each of the set's bodies.
    world_of: Vec<usize>,
    /// The set's index of each world body in it.
    local_of: HashMap<usize, u32>,
}

impl SetBodies {
    /// Numbers world body `b` next, unless the set holds it already.
    fn insert(&mut self, b: usize) {
        if let Entry::Vacant(e) = self.local_of.entry(b) {
            e.insert(self.world_of.len() as u32);
            self.world_of.push(b);
        }
    }

    /// The set's index of world body `b` (one of its bodies).
    fn local(&self, b: u32) -> u32 {
        self.local_of[&(b as usize)]
    }
}

/// The set's contacts (positions in the solver-contact list, in the
/// order they joined, which is the set's problem's order), a membership
/// flag per solver contact, and the set's impulses (`rows` per contact).
struct ActiveSet {
    positions: Vec<u32>,
    member: Vec<bool>,
    lambda: Vec<f64>,
}

impl ActiveSet {
    fn new(contacts: usize) -> Self {
        Self {
            positions: Vec::new(),
            member: vec![false; contacts],
            lambda: Vec::new(),
        }
    }

    /// Adds `joined` (outside the set), their impulses zero.
    fn add(&mut self, joined: &[u32], rows: usize) {
        for &i in joined {
            self.member[i as usize] = true;
        }
        self.positions.extend_from_slice(joined);
        self.lambda.resize(self.positions.len() * rows, 0.0);
    }
}

/// The set's problem: the impact rows of its contacts over its bodies,
/// with `v⁻` as the free velocity, and the bodies' velocities now.
struct SetProblem {
    problem: ContactProblem,
    bodies: SetBodies,
    velocity: Vec<Velocity6>,
}

impl SetProblem {
    /// Writes the set's velocities into the world's `velocity`; returns the
    /// world's indices of the bodies whose velocity differs from `before`
    /// (the set's, before the solve). A velocity that is not finite is an
    /// error naming the world's body.
    fn settle_into(
        &self,
        velocity: &mut [Velocity6],
        before: &[Velocity6],
        at: (u64, f64),
    ) -> Result<Vec<usize>, StepError> {
        check_velocity(&self.velocity, "impact", at, 1).map_err(|e| match e {
            StepError::NonFiniteVelocity { body, .. } => StepError::NonFiniteVelocity {
                stage: "impact",
                body: self.bodies.world_of[body],
                step: at.0,
                time: at.1,
            },
            e => e,
        })?;
        let mut changed = Vec::new();
        for ((&b, v), was) in self.bodies.world_of.iter().zip(&self.velocity).zip(before) {
            velocity[b] = *v;
            if v != was {
                changed.push(b);
            }
        }
        Ok(changed)
    }

    /// Appends the rows of the solver contacts at `joined` (positions in
    /// `solver_contacts`) and the bodies they bring, whose velocities
    /// start at `now`'s.
    fn grow(
        &mut self,
        world: &World,
        (settings, pairs): (&StepSettings, &stages::MaterialPairs),
        (set, solver_contacts): (&[ndem_collide::ContactPoint], &[u32]),
        joined: &[u32],
        (v_minus, now): (&[Velocity6], &[Velocity6]),
    ) -> Result<(), StepError> {
        let listed: Vec<u32> = joined
            .iter()
            .map(|&i| solver_contacts[i as usize])
            .collect();
        let first = self.bodies.world_of.len();
        for &k in &listed {
            for b in stages::carriers(world, set, k) {
                self.bodies.insert(b);
            }
        }
        let new = &self.bodies.world_of[first..];
        let mut inverse_mass = InverseMasses::new();
        for &b in new {
            world.push_inverse_mass(b, &mut inverse_mass);
        }
        let free: Vec<Velocity6> = new.iter().map(|&b| v_minus[b]).collect();
        self.velocity.extend(new.iter().map(|&b| now[b]));
        self.problem.push_bodies(&inverse_mass, &free)?;
        let bodies = &self.bodies;
        let contact = |i: usize| {
            let (mut c, impact) =
                stages::impact_contact(world, (settings, pairs), set, listed[i], v_minus)?;
            c.bodies = c.bodies.map(|b| bodies.local(b));
            Ok((c, impact))
        };
        let mut impacting = vec![false; listed.len()];
        let threads = stages::assembly_threads(settings, listed.len());
        self.problem
            .extend_contacts_with(&mut impacting, threads, contact)
            .map_err(stages::fill_error)
    }
}

/// How the stage ended: the last solve's residuals judged against the
/// stage's start, `λ = 0` at `v⁻` on the last problem's rows (as the
/// whole-network stage's cold solve is judged), not against the impulses
/// of the rounds before, which that solve started from.
fn stage_status(problem: &ContactProblem, rep: &SolveReport) -> SolverStatus {
    let zeros = vec![0.0; problem.len()];
    let start = ResidualEvaluator::new().stats(problem, &zeros, Some(problem.free_velocity()));
    let stalled = rep.status == SolverStatus::Stalled;
    SolverStatus::judge_rows(&rep.residuals, &start, TOLERANCE, stalled)
}

impl Stepper {
    /// The impact stage over an active set: the impacting contacts and
    /// those violated by more than `join_velocity` at `v⁻`, grown after
    /// each solve by the contacts next to a body whose velocity changed
    /// whose rows the new velocities violate by more than
    /// `join_velocity`, and solved again (warm) until none joins; or, past
    /// [`WHOLE_SHARE`] of the network or its budget, the whole-network
    /// stage from `λ = 0` at `v⁻`. The set's problem holds its contacts
    /// and their bodies only, and grows by the contacts that join.
    pub(super) fn impact_stage_active(
        &mut self,
        world: &World,
        contacts: &ContactSet,
        stage: &mut StageState,
        join_velocity: f64,
    ) -> Result<(), StepError> {
        let settings = self.settings;
        let set = contacts.as_slice();
        let solver_contacts = &stage.solver_contacts;
        let (impacts, seeds) = stages::impact_seeds(
            world,
            &settings,
            (set, solver_contacts),
            &stage.velocity,
            join_velocity,
        )?;
        stage.stats.impacts = impacts;
        self.impacts_last_step = impacts > 0;
        if !self.impact_solver.any_subdomain(impacts > 0) {
            return Ok(());
        }
        let v_minus = stage.velocity.clone();
        // built when the first round looks for contacts to join (a set
        // that gives way at once never needs it)
        let mut adjacency = None;
        let n = solver_contacts.len();
        let rows = settings.contact_rows.count();
        let mut active = ActiveSet::new(n);
        // row-wise PGS: a few sweeps while the set grows, the stage's
        // budget once it has stopped growing
        let pgs = |sweeps: usize| {
            ProjectedGaussSeidel::with_stopping(Stopping::to_tolerance(sweeps, TOLERANCE))
                .map_err(StepError::from)
        };
        let mut growing = pgs(GROWTH_SWEEPS.min(settings.impact_iterations))?;
        let mut settling = pgs(settings.impact_iterations)?;
        // an eighth of the contact sweeps the whole-network stage may
        // spend: past them the set gives way to that stage. A round is
        // charged what it costs, counted in contact sweeps ([`WHOLE_SHARE`]).
        let budget = settings.impact_iterations * n / 8;
        let (mut sweeps, mut work, mut last_round) = (0, 0, false);
        let empty = ContactProblem::new(
            InverseMasses::new(),
            Vec::new(),
            settings.contact_rows,
            settings.friction_set,
            settings.dt,
        )?;
        let mut part = SetProblem {
            problem: empty.without_model_data().reusing(&mut self.storage),
            bodies: SetBodies::default(),
            velocity: Vec::new(),
        };
        let mut joined = seeds;
        let rep = loop {
            let wide = (active.positions.len() + joined.len()) as f64 > WHOLE_SHARE * n as f64;
            if work > budget || wide {
                // the papers' stage: the whole network from `λ = 0` at `v⁻`
                self.storage = part.problem.into_storage();
                stage.velocity.copy_from_slice(&v_minus);
                self.impact_stage_whole(world, contacts, stage)?;
                stage.stats.impact_iterations += sweeps;
                return Ok(());
            }
            let pairs = &self.material_pairs;
            let velocities = (v_minus.as_slice(), stage.velocity.as_slice());
            let listed = (set, solver_contacts.as_slice());
            part.grow(world, (&settings, pairs), listed, &joined, velocities)?;
            active.add(&joined, rows);
            let before = part.velocity.clone();
            let solver = if last_round {
                &mut settling
            } else {
                &mut growing
            };
            let rep = solver
                .solve(&part.problem, &mut active.lambda, &mut part.velocity)
                .map_err(super::solve::impact_failed(stage.at))?;
            sweeps += rep.iterations;
            work += (rep.iterations + SOLVE_PASSES) * active.positions.len()
                + ROUND_ASSEMBLY_SWEEPS * joined.len()
                + part.velocity.len() / BODIES_PER_CONTACT_SWEEP;
            stage.stats.impact_residual = rep.residuals.normal.max;
            let changed = part.settle_into(&mut stage.velocity, &before, stage.at)?;
            let adjacency =
                adjacency.get_or_insert_with(|| Adjacency::of(world, set, solver_contacts));
            let reach = (&*adjacency, active.member.as_slice());
            let examined;
            (joined, examined) = self.joining(world, set, stage, reach, &changed, join_velocity)?;
            work += examined;
            if joined.is_empty() && last_round {
                break rep;
            }
            // a set that holds is solved with the stage's budget
            last_round = joined.is_empty();
        };
        let problem = part.problem;
        stage.stats.impact_iterations = sweeps;
        stage.stats.impact_status = Some(stage_status(&problem, &rep));
        stage.stats.impact_contacts = active.positions.len();
        stage.lambda = active.lambda;
        if settings.energy_guard {
            let threads = stages::assembly_threads(&settings, problem.contacts().len());
            let sums = &mut self.energy_sums;
            let world_of = Some(part.bodies.world_of.as_slice());
            stage.impact = Some(guard::ProblemWork::of_part(
                world, &problem, world_of, threads, sums,
            ));
        }
        self.storage = problem.into_storage();
        Ok(())
    }

    /// The contacts outside the set (`in_set` false) that touch one of the
    /// `changed` bodies (those whose velocity the last solve changed) and
    /// whose rows the new velocities violate by more than `join_velocity`,
    /// each once, in increasing order; and how many contacts it examined.
    fn joining(
        &self,
        world: &World,
        set: &[ndem_collide::ContactPoint],
        stage: &StageState,
        (adjacency, in_set): (&Adjacency, &[bool]),
        changed: &[usize],
        join_velocity: f64,
    ) -> Result<(Vec<u32>, usize), StepError> {
        let mut joined: Vec<u32> = Vec::new();
        let mut examined = 0;
        for &b in changed {
            for &i in adjacency.of_body(b) {
                let i_us = i as usize;
                if in_set[i_us] {
                    continue;
                }
                examined += 1;
                let k = stage.solver_contacts[i_us];
                let (gap, un) = stages::normal_approach(world, set, &stage.velocity, k)?;
                if stages::row_violation(&self.settings, gap, un) > join_velocity {
                    joined.push(i);
                }
            }
        }
        // a contact between two changed bodies is reached twice
        joined.sort_unstable();
        joined.dedup();
        Ok((joined, examined))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The last solve's residuals are judged against `λ = 0`, not against
    /// the impulses it started from: a report that its own start would
    /// call diverged is an iteration limit when it improved on the
    /// stage's start, and one whose normal rows end worse than at `λ = 0`
    /// is diverged whatever it started from.
    #[test]
    fn the_stage_is_judged_against_its_start() {
        let problem = ndem_testkit::generate::default_packing([3, 3, 2]);
        let mut lambda = vec![0.0; problem.len()];
        let mut velocity = problem.free_velocity().to_vec();
        let mut pgs = ProjectedGaussSeidel::with_stopping(Stopping::iterations(3)).unwrap();
        let rep = pgs.solve(&problem, &mut lambda, &mut velocity).unwrap();
        assert_eq!(rep.status, SolverStatus::IterationLimit);
        assert_eq!(stage_status(&problem, &rep), SolverStatus::IterationLimit);
        // the same answer after a better warm start
        let mut warm = rep.clone();
        warm.initial_residuals.normal.max = 0.5 * rep.residuals.normal.max;
        warm.status = SolverStatus::Diverged;
        assert_eq!(stage_status(&problem, &warm), SolverStatus::IterationLimit);
        // normal rows worse than at the stage's start
        let mut worse = rep.clone();
        worse.residuals.normal.max = 2.0 * rep.initial_residuals.normal.max;
        worse.residuals.max = worse.residuals.normal.max;
        assert_eq!(stage_status(&problem, &worse), SolverStatus::Diverged);
    }
}

//! The impact stage on an active set ([`crate::ImpactScope::ActiveSet`]):
//! the impact problem of Algorithm 1 (lines 8-9) solved over the contacts
//! the impacts reach instead of the whole network.

use super::solve::StageState;
use super::*;

/// The share of the solver contacts above which the set gives way to the
/// whole-network stage: an impact that reaches that much of it is solved
/// as the papers' stepper solves every impact, over every contact from
/// `λ = 0` (the step's `v⁺` is then the whole-network stage's). The set
/// also gives way once its rounds have cost an eighth of the
/// whole-network stage's budget (`impact_iterations` sweeps of every
/// contact), each round charged its sweeps, its assembly and its per-body
/// work ([`ROUND_ASSEMBLY_SWEEPS`], [`BODIES_PER_CONTACT_SWEEP`]).
const WHOLE_SHARE: f64 = 0.25;

/// The impact solves' tolerance (the whole-network stage's, 1e-10).
const TOLERANCE: f64 = 1e-10;

/// PGS sweeps of a round while the set grows.
const GROWTH_SWEEPS: usize = 2;

/// What a round costs besides its sweeps, in sweeps of its contacts: the
/// round assembles its problem from the contact geometry again (on the
/// built-in excavator about four sweeps' time per contact).
const ROUND_ASSEMBLY_SWEEPS: usize = 4;

/// Bodies whose per-body work in a round (the problem's body arrays, the
/// solver's velocities) costs about one contact's sweep.
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

/// The impulses of `old` (one block of `rows` per contact of `old_set`)
/// placed at their contacts' places in `new_set` (a sorted superset), zero
/// for the contacts that joined.
fn carried_impulses(old_set: &[u32], old: &[f64], new_set: &[u32], rows: usize) -> Vec<f64> {
    let mut out = vec![0.0; new_set.len() * rows];
    let mut j = 0;
    for (i, &c) in new_set.iter().enumerate() {
        if j < old_set.len() && old_set[j] == c {
            out[i * rows..(i + 1) * rows].copy_from_slice(&old[j * rows..(j + 1) * rows]);
            j += 1;
        }
    }
    out
}

/// The carriers of the listed contacts, each once, in increasing order.
fn set_bodies(world: &World, set: &[ndem_collide::ContactPoint], listed: &[u32]) -> Vec<usize> {
    let mut bodies: Vec<usize> = listed
        .iter()
        .flat_map(|&k| stages::carriers(world, set, k))
        .collect();
    bodies.sort_unstable();
    bodies.dedup();
    bodies
}

/// The set's contacts (positions in the solver-contact list, in
/// increasing order), a membership flag per solver contact, and the set's
/// impulses (`rows` per contact, in the set's order).
struct ActiveSet {
    positions: Vec<u32>,
    member: Vec<bool>,
    lambda: Vec<f64>,
    rows: usize,
}

impl ActiveSet {
    fn new(seeds: Vec<u32>, contacts: usize, rows: usize) -> Self {
        let mut member = vec![false; contacts];
        for &i in &seeds {
            member[i as usize] = true;
        }
        Self {
            positions: seeds,
            member,
            lambda: Vec::new(),
            rows,
        }
    }

    /// Adds `joined` (outside the set, increasing), their impulses zero.
    fn add(&mut self, joined: &[u32]) {
        if joined.is_empty() {
            return;
        }
        for &i in joined {
            self.member[i as usize] = true;
        }
        let mut grown: Vec<u32> = self.positions.iter().chain(joined).copied().collect();
        grown.sort_unstable();
        self.lambda.resize(self.positions.len() * self.rows, 0.0);
        self.lambda = carried_impulses(&self.positions, &self.lambda, &grown, self.rows);
        self.positions = grown;
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
    /// stage from `λ = 0` at `v⁻`.
    pub(super) fn impact_stage_active(
        &mut self,
        world: &World,
        contacts: &ContactSet,
        stage: &mut StageState,
        join_velocity: f64,
    ) -> Result<(), StepError> {
        let settings = self.settings;
        let ((step, time), threads) = (stage.at, stage.threads);
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
        let mut active = ActiveSet::new(seeds, n, settings.contact_rows.count());
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
        // charged its sweeps, its assembly and its per-body work.
        let budget = settings.impact_iterations * n / 8;
        let (mut sweeps, mut work, mut last_round) = (0, 0, false);
        let (problem, rep) = loop {
            let wide = active.positions.len() as f64 > WHOLE_SHARE * n as f64;
            if work > budget || wide {
                // the papers' stage: the whole network from `λ = 0` at `v⁻`
                stage.velocity.copy_from_slice(&v_minus);
                self.impact_stage_whole(world, contacts, stage)?;
                stage.stats.impact_iterations += sweeps;
                return Ok(());
            }
            let listed: Vec<u32> = active
                .positions
                .iter()
                .map(|&i| solver_contacts[i as usize])
                .collect();
            let problem = stages::build_impact_problem(
                world,
                (&settings, &self.material_pairs),
                (set, &listed),
                &v_minus,
                &mut self.storage,
                &mut self.impact_flags,
            )?;
            active.lambda.resize(problem.len(), 0.0);
            let before: Vec<(usize, Velocity6)> = set_bodies(world, set, &listed)
                .into_iter()
                .map(|b| (b, stage.velocity[b]))
                .collect();
            let solver = if last_round {
                &mut settling
            } else {
                &mut growing
            };
            let rep = solver
                .solve(&problem, &mut active.lambda, &mut stage.velocity)
                .map_err(super::solve::impact_failed((step, time)))?;
            sweeps += rep.iterations;
            work += (rep.iterations + ROUND_ASSEMBLY_SWEEPS) * active.positions.len()
                + world.len() / BODIES_PER_CONTACT_SWEEP;
            stage.stats.impact_residual = rep.residuals.normal.max;
            check_velocity(&stage.velocity, "impact", stage.at, threads)?;
            let adjacency =
                adjacency.get_or_insert_with(|| Adjacency::of(world, set, solver_contacts));
            let reach = (&*adjacency, active.member.as_slice());
            let joined = self.joining(world, set, stage, reach, &before, join_velocity)?;
            if joined.is_empty() && last_round {
                break (problem, rep);
            }
            // a set that holds is solved with the stage's budget
            last_round = joined.is_empty();
            active.add(&joined);
            self.storage = problem.into_storage();
        };
        stage.stats.impact_iterations = sweeps;
        stage.stats.impact_status = Some(stage_status(&problem, &rep));
        stage.stats.impact_contacts = active.positions.len();
        stage.lambda = active.lambda;
        if settings.energy_guard {
            let threads = stages::assembly_threads(&settings, problem.contacts().len());
            let sums = &mut self.energy_sums;
            stage.impact = Some(guard::ProblemWork::of(world, &problem, threads, sums));
        }
        self.storage = problem.into_storage();
        Ok(())
    }

    /// The contacts outside the set (`in_set` false) that touch a body
    /// whose velocity the last solve changed from `before` (the set's
    /// bodies and their velocities before it) and whose rows the new
    /// velocities violate by more than `join_velocity`, each once, in
    /// increasing order.
    fn joining(
        &self,
        world: &World,
        set: &[ndem_collide::ContactPoint],
        stage: &StageState,
        (adjacency, in_set): (&Adjacency, &[bool]),
        before: &[(usize, Velocity6)],
        join_velocity: f64,
    ) -> Result<Vec<u32>, StepError> {
        let mut joined: Vec<u32> = Vec::new();
        for &(b, was) in before {
            if stage.velocity[b] == was {
                continue;
            }
            for &i in adjacency.of_body(b) {
                let i_us = i as usize;
                if in_set[i_us] {
                    continue;
                }
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
        Ok(joined)
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

//! The solve stages of a step (warm-starting paper, Algorithm 1, lines
//! 3-4): contact data, the impact stage and the continuous stage.

use super::*;

impl Stepper {
    /// Contact data, impact stage and continuous stage of one step (all on
    /// scratch copies; the world is not touched).
    pub(super) fn solve_stages(
        &mut self,
        world: &World,
        contacts: &ContactSet,
        times: &mut StageTimes,
    ) -> Result<SolvedStep, StepError> {
        let at = (self.step + 1, self.time);
        let settings = self.settings;
        // the threads of the stages' passes over bodies and rows
        let threads = ndem_par::blocks::resolve_threads(settings.assembly_threads);
        let t = Instant::now();
        // the solver contacts are kept as their contact-set indices, in the
        // last step's contact index: after the solve they are this one's
        let mut solver_contacts = std::mem::take(&mut self.contact_index);
        let overlap_max = stages::contact_data(
            world,
            contacts,
            stages::Resolution::Reduced,
            at,
            &mut solver_contacts,
            threads,
        );
        // a part of a decomposed scene that failed here stops every part
        // before the impact solve's exchanges
        let overlap_max = self.agree_across_parts(overlap_max)?;
        // the stages' working velocities (v⁺ after the impact stage), in
        // the vector that held v_i of the last step
        let mut velocity = std::mem::take(&mut self.velocity);
        velocity.clear();
        velocity.extend_from_slice(world.velocities());
        let mut stage = StageState {
            stats: StepStats {
                contacts: solver_contacts.len(),
                detected_contacts: contacts.len(),
                overlap_max,
                ..StepStats::default()
            },
            solver_contacts,
            velocity,
            lambda: std::mem::take(&mut self.lambda),
            impact: None,
            at,
            threads,
        };
        // what the contacts' parameters are formed from (the world's
        // materials may have changed since the last step)
        self.material_pairs.fill(world, &settings);
        if settings.impact_stage {
            self.impact_stage(world, contacts, &mut stage)?;
        }
        times.impact = t.elapsed();
        self.continuous_stage(world, contacts, stage, times)
    }

    /// The impact stage: when some contact approaches faster than `v_imp`,
    /// the impact problem solved from `v_i` into `stage`'s velocities
    /// (`v⁺`), with the continuous solver's scratch lent to the impact
    /// solver for the solve.
    fn impact_stage(
        &mut self,
        world: &World,
        contacts: &ContactSet,
        stage: &mut StageState,
    ) -> Result<(), StepError> {
        if let ImpactScope::ActiveSet { join_velocity } = self.settings.impact_scope {
            return self.impact_stage_active(world, contacts, stage, join_velocity);
        }
        self.impact_stage_whole(world, contacts, stage)
    }

    /// The impact stage over the whole contact network (Algorithm 1,
    /// lines 8-9): the impact problem of every solver contact, solved from
    /// `λ = 0` at `v_i`.
    pub(super) fn impact_stage_whole(
        &mut self,
        world: &World,
        contacts: &ContactSet,
        stage: &mut StageState,
    ) -> Result<(), StepError> {
        let settings = self.settings;
        let ((step, time), threads) = (stage.at, stage.threads);
        let impact_solver = &mut self.impact_solver;
        let (impacts, problem) = stages::impact_problem(
            world,
            (&settings, &self.material_pairs),
            contacts,
            &stage.solver_contacts,
            &stage.velocity,
            &mut self.storage,
            (&mut self.impact_flags, self.impacts_last_step),
            |local| impact_solver.any_subdomain(local),
        )?;
        stage.stats.impacts = impacts;
        self.impacts_last_step = impacts > 0;
        let Some(problem) = problem else {
            return Ok(());
        };
        // one solver's scratch at a time: the continuous solver's serves
        // the impact solve and comes back after it
        let scratch = self.solver.take_scratch();
        self.impact_solver.adopt_scratch(scratch);
        // the last step's λ is released with its problem; its vector
        // serves both stages
        let lambda = &mut stage.lambda;
        refill_in_parts(lambda, problem.len(), 0.0, threads, ROWS_PER_THREAD);
        let rep = self
            .impact_solver
            .solve(&problem, lambda, &mut stage.velocity)
            .map_err(impact_failed((step, time)))?;
        stage.stats.impact_iterations = rep.iterations;
        stage.stats.impact_contacts = problem.contacts().len();
        stage.stats.impact_status = Some(rep.status);
        stage.stats.impact_residual = rep.residuals.normal.max;
        check_velocity(&stage.velocity, "impact", stage.at, threads)?;
        // the guard needs two figures of the impact problem, not the
        // problem: it is released before the continuous problem is
        // assembled
        if settings.energy_guard {
            let threads = stages::assembly_threads(&settings, problem.contacts().len());
            let sums = &mut self.energy_sums;
            stage.impact = Some(guard::ProblemWork::of(world, &problem, threads, sums));
        }
        self.storage = problem.into_storage();
        let scratch = self.impact_solver.take_scratch();
        self.solver.adopt_scratch(scratch);
        Ok(())
    }

    /// The continuous stage: the SPOOK problem at `v⁺`, warm started by
    /// the policy and solved by the solver.
    fn continuous_stage(
        &mut self,
        world: &World,
        contacts: &ContactSet,
        stage: StageState,
        times: &mut StageTimes,
    ) -> Result<SolvedStep, StepError> {
        let settings = self.settings;
        let StageState {
            mut stats,
            solver_contacts,
            velocity,
            mut lambda,
            impact,
            at: (step, time),
            threads,
        } = stage;
        let t = Instant::now();
        // the contacts' model data only when the warm start reads it
        let model_data = if self.warm_start.reads_model_data() {
            stages::ModelData::Keep
        } else {
            stages::ModelData::Drop
        };
        let stages::ContinuousProblem {
            problem,
            overlap_scale,
            elastic_energy,
        } = stages::continuous_problem(
            world,
            (&settings, &self.material_pairs),
            stages::Resolution::Reduced,
            contacts,
            &solver_contacts,
            &velocity,
            &mut self.storage,
            // λ's vector holds nothing until the warm start: the contacts'
            // terms of the two sums are formed in it
            (&mut lambda, model_data),
        )?;
        times.assembly = t.elapsed();
        let t = Instant::now();
        // the warm start writes all of `λ₀` and `v₀` (`WarmStart::initialize`):
        // the two vectors are sized, not cleared (λ's holds the terms, the
        // impact stage's λ or the last step's; a finite check follows)
        resize_for_overwrite(&mut lambda, problem.len(), 0.0);
        // v⁺ is in the continuous problem now: its vector serves the solve
        let mut vel = velocity;
        resize_for_overwrite(&mut vel, problem.body_count(), Velocity6::ZERO);
        let ws = self
            .warm_start
            .initialize(&problem, &mut lambda, &mut vel)?;
        stats.warm_contacts = ws.warm;
        let not_finite = |x: &f64| !x.is_finite();
        if let Some(row) = position_in_parts(&lambda, threads, ROWS_PER_THREAD, not_finite) {
            return Err(StepError::StageFailed {
                stage: "warm start",
                step,
                time,
                source: ndem_solve::SolveError::NonFinite {
                    field: "lambda0",
                    index: row,
                    value: lambda[row],
                },
            });
        }
        check_velocity(&vel, "warm start", (step, time), threads)?;
        check_velocity(
            problem.free_velocity(),
            "free velocity",
            (step, time),
            threads,
        )?;
        // the warm start's v₀ is v* + M⁻¹Gᵀλ₀ when it says so: the solve
        // then takes its start residuals there instead of forming it again
        let start = self.warm_start.start_velocity();
        let report = self
            .solver
            .solve_from(&problem, &mut lambda, &mut vel, start, &mut NoObserver)
            .map_err(|source| StepError::StageFailed {
                stage: "continuous",
                step,
                time,
                source,
            })?;
        check_velocity(&vel, "continuous", (step, time), threads)?;
        stats.iterations = report.iterations;
        stats.status = report.status;
        stats.residuals = report.residuals;
        stats.residual_tolerance =
            overlap_scale.tolerance(settings.residual_check, settings.contact_law);
        stats.unresolved = !problem.contacts().is_empty()
            && report.residuals.normal.mean > stats.residual_tolerance;
        times.continuous = t.elapsed();
        Ok(SolvedStep {
            velocity: vel,
            problem,
            lambda,
            stats,
            impact,
            contact_index: solver_contacts,
            elastic_energy,
        })
    }
}

/// What the solve stages of one step carry from one to the next.
pub(super) struct StageState {
    pub(super) stats: StepStats,
    /// The solver contacts as contact-set indices.
    pub(super) solver_contacts: Vec<u32>,
    /// `v_i`, then `v⁺` after the impact stage.
    pub(super) velocity: Vec<Velocity6>,
    /// The multipliers' vector (the impact stage's `λ`, then the
    /// continuous stage's).
    pub(super) lambda: Vec<f64>,
    /// The impact problem's figures for the energy guard.
    pub(super) impact: Option<guard::ProblemWork>,
    /// The step's number and time.
    pub(super) at: (u64, f64),
    /// Threads of the passes over bodies and rows.
    pub(super) threads: usize,
}

/// The error of a failed impact solve at `(step, time)`.
pub(super) fn impact_failed(
    (step, time): (u64, f64),
) -> impl FnOnce(ndem_solve::SolveError) -> StepError {
    move |source| StepError::StageFailed {
        stage: "impact",
        step,
        time,
        source,
    }
}

//! [`ProjectedGaussSeidel`] as a [`Solver`]: the solve's stages (preparation, warm start, sweeps, checks, report).

use super::*;

impl Solver for ProjectedGaussSeidel {
    fn solve_task(&mut self, task: SolveTask<'_>) -> Result<SolveReport, SolveError> {
        let start = task.start;
        let (problem, lambda, velocity, observer) = task.into_parts();
        let mut name = self.name();
        let mut clock = IterationClock::start();
        let threads = self.sweep_threads(problem);
        self.evaluator.set_threads(threads);
        let initial_residuals = self.prepare_with_start_stats(problem, lambda, velocity, start);
        let mut direct = self.prepare_direct(problem);
        let hubs = self.prepare_hubs(problem);
        let stopping = self.settings.stopping;
        let mut count = SweepCount::default();
        let mut schedule = CheckSchedule::new();
        let passes = self.settings.variant.passes();
        self.current = Current {
            shared: false,
            slices: true,
        };
        let wants_iterates = observer.wants_iterates();
        let observed = observer.wants_updates();
        let mut checked: Option<(usize, ResidualStats)> = None;
        let max_iterations = self.settings.stopping.max_iterations;
        // on several threads, the sweeps between two residual checks run
        // in one scope when nothing else needs each sweep's end
        let runs = threads > 1
            && problem.generic_rows().is_empty()
            && !direct
            && !hubs
            && !observer.observes()
            && !wants_iterates;
        let mut it = 0;
        while it < max_iterations {
            let plan = SweepPlan {
                first: it,
                runs: runs.then_some(threads),
                passes,
                stopping: &stopping,
                observed,
            };
            let swept = self.sweep_from(problem, (lambda, velocity), plan, &mut schedule);
            let (mut max_corr, mut finite, due) = (swept.update, swept.finite, swept.due);
            it = swept.last;
            if !problem.generic_rows().is_empty() || hubs {
                self.sync_slices(velocity);
                self.current.shared = false;
            }
            let was_direct = direct;
            let (generic_corr, generic_finite) =
                self.sweep_generic_part(problem, (lambda, velocity), &mut direct);
            max_corr = max_corr.max(generic_corr);
            finite &= generic_finite;
            if hubs {
                let set = problem.friction_set();
                let m = problem.contact_rows().count();
                let (hub_corr, hub_finite) = self.hub_blocks.step(set, m, lambda, velocity);
                max_corr = max_corr.max(hub_corr);
                finite &= hub_finite;
            }
            if was_direct && !direct {
                name = self.iterative_name();
            }
            let iterations = it + 1;
            count.done(iterations, max_corr);
            if !finite || wants_iterates {
                self.sync_slices(velocity);
            }
            if !finite {
                check_finite_iterate(name, lambda, iterations)?;
            }
            clock.observe(
                observer,
                IterationRecord::untimed(
                    name,
                    iterations,
                    problem,
                    (lambda, Some(velocity)),
                    max_corr,
                ),
            );
            // check the answer honestly (at v* + M⁻¹Gᵀλ), then stop if it is
            // converged, or stalled when the sweep no longer moves anything
            let residual = || {
                let stats = self.honest_stats(problem, lambda, velocity);
                self.sync_slices(velocity);
                checked = Some((iterations, stats));
                stats.max
            };
            let decision = if due {
                schedule.decide_when_due(&stopping, max_corr, iterations, residual)
            } else {
                schedule.decide(&stopping, max_corr, iterations, residual)
            };
            if count.ends(decision) {
                break;
            }
            it += 1;
        }
        // a check after the last sweep already evaluated this λ
        let residuals = match checked {
            Some((at, stats)) if at == count.iterations => stats,
            _ => self.honest_stats(problem, lambda, velocity),
        };
        self.sync_slices(velocity);
        Ok(count.report(name, (residuals, initial_residuals), stopping.tolerance))
    }

    fn name(&self) -> &'static str {
        let coloured = self.settings.order == ContactOrder::Coloured;
        match (self.settings.variant, self.settings.joints, coloured) {
            (PgsVariant::RowWise, JointRows::Iterative, false) => "pgs",
            (PgsVariant::Blocked, JointRows::Iterative, false) => "pgs-blocked",
            (PgsVariant::RowWise, JointRows::Direct, false) => "pgs+direct",
            (PgsVariant::Blocked, JointRows::Direct, false) => "pgs-blocked+direct",
            (PgsVariant::RowWise, JointRows::Iterative, true) => "pgs-coloured",
            (PgsVariant::Blocked, JointRows::Iterative, true) => "pgs-blocked-coloured",
            (PgsVariant::RowWise, JointRows::Direct, true) => "pgs-coloured+direct",
            (PgsVariant::Blocked, JointRows::Direct, true) => "pgs-blocked-coloured+direct",
        }
    }

    fn stopping(&self) -> Stopping {
        self.settings.stopping
    }

    /// `D⁻¹`, the contact shapes and the residual evaluator's velocity.
    fn take_scratch(&mut self) -> crate::SolverScratch {
        crate::SolverScratch {
            diagonal: std::mem::take(&mut self.inv_diag),
            shapes: std::mem::take(&mut self.shape_of),
            velocity: self.evaluator.take_velocity(),
            colouring: std::mem::take(&mut self.colouring),
        }
    }

    fn adopt_scratch(&mut self, scratch: crate::SolverScratch) {
        self.inv_diag = scratch.diagonal;
        self.shape_of = scratch.shapes;
        self.evaluator.adopt_velocity(scratch.velocity);
        self.colouring = scratch.colouring;
    }
}

impl ProjectedGaussSeidel {
    /// Whether the generic rows' bilateral block is solved directly in
    /// this solve: [`JointRows::Direct`] and a block to solve (prepared
    /// here, [`JointBlock::prepare`]).
    pub(crate) fn prepare_direct(&mut self, problem: &ContactProblem) -> bool {
        self.settings.joints == JointRows::Direct && self.block.prepare(problem)
    }

    /// Whether bodies with many contacts are solved as blocks in this
    /// solve: [`HubRows::Block`], a problem with such a body, and no mass
    /// splitting (the subdomain solver's sweeps leave them row-wise).
    pub(crate) fn prepare_hubs(&mut self, problem: &ContactProblem) -> bool {
        match self.settings.hubs {
            HubRows::Block { min_contacts } if self.mass_split.is_empty() => self
                .hub_blocks
                .prepare(problem, min_contacts, &self.inv_diag),
            _ => false,
        }
    }

    /// The generic rows' part of a sweep, after the contacts': one pass
    /// over the rows the direct block leaves, then, when `direct`, the
    /// block's exact step (warm-starting paper, section 5). `direct` is
    /// cleared when the block's matrix is not positive definite (its rows
    /// are swept from then on). The largest correction and whether every
    /// multiplier stayed finite.
    pub(crate) fn sweep_generic_part(
        &mut self,
        problem: &ContactProblem,
        (lambda, velocity): (&mut [f64], &mut [Velocity6]),
        direct: &mut bool,
    ) -> (f64, bool) {
        let (mut corr, finite) = self.sweep_generic_rows(problem, (lambda, velocity), *direct);
        if *direct {
            match self.block.step(problem, lambda, velocity) {
                Ok(update) => corr = corr.max(update),
                Err(NotPositiveDefinite) => *direct = false,
            }
        }
        (corr, finite)
    }

    /// The solver's name once its direct joint block has failed and the
    /// joints are swept row by row.
    pub(crate) fn iterative_name(&self) -> &'static str {
        match self.settings.variant {
            PgsVariant::RowWise => "pgs (direct joints failed: iterative)",
            PgsVariant::Blocked => "pgs-blocked (direct joints failed: iterative)",
        }
    }

    /// One pass over the generic rows (joints, motors, rows given by
    /// matrices) in order, those of the direct joint block left out when
    /// it solves them: the largest correction `|Δλ_k| D_kk` and whether
    /// every new multiplier is finite.
    fn sweep_generic_rows(
        &self,
        problem: &ContactProblem,
        (lambda, velocity): (&mut [f64], &mut [Velocity6]),
        direct: bool,
    ) -> (f64, bool) {
        let omega = self.settings.relaxation;
        let inv = problem.inverse_mass();
        let off = problem.generic_offset();
        let (mut max_corr, mut finite) = (0.0f64, true);
        for (i, r) in problem.generic_rows().iter().enumerate() {
            if direct && is_direct(r) {
                continue;
            }
            let k = off + i;
            let [a, b] = r.bodies.map(|x| x as usize);
            let w = r.jacobian.dot(&velocity[a], &velocity[b]) + r.sigma * lambda[k] + r.rhs;
            let (lo, hi) = problem.generic_bounds(i, lambda);
            let new = (lambda[k] - omega * w * self.inv_diag[k]).clamp_to(lo, hi);
            finite &= new.is_finite();
            let delta = new - lambda[k];
            if delta != 0.0 {
                lambda[k] = new;
                let (ia_, ib_) = r.jacobian.transpose_apply(delta);
                velocity[a] += inv.response(a, &ia_);
                velocity[b] += inv.response(b, &ib_);
                if self.inv_diag[k] > 0.0 {
                    max_corr = max_corr.max(delta.abs() / self.inv_diag[k]);
                }
            }
        }
        (max_corr, finite)
    }
}

//! The sweeps of [`ProjectedGaussSeidel`]: in the problem's order here, coloured on threads (with or without barriers), from a start velocity, and the statistics that close a solve.

use super::*;

impl ProjectedGaussSeidel {
    /// Keeps in the visiting order of `problem` only the contacts `keep`
    /// holds (the subdomain solver's own), after [`Self::prepare`].
    pub(crate) fn restrict_order(
        &mut self,
        problem: &ContactProblem,
        keep: impl Fn(usize) -> bool,
    ) {
        match self.order_source {
            OrderSource::Identity => {
                let n = problem.contacts().len() as u32;
                self.order.clear();
                self.order.extend((0..n).filter(|&c| keep(c as usize)));
            }
            OrderSource::Colouring => {
                self.order.clear();
                let kept = self.colouring.order.iter().filter(|&&c| keep(c as usize));
                self.order.extend(kept);
            }
            OrderSource::Own => self.order.retain(|&c| keep(c as usize)),
        }
        self.order_source = OrderSource::Own;
    }

    /// Threads a sweep of `problem` runs on.
    pub(super) fn sweep_threads(&self, problem: &ContactProblem) -> usize {
        if self.settings.order != ContactOrder::Coloured
            || problem.contacts().len() < self.settings.parallel_min_contacts
        {
            return 1;
        }
        ndem_par::blocks::resolve_threads(self.settings.threads)
    }

    /// What a sweep of `problem` reads besides the iterate.
    pub(super) fn sweep_inputs<'a>(
        &'a self,
        problem: &'a ContactProblem,
        mode: SweepMode,
    ) -> SweepInputs<'a> {
        let inv = masses(&self.split_inverse, problem);
        SweepInputs {
            problem,
            inv,
            shapes: (&self.shape_of, &self.shape_table),
            inv_diag: &self.inv_diag,
            relaxed_inv_diag: self.relaxed_inv_diag(),
            bodies: inv.responses(),
            omega: self.settings.relaxation,
            mode,
        }
    }

    /// `ω D⁻¹` of every row, the factor of each row's update: `D⁻¹` itself
    /// when `ω = 1` (the default and every built-in scene's), else the
    /// products formed once per solve, not in every row of every visit.
    pub(super) fn relaxed_inv_diag(&self) -> &[f64] {
        if self.settings.relaxation == 1.0 {
            &self.inv_diag
        } else {
            &self.relaxed_inv_diag
        }
    }

    /// One sweep over the contacts (Algorithm 1, lines 3-9): in
    /// `self.order` on this thread (the coloured order two blocks at a
    /// time, any other two contacts at a time where they share no moving body;
    /// [`paired`]), or colour by colour on several.
    /// Returns the largest correction (zero when `mode.track` is off and
    /// one pass is made) and whether everything stayed finite.
    pub(crate) fn sweep_contacts(
        &mut self,
        problem: &ContactProblem,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
        mode: SweepMode,
    ) -> (f64, bool) {
        let threads = self.sweep_threads(problem);
        if threads > 1 {
            return self.sweep_contacts_parallel(
                problem,
                (lambda, velocity),
                (mode, threads),
                |_| None,
            );
        }
        self.sweep_contacts_here(problem, (lambda, velocity), mode)
    }

    /// [`Self::sweep_contacts`] on this thread.
    pub(super) fn sweep_contacts_here(
        &mut self,
        problem: &ContactProblem,
        (lambda, velocity): (&mut [f64], &mut [Velocity6]),
        mode: SweepMode,
    ) -> (f64, bool) {
        if let OrderSource::Own = self.order_source {
            let whole = 0..self.order.len();
            return self.sweep_order_part(problem, (lambda, velocity), mode, whole);
        }
        self.current.shared = false;
        let sweep = self.sweep_inputs(problem, mode);
        // monomorphised per order source (no call per contact through a
        // trait object)
        match self.order_source {
            OrderSource::Colouring => sweep.run_blocks(&self.colouring, lambda, velocity),
            // the identity (an own order returned above)
            _ => sweep.run(0..problem.contacts().len(), lambda, velocity),
        }
    }

    /// The order [`Self::restrict_order`] kept, to rearrange: a sweep of
    /// a part of it is [`Self::sweep_order_part`].
    pub(crate) fn restricted_order(&mut self) -> &mut Vec<u32> {
        debug_assert!(matches!(self.order_source, OrderSource::Own));
        &mut self.order
    }

    /// One pass over the contacts `part` of the order [`Self::restricted_order`]
    /// holds (or the shuffled or reversed one it was built from), on this
    /// thread.
    pub(crate) fn sweep_order_part(
        &mut self,
        problem: &ContactProblem,
        (lambda, velocity): (&mut [f64], &mut [Velocity6]),
        mode: SweepMode,
        part: std::ops::Range<usize>,
    ) -> (f64, bool) {
        self.current.shared = false;
        let sweep = self.sweep_inputs(problem, mode);
        let order = self.order[part].iter().map(|&c| c as usize);
        sweep.run(order, lambda, velocity)
    }

    /// Makes the shared copy of the velocities the current one for
    /// parallel sweeps (filled from `velocity` unless it is current
    /// already).
    pub(super) fn share_velocity(&mut self, velocity: &[Velocity6], threads: usize) {
        if !self.current.shared {
            self.shared.fill(velocity, threads);
        }
        self.current = Current {
            shared: true,
            slices: false,
        };
    }

    /// [`Self::sweep_contacts`] colour by colour on `threads > 1` threads (see
    /// [`crate::pgs_parallel`]): each thread takes a range of consecutive
    /// blocks ([`Colouring::owner`]) and sweeps them two at a time
    /// ([`paired`]); a block waits until the earlier blocks it shares a
    /// moving body with are finished ([`BlockProgress`]; no barrier between
    /// colours). Every contact sees the same velocities as in the
    /// one-thread sweep of the same order.
    ///
    /// One sweep in `mode`, then as many more as `next` asks for: after
    /// each sweep it is called on this thread with the sweep's largest
    /// correction and whether everything stayed finite, while the other
    /// threads wait at a spinning barrier, and returns the next sweep's
    /// mode or `None`. The threads are started once for the run, not once
    /// per sweep (a thread's start cost 40-75 µs of each sweep on this
    /// project's machine; `docs/performance.md`, "NDEM step"). Returns
    /// the last sweep's correction and finiteness.
    pub(super) fn sweep_contacts_parallel(
        &mut self,
        problem: &ContactProblem,
        (lambda, velocity): (&mut [f64], &mut [Velocity6]),
        (mode, threads): (SweepMode, usize),
        mut next: impl FnMut((f64, bool)) -> Option<SweepMode>,
    ) -> (f64, bool) {
        let m = problem.contact_rows().count();
        self.share_velocity(velocity, threads);
        let outcome = SweepOutcome::default();
        let progress = BlockProgress::default();
        let run = SweepRun::new(threads, mode);
        let (shared, colouring) = (&self.shared, &self.colouring);
        let inputs = self.sweep_inputs(problem, mode);
        // one sweep of thread `t`'s blocks in `mode`
        let sweep_once = |t: usize, lambda: &mut [f64], first_row: usize, mode: SweepMode| {
            // this thread's blocks, two at a time ([`paired`])
            let mut source = paired::SharedBlocks {
                earlier_conflicts: &colouring.earlier_conflicts,
                progress: &progress,
            };
            let mut store = paired::ThreadIterate {
                lambda,
                first_row,
                velocity: shared,
            };
            let pending = colouring.owned_blocks(t, threads);
            let sweep = SweepInputs { mode, ..inputs };
            let (max_corr, finite) =
                sweep.sweep_blocks(&colouring.blocks, pending, &mut source, &mut store);
            outcome.add(max_corr, finite);
        };
        let sweep_once = &sweep_once;
        let (progress, outcome, run) = (&progress, &outcome, &run);
        let mut last = (0.0, true);
        let gate = StartGate::default();
        let mut refused = false;
        // each thread updates the multipliers of its own range of contacts
        // in place; the ranges follow each other in thread order
        std::thread::scope(|scope| {
            let rows = &mut lambda[..problem.generic_offset()];
            let spawned = move |t, part: &mut [f64], first_row| {
                let _unwinding = (run.poison_on_unwind(), progress.poison_on_unwind());
                while let Some(mode) = run.mode() {
                    sweep_once(t, part, first_row, mode);
                    // the sweep is done; this thread then waits for the
                    // next sweep's mode
                    run.meet();
                    run.meet();
                }
            };
            let parts = (colouring, &gate);
            let Some((part, first_row)) =
                spawn_thread_parts(scope, parts, (rows, m), threads, spawned)
            else {
                refused = true;
                return;
            };
            let _unwinding = (run.poison_on_unwind(), progress.poison_on_unwind());
            while let Some(mode) = run.mode() {
                sweep_once(0, part, first_row, mode);
                if !run.meet() {
                    break;
                }
                last = outcome.get();
                outcome.reset();
                progress.reset();
                run.set_mode(next(last));
                if !run.meet() {
                    break;
                }
            }
        });
        if refused {
            return self.sweep_here_while(problem, (lambda, velocity), mode, next);
        }
        last
    }

    /// The sweeps of [`Self::sweep_contacts_parallel`] on this thread, for
    /// a run whose threads the system refused: the same iterate
    /// (`docs/ARCHITECTURE.md`, "Thread counts").
    pub(super) fn sweep_here_while(
        &mut self,
        problem: &ContactProblem,
        (lambda, velocity): (&mut [f64], &mut [Velocity6]),
        mut mode: SweepMode,
        mut next: impl FnMut((f64, bool)) -> Option<SweepMode>,
    ) -> (f64, bool) {
        self.sync_slices(velocity);
        loop {
            let last = self.sweep_contacts_here(problem, (lambda, velocity), mode);
            match next(last) {
                Some(m) => mode = m,
                None => return last,
            }
        }
    }

    /// [`Self::sweep_contacts_parallel`] for a run whose sweeps are known
    /// before it starts (`sweeps`, sweep `k` in `mode_of(k)`: a solve
    /// without an early stop), with no barrier between them: a thread
    /// that has swept its blocks of one sweep goes on with its blocks of
    /// the next as soon as they may start ([`RunProgress`]), instead of
    /// waiting for the slowest thread's last block. The same iterate, bit
    /// for bit. The run ends early after the first sweep that made a value
    /// non-finite; its `λ` may then hold some blocks' next sweep
    /// (`docs/solvers.md`, "Coloured order on several threads"), and its update is NaN.
    pub(super) fn sweep_contacts_pipelined(
        &mut self,
        problem: &ContactProblem,
        (lambda, velocity): (&mut [f64], &mut [Velocity6]),
        (sweeps, threads): (std::ops::Range<usize>, usize),
        mode_of: impl Fn(usize) -> SweepMode + Sync,
    ) -> SweepEnd {
        let m = problem.contact_rows().count();
        self.share_velocity(velocity, threads);
        let progress = RunProgress::new();
        let outcome = SweepOutcome::default();
        let (shared, colouring) = (&self.shared, &self.colouring);
        let inputs = self.sweep_inputs(problem, mode_of(sweeps.start));
        let conflicts = (
            &colouring.earlier_conflicts[..],
            &colouring.later_conflicts[..],
        );
        let (first, end) = (sweeps.start, sweeps.end);
        // thread `t`'s blocks, sweep after sweep; the last sweep's largest
        // correction goes to `outcome`
        let run = |t: usize, lambda: &mut [f64], first_row: usize| {
            let _unwinding = progress.poison_on_unwind();
            let mut store = paired::ThreadIterate {
                lambda,
                first_row,
                velocity: shared,
            };
            let (pending, blocks) = (colouring.owned_blocks(t, threads), &colouring.blocks);
            for k in first..end {
                let sweep = (k - first) as u32;
                if progress.abandons(sweep) {
                    return;
                }
                let mut source = paired::PipelinedBlocks {
                    conflicts,
                    progress: &progress,
                    sweep,
                };
                let sweep_k = SweepInputs {
                    mode: mode_of(k),
                    ..inputs
                };
                let (corr, finite) = sweep_k.sweep_blocks(blocks, pending, &mut source, &mut store);
                if !finite {
                    progress.stop_at(sweep);
                    return;
                }
                if k + 1 == end {
                    outcome.add(corr, true);
                }
            }
        };
        let run = &run;
        let gate = StartGate::default();
        let mut refused = false;
        std::thread::scope(|scope| {
            let rows = &mut lambda[..problem.generic_offset()];
            let parts = (colouring, &gate);
            match spawn_thread_parts(scope, parts, (rows, m), threads, run) {
                Some((part, first_row)) => run(0, part, first_row),
                None => refused = true,
            }
            // the scope waits for the others (and resumes a panic)
        });
        if refused {
            // the system refused a thread: the run on this thread, up to
            // its last sweep or the first that made a value non-finite
            let mut last = first;
            let next = |(_, finite): (f64, bool)| {
                (finite && last + 1 < end).then(|| {
                    last += 1;
                    mode_of(last)
                })
            };
            let (update, finite) =
                self.sweep_here_while(problem, (lambda, velocity), mode_of(first), next);
            return SweepEnd {
                last,
                update: if finite { update } else { f64::NAN },
                finite,
                due: false,
            };
        }
        match progress.stopped_at() {
            Some(stop) => SweepEnd {
                last: first + stop as usize,
                update: f64::NAN,
                finite: false,
                due: false,
            },
            None => SweepEnd {
                last: end - 1,
                update: outcome.get().0,
                finite: true,
                due: false,
            },
        }
    }

    /// Sweep `plan.first` of a solve, or with `plan.runs`, the run of sweeps
    /// from it on that many threads up to the first after which a check is
    /// due, the last sweep or a non-finite value
    /// ([`Self::sweep_contacts_parallel`]), asking `schedule` after each
    /// sweep but the run's last, as the solve's loop does after every
    /// sweep ([`CheckSchedule::due`]).
    pub(super) fn sweep_from(
        &mut self,
        problem: &ContactProblem,
        (lambda, velocity): (&mut [f64], &mut [Velocity6]),
        plan: SweepPlan<'_>,
        schedule: &mut CheckSchedule,
    ) -> SweepEnd {
        let SweepPlan {
            first,
            runs,
            passes,
            stopping,
            observed,
        } = plan;
        let mode = SweepMode::of_sweep(passes, stopping, schedule, first, observed);
        let Some(threads) = runs else {
            let (update, finite) = self.sweep_contacts(problem, lambda, velocity, mode);
            return SweepEnd {
                last: first,
                update,
                finite,
                due: false,
            };
        };
        // the run's sweeps are counted in `u32` ([`RunProgress`])
        if !stopping.early_stop && stopping.max_iterations - first < u32::MAX as usize {
            // every sweep up to the cap is known to run (no check is ever
            // due): no barrier between them
            let schedule = &*schedule;
            let mode_of = |k| SweepMode::of_sweep(passes, stopping, schedule, k, observed);
            let sweeps = first..stopping.max_iterations;
            return self.sweep_contacts_pipelined(
                problem,
                (lambda, velocity),
                (sweeps, threads),
                mode_of,
            );
        }
        let (mut done, mut due) = (first, false);
        let (update, finite) = self.sweep_contacts_parallel(
            problem,
            (lambda, velocity),
            (mode, threads),
            |(update, finite)| {
                done += 1;
                if !finite || done == stopping.max_iterations {
                    return None;
                }
                if schedule.due(stopping, update, done) {
                    due = true;
                    return None;
                }
                Some(SweepMode::of_sweep(
                    passes, stopping, schedule, done, observed,
                ))
            },
        );
        SweepEnd {
            last: done - 1,
            update,
            finite,
            due,
        }
    }

    /// The residual statistics of `λ` during a solve, taken honestly at
    /// `v = v* + M⁻¹Gᵀλ` (the problem's own masses, also when the sweeps
    /// split them), which is formed in the caller's `velocity` and becomes
    /// the iterate: the sweeps' running velocity drifts from it by
    /// round-off, and a solve returns the velocity its statistics describe
    /// ([`crate::Solver`]). No vector of its own is filled; on two threads
    /// the caller's copy is the stale one while the sweeps run in the
    /// shared copy, which the next sweep reloads from it.
    pub(super) fn honest_stats(
        &mut self,
        problem: &ContactProblem,
        lambda: &[f64],
        velocity: &mut [Velocity6],
    ) -> ResidualStats {
        let stats = self.evaluator.stats_forming(problem, lambda, velocity);
        self.current = Current {
            shared: false,
            slices: true,
        };
        stats
    }

    /// The velocity to take the start's residuals at: `velocity` when the
    /// caller formed it as `v* + M⁻¹Gᵀλ` ([`StartVelocity::Formed`], checked
    /// in debug builds), else none (the evaluator forms it).
    pub(super) fn start_velocity<'v>(
        &mut self,
        problem: &ContactProblem,
        lambda: &[f64],
        velocity: &'v [Velocity6],
        start: StartVelocity,
    ) -> Option<&'v [Velocity6]> {
        match start {
            StartVelocity::Given => None,
            StartVelocity::Formed => {
                debug_assert!(
                    self.is_formed_velocity(problem, lambda, velocity),
                    "StartVelocity::Formed for a velocity that is not v* + M⁻¹Gᵀλ"
                );
                Some(velocity)
            }
        }
    }

    /// Whether `velocity` is `v* + M⁻¹Gᵀλ` as the evaluator forms it, bit
    /// for bit (or NaN where it is: a non-finite start is the sweeps' to
    /// report). Formed in the evaluator's vector: a debug build allocates
    /// no more per solve than a release build.
    pub(super) fn is_formed_velocity(
        &mut self,
        problem: &ContactProblem,
        lambda: &[f64],
        velocity: &[Velocity6],
    ) -> bool {
        let formed = self.evaluator.formed_velocity(problem, lambda);
        let same = |x: f64, y: f64| x == y || (x.is_nan() && y.is_nan());
        formed.iter().zip(velocity).all(|(f, v)| {
            (f.linear.iter().zip(v.linear.iter()))
                .chain(f.angular.iter().zip(v.angular.iter()))
                .all(|(&x, &y)| same(x, y))
        })
    }

    /// Makes `velocity` current (after parallel sweeps the velocities are
    /// in the shared copy; the multipliers are always updated in place).
    pub(crate) fn sync_slices(&mut self, velocity: &mut [Velocity6]) {
        if !self.current.slices {
            // only parallel sweeps leave the shared copy current
            let threads = ndem_par::blocks::resolve_threads(self.settings.threads);
            self.shared.write_to(velocity, threads);
            self.current.slices = true;
        }
    }
}

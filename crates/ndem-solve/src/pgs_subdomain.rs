//! Projected Gauss-Seidel on one subdomain of a decomposed problem: the
//! non-linear block Gauss-Seidel of Preclik and Rüde (2015, "Ultrascale
//! simulations of non-smooth granular dynamics", Comp. Part. Mech. 2).
//!
//! Each subdomain holds the contacts of its bodies; every contact is owned
//! by one subdomain, which alone updates its multipliers. A sweep is the
//! ordinary PGS sweep (warm-starting paper, Algorithm 1) over the owned
//! contacts; after it the velocities of bodies shared by several
//! subdomains are made one again, so that the subdomains are coupled
//! Jacobi-wise once per sweep and Gauss-Seidel-wise inside. With one
//! subdomain it is plain PGS.
//!
//! Summing the shared bodies' corrections, as Preclik and Rüde describe,
//! diverged here: a body pressed by contacts of two subdomains receives
//! both full corrections (a resting 200-sphere bed on two ranks: residuals
//! of 0.8 m/s after 3000 sweeps in most steps). The coupling is therefore
//! mass splitting (Tonge, Benevolenski and Voroshilov 2012, "Mass splitting
//! for jitter-free parallel rigid body simulation", ACM TOG 31): a body
//! with owned contacts in `k_i` subdomains is swept in each with inverse
//! mass `k_i M_i⁻¹`, and after the sweep its velocity is the average of the
//! `k_i` copies' velocities. The average equals `v* + M⁻¹Gᵀλ` with the true
//! masses and all subdomains' multipliers, so the iterate stays the
//! physical one.
//!
//! Generic rows (joints, drives, actuators) act on bodies that every
//! subdomain holds (a machine shared by all of them) and are the same rows
//! in every subdomain. They are solved alike in each, after the shared
//! bodies' velocities are made one: each sweep is the owned contacts'
//! sweep, the exchange, then the generic rows' pass with the problem's
//! own masses and, with [`crate::JointRows::Direct`], the exact block
//! step of the warm-starting paper's split solver (section 5), so the
//! machine's joints hold exactly after every sweep, as on one process.
//! Every subdomain then holds the same generic multipliers; one of them
//! ([`SubdomainCoupling::leads`]) counts them in the sums over subdomains.
//!
//! [`SubdomainSweep::Phased`] couples the subdomains Gauss-Seidel-wise
//! instead: they sweep in phases, one per colour of a colouring in which
//! no two subdomains of a colour move a common body, and the shared
//! bodies' velocities are made one after each phase (`phases`). A sweep
//! is then one Gauss-Seidel pass over the whole problem in a fixed order,
//! without mass splitting, at the price of one exchange per colour.
//!
//! The communication is not this crate's business: it goes through
//! [`SubdomainCoupling`] (ndem-mpi implements it over MPI and over threads).

use crate::SolveError;
use crate::metrics::{ResidualEvaluator, RowSums};
use crate::pgs::{PgsSettings, PgsVariant, ProjectedGaussSeidel};
use crate::problem::ContactProblem;
use crate::solver::{
    CheckSchedule, ContactOrder, IterationClock, IterationRecord, SolveReport, SolveTask, Solver,
    Stopping, SweepCount,
};
use ndem_math::SettingError;
use ndem_math::Velocity6;

mod phases;

/// How [`SubdomainPgs`] couples the subdomains' sweeps (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubdomainSweep {
    /// Every subdomain sweeps all its owned contacts at once, with the
    /// shared bodies' masses split (Tonge et al. 2012); the shared bodies'
    /// velocities are averaged after each sweep: Jacobi-wise between
    /// subdomains.
    #[default]
    MassSplit,
    /// The subdomains sweep in phases, one per colour of the subdomains
    /// that move common bodies; the shared bodies' velocities are made one
    /// after each phase: Gauss-Seidel-wise between subdomains, one
    /// exchange per colour and sweep.
    Phased,
}

/// How one subdomain's solve is coupled to the others'. Every method is
/// collective: all subdomains call it at the same point of their solves.
pub trait SubdomainCoupling: Send {
    /// Sets `owned[c]` for each contact `c` of `problem` that this
    /// subdomain solves (each contact of the whole problem is owned by
    /// exactly one subdomain).
    fn owned_contacts(
        &mut self,
        problem: &ContactProblem,
        owned: &mut Vec<bool>,
    ) -> Result<(), SolveError>;
    /// Per-body values, `width` per body: on entry this subdomain's
    /// contribution, on return for every body held by several subdomains
    /// the sum of all their contributions (added in a fixed order, the same
    /// bits in every subdomain); bodies held by this subdomain alone keep
    /// their value.
    fn sum_over_holders(&mut self, values: &mut [f64], width: usize);
    /// The bodies, of the `body_count` of the problem, that
    /// [`Self::sum_over_holders`] may change: those held by more than one
    /// subdomain, in ascending order (the solver forms and reads the
    /// exchanged values of these alone). The default: every body.
    fn shared_bodies(&mut self, body_count: usize, out: &mut Vec<u32>) {
        out.clear();
        out.extend(0..body_count as u32);
    }
    /// This subdomain's index and the number of subdomains (the same in
    /// every subdomain). The default: one subdomain, `(0, 1)`.
    fn subdomain(&self) -> (usize, usize) {
        (0, 1)
    }
    /// Whether this subdomain counts the rows every subdomain holds alike
    /// (the generic rows) in the sums over subdomains: the velocity
    /// `v* + M⁻¹Gᵀλ` and the residuals. Exactly one subdomain leads.
    fn leads(&self) -> bool;
    /// Element-wise sum over subdomains (in a fixed order).
    fn sum(&mut self, values: &mut [f64]);
    /// Element-wise maximum over subdomains.
    fn max(&mut self, values: &mut [f64]);
    /// Gives each subdomain the multipliers of the contacts it holds but
    /// does not own, from their owners (`lambda` rows of unowned contacts
    /// are overwritten).
    fn share_impulses(&mut self, problem: &ContactProblem, owned: &[bool], lambda: &mut [f64]);
}

/// PGS on one subdomain (see the module docs). The residuals in its report
/// and in its stopping test are those of the whole problem: the owned
/// contacts' residuals of every subdomain, combined, at the velocity
/// `v* + M⁻¹Gᵀλ` of all subdomains' multipliers.
pub struct SubdomainPgs {
    pgs: ProjectedGaussSeidel,
    coupling: Box<dyn SubdomainCoupling>,
    owned: Vec<bool>,
    sweep: SubdomainSweep,
    /// With [`SubdomainSweep::Phased`], the bounds of each phase's part of
    /// the restricted order.
    phase_bounds: Vec<usize>,
    phase_scratch: Vec<u32>,
    /// The shared bodies' velocities before a sweep, in `shared`'s order.
    start: Vec<Velocity6>,
    /// `k_i`: subdomains with owned contacts on body `i` (at least 1).
    split: Vec<f64>,
    /// Per-body scratch for the exchanges (written and read at the shared
    /// bodies only).
    exchange: Vec<f64>,
    /// The bodies held by several subdomains ([`SubdomainCoupling::shared_bodies`]).
    shared: Vec<u32>,
    honest: Vec<Velocity6>,
    scratch: Vec<f64>,
    evaluator: ResidualEvaluator,
}

impl std::fmt::Debug for SubdomainPgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubdomainPgs")
            .field("settings", self.pgs.settings())
            .finish_non_exhaustive()
    }
}

impl SubdomainPgs {
    /// A subdomain solver. The settings must be single-threaded, in the
    /// given, reversed or shuffled order (the subdomains are the parallel
    /// decomposition); joint rows iterative or direct.
    pub fn new(
        settings: PgsSettings,
        coupling: Box<dyn SubdomainCoupling>,
    ) -> Result<Self, SolveError> {
        settings.validate()?;
        SolveError::require(
            !(settings.order == ContactOrder::Coloured),
            "order",
            "a subdomain solver sweeps its contacts on one thread: the given, reversed or shuffled order",
        )?;
        Ok(Self {
            pgs: ProjectedGaussSeidel::new(settings)?,
            coupling,
            sweep: SubdomainSweep::default(),
            phase_bounds: Vec::new(),
            phase_scratch: Vec::new(),
            owned: Vec::new(),
            start: Vec::new(),
            split: Vec::new(),
            exchange: Vec::new(),
            shared: Vec::new(),
            honest: Vec::new(),
            scratch: Vec::new(),
            evaluator: ResidualEvaluator::new(),
        })
    }

    /// The same solver with the subdomains' sweeps coupled as `sweep`
    /// says (every subdomain of a problem must use the same).
    pub fn with_sweep(mut self, sweep: SubdomainSweep) -> Self {
        self.sweep = sweep;
        self
    }

    /// The settings.
    pub fn settings(&self) -> &PgsSettings {
        self.pgs.settings()
    }

    /// How the subdomains' sweeps are coupled.
    pub fn sweep(&self) -> SubdomainSweep {
        self.sweep
    }

    /// With [`SubdomainSweep::Phased`]: colours the subdomains and cuts the
    /// restricted order into the phases' parts. Collective.
    fn plan_phases(&mut self, problem: &ContactProblem) {
        let movable: Vec<bool> = problem.inverse_mass().movable().collect();
        let (index, count) = self.coupling.subdomain();
        let colouring = if count > 1 {
            let mut touch = phases::touches(problem, (&self.owned, &movable), (index, count));
            self.coupling.sum_over_holders(&mut touch, count);
            let mut adjacent = phases::edges(&touch, &self.shared, (index, count));
            self.coupling.sum(&mut adjacent);
            phases::colour(&adjacent, (index, count))
        } else {
            (0, 1)
        };
        let (split, records) = (&self.split, problem.records());
        let on_shared = |c: usize| {
            records[c]
                .bodies
                .iter()
                .any(|&b| split[b as usize] > 1.0 && movable[b as usize])
        };
        phases::cut(
            self.pgs.restricted_order(),
            on_shared,
            colouring,
            &mut self.phase_bounds,
            &mut self.phase_scratch,
        );
    }

    /// One sweep of the owned contacts, coupled as [`Self::sweep`] says.
    fn sweep_owned(
        &mut self,
        problem: &ContactProblem,
        (lambda, velocity): (&mut [f64], &mut [Velocity6]),
        mode: crate::pgs::SweepMode,
    ) -> (f64, bool) {
        if self.sweep == SubdomainSweep::MassSplit {
            self.remember_shared(velocity);
            let outcome = self.pgs.sweep_contacts(problem, lambda, velocity, mode);
            self.sum_corrections(velocity, true);
            return outcome;
        }
        let (mut corr, mut finite) = (0.0f64, true);
        for p in 0..self.phase_bounds.len() - 1 {
            self.remember_shared(velocity);
            let part = self.phase_bounds[p]..self.phase_bounds[p + 1];
            let (c, f) = self
                .pgs
                .sweep_order_part(problem, (lambda, velocity), mode, part);
            (corr, finite) = (corr.max(c), finite && f);
            // one subdomain moved each shared body: its correction
            self.sum_corrections(velocity, false);
        }
        (corr, finite)
    }

    /// `v = v* + M⁻¹ Σ_subdomains G_ownedᵀ λ_owned`: this subdomain's
    /// owned multipliers (and the generic rows' on the leading subdomain)
    /// applied to `v*`, then the corrections summed.
    fn consistent_velocity(
        &mut self,
        problem: &ContactProblem,
        lambda: &[f64],
        velocity: &mut [Velocity6],
    ) {
        let m = problem.contact_rows().count();
        self.scratch.clear();
        self.scratch.extend_from_slice(lambda);
        for (c, owned) in self.owned.iter().enumerate() {
            if !owned {
                self.scratch[c * m..c * m + m].fill(0.0);
            }
        }
        if !self.coupling.leads() {
            self.scratch[problem.generic_offset()..].fill(0.0);
        }
        problem.velocity_from_unchecked(&self.scratch, velocity);
        self.remember_shared(problem.free_velocity());
        self.sum_corrections(velocity, false);
    }

    /// Keeps the shared bodies' entries of `velocity` as the start of
    /// [`Self::sum_corrections`].
    fn remember_shared(&mut self, velocity: &[Velocity6]) {
        self.start.clear();
        self.start
            .extend(self.shared.iter().map(|&i| velocity[i as usize]));
    }

    /// `velocity ← start + Σ_subdomains (velocity − start)`, averaged over
    /// the `k_i` split copies when `average` is set, with the start the
    /// shared bodies' velocities [`Self::remember_shared`] kept.
    /// Only the shared bodies take part: a body of this subdomain alone
    /// keeps its iterate. A shared body's new velocity is formed from the
    /// same numbers in every subdomain that holds it, so it has the same
    /// bits in each (the generic rows, solved alike in every subdomain,
    /// need it; a machine's joints then get the same multipliers).
    fn sum_corrections(&mut self, velocity: &mut [Velocity6], average: bool) {
        // the other bodies' entries are neither read nor changed by the
        // exchange: sized, not cleared
        self.exchange.resize(6 * velocity.len(), 0.0);
        for (&i, start) in self.shared.iter().zip(&self.start) {
            let i = i as usize;
            let d = velocity[i] - *start;
            self.exchange[6 * i..6 * i + 3].copy_from_slice(d.linear.as_slice());
            self.exchange[6 * i + 3..6 * i + 6].copy_from_slice(d.angular.as_slice());
        }
        self.coupling.sum_over_holders(&mut self.exchange, 6);
        for (&i, s) in self.shared.iter().zip(&self.start) {
            let i = i as usize;
            let v = &mut velocity[i];
            let d = &self.exchange[6 * i..6 * i + 6];
            let k = if average { self.split[i] } else { 1.0 };
            let linear = ndem_math::Vec3::new(d[0], d[1], d[2]) / k;
            let angular = ndem_math::Vec3::new(d[3], d[4], d[5]) / k;
            *v = *s + Velocity6::new(linear, angular);
        }
    }

    /// `k_i` of every body: the number of subdomains that own a contact on
    /// it (at least 1).
    fn split_factors(&mut self, problem: &ContactProblem) {
        self.split.clear();
        self.split.resize(problem.body_count(), 0.0);
        for (c, owned) in problem.records().iter().zip(&self.owned) {
            if *owned {
                for b in c.bodies {
                    self.split[b as usize] = 1.0;
                }
            }
        }
        self.coupling.sum_over_holders(&mut self.split, 1);
        for k in &mut self.split {
            *k = k.max(1.0);
        }
    }

    /// Residual sums of the owned contacts at `velocity`, combined over
    /// subdomains.
    fn global_sums(
        &mut self,
        problem: &ContactProblem,
        lambda: &[f64],
        velocity: &[Velocity6],
    ) -> RowSums {
        let m = problem.contact_rows().count().max(1);
        let generic = problem.generic_offset();
        let leads = self.coupling.leads();
        self.evaluator
            .row_residuals(problem, lambda, Some(velocity));
        let owned = &self.owned;
        let counted = |row: usize| {
            if row < generic { owned[row / m] } else { leads }
        };
        let local = self.evaluator.row_sums(problem, counted);
        let mut additive = local.additive();
        let mut maximal = local.maximal();
        self.coupling.sum(&mut additive);
        self.coupling.max(&mut maximal);
        RowSums::from_parts(&additive, &maximal)
    }

    /// The whole problem's residual statistics at `v* + M⁻¹Gᵀλ`.
    fn honest_sums(&mut self, problem: &ContactProblem, lambda: &[f64]) -> RowSums {
        let mut honest = std::mem::take(&mut self.honest);
        honest.resize(problem.body_count(), Velocity6::ZERO);
        self.consistent_velocity(problem, lambda, &mut honest);
        let sums = self.global_sums(problem, lambda, &honest);
        self.honest = honest;
        sums
    }
}

impl Solver for SubdomainPgs {
    /// The solve is collective: a subdomain without contacts still takes
    /// part in its exchanges.
    fn is_collective(&self) -> bool {
        true
    }

    fn any_subdomain(&mut self, local: bool) -> bool {
        let mut flag = [if local { 1.0 } else { 0.0 }];
        self.coupling.max(&mut flag);
        flag[0] > 0.0
    }

    /// The inner PGS's scratch (this solver's own exchange vectors stay).
    fn take_scratch(&mut self) -> crate::SolverScratch {
        self.pgs.take_scratch()
    }

    fn adopt_scratch(&mut self, scratch: crate::SolverScratch) {
        self.pgs.adopt_scratch(scratch);
    }

    fn solve_task(&mut self, task: SolveTask<'_>) -> Result<SolveReport, SolveError> {
        let (problem, lambda, velocity, observer) = task.into_parts();
        let mut name = self.name();
        // the generic rows are solved alike everywhere: the same rows
        let rows = problem.generic_rows().len() as f64;
        let mut counts = [rows, -rows];
        self.coupling.max(&mut counts);
        SolveError::require(
            counts[0] == -counts[1],
            "problem",
            "every subdomain must hold the same generic rows (joints of bodies all of them hold)",
        )?;
        let mut direct = self.pgs.prepare_direct(problem);
        let mut clock = IterationClock::start();
        self.coupling.owned_contacts(problem, &mut self.owned)?;
        self.coupling
            .shared_bodies(problem.body_count(), &mut self.shared);
        self.split_factors(problem);
        self.pgs.mass_split.clear();
        let phased = self.sweep == SubdomainSweep::Phased;
        if !phased && self.split.iter().any(|&k| k > 1.0) {
            self.pgs.mass_split.extend_from_slice(&self.split);
        }
        self.pgs.prepare(problem);
        let owned = &self.owned;
        self.pgs.restrict_order(problem, |c| owned[c]);
        if phased {
            self.plan_phases(problem);
        }
        // the start: the owned multipliers of every subdomain
        let m = problem.contact_rows().count();
        for (c, owned) in self.owned.iter().enumerate() {
            if !owned {
                lambda[c * m..c * m + m].fill(0.0);
            }
        }
        self.consistent_velocity(problem, lambda, velocity);
        let initial_residuals = self.global_sums(problem, lambda, velocity).finish();
        let stopping: Stopping = self.pgs.settings().stopping;
        let passes = match self.pgs.settings().variant {
            PgsVariant::RowWise => 1,
            PgsVariant::Blocked => crate::pgs::BLOCK_INNER_SWEEPS,
        };
        let mut count = SweepCount::default();
        let mut schedule = CheckSchedule::new();
        // the subdomains' largest corrections are combined every sweep (a
        // maximum, with their finiteness): formed, and formed exactly, as
        // a one-subdomain PGS forms them, and exactly in every subdomain
        // when some subdomain's observer reads them (a combined figure is
        // exact only when every subdomain's is)
        let observed = self.any_subdomain(observer.wants_updates());
        for it in 0..stopping.max_iterations {
            let mode = crate::pgs::SweepMode::of_sweep(passes, &stopping, &schedule, it, observed);
            let (mut corr, mut finite) = self.sweep_owned(problem, (lambda, velocity), mode);
            if !problem.generic_rows().is_empty() {
                let was_direct = direct;
                let (c, f) = self
                    .pgs
                    .sweep_generic_part(problem, (lambda, velocity), &mut direct);
                (corr, finite) = (corr.max(c), finite && f);
                if was_direct && !direct {
                    name = "pgs-subdomain (direct joints failed: iterative)";
                }
            }
            let mut outcome = [corr, if finite { 0.0 } else { 1.0 }];
            self.coupling.max(&mut outcome);
            let (iterations, last_update) = (it + 1, outcome[0]);
            count.done(iterations, last_update);
            if outcome[1] > 0.0 {
                // every subdomain stops here: the one that diverged names
                // its row, the others the first row of the problem
                let row = lambda.iter().position(|x| !x.is_finite()).unwrap_or(0);
                return Err(SolveError::Diverged {
                    solver: name,
                    row,
                    iteration: iterations,
                });
            }
            clock.observe(
                observer,
                IterationRecord::untimed(
                    name,
                    iterations,
                    problem,
                    (lambda, Some(velocity)),
                    last_update,
                ),
            );
            let decision = schedule.decide(&stopping, last_update, iterations, || {
                self.global_sums(problem, lambda, velocity).finish().max
            });
            if count.ends(decision) {
                break;
            }
        }
        self.coupling.share_impulses(problem, &self.owned, lambda);
        let residuals = self.honest_sums(problem, lambda).finish();
        Ok(count.report(name, (residuals, initial_residuals), stopping.tolerance))
    }

    fn name(&self) -> &'static str {
        let direct = self.pgs.settings().joints == crate::JointRows::Direct;
        match (self.pgs.settings().variant, direct) {
            (PgsVariant::RowWise, false) => "pgs-subdomain",
            (PgsVariant::Blocked, false) => "pgs-blocked-subdomain",
            (PgsVariant::RowWise, true) => "pgs-subdomain+direct",
            (PgsVariant::Blocked, true) => "pgs-blocked-subdomain+direct",
        }
    }

    fn stopping(&self) -> Stopping {
        self.pgs.settings().stopping
    }
}

//! Non-smooth Gauss-Seidel on problems given by matrices: [`LocalGaussSeidel`]
//! on the local form `(W, q, μ)` and [`GlobalGaussSeidel`] on the global
//! form `(M, H, f, w, μ)` without forming `W`. Both visit one contact at a
//! time with the same local solve (`visit_contact`), so on one problem
//! they run the same iteration.

use crate::local::disk_qp;
use crate::local_contact::coulomb_natural_map;
use crate::local_problem::GlobalOperators;
use crate::local_solver::{LocalJudge, LocalRecorder, LocalReport, LocalSolver, LocalTask};
use crate::problem::ClampTo;
use crate::solver::{SolverStatus, Stopping};
use crate::{FrictionSet, GlobalProblem, LocalProblem, SolveError};

/// Non-smooth Gauss-Seidel on a [`LocalProblem`]: for each contact in
/// turn, with `u_c` kept current, the normal row `r_N ← max(0, r_N −
/// u_N/W_NN)` and the friction rows: with [`FrictionSet::Disk`] the
/// tangent pair solved exactly over the disk `‖r_T‖ ≤ μ r_N` (the 2×2
/// block `W_TT`; Coulomb's law), with [`FrictionSet::Box`] each tangent
/// row clamped to `|r_Ti| ≤ μ r_N` (the warm-starting paper's box,
/// Algorithm 1). The visit is repeated up to `local_iterations` times (a
/// local fixed point: the contact's law with the others held; 1 is the
/// row-wise PGS of the body-based solver, 10 the blocked one and Siconos'
/// NSGS). A contact whose block `W_cc` is not symmetric (a non-symmetric
/// `W`, which this solver takes) gets the exact solve of its own Coulomb
/// problem by semismooth Newton after the alternation. The merit
/// ([`LocalProblem::merit`] for the disk,
/// [`LocalProblem::box_merit`] for the box) is checked every `check_every`
/// sweeps when stopping early.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LocalGaussSeidel {
    /// Sweep cap and tolerance on the merit.
    pub stopping: Stopping,
    /// Normal/tangent alternations per contact visit (1: row-wise PGS).
    pub local_iterations: usize,
    /// Sweeps between merit checks.
    pub check_every: usize,
    /// Friction law: the disk (Coulomb) or the box.
    pub friction: FrictionSet,
}

impl Default for LocalGaussSeidel {
    fn default() -> Self {
        Self {
            stopping: Stopping::to_tolerance(100_000, 1e-8),
            local_iterations: 10,
            check_every: 1,
            friction: FrictionSet::Disk,
        }
    }
}

/// Adds `d` to component `a` of a contact's reactions and the matching
/// change `W_{·a} d` to its velocity (`b`: the row-major 3×3 block `W_cc`).
fn shift(r: &mut [f64], u: &mut [f64; 3], b: &[f64; 9], a: usize, new: f64) {
    let d = new - r[a];
    r[a] = new;
    for i in 0..3 {
        u[i] += b[3 * i + a] * d;
    }
}

/// One visit of a contact: its normal and friction rows solved with the
/// other contacts held, repeated to a local fixed point (at most
/// `local_iterations` times). `r` holds the contact's 3 reactions, `u` its
/// current velocity, `b` the 3×3 block `W_cc` (row-major). Returns the
/// largest change of a reaction.
pub(crate) fn visit_contact(
    b: &[f64; 9],
    mu: f64,
    friction: FrictionSet,
    local_iterations: usize,
    r: &mut [f64],
    u: &mut [f64; 3],
) -> f64 {
    let start = [r[0], r[1], r[2]];
    let mut change = 0.0f64;
    let (mut first_step, mut last_step) = (None, 0.0);
    let mut settled = false;
    for _ in 0..local_iterations.max(1) {
        let old = [r[0], r[1], r[2]];
        let rn = if b[0] > 0.0 {
            (r[0] - u[0] / b[0]).max(0.0)
        } else {
            r[0]
        };
        shift(r, u, b, 0, rn);
        let bound = mu * r[0];
        match friction {
            FrictionSet::Disk => {
                let x0 = [r[1], r[2]];
                let x = disk_qp([b[4], 0.5 * (b[5] + b[7]), b[8]], x0, [u[1], u[2]], bound);
                let dt = [x[0] - x0[0], x[1] - x0[1]];
                r[1] = x[0];
                r[2] = x[1];
                for a in 0..3 {
                    u[a] += b[3 * a + 1] * dt[0] + b[3 * a + 2] * dt[1];
                }
            }
            FrictionSet::Box => {
                for a in 1..3 {
                    let d = b[4 * a];
                    let step = if d > 0.0 { r[a] - u[a] / d } else { r[a] };
                    shift(r, u, b, a, step.clamp_to(-bound, bound));
                }
            }
        }
        let step = (0..3).map(|a| (r[a] - old[a]).abs()).fold(0.0, f64::max);
        change = change.max(step);
        first_step.get_or_insert(step);
        last_step = step;
        if step <= 1e-15 * (1.0 + r[0].abs()) {
            settled = true;
            break;
        }
    }
    // not settled and not contracting (the last pass moved at least a tenth
    // of the first): a cycle rather than slow convergence; a non-symmetric
    // block's friction pair is not the disk QP the alternation solves, so
    // its contact always gets the exact solve
    let cycling = first_step.is_some_and(|first| last_step >= 0.1 * first);
    let exact = (!settled && cycling && local_iterations > 1) || !symmetric_block(b);
    if exact && friction == FrictionSet::Disk {
        exact_contact_solve(b, mu, r, u);
        change = (0..3).map(|a| (r[a] - start[a]).abs()).fold(0.0, f64::max);
    }
    change
}

/// `true` when the 3×3 block `b` (row-major) is symmetric to 1e-12 of
/// its diagonal.
fn symmetric_block(b: &[f64; 9]) -> bool {
    let scale = 1e-12 * (b[0].abs() + b[4].abs() + b[8].abs());
    (b[1] - b[3]).abs() <= scale && (b[2] - b[6]).abs() <= scale && (b[5] - b[7]).abs() <= scale
}

/// The fallback of [`visit_contact`] when alternating the normal row and
/// the friction pair has not settled (it can cycle where `W_cc` couples the
/// normal and tangent rows strongly): semismooth Newton on the contact's
/// own Coulomb problem (as Siconos' NSGS uses a local Newton solver), kept
/// when it lowers the contact's Coulomb error.
fn exact_contact_solve(b: &[f64; 9], mu: f64, r: &mut [f64], u: &mut [f64; 3]) {
    let current = [r[0], r[1], r[2]];
    let s: [f64; 3] =
        std::array::from_fn(|i| u[i] - (0..3).map(|j| b[3 * i + j] * current[j]).sum::<f64>());
    let candidate =
        crate::local_contact::contact_newton(b, s, mu, current, CONTACT_NEWTON_ITERATIONS);
    let velocity = |x: &[f64; 3]| -> [f64; 3] {
        std::array::from_fn(|i| s[i] + (0..3).map(|j| b[3 * i + j] * x[j]).sum::<f64>())
    };
    let error = |x: &[f64; 3]| coulomb_natural_map(&[mu], x, &velocity(x));
    if error(&candidate) < error(&current) {
        r.copy_from_slice(&candidate);
        *u = velocity(&candidate);
    }
}

/// Newton iterations of the per-contact fallback ([`exact_contact_solve`]).
const CONTACT_NEWTON_ITERATIONS: usize = 30;

/// A Gauss-Seidel iteration in progress on one problem form.
trait Sweeps {
    /// One sweep over the contacts; returns the largest change.
    fn sweep(&mut self) -> f64;
    /// The merit of the current reactions.
    fn merit(&self) -> f64;
    /// Reports `sweeps` completed sweeps.
    fn record(&mut self, sweeps: usize);
    /// Whether the iterate is finite.
    fn finite(&self) -> bool;
}

/// The sweep loop shared by the local and global forms: early stop on the
/// merit, stall detection, status.
fn run_sweeps(
    settings: &LocalGaussSeidel,
    solver: &'static str,
    initial_merit: f64,
    state: &mut dyn Sweeps,
) -> Result<LocalReport, SolveError> {
    let st = &settings.stopping;
    let (mut sweeps, mut merit) = (0, initial_merit);
    let (mut stalled, mut converged) = (false, false);
    for s in 0..st.max_iterations {
        let change = state.sweep();
        if !state.finite() {
            return Err(SolveError::Diverged {
                solver,
                row: 0,
                iteration: s + 1,
            });
        }
        sweeps = s + 1;
        state.record(sweeps);
        if st.early_stop && sweeps % settings.check_every.max(1) == 0 {
            merit = state.merit();
            if merit <= st.tolerance {
                converged = true;
                break;
            }
            if change == 0.0 {
                stalled = true;
                break;
            }
        }
    }
    if !converged {
        merit = state.merit();
    }
    Ok(LocalJudge::new(solver, initial_merit, *st).report(merit, stalled, sweeps))
}

/// [`LocalGaussSeidel`] on a [`LocalProblem`].
struct LocalSweeps<'a, 'o> {
    settings: LocalGaussSeidel,
    problem: &'a LocalProblem,
    blocks: Vec<[f64; 9]>,
    r: &'a mut [f64],
    recorder: LocalRecorder<'o>,
}

impl Sweeps for LocalSweeps<'_, '_> {
    fn sweep(&mut self) -> f64 {
        let (p, r) = (self.problem, &mut *self.r);
        let mut change = 0.0f64;
        for (c, b) in self.blocks.iter().enumerate() {
            let k = 3 * c;
            let mut u = [
                p.row_velocity(k, r),
                p.row_velocity(k + 1, r),
                p.row_velocity(k + 2, r),
            ];
            let step = visit_contact(
                b,
                p.mu()[c],
                self.settings.friction,
                self.settings.local_iterations,
                &mut r[k..k + 3],
                &mut u,
            );
            change = change.max(step);
        }
        change
    }
    fn merit(&self) -> f64 {
        self.problem.law_merit(self.settings.friction, self.r)
    }
    fn record(&mut self, sweeps: usize) {
        self.recorder.record(self.problem, sweeps, self.r);
    }
    fn finite(&self) -> bool {
        self.r.iter().all(|x| x.is_finite())
    }
}

impl LocalSolver for LocalGaussSeidel {
    fn name(&self) -> &'static str {
        "local-gauss-seidel"
    }

    fn stopping(&self) -> Stopping {
        self.stopping
    }

    fn friction(&self) -> FrictionSet {
        self.friction
    }

    fn solve_task(&mut self, task: LocalTask<'_>) -> Result<LocalReport, SolveError> {
        let name = self.name();
        let mut state = LocalSweeps {
            settings: *self,
            problem: task.problem,
            blocks: task.problem.diagonal_blocks(),
            r: task.reactions,
            recorder: LocalRecorder::start(name, task.observer),
        };
        run_sweeps(self, name, task.initial_merit, &mut state)
    }
}

/// [`GlobalGaussSeidel`] on a [`GlobalProblem`].
struct GlobalSweeps<'a> {
    settings: LocalGaussSeidel,
    ops: &'a GlobalOperators<'a>,
    blocks: Vec<[f64; 9]>,
    r: &'a mut [f64],
    v: &'a mut [f64],
}

impl Sweeps for GlobalSweeps<'_> {
    fn sweep(&mut self) -> f64 {
        let (r, v) = (&mut *self.r, &mut *self.v);
        let mut change = 0.0f64;
        for (c, b) in self.blocks.iter().enumerate() {
            let k = 3 * c;
            let mut u = self.ops.contact_velocity(c, v);
            let old = [r[k], r[k + 1], r[k + 2]];
            let step = visit_contact(
                b,
                self.ops.mu(c),
                self.settings.friction,
                self.settings.local_iterations,
                &mut r[k..k + 3],
                &mut u,
            );
            let delta = [r[k] - old[0], r[k + 1] - old[1], r[k + 2] - old[2]];
            self.ops.add_reaction_change(c, delta, v);
            change = change.max(step);
        }
        change
    }
    fn merit(&self) -> f64 {
        self.ops.merit(self.settings.friction, self.r, self.v)
    }
    fn record(&mut self, _sweeps: usize) {}
    fn finite(&self) -> bool {
        self.r.iter().chain(self.v.iter()).all(|x| x.is_finite())
    }
}

/// Non-smooth Gauss-Seidel on a [`GlobalProblem`] `(M, H, f, w, μ)`
/// without forming `W = Hᵀ M⁻¹ H`: it keeps `v = M⁻¹ (f + H r)` and, per
/// contact, reads `u_c = H_cᵀ v + w_c`, performs the same visit as
/// [`LocalGaussSeidel`] with the 3×3 block `W_cc = H_cᵀ M⁻¹ H_c` and
/// updates `v ← v + (M⁻¹ H_c) Δr_c` (as the body-based PGS does with
/// `M⁻¹ Gᵀ`). Its cost per sweep is the number of nonzeros of `H` and
/// `M⁻¹ H`, where the local form costs those of `W` (which grows with the
/// square of the contacts per body). On one problem it runs the iteration
/// of [`LocalGaussSeidel`] on [`GlobalProblem::to_local`]; the report's
/// merit is the Coulomb merit of that local problem.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GlobalGaussSeidel {
    /// The contact visit and stopping settings.
    pub settings: LocalGaussSeidel,
}

impl GlobalGaussSeidel {
    /// Solves from the reactions `r` (in place) and writes the velocities
    /// `v = M⁻¹ (f + H r)` of the returned reactions into `v`.
    pub fn solve(
        &self,
        p: &GlobalProblem,
        r: &mut [f64],
        v: &mut [f64],
    ) -> Result<LocalReport, SolveError> {
        let settings = self.settings;
        settings.stopping.validate()?;
        let name = "global-gauss-seidel";
        let ops = GlobalOperators::new(p)?;
        ops.check_sizes(r, v)?;
        ops.velocity(r, v);
        let initial_merit = ops.merit(settings.friction, r, v);
        if ops.contacts() == 0 {
            return Ok(LocalReport {
                solver: name,
                status: SolverStatus::Converged,
                sweeps: 0,
                merit: initial_merit,
                initial_merit,
            });
        }
        let mut state = GlobalSweeps {
            settings,
            ops: &ops,
            blocks: ops.diagonal_blocks(),
            r,
            v,
        };
        let report = run_sweeps(&settings, name, initial_merit, &mut state)?;
        // the running v drifts by round-off from M⁻¹(f + H r): return the
        // velocity of the returned reactions
        ops.velocity(state.r, state.v);
        Ok(report)
    }
}

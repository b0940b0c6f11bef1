//! Projected Gauss-Seidel (warm-starting paper, Algorithm 1 and eqs. 3-6).

use crate::SolveError;
use crate::direct::{JointBlock, NotPositiveDefinite, is_direct};
use crate::local::disk_qp;
use crate::masses::{BodyResponse, InverseMasses};
use crate::metrics::{InverseDiagonal, ResidualEvaluator, ResidualStats};
use crate::pgs_parallel::{
    BlockProgress, Colouring, GateOpener, RunProgress, SharedIterate, StartGate, SweepOutcome,
    SweepRun,
};
use crate::problem::{
    ClampTo, ContactProblem, ContactRecord, ContactSide, FrictionSet, TangentialCoefficients,
};
use crate::solver::{
    CheckSchedule, ContactOrder, EarlyStop, IterationClock, IterationRecord, SolveReport,
    SolveTask, Solver, StartVelocity, Stopping, check_finite_iterate,
};
use ndem_math::{InverseMass, Mat3, Vec3, Velocity6};
use std::time::Duration;

mod paired;

/// Row-wise or blocked Gauss-Seidel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PgsVariant {
    /// One row at a time, `λ_j ← Π(λ_j − w_j / D_jj)` followed by
    /// `v ← v + M⁻¹ G_jᵀ Δλ_j` (Algorithm 1). With the disk friction set the
    /// two friction rows (and the two rolling rows) are updated together
    /// from the same velocity and projected jointly.
    #[default]
    RowWise,
    /// One contact at a time, solved exactly with the other contacts held
    /// (as Siconos' NSGS does): the row-wise pass over the contact's rows
    /// (normal, exact disk solve of the friction pair, rolling pair,
    /// twisting) repeated until the contact's largest correction stops
    /// changing, at most [`BLOCK_INNER_SWEEPS`] times. Two earlier forms had
    /// fixed points or limit cycles that are not solutions: the projected
    /// block step of eqs. 3-4 (the step is in the `D_αα` metric, the
    /// projection Euclidean) and an unconstrained block step with a
    /// row-wise fallback, which cycled at a Coulomb merit of 6.6e-2 on a
    /// generated skewed problem where row-wise PGS reaches 1e-15.
    Blocked,
}

impl PgsVariant {
    /// Row-wise passes over a contact per visit: 1, or at most
    /// [`BLOCK_INNER_SWEEPS`] for the blocked variant.
    fn passes(self) -> usize {
        match self {
            PgsVariant::RowWise => 1,
            PgsVariant::Blocked => BLOCK_INNER_SWEEPS,
        }
    }
}

/// Settings of [`ProjectedGaussSeidel`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PgsSettings {
    /// Iteration cap and tolerance.
    pub stopping: Stopping,
    /// Row-wise or blocked.
    pub variant: PgsVariant,
    /// Contact visiting order.
    pub order: ContactOrder,
    /// Over-relaxation factor ω in (0, 2); 1 is plain Gauss-Seidel.
    pub relaxation: f64,
    /// How bilateral rows (joints, drives) are solved.
    pub joints: JointRows,
    /// Threads sweeping the contacts: 1 (default) sweeps on the calling
    /// thread, 0 uses every core. More than one needs
    /// [`ContactOrder::Coloured`], whose result is bit-identical for every
    /// thread count (the contacts of one colour are independent). At most
    /// [`ndem_math::blocks::MAX_THREADS`]; `new` and `set_settings` start
    /// that many threads once and refuse a count the system does not give
    /// ([`SolveError::ThreadsRefused`]).
    pub threads: usize,
    /// Most blocks of consecutive contacts [`ContactOrder::Coloured`]
    /// cuts a problem into (each at least 512 contacts), in `1..=64`;
    /// default 32. The blocks, so the visiting order and the iterates,
    /// depend on it and on the problem, never on `threads`. More blocks
    /// split the contacts more finely between threads and give a sweep a
    /// less local visiting order (`docs/performance.md`, "NDEM step").
    pub colour_blocks: usize,
    /// Fewest contacts for which [`ContactOrder::Coloured`] sweeps on
    /// several threads (default 12 288): a smaller problem is swept, and
    /// prepared, on the calling thread whatever `threads` asks, with the
    /// same iterate. On this project's 2-core host two threads swept a
    /// settled bed of 6·10³ contacts at 0.72-0.81× the speed of one and
    /// one of 1.0·10⁴ contacts at 0.82-0.91×, and one of 1.3·10⁴ at
    /// 1.10-1.14× (`docs/performance.md`, "NDEM step"); the break-even
    /// depends on the machine. 0 splits every problem.
    pub parallel_min_contacts: usize,
}

/// How [`ProjectedGaussSeidel`] treats a problem's bilateral rows (generic
/// rows of kind [`ndem_math::RowKind::Bilateral`] with fixed bounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JointRows {
    /// Row by row like every other row (the papers' PGS). A chain of heavy
    /// bodies needs many sweeps: 25 sweeps let a 10-body chain of 5 t sag
    /// by centimetres (`tests/split.rs`).
    #[default]
    Iterative,
    /// The warm-starting paper's split solver (section 5): every sweep
    /// ends with an exact block solve of the bilateral rows with the
    /// contacts held (sparse Cholesky of `G_J M⁻¹ G_Jᵀ + Σ_J`, an active set
    /// for force-limited drives). If that matrix is not positive definite
    /// (a joint row with `Σ = 0` in a redundant loop), the solve falls
    /// back to [`JointRows::Iterative`] and says so in its report's name.
    Direct,
}

impl Default for PgsSettings {
    fn default() -> Self {
        Self {
            stopping: Stopping::default(),
            variant: PgsVariant::RowWise,
            order: ContactOrder::Given,
            relaxation: 1.0,
            joints: JointRows::Iterative,
            threads: 1,
            colour_blocks: crate::pgs_parallel::DEFAULT_BLOCKS,
            parallel_min_contacts: DEFAULT_PARALLEL_MIN_CONTACTS,
        }
    }
}

impl PgsSettings {
    /// Checks the fields.
    pub fn validate(&self) -> Result<(), SolveError> {
        self.stopping.validate()?;
        if !(self.relaxation > 0.0 && self.relaxation < 2.0) {
            return Err(SolveError::InvalidSettings {
                field: "relaxation",
                reason: "must lie in (0, 2)",
            });
        }
        if !(1..=crate::pgs_parallel::MAX_BLOCKS).contains(&self.colour_blocks) {
            return Err(SolveError::InvalidSettings {
                field: "colour_blocks",
                reason: "must lie in 1..=64 (a body's colours are the bits of a u64)",
            });
        }
        if self.threads > ndem_math::blocks::MAX_THREADS {
            return Err(SolveError::InvalidSettings {
                field: "threads",
                reason: ndem_math::blocks::THREADS_ABOVE_MAX,
            });
        }
        if self.threads != 1 && self.order != ContactOrder::Coloured {
            return Err(SolveError::InvalidSettings {
                field: "threads",
                reason: "sweeping on several threads needs the coloured contact order \
                         (ContactOrder::Coloured), whose result does not depend on the thread count",
            });
        }
        Ok(())
    }
}

/// Projected Gauss-Seidel for a [`ContactProblem`]. Owns its scratch, so
/// repeated solves of problems of similar size do not allocate.
#[derive(Debug, Clone, Default)]
pub struct ProjectedGaussSeidel {
    settings: PgsSettings,
    inv_diag: Vec<f64>,
    /// `ω D⁻¹` of every row when `ω ≠ 1` (empty when `ω = 1`: then it is
    /// `D⁻¹`, [`Self::relaxed_inv_diag`]).
    relaxed_inv_diag: Vec<f64>,
    /// Contacts in visiting order when `order_source` is `Own` (the
    /// subdomain solver keeps only its own).
    order: Vec<u32>,
    /// Where the visiting order is: the problem's own (no vector), the
    /// colouring's, or `order`.
    order_source: OrderSource,
    /// Mass-splitting factors `k_i` of the subdomain solver (empty: none):
    /// body `i` is swept with inverse mass `k_i M_i⁻¹`.
    pub(crate) mass_split: Vec<f64>,
    /// The split inverse masses, when `mass_split` is set (else the
    /// sweeps read the problem's, 16 bytes per sphere).
    split_inverse: InverseMasses,
    /// Per contact, its index into `shape_table` (4 bytes: the table holds
    /// one shared entry for the decoupled contacts and one for those
    /// without blocks, so most contacts of a packing share a cache line).
    shape_of: Vec<u32>,
    shape_table: Vec<ContactShape>,
    evaluator: ResidualEvaluator,
    block: JointBlock,
    colouring: Colouring,
    shared: SharedIterate,
    /// Where the current iterate is: in the caller's slices, in the
    /// threads' shared copy, or both.
    current: Current,
}

/// Where [`ProjectedGaussSeidel`]'s visiting order is kept: the given
/// order and the coloured one are not copied (4 bytes per contact).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum OrderSource {
    #[default]
    Identity,
    Colouring,
    Own,
}

/// Which copies of the body velocities are current during a solve (the
/// multipliers are always in the caller's slice).
#[derive(Debug, Clone, Copy, Default)]
struct Current {
    shared: bool,
    slices: bool,
}

/// How the rows of one contact couple, decided once per solve.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct ContactShape {
    /// Rows are decoupled within {normal, friction} and {rolling,
    /// twisting} and each pair's block is a multiple of the identity
    /// (spheres and other isotropic bodies, arms along `n`, orthonormal
    /// frame): candidates can share one velocity.
    decoupled: bool,
    /// `[a11, a12, a22]` of the friction pair's block `G_t M⁻¹ G_tᵀ + Σ_t`,
    /// `None` when it is a multiple of the identity.
    friction: Option<[f64; 3]>,
    /// The same for the rolling pair.
    rolling: Option<[f64; 3]>,
}

/// `shape_table` entries shared by many contacts.
const SHAPE_DECOUPLED: u32 = 0;
const SHAPE_COUPLED: u32 = 1;
/// A contact whose blocks are formed in the second, serial pass of
/// `prepare`.
const SHAPE_PENDING: u32 = u32::MAX;

crate::solver::validated_settings!(ProjectedGaussSeidel, PgsSettings, |s: &PgsSettings| {
    // the coloured sweeps' threads, started once here: a count the system
    // does not give is an error now rather than a panic in a sweep
    if s.order == ContactOrder::Coloured && s.threads != 1 {
        ndem_math::blocks::check_threads_start("threads", s.threads)?;
    }
    Ok(())
});

impl ProjectedGaussSeidel {
    /// Forms what the sweeps read besides the iterate: the visiting order,
    /// `D⁻¹` of every row and each contact's shape.
    pub(crate) fn prepare(&mut self, problem: &ContactProblem) {
        self.prepare_order(problem);
        self.form_inverse_diagonal(problem);
        self.finish_preparation(problem);
    }

    /// [`Self::prepare`] and the residual statistics of the start (at the
    /// velocity [`Self::start_velocity`] names), with `D⁻¹` and the
    /// contacts' shapes formed in the statistics' pass over the contacts
    /// when the sweeps use the problem's own masses: both form each
    /// contact's `D` from the same records and bodies, with the same
    /// arithmetic, so the numbers are those of the two passes apart.
    fn prepare_with_start_stats(
        &mut self,
        problem: &ContactProblem,
        lambda: &[f64],
        velocity: &[Velocity6],
        start: StartVelocity,
    ) -> ResidualStats {
        self.prepare_order(problem);
        let given = self.start_velocity(problem, lambda, velocity, start);
        if !self.split_inverse.is_empty() {
            self.form_inverse_diagonal(problem);
            self.finish_preparation(problem);
            return self.evaluator.stats(problem, lambda, given);
        }
        let m = problem.contact_rows().count();
        let bodies = problem.inverse_mass().responses();
        let out = InverseDiagonal {
            rows: &mut self.inv_diag,
            classes: &mut self.shape_of,
            classify: |c: &ContactRecord| contact_shape_class(c, m, bodies),
        };
        let stats = self
            .evaluator
            .stats_with_inverse_diagonal(problem, lambda, given, out);
        self.finish_preparation(problem);
        stats
    }

    /// The masses the sweeps use, the sizes of `D⁻¹` and of the shapes, and
    /// the visiting order.
    fn prepare_order(&mut self, problem: &ContactProblem) {
        let n = problem.len();
        self.split_inverse.clear();
        if !self.mass_split.is_empty() {
            let split = problem.inverse_mass().iter().zip(&self.mass_split);
            self.split_inverse
                .extend(split.map(|(inv, &k)| InverseMass {
                    inv_mass: inv.inv_mass * k,
                    inv_inertia: inv.inv_inertia * k,
                }));
        }
        // reused by every solve: grown by an eighth, not doubled; every
        // entry is written by the preparation before a sweep reads it
        ndem_math::capacity::resize_for_overwrite(&mut self.inv_diag, n, 0.0);
        self.order_source = match self.settings.order {
            ContactOrder::Given => OrderSource::Identity,
            ContactOrder::Coloured => {
                let threads = self.sweep_threads(problem);
                self.colouring
                    .build(problem, self.settings.colour_blocks, threads);
                OrderSource::Colouring
            }
            order => {
                order.fill(problem.contacts().len(), &mut self.order);
                OrderSource::Own
            }
        };
        let contacts = problem.records().len();
        ndem_math::capacity::resize_for_overwrite(&mut self.shape_of, contacts, SHAPE_COUPLED);
    }

    /// One pass over the contacts: `D⁻¹` of the contact rows (as
    /// `diagonal_unchecked` forms `D`) and the class of each contact's
    /// shape ([`contact_shape_class`]).
    fn form_inverse_diagonal(&mut self, problem: &ContactProblem) {
        let threads = self.sweep_threads(problem);
        let off = problem.generic_offset();
        let m = problem.contact_rows().count();
        let inv = masses(&self.split_inverse, problem);
        let contacts = problem.records();
        let per_block = ndem_math::blocks::block_len(contacts.len(), threads);
        let parts = self.inv_diag[..off]
            .chunks_mut(per_block * m)
            .zip(self.shape_of.chunks_mut(per_block))
            .enumerate();
        let bodies = inv.responses();
        ndem_math::blocks::map_parts(parts, |(k, (diagonal, shapes))| {
            let first = k * per_block;
            let rows = diagonal.chunks_exact_mut(m).zip(shapes);
            for (i, (c, (o, shape))) in contacts[first..].iter().zip(rows).enumerate() {
                let [a, b] = c.bodies.map(|x| x as usize);
                let d = inv.diagonal(&c.jacobian, a, b);
                let s = problem.coefficients(first + i);
                for j in 0..m {
                    o[j] = invert_diagonal(d[j] + c.row_sigma(s, j));
                }
                *shape = contact_shape_class(c, m, bodies);
            }
        });
    }

    /// `D⁻¹` of the generic rows, and the blocks of the contacts whose
    /// shape is their own (the second, serial pass).
    fn finish_preparation(&mut self, problem: &ContactProblem) {
        let off = problem.generic_offset();
        let m = problem.contact_rows().count();
        let inv = masses(&self.split_inverse, problem);
        let contacts = problem.records();
        problem.generic_diagonal_unchecked(&mut self.inv_diag);
        for d in &mut self.inv_diag[off..] {
            *d = invert_diagonal(*d);
        }
        self.relaxed_inv_diag.clear();
        let omega = self.settings.relaxation;
        if omega != 1.0 {
            let relaxed = self.inv_diag.iter().map(|&d| omega * d);
            self.relaxed_inv_diag.extend(relaxed);
        }
        self.shape_table.clear();
        self.shape_table.push(ContactShape {
            decoupled: true,
            friction: None,
            rolling: None,
        });
        self.shape_table.push(ContactShape::default());
        for (ci, s) in self.shape_of.iter_mut().enumerate() {
            if *s != SHAPE_PENDING {
                continue;
            }
            let c = &contacts[ci];
            let [a, b] = c.bodies.map(|x| x as usize);
            let k = problem.coefficients(ci);
            let shape = coupled_shape((c, k), m, &inv.at(a), &inv.at(b));
            *s = if shape.friction.is_none() && shape.rolling.is_none() {
                SHAPE_COUPLED
            } else {
                self.shape_table.push(shape);
                (self.shape_table.len() - 1) as u32
            };
        }
    }
}

/// The shape class of a contact of `m` rows between bodies of the given
/// responses: one row ([`SHAPE_COUPLED`]), decoupled rows of two isotropic
/// bodies ([`SHAPE_DECOUPLED`]), or blocks still to form
/// ([`SHAPE_PENDING`]).
#[inline(always)]
fn contact_shape_class(c: &ContactRecord, m: usize, bodies: &[BodyResponse]) -> u32 {
    let [a, b] = c.bodies.map(|x| x as usize);
    let iso = bodies[a].isotropic().zip(bodies[b].isotropic());
    if m == 1 {
        SHAPE_COUPLED
    } else if iso.is_some_and(|(ka, kb)| decoupled_rows(c, [ka, kb])) {
        SHAPE_DECOUPLED
    } else {
        SHAPE_PENDING
    }
}

/// `D_jj = 1/D⁻¹_jj` (zero for rows without effective mass).
#[inline(always)]
fn diag_of(inv_d: f64) -> f64 {
    if inv_d > 0.0 { 1.0 / inv_d } else { 0.0 }
}

/// The inverse masses the sweeps use: the problem's, or the split ones.
fn masses<'a>(split: &'a InverseMasses, problem: &'a ContactProblem) -> &'a InverseMasses {
    if split.is_empty() {
        problem.inverse_mass()
    } else {
        split
    }
}

/// `1/D_jj`, or 0 for a row without response.
pub(crate) fn invert_diagonal(d: f64) -> f64 {
    if d > 0.0 { 1.0 / d } else { 0.0 }
}

/// The angular part of a body's inverse mass: isotropic (spheres, static
/// bodies) or a full world-frame matrix. The sweep is monomorphised over the
/// pair of kinds, so sphere-sphere contacts do no 3×3 products.
trait AngularResponse: Copy {
    fn apply(&self, v: Vec3) -> Vec3;
}

#[derive(Clone, Copy)]
struct Isotropic(f64);

impl AngularResponse for Isotropic {
    #[inline(always)]
    fn apply(&self, v: Vec3) -> Vec3 {
        v * self.0
    }
}

#[derive(Clone, Copy)]
struct Anisotropic(Mat3);

impl AngularResponse for Anisotropic {
    #[inline(always)]
    fn apply(&self, v: Vec3) -> Vec3 {
        self.0 * v
    }
}

/// Local state of one contact during a row-wise pass.
struct Local<'a, A: AngularResponse, B: AngularResponse> {
    c: &'a ContactRecord,
    /// `b` of rows 1-5.
    rhs_t: &'a [f64; 5],
    /// `Σ_t`, `Σ_r`, `μ_t`.
    k: &'a TangentialCoefficients,
    shape: &'a ContactShape,
    inv_d: &'a [f64],
    /// `ω D_jj⁻¹` of the contact's rows (`inv_d` when `ω = 1`), formed once
    /// per solve rather than in every row of every visit: a sweep is bound
    /// by its floating-point operations (`docs/performance.md`, "NDEM
    /// step").
    relaxed_inv_d: &'a [f64],
    omega: f64,
    mass_a: f64,
    mass_b: f64,
    resp_a: A,
    resp_b: B,
    va: Velocity6,
    vb: Velocity6,
    /// Per row, the largest `|Δλ_j|` set so far (when `track`): the
    /// largest correction `D_jj |Δλ_j|` is formed from it once per contact
    /// ([`Self::max_corr`]), off the rows' dependency chain.
    corrections: [f64; 6],
    /// Whether the largest correction is formed (a division per row).
    track: bool,
    finite: bool,
}

impl<A: AngularResponse, B: AngularResponse> Local<'_, A, B> {
    /// Unprojected candidate `λ_j − ω w_j / D_jj` of row `J`. Written so
    /// that only `G_J v` sits on the dependency chain from the previous
    /// row's velocity update (Gauss-Seidel is latency bound).
    #[inline(always)]
    fn candidate<const J: usize>(&self, lam: &[f64]) -> f64 {
        let gv = self.c.jacobian.row_velocity(J, &self.va, &self.vb);
        self.candidate_at::<J>(lam, gv)
    }

    /// The candidate of row `J` given its `G_J v`.
    #[inline(always)]
    fn candidate_at<const J: usize>(&self, lam: &[f64], gv: f64) -> f64 {
        let c = self.c;
        let k = self.relaxed_inv_d[J];
        let base = lam[J] - k * (c.row_sigma(self.k, J) * lam[J] + c.rhs(self.rhs_t, J));
        base - k * gv
    }

    /// Sets `λ_J = new` and returns `Δλ_J` (tracking finiteness and the
    /// largest correction), without touching the velocities: the decoupled
    /// pass applies a group's impulse at once, [`Self::update`] a row's.
    #[inline(always)]
    fn set<const J: usize>(&mut self, lam: &mut [f64], new: f64) -> f64 {
        let delta = new - lam[J];
        self.finite &= new.is_finite();
        lam[J] = new;
        if self.track {
            self.corrections[J] = self.corrections[J].max(delta.abs());
        }
        delta
    }

    /// Sets `λ_J = new` and applies `M⁻¹ G_Jᵀ Δλ_J`. The response vectors
    /// (`m⁻¹ u`, `I⁻¹ (d × u)`) do not depend on `Δλ`, so they are formed
    /// off the dependency chain; the update is applied unconditionally
    /// (a zero `Δλ` adds zeros) to avoid unpredictable branches.
    #[inline(always)]
    fn update<const J: usize>(&mut self, lam: &mut [f64], new: f64) {
        let delta = self.set::<J>(lam, new);
        let jac = &self.c.jacobian;
        let u = jac.direction(J);
        if J < 3 {
            let lin_a = u * self.mass_a;
            let lin_b = u * self.mass_b;
            let ang_a = self.resp_a.apply(jac.arm_cross_a(J));
            let ang_b = self.resp_b.apply(jac.arm_cross_b(J));
            let s = if J == 0 {
                jac.normal_scale * delta
            } else {
                delta
            };
            self.va.linear += lin_a * s;
            self.vb.linear -= lin_b * s;
            self.va.angular += ang_a * s;
            self.vb.angular -= ang_b * s;
        } else {
            let ang_a = self.resp_a.apply(u);
            let ang_b = self.resp_b.apply(u);
            self.va.angular += ang_a * delta;
            self.vb.angular -= ang_b * delta;
        }
    }

    /// The largest correction `D_jj |Δλ_j|` over the rows set so far (0
    /// when not tracked): each row's largest `|Δλ_j|` times `D_jj`, the
    /// same number as the largest of the products formed per update
    /// (rounding is monotone and `D_jj ≥ 0`), with the six divisions
    /// side by side instead of one in each row update (with one division
    /// per update the impact stage, which tracks every sweep, sweeps 17 %
    /// slower than with the tracking switched off).
    #[inline(always)]
    fn max_corr(&self) -> f64 {
        if !self.track {
            return 0.0;
        }
        if let Ok(inv_d) = <&[f64; 6]>::try_from(self.inv_d) {
            let terms: [f64; 6] = std::array::from_fn(|j| self.corrections[j] * diag_of(inv_d[j]));
            return terms.iter().fold(0.0, |m, &t| m.max(t));
        }
        let rows = self.inv_d.iter().zip(&self.corrections);
        rows.fold(0.0, |m, (&x, &c)| m.max(c * diag_of(x)))
    }

    /// Residual `w_J = G_J v + Σ_J λ_J + b_J` of row `J`.
    #[inline(always)]
    fn residual<const J: usize>(&self, lam: &[f64]) -> f64 {
        let c = self.c;
        c.row_sigma(self.k, J) * lam[J]
            + c.rhs(self.rhs_t, J)
            + c.jacobian.row_velocity(J, &self.va, &self.vb)
    }

    /// The two friction rows (`J0 = 1`) or the two rolling rows (`J0 = 3`).
    /// Box: one clamped row after the other. Disk: when the pair's block
    /// is a multiple of the identity, the jointly projected step (exact);
    /// otherwise the exact local solve over the disk ([`disk_qp`]), relaxed
    /// by ω and projected. Either way the fixed point is Coulomb's law in
    /// the rows' coordinates.
    #[inline(always)]
    fn pair<const J0: usize, const J1: usize>(
        &mut self,
        set: FrictionSet,
        bound: f64,
        lam: &mut [f64],
    ) {
        match set {
            FrictionSet::Box => {
                let c0 = self.candidate::<J0>(lam).clamp_to(-bound, bound);
                self.update::<J0>(lam, c0);
                let c1 = self.candidate::<J1>(lam).clamp_to(-bound, bound);
                self.update::<J1>(lam, c1);
            }
            FrictionSet::Disk => {
                let block = if J0 == 1 {
                    self.shape.friction
                } else {
                    self.shape.rolling
                };
                let mut p = match block {
                    None => [self.candidate::<J0>(lam), self.candidate::<J1>(lam)],
                    Some(a) => {
                        let x0 = [lam[J0], lam[J1]];
                        let w = [self.residual::<J0>(lam), self.residual::<J1>(lam)];
                        let x = disk_qp(a, x0, w, bound);
                        [
                            x0[0] + self.omega * (x[0] - x0[0]),
                            x0[1] + self.omega * (x[1] - x0[1]),
                        ]
                    }
                };
                crate::problem::project_pair(set, bound, &mut p);
                self.update::<J0>(lam, p[0]);
                self.update::<J1>(lam, p[1]);
            }
        }
    }

    /// The same pass for a contact whose rows are mutually decoupled within
    /// the groups {normal, friction} and {rolling, twisting}
    /// (`G_i M⁻¹ G_jᵀ = 0`: spheres and other isotropic bodies with lever
    /// arms along `n`). Candidates of a group are then independent of each
    /// other's updates, so computing them from the same velocity gives the
    /// row-wise Gauss-Seidel result (to round-off) with a dependency chain of
    /// two links instead of six.
    ///
    /// A group is handled through the contact point: its rows' `G_j v` are
    /// the components of the relative velocity `w = Δv + ω_a × d_a −
    /// ω_b × d_b` along `n, t1, t2` (`(d × u)·ω = u·(ω × d)`), and their
    /// update is one impulse `P = s_n Δλ_n n + Δλ_t1 t1 + Δλ_t2 t2`, applied
    /// as `Δv_a = m_a⁻¹ P`, `Δω_a = I_a⁻¹ (d_a × P)` (and the opposite on
    /// b): two cross products per body and group instead of six. The same
    /// multipliers in exact arithmetic; in floating point the sums are
    /// grouped otherwise (`docs/solvers.md`, "The decoupled pass").
    #[inline(always)]
    fn sweep_decoupled(&mut self, set: FrictionSet, lam: &mut [f64]) {
        let translational = self.decoupled_translational_candidates(lam);
        let force = self.decoupled_translational_update(set, lam, translational);
        if lam.len() >= 6 {
            let rotational = self.decoupled_rotational_candidates(lam, force);
            self.decoupled_rotational_update(set, lam, force, rotational);
        }
    }

    /// The normal row's projected candidate and the friction rows'
    /// unprojected ones, from the relative velocity at the contact point.
    #[inline(always)]
    fn decoupled_translational_candidates(&self, lam: &[f64]) -> (f64, [f64; 2]) {
        let jac = &self.c.jacobian;
        let f = &jac.frame;
        let w = (self.va.linear - self.vb.linear) + self.va.angular.cross(&jac.arm_a)
            - self.vb.angular.cross(&jac.arm_b);
        let n = self
            .candidate_at::<0>(lam, jac.normal_scale * f.normal.dot(&w))
            .max(0.0);
        if lam.len() == 1 {
            return (n, [0.0; 2]);
        }
        let t = [
            self.candidate_at::<1>(lam, f.tangent1.dot(&w)),
            self.candidate_at::<2>(lam, f.tangent2.dot(&w)),
        ];
        (n, t)
    }

    /// Projects the friction candidates, sets the normal and friction rows
    /// and applies their impulse; returns the normal force `s_n λ_n`.
    #[inline(always)]
    fn decoupled_translational_update(
        &mut self,
        set: FrictionSet,
        lam: &mut [f64],
        (n, mut t): (f64, [f64; 2]),
    ) -> f64 {
        let jac = &self.c.jacobian;
        let f = &jac.frame;
        if lam.len() == 1 {
            let d0 = self.set::<0>(lam, n);
            self.apply_translational(f.normal * (jac.normal_scale * d0));
            return 0.0;
        }
        let force = jac.normal_scale * n;
        crate::problem::project_pair(set, self.k.friction * force, &mut t);
        let d0 = self.set::<0>(lam, n);
        let d1 = self.set::<1>(lam, t[0]);
        let d2 = self.set::<2>(lam, t[1]);
        self.apply_translational(
            f.normal * (jac.normal_scale * d0) + f.tangent1 * d1 + f.tangent2 * d2,
        );
        force
    }

    /// The rolling and twisting rows' unprojected candidates.
    #[inline(always)]
    fn decoupled_rotational_candidates(&self, lam: &[f64], force: f64) -> ([f64; 2], f64) {
        let f = &self.c.jacobian.frame;
        let bound = self.c.rolling_arm * force;
        let dw = self.va.angular - self.vb.angular;
        let r = [
            self.candidate_at::<3>(lam, f.tangent1.dot(&dw)),
            self.candidate_at::<4>(lam, f.tangent2.dot(&dw)),
        ];
        let tw = self
            .candidate_at::<5>(lam, f.normal.dot(&dw))
            .clamp_to(-bound, bound);
        (r, tw)
    }

    /// Projects the rolling candidates, sets rows 3-5 and applies their
    /// torque.
    #[inline(always)]
    fn decoupled_rotational_update(
        &mut self,
        set: FrictionSet,
        lam: &mut [f64],
        force: f64,
        (mut r, tw): ([f64; 2], f64),
    ) {
        let f = &self.c.jacobian.frame;
        let bound = self.c.rolling_arm * force;
        crate::problem::project_pair(set, bound, &mut r);
        let d3 = self.set::<3>(lam, r[0]);
        let d4 = self.set::<4>(lam, r[1]);
        let d5 = self.set::<5>(lam, tw);
        let torque = f.tangent1 * d3 + f.tangent2 * d4 + f.normal * d5;
        self.va.angular += self.resp_a.apply(torque);
        self.vb.angular -= self.resp_b.apply(torque);
    }

    /// Applies the impulse `P` at the contact point: `Δv_a = m_a⁻¹ P`,
    /// `Δω_a = I_a⁻¹ (d_a × P)`, the opposite on b.
    #[inline(always)]
    fn apply_translational(&mut self, impulse: Vec3) {
        let jac = &self.c.jacobian;
        self.va.linear += impulse * self.mass_a;
        self.vb.linear -= impulse * self.mass_b;
        self.va.angular += self.resp_a.apply(jac.arm_a.cross(&impulse));
        self.vb.angular -= self.resp_b.apply(jac.arm_b.cross(&impulse));
    }

    /// One row-wise Gauss-Seidel pass over the rows of the contact.
    #[inline(always)]
    fn sweep(&mut self, set: FrictionSet, lam: &mut [f64]) {
        let m = lam.len();
        let n = self.candidate::<0>(lam).max(0.0);
        self.update::<0>(lam, n);
        if m == 1 {
            return;
        }
        let force = self.c.jacobian.normal_scale * lam[0];
        self.pair::<1, 2>(set, self.k.friction * force, lam);
        if m >= 6 {
            let bound = self.c.rolling_arm * force;
            self.pair::<3, 4>(set, bound, lam);
            let t = self.candidate::<5>(lam).clamp_to(-bound, bound);
            self.update::<5>(lam, t);
        }
    }
}

#[inline(always)]
fn sweep_generic<A: AngularResponse, B: AngularResponse>(
    (c, (rhs_t, k)): (&ContactRecord, ContactSide<'_>),
    shape: &ContactShape,
    set: FrictionSet,
    lam: &mut [f64],
    inv_d: &[f64],
    (omega, relaxed_inv_d): (f64, &[f64]),
    (mass_a, resp_a): (f64, A),
    (mass_b, resp_b): (f64, B),
    (decoupled, track): (bool, bool),
    va: &mut Velocity6,
    vb: &mut Velocity6,
) -> (f64, bool) {
    let mut local = Local {
        c,
        rhs_t,
        k,
        shape,
        inv_d,
        relaxed_inv_d,
        omega,
        mass_a,
        mass_b,
        resp_a,
        resp_b,
        va: *va,
        vb: *vb,
        corrections: [0.0; 6],
        track,
        finite: true,
    };
    if decoupled && shape.decoupled {
        local.sweep_decoupled(set, lam);
    } else {
        local.sweep(set, lam);
    }
    *va = local.va;
    *vb = local.vb;
    (local.max_corr(), local.finite)
}

/// One row-wise Gauss-Seidel pass over the rows of one contact. Returns the
/// largest correction `D_jj |Δλ_j|` and whether every new value is finite.
#[inline]
fn sweep_contact_rows(
    c: (&ContactRecord, ContactSide<'_>),
    shape: &ContactShape,
    set: FrictionSet,
    lam: &mut [f64],
    inv_d: &[f64],
    relax: (f64, &[f64]),
    (inv, a, b): (&InverseMasses, usize, usize),
    body: [BodyResponse; 2],
    track: bool,
    va: &mut Velocity6,
    vb: &mut Velocity6,
) -> (f64, bool) {
    let (ma, mb) = (body[0].inv_mass, body[1].inv_mass);
    // the full inverse inertia is read only for a body that needs it
    match [body[0].isotropic(), body[1].isotropic()] {
        [Some(sa), Some(sb)] => sweep_generic(
            c,
            shape,
            set,
            lam,
            inv_d,
            relax,
            (ma, Isotropic(sa)),
            (mb, Isotropic(sb)),
            (true, track),
            va,
            vb,
        ),
        [Some(sa), None] => sweep_generic(
            c,
            shape,
            set,
            lam,
            inv_d,
            relax,
            (ma, Isotropic(sa)),
            (mb, Anisotropic(inv.inertia(b))),
            (false, track),
            va,
            vb,
        ),
        [None, Some(sb)] => sweep_generic(
            c,
            shape,
            set,
            lam,
            inv_d,
            relax,
            (ma, Anisotropic(inv.inertia(a))),
            (mb, Isotropic(sb)),
            (false, track),
            va,
            vb,
        ),
        [None, None] => sweep_generic(
            c,
            shape,
            set,
            lam,
            inv_d,
            relax,
            (ma, Anisotropic(inv.inertia(a))),
            (mb, Anisotropic(inv.inertia(b))),
            (false, track),
            va,
            vb,
        ),
    }
}

/// `true` when the rows of a contact between two bodies with isotropic
/// inverse inertias `I⁻¹ = k 1` (`inertia = [k_a, k_b]`) are decoupled
/// within {normal, friction} and {rolling, twisting}: the frame is
/// orthonormal and each body either has its lever arm parallel to the
/// normal (to round-off, `d × n = 0`, as for spheres) or no rotational
/// response (`k = 0`: a static or kinematic body, such as a floor or a
/// wall, whose arm then enters no `G_i M⁻¹ G_jᵀ`; its velocity still
/// enters `G v` through its true arm).
fn decoupled_rows(c: &ContactRecord, inertia: [f64; 2]) -> bool {
    let j = &c.jacobian;
    let f = &j.frame;
    let tol = 1e-24;
    let unit = |u: &Vec3| (u.norm_squared() - 1.0).abs() <= 1e-12;
    let orthogonal = |u: &Vec3, v: &Vec3| u.dot(v).abs() <= 1e-12;
    // `d × n` against `d × t1` of a body, or a body that does not rotate
    let along =
        |k: f64, [n, t1]: [Vec3; 2]| k == 0.0 || n.norm_squared() <= tol * t1.norm_squared();
    along(inertia[0], [j.arm_cross_a(0), j.arm_cross_a(1)])
        && along(inertia[1], [j.arm_cross_b(0), j.arm_cross_b(1)])
        && unit(&f.normal)
        && unit(&f.tangent1)
        && unit(&f.tangent2)
        && orthogonal(&f.normal, &f.tangent1)
        && orthogonal(&f.normal, &f.tangent2)
        && orthogonal(&f.tangent1, &f.tangent2)
}

/// The coupling of the rows of a contact that is not decoupled (see
/// [`ContactShape`]): the friction and rolling pairs' blocks when they are
/// not multiples of the identity.
fn coupled_shape(
    (c, k): (&ContactRecord, &TangentialCoefficients),
    m: usize,
    ia: &InverseMass,
    ib: &InverseMass,
) -> ContactShape {
    let full = c.jacobian.block(ia, ib);
    let pair = |j: usize| {
        let a = [
            full[(j, j)] + c.row_sigma(k, j),
            full[(j, j + 1)],
            full[(j + 1, j + 1)] + c.row_sigma(k, j + 1),
        ];
        let scale = a[0].abs() + a[2].abs();
        let identity = a[1].abs() <= 1e-14 * scale && (a[0] - a[2]).abs() <= 1e-14 * scale;
        (!identity).then_some(a)
    };
    ContactShape {
        decoupled: false,
        friction: pair(1),
        rolling: if m >= 6 { pair(3) } else { None },
    }
}

/// Most row-wise passes of one blocked contact update.
pub const BLOCK_INNER_SWEEPS: usize = 10;

/// How a sweep treats each contact: `passes` row-wise passes (1: row-wise
/// PGS; [`BLOCK_INNER_SWEEPS`]: the blocked variant's exact local solve),
/// and whether the largest correction `D_jj |Δλ_j|` is formed (a division
/// per row; always when `passes > 1`, whose inner loop stops on it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SweepMode {
    pub(crate) passes: usize,
    pub(crate) track: bool,
    /// With `track`, the largest correction is exact when it is at most
    /// this; above it the sweep may stop forming it once the corrections
    /// formed so far exceed it, and returns their largest, a lower bound
    /// that is also above it ([`SweepMode::exact_up_to`]). `f64::INFINITY`:
    /// always exact.
    pub(crate) exact_up_to: f64,
}

impl SweepMode {
    /// A sweep whose largest correction, when `track`, is always exact.
    pub(crate) fn exact(passes: usize, track: bool) -> Self {
        Self {
            passes,
            track,
            exact_up_to: f64::INFINITY,
        }
    }

    /// A sweep that forms the largest correction exactly while it is at
    /// most `limit`: an early stop compares it with its tolerance only
    /// (the check is due at or below it, a stall lies further below), so
    /// once some contact's correction is above it the rest of the sweep
    /// skips the six divisions per contact (`docs/performance.md`,
    /// "NDEM step"). A blocked sweep's figure stays exact: its contacts
    /// form theirs for their inner loop ([`Self::untracked`]).
    pub(crate) fn exact_up_to(passes: usize, limit: f64) -> Self {
        Self {
            passes,
            track: true,
            exact_up_to: limit,
        }
    }

    /// The mode of sweep `it` (from 0) of a solve with `stopping` whose
    /// observer reads every sweep's largest correction if `observed`. The
    /// correction is formed where it is read: in every sweep of a solve
    /// that may stop early or is `observed`, and in the last, whose figure
    /// the report gives (otherwise its division per row is skipped). It is
    /// formed exactly where more than the early stop's comparison with its
    /// tolerance reads it: in the last sweep, a sweep before a forced check
    /// ([`CheckSchedule::forces`]) and an observed one; elsewhere only as
    /// far as the tolerance ([`Self::exact_up_to`]).
    pub(crate) fn of_sweep(
        passes: usize,
        stopping: &Stopping,
        schedule: &CheckSchedule,
        it: usize,
        observed: bool,
    ) -> Self {
        let last = it + 1 == stopping.max_iterations;
        let track = stopping.early_stop || observed || last;
        let exact = last || observed || schedule.forces(stopping, it + 1);
        if exact || !track {
            Self::exact(passes, track)
        } else {
            Self::exact_up_to(passes, stopping.tolerance)
        }
    }

    /// The same sweep without the largest correction (for the rest of a
    /// sweep whose corrections went above `exact_up_to`). A blocked sweep
    /// (`passes > 1`) keeps forming it: its inner loop stops on it.
    pub(crate) fn untracked(self) -> Self {
        Self {
            track: false,
            exact_up_to: f64::INFINITY,
            ..self
        }
    }

    /// Whether the corrections formed so far, whose largest is `max_corr`,
    /// let the rest of the sweep go without forming them.
    #[inline(always)]
    pub(crate) fn may_stop_tracking(&self, max_corr: f64) -> bool {
        self.track && max_corr > self.exact_up_to
    }
}

/// Updates one contact: `mode.passes` row-wise passes over its rows,
/// stopping early once a pass no longer changes anything.
#[inline]
fn sweep_contact(
    c: (&ContactRecord, ContactSide<'_>),
    shape: &ContactShape,
    set: FrictionSet,
    lam: &mut [f64],
    inv_d: &[f64],
    relax: (f64, &[f64]),
    (inv, a, b): (&InverseMasses, usize, usize),
    body: [BodyResponse; 2],
    (va, vb): (&mut Velocity6, &mut Velocity6),
    mode: SweepMode,
) -> (f64, bool) {
    let mut max_corr = 0.0f64;
    let mut finite = true;
    let track = mode.track || mode.passes > 1;
    for _ in 0..mode.passes {
        let (corr, ok) = sweep_contact_rows(
            c,
            shape,
            set,
            lam,
            inv_d,
            relax,
            (inv, a, b),
            body,
            track,
            va,
            vb,
        );
        finite &= ok;
        let done = corr <= 1e-15 * max_corr || corr == 0.0;
        max_corr = max_corr.max(corr);
        if done || !ok {
            break;
        }
    }
    (max_corr, finite)
}

/// Which sweeps [`ProjectedGaussSeidel::sweep_from`] makes: from sweep
/// `first` (from 0), one, or on `runs` threads a run of them.
struct SweepPlan<'a> {
    first: usize,
    runs: Option<usize>,
    passes: usize,
    stopping: &'a Stopping,
    observed: bool,
}

/// How [`ProjectedGaussSeidel::sweep_from`] ended: the index of its last
/// sweep, that sweep's largest correction and whether everything stayed
/// finite, and whether it ended a run because a check is due after it
/// (the schedule already asked; otherwise it is still to be asked).
struct SweepEnd {
    last: usize,
    update: f64,
    finite: bool,
    due: bool,
}

/// What a sweep reads besides the iterate.
#[derive(Clone, Copy)]
struct SweepInputs<'a> {
    problem: &'a ContactProblem,
    inv: &'a InverseMasses,
    shapes: (&'a [u32], &'a [ContactShape]),
    inv_diag: &'a [f64],
    /// `ω D⁻¹` ([`ProjectedGaussSeidel::relaxed_inv_diag`]).
    relaxed_inv_diag: &'a [f64],
    bodies: &'a [BodyResponse],
    omega: f64,
    mode: SweepMode,
}

impl SweepInputs<'_> {
    /// One sweep over the contacts in `order`: the largest correction and
    /// whether everything stayed finite.
    fn run(
        &self,
        order: impl Iterator<Item = usize> + Clone,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> (f64, bool) {
        // monomorphised for problems without a tangential `b` whose
        // contacts share their coefficients (no lookup per contact)
        let p = self.problem;
        match p.shared_side() {
            Some(side) => self.run_with(order, lambda, velocity, |_| side),
            None => self.run_with(order, lambda, velocity, |ci| p.side(ci)),
        }
    }

    /// The sweep's data with `side` giving a contact's `b` of rows 1-5 and
    /// its coefficients ([`ContactSide`]).
    fn data<T>(&self, side: T) -> paired::SweepData<'_, T> {
        paired::SweepData {
            inputs: *self,
            side,
        }
    }

    /// Sweeps the colouring's blocks two at a time ([`paired`]): the
    /// colour order's iterate.
    fn run_blocks(
        &self,
        colouring: &Colouring,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> (f64, bool) {
        let mut store = paired::Slices { lambda, velocity };
        let mut source = paired::SerialBlocks {
            earlier_conflicts: &colouring.earlier_conflicts,
            finished: 0,
        };
        let (blocks, all) = (&colouring.blocks, colouring.owned_blocks(0, 1));
        self.sweep_blocks(blocks, all, &mut source, &mut store)
    }

    /// The blocks of `pending` (positions in `blocks`) as `source` lets
    /// them start ([`paired::SweepData::sweep_blocks`]), monomorphised for
    /// problems whose contacts share their coefficients.
    fn sweep_blocks(
        &self,
        blocks: &[(u32, u32)],
        pending: u64,
        source: &mut impl paired::BlockSource,
        store: &mut impl paired::IterateStore,
    ) -> (f64, bool) {
        let p = self.problem;
        match p.shared_side() {
            Some(side) => self
                .data(|_| side)
                .sweep_blocks(blocks, pending, source, store),
            None => self
                .data(|ci| p.side(ci))
                .sweep_blocks(blocks, pending, source, store),
        }
    }

    /// Sweeps the contacts in `order`, two at a time where the order allows
    /// ([`paired::SweepData::sweep_in_pairs`]: the iterate of the visits one
    /// after the other, bit for bit), asking for the bodies of the contact
    /// [`crate::PREFETCH_AHEAD`] places on as it goes.
    #[inline(always)]
    fn run_with<'t>(
        &self,
        order: impl Iterator<Item = usize> + Clone,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
        side: impl Fn(usize) -> ContactSide<'t>,
    ) -> (f64, bool) {
        let mut store = paired::Slices { lambda, velocity };
        let ahead = order.clone().skip(crate::PREFETCH_AHEAD);
        self.data(side)
            .sweep_in_pairs(order, ahead, &mut store, self.mode)
    }

    /// The contacts of `order` visited one after the other: the sequential
    /// sweep the paired ones are checked against.
    #[cfg(test)]
    fn run_one_by_one(
        &self,
        order: impl Iterator<Item = usize>,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> (f64, bool) {
        let p = self.problem;
        let data = self.data(|ci| p.side(ci));
        let mut store = paired::Slices { lambda, velocity };
        let (mut max_corr, mut finite, mut mode) = (0.0f64, true, self.mode);
        for ci in order {
            let (corr, ok) = data.visit_one_with(ci, &mut store, mode);
            max_corr = max_corr.max(corr);
            finite &= ok;
            if mode.may_stop_tracking(max_corr) {
                mode = mode.untracked();
            }
        }
        (max_corr, finite)
    }
}

/// Cuts the rows of `lambda` (`m` per contact) into the parts of the
/// contacts each of `threads` threads sweeps ([`Colouring::owned_contacts`];
/// the ranges follow each other in thread order), spawns
/// `spawned(t, part, first_row)` in `scope` for threads `1..threads`
/// (`first_row` the index of the part's first row in `lambda`), each held
/// at `gate` until all have started, and returns thread 0's part and
/// first row, for the calling thread. `None` when the system refused a
/// thread (after the settings' start check, its limits reached since): the
/// gate then sends the started ones back without running `spawned`, and the
/// caller sweeps on one thread, which gives the same iterate.
fn spawn_thread_parts<'scope, 'l: 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    (colouring, gate): (&Colouring, &'scope StartGate),
    (lambda, m): (&'l mut [f64], usize),
    threads: usize,
    spawned: impl Fn(usize, &'l mut [f64], usize) + Send + Copy + 'scope,
) -> Option<(&'l mut [f64], usize)> {
    let mut opener = GateOpener { gate, go: false };
    let (mut rest, mut taken) = (lambda, 0);
    let mut own = (Default::default(), 0);
    for t in 0..threads {
        let range = colouring.owned_contacts(t, threads);
        let start = range.start.max(taken);
        let end = range.end.max(start);
        let (_, tail) = std::mem::take(&mut rest).split_at_mut((start - taken) * m);
        let (part, tail) = tail.split_at_mut((end - start) * m);
        rest = tail;
        taken = end;
        if t == 0 {
            own = (part, start * m);
        } else {
            let held = move || {
                // the part moved in (not reborrowed): the closure runs once
                let part = part;
                if gate.wait() {
                    spawned(t, part, start * m);
                }
            };
            // refused: the opener, dropped, sends the started ones back
            coloured_thread_builder().spawn_scoped(scope, held).ok()?;
        }
    }
    opener.go = true;
    Some(own)
}

/// The builder of a coloured run's threads. Tests of the refused-thread
/// path make it refuse from the `k`-th spawn of the calling thread on
/// ([`REFUSE_COLOURED_SPAWNS_FROM`]) with a stack no system maps.
fn coloured_thread_builder() -> std::thread::Builder {
    #[cfg(test)]
    if REFUSE_COLOURED_SPAWNS_FROM.with(|from| match from.get() {
        Some(0) => true,
        Some(k) => {
            from.set(Some(k - 1));
            false
        }
        None => false,
    }) {
        return std::thread::Builder::new().stack_size(1 << 62);
    }
    std::thread::Builder::new()
}

#[cfg(test)]
thread_local! {
    /// How many more coloured threads this thread may spawn before the
    /// rest are refused (`None`: no refusal).
    static REFUSE_COLOURED_SPAWNS_FROM: std::cell::Cell<Option<usize>> =
        const { std::cell::Cell::new(None) };
}

/// [`PgsSettings::parallel_min_contacts`] by default: below it a thread's
/// start and its waits for the other's blocks cost more than its share.
const DEFAULT_PARALLEL_MIN_CONTACTS: usize = 12_288;

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
    fn sweep_threads(&self, problem: &ContactProblem) -> usize {
        if self.settings.order != ContactOrder::Coloured
            || problem.contacts().len() < self.settings.parallel_min_contacts
        {
            return 1;
        }
        ndem_math::blocks::resolve_threads(self.settings.threads)
    }

    /// What a sweep of `problem` reads besides the iterate.
    fn sweep_inputs<'a>(&'a self, problem: &'a ContactProblem, mode: SweepMode) -> SweepInputs<'a> {
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
    fn relaxed_inv_diag(&self) -> &[f64] {
        if self.settings.relaxation == 1.0 {
            &self.inv_diag
        } else {
            &self.relaxed_inv_diag
        }
    }

    /// One sweep over the contacts (Algorithm 1, lines 3-9): in
    /// `self.order` on this thread (the coloured order two blocks at a
    /// time, any other two contacts at a time where they share no body;
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
        self.sweep_contacts_here(problem, lambda, velocity, mode)
    }

    /// [`Self::sweep_contacts`] on this thread.
    fn sweep_contacts_here(
        &mut self,
        problem: &ContactProblem,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
        mode: SweepMode,
    ) -> (f64, bool) {
        self.current.shared = false;
        let sweep = self.sweep_inputs(problem, mode);
        // monomorphised per order source (no call per contact through a
        // trait object)
        match self.order_source {
            OrderSource::Identity => sweep.run(0..problem.contacts().len(), lambda, velocity),
            OrderSource::Colouring => sweep.run_blocks(&self.colouring, lambda, velocity),
            OrderSource::Own => {
                let order = self.order.iter().map(|&c| c as usize);
                sweep.run(order, lambda, velocity)
            }
        }
    }

    /// Makes the shared copy of the velocities the current one for
    /// parallel sweeps (filled from `velocity` unless it is current
    /// already).
    fn share_velocity(&mut self, velocity: &[Velocity6], threads: usize) {
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
    fn sweep_contacts_parallel(
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
    fn sweep_here_while(
        &mut self,
        problem: &ContactProblem,
        (lambda, velocity): (&mut [f64], &mut [Velocity6]),
        mut mode: SweepMode,
        mut next: impl FnMut((f64, bool)) -> Option<SweepMode>,
    ) -> (f64, bool) {
        self.sync_slices(velocity);
        loop {
            let last = self.sweep_contacts_here(problem, lambda, velocity, mode);
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
    fn sweep_contacts_pipelined(
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
    fn sweep_from(
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
    fn honest_stats(
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
    fn start_velocity<'v>(
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
    fn is_formed_velocity(
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
            let threads = ndem_math::blocks::resolve_threads(self.settings.threads);
            self.shared.write_to(velocity, threads);
            self.current.slices = true;
        }
    }
}

impl Solver for ProjectedGaussSeidel {
    fn solve_task(&mut self, task: SolveTask<'_>) -> Result<SolveReport, SolveError> {
        let start = task.start;
        let (problem, lambda, velocity, observer) = task.into_parts();
        let mut name = self.name();
        let mut clock = IterationClock::start();
        let threads = self.sweep_threads(problem);
        self.evaluator.set_threads(threads);
        let initial_residuals = self.prepare_with_start_stats(problem, lambda, velocity, start);
        let mut direct = self.settings.joints == JointRows::Direct && self.block.prepare(problem);
        let omega = self.settings.relaxation;
        let inv = problem.inverse_mass();
        let off = problem.generic_offset();
        let stopping = self.settings.stopping;
        let mut iterations = 0;
        let mut last_update = 0.0;
        let mut stalled = false;
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
            if !problem.generic_rows().is_empty() {
                self.sync_slices(velocity);
                self.current.shared = false;
            }
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
            if direct {
                match self.block.step(problem, lambda, velocity) {
                    Ok(update) => max_corr = max_corr.max(update),
                    Err(NotPositiveDefinite) => {
                        direct = false;
                        name = match self.settings.variant {
                            PgsVariant::RowWise => "pgs (direct joints failed: iterative)",
                            PgsVariant::Blocked => "pgs-blocked (direct joints failed: iterative)",
                        };
                    }
                }
            }
            iterations = it + 1;
            last_update = max_corr;
            if !finite || wants_iterates {
                self.sync_slices(velocity);
            }
            if !finite {
                check_finite_iterate(name, lambda, iterations)?;
            }
            clock.observe(
                observer,
                IterationRecord {
                    solver: name,
                    iteration: iterations,
                    elapsed: Duration::ZERO,
                    problem,
                    lambda,
                    velocity: Some(velocity),
                    update: max_corr,
                },
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
            match decision {
                EarlyStop::Continue => {}
                EarlyStop::Converged => break,
                EarlyStop::Stalled => {
                    stalled = true;
                    break;
                }
            }
            it += 1;
        }
        // a check after the last sweep already evaluated this λ
        let residuals = match checked {
            Some((at, stats)) if at == iterations => stats,
            _ => self.honest_stats(problem, lambda, velocity),
        };
        self.sync_slices(velocity);
        Ok(SolveReport::judged(
            name,
            residuals,
            initial_residuals,
            stopping.tolerance,
            stalled,
            iterations,
            last_update,
        ))
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

/// A Gauss-Seidel sweep whose largest correction is below this fraction of
/// the tolerance while the residual is above it has stalled.
pub const STALL_FRACTION: f64 = 1e-3;

#[cfg(test)]
mod tests;

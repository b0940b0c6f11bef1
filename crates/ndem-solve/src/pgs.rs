//! Projected Gauss-Seidel (warm-starting paper, Algorithm 1 and eqs. 3-6).

use crate::SolveError;
use crate::direct::{JointBlock, NotPositiveDefinite, is_direct};
use crate::local::disk_qp;
use crate::masses::{BodyResponse, InverseMasses};
use crate::metrics::{InverseDiagonal, ResidualEvaluator, ResidualStats, invert_diagonal};
use crate::pgs_parallel::{
    BlockProgress, Colouring, GateOpener, RunProgress, SharedIterate, StartGate, SweepOutcome,
    SweepRun,
};
use crate::problem::{
    ClampTo, ContactProblem, ContactRecord, ContactSide, FrictionSet, TangentialCoefficients,
};
use crate::solver::{
    CheckSchedule, ContactOrder, IterationClock, IterationRecord, SolveReport, SolveTask, Solver,
    StartVelocity, Stopping, SweepCount, check_finite_iterate,
};
pub use hubs::HubRows;
pub(crate) use mode::SweepMode;
use ndem_math::{InverseMass, Mat3, SettingError, Vec3, Velocity6};

mod hubs;
mod inputs;
pub(crate) mod mode;
mod paired;
mod prepare;
mod rows;
mod solve;
mod sweeps;

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
    /// How the contacts of bodies with many contacts (rigid aggregates,
    /// machine parts) are solved: row by row (default) or as one block
    /// per body after each sweep.
    pub hubs: HubRows,
    /// Threads sweeping the contacts: 1 (default) sweeps on the calling
    /// thread, 0 uses every core. More than one needs
    /// [`ContactOrder::Coloured`], whose result is bit-identical for every
    /// thread count (the contacts of one colour are independent). At most
    /// [`ndem_par::blocks::MAX_THREADS`]; `new` and `set_settings` start
    /// that many threads once and refuse a count the system does not give
    /// ([`SolveError::ThreadsRefused`]).
    pub threads: usize,
    /// Most blocks of consecutive contacts [`ContactOrder::Coloured`]
    /// cuts a problem into (each at least 512 contacts), in `1..=256`;
    /// default 256. The blocks, so the visiting order and the iterates,
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
            hubs: HubRows::RowWise,
            threads: 1,
            colour_blocks: crate::pgs_parallel::DEFAULT_BLOCKS,
            parallel_min_contacts: DEFAULT_PARALLEL_MIN_CONTACTS,
        }
    }
}

impl PgsSettings {
    /// The default settings with `stopping`, sweeping in the coloured
    /// order on `threads` threads (0: every core).
    pub fn coloured(stopping: Stopping, threads: usize) -> Self {
        Self {
            stopping,
            order: ContactOrder::Coloured,
            threads,
            ..Self::default()
        }
    }

    /// Checks the fields.
    pub fn validate(&self) -> Result<(), SolveError> {
        self.stopping.validate()?;
        self.hubs.validate()?;
        SolveError::require(
            self.relaxation > 0.0 && self.relaxation < 2.0,
            "relaxation",
            "must lie in (0, 2)",
        )?;
        SolveError::require(
            (1..=crate::pgs_parallel::MAX_BLOCKS).contains(&self.colour_blocks),
            "colour_blocks",
            "must lie in 1..=256 (the sweep's sets of blocks hold 256)",
        )?;
        SolveError::require_ok("threads", ndem_par::blocks::count_allowed(self.threads))?;
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
    hub_blocks: hubs::HubBlocks,
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
        ndem_par::blocks::check_threads_start("threads", s.threads)?;
    }
    Ok(())
});

impl ProjectedGaussSeidel {
    /// A solver with the default settings but `stopping` (validated).
    pub fn with_stopping(stopping: Stopping) -> Result<Self, SolveError> {
        Self::new(PgsSettings {
            stopping,
            ..PgsSettings::default()
        })
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

impl SweepMode {
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
}

#[cfg(test)]
mod tests;

//! Convergence metrics: row residuals (warm-starting paper, eq. 6), their
//! statistics by row kind, the natural-map error, the relative multiplier
//! error (eq. 13) and residual histograms (Figs. 8, 9).

use crate::PREFETCH_AHEAD;
pub use crate::problem::SUM_BLOCK;
use crate::problem::{ClampTo, ContactProblem, ContactRecord, project_pair};
use ndem_math::{RowKind, Velocity6};
use ndem_par::blocks::position_in_parts;

/// Mean, max and count of the row residuals of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct KindStats {
    /// Number of rows of this kind.
    pub count: usize,
    /// Mean row residual [m/s].
    pub mean: f64,
    /// Largest row residual [m/s].
    pub max: f64,
}

/// Residual statistics of a (λ, v) pair.
///
/// The residual of row `j` is the size of the projected Gauss-Seidel
/// correction in velocity units,
/// `r_j = D_jj |λ_j − Π_j(λ_j − w_j / D_jj)|` with `w = G v + Σλ + b` and
/// `D_jj = (G M⁻¹ Gᵀ + Σ)_jj`. It equals `|w_j|` for a row strictly inside
/// its bounds (the paper's eq. 6 residual), is zero exactly at a solution of
/// the MCP, and does not penalise `w_n > 0` at `λ_n = 0`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ResidualStats {
    /// Normal rows.
    pub normal: KindStats,
    /// Friction rows.
    pub friction: KindStats,
    /// Rolling and twisting rows.
    pub rolling: KindStats,
    /// Generic (bilateral) rows.
    pub bilateral: KindStats,
    /// Mean over all rows.
    pub mean: f64,
    /// Max over all rows.
    pub max: f64,
    /// Natural-map error `‖λ − Π(λ − w)‖_∞` (multiplier units).
    pub natural_map: f64,
}

impl ResidualStats {
    /// Statistics of one kind.
    pub fn kind(&self, kind: RowKind) -> &KindStats {
        match kind {
            RowKind::Normal => &self.normal,
            RowKind::Friction => &self.friction,
            RowKind::Rolling => &self.rolling,
            RowKind::Bilateral => &self.bilateral,
        }
    }
}

/// Evaluates residuals; owns its scratch so repeated use does not allocate.
///
/// [`Self::stats`] forms each row's residual and adds it to the sums of
/// its block of [`SUM_BLOCK`] contacts; the blocks' sums are then added
/// in block order. No row-sized scratch is kept (the stepper evaluates at
/// its memory peak), and the sums do not depend on the thread count.
/// [`Self::row_residuals`] stores the rows for callers that need them.
#[derive(Debug, Clone, Default)]
pub struct ResidualEvaluator {
    rows: Vec<f64>,
    natural: Vec<f64>,
    velocity: Vec<Velocity6>,
    block_sums: Vec<RowSums>,
    threads: usize,
}

impl ResidualEvaluator {
    /// A new evaluator (on the calling thread).
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves out the velocity scratch (`v* + M⁻¹Gᵀλ` is formed in it).
    pub(crate) fn take_velocity(&mut self) -> Vec<Velocity6> {
        std::mem::take(&mut self.velocity)
    }

    /// Takes a velocity scratch to form `v* + M⁻¹Gᵀλ` in.
    pub(crate) fn adopt_velocity(&mut self, velocity: Vec<Velocity6>) {
        self.velocity = velocity;
    }

    /// Evaluates the contacts' row residuals on `threads` threads (1 or 0:
    /// the calling thread). Each block of [`SUM_BLOCK`] contacts is summed
    /// alone and the blocks' sums are added serially, so the result does
    /// not depend on the count.
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads;
    }

    /// Per-row residuals `r_j` (see [`ResidualStats`]) of `λ` with
    /// velocity `v` (if `None`, `v = v* + M⁻¹Gᵀλ`).
    pub fn row_residuals(
        &mut self,
        problem: &ContactProblem,
        lambda: &[f64],
        velocity: Option<&[Velocity6]>,
    ) -> &[f64] {
        let n = problem.len();
        self.rows.resize(n, 0.0);
        self.natural.resize(n, 0.0);
        let vel = velocity_or_formed(&mut self.velocity, problem, lambda, velocity, self.threads);
        let m = problem.contact_rows().count().max(1);
        let off = problem.generic_offset();
        let contacts = problem.contacts().len();
        let threads = self.threads.clamp(1, contacts.div_ceil(SUM_BLOCK).max(1));
        // each thread fills the rows of its own block of contacts
        let block = contacts.div_ceil(threads).max(1) * m;
        let blocks = self.rows[..off]
            .chunks_mut(block)
            .zip(self.natural[..off].chunks_mut(block))
            .enumerate();
        let fill = |k: usize, rows: &mut [f64], natural: &mut [f64]| {
            let first = k * block / m;
            let count = rows.len() / m;
            for i in 0..count {
                let ci = first + i;
                let (r, nat, _) = match m {
                    1 => contact_residuals::<1>(problem, ci, &lambda[ci..], vel),
                    3 => contact_residuals::<3>(problem, ci, &lambda[ci * 3..], vel),
                    _ => contact_residuals::<6>(problem, ci, &lambda[ci * 6..], vel),
                };
                rows[i * m..(i + 1) * m].copy_from_slice(&r[..m]);
                natural[i * m..(i + 1) * m].copy_from_slice(&nat[..m]);
            }
        };
        ndem_par::blocks::map_parts(blocks, |(k, (rows, natural))| fill(k, rows, natural));
        for i in 0..problem.generic_rows().len() {
            let (r, nat) = generic_residual(problem, i, lambda, vel);
            self.rows[off + i] = r;
            self.natural[off + i] = nat;
        }
        &self.rows
    }

    /// [`Self::stats`] when `compute` is set, zeros otherwise (solvers'
    /// optional final report).
    pub fn stats_if(
        &mut self,
        compute: bool,
        problem: &ContactProblem,
        lambda: &[f64],
        velocity: Option<&[Velocity6]>,
    ) -> ResidualStats {
        if compute {
            self.stats(problem, lambda, velocity)
        } else {
            ResidualStats::default()
        }
    }

    /// `v* + M⁻¹Gᵀλ` as [`Self::stats`] forms it, in the evaluator's own
    /// vector (no allocation once it has the bodies' length).
    pub(crate) fn formed_velocity<'a>(
        &'a mut self,
        problem: &'a ContactProblem,
        lambda: &[f64],
    ) -> &'a [Velocity6] {
        velocity_or_formed(&mut self.velocity, problem, lambda, None, self.threads)
    }

    /// Residual statistics of `λ` with velocity `v` (if `None`,
    /// `v = v* + M⁻¹Gᵀλ`), summed by blocks of [`SUM_BLOCK`] contacts.
    pub fn stats(
        &mut self,
        problem: &ContactProblem,
        lambda: &[f64],
        velocity: Option<&[Velocity6]>,
    ) -> ResidualStats {
        let (vel, block_sums, threads) = self.start_sums(problem, lambda, velocity);
        stats_at(problem, lambda, vel, block_sums, threads)
    }

    /// [`Self::stats`] at `v = v* + M⁻¹Gᵀλ` formed in `velocity` (`v*`
    /// itself when `λ = 0`), one entry per body, instead of in the
    /// evaluator's own vector, which is then never filled: `velocity` holds
    /// that `v` afterwards (PGS returns it).
    pub(crate) fn stats_forming(
        &mut self,
        problem: &ContactProblem,
        lambda: &[f64],
        velocity: &mut [Velocity6],
    ) -> ResidualStats {
        if is_zero(lambda, self.threads) {
            velocity.copy_from_slice(problem.free_velocity());
        } else {
            form(velocity, problem, lambda, self.threads);
        }
        let (vel, block_sums, threads) = self.start_sums(problem, lambda, Some(&*velocity));
        stats_at(problem, lambda, vel, block_sums, threads)
    }

    /// The velocity the statistics are taken at (`velocity`, or `v* +
    /// M⁻¹Gᵀλ` formed), one zeroed sum per block of [`SUM_BLOCK`]
    /// contacts, and the threads that sum them.
    fn start_sums<'a>(
        &'a mut self,
        problem: &'a ContactProblem,
        lambda: &[f64],
        velocity: Option<&'a [Velocity6]>,
    ) -> (&'a [Velocity6], &'a mut [RowSums], usize) {
        let vel = velocity_or_formed(&mut self.velocity, problem, lambda, velocity, self.threads);
        let blocks = problem.records().len().div_ceil(SUM_BLOCK);
        self.block_sums.clear();
        self.block_sums.resize(blocks, RowSums::default());
        let threads = self.threads.clamp(1, blocks.max(1));
        (vel, &mut self.block_sums, threads)
    }

    /// [`Self::stats`], and in the same pass over the contacts each contact
    /// row's `1/(D_jj + Σ_jj)` (0 for a row without response: PGS's `D⁻¹`,
    /// the same numbers as formed alone) and each contact's class
    /// (`out.classify` of its record), which PGS's preparation would
    /// otherwise form in a pass of its own over the same records. `out`
    /// holds the problem's contact rows and contacts.
    pub(crate) fn stats_with_inverse_diagonal<S>(
        &mut self,
        problem: &ContactProblem,
        lambda: &[f64],
        velocity: Option<&[Velocity6]>,
        out: InverseDiagonal<'_, S>,
    ) -> ResidualStats
    where
        S: Fn(&ContactRecord) -> u32 + Sync,
    {
        let (vel, block_sums, threads) = self.start_sums(problem, lambda, velocity);
        let m = problem.contact_rows().count().max(1);
        let contacts = problem.records().len();
        // the thread parts of `for_each_block`, in whole blocks of contacts
        let blocks_per_part = ndem_par::blocks::block_len(block_sums.len(), threads);
        let per_part = blocks_per_part * SUM_BLOCK;
        let parts = (block_sums.chunks_mut(blocks_per_part))
            .zip(out.rows[..contacts * m].chunks_mut(per_part * m))
            .zip(out.classes[..contacts].chunks_mut(per_part))
            .enumerate();
        let classify = &out.classify;
        ndem_par::blocks::map_parts(parts, |(k, ((sums, rows), classes))| {
            let sum = match m {
                1 => sum_and_invert_rows::<1, S>,
                3 => sum_and_invert_rows::<3, S>,
                _ => sum_and_invert_rows::<6, S>,
            };
            let first_block = k * blocks_per_part;
            let blocks = sums.iter_mut().enumerate();
            for (b, sums) in blocks {
                let first = (first_block + b) * SUM_BLOCK;
                let last = (first + SUM_BLOCK).min(contacts);
                let local = b * SUM_BLOCK..b * SUM_BLOCK + (last - first);
                let target = InverseDiagonal {
                    rows: &mut rows[local.start * m..local.end * m],
                    classes: &mut classes[local],
                    classify,
                };
                sum(problem, first..last, (lambda, vel), sums, target);
            }
        });
        finish_stats(block_sums, problem, lambda, vel)
    }

    /// Sums of the rows of the last [`Self::row_residuals`] for which
    /// `include(row)` holds (statistics over part of a problem, to be
    /// combined with other parts).
    pub(crate) fn row_sums(
        &self,
        problem: &ContactProblem,
        include: impl Fn(usize) -> bool,
    ) -> RowSums {
        let mut out = RowSums::default();
        for (i, &r) in self.rows.iter().enumerate() {
            if include(i) {
                out.add_row(kind_index(problem.row_kind(i)), r, self.natural[i]);
            }
        }
        out
    }
}

/// Where [`ResidualEvaluator::stats_with_inverse_diagonal`] writes each
/// contact's `D⁻¹` rows and class.
pub(crate) struct InverseDiagonal<'a, S> {
    /// `m` rows per contact, in contact order.
    pub(crate) rows: &'a mut [f64],
    /// One class per contact.
    pub(crate) classes: &'a mut [u32],
    /// A contact's class, from its record.
    pub(crate) classify: S,
}

/// The statistics of summed blocks, with the generic rows added after
/// them in row order.
fn finish_stats(
    block_sums: &[RowSums],
    problem: &ContactProblem,
    lambda: &[f64],
    vel: &[Velocity6],
) -> ResidualStats {
    let mut total = RowSums::default();
    for b in block_sums {
        total.add(b);
    }
    for i in 0..problem.generic_rows().len() {
        let (r, nat) = generic_residual(problem, i, lambda, vel);
        total.add_row(kind_index(problem.generic_rows()[i].kind), r, nat);
    }
    total.finish()
}

/// Fewest contacts per thread when `v = v* + M⁻¹Gᵀλ` is formed on several
/// threads (each thread reads every contact: below this the second read
/// costs more than the split saves).
const VELOCITY_MIN_CONTACTS: usize = 4 * SUM_BLOCK;

/// Fewest multipliers per thread when `λ` is searched for a non-zero.
const ZERO_CHECK_ROWS: usize = 65_536;

/// Whether every multiplier is zero: a serial look at the first
/// [`ZERO_CHECK_ROWS`] (a warm or solved `λ` has a non-zero there), the
/// rest searched in parts on up to `threads` threads (a cold start's `λ`,
/// at 10⁵ spheres 1.3·10⁶ zeros at every impact stage's start).
fn is_zero(lambda: &[f64], threads: usize) -> bool {
    let (head, tail) = lambda.split_at(lambda.len().min(ZERO_CHECK_ROWS));
    head.iter().all(|&x| x == 0.0)
        && position_in_parts(tail, threads, ZERO_CHECK_ROWS, |&x| x != 0.0).is_none()
}

/// The residual statistics of `λ` at `vel`, the contacts summed by blocks
/// of [`SUM_BLOCK`] into `block_sums` (one zeroed sum per block) on up to
/// `threads` threads.
fn stats_at(
    problem: &ContactProblem,
    lambda: &[f64],
    vel: &[Velocity6],
    block_sums: &mut [RowSums],
    threads: usize,
) -> ResidualStats {
    let m = problem.contact_rows().count().max(1);
    let contacts = problem.records().len();
    let sum_blocks = |first_block: usize, out: &mut [RowSums]| {
        // monomorphised on the row count (the rows' kinds and loops
        // then fold at compile time; the same sums in the same order)
        let sum = match m {
            1 => sum_contact_rows::<1>,
            3 => sum_contact_rows::<3>,
            _ => sum_contact_rows::<6>,
        };
        for (k, sums) in out.iter_mut().enumerate() {
            let first = (first_block + k) * SUM_BLOCK;
            let last = (first + SUM_BLOCK).min(contacts);
            sum(problem, first..last, lambda, vel, sums);
        }
    };
    ndem_par::blocks::for_each_block(block_sums, 1, threads, sum_blocks);
    finish_stats(block_sums, problem, lambda, vel)
}

/// `velocity` if given, else `v = v* + M⁻¹Gᵀλ` formed in `scratch` on up
/// to `threads` threads (the serial sums, bit for bit), or `v*` itself when
/// `λ = 0` (a cold start's initial residual; forming it would add zero
/// impulses, which can change only the sign of a zero velocity component,
/// and no residual depends on that sign).
fn velocity_or_formed<'a>(
    scratch: &'a mut Vec<Velocity6>,
    problem: &'a ContactProblem,
    lambda: &[f64],
    velocity: Option<&'a [Velocity6]>,
    threads: usize,
) -> &'a [Velocity6] {
    match velocity {
        Some(v) => v,
        None if is_zero(lambda, threads) => problem.free_velocity(),
        None => {
            scratch.resize(problem.body_count(), Velocity6::ZERO);
            form(scratch, problem, lambda, threads)
        }
    }
}

/// `v = v* + M⁻¹Gᵀλ` formed in `scratch`.
fn form<'a>(
    scratch: &'a mut [Velocity6],
    problem: &ContactProblem,
    lambda: &[f64],
    threads: usize,
) -> &'a [Velocity6] {
    let threads = threads.min(problem.contacts().len() / VELOCITY_MIN_CONTACTS);
    problem.velocity_from_on(lambda, scratch, threads);
    scratch
}

/// Row residual and natural-map residual of generic row `i`.
fn generic_residual(
    problem: &ContactProblem,
    i: usize,
    lambda: &[f64],
    vel: &[Velocity6],
) -> (f64, f64) {
    let k = problem.generic_offset() + i;
    let (lo, hi) = problem.generic_bounds(i, lambda);
    let w = problem.generic_row_residual(i, lambda, vel);
    let d = problem.generic_row_diagonal(i);
    let c = if d > 0.0 {
        lambda[k] - w / d
    } else {
        lambda[k] - w
    };
    let scale = if d > 0.0 { d } else { 1.0 };
    (
        scale * (lambda[k] - c.clamp_to(lo, hi)).abs(),
        (lambda[k] - (lambda[k] - w).clamp_to(lo, hi)).abs(),
    )
}

/// Row residual sums by kind (normal, friction, rolling, bilateral) over
/// some rows: counts, sums and the total add across parts, maxima take the
/// largest. [`Self::finish`] turns them into [`ResidualStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct RowSums {
    pub(crate) count: [f64; 4],
    pub(crate) sum: [f64; 4],
    /// Sum of all rows in row order.
    pub(crate) total: f64,
    pub(crate) max: [f64; 4],
    pub(crate) natural: f64,
}

impl RowSums {
    /// Adds one row of kind slot `slot` with residual `r` and natural-map
    /// residual `natural`.
    #[inline]
    pub(crate) fn add_row(&mut self, slot: usize, r: f64, natural: f64) {
        self.count[slot] += 1.0;
        self.sum[slot] += r;
        self.total += r;
        self.max[slot] = self.max[slot].max(r);
        self.natural = self.natural.max(natural);
    }

    /// Adds the sums of later rows.
    pub(crate) fn add(&mut self, later: &RowSums) {
        for k in 0..4 {
            self.count[k] += later.count[k];
            self.sum[k] += later.sum[k];
            self.max[k] = self.max[k].max(later.max[k]);
        }
        self.total += later.total;
        self.natural = self.natural.max(later.natural);
    }

    /// `[count; 4, sum; 4, total]`, the parts that add.
    pub(crate) fn additive(&self) -> [f64; 9] {
        let mut out = [0.0; 9];
        out[..4].copy_from_slice(&self.count);
        out[4..8].copy_from_slice(&self.sum);
        out[8] = self.total;
        out
    }

    /// `[max; 4, natural]`, the parts that take the largest.
    pub(crate) fn maximal(&self) -> [f64; 5] {
        [
            self.max[0],
            self.max[1],
            self.max[2],
            self.max[3],
            self.natural,
        ]
    }

    /// From the two parts.
    pub(crate) fn from_parts(additive: &[f64], maximal: &[f64]) -> Self {
        let mut out = RowSums::default();
        out.count.copy_from_slice(&additive[..4]);
        out.sum.copy_from_slice(&additive[4..8]);
        out.total = additive[8];
        out.max.copy_from_slice(&maximal[..4]);
        out.natural = maximal[4];
        out
    }

    /// The statistics.
    pub(crate) fn finish(&self) -> ResidualStats {
        let mut out = ResidualStats::default();
        let kinds = [
            &mut out.normal,
            &mut out.friction,
            &mut out.rolling,
            &mut out.bilateral,
        ];
        let mut rows = 0.0;
        for (slot, ks) in kinds.into_iter().enumerate() {
            ks.count = self.count[slot] as usize;
            ks.max = self.max[slot];
            if self.count[slot] > 0.0 {
                ks.mean = self.sum[slot] / self.count[slot];
            }
            rows += self.count[slot];
        }
        out.max = self.max.iter().fold(0.0, |a, &b| a.max(b));
        if rows > 0.0 {
            out.mean = self.total / rows;
        }
        out.natural_map = self.natural;
        out
    }
}

/// Row residuals, natural-map residuals and `D_jj + Σ_jj` of contact `c`,
/// whose rows' multipliers start `lambda`, with velocity `vel`: `w = G v +
/// Σ λ + b` and the diagonal of `N` formed per contact, the same arithmetic
/// as `residual_unchecked` and `diagonal_unchecked` (`D` of two isotropic
/// bodies from their 16-byte responses, the same numbers). Rows past the
/// problem's row count are zero.
#[inline(always)]
fn contact_residuals<const M: usize>(
    problem: &ContactProblem,
    ci: usize,
    lambda: &[f64],
    vel: &[Velocity6],
) -> ([f64; 6], [f64; 6], [f64; 6]) {
    let c = &problem.records()[ci];
    let t = problem.tangential_rhs(ci);
    let k = problem.coefficients(ci);
    let m = M;
    let set = problem.friction_set();
    let inv = problem.inverse_mass();
    let (mut cand, mut nat, mut w, mut diag) = ([0.0; 6], [0.0; 6], [0.0; 6], [0.0; 6]);
    let (mut rows, mut natural) = ([0.0; 6], [0.0; 6]);
    let lam = &lambda[..m];
    let [a, b] = c.bodies.map(|x| x as usize);
    let gv = c.jacobian.velocity(&vel[a], &vel[b]);
    let d = inv.diagonal(&c.jacobian, a, b);
    for j in 0..m {
        w[j] = gv[j] + (c.row_sigma(k, j) * lam[j] + c.rhs(t, j));
        diag[j] = d[j] + c.row_sigma(k, j);
    }
    // Scaled (PGS) candidate and unscaled (natural map) candidate.
    for j in 0..m {
        cand[j] = if diag[j] > 0.0 {
            lam[j] - w[j] / diag[j]
        } else {
            lam[j] - w[j]
        };
        nat[j] = lam[j] - w[j];
    }
    let normal_force = c.jacobian.normal_scale * lam[0].max(0.0);
    for arr in [&mut cand, &mut nat] {
        arr[0] = arr[0].max(0.0);
        if m >= 3 {
            project_pair(set, k.friction * normal_force, &mut arr[1..3]);
        }
        if m >= 6 {
            let b = c.rolling_arm * normal_force;
            project_pair(set, b, &mut arr[3..5]);
            arr[5] = arr[5].clamp_to(-b, b);
        }
    }
    for j in 0..m {
        let scale = if diag[j] > 0.0 { diag[j] } else { 1.0 };
        rows[j] = scale * (lam[j] - cand[j]).abs();
        natural[j] = (lam[j] - nat[j]).abs();
    }
    (rows, natural, diag)
}

/// Adds the rows of contacts `range` to `sums`, in row order, for a
/// problem of `M` rows per contact.
#[inline(never)]
fn sum_contact_rows<const M: usize>(
    problem: &ContactProblem,
    range: std::ops::Range<usize>,
    lambda: &[f64],
    vel: &[Velocity6],
    sums: &mut RowSums,
) {
    for ci in range {
        problem.prefetch_bodies(ci + PREFETCH_AHEAD, vel);
        let (r, nat, _) = contact_residuals::<M>(problem, ci, &lambda[ci * M..], vel);
        for j in 0..M {
            sums.add_row(kind_index(RowKind::of_contact_row(j)), r[j], nat[j]);
        }
    }
}

/// [`sum_contact_rows`], writing each contact's `1/(D_jj + Σ_jj)` rows and
/// class to `out` (which starts at contact `range.start`).
#[inline(never)]
fn sum_and_invert_rows<const M: usize, S: Fn(&ContactRecord) -> u32>(
    problem: &ContactProblem,
    range: std::ops::Range<usize>,
    (lambda, vel): (&[f64], &[Velocity6]),
    sums: &mut RowSums,
    out: InverseDiagonal<'_, &S>,
) {
    let records = &problem.records()[range.clone()];
    let targets = out.rows.chunks_exact_mut(M).zip(out.classes.iter_mut());
    for ((ci, c), (rows, class)) in range.zip(records).zip(targets) {
        problem.prefetch_bodies(ci + PREFETCH_AHEAD, vel);
        let (r, nat, diag) = contact_residuals::<M>(problem, ci, &lambda[ci * M..], vel);
        for j in 0..M {
            sums.add_row(kind_index(RowKind::of_contact_row(j)), r[j], nat[j]);
            rows[j] = invert_diagonal(diag[j]);
        }
        *class = (out.classify)(c);
    }
}

fn kind_index(kind: RowKind) -> usize {
    match kind {
        RowKind::Normal => 0,
        RowKind::Friction => 1,
        RowKind::Rolling => 2,
        RowKind::Bilateral => 3,
    }
}

/// Relative normal-multiplier error against a reference solution
/// (warm-starting paper, eq. 13): the mean over contacts with a non-zero
/// reference normal multiplier of `|λ_ref,n − λ_n| / |λ_ref,n|`.
/// Returns `None` when no contact carries load in the reference.
pub fn relative_multiplier_error(
    problem: &ContactProblem,
    reference: &[f64],
    lambda: &[f64],
) -> Option<f64> {
    let m = problem.contact_rows().count();
    let mut sum = 0.0;
    let mut count = 0usize;
    for ci in 0..problem.contacts().len() {
        let r = reference[ci * m];
        if r.abs() > 0.0 {
            sum += (r - lambda[ci * m]).abs() / r.abs();
            count += 1;
        }
    }
    (count > 0).then(|| sum / count as f64)
}

/// Histogram of log10 row residuals by row kind (Fig. 9 of the
/// warm-starting paper). Bin `i` covers `[lo + i·w, lo + (i+1)·w)` in
/// log10 units; residuals below `10^lo` (including exact zeros) go to the
/// first bin, above the range to the last.
#[derive(Debug, Clone, PartialEq)]
pub struct ResidualHistogram {
    /// log10 of the lower edge of the first bin.
    pub log10_min: f64,
    /// Bin width in log10 units.
    pub bin_width: f64,
    /// Counts per kind (normal, friction, rolling, bilateral) and bin.
    pub counts: [Vec<usize>; 4],
}

impl ResidualHistogram {
    /// Builds the histogram of the given per-row residuals.
    pub fn new(
        problem: &ContactProblem,
        rows: &[f64],
        log10_min: f64,
        log10_max: f64,
        bins: usize,
    ) -> Self {
        let bins = bins.max(1);
        let width = (log10_max - log10_min) / bins as f64;
        let mut counts: [Vec<usize>; 4] = std::array::from_fn(|_| vec![0; bins]);
        for (i, &r) in rows.iter().enumerate() {
            let x = if r > 0.0 {
                r.log10()
            } else {
                f64::NEG_INFINITY
            };
            let b = ((x - log10_min) / width).floor();
            let b = if b.is_nan() || b < 0.0 {
                0
            } else {
                (b as usize).min(bins - 1)
            };
            counts[kind_index(problem.row_kind(i))][b] += 1;
        }
        Self {
            log10_min,
            bin_width: width,
            counts,
        }
    }
}

/// Coulomb merit of `λ` (the natural-map error with De Saxcé's modified
/// velocity, as used by FCLIB and Siconos), for `v = v* + M⁻¹Gᵀλ`:
///
/// per contact, with the physical normal reaction `r_n = s_n λ_n`, the
/// normal velocity `u_n = w_n / s_n`, `u_T = (w_t1, w_t2)` and
/// `û = (u_n + μ‖u_T‖, u_T)`, the contact term is
/// `r − P_K(r − û)` where `K = {‖r_T‖ ≤ μ r_n}` is the Coulomb cone in the
/// contact's own coordinates. Rolling and twisting rows add
/// `λ_r − Π(λ_r − w_r)` for their bound `μ_r R* r_n` (disk or box as the
/// problem says), generic rows `λ − Π(λ − w)`. The result is
/// `‖all terms‖₂ / (1 + ‖q‖₂)` with `q = G v* + b` in the same coordinates.
///
/// It is zero exactly when the contact part satisfies Coulomb's law
/// (non-penetration complementarity and maximal dissipation on the disk);
/// a box-friction solution generally scores above zero because the box is
/// not Coulomb's cone.
pub fn coulomb_merit(problem: &ContactProblem, lambda: &[f64]) -> f64 {
    let n = problem.len();
    let mut velocity = vec![Velocity6::ZERO; problem.body_count()];
    problem.velocity_from_unchecked(lambda, &mut velocity);
    let mut w = vec![0.0; n];
    problem.residual_unchecked(lambda, &velocity, &mut w);
    let mut q = vec![0.0; n];
    problem.linear_term_unchecked(&mut q);
    let m = problem.contact_rows().count();
    let set = problem.friction_set();
    let mut err2 = 0.0;
    let mut q2 = 0.0;
    for (ci, c) in problem.records().iter().enumerate() {
        let k = ci * m;
        let s = c.jacobian.normal_scale;
        let s_inv = if s > 0.0 { 1.0 / s } else { 0.0 };
        let lam = &lambda[k..k + m];
        let r_n = s * lam[0];
        let u_n = w[k] * s_inv;
        q2 += (q[k] * s_inv).powi(2);
        if m == 1 {
            err2 += (r_n - (r_n - u_n).max(0.0)).powi(2);
            continue;
        }
        let (u1, u2) = (w[k + 1], w[k + 2]);
        q2 += q[k + 1].powi(2) + q[k + 2].powi(2);
        let mu = problem.coefficients(ci).friction;
        let u_hat_n = u_n + mu * (u1 * u1 + u2 * u2).sqrt();
        let mut pa = r_n - u_hat_n;
        let mut pt = [lam[1] - u1, lam[2] - u2];
        crate::cone::project_cone(mu, &mut pa, &mut pt);
        err2 += (r_n - pa).powi(2) + (lam[1] - pt[0]).powi(2) + (lam[2] - pt[1]).powi(2);
        if m >= 6 {
            let bound = c.rolling_arm * r_n.max(0.0);
            let mut pr = [lam[3] - w[k + 3], lam[4] - w[k + 4]];
            project_pair(set, bound, &mut pr);
            let tw = (lam[5] - w[k + 5]).clamp_to(-bound, bound);
            err2 += (lam[3] - pr[0]).powi(2) + (lam[4] - pr[1]).powi(2) + (lam[5] - tw).powi(2);
            for j in 3..6 {
                q2 += q[k + j].powi(2);
            }
        }
    }
    let off = problem.generic_offset();
    for i in 0..problem.generic_rows().len() {
        let k = off + i;
        let (lo, hi) = problem.generic_bounds(i, lambda);
        err2 += (lambda[k] - (lambda[k] - w[k]).clamp_to(lo, hi)).powi(2);
        q2 += q[k].powi(2);
    }
    err2.sqrt() / (1.0 + q2.sqrt())
}

/// `1/D_jj`, or 0 for a row without response.
pub(crate) fn invert_diagonal(d: f64) -> f64 {
    if d > 0.0 { 1.0 / d } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::{ZERO_CHECK_ROWS, is_zero};

    /// A non-zero anywhere, in the serial head or in any part of the
    /// searched tail, and `-0.0` (a zero), on 1-3 threads.
    #[test]
    fn is_zero_finds_a_non_zero_anywhere() {
        let len = 3 * ZERO_CHECK_ROWS + 17;
        for threads in 1..4 {
            let mut lambda = vec![0.0; len];
            assert!(is_zero(&lambda, threads));
            lambda[len / 2] = -0.0;
            assert!(is_zero(&lambda, threads));
            for at in [
                0,
                ZERO_CHECK_ROWS - 1,
                ZERO_CHECK_ROWS,
                2 * ZERO_CHECK_ROWS + 5,
                len - 1,
            ] {
                lambda[at] = 1e-300;
                assert!(!is_zero(&lambda, threads), "at {at}, {threads} threads");
                lambda[at] = 0.0;
            }
        }
        assert!(is_zero(&[], 2));
    }
}

//! Paired sweeps of the coloured order: two blocks that share no moving
//! body swept in lockstep, with the one-block-at-a-time result bit for bit.
//!
//! The decoupled pass over one sphere contact ([`Local::sweep_decoupled`])
//! is a chain of dependent operations through the contact's two body
//! velocities, and consecutive contacts of a block usually share a body.
//! A pass is about 600 instructions, more than the processor's reorder
//! window holds, so the processor cannot start the next contact while it
//! waits on this one's chain: a sweep ran at about 64 ns per contact on
//! this project's machine with room for more arithmetic
//! (`docs/performance.md`, "NDEM step").
//!
//! A paired sweep gives it two independent chains. It keeps two lanes,
//! each holding a block of the colouring ([`crate::pgs_parallel::Colouring`])
//! whose earlier conflicting blocks are finished, and visits the next
//! contact of each lane together, the stages of the two decoupled passes
//! interleaved ([`sweep_pair`]). Two blocks that are both ready share no
//! moving body (the later of two conflicting blocks waits for the
//! earlier), so every contact sees the velocities it sees when the blocks
//! are swept one after the other in position order, and the iterate is the
//! same bit for bit, on any number of threads. Bodies with zero inverse
//! mass (static, kinematic) do not order blocks: a pass adds a zero
//! response to their velocity.
//!
//! A lane with no block beside it (none is ready) pairs within its own
//! block: a contact is visited together with one of the next
//! [`PAIR_LOOKAHEAD`] that names no moving body of it or of the contacts
//! between, and so reads nothing they write
//! ([`SweepData::sweep_in_pairs`]); the given order's sweep does the same
//! along its order (`docs/performance.md`, "NDEM step"). No pass writes
//! the velocity of a body that does not move (static, kinematic: zero
//! inverse mass and inertia), so the contacts of a floor or a wall pair
//! with each other.
//!
//! Each lane also names the bodies of its contact [`PREFETCH_AHEAD`]
//! places further on to the processor ([`ndem_par::prefetch`]): on a
//! problem larger than the cache the contacts come in a stream the
//! processor fetches ahead by itself, their bodies do not, and bodies
//! fetched only when their contact came cost about a sixth of a sweep on
//! the 10⁵ bed (`docs/performance.md`, "NDEM step").

use super::{Isotropic, Local, SHAPE_DECOUPLED, SweepInputs, SweepMode, sweep_contact};
use crate::PREFETCH_AHEAD;
use crate::masses::BodyResponse;
use crate::pgs_parallel::{BlockProgress, BlockSet, RunProgress, SharedIterate, first_ready};
use crate::problem::ContactSide;
use crate::problem::FrictionSet;
use ndem_math::Velocity6;
use ndem_par::prefetch::prefetch;

/// What a sweep reads besides the iterate, with the tangential `b` of a
/// contact (rows 1-5) and its coefficients looked up by `side`
/// ([`ContactSide`]).
pub(super) struct SweepData<'a, T> {
    pub(super) inputs: SweepInputs<'a>,
    pub(super) side: T,
}

/// Where a sweep finds the iterate: the caller's slices (one thread), or a
/// thread's own multipliers and the shared body velocities
/// ([`ThreadIterate`]).
pub(super) trait IterateStore {
    fn velocity(&self, body: usize) -> Velocity6;
    fn set_velocity(&mut self, body: usize, v: &Velocity6);
    /// The multipliers this store updates in place, and the row of `λ`
    /// the first of them is.
    fn rows(&mut self) -> (&mut [f64], usize);
    /// Asks for `body`'s velocity ahead of its use ([`prefetch`]).
    fn prefetch_velocity(&self, body: usize);

    /// The `m` multipliers from row `first`.
    #[inline(always)]
    fn lambda(&mut self, first: usize, m: usize) -> &mut [f64] {
        let (rows, first_row) = self.rows();
        let k = first - first_row;
        &mut rows[k..k + m]
    }

    /// The `m` multipliers from row `first[0]` and those from row
    /// `first[1]` (ranges that do not overlap). Slices rather than a
    /// closure called with them: a closure is not always inlined, and the
    /// pair's update must be, so that the lanes' state stays in registers
    /// (`docs/performance.md`, "NDEM step").
    #[inline(always)]
    fn two_lambdas(&mut self, [k0, k1]: [usize; 2], m: usize) -> (&mut [f64], &mut [f64]) {
        let (rows, first_row) = self.rows();
        two_row_ranges(rows, [k0 - first_row, k1 - first_row], m)
    }
}

/// The caller's `λ` and `v`: the multipliers are updated in place.
pub(super) struct Slices<'a> {
    pub(super) lambda: &'a mut [f64],
    pub(super) velocity: &'a mut [Velocity6],
}

impl IterateStore for Slices<'_> {
    #[inline(always)]
    fn velocity(&self, body: usize) -> Velocity6 {
        self.velocity[body]
    }
    #[inline(always)]
    fn set_velocity(&mut self, body: usize, v: &Velocity6) {
        self.velocity[body] = *v;
    }
    #[inline(always)]
    fn rows(&mut self) -> (&mut [f64], usize) {
        (self.lambda, 0)
    }
    #[inline(always)]
    fn prefetch_velocity(&self, body: usize) {
        prefetch(&self.velocity[body]);
    }
}

/// One thread's part of a parallel sweep's iterate: the multipliers of
/// its contacts (rows `first_row..`) in place, the body velocities shared.
pub(super) struct ThreadIterate<'a> {
    pub(super) lambda: &'a mut [f64],
    pub(super) first_row: usize,
    pub(super) velocity: &'a SharedIterate,
}

impl IterateStore for ThreadIterate<'_> {
    #[inline(always)]
    fn velocity(&self, body: usize) -> Velocity6 {
        self.velocity.velocity(body)
    }
    #[inline(always)]
    fn set_velocity(&mut self, body: usize, v: &Velocity6) {
        self.velocity.set_velocity(body, v)
    }
    #[inline(always)]
    fn rows(&mut self) -> (&mut [f64], usize) {
        (self.lambda, self.first_row)
    }
    #[inline(always)]
    fn prefetch_velocity(&self, body: usize) {
        self.velocity.prefetch(body)
    }
}

/// Rows `k0..k0 + m` and `k1..k1 + m` of `lambda` (not overlapping).
#[inline(always)]
fn two_row_ranges(lambda: &mut [f64], [k0, k1]: [usize; 2], m: usize) -> (&mut [f64], &mut [f64]) {
    if k0 < k1 {
        let (lo, hi) = lambda.split_at_mut(k1);
        (&mut lo[k0..k0 + m], &mut hi[..m])
    } else {
        let (lo, hi) = lambda.split_at_mut(k0);
        (&mut hi[..m], &mut lo[k1..k1 + m])
    }
}

/// Which blocks may start: every earlier block a block shares a moving
/// body with must be finished.
pub(super) trait BlockSource {
    /// The first of `pending` that may start now, if any.
    fn try_next(&mut self, pending: BlockSet) -> Option<usize>;
    /// The first of `pending` that may start, waiting for one if needed;
    /// `None` when the sweep is abandoned ([`RunProgress::abandons`], or a
    /// thread of a barrier run unwound: [`BlockProgress::next_ready`]).
    fn next(&mut self, pending: BlockSet) -> Option<usize>;
    /// Marks block `p` finished.
    fn finish(&mut self, p: usize);
    /// Contacts a lane sweeps alone before it looks for a second block
    /// again.
    fn recheck_after(&self) -> u32;
}

/// The blocks of a sweep on one thread.
pub(super) struct SerialBlocks<'a> {
    pub(super) earlier_conflicts: &'a [BlockSet],
    pub(super) finished: BlockSet,
}

impl BlockSource for SerialBlocks<'_> {
    fn try_next(&mut self, pending: BlockSet) -> Option<usize> {
        first_ready(pending, self.earlier_conflicts, self.finished)
    }
    fn next(&mut self, pending: BlockSet) -> Option<usize> {
        // the unfinished block of lowest position is always ready
        self.try_next(pending).or(pending.first())
    }
    fn finish(&mut self, p: usize) {
        self.finished.insert(p);
    }
    fn recheck_after(&self) -> u32 {
        // on one thread only a finished block makes another ready
        u32::MAX
    }
}

/// One thread's view of a parallel sweep's blocks.
pub(super) struct SharedBlocks<'a> {
    pub(super) earlier_conflicts: &'a [BlockSet],
    pub(super) progress: &'a BlockProgress,
}

impl BlockSource for SharedBlocks<'_> {
    fn try_next(&mut self, pending: BlockSet) -> Option<usize> {
        first_ready(pending, self.earlier_conflicts, self.progress.finished())
    }
    fn next(&mut self, pending: BlockSet) -> Option<usize> {
        self.progress.next_ready(pending, self.earlier_conflicts)
    }
    fn finish(&mut self, p: usize) {
        self.progress.finish(p);
    }
    fn recheck_after(&self) -> u32 {
        // another thread may finish a block at any time
        64
    }
}

/// One thread's view of a sweep in a run without barriers between its
/// sweeps ([`RunProgress`]).
pub(super) struct PipelinedBlocks<'a> {
    pub(super) conflicts: (&'a [BlockSet], &'a [BlockSet]),
    pub(super) progress: &'a RunProgress,
    /// The sweep, counted from the run's first.
    pub(super) sweep: u32,
}

impl BlockSource for PipelinedBlocks<'_> {
    fn try_next(&mut self, pending: BlockSet) -> Option<usize> {
        self.progress
            .first_ready(pending, self.conflicts, self.sweep)
    }
    fn next(&mut self, pending: BlockSet) -> Option<usize> {
        self.progress
            .next_ready(pending, self.conflicts, self.sweep)
    }
    fn finish(&mut self, p: usize) {
        self.progress.finish(p, self.sweep);
    }
    fn recheck_after(&self) -> u32 {
        // another thread may finish a block at any time
        64
    }
}

/// How many contacts after the next one a sweep looks at for the next
/// one's partner ([`SweepData::sweep_in_pairs`]). On the settled 10⁴ bed
/// the given order pairs 67.5 % of its contacts with its neighbour alone
/// (1), 87.8 % with 2, 97.0 % with 4; 2 swept the 3·10⁴ bed 0.86× the
/// time of 1, 4 no faster than 2 (`docs/performance.md`, "NDEM step").
const PAIR_LOOKAHEAD: usize = 2;

/// Contacts a lane sweeps before a sweep that may stop forming its largest
/// correction looks at it again ([`SweepMode::exact_up_to`]).
const TRACK_CHUNK: u32 = 64;

/// Where a sweep of the blocks stands: the blocks not yet taken and the
/// two lanes.
struct BlockSweep {
    pending: BlockSet,
    lanes: [Option<Lane>; 2],
}

impl BlockSweep {
    fn is_done(&self) -> bool {
        self.pending.is_empty() && self.lanes.iter().all(Option::is_none)
    }
}

/// A block being swept in one lane: position, next contact, end.
#[derive(Clone, Copy)]
struct Lane {
    block: usize,
    next: u32,
    end: u32,
}

impl<'t, T: Fn(usize) -> ContactSide<'t>> SweepData<'_, T> {
    /// Sweeps the blocks of `pending` (positions in `blocks`) in two lanes
    /// (module docs). Returns the largest correction and whether every
    /// new value is finite.
    pub(super) fn sweep_blocks(
        &self,
        blocks: &[(u32, u32)],
        pending: BlockSet,
        source: &mut impl BlockSource,
        store: &mut impl IterateStore,
    ) -> (f64, bool) {
        let mut state = BlockSweep {
            pending,
            lanes: [None, None],
        };
        // monomorphised on whether the largest correction is formed (a
        // division per row, in few sweeps)
        if !self.inputs.mode.track {
            return self.sweep_blocks_with::<false>(blocks, &mut state, source, store);
        }
        let (corr, finite) = self.sweep_blocks_with::<true>(blocks, &mut state, source, store);
        if state.is_done() {
            return (corr, finite);
        }
        // the corrections went above `exact_up_to`: the rest of the sweep
        // without them (a blocked sweep's contacts still return theirs)
        let (rest, rest_finite) =
            self.sweep_blocks_with::<false>(blocks, &mut state, source, store);
        (corr.max(rest), finite & rest_finite)
    }

    /// The sweep's mode with the largest correction formed (`TRACK`, as
    /// asked) or not.
    #[inline(always)]
    fn mode<const TRACK: bool>(&self) -> SweepMode {
        if TRACK {
            self.inputs.mode
        } else {
            self.inputs.mode.untracked()
        }
    }

    /// [`Self::sweep_blocks`] from `state` on, forming the largest
    /// correction with `TRACK`. With `TRACK` and a finite
    /// [`SweepMode::exact_up_to`] it returns, lanes and blocks left in
    /// `state`, once the corrections formed go above it (looked at every
    /// [`TRACK_CHUNK`] contacts of a lane). Not inlined: the sweep calls
    /// the untracked one from two places, and inlined twice the pair's
    /// update was no longer inlined into it (4 % more instructions).
    #[inline(never)]
    fn sweep_blocks_with<const TRACK: bool>(
        &self,
        blocks: &[(u32, u32)],
        state: &mut BlockSweep,
        source: &mut impl BlockSource,
        store: &mut impl IterateStore,
    ) -> (f64, bool) {
        let mode = self.mode::<TRACK>();
        let chunk = if TRACK && mode.exact_up_to < f64::INFINITY {
            TRACK_CHUNK
        } else {
            u32::MAX
        };
        let BlockSweep { pending, lanes } = state;
        let (mut max_corr, mut finite) = (0.0f64, true);
        let take = |p: usize, pending: &mut BlockSet| {
            pending.remove(p);
            let (next, end) = blocks[p];
            Some(Lane {
                block: p,
                next,
                end,
            })
        };
        loop {
            for lane in lanes.iter_mut() {
                if lane.is_none()
                    && !pending.is_empty()
                    && let Some(p) = source.try_next(*pending)
                {
                    *lane = take(p, pending);
                }
            }
            let (corr, ok) = match lanes {
                [Some(x), Some(y)] => {
                    // together until the shorter block ends
                    let run = (x.end - x.next).min(y.end - y.next).min(chunk);
                    let (p, q) = (x.next as usize, y.next as usize);
                    x.next += run;
                    y.next += run;
                    let (mut corr, mut ok) = (0.0f64, true);
                    for k in 0..run as usize {
                        self.prefetch_ahead(p + k, x.end, store);
                        self.prefetch_ahead(q + k, y.end, store);
                        let (c, o) = self.visit_two::<TRACK>([p + k, q + k], store);
                        corr = corr.max(c);
                        ok &= o;
                    }
                    (corr, ok)
                }
                [Some(x), None] | [None, Some(x)] => {
                    // alone until its block ends, or until another block
                    // may have become ready
                    let run = (x.end - x.next).min(source.recheck_after()).min(chunk);
                    let p = x.next as usize;
                    x.next += run;
                    self.sweep_alone::<TRACK>(p..p + run as usize, x.end, store)
                }
                [None, None] => {
                    if pending.is_empty() {
                        break;
                    }
                    let Some(p) = source.next(*pending) else {
                        break;
                    };
                    lanes[0] = take(p, pending);
                    continue;
                }
            };
            max_corr = max_corr.max(corr);
            finite &= ok;
            for lane in lanes.iter_mut() {
                if let Some(x) = lane
                    && x.next == x.end
                {
                    source.finish(x.block);
                    *lane = None;
                }
            }
            if TRACK && mode.may_stop_tracking(max_corr) {
                break;
            }
        }
        (max_corr, finite)
    }

    /// The contacts `range` of a lane's block (which ends at `end`) with
    /// no other block beside them, in pairs along the block
    /// ([`Self::sweep_in_pairs`]).
    #[inline(always)]
    fn sweep_alone<const TRACK: bool>(
        &self,
        range: std::ops::Range<usize>,
        end: u32,
        store: &mut impl IterateStore,
    ) -> (f64, bool) {
        let ahead = range.start + PREFETCH_AHEAD..end as usize;
        self.sweep_in_pairs(range, ahead, store, self.mode::<TRACK>())
    }

    /// Visits the contacts of `order` in `mode`, two at a time where the
    /// order allows: a contact is visited together with the first of the
    /// next [`PAIR_LOOKAHEAD`] contacts that names no body of it or of the
    /// contacts between them ([`Self::visit_two`]). That contact reads
    /// nothing the ones it passes write, so the iterate is that of the
    /// visits one after the other in `order`, bit for bit. `ahead` gives
    /// the contact whose bodies are asked for as each contact is taken
    /// from `order` ([`Self::prefetch_bodies`]). A `mode` that forms the
    /// largest correction only up to a limit stops forming it once the
    /// corrections go above ([`SweepMode::may_stop_tracking`]).
    #[inline(always)]
    pub(super) fn sweep_in_pairs(
        &self,
        mut order: impl Iterator<Item = usize>,
        mut ahead: impl Iterator<Item = usize>,
        store: &mut impl IterateStore,
        mode: SweepMode,
    ) -> (f64, bool) {
        let (mut max_corr, mut finite) = (0.0f64, true);
        let mut tracking = mode.track;
        // the contacts taken from `order` and not yet visited, in order
        let mut waiting = [0usize; PAIR_LOOKAHEAD + 1];
        let mut count = 0;
        loop {
            while count < waiting.len()
                && let Some(ci) = order.next()
            {
                if let Some(next) = ahead.next() {
                    self.prefetch_bodies(next, store);
                }
                waiting[count] = ci;
                count += 1;
            }
            if count == 0 {
                return (max_corr, finite);
            }
            let first = waiting[0];
            let partner = (1..count)
                .find(|&k| (0..k).all(|j| self.share_no_moving_body(waiting[j], waiting[k])))
                .map(|k| {
                    let second = waiting[k];
                    waiting.copy_within(k + 1..count, k);
                    count -= 1;
                    second
                });
            waiting.copy_within(1..count, 0);
            count -= 1;
            let (corr, ok) = match partner {
                Some(second) if tracking => self.visit_two::<true>([first, second], store),
                Some(second) => self.visit_two::<false>([first, second], store),
                None if tracking => self.visit_one_with(first, store, mode),
                None => self.visit_one_with(first, store, mode.untracked()),
            };
            max_corr = max_corr.max(corr);
            finite &= ok;
            tracking &= !mode.may_stop_tracking(max_corr);
        }
    }

    /// Whether contacts `c0` and `c1` name no common moving body. A body
    /// that does not move ([`Self::moves`]: static, kinematic) may be
    /// shared: a pass reads its velocity and never writes it
    /// ([`write_back`]), so the two passes read the same value in
    /// either order (a floor's contacts pair with each other).
    #[inline(always)]
    fn share_no_moving_body(&self, c0: usize, c1: usize) -> bool {
        let records = self.inputs.problem.records();
        let ([a0, b0], [a1, b1]) = (records[c0].bodies, records[c1].bodies);
        let shared = |x: u32| (x == a1 || x == b1) && self.moves(x as usize);
        !shared(a0) && !shared(b0)
    }

    /// Whether a contact's pass changes `body`'s velocity ([`moving`]).
    #[inline(always)]
    fn moves(&self, body: usize) -> bool {
        moving(self.inputs.bodies[body])
    }

    /// Asks for the bodies of the contact [`PREFETCH_AHEAD`] places after
    /// `ci`, if that is still in the lane's block (which ends at `end`).
    #[inline(always)]
    fn prefetch_ahead(&self, ci: usize, end: u32, store: &impl IterateStore) {
        let ahead = ci + PREFETCH_AHEAD;
        if ahead < end as usize {
            self.prefetch_bodies(ahead, store);
        }
    }

    /// Asks for the velocities and responses of contact `ci`'s bodies
    /// ([`prefetch`]).
    #[inline(always)]
    pub(super) fn prefetch_bodies(&self, ci: usize, store: &impl IterateStore) {
        let c = &self.inputs.problem.records()[ci];
        for body in c.bodies {
            let body = body as usize;
            store.prefetch_velocity(body);
            prefetch(&self.inputs.bodies[body]);
        }
    }

    /// The update of one contact ([`sweep_contact`]) in `mode`.
    #[inline(always)]
    pub(super) fn visit_one_with(
        &self,
        ci: usize,
        store: &mut impl IterateStore,
        mode: SweepMode,
    ) -> (f64, bool) {
        let m = self.inputs.problem.contact_rows().count();
        let c = &self.inputs.problem.records()[ci];
        let [a, b] = c.bodies.map(|x| x as usize);
        let (mut va, mut vb) = (store.velocity(a), store.velocity(b));
        let outcome = sweep_contact(
            (c, (self.side)(ci)),
            &self.inputs.shapes.1[self.inputs.shapes.0[ci] as usize],
            self.inputs.problem.friction_set(),
            store.lambda(ci * m, m),
            &self.inputs.inv_diag[ci * m..ci * m + m],
            (
                self.inputs.omega,
                &self.inputs.relaxed_inv_diag[ci * m..ci * m + m],
            ),
            (self.inputs.inv, a, b),
            [self.inputs.bodies[a], self.inputs.bodies[b]],
            (&mut va, &mut vb),
            mode,
        );
        let [ra, rb] = [self.inputs.bodies[a], self.inputs.bodies[b]];
        write_back(store, (a, moving(ra)), &va);
        write_back(store, (b, moving(rb)), &vb);
        outcome
    }

    /// Whether contact `ci` takes the decoupled pass (spheres and other
    /// isotropic bodies with arms along `n`, one pass per sweep).
    #[inline(always)]
    fn pairable(&self, ci: usize) -> bool {
        self.inputs.mode.passes == 1 && self.inputs.shapes.0[ci] == SHAPE_DECOUPLED
    }

    /// The updates of two contacts that share no moving body: the
    /// decoupled passes interleaved ([`sweep_pair`]) when both take it,
    /// else one after the other (the same iterate either way).
    #[inline(always)]
    fn visit_two<const TRACK: bool>(
        &self,
        [c0, c1]: [usize; 2],
        store: &mut impl IterateStore,
    ) -> (f64, bool) {
        if !(self.pairable(c0) && self.pairable(c1)) {
            let mode = self.mode::<TRACK>();
            let (k0, ok0) = self.visit_one_with(c0, store, mode);
            let (k1, ok1) = self.visit_one_with(c1, store, mode);
            return (k0.max(k1), ok0 & ok1);
        }
        let m = self.inputs.problem.contact_rows().count();
        let mut l0 = self.local::<TRACK>(c0, store);
        let mut l1 = self.local::<TRACK>(c1, store);
        let (lam0, lam1) = store.two_lambdas([c0 * m, c1 * m], m);
        sweep_pair(
            (&mut l0, lam0),
            (&mut l1, lam1),
            self.inputs.problem.friction_set(),
        );
        let [a0, b0] = l0.c.bodies.map(|x| x as usize);
        let [a1, b1] = l1.c.bodies.map(|x| x as usize);
        // the responses the passes already hold
        let moves = |mass: f64, Isotropic(k): Isotropic| mass != 0.0 || k != 0.0;
        write_back(store, (a0, moves(l0.mass_a, l0.resp_a)), &l0.va);
        write_back(store, (b0, moves(l0.mass_b, l0.resp_b)), &l0.vb);
        write_back(store, (a1, moves(l1.mass_a, l1.resp_a)), &l1.va);
        write_back(store, (b1, moves(l1.mass_b, l1.resp_b)), &l1.vb);
        (l0.max_corr().max(l1.max_corr()), l0.finite & l1.finite)
    }

    /// The decoupled pass's local state of contact `ci`.
    #[inline(always)]
    fn local<'s, const TRACK: bool>(
        &'s self,
        ci: usize,
        store: &impl IterateStore,
    ) -> Local<'s, Isotropic, Isotropic>
    where
        't: 's,
    {
        let m = self.inputs.problem.contact_rows().count();
        let c = &self.inputs.problem.records()[ci];
        let [a, b] = c.bodies.map(|x| x as usize);
        let [ra, rb] = [self.inputs.bodies[a], self.inputs.bodies[b]];
        let (rhs_t, k) = (self.side)(ci);
        Local {
            c,
            rhs_t,
            k,
            shape: &self.inputs.shapes.1[SHAPE_DECOUPLED as usize],
            inv_d: &self.inputs.inv_diag[ci * m..ci * m + m],
            relaxed_inv_d: &self.inputs.relaxed_inv_diag[ci * m..ci * m + m],
            omega: self.inputs.omega,
            mass_a: ra.inv_mass,
            mass_b: rb.inv_mass,
            resp_a: Isotropic(ra.isotropic),
            resp_b: Isotropic(rb.isotropic),
            va: store.velocity(a),
            vb: store.velocity(b),
            corrections: [0.0; 6],
            track: TRACK,
            finite: true,
        }
    }
}

/// Whether a contact's pass changes the velocity of a body with response
/// `r`: a body with an inverse mass or inverse inertia. The response of
/// one without either (static, kinematic) is zero.
#[inline(always)]
fn moving(r: BodyResponse) -> bool {
    r.inv_mass != 0.0 || r.isotropic != 0.0
}

/// Stores a pass's new velocity `v` of `body` when it `moves`: the
/// velocity of a body that does not move ([`moving`]) stays as it was, bit
/// for bit (adding the zero response could turn a `−0` into `+0`,
/// differently in different orders), so contacts that share it are
/// independent.
#[inline(always)]
fn write_back(store: &mut impl IterateStore, (body, moves): (usize, bool), v: &Velocity6) {
    if moves {
        store.set_velocity(body, v);
    }
}

/// The decoupled passes over two contacts that share no moving body, each
/// stage of the one beside the same stage of the other, so that the
/// processor has two independent dependency chains to work on. Each lane's
/// arithmetic is [`Local::sweep_decoupled`]'s.
#[inline(always)]
fn sweep_pair(
    (l0, lam0): (&mut Local<'_, Isotropic, Isotropic>, &mut [f64]),
    (l1, lam1): (&mut Local<'_, Isotropic, Isotropic>, &mut [f64]),
    set: FrictionSet,
) {
    let t0 = l0.decoupled_translational_candidates(lam0);
    let t1 = l1.decoupled_translational_candidates(lam1);
    let force0 = l0.decoupled_translational_update(set, lam0, t0);
    let force1 = l1.decoupled_translational_update(set, lam1, t1);
    if lam0.len() >= 6 {
        let r0 = l0.decoupled_rotational_candidates(lam0, force0);
        let r1 = l1.decoupled_rotational_candidates(lam1, force1);
        l0.decoupled_rotational_update(set, lam0, force0, r0);
        l1.decoupled_rotational_update(set, lam1, force1, r1);
    }
}

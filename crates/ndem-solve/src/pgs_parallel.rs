//! Parallel sweeps of [`crate::ProjectedGaussSeidel`] over a colouring of
//! the contacts ([`crate::ContactOrder::Coloured`]).
//!
//! The contacts are cut into at most `PgsSettings::colour_blocks` blocks
//! of consecutive contacts (at most 256, the default; at least 512 contacts
//! each; the cut depends on the problem and that setting only), and the blocks
//! are coloured in the problem's order so that no two blocks of one colour
//! share a body with finite mass: first greedily (each block the lowest
//! free colour), then again with the greedy's number of colours, each
//! block taking the free colour that holds the fewest blocks so far (the
//! lowest free colour beyond them if none is free). The second pass evens
//! out the colours: a colour of one block leaves all threads but one idle
//! until the barrier, and on a settled packing of 3·10⁴ spheres, whose
//! bodies have mixed so that a contact may join bodies 10⁴ indices apart,
//! the greedy colouring made 17-19 colours of 32 blocks, 6-9 of them
//! holding a single block (sweep time on two threads in blocks, the sum
//! over colours of the larger share: 21-22 of 32); the balanced one 18
//! colours, 14 of two blocks (18 of 32).
//! The sweep visits the colours
//! in turn; a thread sweeps whole blocks, each in the problem's order, so
//! memory is visited much as in the problem's own order. The blocks of a
//! colour touch disjoint moving bodies, so they can be swept in any order
//! or at once: the iterates are bit-identical for every thread count, one
//! thread included. (They differ from the [`crate::ContactOrder::Given`]
//! sweep, which visits the blocks in another order; below 1024 contacts
//! there is one block and the two orders coincide.)
//!
//! The threads share the body velocities through relaxed atomics holding
//! the bits of each `f64` (plain loads and stores on x86-64 and AArch64);
//! each thread updates the multipliers of its own range of contacts in its
//! part of `λ`. Disjoint access within a colour is what makes the result
//! deterministic. There is
//! no barrier between colours: each thread sweeps a range of consecutive
//! blocks ([`Colouring::owner`]), and a block waits only for the earlier
//! blocks (in colour order) it shares a moving body with
//! ([`BlockProgress`]), so the threads wait for each other only where
//! their ranges meet (a per-colour barrier left one thread
//! idle whenever a colour's blocks did not split evenly). A thread takes
//! its blocks in colour order but skips a block that is still waiting for
//! another thread's when a later one of its own is free, and
//! sweeps two ready blocks in lockstep (`pgs/paired.rs`).
//! Where every sweep of a run is known to run (no early stop), there is no
//! barrier between sweeps either ([`RunProgress`]).

use crate::pgs::mode::SweepMode;
use crate::problem::ContactProblem;
use ndem_math::Velocity6;
use ndem_par::blocks::map_parts;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

mod block_set;
pub(crate) use block_set::{AtomicBlockSet, BlockSet};

/// Colours a block may take (a [`BlockSet`] of colours): as many as blocks
/// can be, so that every block finds a free colour.
const MAX_COLOURS: usize = block_set::CAPACITY;
const _: () = assert!(MAX_BLOCKS <= MAX_COLOURS && MAX_COLOURS <= 256);

/// Fewest contacts per block, and most blocks: the blocks depend on the
/// problem alone (never on the thread count), so the visiting order and the
/// result do not either. At 1024 a settled bed of 10⁴
/// spheres (2.1·10⁴ contacts) had 21 blocks, and two threads swept it no
/// faster than one: most of a thread's visits found no second block ready
/// for its other lane. At 512 it has 32 (`docs/performance.md`,
/// "NDEM step").
pub(crate) const BLOCK_MIN_CONTACTS: usize = 512;
/// Most blocks a caller may ask for ([`crate::PgsSettings::colour_blocks`]):
/// as many as a [`BlockSet`] holds. Block numbers and colours are `u8`.
pub(crate) const MAX_BLOCKS: usize = block_set::CAPACITY;
/// Blocks by default: the most. On the settled bed of 10⁵ spheres 256
/// blocks take 13 colours and allow 12.7× on 16 threads where 32 take 8
/// and allow 4×, and they sweep within 5 % of 32's time on one and two
/// threads, to the same residual (`cargo xtask scaling`;
/// `docs/performance.md`, "The schedule bound").
pub(crate) const DEFAULT_BLOCKS: usize = MAX_BLOCKS;

/// The contacts in blocks of consecutive contacts (problem order), the
/// blocks grouped by colour so that no two blocks of a colour share a body
/// with finite mass. A thread sweeps whole blocks, each in problem order,
/// so memory is visited as in the problem's own order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Colouring {
    /// Contact indices in visiting order: colour after colour, block after
    /// block, each block in problem order.
    pub(crate) order: Vec<u32>,
    /// Blocks `[start, end)` of contact indices, colour after colour.
    pub(crate) blocks: Vec<(u32, u32)>,
    /// `blocks[colour_starts[k]..colour_starts[k + 1]]` is colour `k`.
    pub(crate) colour_starts: Vec<usize>,
    /// `earlier_conflicts[p]` holds `q` when block `q < p` (both
    /// positions in `blocks`) shares a moving body with block `p`: what
    /// block `p` waits for in a parallel sweep ([`BlockProgress`]).
    pub(crate) earlier_conflicts: Vec<BlockSet>,
    /// `later_conflicts[p]` holds `q` when block `q > p` shares a
    /// moving body with block `p` (the transpose of `earlier_conflicts`):
    /// what block `p` waits for, from the sweep before, in a run of sweeps
    /// without a barrier between them ([`RunProgress`]).
    pub(crate) later_conflicts: Vec<BlockSet>,
    /// `block_numbers[p]`: the number of block `p` in contact order
    /// (`0..blocks.len()`); a parallel sweep gives each thread a range of
    /// numbers, i.e. a range of consecutive contacts ([`Self::owner`]).
    pub(crate) block_numbers: Vec<u8>,
    /// What the colouring was built from: each contact's two bodies,
    /// [`NOT_MOVING`] for a body whose velocity never changes, in contact
    /// order (8 bytes per contact where the problem's records are 160:
    /// the colouring's passes read these), and the block count. A build
    /// from the same input keeps the colouring it has.
    input: ColouringInput,
    /// Per moving body, the blocks whose contacts name it (bits).
    touching: BodyBlocks,
    /// Per block (in contact order), the other blocks it shares a moving
    /// body with.
    adjacent: Vec<BlockSet>,
    colour: Vec<u8>,
}

/// Scratch of [`Colouring::build`]: per body, bits set by the threads that
/// scan the blocks (relaxed atomic `or`s: the bits are the same on any
/// thread count), as many 64-bit words per body as the block count needs
/// (body `b`'s words at `b * words..`). A clone starts empty.
#[derive(Debug, Default)]
struct BodyBlocks(Vec<AtomicU64>);

impl Clone for BodyBlocks {
    fn clone(&self) -> Self {
        Self::default()
    }
}

/// The input of [`Colouring::build`]: see [`Colouring`]'s `input`.
#[derive(Debug, Clone, Default)]
struct ColouringInput {
    pairs: Vec<[u32; 2]>,
    blocks: usize,
    /// Per body: its velocity can change (finite mass or inertia).
    moving: Vec<bool>,
}

/// A body in [`ColouringInput`]'s pairs that does not move.
const NOT_MOVING: u32 = u32::MAX;

/// Fewest contacts per thread when the pairs are gathered on several
/// threads (below it a thread's start costs more than its share).
const GATHER_MIN_CONTACTS: usize = 8192;

impl ColouringInput {
    /// Gathers `problem`'s pairs of moving bodies for `blocks` blocks, the
    /// contacts split among up to `threads` threads (each pair depends on
    /// its contact alone: the same pairs on any count); `true` when they
    /// are what they were (the colouring still holds).
    fn gather(&mut self, problem: &ContactProblem, blocks: usize, threads: usize) -> bool {
        self.moving.clear();
        self.moving.extend(problem.inverse_mass().movable());
        let records = problem.records();
        let same_size = self.blocks == blocks && self.pairs.len() == records.len();
        if self.pairs.len() != records.len() {
            ndem_par::capacity::refill(&mut self.pairs, records.len(), [NOT_MOVING; 2]);
        }
        let moving = &self.moving;
        let threads = threads.clamp(1, records.len().div_ceil(GATHER_MIN_CONTACTS).max(1));
        let per = ndem_par::blocks::block_len(records.len(), threads);
        let parts = self.pairs.chunks_mut(per).zip(records.chunks(per));
        let same_parts = ndem_par::blocks::map_parts(parts, |(pairs, records)| {
            let mut same = true;
            for (pair, c) in pairs.iter_mut().zip(records) {
                let new = c
                    .bodies
                    .map(|b| if moving[b as usize] { b } else { NOT_MOVING });
                same &= *pair == new;
                *pair = new;
            }
            same
        });
        self.blocks = blocks;
        same_size && same_parts.into_iter().all(|s| s)
    }

    /// The moving bodies of contacts `s..e`, with repeats, in the order
    /// the problem's records name them.
    fn bodies(&self, (s, e): (u32, u32)) -> impl Iterator<Item = usize> + Clone + '_ {
        self.pairs[s as usize..e as usize]
            .iter()
            .flatten()
            .filter(|&&b| b != NOT_MOVING)
            .map(|&b| b as usize)
    }
}

/// Contacts `[start, end)` of block `k` of `count` over `n` contacts.
fn block_bounds(n: usize, count: usize, k: usize) -> (u32, u32) {
    ((n * k / count) as u32, (n * (k + 1) / count) as u32)
}

impl Colouring {
    /// Splits `problem`'s contacts into blocks and colours the blocks in
    /// problem order, greedily and then balanced (module docs). Bodies with
    /// zero inverse mass (static, kinematic) do not conflict: their
    /// velocity never changes.
    pub(crate) fn build(&mut self, problem: &ContactProblem, max_blocks: usize, threads: usize) {
        let n = problem.contacts().len();
        let count = (n / BLOCK_MIN_CONTACTS).clamp(1, max_blocks.clamp(1, MAX_BLOCKS));
        // the impact and continuous stages of a step solve problems on the
        // same contacts: their solvers pass this colouring on
        // ([`crate::SolverScratch`]), and the second keeps it
        if self.input.gather(problem, count, threads) && self.colour.len() == count {
            return;
        }
        let input = std::mem::take(&mut self.input);
        let block = |k: usize| block_bounds(n, count, k);
        self.find_adjacent_blocks(&input, problem.body_count(), count, threads);
        // greedy first: each block takes the lowest colour that none of
        // the earlier blocks it shares a moving body with has; then again
        // with the greedy's colour count, each block taking the free
        // colour with the fewest blocks so far
        self.assign(count, |free| free.first().unwrap_or_default());
        let greedy = self.colours_used();
        if greedy > 1 {
            let mut sizes = [0u32; MAX_COLOURS];
            self.assign(count, |free| {
                let least = free
                    .iter()
                    .take_while(|&k| k < greedy)
                    .min_by_key(|&k| sizes[k]);
                // no free colour among the greedy's: the lowest free one
                let k = least.unwrap_or(free.first().unwrap_or_default());
                sizes[k] += 1;
                k
            });
        }
        let colours = self.colours_used();
        self.blocks.clear();
        self.colour_starts.clear();
        self.order.clear();
        self.block_numbers.clear();
        for k in 0..colours {
            self.colour_starts.push(self.blocks.len());
            for (b, _) in self
                .colour
                .iter()
                .enumerate()
                .filter(|(_, c)| **c as usize == k)
            {
                let (s, e) = block(b);
                self.blocks.push((s, e));
                self.block_numbers.push(b as u8);
                self.order.extend(s..e);
            }
        }
        self.colour_starts.push(self.blocks.len());
        // what the block at each position waits for: the earlier
        // positions whose blocks share a moving body with it
        self.earlier_conflicts.clear();
        for (p, &number) in self.block_numbers.iter().enumerate() {
            let adjacent = self.adjacent[number as usize];
            let earlier = self.block_numbers[..p]
                .iter()
                .enumerate()
                .filter(|(_, q)| adjacent.contains(**q as usize))
                .map(|(q, _)| q)
                .collect();
            self.earlier_conflicts.push(earlier);
        }
        self.later_conflicts.clear();
        let positions = self.earlier_conflicts.len();
        self.later_conflicts.resize(positions, BlockSet::EMPTY);
        for (p, earlier) in self.earlier_conflicts.iter().enumerate() {
            for q in earlier.iter() {
                self.later_conflicts[q].insert(p);
            }
        }
        self.input = input;
    }

    /// Fills `adjacent` for blocks `0..count` of `input`: a pass that
    /// marks each moving body with the blocks naming it, then a pass that
    /// collects each block's bodies' marks, both on up to `threads`
    /// threads (ranges of consecutive blocks, at least
    /// [`GATHER_MIN_CONTACTS`] contacts each).
    fn find_adjacent_blocks(
        &mut self,
        input: &ColouringInput,
        bodies: usize,
        count: usize,
        threads: usize,
    ) {
        let n = input.pairs.len();
        let block = |k: usize| block_bounds(n, count, k);
        let words = count.div_ceil(64);
        let touching = &mut self.touching.0;
        touching.truncate(bodies * words);
        touching.iter_mut().for_each(|m| *m.get_mut() = 0);
        touching.resize_with(bodies * words, || AtomicU64::new(0));
        let touching = &*touching;
        let parts = ndem_par::blocks::parts_for(n, threads, GATHER_MIN_CONTACTS).min(count);
        let per = count.div_ceil(parts);
        let ranges = || (0..count).step_by(per).map(|s| s..(s + per).min(count));
        map_parts(ranges(), |blocks| {
            for k in blocks {
                let bit = 1u64 << (k % 64);
                for b in input.bodies(block(k)) {
                    // most bodies are named again by the same block: the
                    // atomic `or` only where the bit is missing
                    let word = &touching[b * words + k / 64];
                    if word.load(Ordering::Relaxed) & bit == 0 {
                        word.fetch_or(bit, Ordering::Relaxed);
                    }
                }
            }
        });
        self.adjacent.clear();
        self.adjacent.resize(count, BlockSet::EMPTY);
        let adjacent = self.adjacent.chunks_mut(per).zip(ranges());
        map_parts(adjacent, |(out, blocks)| {
            for (slot, k) in out.iter_mut().zip(blocks) {
                let mut all = BlockSet::EMPTY;
                for b in input.bodies(block(k)) {
                    for (w, word) in touching[b * words..(b + 1) * words].iter().enumerate() {
                        all.add_word(w, word.load(Ordering::Relaxed));
                    }
                }
                all.remove(k);
                *slot = all;
            }
        });
    }

    /// Colours blocks `0..count` in order, block `k` taking
    /// `choose(free)` where `free` holds colour `c` when no earlier block
    /// adjacent to `k` has colour `c` (a block shares bodies with at most
    /// `MAX_BLOCKS - 1 < MAX_COLOURS` others, so `free` is never empty).
    fn assign(&mut self, count: usize, mut choose: impl FnMut(BlockSet) -> usize) {
        self.colour.clear();
        for k in 0..count {
            let taken: BlockSet = self.adjacent[k]
                .iter()
                .take_while(|&j| j < k)
                .map(|j| self.colour[j] as usize)
                .collect();
            let colour = choose(BlockSet::below(MAX_COLOURS).minus(taken));
            self.colour.push(colour as u8);
        }
    }

    /// Bytes the colouring holds (its vectors' capacities).
    pub(crate) fn bytes(&self) -> usize {
        use std::mem::size_of;
        self.order.capacity() * size_of::<u32>()
            + self.blocks.capacity() * size_of::<(u32, u32)>()
            + self.colour_starts.capacity() * size_of::<usize>()
            + self.earlier_conflicts.capacity() * size_of::<BlockSet>()
            + self.later_conflicts.capacity() * size_of::<BlockSet>()
            + self.block_numbers.capacity()
            + self.input.pairs.capacity() * size_of::<[u32; 2]>()
            + self.input.moving.capacity()
            + self.touching.0.capacity() * size_of::<AtomicU64>()
            + self.adjacent.capacity() * size_of::<BlockSet>()
            + self.colour.capacity()
    }

    /// One more than the highest colour a block has.
    fn colours_used(&self) -> usize {
        self.colour
            .iter()
            .map(|&k| k as usize + 1)
            .max()
            .unwrap_or(0)
    }

    /// The thread of `threads` that sweeps the block at position `p`:
    /// thread `t` takes the `t`-th of `threads` ranges of consecutive
    /// blocks (in contact order, so in space for a bed numbered along a
    /// space-filling curve). A thread then mostly waits for its own earlier
    /// blocks, which it has already swept, and for the other threads' only
    /// where their ranges meet.
    pub(crate) fn owner(&self, p: usize, threads: usize) -> usize {
        (self.block_numbers[p] as usize * threads) / self.blocks.len()
    }

    /// The positions of the blocks thread `t` of `threads` sweeps
    /// ([`Self::owner`]).
    pub(crate) fn owned_blocks(&self, t: usize, threads: usize) -> BlockSet {
        (0..self.blocks.len())
            .filter(|&p| self.owner(p, threads) == t)
            .collect()
    }

    /// The contacts thread `t` of `threads` sweeps ([`Self::owner`]): a
    /// range of consecutive contacts, empty when it owns no block.
    pub(crate) fn owned_contacts(&self, t: usize, threads: usize) -> std::ops::Range<usize> {
        let owned = (0..self.blocks.len()).filter(|&p| self.owner(p, threads) == t);
        let start = owned.clone().map(|p| self.blocks[p].0).min();
        let end = owned.map(|p| self.blocks[p].1).max();
        match (start, end) {
            (Some(s), Some(e)) => s as usize..e as usize,
            _ => 0..0,
        }
    }

    /// Number of colours.
    #[cfg(test)]
    pub(crate) fn colours(&self) -> usize {
        self.colour_starts.len().saturating_sub(1)
    }
}

/// The body velocities shared by the sweeping threads, as atomic `f64`
/// bits. The multipliers are not shared: a thread sweeps a range of
/// consecutive contacts ([`Colouring::owner`]) and updates their rows in
/// its own part of the caller's `λ`.
#[derive(Debug, Default)]
pub(crate) struct SharedIterate {
    velocity: Vec<[AtomicU64; 6]>,
}

impl Clone for SharedIterate {
    fn clone(&self) -> Self {
        // scratch: a clone starts empty and is filled by its next solve
        Self::default()
    }
}

#[inline(always)]
fn load(a: &AtomicU64) -> f64 {
    f64::from_bits(a.load(Ordering::Relaxed))
}

#[inline(always)]
fn store(a: &AtomicU64, x: f64) {
    a.store(x.to_bits(), Ordering::Relaxed)
}

impl SharedIterate {
    /// Copies `velocity` in, in parts on up to `threads` threads.
    pub(crate) fn fill(&mut self, velocity: &[Velocity6], threads: usize) {
        self.velocity.resize_with(velocity.len(), || {
            std::array::from_fn(|_| AtomicU64::new(0))
        });
        let per = copy_part_len(velocity.len(), threads);
        let parts = self.velocity.chunks(per).zip(velocity.chunks(per));
        ndem_par::blocks::map_parts(parts, |(shared, given)| {
            for (a, v) in shared.iter().zip(given) {
                store_velocity(a, v);
            }
        });
    }

    /// Copies the velocities out, in parts on up to `threads` threads.
    pub(crate) fn write_to(&self, velocity: &mut [Velocity6], threads: usize) {
        let per = copy_part_len(velocity.len(), threads);
        let parts = velocity.chunks_mut(per).zip(self.velocity.chunks(per));
        ndem_par::blocks::map_parts(parts, |(out, shared)| {
            for (v, a) in out.iter_mut().zip(shared) {
                *v = load_velocity(a);
            }
        });
    }

    /// Body `b`'s velocity.
    #[inline(always)]
    pub(crate) fn velocity(&self, b: usize) -> Velocity6 {
        load_velocity(&self.velocity[b])
    }

    /// Sets body `b`'s velocity.
    #[inline(always)]
    pub(crate) fn set_velocity(&self, b: usize, v: &Velocity6) {
        store_velocity(&self.velocity[b], v)
    }

    /// Asks for body `b`'s velocity ahead of its use
    /// ([`ndem_par::prefetch`]).
    #[inline(always)]
    pub(crate) fn prefetch(&self, b: usize) {
        ndem_par::prefetch::prefetch(&self.velocity[b])
    }
}

/// The part length a copy of `len` velocities is split into for up to
/// `threads` threads, with at least [`COPY_MIN_BODIES`] per part.
fn copy_part_len(len: usize, threads: usize) -> usize {
    let threads = threads.clamp(1, (len / COPY_MIN_BODIES).max(1));
    ndem_par::blocks::block_len(len, threads)
}

/// Fewest bodies per thread in a copy of the shared velocities (below it
/// a thread's start costs more than its share).
const COPY_MIN_BODIES: usize = 16_384;

#[inline(always)]
fn load_velocity(a: &[AtomicU64; 6]) -> Velocity6 {
    Velocity6::new(
        ndem_math::Vec3::new(load(&a[0]), load(&a[1]), load(&a[2])),
        ndem_math::Vec3::new(load(&a[3]), load(&a[4]), load(&a[5])),
    )
}

#[inline(always)]
fn store_velocity(a: &[AtomicU64; 6], v: &Velocity6) {
    for (k, x) in v.linear.iter().chain(v.angular.iter()).enumerate() {
        store(&a[k], *x);
    }
}

/// Which blocks of a parallel sweep are finished (bit `p` for the block at
/// position `p` of [`Colouring::blocks`]). A block waits only for the
/// earlier blocks it shares a moving body with
/// ([`Colouring::earlier_conflicts`]), not for a whole colour. A thread
/// takes, of its blocks not yet swept, the first (in position order) whose
/// earlier conflicting blocks are finished ([`Self::next_ready`]), so it
/// does not wait at a block held up by another thread while a later block
/// of its own is free (before, it took its blocks strictly in
/// position order). Every pair of blocks that share a moving body still
/// runs in position order, since the later one starts only once the
/// earlier has finished: the one-thread order's iterate, bit for bit. No
/// deadlock: the unfinished block of lowest position has all its earlier
/// conflicts finished, so its thread can always go on.
#[derive(Debug, Default)]
pub(crate) struct BlockProgress {
    finished: AtomicBlockSet,
    /// A thread of the run unwound ([`Self::poison_on_unwind`]).
    poisoned: AtomicBool,
}

impl BlockProgress {
    /// Spins (briefly, then yields) until one of the blocks in `pending`
    /// has every block of its `earlier_conflicts` finished, and returns the
    /// first such position; those blocks' writes are then visible
    /// (acquire). `None` once the run is poisoned: a thread that unwound
    /// will not finish the blocks it owned, and a wait for them would
    /// never end (the scope could then not resume the panic). The poison
    /// is looked at only once the wait has spun its first rounds, so that
    /// a short wait runs as it did without it.
    pub(crate) fn next_ready(
        &self,
        pending: BlockSet,
        earlier_conflicts: &[BlockSet],
    ) -> Option<usize> {
        const SPINS: u32 = 1 << 12;
        let mut spins = 0u32;
        loop {
            if let Some(p) = first_ready(pending, earlier_conflicts, self.finished()) {
                return Some(p);
            }
            if spins >= SPINS && self.poisoned.load(Ordering::Relaxed) {
                return None;
            }
            spin_then_yield(&mut spins, SPINS);
        }
    }

    /// A guard that poisons the run's waits for blocks if its thread
    /// unwinds while holding it.
    pub(crate) fn poison_on_unwind(&self) -> PoisonOnUnwind<'_> {
        PoisonOnUnwind(&self.poisoned)
    }

    /// The blocks finished so far (acquire: their writes are visible).
    pub(crate) fn finished(&self) -> BlockSet {
        self.finished.load()
    }

    /// Marks block `position` finished (release: its writes are published).
    pub(crate) fn finish(&self, position: usize) {
        self.finished.insert(position);
    }

    /// No block finished (for the next sweep of a run, while the threads
    /// wait at [`SweepRun::meet`]).
    pub(crate) fn reset(&self) {
        self.finished.clear();
    }
}

/// Where a run of sweeps without a barrier between them stands
/// (`ProjectedGaussSeidel`'s `sweep_contacts_pipelined`): per block
/// position, how many of the run's sweeps it has finished. Block `p` may
/// start sweep `k` (counted from the run's first) once every earlier
/// block it shares a moving body with has finished sweep `k`, and every
/// later one has finished sweep `k − 1` ([`Colouring::later_conflicts`]):
/// then it reads what it reads in the one-thread order (the earlier
/// blocks' sweep `k`, the later blocks' sweep `k − 1`), and no block that
/// must read its sweep-`k − 1` velocities can see its sweep `k`. Every
/// pair of conflicting block-sweeps therefore runs in the one-thread
/// order: the iterate of the sweeps one after the other, bit for bit,
/// while a thread that finished its part of a sweep goes on with the next
/// instead of waiting for the others at a barrier.
///
/// A thread whose sweep made a value non-finite finishes that sweep and
/// stops; [`Self::stop_at`] records the earliest such sweep, every thread
/// finishes the sweeps up to it (whose blocks wait only on sweeps up to
/// it) and abandons any later one, also while waiting. A thread that
/// unwinds poisons the run: the others abandon at their next wait.
#[derive(Debug)]
pub(crate) struct RunProgress {
    done: [AtomicU32; MAX_BLOCKS],
    /// The first sweep of the run that made a value non-finite
    /// (`u32::MAX`: none so far).
    stop: AtomicU32,
    poisoned: AtomicBool,
}

impl RunProgress {
    /// No block has swept anything.
    pub(crate) fn new() -> Self {
        Self {
            done: std::array::from_fn(|_| AtomicU32::new(0)),
            stop: AtomicU32::new(u32::MAX),
            poisoned: AtomicBool::new(false),
        }
    }

    /// The first of `pending` that may start sweep `sweep` now, if any
    /// (acquire: the writes of the blocks it waits for are then visible).
    /// Reads the progress of the candidates' conflicting blocks only, so
    /// that a look costs what the candidates wait for, not the block count.
    pub(crate) fn first_ready(
        &self,
        pending: BlockSet,
        (earlier_conflicts, later_conflicts): (&[BlockSet], &[BlockSet]),
        sweep: u32,
    ) -> Option<usize> {
        let done = |q: usize| self.done[q].load(Ordering::Acquire);
        pending.iter().find(|&p| {
            // the earlier blocks finished this sweep, the later the one before
            earlier_conflicts[p].iter().all(|q| done(q) > sweep)
                && later_conflicts[p].iter().all(|q| done(q) >= sweep)
        })
    }

    /// Marks block `position` as having finished sweep `sweep` (release:
    /// its writes are published).
    pub(crate) fn finish(&self, position: usize, sweep: u32) {
        self.done[position].store(sweep + 1, Ordering::Release);
    }

    /// Sweep `sweep` made a value non-finite: the run ends after it.
    pub(crate) fn stop_at(&self, sweep: u32) {
        self.stop.fetch_min(sweep, Ordering::AcqRel);
    }

    /// The first sweep that made a value non-finite, if any.
    pub(crate) fn stopped_at(&self) -> Option<u32> {
        let stop = self.stop.load(Ordering::Acquire);
        (stop != u32::MAX).then_some(stop)
    }

    /// Whether a thread abandons sweep `sweep`: the run ends before it, or
    /// is poisoned.
    pub(crate) fn abandons(&self, sweep: u32) -> bool {
        self.poisoned.load(Ordering::Relaxed) || self.stop.load(Ordering::Acquire) < sweep
    }

    /// Spins (briefly, then yields) until a block of `pending` may start
    /// sweep `sweep`; `None` once the sweep is abandoned
    /// ([`Self::abandons`]).
    pub(crate) fn next_ready(
        &self,
        pending: BlockSet,
        conflicts: (&[BlockSet], &[BlockSet]),
        sweep: u32,
    ) -> Option<usize> {
        let mut spins = 0u32;
        loop {
            if let Some(p) = self.first_ready(pending, conflicts, sweep) {
                return Some(p);
            }
            if self.abandons(sweep) {
                return None;
            }
            spin_then_yield(&mut spins, 1 << 12);
        }
    }

    /// A guard that poisons the run if its thread unwinds while holding it.
    pub(crate) fn poison_on_unwind(&self) -> PoisonOnUnwind<'_> {
        PoisonOnUnwind(&self.poisoned)
    }
}

/// The threads of a run of parallel sweeps (`ProjectedGaussSeidel`'s
/// `sweep_contacts_parallel`): the next sweep's mode, which the calling
/// thread sets between sweeps, and a barrier the threads meet at, which
/// they spin on (briefly, then yield) rather than sleep, since the calling
/// thread's work between two sweeps is short. A thread that unwinds marks
/// the run poisoned, so that the others leave it instead of waiting for
/// it; the scope then resumes the panic.
pub(crate) struct SweepRun {
    mode: Mutex<Option<SweepMode>>,
    threads: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    poisoned: AtomicBool,
}

impl SweepRun {
    /// A run on `threads` threads whose first sweep is in `first` mode.
    pub(crate) fn new(threads: usize, first: SweepMode) -> Self {
        Self {
            mode: Mutex::new(Some(first)),
            threads,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            poisoned: AtomicBool::new(false),
        }
    }

    /// The mode of the sweep to do next; `None` once the run is over (or
    /// poisoned).
    pub(crate) fn mode(&self) -> Option<SweepMode> {
        if self.poisoned.load(Ordering::Relaxed) {
            return None;
        }
        *lock(&self.mode)
    }

    /// Sets the next sweep's mode (`None`: the run ends).
    pub(crate) fn set_mode(&self, mode: Option<SweepMode>) {
        *lock(&self.mode) = mode;
    }

    /// Waits until every thread of the run has arrived (what each wrote
    /// before is then visible to all); `false` when the run is poisoned.
    pub(crate) fn meet(&self) -> bool {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.store(generation + 1, Ordering::Release);
            return !self.poisoned.load(Ordering::Relaxed);
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == generation {
            if self.poisoned.load(Ordering::Relaxed) {
                return false;
            }
            spin_then_yield(&mut spins, 1 << 14);
        }
        !self.poisoned.load(Ordering::Relaxed)
    }

    /// A guard that poisons the run if its thread unwinds while holding it.
    pub(crate) fn poison_on_unwind(&self) -> PoisonOnUnwind<'_> {
        PoisonOnUnwind(&self.poisoned)
    }
}

/// One round of a wait: a spin hint for the first `limit` rounds (counted
/// in `spins`), then the thread's time slice given up.
fn spin_then_yield(spins: &mut u32, limit: u32) {
    if *spins < limit {
        std::hint::spin_loop();
        *spins += 1;
    } else {
        std::thread::yield_now();
    }
}

/// Holds the threads of a coupled run (the coloured sweeps, which wait for
/// each other's blocks) until every one has started: opened with `true`
/// they run; with `false` (the system refused a thread after the settings'
/// start check) they return at once, so that none waits for a thread that
/// never came, and the run is swept on one thread instead
/// ([`GateOpener`] opens it).
#[derive(Debug, Default)]
pub(crate) struct StartGate {
    open: Mutex<Option<bool>>,
    wake: std::sync::Condvar,
}

impl StartGate {
    /// Whether the run goes ahead, once the gate is opened.
    pub(crate) fn wait(&self) -> bool {
        let mut open = lock(&self.open);
        loop {
            if let Some(go) = *open {
                return go;
            }
            open = self
                .wake
                .wait(open)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Lets the waiting threads go (`go`) or return.
    pub(crate) fn open(&self, go: bool) {
        *lock(&self.open) = Some(go);
        self.wake.notify_all();
    }
}

/// Opens a [`StartGate`] when dropped: with `go` as set, `false` unless
/// every thread started (also when the spawning code unwinds, so that no
/// started thread waits forever for the gate).
pub(crate) struct GateOpener<'a> {
    pub(crate) gate: &'a StartGate,
    pub(crate) go: bool,
}

impl Drop for GateOpener<'_> {
    fn drop(&mut self) {
        self.gate.open(self.go);
    }
}

/// See [`SweepRun::poison_on_unwind`].
pub(crate) struct PoisonOnUnwind<'a>(&'a AtomicBool);

impl Drop for PoisonOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// The lock of `m`: a thread that panicked while holding it (it holds it
/// only to read or write a value) leaves the value as it was.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The first of `pending` (lowest position) whose earlier conflicting
/// blocks are all in `finished`.
#[inline]
pub(crate) fn first_ready(
    pending: BlockSet,
    earlier_conflicts: &[BlockSet],
    finished: BlockSet,
) -> Option<usize> {
    pending
        .iter()
        .find(|&p| earlier_conflicts[p].is_subset(&finished))
}

/// The largest correction and whether everything stayed finite, combined
/// across threads (max and and: the same whatever the split).
#[derive(Debug, Default)]
pub(crate) struct SweepOutcome {
    max_correction: AtomicU64,
    infinite: AtomicBool,
}

impl SweepOutcome {
    pub(crate) fn add(&self, correction: f64, finite: bool) {
        // corrections are ≥ 0 (or NaN, caught by `finite`): their bits
        // order as the values do
        self.max_correction
            .fetch_max(correction.max(0.0).to_bits(), Ordering::Relaxed);
        if !finite {
            self.infinite.store(true, Ordering::Relaxed);
        }
    }

    pub(crate) fn get(&self) -> (f64, bool) {
        (
            f64::from_bits(self.max_correction.load(Ordering::Relaxed)),
            !self.infinite.load(Ordering::Relaxed),
        )
    }

    /// Nothing added yet (for the next sweep of a run).
    pub(crate) fn reset(&self) {
        self.max_correction.store(0, Ordering::Relaxed);
        self.infinite.store(false, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests;

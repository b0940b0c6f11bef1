//! The work schedule of the coloured PGS sweep
//! ([`crate::ContactOrder::Coloured`]) and the speed-up it allows.
//!
//! The coloured sweep cuts a problem's contacts into blocks, colours the
//! blocks, gives each thread a range of consecutive blocks and lets a
//! block start once the earlier blocks it shares a moving body with have
//! finished (`pgs_parallel.rs`, module docs). [`SweepSchedule`] builds the
//! same blocks and dependencies for a problem and plays that schedule for
//! any number of threads with each block's work counted in contacts:
//! the bound on the speed-up is the total work over the time the schedule
//! takes (its makespan), what the threads would reach with no memory
//! contention, no cost of waiting and equal cost per contact. One sweep is
//! played with a barrier after it (a solve with an early stop); a run of
//! sweeps without barriers between them (a fixed number of sweeps) with
//! the run's dependencies between one sweep's blocks and the next's.
//!
//! What the bound leaves out: the paired lanes of a thread (two ready
//! blocks swept in lockstep, a gain per thread, not of the schedule), the
//! passes of a step other than the sweeps, and the memory bandwidth that
//! many threads share.

use crate::pgs_parallel::{BlockSet, Colouring};
use crate::problem::ContactProblem;

/// The blocks of a coloured sweep of one problem and their dependencies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepSchedule {
    /// Contacts per block, by position (colour after colour).
    work: Vec<usize>,
    /// Per position, the block's number in contact order.
    numbers: Vec<usize>,
    /// Per position, the earlier positions whose blocks share a moving
    /// body with it.
    earlier: Vec<Vec<usize>>,
    /// Per position, the later positions whose blocks do (the transpose).
    later: Vec<Vec<usize>>,
    colours: usize,
}

/// The speed-up a schedule allows on some number of threads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScheduleBound {
    /// Threads.
    pub threads: usize,
    /// Total work over the makespan of one sweep with a barrier after it.
    pub sweep: f64,
    /// Total work over the makespan of a run of sweeps without barriers
    /// ([`SweepSchedule::bound`]'s `sweeps`).
    pub run: f64,
}

impl SweepSchedule {
    /// The blocks and colours [`crate::ProjectedGaussSeidel`] forms for
    /// `problem` with `colour_blocks` blocks at most
    /// ([`crate::PgsSettings::colour_blocks`]; at most 256).
    pub fn new(problem: &ContactProblem, colour_blocks: usize) -> Self {
        let mut c = Colouring::default();
        c.build(problem, colour_blocks, 1);
        let positions = c.blocks.len();
        let list = |m: &[BlockSet]| (0..positions).map(|p| m[p].iter().collect()).collect();
        Self {
            work: c.blocks.iter().map(|&(s, e)| (e - s) as usize).collect(),
            numbers: c.block_numbers.iter().map(|&b| b as usize).collect(),
            earlier: list(&c.earlier_conflicts),
            later: list(&c.later_conflicts),
            colours: c.colour_starts.len().saturating_sub(1),
        }
    }

    /// The schedule the same rules give with `count` blocks (at least 1,
    /// at most one per contact), any number of them: the contacts in
    /// `count` ranges of consecutive contacts, coloured in order greedily
    /// and then balanced over the greedy's colours, each thread a range
    /// of consecutive blocks. For up to 256 blocks it is the sweep's own
    /// ([`Self::new`] with at least that many blocks allowed, on a
    /// problem of at least 512 contacts per block); beyond, it is the
    /// schedule a sweep with wider masks would follow.
    pub fn with_block_count(problem: &ContactProblem, count: usize) -> Self {
        let n = problem.contacts().len();
        let count = count.clamp(1, n.max(1));
        let bounds = |k: usize| (n * k / count, n * (k + 1) / count);
        let adjacent = adjacent_blocks(problem, count, bounds);
        let greedy = colour(&adjacent, None);
        let colours_of = |c: &[usize]| c.iter().map(|&k| k + 1).max().unwrap_or(0);
        let colour_of = if colours_of(&greedy) > 1 {
            colour(&adjacent, Some(colours_of(&greedy)))
        } else {
            greedy
        };
        let colours = colours_of(&colour_of);
        let mut numbers = Vec::with_capacity(count);
        for k in 0..colours {
            numbers.extend((0..count).filter(|&b| colour_of[b] == k));
        }
        let mut position = vec![0; count];
        for (p, &b) in numbers.iter().enumerate() {
            position[b] = p;
        }
        let mut earlier = vec![Vec::new(); count];
        let mut later = vec![Vec::new(); count];
        for (p, &b) in numbers.iter().enumerate() {
            let mut before: Vec<usize> = adjacent[b]
                .iter()
                .map(|&a| position[a])
                .filter(|&q| q < p)
                .collect();
            before.sort_unstable();
            for &q in &before {
                later[q].push(p);
            }
            earlier[p] = before;
        }
        Self {
            work: numbers.iter().map(|&b| bounds(b).1 - bounds(b).0).collect(),
            numbers,
            earlier,
            later,
            colours,
        }
    }

    /// Number of blocks.
    pub fn blocks(&self) -> usize {
        self.work.len()
    }

    /// Number of colours.
    pub fn colours(&self) -> usize {
        self.colours
    }

    /// Contacts per block, by position (colour after colour).
    pub fn block_contacts(&self) -> Vec<usize> {
        self.work.clone()
    }

    /// The bound on `threads` threads (at least 1): one sweep, and a run
    /// of `sweeps` sweeps (at least 1) without barriers between them.
    pub fn bound(&self, threads: usize, sweeps: usize) -> ScheduleBound {
        let threads = threads.max(1);
        let work: f64 = self.work.iter().map(|&w| w as f64).sum();
        let ratio = |sweeps: usize| {
            let makespan = self.makespan(threads, sweeps.max(1));
            if makespan > 0.0 {
                work * sweeps.max(1) as f64 / makespan
            } else {
                1.0
            }
        };
        ScheduleBound {
            threads,
            sweep: ratio(1),
            run: ratio(sweeps),
        }
    }

    /// The time `sweeps` sweeps take on `threads` threads: each thread
    /// takes, whenever it is free, the first of its blocks (sweep by
    /// sweep, in position order) whose dependencies have finished, as the
    /// parallel sweep does (thread `t` sweeps the `t`-th of `threads`
    /// ranges of block numbers; `BlockProgress`, `RunProgress`).
    fn makespan(&self, threads: usize, sweeps: usize) -> f64 {
        let blocks = self.work.len();
        // task k · blocks + p: block p in sweep k
        let deps = |task: usize| -> Vec<usize> {
            let (k, p) = (task / blocks, task % blocks);
            let mut out: Vec<usize> = self.earlier[p].iter().map(|&q| k * blocks + q).collect();
            if k > 0 {
                out.extend(self.later[p].iter().map(|&q| (k - 1) * blocks + q));
                out.push((k - 1) * blocks + p);
            }
            out
        };
        let tasks = blocks * sweeps;
        let deps: Vec<Vec<usize>> = (0..tasks).map(deps).collect();
        let owner = |task: usize| self.numbers[task % blocks] * threads / blocks;
        let mut pending: Vec<Vec<usize>> = vec![Vec::new(); threads];
        for task in 0..tasks {
            pending[owner(task)].push(task);
        }
        play(&deps, |t| self.work[t % blocks] as f64, pending)
    }
}

/// Per block of `count` (contacts `bounds(k)`), the other blocks that
/// share a moving body with it, ascending.
fn adjacent_blocks(
    problem: &ContactProblem,
    count: usize,
    bounds: impl Fn(usize) -> (usize, usize),
) -> Vec<Vec<usize>> {
    let moving: Vec<bool> = problem.inverse_mass().movable().collect();
    let records = problem.records();
    // per moving body, the blocks that name it (ascending, once each)
    let mut touching: Vec<Vec<usize>> = vec![Vec::new(); moving.len()];
    for k in 0..count {
        let (s, e) = bounds(k);
        for c in &records[s..e] {
            for b in c
                .bodies
                .map(|b| b as usize)
                .into_iter()
                .filter(|&b| moving[b])
            {
                if touching[b].last() != Some(&k) {
                    touching[b].push(k);
                }
            }
        }
    }
    let mut adjacent: Vec<Vec<usize>> = vec![Vec::new(); count];
    for blocks in &touching {
        for &a in blocks {
            adjacent[a].extend(blocks.iter().copied().filter(|&b| b != a));
        }
    }
    for a in &mut adjacent {
        a.sort_unstable();
        a.dedup();
    }
    adjacent
}

/// Colours blocks in order: each takes the lowest colour no earlier
/// adjacent block has (`balance` `None`), or, with `balance` the greedy's
/// colour count, the free colour below it that holds the fewest blocks so
/// far (the lowest free one beyond when none is free).
fn colour(adjacent: &[Vec<usize>], balance: Option<usize>) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::with_capacity(adjacent.len());
    let mut sizes: Vec<usize> = Vec::new();
    for (k, adj) in adjacent.iter().enumerate() {
        let mut taken: Vec<bool> = Vec::new();
        for &j in adj.iter().filter(|&&j| j < k) {
            if taken.len() <= out[j] {
                taken.resize(out[j] + 1, false);
            }
            taken[out[j]] = true;
        }
        let free = |c: usize| !taken.get(c).copied().unwrap_or(false);
        let lowest = (0..).find(|&c| free(c)).unwrap_or(0);
        let c = match balance {
            None => lowest,
            Some(greedy) => (0..greedy)
                .filter(|&c| free(c))
                .min_by_key(|&c| sizes.get(c).copied().unwrap_or(0))
                .unwrap_or(lowest),
        };
        if sizes.len() <= c {
            sizes.resize(c + 1, 0);
        }
        sizes[c] += 1;
        out.push(c);
    }
    out
}

/// Plays a list schedule: thread `t` takes the first task of `pending[t]`
/// whose `deps` have all finished by the time it is free (waiting for the
/// next finish when none has); returns the time the last task finishes
/// (infinite when some task's dependencies can never finish).
fn play(deps: &[Vec<usize>], cost: impl Fn(usize) -> f64, mut pending: Vec<Vec<usize>>) -> f64 {
    let threads = pending.len();
    let mut finish: Vec<Option<f64>> = vec![None; deps.len()];
    let mut free_at = vec![0.0f64; threads];
    // a waiting thread: the time it found nothing ready
    let mut waiting: Vec<Option<f64>> = vec![None; threads];
    let mut end = 0.0f64;
    let ready_at = |task: usize, finish: &[Option<f64>]| -> Option<f64> {
        deps[task]
            .iter()
            .try_fold(0.0f64, |m, &d| finish[d].map(|f| m.max(f)))
    };
    // the thread free first; at a tie, one that has not yet found
    // nothing ready at that time
    while let Some(t) = (0..threads)
        .filter(|&t| !pending[t].is_empty())
        .min_by(|&a, &b| {
            let failed_now = |u: usize| waiting[u] == Some(free_at[u]);
            free_at[a]
                .total_cmp(&free_at[b])
                .then(failed_now(a).cmp(&failed_now(b)))
        })
    {
        let now = free_at[t];
        let found = pending[t]
            .iter()
            .position(|&task| ready_at(task, &finish).is_some_and(|r| r <= now));
        match found {
            Some(i) => {
                let task = pending[t].remove(i);
                let done = now + cost(task);
                finish[task] = Some(done);
                free_at[t] = done;
                waiting[t] = None;
                end = end.max(done);
                // threads waiting since before this finish look again then
                for u in 0..threads {
                    if let Some(since) = waiting[u]
                        && free_at[u] > done
                    {
                        free_at[u] = done.max(since);
                    }
                }
            }
            None => {
                // the next finish after now, or the next time another
                // thread is free
                let next_finish = finish.iter().flatten().copied().filter(|&f| f > now);
                let next_free = (0..threads)
                    .filter(|&u| u != t && !pending[u].is_empty())
                    .map(|u| free_at[u])
                    .filter(|&f| f > now);
                let next = next_finish.chain(next_free).fold(f64::INFINITY, f64::min);
                let tied = (0..threads).any(|u| {
                    u != t && !pending[u].is_empty() && free_at[u] == now && waiting[u] != Some(now)
                });
                if next.is_finite() {
                    free_at[t] = next;
                } else if !tied {
                    // nothing can ever start: dependencies outside the
                    // tasks (not the coloured sweep's)
                    return f64::INFINITY;
                }
                // else another thread free now moves first
                waiting[t] = Some(now);
            }
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{PackingSpec, sphere_packing};

    /// Independent tasks on two threads, one each: both run at once.
    #[test]
    fn independent_tasks_run_side_by_side() {
        let deps = vec![Vec::new(), Vec::new()];
        assert_eq!(play(&deps, |_| 1.0, vec![vec![0], vec![1]]), 1.0);
    }

    /// A chain across two threads runs one task at a time, however the
    /// threads hold it.
    #[test]
    fn a_chain_runs_in_series() {
        let deps = vec![Vec::new(), vec![0], vec![1], vec![2]];
        let pending = vec![vec![0, 2], vec![1, 3]];
        assert_eq!(play(&deps, |t| (t + 1) as f64, pending), 10.0);
    }

    /// A thread skips a task that waits for another thread and takes a
    /// later one of its own that is ready, as the parallel sweep does.
    #[test]
    fn a_thread_takes_a_later_ready_task() {
        // thread 0: task 0 (long), thread 1: task 1 waits for 0, task 2 free
        let deps = vec![Vec::new(), vec![0], Vec::new()];
        let pending = vec![vec![0], vec![1, 2]];
        let cost = |t: usize| if t == 0 { 4.0 } else { 1.0 };
        // task 2 runs at 0-1 while thread 1 waits; task 1 at 4-5
        assert_eq!(play(&deps, cost, pending), 5.0);
    }

    /// With up to 256 blocks the schedule built by the same rules is the
    /// sweep's own: the same blocks in the same positions, colours and
    /// dependencies, so the same bounds.
    #[test]
    fn the_rules_rebuild_the_sweeps_own_schedule() {
        for (cells, blocks) in [
            ([14, 14, 8], 32),
            ([24, 24, 15], 32),
            ([24, 24, 15], 64),
            ([40, 40, 30], 256),
        ] {
            let problem = sphere_packing(&PackingSpec {
                cells,
                speed: 0.05,
                ..PackingSpec::default()
            })
            .unwrap();
            let own = SweepSchedule::new(&problem, blocks);
            assert!(blocks <= 64 || own.blocks() > 64, "{} blocks", own.blocks());
            let rebuilt = SweepSchedule::with_block_count(&problem, own.blocks());
            assert_eq!(own.numbers, rebuilt.numbers, "{cells:?}");
            assert_eq!(own.work, rebuilt.work);
            assert_eq!(own.earlier, rebuilt.earlier);
            assert_eq!(own.later, rebuilt.later);
            assert_eq!(own.colours, rebuilt.colours);
        }
    }

    /// One thread's bound is 1; more threads never take longer than the
    /// total work, and a bound never exceeds the thread count or the
    /// blocks: on packings of several sizes.
    #[test]
    fn bounds_lie_between_one_and_the_threads() {
        for cells in [[6, 6, 4], [14, 14, 8], [24, 24, 10]] {
            let problem = sphere_packing(&PackingSpec {
                cells,
                ..PackingSpec::default()
            })
            .unwrap();
            let s = SweepSchedule::new(&problem, 32);
            let one = s.bound(1, 10);
            assert!((one.sweep - 1.0).abs() < 1e-12 && (one.run - 1.0).abs() < 1e-12);
            for threads in [2, 3, 4, 8, 16, 64] {
                let b = s.bound(threads, 10);
                let most = threads.min(s.blocks()) as f64;
                for x in [b.sweep, b.run] {
                    assert!(
                        x >= 1.0 - 1e-12 && x <= most + 1e-12,
                        "{cells:?} {threads}: {b:?}"
                    );
                }
            }
        }
    }
}

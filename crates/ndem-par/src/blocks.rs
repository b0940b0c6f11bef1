//! Work split into consecutive blocks on scoped threads, for per-item
//! passes whose result must not depend on the thread count: each block's
//! result comes back in block order, so the caller combines them as a
//! serial loop would.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use thiserror::Error;

/// The system refused a thread of the count a setting asks for
/// ([`check_threads_start`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "`{field}` asks for {requested} threads at once, and the system refused one with {started} running ({reason}): ask for fewer, or raise the process's thread or memory limit"
)]
pub struct ThreadsRefused {
    /// Name of the field.
    pub field: &'static str,
    /// The threads asked for (0 resolved to the cores).
    pub requested: usize,
    /// The threads running (this one included) when one was refused.
    pub started: usize,
    /// What the system said.
    pub reason: String,
}

/// The most threads a `threads` setting may ask for; the settings'
/// `validate` refuse more with [`THREADS_ABOVE_MAX`]. Every parallel pass
/// of a step spawns its threads anew, and the coloured PGS sweeps wait for
/// all of them at each sweep: on the 2-core reference machine the
/// 3·10⁴-sphere packing's first 80 steps took 5.7 s on 2 threads, 41 s on
/// 64, 104 s on 256 and 354 s on 1024 (the same trajectory), and at
/// 100 000 the system refused a thread and the process aborted. Shared-memory
/// nodes have at most a few hundred hardware threads.
pub const MAX_THREADS: usize = 1024;

/// The reason a settings check gives for a thread count above
/// [`MAX_THREADS`].
pub const THREADS_ABOVE_MAX: &str = "must be at most 1024 (ndem_par::blocks::MAX_THREADS; 0 for every core): \
     each parallel pass spawns its threads, and the system refuses them beyond its limit";

/// A settings check of a thread count: `Err` with
/// [`THREADS_ABOVE_MAX`] above [`MAX_THREADS`].
pub fn count_allowed(threads: usize) -> Result<(), &'static str> {
    if threads <= MAX_THREADS {
        Ok(())
    } else {
        Err(THREADS_ABOVE_MAX)
    }
}

/// The thread count a `threads` setting asks for: the number itself, or
/// every core the system offers for 0 (the settings' "all cores"); never
/// more than [`MAX_THREADS`] (settings refuse more, callers of lower-level
/// passes that take a count get at most that many threads; every pass's
/// result is the same on any count).
pub fn resolve_threads(threads: usize) -> usize {
    match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .min(MAX_THREADS)
}

/// Whether the system gives the `threads` a setting asks for
/// ([`resolve_threads`]) at once: starts all but one beside this thread,
/// holds them until the last has started, then lets them end. A pass of a
/// step spawns up to that many scoped threads, and the standard library
/// panics when the system refuses one (`--threads 100000` aborted the
/// process; under `ulimit -v 400000` 300 threads did); this reports it as
/// an error naming `field` where the setting is made, as rayon's pool
/// build does. Each thread starts only where [`thread_headroom`] bytes of
/// address space can be had just before it, and the next waits until it
/// runs: a thread whose stack is mapped but whose signal stack the system
/// then refuses aborts the process inside its start (seen under `ulimit
/// -v`), so the check stops short of that edge. It costs a thread start
/// per thread (tens of µs each) the first time a count is asked for: a
/// count no larger than one this process was given before is not started
/// again (a fuzzing run builds a stepper per case).
pub fn check_threads_start(field: &'static str, threads: usize) -> Result<(), ThreadsRefused> {
    /// The largest count this process was given at once.
    static GIVEN: AtomicUsize = AtomicUsize::new(1);
    check_threads_start_once(field, threads, &GIVEN, std::thread::Builder::new)
}

/// The address space \[bytes\] a thread of [`check_threads_start`] needs
/// free just before it starts: its stack (2 MiB unless `RUST_MIN_STACK`
/// says more) and signal stack with 2 MiB to spare.
pub fn thread_headroom() -> usize {
    const MIB: usize = 1 << 20;
    let stack = std::env::var("RUST_MIN_STACK")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(2 * MIB);
    stack.max(2 * MIB).saturating_add(2 * MIB)
}

/// [`check_threads_start_with`] unless `given`, the largest count given
/// before, covers the request; a count given raises it.
fn check_threads_start_once(
    field: &'static str,
    threads: usize,
    given: &AtomicUsize,
    builder: impl Fn() -> std::thread::Builder,
) -> Result<(), ThreadsRefused> {
    let requested = resolve_threads(threads);
    if requested <= given.load(Ordering::Relaxed) {
        return Ok(());
    }
    check_threads_start_with(field, requested, thread_headroom(), builder)?;
    given.fetch_max(requested, Ordering::Relaxed);
    Ok(())
}

/// Starts `requested` threads at once (this one and `requested − 1` built
/// by `builder`), each after `headroom` bytes could be allocated and freed
/// and once the one before runs, without the record of counts given
/// before.
fn check_threads_start_with(
    field: &'static str,
    requested: usize,
    headroom: usize,
    builder: impl Fn() -> std::thread::Builder,
) -> Result<(), ThreadsRefused> {
    use std::sync::{Condvar, Mutex, PoisonError, mpsc};
    let release = (Mutex::new(false), Condvar::new());
    let release = &release;
    std::thread::scope(|scope| {
        let mut refused = None;
        for started in 1..requested {
            if let Err(e) = Vec::<u8>::new().try_reserve_exact(headroom) {
                let reason = format!("no {headroom} bytes to spare for a thread's stacks: {e}");
                refused = Some((started, reason));
                break;
            }
            // one channel per thread: a thread that ends before it runs
            // the closure drops the only sender, and the wait below ends
            let (running, runs) = mpsc::channel::<()>();
            let held = move || {
                let _ = running.send(());
                let (released, wake) = release;
                let mut go = released.lock().unwrap_or_else(PoisonError::into_inner);
                while !*go {
                    go = wake.wait(go).unwrap_or_else(PoisonError::into_inner);
                }
            };
            if let Err(e) = builder().spawn_scoped(scope, held) {
                refused = Some((started, e.to_string()));
                break;
            }
            // its signal stack is mapped once it runs
            if runs.recv().is_err() {
                refused = Some((started, "the thread ended before it ran".to_string()));
                break;
            }
        }
        *release.0.lock().unwrap_or_else(PoisonError::into_inner) = true;
        release.1.notify_all();
        match refused {
            None => Ok(()),
            Some((started, reason)) => Err(ThreadsRefused {
                field,
                requested,
                started,
                reason,
            }),
        }
    })
}

/// Runs `f` on every part, the first on this thread and the others on
/// scoped threads, and returns the results in part order. A panic in a
/// part is resumed on this thread. A part whose thread the system refuses
/// (its thread or memory limit reached after the settings' start check,
/// [`check_threads_start`]) runs on this thread after the first, so the
/// pass ends with the same results, later, where `std::thread::scope`'s
/// `spawn` would panic: the parts are independent (each writes its own
/// output), so which thread runs one does not change it.
pub fn map_parts<P: Send, R: Send>(
    parts: impl IntoIterator<Item = P>,
    f: impl Fn(P) -> R + Sync,
) -> Vec<R> {
    map_parts_with(parts, f, std::thread::Builder::new)
}

/// The passes of [`map_parts`] that started threads, and the threads they
/// started, since the process began. Each pass starts its threads afresh,
/// one after the other on the calling thread (25-30 µs each on the 2-core
/// reference host), so these say what a run pays in starts besides its
/// work (`benches/examples/thread_starts.rs`). The coloured PGS sweeps
/// start their threads once per solve besides, which these do not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThreadStarts {
    /// Passes that started at least one thread.
    pub passes: u64,
    /// Threads started.
    pub threads: u64,
}

static STARTED_PASSES: AtomicU64 = AtomicU64::new(0);
static STARTED_THREADS: AtomicU64 = AtomicU64::new(0);

/// The [`ThreadStarts`] of this process so far.
pub fn thread_starts() -> ThreadStarts {
    ThreadStarts {
        passes: STARTED_PASSES.load(Ordering::Relaxed),
        threads: STARTED_THREADS.load(Ordering::Relaxed),
    }
}

/// [`map_parts`] with each thread built by `builder`.
fn map_parts_with<P: Send, R: Send>(
    parts: impl IntoIterator<Item = P>,
    f: impl Fn(P) -> R + Sync,
    builder: impl Fn() -> std::thread::Builder,
) -> Vec<R> {
    let f = &f;
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else {
        return Vec::new();
    };
    // each other part waits in a slot its thread takes it from, so that a
    // part whose thread is refused is still here to run
    let slots: Vec<std::sync::Mutex<Option<P>>> =
        parts.map(|p| std::sync::Mutex::new(Some(p))).collect();
    let take = |slot: &std::sync::Mutex<Option<P>>| {
        slot.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    };
    std::thread::scope(|scope| {
        let spawned: Vec<_> = slots
            .iter()
            .map(|slot| {
                builder()
                    .spawn_scoped(scope, move || take(slot).map(f))
                    .ok()
            })
            .collect();
        let started = spawned.iter().filter(|h| h.is_some()).count() as u64;
        if started > 0 {
            STARTED_PASSES.fetch_add(1, Ordering::Relaxed);
            STARTED_THREADS.fetch_add(started, Ordering::Relaxed);
        }
        let mut results = Vec::with_capacity(slots.len() + 1);
        results.push(f(first));
        for (handle, slot) in spawned.into_iter().zip(&slots) {
            let result = match handle.map(|h| h.join()) {
                Some(Ok(r)) => r,
                Some(Err(panic)) => std::panic::resume_unwind(panic),
                // refused: its part is still in the slot
                None => None,
            };
            results.extend(result.or_else(|| take(slot).map(f)));
        }
        results
    })
}

/// The block length that splits `len` items into at most `threads`
/// consecutive blocks (at least 1).
pub fn block_len(len: usize, threads: usize) -> usize {
    len.div_ceil(threads.max(1)).max(1)
}

/// The number of parts a pass over `len` items takes on up to `threads`
/// threads when a part should hold at least `min_part` items (below that a
/// thread's start, a few tens of microseconds, costs more than its share).
pub fn parts_for(len: usize, threads: usize, min_part: usize) -> usize {
    threads.clamp(1, (len / min_part.max(1)).max(1))
}

/// The lowest index `i < len` that `first_in(range)` finds, each range of
/// `0..len` searched on its own thread: `first_in` returns the lowest
/// index of its range it accepts. The answer of a serial search on any
/// thread count (each part stops at its own first hit).
pub fn first_in_parts(
    len: usize,
    threads: usize,
    min_part: usize,
    first_in: impl Fn(std::ops::Range<usize>) -> Option<usize> + Sync,
) -> Option<usize> {
    let parts = parts_for(len, threads, min_part);
    if parts == 1 {
        return first_in(0..len);
    }
    let per = block_len(len, parts);
    let ranges = (0..len).step_by(per).map(|s| s..(s + per).min(len));
    map_parts(ranges, first_in).into_iter().flatten().next()
}

/// The index of the first item of `items` that `test` accepts, the items
/// searched in parts on up to `threads` threads ([`first_in_parts`]).
pub fn position_in_parts<T: Sync>(
    items: &[T],
    threads: usize,
    min_part: usize,
    test: impl Fn(&T) -> bool + Sync,
) -> Option<usize> {
    first_in_parts(items.len(), threads, min_part, |r| {
        let start = r.start;
        items[r].iter().position(&test).map(|i| start + i)
    })
}

/// Sets every item of `items` to `value`, in parts on up to `threads`
/// threads.
pub fn fill_in_parts<T: Clone + Send + Sync>(
    items: &mut [T],
    threads: usize,
    min_part: usize,
    value: T,
) {
    let parts = parts_for(items.len(), threads, min_part);
    if parts == 1 {
        items.fill(value);
        return;
    }
    let per = block_len(items.len(), parts);
    map_parts(items.chunks_mut(per), |part| part.fill(value.clone()));
}

/// Calls `f(first, block)` on `threads` consecutive blocks of `out`, each
/// a whole number of `per` items (`first` is the block's first item index
/// divided by `per`): the first block on this thread, the others on scoped
/// threads. For per-item work whose result does not depend on the split.
pub fn for_each_block<T: Send>(
    out: &mut [T],
    per: usize,
    threads: usize,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    let per = per.max(1);
    let block = block_len(out.len() / per, threads) * per;
    let blocks = out.chunks_mut(block).enumerate();
    map_parts(blocks, |(k, b)| f(k * block / per, b));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resolved_count_is_at_most_the_limit() {
        assert_eq!(resolve_threads(usize::MAX), MAX_THREADS);
        assert_eq!(resolve_threads(MAX_THREADS + 1), MAX_THREADS);
        assert_eq!(resolve_threads(3), 3);
        assert!((1..=MAX_THREADS).contains(&resolve_threads(0)));
    }

    #[test]
    fn a_refused_thread_is_an_error_naming_the_field() {
        // a stack no system maps: every spawn is refused
        let refusing = || std::thread::Builder::new().stack_size(1 << 62);
        match check_threads_start_with("threads", 4, 1 << 20, refusing) {
            Err(ThreadsRefused {
                field: "threads",
                requested: 4,
                started: 1,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        // refused after two: the third spawn fails
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let third_refused = || {
            let k = calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let b = std::thread::Builder::new();
            if k == 2 { b.stack_size(1 << 62) } else { b }
        };
        match check_threads_start_with("run.threads", 8, 1 << 20, third_refused) {
            Err(ThreadsRefused {
                field: "run.threads",
                requested: 8,
                started: 3,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        // one thread starts none; a count the system gives is fine
        assert!(check_threads_start_with("threads", 1, 1 << 20, refusing).is_ok());
        // no headroom for the first: refused before any spawn
        match check_threads_start_with("threads", 4, usize::MAX / 2, std::thread::Builder::new) {
            Err(ThreadsRefused {
                started: 1, reason, ..
            }) => assert!(reason.contains("to spare"), "{reason}"),
            other => panic!("{other:?}"),
        }
        assert!(check_threads_start("threads", 8).is_ok());
    }

    /// A pass in three parts counts as a pass that started two threads
    /// (at least: other tests of this binary run passes at the same time).
    #[test]
    fn a_pass_in_parts_counts_its_thread_starts() {
        let before = thread_starts();
        assert_eq!(map_parts(0..3, |k| k + 1), [1, 2, 3]);
        let after = thread_starts();
        assert!(after.passes > before.passes, "{before:?} {after:?}");
        assert!(after.threads >= before.threads + 2, "{before:?} {after:?}");
    }

    /// A part whose thread is refused runs on the calling thread, and the
    /// results are the serial ones in part order, whether every spawn is
    /// refused or only some.
    #[test]
    fn a_part_whose_thread_is_refused_runs_here() {
        let here = std::thread::current().id();
        let work = |k: usize| (k * k + 1, std::thread::current().id());
        let calls = AtomicUsize::new(0);
        let every_third_refused = || {
            let k = calls.fetch_add(1, Ordering::Relaxed);
            let b = std::thread::Builder::new();
            if k % 3 == 1 { b.stack_size(1 << 62) } else { b }
        };
        let refusing = || std::thread::Builder::new().stack_size(1 << 62);
        let serial: Vec<usize> = (0..10).map(|k| k * k + 1).collect();
        for (refused, got) in [
            (
                vec![],
                map_parts_with(0..10, work, std::thread::Builder::new),
            ),
            ((1..10).collect(), map_parts_with(0..10, work, refusing)),
            (
                vec![2, 5, 8],
                map_parts_with(0..10, work, every_third_refused),
            ),
        ] {
            let values: Vec<usize> = got.iter().map(|r| r.0).collect();
            assert_eq!(values, serial);
            for (k, (_, thread)) in got.iter().enumerate() {
                // part 0 and the refused parts here, the others elsewhere
                let on_this = k == 0 || refused.contains(&k);
                assert_eq!(*thread == here, on_this, "part {k}, refused {refused:?}");
            }
        }
    }

    #[test]
    fn a_count_given_once_is_not_started_again() {
        let refusing = || std::thread::Builder::new().stack_size(1 << 62);
        let given = AtomicUsize::new(1);
        assert!(check_threads_start_once("threads", 3, &given, std::thread::Builder::new).is_ok());
        assert_eq!(given.load(Ordering::Relaxed), 3);
        // covered: nothing is started, so the refusing builder is not asked
        assert!(check_threads_start_once("threads", 3, &given, refusing).is_ok());
        assert!(check_threads_start_once("threads", 2, &given, refusing).is_ok());
        // more than given: started, refused, and the record stays
        assert!(check_threads_start_once("threads", 4, &given, refusing).is_err());
        assert_eq!(given.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn the_reason_names_the_limit() {
        assert!(THREADS_ABOVE_MAX.starts_with(&format!("must be at most {MAX_THREADS} ")));
    }

    #[test]
    fn results_come_in_part_order() {
        let items: Vec<usize> = (0..1000).collect();
        for threads in 1..5 {
            let sums = map_parts(items.chunks(block_len(items.len(), threads)), |c| {
                c.iter().sum::<usize>()
            });
            assert_eq!(sums.len(), threads.min(items.len()));
            assert_eq!(sums.iter().sum::<usize>(), 999 * 1000 / 2);
            assert_eq!(sums[0], items[..block_len(1000, threads)].iter().sum());
        }
        assert!(map_parts(std::iter::empty::<usize>(), |x| x).is_empty());
    }

    #[test]
    fn a_search_in_parts_finds_the_serial_answer() {
        for len in [0usize, 1, 2, 7, 100, 1000] {
            for hits in [
                vec![],
                vec![0],
                vec![len / 2],
                vec![len / 3, len - len.min(1)],
            ] {
                let items: Vec<bool> = (0..len).map(|i| hits.contains(&i)).collect();
                let serial = items.iter().position(|&x| x);
                for threads in 1..5 {
                    for min_part in [1, 3, 64, 10_000] {
                        let found = position_in_parts(&items, threads, min_part, |&x| x);
                        assert_eq!(found, serial, "len {len} threads {threads} min {min_part}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_fill_in_parts_sets_every_item() {
        for len in [0usize, 1, 5, 999] {
            for threads in 1..5 {
                let mut items = vec![1u8; len];
                fill_in_parts(&mut items, threads, 2, 7);
                assert!(items.iter().all(|&x| x == 7));
                assert_eq!(
                    parts_for(len, threads, 2),
                    threads.clamp(1, (len / 2).max(1))
                );
            }
        }
    }
}

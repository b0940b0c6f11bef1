//! Work split into consecutive blocks on scoped threads, for per-item
//! passes whose result must not depend on the thread count: each block's
//! result comes back in block order, so the caller combines them as a
//! serial loop would.

/// The thread count a `threads` setting asks for: the number itself, or
/// every core the system offers for 0 (the settings' "all cores").
pub fn resolve_threads(threads: usize) -> usize {
    match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// Runs `f` on every part, the first on this thread and the others on
/// scoped threads, and returns the results in part order. A panic in a
/// part is resumed on this thread.
pub fn map_parts<P: Send, R: Send>(
    parts: impl IntoIterator<Item = P>,
    f: impl Fn(P) -> R + Sync,
) -> Vec<R> {
    let f = &f;
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else {
        return Vec::new();
    };
    std::thread::scope(|scope| {
        let spawned: Vec<_> = parts.map(|p| scope.spawn(move || f(p))).collect();
        let mut results = Vec::with_capacity(spawned.len() + 1);
        results.push(f(first));
        for handle in spawned {
            match handle.join() {
                Ok(r) => results.push(r),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        results
    })
}

/// The block length that splits `len` items into at most `threads`
/// consecutive blocks (at least 1).
pub fn block_len(len: usize, threads: usize) -> usize {
    len.div_ceil(threads.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

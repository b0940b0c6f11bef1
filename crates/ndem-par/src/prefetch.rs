//! A cache hint for the solver sweeps (`docs/performance.md`, "NDEM step").
//!
//! A PGS sweep over a problem far larger than the cache reads its contacts
//! in a stream, which the processor fetches ahead by itself, and the two
//! bodies of each contact at places it cannot guess. [`prefetch`] names
//! such a place a few contacts early, so that the body's data is in the
//! cache when its contact comes.
//!
//! Invariant: this module and the `ndem` command's allocator setting
//! (`ndem_cli::allocator`) hold the workspace's only `unsafe` code, one
//! block each (here the prefetch instruction; checked by
//! `xtask/tests/tidy.rs`).

/// Asks the processor to bring the cache lines holding `*value` into its
/// cache. A hint only: it reads nothing the program sees, so it changes no
/// result (the sweeps that use it are bit-identical without it); on
/// targets other than x86-64 it does nothing.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    let first = (value as *const T).cast::<u8>();
    // the last byte too: a 48-byte velocity straddles two 64-byte lines at
    // every other index. Asked for whether or not it is in the first line:
    // a test of that is a branch on the body's index the processor
    // mispredicts half the time, and a second hint for the same line
    // costs one instruction.
    let size = std::mem::size_of::<T>();
    prefetch_line(first);
    if size > 1 {
        prefetch_line(first.wrapping_add(size - 1));
    }
}

#[inline(always)]
#[allow(unsafe_code)]
fn prefetch_line(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` is a hint. It does not access memory in a way
    // the program can observe, cannot fault whatever the address, and has
    // no target feature beyond x86-64's baseline SSE; `address` lies in or
    // at the end of a live reference in any case.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(address.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

#[cfg(test)]
mod tests {
    use super::prefetch;

    #[test]
    fn prefetch_changes_nothing() {
        let values = [1.5f64, -2.0, 3.25, 0.0, 7.0, 11.0];
        let before = values;
        for v in &values {
            prefetch(v);
        }
        prefetch(&values);
        prefetch(&());
        assert_eq!(values, before);
    }
}

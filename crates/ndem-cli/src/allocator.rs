//! The `ndem` process's allocator setting (`docs/performance.md`,
//! "Memory").
//!
//! glibc's `malloc` maps a block of 128 KiB or more on its own pages, and
//! returns them when the block is freed, but only until the first such
//! block is freed: from then on it raises that threshold to the freed
//! block's size (up to 32 MiB), and larger vectors come from the heap,
//! where growing one copies it and the old copy's pages are kept. A run
//! grows its contact vectors while a bed falls, so at 10⁵ particles the
//! peak resident size held some 16 MB of such copies. [`fix_mmap_threshold`]
//! keeps the threshold at 128 KiB, which also stops its adjustment, as
//! `MALLOC_MMAP_THRESHOLD_=131072` in the environment does: a mapped block
//! grows in place (`mremap`) and is returned when freed.
//!
//! Invariant: this module and `ndem_par::prefetch` hold the workspace's
//! only `unsafe` code, one block each (checked by `xtask/tests/tidy.rs`).

/// The threshold \[bytes\], glibc's initial one.
pub const MMAP_THRESHOLD: usize = 128 * 1024;

/// What [`fix_mmap_threshold`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MmapThreshold {
    /// The threshold is fixed at [`MMAP_THRESHOLD`].
    Fixed,
    /// The environment sets `MALLOC_MMAP_THRESHOLD_`, which glibc has read:
    /// left as the user chose.
    FromEnvironment,
    /// Not glibc (or `mallopt` refused): the allocator's own policy.
    Unchanged,
}

/// Fixes glibc's mmap threshold at [`MMAP_THRESHOLD`] unless the
/// environment sets one. Call it first in `main`, before other threads
/// start; it changes no result, only where large blocks live.
pub fn fix_mmap_threshold() -> MmapThreshold {
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some() {
        return MmapThreshold::FromEnvironment;
    }
    if set_mmap_threshold(MMAP_THRESHOLD) {
        MmapThreshold::Fixed
    } else {
        MmapThreshold::Unchanged
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn set_mmap_threshold(bytes: usize) -> bool {
    let Ok(value) = libc::c_int::try_from(bytes) else {
        return false;
    };
    // SAFETY: `mallopt` takes two integers and touches only the
    // allocator's own settings, under its lock; it returns 1 on success.
    unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, value) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_mmap_threshold(_bytes: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::{MmapThreshold, fix_mmap_threshold};

    #[test]
    fn the_threshold_is_fixed_or_left_to_the_environment() {
        let expected = if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some() {
            MmapThreshold::FromEnvironment
        } else if cfg!(all(target_os = "linux", target_env = "gnu")) {
            MmapThreshold::Fixed
        } else {
            MmapThreshold::Unchanged
        };
        assert_eq!(fix_mmap_threshold(), expected);
    }
}

//! Sets of block positions (or colours) of a coloured sweep: 256 bits, as
//! many as a sweep may have blocks ([`super::MAX_BLOCKS`]), plain and
//! atomic.

use std::sync::atomic::{AtomicU64, Ordering};

/// Words of a [`BlockSet`].
const WORDS: usize = 4;

/// Members a [`BlockSet`] can hold.
pub(crate) const CAPACITY: usize = WORDS * 64;

/// A set of block positions `0..CAPACITY` (bit `p % 64` of word `p / 64`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BlockSet([u64; WORDS]);

impl BlockSet {
    /// No member.
    pub(crate) const EMPTY: Self = Self([0; WORDS]);

    /// The positions `0..n` (`n ≤ CAPACITY`).
    pub(crate) fn below(n: usize) -> Self {
        let mut s = Self::EMPTY;
        for (w, word) in s.0.iter_mut().enumerate() {
            let lo = w * 64;
            *word = match n.saturating_sub(lo) {
                0 => 0,
                k if k >= 64 => u64::MAX,
                k => (1u64 << k) - 1,
            };
        }
        s
    }

    /// Adds `p`.
    #[inline]
    pub(crate) fn insert(&mut self, p: usize) {
        self.0[p / 64] |= 1 << (p % 64);
    }

    /// Adds the members `64 * word + b` for the bits `b` of `bits`.
    #[inline]
    pub(crate) fn add_word(&mut self, word: usize, bits: u64) {
        self.0[word] |= bits;
    }

    /// Removes `p`.
    #[inline]
    pub(crate) fn remove(&mut self, p: usize) {
        self.0[p / 64] &= !(1 << (p % 64));
    }

    /// Whether `p` is a member.
    #[inline]
    pub(crate) fn contains(&self, p: usize) -> bool {
        self.0[p / 64] & (1 << (p % 64)) != 0
    }

    /// Whether there is no member.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// The lowest member.
    #[inline]
    pub(crate) fn first(&self) -> Option<usize> {
        self.0
            .iter()
            .enumerate()
            .find(|(_, w)| **w != 0)
            .map(|(k, w)| k * 64 + w.trailing_zeros() as usize)
    }

    /// The members of `self` not in `other`.
    #[inline]
    pub(crate) fn minus(mut self, other: Self) -> Self {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a &= !b;
        }
        self
    }

    /// Whether every member of `self` is in `other`.
    #[inline]
    pub(crate) fn is_subset(&self, other: &Self) -> bool {
        self.0.iter().zip(other.0).all(|(a, b)| a & !b == 0)
    }

    /// The members in increasing order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(k, &w)| {
            let mut bits = w;
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let b = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    k * 64 + b
                })
            })
        })
    }
}

impl FromIterator<usize> for BlockSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut s = Self::EMPTY;
        iter.into_iter().for_each(|p| s.insert(p));
        s
    }
}

/// A [`BlockSet`] shared by threads: members are added with release
/// ordering and read with acquire, so the writes made before a member was
/// added are visible to a thread that reads it.
#[derive(Debug, Default)]
pub(crate) struct AtomicBlockSet([AtomicU64; WORDS]);

impl AtomicBlockSet {
    /// The members (acquire).
    #[inline]
    pub(crate) fn load(&self) -> BlockSet {
        BlockSet(std::array::from_fn(|k| self.0[k].load(Ordering::Acquire)))
    }

    /// Adds `p` (release).
    #[inline]
    pub(crate) fn insert(&self, p: usize) {
        self.0[p / 64].fetch_or(1 << (p % 64), Ordering::Release);
    }

    /// Removes every member (relaxed: for a set no thread reads until a
    /// synchronisation after this).
    pub(crate) fn clear(&self) {
        self.0.iter().for_each(|w| w.store(0, Ordering::Relaxed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The set operations agree with a `BTreeSet` of the same members.
        #[test]
        fn the_set_agrees_with_a_sorted_set(
            a in proptest::collection::btree_set(0usize..CAPACITY, 0..40),
            b in proptest::collection::btree_set(0usize..CAPACITY, 0..40),
            n in 0usize..=CAPACITY,
        ) {
            let (sa, sb): (BlockSet, BlockSet) =
                (a.iter().copied().collect(), b.iter().copied().collect());
            prop_assert_eq!(sa.iter().collect::<Vec<_>>(), a.iter().copied().collect::<Vec<_>>());
            prop_assert_eq!(sa.first(), a.first().copied());
            prop_assert_eq!(sa.is_empty(), a.is_empty());
            prop_assert_eq!(
                sa.minus(sb).iter().collect::<Vec<_>>(),
                a.difference(&b).copied().collect::<Vec<_>>()
            );
            prop_assert_eq!(sa.is_subset(&sb), a.is_subset(&b));
            prop_assert_eq!(BlockSet::below(n).iter().collect::<Vec<_>>(), (0..n).collect::<Vec<_>>());
            let mut removed = sa;
            for &p in &b {
                removed.remove(p);
            }
            prop_assert_eq!(removed, sa.minus(sb));
            for p in 0..CAPACITY {
                prop_assert_eq!(sa.contains(p), a.contains(&p));
            }
            let shared = AtomicBlockSet::default();
            a.iter().for_each(|&p| shared.insert(p));
            prop_assert_eq!(shared.load(), sa);
            shared.clear();
            prop_assert!(shared.load().is_empty());
        }
    }
}

//! The contacts of a parallel collision pass, written by each thread into
//! its own share of the contact set's vector.
//!
//! A pass splits the particles into consecutive blocks, one per thread,
//! whose contacts follow each other in the set. Each block writes into a
//! share of the set's slots sized from its count in the last pass (plus a
//! sixteenth); a block that finds more continues into a spill vector of its
//! own. [`gather_blocks`] then moves the blocks' contacts together, in
//! block order, in place. Before, every thread but the first wrote into a
//! vector of its own kept from pass to pass and copied into the set after:
//! a second copy of about half the contacts (10 MB at 10⁵ particles on two
//! threads, `docs/performance.md`, "Memory").

use crate::contact::ContactPoint;
use ndem_math::ContactKey;
use ndem_par::capacity::push_with_headroom;

/// Where a collision pass writes its contacts, in key order.
pub(crate) trait ContactSink {
    /// Appends one contact.
    fn push(&mut self, contact: ContactPoint);
    /// Appends the contacts of `rest`.
    fn extend_from_slice(&mut self, rest: &[ContactPoint]);
}

impl ContactSink for Vec<ContactPoint> {
    #[inline]
    fn push(&mut self, contact: ContactPoint) {
        push_with_headroom(self, contact);
    }

    fn extend_from_slice(&mut self, rest: &[ContactPoint]) {
        ndem_par::capacity::reserve_for(self, self.len() + rest.len());
        Vec::extend_from_slice(self, rest);
    }
}

/// One block's share of the set's slots, and the vector its contacts go
/// to once the share is full.
///
/// The writer counts in a field of its own and publishes the count when it
/// is dropped: the blocks' counts lie side by side in one cache line
/// ([`BlockSlots`]), and a count written there at every contact made the
/// two threads of a pass take that line from each other at every contact
/// (each block's walk 1.6× slower than alone; `docs/performance.md`,
/// "Collision detection").
pub(crate) struct SlotWriter<'a> {
    slots: &'a mut [ContactPoint],
    /// How many contacts went into the slots so far.
    count: usize,
    /// Where the count goes when the writer is done.
    written: &'a mut usize,
    spill: &'a mut Vec<ContactPoint>,
}

impl<'a> SlotWriter<'a> {
    /// A writer into `slots`, then `spill` (emptied first), that leaves in
    /// `written` the number of contacts that went into the slots when it is
    /// dropped.
    pub(crate) fn new(
        slots: &'a mut [ContactPoint],
        written: &'a mut usize,
        spill: &'a mut Vec<ContactPoint>,
    ) -> Self {
        *written = 0;
        spill.clear();
        Self {
            slots,
            count: 0,
            written,
            spill,
        }
    }
}

impl Drop for SlotWriter<'_> {
    fn drop(&mut self) {
        *self.written = self.count;
    }
}

impl ContactSink for SlotWriter<'_> {
    #[inline]
    fn push(&mut self, contact: ContactPoint) {
        match self.slots.get_mut(self.count) {
            Some(slot) => {
                *slot = contact;
                self.count += 1;
            }
            None => self.spill.push(contact),
        }
    }

    fn extend_from_slice(&mut self, rest: &[ContactPoint]) {
        for &c in rest {
            self.push(c);
        }
    }
}

/// A parallel pass's bookkeeping, kept from pass to pass: each block's
/// count, and the shares, counts and spills of the pass under way. A
/// spill is released after its pass (it is used only while the contacts
/// grow by more than a sixteenth per pass).
#[derive(Debug, Clone, Default)]
pub(crate) struct BlockSlots {
    /// Each block's count in the last parallel pass.
    counts: Vec<usize>,
    shares: Vec<usize>,
    starts: Vec<usize>,
    written: Vec<usize>,
    spills: Vec<Vec<ContactPoint>>,
}

impl BlockSlots {
    /// Sizes the shares of `blocks` blocks and makes `set` hold their
    /// slots (its contacts of the last pass stay where no slot is added).
    pub(crate) fn prepare(&mut self, set: &mut Vec<ContactPoint>, blocks: usize) {
        shares(&self.counts, blocks, set.len(), &mut self.shares);
        self.starts.clear();
        let mut at = 0;
        for &share in &self.shares {
            self.starts.push(at);
            at += share;
        }
        ndem_par::capacity::reserve_for(set, at);
        if set.len() < at {
            set.resize(at, PLACEHOLDER);
        }
        self.written.clear();
        self.written.resize(blocks, 0);
        self.spills.resize_with(blocks, Vec::new);
    }

    /// Each block's writer into its share of `set`'s slots, in block order.
    pub(crate) fn writers<'a>(
        &'a mut self,
        set: &'a mut [ContactPoint],
    ) -> impl Iterator<Item = SlotWriter<'a>> {
        let mut rest = set;
        self.shares
            .iter()
            .zip(self.written.iter_mut().zip(self.spills.iter_mut()))
            .map(move |(&share, (written, spill))| {
                let (slots, later) = std::mem::take(&mut rest).split_at_mut(share);
                rest = later;
                SlotWriter::new(slots, written, spill)
            })
    }

    /// [`gather_blocks`] after the blocks wrote, and the spills released.
    pub(crate) fn gather(&mut self, set: &mut Vec<ContactPoint>) {
        gather_blocks(
            set,
            &self.starts,
            &self.written,
            &self.spills,
            &mut self.counts,
        );
        for spill in &mut self.spills {
            if spill.capacity() > 0 {
                *spill = Vec::new();
            }
        }
    }
}

/// What fills a slot no block has written yet.
pub(crate) const PLACEHOLDER: ContactPoint = ContactPoint {
    key: ContactKey::new(0, 0, 0),
    point: ndem_math::Vec3::new(0.0, 0.0, 0.0),
    normal: ndem_math::Vec3::new(0.0, 0.0, 0.0),
    gap: 0.0,
};

/// The share of each of `blocks` blocks, in slots, from the blocks' counts
/// in the last pass (`last`, when it had as many blocks) or an even split
/// of `total` slots: a count and a sixteenth more, and at least 16.
pub(crate) fn shares(last: &[usize], blocks: usize, total: usize, out: &mut Vec<usize>) {
    out.clear();
    if last.len() == blocks {
        out.extend(last.iter().map(|&n| n + n / 16 + 16));
    } else {
        out.extend(std::iter::repeat_n(
            total.div_ceil(blocks.max(1)) + 16,
            blocks,
        ));
    }
}

/// Moves the blocks' contacts together at the front of `set`, in block
/// order, and truncates it to them: block `k` wrote `written[k]` contacts
/// into the slots from `starts[k]` on, then `spills[k]`. Returns each
/// block's count in `counts`.
///
/// Each block's contacts go to the end of the earlier blocks'. The blocks
/// that move right are moved first, the last first, then those that move
/// left or stay, the first first: since the blocks' sources and their
/// destinations are each in block order and do not overlap, no move then
/// writes over contacts that are still to be moved.
pub(crate) fn gather_blocks(
    set: &mut Vec<ContactPoint>,
    starts: &[usize],
    written: &[usize],
    spills: &[Vec<ContactPoint>],
    counts: &mut Vec<usize>,
) {
    counts.clear();
    counts.extend(written.iter().zip(spills).map(|(w, s)| w + s.len()));
    let total: usize = counts.iter().sum();
    if set.len() < total {
        set.resize(total, PLACEHOLDER);
    }
    let destination = |k: usize| counts[..k].iter().sum::<usize>();
    let place = |set: &mut Vec<ContactPoint>, k: usize| {
        let (from, n, to) = (starts[k], written[k], destination(k));
        set.copy_within(from..from + n, to);
        set[to + n..to + counts[k]].copy_from_slice(&spills[k]);
    };
    let blocks = starts.len();
    for k in (0..blocks).rev().filter(|&k| destination(k) > starts[k]) {
        place(set, k);
    }
    for k in (0..blocks).filter(|&k| destination(k) <= starts[k]) {
        place(set, k);
    }
    set.truncate(total);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn point(tag: u32) -> ContactPoint {
        ContactPoint {
            key: ContactKey::new(tag, tag + 1, 0),
            gap: f64::from(tag),
            ..PLACEHOLDER
        }
    }

    proptest! {
        /// Whatever the shares, the counts written into them and the
        /// spills, the set ends as the blocks' contacts in block order.
        #[test]
        fn gathered_blocks_are_the_blocks_in_order(
            blocks in prop::collection::vec((0usize..40, 0usize..40, 0usize..30, 0usize..20), 1..6),
            tail in 0usize..20,
        ) {
            let mut set = Vec::new();
            let (mut starts, mut written, mut spills, mut expected) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let mut tag = 1000;
            for &(gap_before, share, wrote, spilled) in &blocks {
                // a share, written from its start, with stale slots after
                set.extend((0..gap_before).map(|_| point(0)));
                starts.push(set.len());
                let w = wrote.min(share);
                let mine: Vec<_> = (0..w + spilled).map(|i| point(tag + i as u32)).collect();
                tag += 100;
                set.extend_from_slice(&mine[..w]);
                set.extend((w..share).map(|_| point(1)));
                written.push(w);
                spills.push(mine[w..].to_vec());
                expected.extend(mine);
            }
            set.extend((0..tail).map(|_| point(2)));
            let mut counts = Vec::new();
            gather_blocks(&mut set, &starts, &written, &spills, &mut counts);
            prop_assert_eq!(&set, &expected);
            let sizes: Vec<_> = written.iter().zip(&spills).map(|(w, s)| w + s.len()).collect();
            prop_assert_eq!(counts, sizes);
        }
    }

    #[test]
    fn a_full_share_spills_and_the_rest_stays_in_order() {
        let mut slots = vec![PLACEHOLDER; 2];
        let mut spill = vec![point(9)];
        let mut written = 7;
        let mut w = SlotWriter::new(&mut slots, &mut written, &mut spill);
        for t in 1..=4 {
            w.push(point(t));
        }
        drop(w);
        assert_eq!(written, 2);
        assert_eq!(slots, [point(1), point(2)]);
        assert_eq!(spill, [point(3), point(4)]);
    }

    #[test]
    fn shares_follow_the_last_counts() {
        let mut out = Vec::new();
        shares(&[160, 0], 2, 0, &mut out);
        assert_eq!(out, [186, 16]);
        shares(&[160, 0], 3, 100, &mut out);
        assert_eq!(out, [50, 50, 50]);
    }
}

//! What a sweep reads ([`SweepInputs`]) and how it visits one contact's rows.

use super::*;

impl SweepInputs<'_> {
    /// One sweep over the contacts in `order`: the largest correction and
    /// whether everything stayed finite.
    pub(super) fn run(
        &self,
        order: impl Iterator<Item = usize> + Clone,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> (f64, bool) {
        // monomorphised for problems without a tangential `b` whose
        // contacts share their coefficients (no lookup per contact)
        let p = self.problem;
        match p.shared_side() {
            Some(side) => self.run_with(order, lambda, velocity, |_| side),
            None => self.run_with(order, lambda, velocity, |ci| p.side(ci)),
        }
    }

    /// The sweep's data with `side` giving a contact's `b` of rows 1-5 and
    /// its coefficients ([`ContactSide`]).
    pub(super) fn data<T>(&self, side: T) -> paired::SweepData<'_, T> {
        paired::SweepData {
            inputs: *self,
            side,
        }
    }

    /// Sweeps the colouring's blocks two at a time ([`paired`]): the
    /// colour order's iterate.
    pub(super) fn run_blocks(
        &self,
        colouring: &Colouring,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> (f64, bool) {
        let mut store = paired::Slices { lambda, velocity };
        let mut source = paired::SerialBlocks {
            earlier_conflicts: &colouring.earlier_conflicts,
            finished: crate::pgs_parallel::BlockSet::EMPTY,
        };
        let (blocks, all) = (&colouring.blocks, colouring.owned_blocks(0, 1));
        self.sweep_blocks(blocks, all, &mut source, &mut store)
    }

    /// The blocks of `pending` (positions in `blocks`) as `source` lets
    /// them start ([`paired::SweepData::sweep_blocks`]), monomorphised for
    /// problems whose contacts share their coefficients.
    pub(super) fn sweep_blocks(
        &self,
        blocks: &[(u32, u32)],
        pending: crate::pgs_parallel::BlockSet,
        source: &mut impl paired::BlockSource,
        store: &mut impl paired::IterateStore,
    ) -> (f64, bool) {
        let p = self.problem;
        match p.shared_side() {
            Some(side) => self
                .data(|_| side)
                .sweep_blocks(blocks, pending, source, store),
            None => self
                .data(|ci| p.side(ci))
                .sweep_blocks(blocks, pending, source, store),
        }
    }

    /// Sweeps the contacts in `order`, two at a time where the order allows
    /// ([`paired::SweepData::sweep_in_pairs`]: the iterate of the visits one
    /// after the other, bit for bit), asking for the bodies of the contact
    /// [`crate::PREFETCH_AHEAD`] places on as it goes.
    #[inline(always)]
    pub(super) fn run_with<'t>(
        &self,
        order: impl Iterator<Item = usize> + Clone,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
        side: impl Fn(usize) -> ContactSide<'t>,
    ) -> (f64, bool) {
        let mut store = paired::Slices { lambda, velocity };
        let ahead = order.clone().skip(crate::PREFETCH_AHEAD);
        self.data(side)
            .sweep_in_pairs(order, ahead, &mut store, self.mode)
    }

    /// The contacts of `order` visited one after the other: the sequential
    /// sweep the paired ones are checked against.
    #[cfg(test)]
    pub(super) fn run_one_by_one(
        &self,
        order: impl Iterator<Item = usize>,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> (f64, bool) {
        let p = self.problem;
        let data = self.data(|ci| p.side(ci));
        let mut store = paired::Slices { lambda, velocity };
        let (mut max_corr, mut finite, mut mode) = (0.0f64, true, self.mode);
        for ci in order {
            let (corr, ok) = data.visit_one_with(ci, &mut store, mode);
            max_corr = max_corr.max(corr);
            finite &= ok;
            if mode.may_stop_tracking(max_corr) {
                mode = mode.untracked();
            }
        }
        (max_corr, finite)
    }
}

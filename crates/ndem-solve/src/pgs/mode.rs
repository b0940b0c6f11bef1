//! What one Gauss-Seidel sweep forms besides its updates: the passes per
//! contact and the largest correction, exactly or only as far as the
//! tolerance an early stop compares it with.

/// How a sweep treats each contact: `passes` row-wise passes (1: row-wise
/// PGS; [`BLOCK_INNER_SWEEPS`]: the blocked variant's exact local solve),
/// and whether the largest correction `D_jj |Δλ_j|` is formed (a division
/// per row; always when `passes > 1`, whose inner loop stops on it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SweepMode {
    pub(crate) passes: usize,
    pub(crate) track: bool,
    /// With `track`, the largest correction is exact when it is at most
    /// this; above it the sweep may stop forming it once the corrections
    /// formed so far exceed it, and returns their largest, a lower bound
    /// that is also above it ([`SweepMode::exact_up_to`]). `f64::INFINITY`:
    /// always exact.
    pub(crate) exact_up_to: f64,
}

impl SweepMode {
    /// A sweep whose largest correction, when `track`, is always exact.
    pub(crate) fn exact(passes: usize, track: bool) -> Self {
        Self {
            passes,
            track,
            exact_up_to: f64::INFINITY,
        }
    }

    /// A sweep that forms the largest correction exactly while it is at
    /// most `limit`: an early stop compares it with its tolerance only
    /// (the check is due at or below it, a stall lies further below), so
    /// once some contact's correction is above it the rest of the sweep
    /// skips the six divisions per contact (`docs/performance.md`,
    /// "NDEM step"). A blocked sweep's figure stays exact: its contacts
    /// form theirs for their inner loop ([`Self::untracked`]).
    pub(crate) fn exact_up_to(passes: usize, limit: f64) -> Self {
        Self {
            passes,
            track: true,
            exact_up_to: limit,
        }
    }

    /// The same sweep without the largest correction (for the rest of a
    /// sweep whose corrections went above `exact_up_to`). A blocked sweep
    /// (`passes > 1`) keeps forming it: its inner loop stops on it.
    pub(crate) fn untracked(self) -> Self {
        Self {
            track: false,
            exact_up_to: f64::INFINITY,
            ..self
        }
    }

    /// Whether the corrections formed so far, whose largest is `max_corr`,
    /// let the rest of the sweep go without forming them.
    #[inline(always)]
    pub(crate) fn may_stop_tracking(&self, max_corr: f64) -> bool {
        self.track && max_corr > self.exact_up_to
    }
}

//! How far each particle's ghosts reach, and which rank owns a contact
//! (the reasoning is in the module docs of `layout`, beside the layout
//! checks that use them).

/// How far each particle's ghosts reach (`docs/distributed.md`,
/// "Ghost reach").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GhostReach {
    /// One budget for every particle, `max(s, 2 σ_max) / 2` (`s` the skin,
    /// `σ_max` the largest sweep of any particle at the rebuild); the
    /// layout is rebuilt once `2 d_max + 2 σ_max ≥ s`. Every rank holds
    /// both bodies of every contact of its own bodies, which the smooth
    /// DEM needs (it sums a body's forces on its owner).
    #[default]
    Uniform,
    /// Each particle's own budget `b_k = s/2 + 8 σ_k` (`σ_k` its sweep at
    /// the rebuild); the layout is rebuilt once some particle has
    /// `d_k + σ_k ≥ b_k`. The rank that owns a contact (that of its
    /// particle with the smaller budget, the lower index on a tie) holds
    /// both bodies, which is what the subdomain NBGS needs. A fast
    /// particle widens its own reach, not every particle's: a stream
    /// falling through a cut no longer widens the ghost layer of a whole
    /// heap, and a particle at constant speed keeps its budget for about
    /// seven steps.
    PerBody,
}

/// Sweeps in a particle's budget beyond half the skin
/// ([`GhostReach::PerBody`]): 4 and 8 gave the same step time on the
/// 2·10⁴ pile's stream (`docs/distributed.md`, "Ghost reach"), 8 two
/// thirds as many layout checks.
pub(super) const SWEEPS_AHEAD: f64 = 8.0;

/// The local body whose owner owns a contact between local bodies `a` and
/// `b`: of two particles (`free(i)`), the one with the smaller reach budget
/// (`budget`, whose owner holds both bodies: `crate::GhostReach`), the
/// lower on a tie or without budgets (local order is global order); the
/// particle of a contact with one; `None` when neither is one (rank 0
/// owns the contact).
pub(crate) fn deciding_body(
    free: impl Fn(usize) -> bool,
    budget: &[f64],
    a: usize,
    b: usize,
) -> Option<usize> {
    let (lo, hi) = (a.min(b), a.max(b));
    match (free(lo), free(hi)) {
        (true, true) if !budget.is_empty() && budget[hi] < budget[lo] => Some(hi),
        (true, _) => Some(lo),
        (false, true) => Some(hi),
        (false, false) => None,
    }
}

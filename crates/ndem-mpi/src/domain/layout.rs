//! When the layout must change, and how far each particle's ghosts reach.
//!
//! **Reach.** A particle `k` owned by one rank is a ghost of every other
//! rank whose box lies within `2 R_max + margin + 2 b_k` of it, where `b_k`
//! is its reach budget, fixed at the rebuild. Until the next rebuild `k`
//! may move `d_k` and sweep `σ_k` (speculative contacts) only while
//! `d_k + σ_k < b_k`. A contact detected between `i` (rank A) and `j`
//! (rank B) then has `dist(x_j(0), box_A) ≤ |x_i(0) − x_j(0)| ≤ 2 R_max +
//! margin + b_i + b_j`, so the body with the larger budget is a ghost on
//! the other's rank: the rank of the body with the smaller budget holds
//! both ([`GhostReach::PerBody`]). With one budget for every body
//! ([`GhostReach::Uniform`]) each of the two ranks holds both.
//!
//! **Keeping a layout.** When the skin test ([`Domain::needs_rebuild`])
//! fires but no particle would change its owner and every rank's ghosts
//! would be the same bodies, the rebuild's migration and new local world
//! are skipped ([`Domain::keep_layout`]).

use super::reach::{GhostReach, SWEEPS_AHEAD, deciding_body};
use super::{Domain, Role};
use crate::comm::Communicator;
use ndem_step::Motion;

impl<C: Communicator> Domain<C> {
    /// Whether some owned particle, anywhere, has moved so far since the
    /// last rebuild that, with this step's sweeps `sweep` (per local body;
    /// only the owned particles' entries are read), a contact with a body
    /// outside the ghost layer could form ([`GhostReach`]). Collective.
    pub fn needs_rebuild(&mut self, sweep: &[f64]) -> bool {
        let (mut moved, mut fastest, mut spent) = (0.0f64, 0.0f64, false);
        for (i, r) in self.role.iter().enumerate() {
            if *r == Role::Owned && !self.machine[i] {
                let d = (self.world.positions()[i] - self.reference[i]).norm();
                let s = sweep.get(i).copied().unwrap_or(0.0);
                moved = moved.max(d);
                fastest = fastest.max(s);
                spent |= d + s >= self.budget[i];
            }
        }
        let global = self
            .comm
            .max(&[moved, 2.0 * fastest, if spent { 1.0 } else { 0.0 }]);
        self.reach = global[1];
        let fired = self.stale
            || match self.settings.ghost_reach {
                GhostReach::Uniform => 2.0 * global[0] + global[1] >= self.skin,
                GhostReach::PerBody => global[2] > 0.0,
            };
        if fired {
            // the budgets of the layout that follows
            self.sweep.clear();
            self.sweep.extend_from_slice(sweep);
        }
        fired
    }

    /// Whether the layout a rebuild would make now is the one in place, on
    /// every rank: no rebalance due, no inserted body pending a rebuild, no
    /// particle outside its owner's box, every owned body held as a ghost
    /// by the same ranks as now, and (per-body reach) every particle's
    /// sweep within the budget it has. When it is, the layout is kept as a
    /// rebuild with the budgets in place would leave it (the reference
    /// positions of the skin test reset to the current ones, the layout
    /// check counted towards [`super::DomainSettings::rebalance_every`])
    /// and `true` is returned; the caller then exchanges the ghosts'
    /// states as on any step ([`Domain::update_ghosts`]). Otherwise
    /// nothing changes and the caller rebuilds ([`Domain::rebuild`]).
    /// Collective.
    pub fn keep_layout(&mut self) -> bool {
        // every rank counts the same layout checks and inserts the same
        // bodies: `due` and `stale` agree without an exchange
        if self.rebalance_due() || self.stale {
            return false;
        }
        let changed = if self.layout_holds() { 0.0 } else { 1.0 };
        if self.comm.max(&[changed])[0] > 0.0 {
            return false;
        }
        if self.settings.ghost_reach == GhostReach::Uniform {
            let budget = self.budget_of(0.0);
            self.budget.iter_mut().for_each(|b| *b = budget);
        }
        self.reference.clear();
        self.reference.extend_from_slice(self.world.positions());
        self.relayouts += 1;
        self.kept += 1;
        true
    }

    /// Layouts kept by [`Self::keep_layout`] so far.
    pub fn layouts_kept(&self) -> u64 {
        self.kept
    }

    /// The budget a rebuild gives owned particle `i` ([`GhostReach`]),
    /// from its sweep at the skin test that fired.
    pub(super) fn rebuild_budget(&self, i: usize) -> f64 {
        self.budget_of(self.sweep.get(i).copied().unwrap_or(0.0))
    }

    /// The budget of a particle with sweep `sweep` \[m\] ([`GhostReach`]);
    /// for uniform reach, the one every particle has.
    pub(super) fn budget_of(&self, sweep: f64) -> f64 {
        match self.settings.ghost_reach {
            GhostReach::Uniform => 0.5 * self.skin.max(self.reach),
            GhostReach::PerBody => 0.5 * self.skin + SWEEPS_AHEAD * sweep,
        }
    }

    /// How far from a box a particle with budget `budget` is a ghost of
    /// its rank: `2 R_max + margin + 2 b`.
    pub(super) fn width_of(&self, budget: f64) -> f64 {
        2.0 * self.largest_radius + self.settings.margin + 2.0 * budget
    }

    /// The rank that owns a contact between local bodies `a` and `b`: the
    /// rank of the particle with the smaller budget under per-body reach
    /// (the lower on a tie), of the lower particle under uniform reach,
    /// rank 0 for a contact without a particle.
    pub fn contact_owner(&self, a: usize, b: usize) -> usize {
        let free = |i: usize| self.world.motions()[i] == Motion::Dynamic && !self.machine[i];
        match deciding_body(free, self.ownership_budgets(), a, b) {
            Some(k) => match self.role[k] {
                Role::Ghost(s) => s,
                Role::Owned | Role::Replicated => self.comm.rank(),
            },
            None => 0,
        }
    }

    /// The budgets the contact ownership reads ([`GhostReach::PerBody`]),
    /// per local body; empty for uniform reach (the lower index decides).
    pub fn ownership_budgets(&self) -> &[f64] {
        match self.settings.ghost_reach {
            GhostReach::Uniform => &[],
            GhostReach::PerBody => &self.budget,
        }
    }

    /// Whether this rank's particles all lie in its box, their sweeps
    /// within their budgets (per-body reach), and its owned bodies would be
    /// sent to the same ranks, in the same order, as the send lists in
    /// place.
    fn layout_holds(&self) -> bool {
        let rank = self.comm.rank();
        let positions = self.world.positions();
        let mut next = vec![0usize; self.send.len()];
        for (i, role) in self.role.iter().enumerate() {
            if *role != Role::Owned {
                continue;
            }
            let p = &positions[i];
            let particle = !self.machine[i];
            if particle && self.decomposition.owner(p) != rank {
                return false;
            }
            let budget = match self.settings.ghost_reach {
                GhostReach::Uniform => self.rebuild_budget(i),
                GhostReach::PerBody => {
                    let sweep = self.sweep.get(i).copied().unwrap_or(0.0);
                    if particle && sweep >= self.budget[i] {
                        return false;
                    }
                    self.budget[i]
                }
            };
            for s in self.holders_of(self.gid[i], p, self.width_of(budget)) {
                if self.send[s].get(next[s]) != Some(&(i as u32)) {
                    return false;
                }
                next[s] += 1;
            }
        }
        next.iter()
            .zip(&self.send)
            .all(|(n, list)| *n == list.len())
    }
}

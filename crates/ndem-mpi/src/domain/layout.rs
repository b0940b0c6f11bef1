//! Keeping a layout that a rebuild would make again: when the skin test
//! ([`Domain::needs_rebuild`]) fires but no body would change its owner
//! and every rank's ghosts would be the same bodies, the rebuild's
//! migration and new local world are skipped. A falling stream trips the
//! skin test at every step while the layout stays what it was for most of
//! them.

use super::{Domain, Role};
use crate::comm::Communicator;

impl<C: Communicator> Domain<C> {
    /// Whether the layout a rebuild would make now is the one in place, on
    /// every rank: no rebalance due, no inserted body pending a rebuild, no
    /// particle outside its owner's box, and every owned body held as a
    /// ghost by the same ranks as now. When it is, the layout is kept as a
    /// rebuild would leave it (the reference positions of the skin test
    /// reset to the current ones, the layout check counted towards
    /// [`super::DomainSettings::rebalance_every`]) and `true` is returned;
    /// the caller then exchanges the ghosts' states as on any step
    /// ([`Domain::update_ghosts`]). Otherwise nothing changes and the
    /// caller rebuilds ([`Domain::rebuild`]). Collective.
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

    /// Whether this rank's particles all lie in its box and its owned
    /// bodies would be sent to the same ranks, in the same order, as the
    /// send lists in place.
    fn layout_holds(&self) -> bool {
        let (rank, width) = (self.comm.rank(), self.ghost_width());
        let positions = self.world.positions();
        let mut next = vec![0usize; self.send.len()];
        for (i, role) in self.role.iter().enumerate() {
            if *role != Role::Owned {
                continue;
            }
            let p = &positions[i];
            if !self.machine[i] && self.decomposition.owner(p) != rank {
                return false;
            }
            for s in self.holders_of(self.gid[i], p, width) {
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

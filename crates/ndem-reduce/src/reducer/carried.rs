//! Loads carried by a machine part ([`crate::ReductionSettings::carried_loads`]):
//! the merge's second pass, which joins a merge group to the one jointed
//! body that alone supports it.

use super::Reducer;
use crate::criteria::merge_passes;
use ndem_collide::Shape;
use ndem_step::{Motion, SolvedView, World};

/// What supports a merge group, from its touching contacts with bodies
/// outside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Support {
    /// Nothing outside the group touches it.
    Nothing,
    /// One machine part (the carrier body named), through merge-passing
    /// contacts only.
    Part(usize),
    /// Anything else: the ground, a wall, another group, a second part, or
    /// a part the group moves against.
    Other,
}

impl Support {
    fn with(self, part: Option<usize>) -> Self {
        match (self, part) {
            (Self::Nothing, Some(p)) => Self::Part(p),
            (Self::Part(q), Some(p)) if p == q => self,
            _ => Self::Other,
        }
    }
}

impl Reducer {
    /// Which carrier bodies are machine parts a load may merge into: a
    /// free dynamic body with geometry and a joint (`jointed`), or the
    /// aggregate body that holds one. `None` when no body is jointed.
    fn machine_parts(&self, world: &World, jointed: &[bool]) -> Option<Vec<bool>> {
        if !jointed.contains(&true) {
            return None;
        }
        let mut part: Vec<bool> = (0..world.len())
            .map(|b| {
                jointed[b]
                    && !world.is_member(b)
                    && world.motions()[b] == Motion::Dynamic
                    && !matches!(world.shapes()[b], Shape::Empty)
            })
            .collect();
        for (id, a) in self.live() {
            if self.holds_jointed(id, jointed) {
                part[a.body] = true;
            }
        }
        Some(part)
    }

    /// After the merge graph's unions: each group of merge nodes (and each
    /// lone node) whose touching contacts outside it all pass the merge
    /// tests and reach one machine part is joined with that part; both are
    /// marked in `touched`. Contacts that do not touch (speculative ones)
    /// neither support nor hold a group apart. `node` and `jointed` are
    /// the merge step's nodes and jointed bodies.
    pub(super) fn join_carried_loads(
        &mut self,
        world: &World,
        solved: &SolvedView<'_>,
        (node, jointed): (&[bool], &[bool]),
        touched: &mut [bool],
    ) {
        let Some(part) = self.machine_parts(world, jointed) else {
            return;
        };
        let n = world.len();
        let th = self.settings.merge;
        let mut support = vec![Support::Nothing; n];
        for c in solved.contacts.iter() {
            let (ca, cb) = (world.carrier(c.body_a()), world.carrier(c.body_b()));
            if ca == cb || c.gap > th.normal_incident * solved.dt {
                continue;
            }
            for (x, y) in [(ca, cb), (cb, ca)] {
                if !node[x] {
                    continue;
                }
                let root = self.find(x);
                if node[y] && self.find(y) == root {
                    continue;
                }
                let carrier = (part[y]
                    && merge_passes(
                        &th,
                        c,
                        world.positions(),
                        (world.velocities(), solved.previous_velocity),
                        solved.dt,
                    ))
                .then_some(y);
                support[root] = support[root].with(carrier);
            }
        }
        for root in 0..n {
            if let Support::Part(p) = support[root] {
                touched[root] = true;
                touched[p] = true;
                self.union(root, p);
            }
        }
    }
}

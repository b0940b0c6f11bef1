//! The subdomain coupling of the distributed NDEM step: the layout the
//! solvers' exchanges follow ([`Plan`]), the [`SubdomainCoupling`] over a
//! communicator, and a rank's world as a part of the scene for the energy
//! guard.

use crate::comm::Communicator;
use crate::domain::{GlobalKey, Role, deciding_body};
use ndem_math::ContactKey;
use ndem_solve::{ContactProblem, SolveError, SubdomainCoupling};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The layout the coupling needs, refreshed after every rebuild.
#[derive(Debug, Clone, Default)]
pub(super) struct Plan {
    pub(super) gid: Vec<u64>,
    pub(super) role: Vec<Role>,
    /// Particles: dynamic bodies that are not machine bodies.
    pub(super) free: Vec<bool>,
    /// The particles' reach budgets ([`crate::Domain::ownership_budgets`];
    /// empty: the lower index decides).
    pub(super) budget: Vec<f64>,
    pub(super) send: Vec<Vec<u32>>,
    pub(super) recv: Vec<Vec<u32>>,
    /// Per local body, the ranks holding it as a ghost.
    pub(super) holders: Vec<Vec<u32>>,
    /// The global index the next body added to the scene gets.
    pub(super) next_gid: u64,
}

impl Plan {
    /// The local body whose owner owns a contact between local bodies `a`
    /// and `b` ([`deciding_body`]).
    pub(super) fn deciding_body(&self, a: usize, b: usize) -> Option<usize> {
        deciding_body(|i| self.free[i], &self.budget, a, b)
    }

    /// Whether `rank` owns the contact between local bodies `a` and `b`
    /// ([`owns`]).
    pub(super) fn owns(&self, rank: usize, a: usize, b: usize) -> bool {
        owns(&self.free, &self.budget, &self.role, rank, a, b)
    }
}

/// Whether `rank` owns the contact between local bodies `a` and `b`, by
/// the bodies' particle flags `free`, budgets `budget` and roles `role`.
pub(super) fn owns(
    free: &[bool],
    budget: &[f64],
    role: &[Role],
    rank: usize,
    a: usize,
    b: usize,
) -> bool {
    match deciding_body(|i| free[i], budget, a, b) {
        Some(i) => role[i] == Role::Owned,
        None => rank == 0,
    }
}

/// The bodies a contact was detected between (its key's): a member of a
/// rigid aggregate, not the aggregate's body that carries its contacts.
/// Ownership goes by them, so that the rank that owns a contact holds it.
pub(super) fn detected_bodies(key: &ContactKey) -> [usize; 2] {
    [key.body_a as usize, key.body_b as usize]
}

/// Exchange counters of one rank.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ExchangeCounters {
    /// Collective exchanges made by the solvers.
    pub exchanges: u64,
    /// `f64` values this rank sent in them.
    pub values_sent: u64,
    /// Wall time spent in them \[s\].
    pub seconds: f64,
}

/// [`SubdomainCoupling`] over a [`Communicator`] and a [`crate::Domain`]'s layout.
pub struct DomainCoupling<C: Communicator> {
    pub(super) comm: C,
    pub(super) plan: Arc<Mutex<Plan>>,
    pub(super) counters: Arc<Mutex<ExchangeCounters>>,
}

impl<C: Communicator> DomainCoupling<C> {
    fn plan(&self) -> std::sync::MutexGuard<'_, Plan> {
        self.plan.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn exchange(&self, send: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
        let t = std::time::Instant::now();
        let values: usize = send.iter().map(Vec::len).sum();
        let out = self.comm.exchange(send);
        let mut c = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        c.exchanges += 1;
        c.values_sent += values as u64;
        c.seconds += t.elapsed().as_secs_f64();
        out
    }
}

impl<C: Communicator> SubdomainCoupling for DomainCoupling<C> {
    fn owned_contacts(
        &mut self,
        problem: &ContactProblem,
        owned: &mut Vec<bool>,
    ) -> Result<(), SolveError> {
        let plan = self.plan();
        if problem.body_count() != plan.gid.len() {
            return Err(SolveError::DimensionMismatch {
                field: "bodies",
                expected: plan.gid.len(),
                got: problem.body_count(),
            });
        }
        let rank = self.comm.rank();
        owned.clear();
        owned.extend(problem.contacts().iter().map(|c| {
            let [a, b] = detected_bodies(&c.key);
            plan.owns(rank, a, b)
        }));
        Ok(())
    }

    fn sum_over_holders(&mut self, values: &mut [f64], width: usize) {
        let plan = self.plan.lock().unwrap_or_else(|e| e.into_inner());
        // the ghosts' contributions to their owners, added there in rank
        // order after the owner's own
        let out = packed(values, width, &plan.recv, self.comm.size());
        let received = self.exchange(out);
        for (buf, list) in received.iter().zip(&plan.send) {
            for (d, &i) in buf.chunks_exact(width).zip(list) {
                let i = i as usize;
                for (v, x) in values[width * i..width * i + width].iter_mut().zip(d) {
                    *v += x;
                }
            }
        }
        // the sums back to the ghosts
        let out = packed(values, width, &plan.send, self.comm.size());
        let received = self.exchange(out);
        for (buf, list) in received.iter().zip(&plan.recv) {
            for (v, &i) in buf.chunks_exact(width).zip(list) {
                let i = i as usize;
                values[width * i..width * i + width].copy_from_slice(v);
            }
        }
    }

    fn shared_bodies(&mut self, _body_count: usize, out: &mut Vec<u32>) {
        let plan = self.plan();
        out.clear();
        out.extend(plan.send.iter().chain(&plan.recv).flatten());
        out.sort_unstable();
        out.dedup();
    }

    fn subdomain(&self) -> (usize, usize) {
        (self.comm.rank(), self.comm.size())
    }

    fn leads(&self) -> bool {
        self.comm.rank() == 0
    }

    fn sum(&mut self, values: &mut [f64]) {
        self.comm.sum_in_place(values);
    }

    fn max(&mut self, values: &mut [f64]) {
        self.comm.max_in_place(values);
    }

    fn share_impulses(&mut self, problem: &ContactProblem, owned: &[bool], lambda: &mut [f64]) {
        let plan = self.plan.lock().unwrap_or_else(|e| e.into_inner());
        let m = problem.contact_rows().count();
        let global = |k: &ContactKey| -> GlobalKey {
            (
                plan.gid[k.body_a as usize],
                plan.gid[k.body_b as usize],
                k.feature,
            )
        };
        let (rank, size) = (self.comm.rank(), self.comm.size());
        // a contact without a particle (rank 0's) is held by every rank
        let everyone: Vec<u32> = (0..size as u32).filter(|&s| s as usize != rank).collect();
        let mut out = vec![Vec::new(); size];
        for (ci, c) in problem.contacts().iter().enumerate() {
            if !owned[ci] {
                continue;
            }
            let [a, b] = detected_bodies(&c.key);
            let holders = match plan.deciding_body(a, b) {
                Some(o) => &plan.holders[o],
                None => &everyone,
            };
            let (ga, gb, f) = global(&c.key);
            for &s in holders {
                let buf = &mut out[s as usize];
                buf.extend_from_slice(&[ga as f64, gb as f64, f as f64]);
                buf.extend_from_slice(&lambda[ci * m..ci * m + m]);
            }
        }
        let received = self.exchange(out);
        let unowned: HashMap<GlobalKey, usize> = problem
            .contacts()
            .iter()
            .enumerate()
            .filter(|(ci, _)| !owned[*ci])
            .map(|(ci, c)| (global(&c.key), ci))
            .collect();
        for buf in received {
            for entry in buf.chunks_exact(3 + m) {
                let key = (entry[0] as u64, entry[1] as u64, entry[2] as u32);
                if let Some(&ci) = unowned.get(&key) {
                    lambda[ci * m..ci * m + m].copy_from_slice(&entry[3..]);
                }
            }
        }
    }
}

/// A rank's local world as one part of the whole scene
/// ([`ndem_step::ScenePart`]): the energy guard counts the owned bodies
/// and sums over ranks.
pub(super) struct DomainPart<C: Communicator> {
    pub(super) comm: C,
    pub(super) plan: Arc<Mutex<Plan>>,
}

impl<C: Communicator> ndem_step::ScenePart for DomainPart<C> {
    fn counted_bodies(&self, body_count: usize, counted: &mut Vec<bool>) {
        let plan = self.plan.lock().unwrap_or_else(|e| e.into_inner());
        counted.clear();
        counted.extend((0..body_count).map(|i| plan.role.get(i) == Some(&Role::Owned)));
    }

    fn sum(&mut self, values: &mut [f64]) {
        self.comm.sum_in_place(values);
    }

    fn max(&mut self, values: &mut [f64]) {
        self.comm.max_in_place(values);
    }
}

/// One buffer per rank of `ranks`: the `width` values of each body that
/// `lists[r]` names, in its order.
fn packed(values: &[f64], width: usize, lists: &[Vec<u32>], ranks: usize) -> Vec<Vec<f64>> {
    let mut out = vec![Vec::new(); ranks];
    for (buf, list) in out.iter_mut().zip(lists) {
        for &i in list {
            let i = i as usize;
            buf.extend_from_slice(&values[width * i..width * i + width]);
        }
    }
    out
}

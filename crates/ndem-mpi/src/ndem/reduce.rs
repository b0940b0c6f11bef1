//! Model reduction on a decomposed scene (adaptive-model-reduction paper,
//! Algorithm 1: split after detection, line 6; merge after the solve, line
//! 13).
//!
//! Every rank keeps the same table of aggregates (body and members by
//! global index) and makes the same merge and split decisions, whatever
//! the rank count decides the subdomains:
//!
//! * each rank tests the contacts it owns (eqs. 26-33) and the members it
//!   owns (sensors, eqs. 34-36) with the serial reducer's tests
//!   ([`ndem_reduce::criteria`]); the passing contacts (merge graph edges)
//!   and the members to free are gathered on every rank, in one exchange
//!   per decision (and per level of the split's propagation depth);
//! * every rank then forms the connected groups alike (union-find over
//!   global indices, the lower index the root, groups in the order of
//!   their lowest body: the serial reducer's order);
//! * an aggregate's mass properties and motion (eqs. 6-10) are the sums of
//!   [`FirstMoments`] and [`SecondMoments`] over each rank's owned
//!   members, added over ranks in rank order, so that every rank forms the
//!   same body;
//! * the aggregate's body is a machine body (`crate::Domain`): every rank
//!   holds it, rank 0 owns it, and the subdomain solver's velocity
//!   consensus moves it alike everywhere; a member is attached on every
//!   rank that holds it.
//!
//! The trial-solve split solves the unfolded model with the subdomain PGS
//! and sums each member's contact force over the ranks that hold it.
//! What depends on the rank count is what the solve's iterates do
//! (module docs of `super`): decisions follow the velocities they see.

use super::coupling::{DomainCoupling, ExchangeCounters, Plan, owns};
use crate::comm::Communicator;
use crate::domain::Role;
use ndem_collide::{ContactSet, Shape};
use ndem_math::Vec3;
use ndem_reduce::aggregate::{attach_members, place_aggregate_body};
use ndem_reduce::criteria::{
    contact_split_event, merge_passes, out_of_balance, trial_velocity_event,
};
use ndem_reduce::hooks::ReductionPasses;
use ndem_reduce::trial::{external_load, trial_start};
use ndem_reduce::{
    Aggregate, AggregateState, FirstMoments, ReduceError, ReducerState, ReductionSettings,
    ReductionStats, SecondMoments, TrialSplit,
};
use ndem_solve::{PgsSettings, Solver, Stopping, SubdomainCoupling, SubdomainPgs, SubdomainSweep};
use ndem_step::{BodyId, DetectedView, SolvedView, StepError, World};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// Model reduction as [`ModelHooks`] of one rank's stepper (module docs).
pub(super) struct DistributedReducer<C: Communicator + Clone + 'static> {
    comm: C,
    plan: Arc<Mutex<Plan>>,
    counters: Arc<Mutex<ExchangeCounters>>,
    settings: ReductionSettings,
    /// How the trial solve couples the ranks' sweeps.
    sweep: SubdomainSweep,
    /// Aggregate body → its members, by global index, members ascending.
    table: BTreeMap<u64, Vec<u64>>,
    /// Retired aggregate bodies by global index, descending (the last is
    /// reused first).
    retired: Vec<u64>,
    stats: ReductionStats,
    step: u64,
}

/// The part of the plan the hooks read (global indices, roles, particle
/// flags), copied so that the plan stays free for the trial solve's
/// exchanges, and kept in step with the bodies the hooks add.
struct Layout {
    rank: usize,
    gid: Vec<u64>,
    role: Vec<Role>,
    free: Vec<bool>,
    budget: Vec<f64>,
}

impl Layout {
    fn local(&self, gid: u64) -> Option<usize> {
        self.gid.binary_search(&gid).ok()
    }

    fn owns(&self, a: usize, b: usize) -> bool {
        owns(&self.free, &self.budget, &self.role, self.rank, a, b)
    }

    fn owned(&self, i: usize) -> bool {
        self.role[i] == Role::Owned
    }
}

impl<C: Communicator + Clone + 'static> DistributedReducer<C> {
    /// A reducer continuing from `state` (global indices, the same on
    /// every rank; empty for a new run).
    pub(super) fn new(
        comm: C,
        plan: Arc<Mutex<Plan>>,
        counters: Arc<Mutex<ExchangeCounters>>,
        (settings, sweep): (ReductionSettings, SubdomainSweep),
        state: ReducerState,
    ) -> Result<Self, ReduceError> {
        settings.validate()?;
        let table = state
            .aggregates
            .into_iter()
            .map(|(_, a)| {
                let mut members: Vec<u64> = a.members.iter().map(|&m| m as u64).collect();
                members.sort_unstable();
                (a.body as u64, members)
            })
            .collect();
        let mut retired: Vec<u64> = state.retired.iter().map(|&b| b as u64).collect();
        retired.sort_unstable_by(|a, b| b.cmp(a));
        Ok(Self {
            comm,
            plan,
            counters,
            settings,
            sweep,
            table,
            retired,
            stats: ReductionStats::default(),
            step: 0,
        })
    }

    /// Statistics of the last step (counts over the whole scene).
    pub(super) fn stats(&self) -> ReductionStats {
        self.stats
    }

    /// Moves a split sensor ([`ReductionSettings::move_sensor`]).
    pub(super) fn move_sensor(
        &mut self,
        index: usize,
        position: Vec3,
        orientation: ndem_math::Quat,
    ) -> Result<(), ReduceError> {
        self.settings.move_sensor(index, position, orientation)
    }

    /// The aggregates by global index, ids in body order (a checkpoint's
    /// [`ReducerState`]).
    pub(super) fn state(&self) -> ReducerState {
        ReducerState {
            aggregates: self
                .table
                .iter()
                .enumerate()
                .map(|(id, (&body, members))| {
                    let members = members.iter().map(|&m| m as usize).collect();
                    (
                        id,
                        Aggregate {
                            body: body as usize,
                            members,
                        },
                    )
                })
                .collect(),
            retired: self.retired.iter().map(|&b| b as usize).collect(),
        }
    }

    fn layout(&self) -> Layout {
        let plan = self.plan.lock().unwrap_or_else(|e| e.into_inner());
        Layout {
            rank: self.comm.rank(),
            gid: plan.gid.clone(),
            role: plan.role.clone(),
            free: plan.free.clone(),
            budget: plan.budget.clone(),
        }
    }

    fn coupling(&self) -> DomainCoupling<C> {
        DomainCoupling {
            comm: self.comm.clone(),
            plan: self.plan.clone(),
            counters: self.counters.clone(),
        }
    }

    /// The union of every rank's global indices, ascending. Collective.
    fn gather_union(&self, mine: &[u64]) -> Vec<u64> {
        let values: Vec<f64> = mine.iter().map(|&g| g as f64).collect();
        let mut all: Vec<u64> = self
            .comm
            .all_gather(&values)
            .into_iter()
            .flatten()
            .map(|x| x as u64)
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// The union of every rank's pairs of global indices, ascending.
    /// Collective.
    fn gather_pairs(&self, mine: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let values: Vec<f64> = mine
            .iter()
            .flat_map(|&(a, b)| [a as f64, b as f64])
            .collect();
        let mut all: Vec<(u64, u64)> = self
            .comm
            .all_gather(&values)
            .iter()
            .flat_map(|v| v.chunks_exact(2).map(|p| (p[0] as u64, p[1] as u64)))
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    fn in_sensor(&self, world: &World, i: usize) -> bool {
        let r = world.shapes()[i].bounding_radius();
        self.settings
            .sensors
            .iter()
            .any(|s| s.overlaps(&world.positions()[i], r))
    }

    /// Frees the members `split` (global indices, ascending): dissolves
    /// their aggregates in body order, each followed by the aggregates its
    /// remaining members form by their contacts. Collective.
    fn apply_split(
        &mut self,
        world: &mut World,
        contacts: &ContactSet,
        layout: &mut Layout,
        split: &[u64],
    ) -> Result<(), ReduceError> {
        let member_of = self.member_index();
        let mut affected: Vec<u64> = split
            .iter()
            .filter_map(|m| member_of.get(m).copied())
            .collect();
        affected.sort_unstable();
        affected.dedup();
        let mut remaining_of: HashMap<u64, u64> = HashMap::new();
        for g in &affected {
            for &m in &self.table[g] {
                if !contains(split, m) {
                    remaining_of.insert(m, *g);
                }
            }
        }
        let mut edges = Vec::new();
        for c in contacts.iter() {
            let (a, b) = (c.body_a(), c.body_b());
            let (ga, gb) = (layout.gid[a], layout.gid[b]);
            if layout.owns(a, b)
                && remaining_of
                    .get(&ga)
                    .is_some_and(|h| remaining_of.get(&gb) == Some(h))
            {
                edges.push((ga, gb));
            }
        }
        let edges = self.gather_pairs(&edges);
        let mut plans: Vec<(u64, Vec<Vec<u64>>)> = Vec::new();
        for &g in &affected {
            let members = &self.table[&g];
            let remaining: Vec<u64> = members
                .iter()
                .copied()
                .filter(|&m| !contains(split, m))
                .collect();
            self.stats.split_members += members.len() - remaining.len();
            let groups = components(&remaining, &edges)
                .into_iter()
                .filter(|grp| grp.len() >= self.settings.min_aggregate_size)
                .collect();
            plans.push((g, groups));
        }
        let all: Vec<&[u64]> = plans
            .iter()
            .flat_map(|(_, gs)| gs.iter().map(Vec::as_slice))
            .collect();
        let mut states = self.aggregate_states(world, layout, &all)?.into_iter();
        for (g, groups) in plans {
            self.dissolve(world, layout, g)?;
            for group in groups {
                let state = states.next().expect("one state per group");
                self.form(world, layout, group, &state)?;
            }
        }
        Ok(())
    }

    /// Member → aggregate body, by global index.
    fn member_index(&self) -> HashMap<u64, u64> {
        self.table
            .iter()
            .flat_map(|(&g, ms)| ms.iter().map(move |&m| (m, g)))
            .collect()
    }

    /// The aggregates `groups` (global indices) would form: the moments of
    /// each rank's owned members summed over ranks. Collective.
    fn aggregate_states(
        &self,
        world: &World,
        layout: &Layout,
        groups: &[&[u64]],
    ) -> Result<Vec<AggregateState>, ReduceError> {
        let owned_members = |group: &[u64]| -> Vec<usize> {
            group
                .iter()
                .filter_map(|&m| layout.local(m))
                .filter(|&i| layout.owned(i))
                .collect()
        };
        let masses = world.mass_properties();
        let (x, q, v) = (world.positions(), world.orientations(), world.velocities());
        let mass_of = |i: usize| {
            masses[i].ok_or(ReduceError::NotMergeable {
                body: layout.gid[i] as usize,
                reason: "no mass properties",
            })
        };
        let mut first = Vec::with_capacity(7 * groups.len());
        for group in groups {
            let mut f = FirstMoments::default();
            for i in owned_members(group) {
                f.add(mass_of(i)?.mass, &x[i], &v[i]);
            }
            first.extend_from_slice(&f.as_array());
        }
        self.comm.sum_in_place(&mut first);
        let mut second = Vec::with_capacity(12 * groups.len());
        for (group, f) in groups.iter().zip(first.chunks_exact(7)) {
            let mut s = SecondMoments::default();
            // a massless group is an error on every rank alike below
            if let Ok((centre, _)) = FirstMoments::from_slice(f).centre(0) {
                for i in owned_members(group) {
                    s.add(&mass_of(i)?, &centre, (&x[i], &q[i], &v[i]));
                }
            }
            second.extend_from_slice(&s.as_array());
        }
        self.comm.sum_in_place(&mut second);
        groups
            .iter()
            .zip(first.chunks_exact(7).zip(second.chunks_exact(12)))
            .map(|(group, (f, s))| {
                FirstMoments::from_slice(f).finish(&SecondMoments::from_slice(s), group[0] as usize)
            })
            .collect()
    }

    /// Frees every member of aggregate `body` this rank holds (each keeps
    /// its co-moving motion) and retires the body.
    fn dissolve(
        &mut self,
        world: &mut World,
        layout: &Layout,
        body: u64,
    ) -> Result<(), ReduceError> {
        let members = self
            .table
            .remove(&body)
            .ok_or(ReduceError::UnknownAggregate(body as usize))?;
        let local: Vec<usize> = members.iter().filter_map(|&m| layout.local(m)).collect();
        world.co_move_bodies(&local);
        for &i in &local {
            world.detach(BodyId::from_index(i))?;
        }
        let i = layout
            .local(body)
            .expect("every rank holds every aggregate body");
        world.set_active(i, None)?;
        self.retired.push(body);
        self.retired.sort_unstable_by(|a, b| b.cmp(a));
        Ok(())
    }

    /// Forms the aggregate of `members` (global indices, ascending) with
    /// `state`: a retired body again, or a new one appended to the local
    /// world (and to the plan) on every rank; returns its global index.
    fn form(
        &mut self,
        world: &mut World,
        layout: &mut Layout,
        members: Vec<u64>,
        state: &AggregateState,
    ) -> Result<u64, ReduceError> {
        let retired = self.retired.pop();
        let reuse = retired.map(|g| {
            layout
                .local(g)
                .expect("every rank holds every aggregate body")
        });
        let host = place_aggregate_body(world, reuse, state)?;
        let body = match retired {
            Some(g) => g,
            None => self.append_to_plan(layout, host),
        };
        let local: Vec<usize> = members.iter().filter_map(|&m| layout.local(m)).collect();
        attach_members(world, &local, host)?;
        self.table.insert(body, members);
        Ok(body)
    }

    /// Enters local body `i`, just added, into the plan as a machine body
    /// with the next global index (owned by rank 0, held by every rank);
    /// returns the index.
    fn append_to_plan(&self, layout: &mut Layout, i: usize) -> u64 {
        let mut plan = self.plan.lock().unwrap_or_else(|e| e.into_inner());
        let gid = plan.next_gid;
        plan.next_gid += 1;
        let (rank, size) = (self.comm.rank(), self.comm.size());
        let role = if rank == 0 {
            Role::Owned
        } else {
            Role::Ghost(0)
        };
        plan.gid.push(gid);
        plan.role.push(role);
        plan.free.push(false);
        if !plan.budget.is_empty() {
            plan.budget.push(0.0);
        }
        if rank == 0 {
            for s in 1..size {
                plan.send[s].push(i as u32);
            }
            plan.holders.push((1..size as u32).collect());
        } else {
            plan.recv[0].push(i as u32);
            plan.holders.push(Vec::new());
        }
        layout.gid.push(gid);
        layout.role.push(role);
        layout.free.push(false);
        if !layout.budget.is_empty() {
            layout.budget.push(0.0);
        }
        gid
    }

    /// A body the merge graph joins: an aggregate's body, or a free
    /// particle (dynamic sphere, not a machine body) outside every sensor.
    fn is_node(&self, world: &World, layout: &Layout, i: usize) -> bool {
        if self.table.contains_key(&layout.gid[i]) {
            return true;
        }
        layout.free[i]
            && !world.is_member(i)
            && !matches!(world.shapes()[i], Shape::Empty)
            && !self.in_sensor(world, i)
    }

    /// Trial-solve split ([`TrialSplit`]): the unfolded model solved with
    /// the subdomain PGS; returns the members its velocities (eqs. 32-33)
    /// or their force balance (eqs. 34-36, each member's contact force
    /// summed over the ranks that hold it) say to free, global indices
    /// ascending. Collective.
    fn trial_split(
        &mut self,
        world: &World,
        contacts: &ContactSet,
        detected: &DetectedView<'_>,
        ts: &TrialSplit,
        layout: &Layout,
    ) -> Result<Vec<u64>, ReduceError> {
        let (problem, index) = ndem_step::unfolded_problem(world, contacts, detected.settings)?;
        let (mut lambda, mut v) = trial_start(&problem, detected.history)?;
        let settings = PgsSettings {
            stopping: Stopping::iterations(ts.iterations),
            ..PgsSettings::default()
        };
        let mut pgs = SubdomainPgs::new(settings, Box::new(self.coupling()))
            .map_err(StepError::from)?
            .with_sweep(self.sweep);
        pgs.solve(&problem, &mut lambda, &mut v)
            .map_err(StepError::from)?;
        self.stats.trial_iterations = ts.iterations;
        let (set, dt) = (contacts.as_slice(), detected.settings.dt);
        let m = problem.contact_rows().count();
        // per body: contact force, torque, and whether a contact loads it
        let mut sums = vec![0.0; 7 * world.len()];
        let mut split = Vec::new();
        let chunks = problem.contacts().iter().zip(lambda.chunks_exact(m));
        for ((c, lam), &k) in chunks.zip(&index) {
            let (a, b) = (set[k].body_a(), set[k].body_b());
            if !layout.owns(a, b) {
                continue;
            }
            let (ia, ib) = c.jacobian.transpose_apply(lam);
            for (body, impulse) in [(a, ia), (b, ib)] {
                let s = &mut sums[7 * body..7 * body + 7];
                for d in 0..3 {
                    s[d] += impulse.linear[d] / dt;
                    s[3 + d] += impulse.angular[d] / dt;
                }
                if lam[0] > 0.0 {
                    s[6] = 1.0;
                }
            }
            if ts.velocity_test
                && (world.is_member(a) || world.is_member(b))
                && trial_velocity_event(ts, &set[k], world.positions(), &v)
            {
                split.extend(
                    [a, b]
                        .into_iter()
                        .filter(|&x| world.is_member(x))
                        .map(|x| layout.gid[x]),
                );
            }
        }
        self.coupling().sum_over_holders(&mut sums, 7);
        for i in 0..world.len() {
            let s = &sums[7 * i..7 * i + 7];
            if !layout.owned(i) || !world.is_member(i) || s[6] == 0.0 {
                continue;
            }
            let contact = (Vec3::new(s[0], s[1], s[2]), Vec3::new(s[3], s[4], s[5]));
            if out_of_balance(ts, external_load(world, i), contact) {
                split.push(layout.gid[i]);
            }
        }
        Ok(self.gather_union(&split))
    }
}

impl<C: Communicator + Clone + 'static> ReductionPasses for DistributedReducer<C> {
    /// A sensor moves with a body every rank holds (a machine part, a
    /// static or kinematic body; `DistributedNdem::set_reduction` refuses
    /// any other): its global index is found in this rank's world, which
    /// is in global order.
    fn follow_sensors(&mut self, world: &World) -> Result<(), ReduceError> {
        if self.settings.sensors.iter().all(|s| s.follows.is_none()) {
            return Ok(());
        }
        let plan = self.plan.lock().unwrap_or_else(|e| e.into_inner());
        self.settings.follow_bodies(|body| {
            let local = plan.gid.binary_search(&(body.index() as u64)).ok()?;
            let id = BodyId::from_index(local);
            Some((world.position(id), world.orientation(id)))
        })
    }

    /// Split (paper, section 3.2): the members the trial solve, contact
    /// events (to depth `N_c-spl`) or sensors free; each affected aggregate
    /// is dissolved and its other members re-formed by their contacts.
    /// Collective.
    fn split_step(
        &mut self,
        world: &mut World,
        contacts: &ContactSet,
        detected: &DetectedView<'_>,
    ) -> Result<(), ReduceError> {
        if self.table.is_empty() {
            return Ok(());
        }
        let mut layout = self.layout();
        let mut split = match self.settings.trial_split {
            Some(ts) if ts.runs_at(detected.step) => {
                self.trial_split(world, contacts, detected, &ts, &layout)?
            }
            _ => Vec::new(),
        };
        if let Some(cs) = self.settings.contact_split {
            let g = &layout.gid;
            let mut seeds = Vec::new();
            for c in contacts.iter() {
                let (a, b) = (c.body_a(), c.body_b());
                if !layout.owns(a, b)
                    || (!world.is_member(a) && !world.is_member(b))
                    || world.carrier(a) == world.carrier(b)
                {
                    continue;
                }
                let (s, x, v) = (world.shapes(), world.positions(), world.velocities());
                if contact_split_event(&cs, c, s, x, v) {
                    seeds.extend(
                        [a, b]
                            .into_iter()
                            .filter(|&m| world.is_member(m) && !contains(&split, g[m]))
                            .map(|m| g[m]),
                    );
                }
            }
            let mut frontier = self.gather_union(&seeds);
            split = union(&split, &frontier);
            for _ in 1..cs.depth {
                let mut next = Vec::new();
                for c in contacts.iter() {
                    let (a, b) = (c.body_a(), c.body_b());
                    if !layout.owns(a, b)
                        || world.host_of(a).is_none()
                        || world.host_of(a) != world.host_of(b)
                    {
                        continue;
                    }
                    for (from, to) in [(a, b), (b, a)] {
                        if contains(&frontier, g[from]) && !contains(&split, g[to]) {
                            next.push(g[to]);
                        }
                    }
                }
                frontier = self.gather_union(&next);
                if frontier.is_empty() {
                    break;
                }
                split = union(&split, &frontier);
            }
        }
        if !self.settings.sensors.is_empty() {
            let inside: Vec<u64> = (0..world.len())
                .filter(|&i| {
                    layout.owned(i)
                        && world.is_member(i)
                        && !contains(&split, layout.gid[i])
                        && self.in_sensor(world, i)
                })
                .map(|i| layout.gid[i])
                .collect();
            split = union(&split, &self.gather_union(&inside));
        }
        if split.is_empty() {
            return Ok(());
        }
        self.apply_split(world, contacts, &mut layout, &split)
    }

    /// Merge (paper, section 3.1): the owned contacts that pass eqs. 26-28
    /// join their carriers; every connected group of at least
    /// `min_aggregate_size` particles becomes one aggregate. Collective.
    fn merge_step(
        &mut self,
        world: &mut World,
        solved: &SolvedView<'_>,
    ) -> Result<(), ReduceError> {
        let mut layout = self.layout();
        let node: Vec<bool> = (0..world.len())
            .map(|i| self.is_node(world, &layout, i))
            .collect();
        let mut edges = Vec::new();
        for c in solved.contacts.iter() {
            let (a, b) = (c.body_a(), c.body_b());
            let (ca, cb) = (world.carrier(a), world.carrier(b));
            if !layout.owns(a, b) || ca == cb || !node[ca] || !node[cb] {
                continue;
            }
            let velocities = (world.velocities(), solved.previous_velocity);
            if merge_passes(
                &self.settings.merge,
                c,
                world.positions(),
                velocities,
                solved.dt,
            ) {
                let (ga, gb) = (layout.gid[ca], layout.gid[cb]);
                edges.push((ga.min(gb), ga.max(gb)));
            }
        }
        let edges = self.gather_pairs(&edges);
        let mut touched: Vec<u64> = edges.iter().flat_map(|&(a, b)| [a, b]).collect();
        touched.sort_unstable();
        touched.dedup();
        let mut merges: Vec<(Vec<u64>, Vec<u64>)> = Vec::new();
        for nodes in components(&touched, &edges) {
            let size: usize = nodes
                .iter()
                .map(|n| self.table.get(n).map_or(1, Vec::len))
                .sum();
            if nodes.len() < 2 || size < self.settings.min_aggregate_size {
                continue;
            }
            let (old, free): (Vec<u64>, Vec<u64>) =
                nodes.iter().partition(|n| self.table.contains_key(n));
            let mut members = free;
            for g in &old {
                members.extend_from_slice(&self.table[g]);
            }
            members.sort_unstable();
            merges.push((old, members));
        }
        let groups: Vec<&[u64]> = merges.iter().map(|(_, m)| m.as_slice()).collect();
        let states = self.aggregate_states(world, &layout, &groups)?;
        for ((old, members), state) in merges.into_iter().zip(states) {
            for g in old {
                self.dissolve(world, &layout, g)?;
            }
            self.form(world, &mut layout, members, &state)?;
            self.stats.merges += 1;
        }
        Ok(())
    }

    /// The reduction level over the whole scene (paper, section 4).
    /// Collective.
    fn count(&mut self, world: &World) {
        let mut local = [0.0; 2];
        let plan = self.plan.lock().unwrap_or_else(|e| e.into_inner());
        for i in 0..world.len() {
            let particle = plan.role[i] == Role::Owned
                && plan.free[i]
                && !matches!(world.shapes()[i], Shape::Empty);
            if particle {
                local[0] += 1.0;
                if !world.is_member(i) {
                    local[1] += 1.0;
                }
            }
        }
        drop(plan);
        let total = self.comm.sum(&local);
        let (particles, free) = (total[0] as usize, total[1] as usize);
        let aggregates = self.table.len();
        self.stats.set_counts(particles, free, aggregates);
    }

    fn settings(&self) -> &ReductionSettings {
        &self.settings
    }

    fn progress(&mut self) -> (&mut ReductionStats, &mut u64) {
        (&mut self.stats, &mut self.step)
    }
}

ndem_reduce::reduction_hooks!(impl [C: Communicator + Clone + 'static] for DistributedReducer<C>);

fn contains(sorted: &[u64], g: u64) -> bool {
    sorted.binary_search(&g).is_ok()
}

/// The sorted union of two ascending lists.
fn union(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out: Vec<u64> = a.iter().chain(b).copied().collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The connected components of `nodes` (ascending) under `edges` (pairs of
/// nodes; others are ignored), each ascending, in the order of their
/// lowest node.
fn components(nodes: &[u64], edges: &[(u64, u64)]) -> Vec<Vec<u64>> {
    let mut parent: Vec<usize> = (0..nodes.len()).collect();
    fn find(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for &(a, b) in edges {
        let (Ok(ia), Ok(ib)) = (nodes.binary_search(&a), nodes.binary_search(&b)) else {
            continue;
        };
        let (ra, rb) = (find(&mut parent, ia), find(&mut parent, ib));
        if ra != rb {
            parent[ra.max(rb)] = ra.min(rb);
        }
    }
    let mut groups: Vec<Vec<u64>> = Vec::new();
    let mut slot: HashMap<usize, usize> = HashMap::new();
    for i in 0..nodes.len() {
        let r = find(&mut parent, i);
        let k = *slot.entry(r).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[k].push(nodes[i]);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::components;

    #[test]
    fn components_are_ordered_by_their_lowest_node() {
        let nodes = [1, 3, 4, 7, 9];
        let edges = [(7, 1), (9, 4), (4, 5)];
        assert_eq!(
            components(&nodes, &edges),
            vec![vec![1, 7], vec![3], vec![4, 9]]
        );
    }
}

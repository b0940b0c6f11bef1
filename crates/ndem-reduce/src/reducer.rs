//! The reducer: merge after the continuous solve, split after detection
//! (adaptive-model-reduction paper, Algorithm 1, lines 6 and 13), and the
//! explicit merge/split API that shares the same machinery.

mod carried;

use crate::aggregate::{aggregate_state, attach_members, place_aggregate_body, place_anchor_body};
use crate::criteria::{
    contact_split_event, merge_passes, out_of_balance, relative_motion, trial_velocity_event,
};
use crate::hooks::ReductionPasses;
use crate::settings::{ReductionSettings, SensorSplit};
use crate::trial::{
    disturbed_members, external_load, held_beyond, held_members, partial_problem, trial_start,
    whole_problem,
};
use crate::{ReduceError, ReductionStats};
use ndem_collide::{ContactSet, Shape};
use ndem_math::Vec3;
use ndem_solve::{ProjectedGaussSeidel, Solver, Stopping};
use ndem_step::{BodyId, DetectedView, Motion, SolvedView, StepError, World};

/// One rigid aggregate: the body that carries it and its members.
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    /// The aggregate body (shape [`Shape::Empty`]).
    pub body: usize,
    /// Member bodies, sorted.
    pub members: Vec<usize>,
}

/// An aggregate of a [`Reducer`]: the handle [`Reducer::merge_bodies`]
/// returns and [`Reducer::split`] takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AggregateId(usize);

impl AggregateId {
    /// The aggregate's index among the reducer's aggregates (checkpoints
    /// store it).
    pub const fn index(self) -> usize {
        self.0
    }
}

/// Adaptive model reduction as [`ndem_step::ModelHooks`] for the stepper. Install it
/// with `Stepper::set_hooks(Box::new(reducer))`; reach it again with
/// `Stepper::hooks_as::<Reducer>()`.
#[derive(Debug, Clone)]
pub struct Reducer {
    settings: ReductionSettings,
    aggregates: Vec<Option<Aggregate>>,
    aggregate_of_body: Vec<Option<usize>>,
    retired: Vec<usize>,
    stats: ReductionStats,
    parent: Vec<usize>,
    step: u64,
}

/// The reducer's state between steps (for checkpoints): live aggregates
/// by id and the retired aggregate bodies kept for reuse.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReducerState {
    /// `(id, aggregate)` of the live aggregates.
    pub aggregates: Vec<(usize, Aggregate)>,
    /// Retired aggregate bodies, in the order they are reused (last first).
    pub retired: Vec<usize>,
}

impl Reducer {
    /// The state to checkpoint (the world's memberships are the other
    /// half).
    pub fn state(&self) -> ReducerState {
        ReducerState {
            aggregates: self.live().map(|(i, a)| (i, a.clone())).collect(),
            retired: self.retired.clone(),
        }
    }

    /// A reducer continuing from `state` on a world whose memberships have
    /// been restored. Checks that they agree: every aggregate's id is a
    /// slot below the world's body count, used once; its body hosts
    /// exactly its members, each listed once; every retired body is an
    /// inactive body (no mass, no members) of the world, listed once and
    /// not an aggregate's. A state that fails is a typed error naming the
    /// entry ([`ReduceError::InvalidState`]), never a panic (a checkpoint
    /// file is user input).
    pub fn restore(
        settings: ReductionSettings,
        state: ReducerState,
        world: &World,
    ) -> Result<Self, ReduceError> {
        let mut r = Self::new(settings)?;
        check_state(&state, world)?;
        r.aggregate_of_body = vec![None; world.len()];
        for (id, agg) in state.aggregates {
            if r.aggregates.len() <= id {
                r.aggregates.resize(id + 1, None);
            }
            r.aggregate_of_body[agg.body] = Some(id);
            r.aggregates[id] = Some(agg);
        }
        r.retired = state.retired;
        Ok(r)
    }

    /// A reducer with the given settings (validated).
    pub fn new(settings: ReductionSettings) -> Result<Self, ReduceError> {
        settings.validate()?;
        Ok(Self {
            settings,
            aggregates: Vec::new(),
            aggregate_of_body: Vec::new(),
            retired: Vec::new(),
            stats: ReductionStats::default(),
            parent: Vec::new(),
            step: 0,
        })
    }

    /// The settings (as constructed but for sensor poses moved by
    /// [`Reducer::move_sensor`]).
    pub fn settings(&self) -> &ReductionSettings {
        &self.settings
    }

    /// Moves sensor `index` (a sensor that follows a machine part, e.g. a
    /// region around an excavator's bucket, so that the material ahead of
    /// it is resolved before it arrives). Errors on a missing sensor or a
    /// non-finite pose.
    pub fn move_sensor(
        &mut self,
        index: usize,
        position: ndem_math::Vec3,
        orientation: ndem_math::Quat,
    ) -> Result<(), ReduceError> {
        self.settings.move_sensor(index, position, orientation)
    }

    /// Removes sensor `index` (a machine part's sensor once the part stops
    /// digging); the later sensors' indices fall by one. Errors on a
    /// missing sensor.
    pub fn remove_sensor(&mut self, index: usize) -> Result<SensorSplit, ReduceError> {
        if index >= self.settings.sensors.len() {
            return Err(ReduceError::InvalidSettings {
                field: "sensors",
                reason: "no sensor with this index",
            });
        }
        Ok(self.settings.sensors.remove(index))
    }

    /// Statistics of the last step.
    pub fn stats(&self) -> ReductionStats {
        self.stats
    }

    /// [`Self::aggregates`] by index.
    pub(crate) fn live(&self) -> impl Iterator<Item = (usize, &Aggregate)> {
        self.aggregates
            .iter()
            .enumerate()
            .filter_map(|(i, a)| a.as_ref().map(|a| (i, a)))
    }

    /// [`Self::aggregate_of_body`] by index.
    pub(crate) fn aggregate_of(&self, body: usize) -> Option<usize> {
        self.aggregate_of_body.get(body).copied().flatten()
    }

    /// [`Self::aggregate_containing`] by index.
    pub(crate) fn aggregate_holding(&self, world: &World, body: usize) -> Option<usize> {
        self.aggregate_of(world.carrier(body))
    }

    /// [`Self::is_particle`] by index.
    pub(crate) fn particle_at(&self, world: &World, body: usize) -> bool {
        world.motions()[body] == Motion::Dynamic
            && !matches!(world.shapes()[body], Shape::Empty)
            && self.aggregate_of(body).is_none()
            && !world.joints().iter().any(|j| {
                j.body_a == BodyId::from_index(body) || j.body_b == BodyId::from_index(body)
            })
    }

    /// [`Self::is_mergeable`] by index: any dynamic body with geometry,
    /// joints allowed (an excavator bucket with its load: the bucket's joint
    /// rows act on the aggregate). The automatic merge takes only particles
    /// ([`Self::is_particle`]): merge conditions for articulated bodies are
    /// not covered by the paper.
    pub(crate) fn mergeable_at(&self, world: &World, body: usize) -> bool {
        world.motions()[body] == Motion::Dynamic
            && !matches!(world.shapes()[body], Shape::Empty)
            && self.aggregate_of(body).is_none()
    }

    /// Whether aggregate `id` is anchored to static geometry
    /// ([`ReductionSettings::merge_with_static`]): its host is static.
    pub(crate) fn anchored_at(&self, world: &World, id: usize) -> bool {
        self.aggregates
            .get(id)
            .and_then(Option::as_ref)
            .is_some_and(|a| world.motions()[a.body] == Motion::Static)
    }

    /// Whether aggregate `id` is held at rest with static geometry
    /// ([`ReductionSettings::merge_with_static`]).
    pub fn is_anchored(&self, world: &World, id: AggregateId) -> bool {
        self.anchored_at(world, id.0)
    }

    /// [`Self::merge_bodies`] by index; `anchored`: the aggregate is held
    /// at rest on a static host.
    pub(crate) fn merge_indices(
        &mut self,
        world: &mut World,
        bodies: &[usize],
        anchored: bool,
    ) -> Result<usize, ReduceError> {
        let mut members = Vec::new();
        let mut old = Vec::new();
        for &b in bodies {
            if b >= world.len() {
                return Err(ReduceError::NotMergeable {
                    body: b,
                    reason: "no such body",
                });
            }
            match self.aggregate_holding(world, b) {
                Some(id) => old.push(id),
                None if self.mergeable_at(world, b) => members.push(b),
                None => {
                    return Err(ReduceError::NotMergeable {
                        body: b,
                        reason: "not a dynamic body with geometry",
                    });
                }
            }
        }
        old.sort_unstable();
        old.dedup();
        for &id in &old {
            members.extend(self.dissolve(world, id)?);
        }
        members.sort_unstable();
        members.dedup();
        if members.len() < 2 {
            return Err(ReduceError::NotMergeable {
                body: members.first().copied().unwrap_or(0),
                reason: "an aggregate has at least 2 bodies",
            });
        }
        self.form(world, members, anchored)
    }

    /// Frees every member of aggregate `id` (each keeps its co-moving
    /// velocity) and retires its body; returns the freed bodies.
    pub fn split(
        &mut self,
        world: &mut World,
        id: AggregateId,
    ) -> Result<Vec<BodyId>, ReduceError> {
        let freed = self.dissolve(world, id.0)?;
        Ok(freed.into_iter().map(BodyId::from_index).collect())
    }

    /// The live aggregates with their handles.
    pub fn aggregates(&self) -> impl Iterator<Item = (AggregateId, &Aggregate)> {
        self.live().map(|(i, a)| (AggregateId(i), a))
    }

    /// The aggregate whose body is `body`, if any.
    pub fn aggregate_of_body(&self, body: BodyId) -> Option<AggregateId> {
        self.aggregate_of(body.index()).map(AggregateId)
    }

    /// The aggregate of a member or aggregate body, if any.
    pub fn aggregate_containing(&self, world: &World, body: BodyId) -> Option<AggregateId> {
        self.aggregate_holding(world, body.index()).map(AggregateId)
    }

    /// Whether `body` may take part in aggregates: dynamic, with collision
    /// geometry, no joints, and not itself an aggregate body.
    pub fn is_particle(&self, world: &World, body: BodyId) -> bool {
        self.particle_at(world, body.index())
    }

    /// Whether the explicit API may merge `body` ([`Self::merge_bodies`]).
    pub fn is_mergeable(&self, world: &World, body: BodyId) -> bool {
        self.mergeable_at(world, body.index())
    }

    /// Merges the given bodies (free particles, elementary bodies with or
    /// without joints, members or aggregate bodies; members and aggregates
    /// bring all their members) into one aggregate, whatever their
    /// contacts: the explicit API (a load on a truck bed, a bucket and its
    /// load). Mass, linear and angular momentum are conserved.
    pub fn merge_bodies(
        &mut self,
        world: &mut World,
        bodies: &[BodyId],
    ) -> Result<AggregateId, ReduceError> {
        let bodies: Vec<usize> = bodies.iter().map(|b| b.index()).collect();
        self.merge_indices(world, &bodies, false).map(AggregateId)
    }

    /// Detaches all members of `id`, retires its body; returns the members.
    fn dissolve(&mut self, world: &mut World, id: usize) -> Result<Vec<usize>, ReduceError> {
        let agg = self
            .aggregates
            .get_mut(id)
            .and_then(Option::take)
            .ok_or(ReduceError::UnknownAggregate(id))?;
        // its members leave with the host's motion; no other body's host
        // changes (co-moving every member of the world here made a step
        // with many merges and splits quadratic in the bodies)
        world.co_move_bodies(&agg.members);
        for &m in &agg.members {
            world.detach(BodyId::from_index(m))?;
        }
        world.set_active(agg.body, None)?;
        self.aggregate_of_body[agg.body] = None;
        self.retired.push(agg.body);
        self.retired.sort_unstable_by(|a, b| b.cmp(a));
        Ok(agg.members)
    }

    /// Forms one aggregate of free bodies `members` (sorted): a dynamic
    /// body with their mass and momentum (eqs. 6-10), or, `anchored`, a
    /// static host that holds them at rest.
    fn form(
        &mut self,
        world: &mut World,
        members: Vec<usize>,
        anchored: bool,
    ) -> Result<usize, ReduceError> {
        let body = if anchored {
            place_anchor_body(world, self.retired.pop(), &members)?
        } else {
            let state = aggregate_state(world, &members)?;
            place_aggregate_body(world, self.retired.pop(), &state)?
        };
        attach_members(world, &members, body)?;
        if self.aggregate_of_body.len() < world.len() {
            self.aggregate_of_body.resize(world.len(), None);
        }
        let id = match self.aggregates.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                self.aggregates.push(None);
                self.aggregates.len() - 1
            }
        };
        self.aggregates[id] = Some(Aggregate { body, members });
        self.aggregate_of_body[body] = Some(id);
        Ok(id)
    }

    fn find(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            // the smaller index is the root: independent of visiting order
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.parent[hi] = lo;
        }
    }

    /// A body the merge graph joins: a free particle outside every split
    /// sensor (sensor regions stay resolved: the sensor would free it again
    /// before the next solve), or an aggregate body without jointed
    /// members (`jointed`, [`jointed_bodies`]).
    fn is_node(&self, world: &World, jointed: &[bool], body: usize) -> bool {
        if let Some(id) = self.aggregate_of(body) {
            // an aggregate holding a jointed body (a bucket with its load)
            // grows only through the explicit API and, with
            // `carried_loads`, by loads resting on it alone: merged with a
            // resting bed it would drag the bed with the machine, and no
            // contact event could split them again
            return !self.holds_jointed(id, jointed);
        }
        !world.is_member(body)
            && self.particle_at(world, body)
            && !self.settings.sensors.iter().any(|s| {
                s.overlaps(
                    &world.positions()[body],
                    world.shapes()[body].bounding_radius(),
                )
            })
    }

    /// Per body, whether it is static geometry an aggregate may merge with
    /// ([`ReductionSettings::merge_with_static`]): a static body with a
    /// shape (not an aggregate's host) whose surface does not move. All
    /// `false` with the setting off.
    fn anchor_geometry(&self, world: &World) -> Vec<bool> {
        (0..world.len())
            .map(|b| {
                self.settings.merge_with_static
                    && world.motions()[b] == Motion::Static
                    && !matches!(world.shapes()[b], Shape::Empty)
                    && world.surface_velocity(BodyId::from_index(b)) == Vec3::zeros()
            })
            .collect()
    }

    /// Whether aggregate `id` has a jointed member (`jointed`,
    /// [`jointed_bodies`]).
    fn holds_jointed(&self, id: usize, jointed: &[bool]) -> bool {
        self.aggregates[id]
            .as_ref()
            .is_some_and(|a| a.members.iter().any(|&m| jointed[m]))
    }

    /// Merges one group of merge nodes (free particles and aggregates)
    /// into one aggregate, anchored when a node rests on static geometry
    /// (`anchored`) or is an anchored aggregate; a lone node only when it
    /// is a dynamic aggregate coming to rest on static geometry. A machine
    /// part joins only a group that touches nothing but it
    /// ([`Self::join_carried_loads`]), so a group with one is never
    /// anchored.
    fn merge_group(
        &mut self,
        world: &mut World,
        nodes: &[usize],
        anchored: &[bool],
    ) -> Result<(), ReduceError> {
        let anchors = nodes.iter().any(|&b| {
            anchored[b]
                || self
                    .aggregate_of(b)
                    .is_some_and(|id| self.anchored_at(world, id))
        });
        let lone_to_anchor = anchors
            && self
                .aggregate_of(nodes[0])
                .is_some_and(|id| !self.anchored_at(world, id));
        if nodes.len() < 2 && !lone_to_anchor {
            return Ok(());
        }
        let size: usize = nodes
            .iter()
            .map(|&b| match self.aggregate_of(b) {
                Some(id) => self.aggregates[id].as_ref().map_or(0, |a| a.members.len()),
                None => 1,
            })
            .sum();
        if size < self.settings.min_aggregate_size {
            return Ok(());
        }
        self.merge_indices(world, nodes, anchors)?;
        self.stats.merges += 1;
        Ok(())
    }

    /// Trial-solve split (see [`crate::TrialSplit`]): marks in `split` the
    /// members the background solve of the unfolded model says to free.
    fn trial_split(
        &mut self,
        world: &World,
        contacts: &ContactSet,
        detected: &DetectedView<'_>,
        split: &mut [bool],
    ) -> Result<(), ReduceError> {
        let Some(ts) = self.settings.trial_split else {
            return Ok(());
        };
        if !ts.runs_at(detected.step) {
            return Ok(());
        }
        // the partial solve's held members (none for the whole unfolded
        // model): those deeper than `depth` from the aggregate's boundary,
        // or from the disturbed members
        let held = if ts.disturbed_only {
            let dt = detected.settings.dt;
            let seeds =
                disturbed_members(world, contacts, detected.history, &self.settings.merge, dt);
            if !seeds.contains(&true) {
                return Ok(());
            }
            held_beyond(world, contacts, Some(&seeds), ts.depth)
        } else {
            ts.depth
                .map_or_else(Vec::new, |d| held_members(world, contacts, d))
        };
        let solved = |x: usize| world.is_member(x) && !held.get(x).copied().unwrap_or(false);
        let trial = if held.contains(&true) {
            let aggregates = self.live().map(|(_, a)| (a.body, a.members.as_slice()));
            partial_problem(world, contacts, detected.settings, aggregates, &held)?
        } else {
            whole_problem(world, contacts, detected.settings)?
        };
        let (problem, index) = (&trial.problem, &trial.index);
        if problem.is_empty() {
            return Ok(());
        }
        let positions = trial.positions(world);
        let (mut lambda, mut v) = trial_start(problem, detected.history)?;
        let mut pgs = ProjectedGaussSeidel::with_stopping(Stopping::iterations(ts.iterations))
            .map_err(StepError::from)?;
        pgs.solve(problem, &mut lambda, &mut v)
            .map_err(StepError::from)?;
        trial.carry_velocities(&mut v);
        self.stats.trial_iterations = ts.iterations;
        let set = contacts.as_slice();
        let m = problem.contact_rows().count();
        let dt = detected.settings.dt;
        let n = world.len();
        let mut force = vec![Vec3::zeros(); n];
        let mut torque = vec![Vec3::zeros(); n];
        let mut loaded = vec![false; n];
        for ((c, lam), &k) in problem
            .contacts()
            .iter()
            .zip(lambda.chunks_exact(m))
            .zip(index)
        {
            let (a, b) = (set[k].body_a(), set[k].body_b());
            let (ia, ib) = c.jacobian.transpose_apply(lam);
            force[a] += ia.linear / dt;
            torque[a] += ia.angular / dt;
            force[b] += ib.linear / dt;
            torque[b] += ib.angular / dt;
            if lam[0] > 0.0 {
                loaded[a] = true;
                loaded[b] = true;
            }
            if ts.velocity_test
                && (world.is_member(a) || world.is_member(b))
                && trial_velocity_event(&ts, &set[k], positions, &v)
            {
                for x in [a, b] {
                    split[x] |= solved(x);
                }
            }
        }
        for a in 0..n {
            if !solved(a) || !loaded[a] || split[a] {
                continue;
            }
            if out_of_balance(&ts, external_load(world, a), (force[a], torque[a])) {
                split[a] = true;
            }
        }
        Ok(())
    }

    /// Marks in `split` the members of aggregates anchored to static
    /// geometry that something moving presses or drags: a touching contact
    /// (gap at most `ξ_nv^{i-mrg} Δt`) that still approaches faster than
    /// the merge's `ξ_nv^{i-mrg}` (eq. 26) after the last solve, from any
    /// body, or that slides or rolls beyond the merge thresholds against a
    /// driven body (kinematic, jointed, or a static body whose surface
    /// moves: a belt). A body that lands on the member is stopped by the
    /// solve; one that still approaches it is driven. An anchored member
    /// cannot respond in the solve, so a slow push that the contact
    /// split's thresholds pass would crush the bodies between it and what
    /// drives them; freed, the member takes the push, and what remains of
    /// its aggregate is re-formed dynamic
    /// ([`ReductionPasses::split_step`]), so that the push moves it as a
    /// rigid body.
    fn pressed_anchored_split(
        &self,
        world: &World,
        contacts: &ContactSet,
        dt: f64,
        split: &mut [bool],
    ) {
        // nothing to look at without an anchored aggregate (the setting
        // off, or none formed yet): no pass over the contacts
        if !self.live().any(|(id, _)| self.anchored_at(world, id)) {
            return;
        }
        let th = &self.settings.merge;
        let anchored_host = |b: usize| {
            world
                .host_of(b)
                .filter(|&h| world.motions()[h] == Motion::Static)
        };
        let jointed = jointed_bodies(world);
        let (x, v) = (world.positions(), world.velocities());
        for c in contacts.iter() {
            let (a, b) = (c.body_a(), c.body_b());
            for (m, o) in [(a, b), (b, a)] {
                let Some(host) = anchored_host(m) else {
                    continue;
                };
                if world.carrier(o) == host || anchored_host(o).is_some() {
                    continue;
                }
                if c.gap > th.normal_incident * dt {
                    continue;
                }
                let mut u = relative_motion(c, x, v);
                let motion = world.motions()[world.carrier(o)];
                let driven = match motion {
                    Motion::Kinematic => true,
                    Motion::Dynamic => jointed[world.carrier(o)] || jointed[o],
                    Motion::Static => {
                        let s = world.surface_velocity(BodyId::from_index(o));
                        u.tangential = (s - c.normal * c.normal.dot(&s)).norm();
                        true
                    }
                };
                split[m] |= u.normal < -th.normal_incident
                    || (driven && (u.tangential > th.tangential || u.angular > th.rolling));
            }
        }
    }

    /// Re-forms aggregates from `bodies` (free, sorted) by their mutual
    /// contacts: each connected group of at least `min_aggregate_size`.
    /// With `anchored_within` (the remains of an anchored aggregate: the
    /// merge's touching distance `ξ_nv^{i-mrg} Δt`), a group that touches
    /// static geometry within it stays anchored; the others, and every
    /// group without it, are dynamic aggregates.
    fn reform(
        &mut self,
        world: &mut World,
        bodies: &[usize],
        contacts: &ContactSet,
        anchored_within: Option<f64>,
    ) -> Result<(), ReduceError> {
        if bodies.len() < self.settings.min_aggregate_size {
            return Ok(());
        }
        let n = world.len();
        self.parent.clear();
        self.parent.extend(0..n);
        for c in contacts.iter() {
            let (a, b) = (c.body_a(), c.body_b());
            if bodies.binary_search(&a).is_ok() && bodies.binary_search(&b).is_ok() {
                self.union(a, b);
            }
        }
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut slot = std::collections::BTreeMap::new();
        for &b in bodies {
            let r = self.find(b);
            let k = *slot.entry(r).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[k].push(b);
        }
        let mut on_static = vec![false; n];
        if let Some(gap) = anchored_within {
            let anchor = self.anchor_geometry(world);
            for c in contacts.iter().filter(|c| c.gap <= gap) {
                let (a, b) = (c.body_a(), c.body_b());
                on_static[a] |= anchor[b];
                on_static[b] |= anchor[a];
            }
        }
        for g in groups {
            if g.len() >= self.settings.min_aggregate_size {
                let anchored = g.iter().any(|&b| on_static[b]);
                self.form(world, g, anchored)?;
            }
        }
        Ok(())
    }
}

impl ReductionPasses for Reducer {
    fn follow_sensors(&mut self, world: &World) -> Result<(), ReduceError> {
        self.settings.follow_bodies(|body| {
            (body.index() < world.len()).then(|| (world.position(body), world.orientation(body)))
        })
    }

    /// Merge (paper, section 3.1): contacts whose relative velocity and
    /// acceleration pass eqs. 26-28 join their carriers (free particles or
    /// aggregates); each connected group with at least
    /// `min_aggregate_size` particles becomes one aggregate.
    fn merge_step(
        &mut self,
        world: &mut World,
        solved: &SolvedView<'_>,
    ) -> Result<(), ReduceError> {
        let n = world.len();
        self.parent.clear();
        self.parent.extend(0..n);
        let th = self.settings.merge;
        let mut touched = vec![false; n];
        // once per step: which bodies the merge graph joins (an aggregate's
        // test visits its members, so not once per contact)
        let jointed = jointed_bodies(world);
        let node: Vec<bool> = (0..n).map(|b| self.is_node(world, &jointed, b)).collect();
        let anchor = self.anchor_geometry(world);
        // nodes with a merge-passing contact with static geometry
        let mut anchored = vec![false; n];
        for c in solved.contacts.iter() {
            let (a, b) = (c.body_a(), c.body_b());
            let (ca, cb) = (world.carrier(a), world.carrier(b));
            let to_anchor = match (node[ca], node[cb]) {
                (true, false) if anchor[cb] => Some(ca),
                (false, true) if anchor[ca] => Some(cb),
                _ => None,
            };
            if let Some(x) = to_anchor {
                let passes = merge_passes(
                    &th,
                    c,
                    world.positions(),
                    (world.velocities(), solved.previous_velocity),
                    solved.dt,
                );
                anchored[x] |= passes;
                touched[x] |= passes;
                continue;
            }
            if ca == cb || !node[ca] || !node[cb] {
                continue;
            }
            // a contact joins only bodies that touch (spheres falling side
            // by side at one speed are found through their sweeps as
            // speculative contacts, but they are no resting network)
            let passes = merge_passes(
                &th,
                c,
                world.positions(),
                (world.velocities(), solved.previous_velocity),
                solved.dt,
            );
            if passes {
                self.union(ca, cb);
                touched[ca] = true;
                touched[cb] = true;
            }
        }
        if self.settings.carried_loads {
            self.join_carried_loads(world, solved, (&node, &jointed), &mut touched);
        }
        // groups of nodes by root, in increasing order of their smallest node
        let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut slot = vec![usize::MAX; n];
        for i in 0..n {
            if !touched[i] {
                continue;
            }
            let r = self.find(i);
            if slot[r] == usize::MAX {
                slot[r] = groups.len();
                groups.push((r, Vec::new()));
            }
            groups[slot[r]].1.push(i);
        }
        for (_, nodes) in groups {
            self.merge_group(world, &nodes, &anchored)?;
        }
        Ok(())
    }

    /// Split (paper, section 3.2): members hit by contact events (eqs.
    /// 29-31, to depth `N_c-spl`) or inside a sensor are freed; the rest of
    /// each affected aggregate is re-formed by its internal contact network.
    fn split_step(
        &mut self,
        world: &mut World,
        contacts: &ContactSet,
        detected: &DetectedView<'_>,
    ) -> Result<(), ReduceError> {
        let n = world.len();
        let mut split = vec![false; n];
        if self.aggregates.iter().all(Option::is_none) {
            return Ok(());
        }
        self.trial_split(world, contacts, detected, &mut split)?;
        let mut pressed = vec![false; n];
        self.pressed_anchored_split(world, contacts, detected.settings.dt, &mut pressed);
        // pressed members seed the contact split's propagation too
        let mut seeds: Vec<usize> = (0..n).filter(|&m| pressed[m] && !split[m]).collect();
        self.stats.pressed_members = seeds.len();
        for &m in &seeds {
            split[m] = true;
        }
        if let Some(cs) = self.settings.contact_split {
            for c in contacts.iter() {
                let (a, b) = (c.body_a(), c.body_b());
                if !world.is_member(a) && !world.is_member(b) {
                    continue;
                }
                if world.carrier(a) == world.carrier(b) {
                    continue;
                }
                let event = contact_split_event(
                    &cs,
                    c,
                    world.shapes(),
                    world.positions(),
                    world.velocities(),
                );
                if event {
                    for m in [a, b] {
                        if world.is_member(m) && !split[m] {
                            split[m] = true;
                            seeds.push(m);
                        }
                    }
                }
            }
            // propagate along member-member contacts inside one aggregate
            seeds.sort_unstable();
            seeds.dedup();
            let mut frontier = seeds.clone();
            for _ in 1..cs.depth {
                let mut next = Vec::new();
                for c in contacts.iter() {
                    let (a, b) = (c.body_a(), c.body_b());
                    if world.host_of(a).is_none() || world.host_of(a) != world.host_of(b) {
                        continue;
                    }
                    let (fa, fb) = (
                        frontier.binary_search(&a).is_ok(),
                        frontier.binary_search(&b).is_ok(),
                    );
                    for (from, to) in [(fa, b), (fb, a)] {
                        if from && !split[to] {
                            split[to] = true;
                            next.push(to);
                        }
                    }
                }
                next.sort_unstable();
                frontier = next;
                frontier.dedup();
                if frontier.is_empty() {
                    break;
                }
            }
        }
        for (i, flag) in split.iter_mut().enumerate() {
            if !*flag
                && world.is_member(i)
                && self
                    .settings
                    .sensors
                    .iter()
                    .any(|s| s.overlaps(&world.positions()[i], world.shapes()[i].bounding_radius()))
            {
                *flag = true;
            }
        }
        let mut affected: Vec<usize> = (0..n)
            .filter(|&i| split[i])
            .filter_map(|i| self.aggregate_holding(world, i))
            .collect();
        affected.sort_unstable();
        affected.dedup();
        let touching = self.settings.merge.normal_incident * detected.settings.dt;
        for id in affected {
            // an anchored aggregate something presses gives way as a whole:
            // what remains of it is dynamic
            let anchored = self.anchored_at(world, id)
                && self.aggregates[id]
                    .as_ref()
                    .is_some_and(|a| !a.members.iter().any(|&m| pressed[m]));
            let members = self.dissolve(world, id)?;
            let remaining: Vec<usize> = members.iter().copied().filter(|&m| !split[m]).collect();
            self.stats.split_members += members.len() - remaining.len();
            self.reform(world, &remaining, contacts, anchored.then_some(touching))?;
        }
        Ok(())
    }

    fn count(&mut self, world: &World) {
        let particles = (0..world.len())
            .filter(|&i| self.particle_at(world, i))
            .count();
        let free = (0..world.len())
            .filter(|&i| self.particle_at(world, i) && !world.is_member(i))
            .count();
        let aggregates = self.aggregates.iter().flatten().count();
        self.stats.set_counts(particles, free, aggregates);
    }

    fn settings(&self) -> &ReductionSettings {
        &self.settings
    }

    fn progress(&mut self) -> (&mut ReductionStats, &mut u64) {
        (&mut self.stats, &mut self.step)
    }
}

crate::reduction_hooks!(impl for Reducer);

/// The checks of [`Reducer::restore`].
/// Which bodies of `world` a joint names.
fn jointed_bodies(world: &World) -> Vec<bool> {
    let mut jointed = vec![false; world.len()];
    for j in world.joints() {
        jointed[j.body_a.index()] = true;
        jointed[j.body_b.index()] = true;
    }
    jointed
}

fn check_state(state: &ReducerState, world: &World) -> Result<(), ReduceError> {
    let n = world.len();
    let invalid = |field, index, reason| ReduceError::InvalidState {
        field,
        index,
        reason,
    };
    // the members each body hosts in the world
    let mut hosted = vec![0usize; n];
    for b in 0..n {
        if let Some(h) = world.host_of(b) {
            hosted[h] += 1;
        }
    }
    let (mut id_used, mut body_used, mut member_listed) =
        (vec![false; n], vec![false; n], vec![false; n]);
    for (k, (id, agg)) in state.aggregates.iter().enumerate() {
        let field = "aggregates";
        // ids are the first free slots: fewer than the aggregate bodies
        if *id >= n || std::mem::replace(&mut id_used[*id], true) {
            return Err(invalid(field, k, "id out of range or used twice"));
        }
        if agg.body >= n || std::mem::replace(&mut body_used[agg.body], true) {
            return Err(invalid(field, k, "body out of range or used twice"));
        }
        if agg.members.is_empty() || hosted[agg.body] != agg.members.len() {
            return Err(invalid(
                field,
                k,
                "the members listed are not those the body hosts in the world",
            ));
        }
        for &m in &agg.members {
            if world.host_of(m) != Some(agg.body) || std::mem::replace(&mut member_listed[m], true)
            {
                return Err(invalid(
                    field,
                    k,
                    "a member is not hosted by the aggregate's body, or is listed twice",
                ));
            }
        }
    }
    for (k, &b) in state.retired.iter().enumerate() {
        let inactive = b < n && world.mass_properties()[b].is_none() && hosted[b] == 0;
        if !inactive || std::mem::replace(&mut body_used[b], true) {
            return Err(invalid(
                "retired",
                k,
                "not an inactive body without members, or used twice",
            ));
        }
    }
    Ok(())
}

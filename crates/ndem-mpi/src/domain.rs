//! One rank's part of the scene: the bodies it owns, ghost copies of the
//! bodies of other ranks near its subdomain, and the bodies every rank
//! holds (static and kinematic ones), in one local [`World`] ordered by
//! global index.
//!
//! **Machine bodies** (dynamic bodies that are not spheres or that a joint
//! holds: an excavator's boom, arm and bucket, a jointed chain) are owned
//! by rank 0 and held by every other rank as ghosts of rank 0, whatever
//! their position; they never migrate and take no part in the bisection.
//! Every joint therefore joins bodies every rank holds, and every rank's
//! local world carries all of the scene's joints.
//!
//! **Rigid aggregates** (model reduction): an aggregate's body has no
//! geometry and is a machine body; its members stay particles, owned by
//! the rank of their position and ghosted like any other, each record
//! carrying its host's global index and its pose on the host, so that
//! every rank holding a member attaches it to the same body alike.
//!
//! Ordering the local world by global index keeps every pair of bodies in
//! the same order as in the whole scene, so a contact's key, normal and
//! force, and the order in which a body's contact forces are summed, are
//! those of a one-rank run.

use crate::comm::Communicator;
use crate::error::MpiError;
use crate::partition::Decomposition;
pub use reach::GhostReach;
pub(crate) use reach::deciding_body;
use record::{
    BODY_WIDTH, GlobalMembership, Record, STATE_WIDTH, pack_body, pack_entry, pack_state,
    unpack_body, unpack_entry, unpack_state,
};
pub use record::{Carried, GlobalKey};

mod layout;
mod reach;
mod record;
use ndem_collide::Shape;
use ndem_math::{ContactKey, SettingError, Vec3};
use ndem_step::{BodyDesc, BodyId, Joint, MaterialId, Motion, World};

/// What a body is on this rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// This rank integrates it and owns its contacts with higher bodies.
    Owned,
    /// A copy of a body owned by the given rank, updated every step.
    Ghost(usize),
    /// A static or kinematic body that every rank holds and moves alike.
    Replicated,
}

/// Settings of the decomposition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DomainSettings {
    /// Verlet skin of the ghost layer \[m\]: ghosts are every body within
    /// `2 R_max + margin + skin` of a subdomain, and the layout is rebuilt
    /// (migration, new ghosts) once some body may have moved `skin / 2`.
    /// 0 picks half the smallest particle radius.
    pub skin: f64,
    /// Extra contact range of the stepper \[m\] (its detection margin):
    /// part of the ghost layer's width.
    pub margin: f64,
    /// Recompute the bisection every this many layout checks that fire
    /// (rebuilds and kept layouts; 1: at every one; 0: never after the
    /// first).
    pub rebalance_every: u64,
    /// How far each particle's ghosts reach ([`GhostReach`]).
    pub ghost_reach: GhostReach,
}

impl Default for DomainSettings {
    fn default() -> Self {
        Self {
            skin: 0.0,
            margin: 0.0,
            rebalance_every: 10,
            ghost_reach: GhostReach::Uniform,
        }
    }
}

impl DomainSettings {
    /// Checks the fields.
    pub fn validate(&self) -> Result<(), MpiError> {
        MpiError::require_non_negative("skin", self.skin)?;
        MpiError::require_non_negative("margin", self.margin)?;
        Ok(())
    }
}

/// This rank's bodies and its communication plan (see the module docs).
pub struct Domain<C: Communicator> {
    comm: C,
    settings: DomainSettings,
    decomposition: Decomposition,
    /// Empty world with the scene's materials, gravity and pair overrides.
    template: World,
    /// Bodies every rank holds: global index, description, user force.
    replicated: Vec<Record>,
    /// The local world, bodies ordered by global index.
    world: World,
    gid: Vec<u64>,
    role: Vec<Role>,
    /// Per rank: local indices of owned bodies that rank holds as ghosts.
    send: Vec<Vec<u32>>,
    /// Per rank: local indices of the ghosts that rank owns.
    recv: Vec<Vec<u32>>,
    /// Positions of the local bodies at the last rebuild.
    reference: Vec<Vec3>,
    /// Global indices of the machine bodies, ascending (module docs).
    machine_gids: Vec<u64>,
    /// The machine bodies, on every rank, as of the last rebuild (rank 0
    /// owns them; the others hold ghosts, whose state rank 0 sends).
    machines: Vec<Record>,
    /// The scene's joints, bodies by global index, as of the last rebuild.
    joints: Vec<Joint>,
    /// Per local body: a machine body.
    machine: Vec<bool>,
    /// Largest radius of a particle (dynamic, not a machine body) \[m\].
    largest_radius: f64,
    skin: f64,
    /// Layouts made anew (migration, new ghosts, a new local world).
    rebuilds: u64,
    /// Layouts kept as they were ([`Self::keep_layout`]).
    kept: u64,
    /// Layout checks that fired: rebuilds and kept layouts, which count
    /// towards `rebalance_every`.
    relayouts: u64,
    /// Bodies in the whole scene (the next inserted body's global index).
    scene_len: u64,
    /// Smallest sphere radius of the scene \[m\] (∞ before any).
    smallest_radius: f64,
    /// Whether inserted bodies changed the ghost layer's width or the
    /// skin since the last rebuild: the next step rebuilds.
    stale: bool,
    /// The step's reach ([`Self::needs_rebuild`]): how far two bodies'
    /// sweeps together can reach \[m\], for the ghost layer's width.
    reach: f64,
    /// Per local body: its reach budget `b` \[m\] ([`GhostReach`]); its
    /// ghosts lie within `2 R_max + margin + 2 b` of its box.
    budget: Vec<f64>,
    /// Per local body: its sweep at the last [`Self::needs_rebuild`] \[m\]
    /// (empty after a rebuild), for the budgets of the next one.
    sweep: Vec<f64>,
}

/// What a rank holds after migration: its bodies and the carried entries.
type Migrated<T> = (Vec<Record>, Vec<(GlobalKey, T)>);

impl<C: Communicator> std::fmt::Debug for Domain<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Domain")
            .field("rank", &self.comm.rank())
            .field("size", &self.comm.size())
            .field("bodies", &self.gid.len())
            .field("rebuilds", &self.rebuilds)
            .finish()
    }
}

impl<C: Communicator> Domain<C> {
    /// Splits `scene` (the whole scene, the same on every rank) among the
    /// ranks of `comm`: a bisection by particle count, then each rank keeps
    /// the dynamic bodies in its box, ghosts of its neighbours' bodies near
    /// it, and every static and kinematic body. Collective.
    ///
    /// Machine bodies (module docs) go to rank 0, rigid aggregates'
    /// bodies among them; an aggregate's members are particles like any
    /// other, each carrying its membership. A scene with fewer particles
    /// than ranks (an emitter's empty start) is held by rank 0 alone until
    /// a rebuild's bisection finds a particle for every rank.
    pub fn new(comm: C, scene: &World, settings: DomainSettings) -> Result<Self, MpiError> {
        settings.validate()?;
        let machine_gids = machine_bodies(scene);
        let is_machine = |i: usize| machine_gids.binary_search(&(i as u64)).is_ok();
        let particle = |i: usize| scene.motions()[i] == Motion::Dynamic && !is_machine(i);
        let radii = (0..scene.len()).filter(|&i| particle(i));
        let radius = |i: usize| scene.shapes()[i].bounding_radius();
        let largest_radius = radii.clone().map(radius).fold(0.0, f64::max);
        let smallest_radius = radii.map(radius).fold(f64::INFINITY, f64::min);
        let skin = skin_of(&settings, smallest_radius);
        let mut template = World::new(scene.materials.clone(), scene.gravity).map_err(step)?;
        for ((a, b), pair) in scene.pairs() {
            template
                .set_pair(MaterialId::from_index(a), MaterialId::from_index(b), *pair)
                .map_err(step)?;
        }
        // no sweep is known yet: the first step's skin test sets each
        // particle's budget
        let record = |i: usize| {
            let budget = if particle(i) { 0.5 * skin } else { 0.0 };
            record_in(scene, i, |h| h as u64, budget)
        };
        let replicated: Vec<Record> = (0..scene.len())
            .filter(|&i| scene.motions()[i] != Motion::Dynamic && !is_machine(i))
            .map(record)
            .collect();
        // a provisional round-robin share, so that each body is counted
        // once by the bisection
        let (rank, size) = (comm.rank(), comm.size());
        let dynamic: Vec<usize> = (0..scene.len()).filter(|&i| particle(i)).collect();
        let share: Vec<Vec3> = dynamic
            .iter()
            .enumerate()
            .filter(|(k, _)| k % size == rank)
            .map(|(_, &i)| scene.positions()[i])
            .collect();
        let decomposition = if dynamic.len() < size {
            Decomposition::on_first_rank(size)
        } else {
            let d = Decomposition::bisect(&comm, &share);
            d.check_widths(2.0 * largest_radius)?;
            d
        };
        let owned: Vec<Record> = dynamic
            .iter()
            .filter(|&&i| decomposition.owner(&scene.positions()[i]) == rank)
            .map(|&i| record(i))
            .collect();
        let machines = machine_gids.iter().map(|&g| record(g as usize)).collect();
        let mut domain = Self {
            comm,
            settings,
            decomposition,
            template,
            replicated,
            world: World::new(Vec::new(), Vec3::zeros()).map_err(step)?,
            gid: Vec::new(),
            role: Vec::new(),
            send: Vec::new(),
            recv: Vec::new(),
            reference: Vec::new(),
            machine_gids,
            machines,
            joints: scene.joints().to_vec(),
            machine: Vec::new(),
            largest_radius,
            skin,
            rebuilds: 0,
            kept: 0,
            relayouts: 0,
            scene_len: scene.len() as u64,
            smallest_radius,
            stale: false,
            reach: 0.0,
            budget: Vec::new(),
            sweep: Vec::new(),
        };
        domain.place(owned)?;
        Ok(domain)
    }

    /// The communicator.
    pub fn comm(&self) -> &C {
        &self.comm
    }

    /// The local world (owned, ghost and replicated bodies).
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The local world, to step.
    pub fn world_mut(&mut self) -> &mut World {
        &mut self.world
    }

    /// Global index of each local body.
    pub fn global_indices(&self) -> &[u64] {
        &self.gid
    }

    /// Role of each local body.
    pub fn roles(&self) -> &[Role] {
        &self.role
    }

    /// Per rank, the local indices of the owned bodies it holds as ghosts.
    pub fn ghosts_sent(&self) -> &[Vec<u32>] {
        &self.send
    }

    /// Per rank, the local indices of the ghosts it owns.
    pub fn ghosts_received(&self) -> &[Vec<u32>] {
        &self.recv
    }

    /// The current decomposition.
    pub fn decomposition(&self) -> &Decomposition {
        &self.decomposition
    }

    /// Layout rebuilds so far (migration, new ghosts, a new local world),
    /// the first layout included; layouts kept are counted apart
    /// ([`Self::layouts_kept`]).
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds
    }

    /// The ghost layer's Verlet skin \[m\].
    pub fn skin(&self) -> f64 {
        self.skin
    }

    /// Whether each local body is a machine body (module docs).
    pub fn machine(&self) -> &[bool] {
        &self.machine
    }

    /// Number of owned bodies.
    pub fn owned_count(&self) -> usize {
        self.role.iter().filter(|r| **r == Role::Owned).count()
    }

    /// Bodies in the whole scene, inserted ones included.
    pub fn scene_len(&self) -> u64 {
        self.scene_len
    }

    /// Dynamic bodies in the whole scene, inserted ones included.
    pub fn dynamic_len(&self) -> u64 {
        self.scene_len - self.replicated.len() as u64
    }

    /// Adds `bodies` to the scene with the next global indices, in order,
    /// and returns the first index. Every rank must insert the same bodies
    /// (an emitter run alike on each): each rank appends those its box
    /// holds as owned and those within the ghost layer's width of its box
    /// as ghosts, so the layout stays what a rebuild would make of it,
    /// without one (the new indices are the highest: the local world stays
    /// in global order). Dynamic free spheres only (`MpiError::Unsupported`
    /// otherwise, naming the body). Not collective: no rank needs another's
    /// data. `dt` is the step, for the new bodies' reach budgets.
    pub fn insert(&mut self, bodies: Vec<BodyDesc>, dt: f64) -> Result<u64, MpiError> {
        let first = self.scene_len;
        let rank = self.comm.rank();
        for desc in bodies {
            let gid = self.scene_len;
            if desc.motion != Motion::Dynamic || !matches!(desc.shape, Shape::Sphere { .. }) {
                return Err(MpiError::Unsupported {
                    body: gid as usize,
                    reason: "an inserted body that is not a dynamic sphere",
                });
            }
            self.scene_len += 1;
            let r = desc.shape.bounding_radius();
            if r > self.largest_radius || r < self.smallest_radius {
                // the ghost layer built for the old radii may miss a
                // contact of the new body: rebuilt at the next step
                self.largest_radius = self.largest_radius.max(r);
                self.smallest_radius = self.smallest_radius.min(r);
                self.skin = skin_of(&self.settings, self.smallest_radius);
                self.stale = true;
            }
            let budget = self.budget_of(desc.sweep_distance(dt));
            let width = self.width_of(budget);
            let p = desc.position;
            let owner = self.decomposition.owner(&p);
            let role = if owner == rank {
                Role::Owned
            } else if self.decomposition.boxes()[rank].distance(&p) <= width {
                Role::Ghost(owner)
            } else {
                continue;
            };
            let i = self.world.add_body(desc).map_err(step)?;
            let i = i.index() as u32;
            self.gid.push(gid);
            self.role.push(role);
            self.machine.push(false);
            self.reference.push(p);
            self.budget.push(budget);
            if let Role::Ghost(s) = role {
                self.recv[s].push(i);
            } else {
                for s in self.decomposition.ranks_near(&p, width, rank) {
                    self.send[s].push(i);
                }
            }
        }
        Ok(first)
    }

    /// Takes in the bodies the local world gained during a step beyond the
    /// layout (rigid aggregates' bodies model reduction formed, every rank
    /// alike): each gets the next global index and becomes a machine body
    /// (owned by rank 0, held by every rank). Returns how many. Not
    /// collective.
    pub fn adopt_new_bodies(&mut self) -> usize {
        let (rank, size) = (self.comm.rank(), self.comm.size());
        let first = self.gid.len();
        for i in first..self.world.len() {
            let gid = self.scene_len;
            self.scene_len += 1;
            self.gid.push(gid);
            self.machine_gids.push(gid);
            self.machine.push(true);
            self.reference.push(self.world.positions()[i]);
            self.budget.push(0.0);
            self.machines.push(self.record_of(i));
            if rank == 0 {
                self.role.push(Role::Owned);
                for s in 1..size {
                    self.send[s].push(i as u32);
                }
            } else {
                self.role.push(Role::Ghost(0));
                self.recv[0].push(i as u32);
            }
        }
        self.world.len() - first
    }

    /// Local body `i` as a record (its host by global index).
    fn record_of(&self, i: usize) -> Record {
        let budget = self.budget.get(i).copied().unwrap_or(0.0);
        record_in(&self.world, i, |k| self.gid[k], budget)
    }

    /// The global keys of local contact keys.
    pub fn global_key(&self, key: &ContactKey) -> GlobalKey {
        (
            self.gid[key.body_a as usize],
            self.gid[key.body_b as usize],
            key.feature,
        )
    }

    /// The local key of a global key, if both bodies are local.
    pub fn local_key(&self, key: &GlobalKey) -> Option<ContactKey> {
        let a = self.gid.binary_search(&key.0).ok()?;
        let b = self.gid.binary_search(&key.1).ok()?;
        Some(ContactKey::new(a as u32, b as u32, key.2))
    }

    /// Copies the owners' positions, orientations and velocities onto the
    /// ghosts. Collective.
    pub fn update_ghosts(&mut self) {
        let mut out = vec![Vec::new(); self.comm.size()];
        for (buf, list) in out.iter_mut().zip(&self.send) {
            buf.reserve(list.len() * STATE_WIDTH);
            for &i in list {
                let i = i as usize;
                pack_state(
                    &self.world.positions()[i],
                    &self.world.orientations()[i],
                    &self.world.velocities()[i],
                    buf,
                );
            }
        }
        let received = self.comm.exchange(out);
        let (pos, ori, vel) = self.world.state_mut();
        for (buf, list) in received.iter().zip(&self.recv) {
            for (values, &i) in buf.chunks_exact(STATE_WIDTH).zip(list) {
                let i = i as usize;
                (pos[i], ori[i], vel[i]) = unpack_state(values);
            }
        }
    }

    /// Rebuilds the layout: a new bisection when due, bodies that left
    /// their box migrate to its owner with the carried contact state that
    /// involves them, and ghosts are chosen anew. `carried` is keyed by
    /// local keys of the current layout; the result by those of the new
    /// one (entries whose bodies are no longer both local are dropped).
    /// Collective.
    pub fn rebuild<T: Carried>(
        &mut self,
        carried: &[(ContactKey, T)],
    ) -> Result<Vec<(ContactKey, T)>, MpiError> {
        let owned: Vec<Record> = (0..self.world.len())
            .filter(|&i| self.role[i] == Role::Owned && !self.machine[i])
            .map(|i| Record {
                budget: self.rebuild_budget(i),
                ..self.record_of(i)
            })
            .collect();
        // the joints' drives as the run has set them, the machine as rank
        // 0 moved it
        self.joints = self.global_joints();
        self.refresh_machines();
        // kinematic bodies moved: every rank moved them alike
        for (i, role) in self.role.iter().enumerate() {
            if *role == Role::Replicated
                && let Ok(k) = self
                    .replicated
                    .binary_search_by_key(&self.gid[i], |r| r.gid)
            {
                self.replicated[k].desc = self.world.body_desc(BodyId::from_index(i));
                self.replicated[k].force = self.world.user_force(BodyId::from_index(i));
            }
        }
        if self.rebalance_due() {
            self.rebalance(&owned);
        }
        let global: Vec<(GlobalKey, T)> = carried
            .iter()
            .map(|(k, v)| (self.global_key(k), *v))
            .collect();
        let (owned, global) = self.migrate(owned, global)?;
        self.place(owned)?;
        Ok(global
            .into_iter()
            .filter_map(|(k, v)| self.local_key(&k).map(|l| (l, v)))
            .collect())
    }

    /// Whether the next layout takes a new bisection: every
    /// `rebalance_every` layout checks, and while rank 0 holds every body.
    fn rebalance_due(&self) -> bool {
        let every = self.settings.rebalance_every;
        self.decomposition.is_on_first_rank() || (every > 0 && self.relayouts.is_multiple_of(every))
    }

    /// A new bisection of the owned bodies' positions. While fewer dynamic
    /// bodies than ranks exist, rank 0 holds them all; once a layout has
    /// been cut, a bisection that would leave a box thinner than the
    /// largest particle is not taken (the boxes stay as they are).
    /// Collective.
    fn rebalance(&mut self, owned: &[Record]) {
        let size = self.comm.size();
        let count = self.comm.sum(&[owned.len() as f64])[0] as usize;
        if count < size {
            self.decomposition = Decomposition::on_first_rank(size);
            return;
        }
        let positions: Vec<Vec3> = owned.iter().map(|r| r.desc.position).collect();
        let cut = Decomposition::bisect(&self.comm, &positions);
        if cut.check_widths(2.0 * self.largest_radius).is_ok() {
            self.decomposition = cut;
        }
    }

    /// Sends every owned body outside this rank's box to its new owner,
    /// with the carried entries that involve it; returns the bodies this
    /// rank now owns and the entries it now holds (sorted, deduplicated).
    fn migrate<T: Carried>(
        &mut self,
        owned: Vec<Record>,
        carried: Vec<(GlobalKey, T)>,
    ) -> Result<Migrated<T>, MpiError> {
        let (rank, size) = (self.comm.rank(), self.comm.size());
        let mut keep = Vec::with_capacity(owned.len());
        let mut leaving: Vec<(u64, usize)> = Vec::new();
        let mut bodies = vec![Vec::new(); size];
        for r in owned {
            let dest = self.decomposition.owner(&r.desc.position);
            if dest == rank {
                keep.push(r);
            } else {
                leaving.push((r.gid, dest));
                pack_body(&r, &mut bodies[dest]);
            }
        }
        leaving.sort_unstable();
        let dest_of = |g: u64| {
            leaving
                .binary_search_by_key(&g, |x| x.0)
                .ok()
                .map(|k| leaving[k].1)
        };
        let mut entries = vec![Vec::new(); size];
        for (key, value) in &carried {
            let (da, db) = (dest_of(key.0), dest_of(key.1));
            for dest in [da, db.filter(|d| Some(*d) != da)].into_iter().flatten() {
                pack_entry(key, value, &mut entries[dest]);
            }
        }
        let messages: Vec<Vec<f64>> = bodies
            .into_iter()
            .zip(entries)
            .map(|(b, e)| {
                let mut m = vec![(b.len() / BODY_WIDTH) as f64];
                m.extend(b);
                m.extend(e);
                m
            })
            .collect();
        let mut all = carried;
        for m in self.comm.exchange(messages) {
            let n = m.first().map_or(0, |&x| x as usize);
            let (head, tail) = m[1..].split_at(n * BODY_WIDTH);
            for values in head.chunks_exact(BODY_WIDTH) {
                keep.push(unpack_body(values));
            }
            for values in tail.chunks_exact(3 + T::WIDTH) {
                all.push(unpack_entry(values));
            }
        }
        keep.sort_by_key(|r| r.gid);
        all.sort_by_key(|e| e.0);
        all.dedup_by(|a, b| a.0 == b.0);
        Ok((keep, all))
    }

    /// Builds the local world from this rank's owned particles: ghosts are
    /// exchanged with every rank whose box is within the ghost layer's
    /// width, the replicated bodies, the machine bodies (owned on rank 0,
    /// ghosts of rank 0 elsewhere) and the joints added. Collective.
    fn place(&mut self, owned: Vec<Record>) -> Result<(), MpiError> {
        let (rank, size) = (self.comm.rank(), self.comm.size());
        let mut out = vec![Vec::new(); size];
        // the owned particles (machine bodies are never packed: every
        // rank adds its own records of them below)
        for r in &owned {
            let width = self.width_of(r.budget);
            for s in self.decomposition.ranks_near(&r.desc.position, width, rank) {
                pack_body(r, &mut out[s]);
            }
        }
        let received = self.comm.exchange(out);
        let mut all: Vec<(Record, Role)> = owned.into_iter().map(|r| (r, Role::Owned)).collect();
        for (s, buf) in received.iter().enumerate() {
            all.extend(
                buf.chunks_exact(BODY_WIDTH)
                    .map(|v| (unpack_body(v), Role::Ghost(s))),
            );
        }
        all.extend(
            self.replicated
                .iter()
                .map(|r| (r.clone(), Role::Replicated)),
        );
        let machine_role = if rank == 0 {
            Role::Owned
        } else {
            Role::Ghost(0)
        };
        all.extend(self.machines.iter().map(|r| (r.clone(), machine_role)));
        all.sort_by_key(|(r, _)| r.gid);
        let mut world = self.template.clone();
        for (r, _) in &all {
            let i = world.add_body(r.desc.clone()).map_err(step)?;
            world.set_force(i, r.force.0, r.force.1).map_err(step)?;
        }
        self.gid = all.iter().map(|(r, _)| r.gid).collect();
        self.role = all.iter().map(|(_, role)| *role).collect();
        self.budget = all.iter().map(|(r, _)| r.budget).collect();
        self.sweep.clear();
        restore_memberships(&mut world, &self.gid, all.iter().map(|(r, _)| r))?;
        self.machine = self.gid.iter().map(|&g| self.is_machine(g)).collect();
        for (k, j) in self.joints.iter().enumerate() {
            let local = |b: BodyId| {
                self.gid
                    .binary_search(&(b.index() as u64))
                    .map(BodyId::from_index)
                    .map_err(|_| MpiError::UnsupportedJoint {
                        joint: k,
                        bodies: [j.body_a.index(), j.body_b.index()],
                        reason: "a body the rank does not hold",
                    })
            };
            let joint = Joint {
                body_a: local(j.body_a)?,
                body_b: local(j.body_b)?,
                ..*j
            };
            world.add_joint(joint).map_err(step)?;
        }
        self.reference = world.positions().to_vec();
        self.world = world;
        // who holds my owned bodies: the same test the senders made
        let mut send = vec![Vec::new(); size];
        let mut recv = vec![Vec::new(); size];
        for (i, role) in self.role.iter().enumerate() {
            match *role {
                Role::Owned => {
                    let (p, width) = (&self.world.positions()[i], self.width_of(self.budget[i]));
                    for s in self.holders_of(self.gid[i], p, width) {
                        send[s].push(i as u32);
                    }
                }
                Role::Ghost(s) => recv[s].push(i as u32),
                Role::Replicated => {}
            }
        }
        (self.send, self.recv) = (send, recv);
        self.rebuilds += 1;
        self.relayouts += 1;
        self.stale = false;
        Ok(())
    }

    /// Makes every rank's machine records rank 0's: rank 0 takes them from
    /// its world, and sends their positions, orientations and velocities
    /// to the others (their shapes, masses and materials never change).
    /// Collective.
    fn refresh_machines(&mut self) {
        if self.machines.is_empty() {
            return;
        }
        let (rank, size) = (self.comm.rank(), self.comm.size());
        let mut out = vec![Vec::new(); size];
        // masses and motion types as every rank set them alike (an
        // aggregate body formed or retired), the state as rank 0 has it
        for m in &mut self.machines {
            if let Ok(i) = self.gid.binary_search(&m.gid) {
                m.desc = self.world.body_desc(BodyId::from_index(i));
                m.force = self.world.user_force(BodyId::from_index(i));
            }
        }
        if rank == 0 {
            let mut state = Vec::with_capacity(self.machines.len() * STATE_WIDTH);
            for m in &self.machines {
                let d = &m.desc;
                pack_state(&d.position, &d.orientation, &d.velocity, &mut state);
            }
            for o in out.iter_mut().skip(1) {
                o.clone_from(&state);
            }
        }
        let received = self.comm.exchange(out);
        if rank != 0 {
            for (m, values) in self
                .machines
                .iter_mut()
                .zip(received[0].chunks_exact(STATE_WIDTH))
            {
                let d = &mut m.desc;
                (d.position, d.orientation, d.velocity) = unpack_state(values);
            }
        }
    }

    /// Whether global body `gid` is a machine body.
    fn is_machine(&self, gid: u64) -> bool {
        self.machine_gids.binary_search(&gid).is_ok()
    }

    /// The other ranks that hold this rank's owned body `gid` at
    /// `position` as a ghost: every rank for a machine body, else those
    /// whose box is within `width`.
    fn holders_of<'a>(
        &'a self,
        gid: u64,
        position: &'a Vec3,
        width: f64,
    ) -> impl Iterator<Item = usize> + 'a {
        let (rank, size) = (self.comm.rank(), self.comm.size());
        let machine = self.is_machine(gid);
        let every = machine.then(|| (0..size).filter(move |&s| s != rank));
        let near = (!machine).then(|| self.decomposition.ranks_near(position, width, rank));
        every
            .into_iter()
            .flatten()
            .chain(near.into_iter().flatten())
    }

    /// The local world's joints with their bodies by global index.
    fn global_joints(&self) -> Vec<Joint> {
        let global = |b: BodyId| BodyId::from_index(self.gid[b.index()] as usize);
        self.world
            .joints()
            .iter()
            .map(|j| Joint {
                body_a: global(j.body_a),
                body_b: global(j.body_b),
                ..*j
            })
            .collect()
    }

    /// `count` summed over the ranks (each rank's own count, such as its
    /// owned contacts). Collective.
    pub fn total(&self, count: usize) -> usize {
        self.comm.sum(&[count as f64])[0] as usize
    }

    /// Kinetic energy `Σ ½ m v² + ½ ωᵀ I ω` and linear momentum of the
    /// owned bodies, summed over ranks in rank order. Collective.
    pub fn owned_energy_momentum(&self) -> (f64, Vec3) {
        let mut local = [0.0; 4];
        for (i, r) in self.role.iter().enumerate() {
            if *r != Role::Owned {
                continue;
            }
            if let Some(m) = &self.world.mass_properties()[i] {
                let v = &self.world.velocities()[i];
                let iw = m.world_inertia(&self.world.orientations()[i]) * v.angular;
                local[0] += 0.5 * m.mass * v.linear.norm_squared() + 0.5 * v.angular.dot(&iw);
                for k in 0..3 {
                    local[1 + k] += m.mass * v.linear[k];
                }
            }
        }
        let total = self.comm.sum(&local);
        (total[0], Vec3::new(total[1], total[2], total[3]))
    }

    /// The whole scene, gathered on rank 0 in global order (`None` on the
    /// other ranks). Collective.
    pub fn gather(&self) -> Result<Option<World>, MpiError> {
        let mut out = vec![Vec::new(); self.comm.size()];
        for (i, r) in self.role.iter().enumerate() {
            if *r == Role::Owned && !self.machine[i] {
                pack_body(&self.record_of(i), &mut out[0]);
            }
        }
        let received = self.comm.exchange(out);
        if self.comm.rank() != 0 {
            return Ok(None);
        }
        let mut all: Vec<Record> = received
            .iter()
            .flat_map(|b| b.chunks_exact(BODY_WIDTH).map(unpack_body))
            .collect();
        all.extend(
            (0..self.world.len())
                .filter(|&i| self.role[i] == Role::Replicated || self.machine[i])
                .map(|i| self.record_of(i)),
        );
        all.sort_by_key(|r| r.gid);
        let mut world = self.template.clone();
        for r in &all {
            let i = world.add_body(r.desc.clone()).map_err(step)?;
            world.set_force(i, r.force.0, r.force.1).map_err(step)?;
        }
        let gids: Vec<u64> = all.iter().map(|r| r.gid).collect();
        restore_memberships(&mut world, &gids, all.iter())?;
        for j in self.global_joints() {
            world.add_joint(j).map_err(step)?;
        }
        Ok(Some(world))
    }

    /// The owned bodies alone, as a world (for output).
    pub fn owned_world(&self) -> Result<World, MpiError> {
        let mut world = self.template.clone();
        for (i, r) in self.role.iter().enumerate() {
            if *r == Role::Owned {
                let k = world
                    .add_body(self.world.body_desc(BodyId::from_index(i)))
                    .map_err(step)?;
                let (f, t) = self.world.user_force(BodyId::from_index(i));
                world.set_force(k, f, t).map_err(step)?;
            }
        }
        Ok(world)
    }

    /// Makes every rank return the lowest failing rank's error, so that no
    /// rank goes on to a collective call the others never make.
    /// Collective.
    pub fn agree<T>(&self, result: Result<T, String>) -> Result<T, MpiError> {
        self.agree_ranked(result, false)
    }

    /// [`Self::agree`], where a `secondary` error (one that says another
    /// rank failed: [`ndem_step::StepError::FailedElsewhere`]) is chosen
    /// only when no rank has a primary one. Collective.
    pub fn agree_ranked<T>(
        &self,
        result: Result<T, String>,
        secondary: bool,
    ) -> Result<T, MpiError> {
        let (rank, size) = (self.comm.rank(), self.comm.size());
        let failing = match (&result, secondary) {
            (Ok(_), _) => f64::INFINITY,
            (Err(_), false) => rank as f64,
            (Err(_), true) => (size + rank) as f64,
        };
        let first = -self.comm.max(&[-failing])[0];
        if first.is_infinite() {
            return result.map_err(|message| MpiError::Step { rank, message });
        }
        let first = first as usize % size;
        let mut out = vec![Vec::new(); self.comm.size()];
        if let Err(message) = &result
            && first == rank
        {
            let bytes: Vec<f64> = message.bytes().map(f64::from).collect();
            out.iter_mut().for_each(|o| o.clone_from(&bytes));
        }
        let received = self.comm.exchange(out);
        let bytes: Vec<u8> = received[first].iter().map(|&b| b as u8).collect();
        let message = String::from_utf8_lossy(&bytes).into_owned();
        Err(MpiError::Step {
            rank: first,
            message,
        })
    }
}

/// The ghost layer's skin: the setting, or half the smallest radius (∞
/// while the scene has no sphere).
fn skin_of(settings: &DomainSettings, smallest_radius: f64) -> f64 {
    if settings.skin > 0.0 {
        settings.skin
    } else {
        0.5 * smallest_radius
    }
}

fn step(e: ndem_step::StepError) -> MpiError {
    MpiError::Step {
        rank: usize::MAX,
        message: e.to_string(),
    }
}

/// Body `i` of `world` as a record, its host's global index by `gid_of`.
fn record_in(world: &World, i: usize, gid_of: impl Fn(usize) -> u64, budget: f64) -> Record {
    Record {
        gid: gid_of(i),
        budget,
        desc: world.body_desc(BodyId::from_index(i)),
        force: world.user_force(BodyId::from_index(i)),
        membership: world.membership(i).map(|m| GlobalMembership {
            host: gid_of(m.host),
            offset: m.offset,
            relative_orientation: m.relative_orientation,
        }),
    }
}

/// Restores the memberships of `records`, added to `world` in order with
/// global indices `gids` (ascending): each member's host must be one of
/// them.
fn restore_memberships<'a>(
    world: &mut World,
    gids: &[u64],
    records: impl Iterator<Item = &'a Record>,
) -> Result<(), MpiError> {
    for (k, r) in records.enumerate() {
        let Some(m) = &r.membership else { continue };
        let host = gids
            .binary_search(&m.host)
            .map_err(|_| MpiError::Unsupported {
                body: r.gid as usize,
                reason: "a member whose aggregate body the rank does not hold",
            })?;
        let membership = ndem_step::Membership {
            host,
            offset: m.offset,
            relative_orientation: m.relative_orientation,
        };
        world.restore_membership(k, membership).map_err(step)?;
    }
    Ok(())
}

/// Checks that a scene's dynamic bodies are free spheres: no joints, no
/// other dynamic shape (the smooth DEM's distributed step has no machine).
pub(crate) fn check_free_spheres(scene: &World) -> Result<(), MpiError> {
    if let Some(j) = scene.joints().first() {
        return Err(MpiError::UnsupportedJoint {
            joint: 0,
            bodies: [j.body_a.index(), j.body_b.index()],
            reason: "joints (machines) run distributed with NDEM only, not the smooth DEM",
        });
    }
    let dynamic = |&&i: &&u64| scene.motions()[i as usize] == Motion::Dynamic;
    match machine_bodies(scene).iter().find(dynamic) {
        Some(&i) => Err(MpiError::Unsupported {
            body: i as usize,
            reason: "a dynamic body that is not a sphere",
        }),
        None => Ok(()),
    }
}

/// The machine bodies of `scene` (module docs), ascending: dynamic bodies
/// that are not spheres or that a joint holds, and bodies without geometry
/// (rigid aggregates' bodies, retired ones included: model reduction
/// makes them dynamic again).
fn machine_bodies(scene: &World) -> Vec<u64> {
    let mut jointed = vec![false; scene.len()];
    for j in scene.joints() {
        for b in [j.body_a, j.body_b] {
            if let Some(x) = jointed.get_mut(b.index()) {
                *x = true;
            }
        }
    }
    (0..scene.len())
        .filter(|&i| {
            let shape = &scene.shapes()[i];
            matches!(shape, Shape::Empty)
                || (scene.motions()[i] == Motion::Dynamic
                    && (jointed[i] || !matches!(shape, Shape::Sphere { .. })))
        })
        .map(|i| i as u64)
        .collect()
}

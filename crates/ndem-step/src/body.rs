//! Bodies (structure of arrays) and the world that holds them.

use crate::StepError;
use crate::handles::{BodyId, BodyRange, JointId, MaterialId};
pub use crate::state::Motion;
use crate::state::{BodyKinds, BodyState, StateStamp};
use ndem_collide::{BodyView, CollideError, Shape};
use ndem_math::{
    InverseMass, MassProperties, Material, PairOverride, PairProperties, Quat, SettingError, Vec3,
    Velocity6,
};

/// Everything needed to add one body.
#[derive(Debug, Clone)]
pub struct BodyDesc {
    /// Collision shape, body frame.
    pub shape: Shape,
    /// Its material ([`World::add_material`]).
    pub material: MaterialId,
    /// Motion type.
    pub motion: Motion,
    /// Mass properties; `None` computes them from the shape and the
    /// material density (spheres, boxes, cylinders). Ignored for
    /// non-dynamic bodies.
    pub mass: Option<MassProperties>,
    /// Centre position.
    pub position: Vec3,
    /// Orientation.
    pub orientation: Quat,
    /// Velocity (prescribed for kinematic bodies).
    pub velocity: Velocity6,
    /// Conveyor-style surface velocity (world frame) added to the material
    /// velocity of this body's surface at its contacts (usually on a static
    /// body).
    pub surface_velocity: Vec3,
    /// Collision group: bodies of the same non-zero group never touch
    /// (walls of a triaxial cell overlapping at their edges). 0: none.
    pub collision_group: u32,
}

impl BodyDesc {
    /// `Δt (|v| + |ω| r_bound)`: how far any point of the body can travel
    /// in a step of `dt` (zero for a static body), as
    /// [`World::sweep_distances`] forms it for a world's bodies.
    pub fn sweep_distance(&self, dt: f64) -> f64 {
        sweep_distance(
            self.motion,
            &self.velocity,
            self.shape.bounding_radius(),
            dt,
        )
    }

    /// A dynamic body at rest.
    pub fn dynamic(shape: Shape, material: MaterialId, position: Vec3) -> Self {
        Self {
            shape,
            material,
            motion: Motion::Dynamic,
            mass: None,
            position,
            orientation: Quat::identity(),
            velocity: Velocity6::ZERO,
            surface_velocity: Vec3::zeros(),
            collision_group: 0,
        }
    }

    /// A dynamic sphere of `radius` at rest (a radius that is not finite
    /// and positive is [`Shape::sphere`]'s error).
    pub fn sphere(radius: f64, material: MaterialId, position: Vec3) -> Result<Self, CollideError> {
        Ok(Self::dynamic(Shape::sphere(radius)?, material, position))
    }

    /// A static body.
    pub fn fixed(shape: Shape, material: MaterialId, position: Vec3) -> Self {
        Self {
            motion: Motion::Static,
            ..Self::dynamic(shape, material, position)
        }
    }

    /// A static floor: the plane z = 0, the half space z ≤ 0 solid.
    pub fn floor(material: MaterialId) -> Self {
        let floor = Shape::HalfSpace { normal: Vec3::z() };
        Self::fixed(floor, material, Vec3::zeros())
    }

    /// Sets the orientation.
    pub fn with_orientation(mut self, q: Quat) -> Self {
        self.orientation = q;
        self
    }

    /// Sets the collision group (0: none).
    pub fn with_collision_group(mut self, group: u32) -> Self {
        self.collision_group = group;
        self
    }

    /// Sets the velocity.
    pub fn with_velocity(mut self, v: Velocity6) -> Self {
        self.velocity = v;
        self
    }

    /// Sets the conveyor surface velocity (world frame).
    pub fn with_surface_velocity(mut self, v: Vec3) -> Self {
        self.surface_velocity = v;
        self
    }
}

/// A per-body vector that is zero for most bodies of most scenes (user
/// forces and torques, conveyor surface velocities): it holds nothing until
/// some body is given a value other than `+0.0` in every component, and a
/// body's value for every body from then on. A packing of `10⁵` spheres
/// saves 24 bytes per body for each of the three.
#[derive(Debug, Clone, Default)]
pub(crate) struct ZeroUnlessSet {
    /// Empty, or one value per body.
    values: Vec<Vec3>,
}

impl ZeroUnlessSet {
    /// The value of body `i` (zero while nothing is held).
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Vec3 {
        self.values.get(i).copied().unwrap_or_else(Vec3::zeros)
    }

    /// Appends the value of a new body, the `index`-th.
    pub(crate) fn push(&mut self, index: usize, value: Vec3) {
        if self.values.is_empty() {
            if is_positive_zero(&value) {
                return;
            }
            self.values.resize(index, Vec3::zeros());
        }
        self.values.push(value);
    }

    /// Sets the value of body `i` of `bodies`.
    pub(crate) fn set(&mut self, i: usize, value: Vec3, bodies: usize) {
        if self.values.is_empty() {
            if is_positive_zero(&value) {
                return;
            }
            self.values.resize(bodies, Vec3::zeros());
        }
        self.values[i] = value;
    }

    /// Room for `additional` more bodies once values are held.
    pub(crate) fn try_reserve_exact(
        &mut self,
        additional: usize,
    ) -> Result<(), std::collections::TryReserveError> {
        if !self.values.is_empty() {
            self.values.try_reserve_exact(additional)?;
        }
        Ok(())
    }
}

/// `true` when every component is `+0.0` (bit for bit, so that a `-0.0`
/// that was given is kept).
fn is_positive_zero(v: &Vec3) -> bool {
    v.iter().all(|x| x.to_bits() == 0)
}

/// Where `f64`'s `Sum` starts (`-0.0`): a sum formed by a loop of `+=`
/// from here is the iterator's sum of the same terms, bit for bit.
fn empty_sum() -> f64 {
    std::iter::empty::<f64>().sum()
}

/// Sums over a world's dynamic bodies (members counted through their
/// host), formed in one pass by [`World::energies_and_momentum`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BodySums {
    /// [`World::kinetic_energy`] \[J\].
    pub kinetic_energy: f64,
    /// [`World::potential_energy`] \[J\].
    pub potential_energy: f64,
    /// The linear momentum of [`World::momentum`] \[kg m/s\].
    pub momentum: Vec3,
    /// The angular momentum about the origin of [`World::momentum`]
    /// \[kg m²/s\].
    pub angular_momentum: Vec3,
}

impl BodySums {
    /// Nothing summed yet: the energies start where `f64`'s `Sum` starts,
    /// the momenta at zero.
    fn empty() -> Self {
        Self {
            kinetic_energy: empty_sum(),
            potential_energy: empty_sum(),
            momentum: Vec3::zeros(),
            angular_momentum: Vec3::zeros(),
        }
    }
}

/// Bodies, materials and gravity. Per-body data is stored as structure of
/// arrays, indexed by body id (the index returned by [`World::add_body`]).
#[derive(Debug, Clone)]
pub struct World {
    /// Materials, indexed by `BodyDesc::material`.
    pub materials: Vec<Material>,
    /// Gravitational acceleration [m/s²].
    pub gravity: Vec3,
    /// Shapes, motions, mass properties, fixed flags and memberships;
    /// every change renews their stamp ([`crate::state`]).
    pub(crate) kinds: BodyKinds,
    /// Each body's index into `materials` (4 bytes: a world has fewer
    /// than 2³² materials, [`Self::add_body`] checks).
    pub(crate) material: Vec<u32>,
    /// Positions, orientations and velocities; every write renews their
    /// stamp ([`crate::state`]).
    pub(crate) state: BodyState,
    pub(crate) surface_velocity: ZeroUnlessSet,
    pub(crate) collision_group: Vec<u32>,
    pub(crate) force: ZeroUnlessSet,
    pub(crate) torque: ZeroUnlessSet,
    pub(crate) joints: Vec<crate::Joint>,
    pub(crate) membership_version: u64,
    /// Per-pair contact parameters, keyed by the material pair with the
    /// smaller index first.
    pub(crate) pairs: std::collections::BTreeMap<(usize, usize), PairOverride>,
}

impl World {
    /// An empty world with the given materials and gravity.
    pub fn new(materials: Vec<Material>, gravity: Vec3) -> Result<Self, StepError> {
        for m in &materials {
            m.validate()?;
        }
        StepError::require(
            gravity.iter().all(|x| x.is_finite()),
            "gravity",
            "must be finite",
        )?;
        Ok(Self {
            materials,
            gravity,
            kinds: BodyKinds::new(),
            material: Vec::new(),
            state: BodyState::new(),
            surface_velocity: ZeroUnlessSet::default(),
            collision_group: Vec::new(),
            force: ZeroUnlessSet::default(),
            torque: ZeroUnlessSet::default(),
            joints: Vec::new(),
            membership_version: 0,
            pairs: std::collections::BTreeMap::new(),
        })
    }

    /// A world with one `material`, standard gravity (−9.81 m/s² along z)
    /// and a static floor, the plane z = 0, as body 0: the start of most
    /// granular scenes.
    pub fn on_floor(material: Material) -> Result<Self, StepError> {
        let mut world = Self::new(vec![material], Vec3::new(0.0, 0.0, -9.81))?;
        world.add_body(BodyDesc::floor(MaterialId::from_index(0)))?;
        Ok(world)
    }

    /// Adds a material after checking it; returns its handle. The
    /// materials given to [`World::new`] are the first ones, in order
    /// ([`World::material_ids`]).
    pub fn add_material(&mut self, material: Material) -> Result<MaterialId, StepError> {
        material.validate()?;
        self.materials.push(material);
        Ok(MaterialId::from_index(self.materials.len() - 1))
    }

    /// The handles of the world's materials, in order.
    pub fn material_ids(&self) -> impl ExactSizeIterator<Item = MaterialId> + use<> {
        (0..self.materials.len()).map(MaterialId::from_index)
    }

    /// The handles of the world's bodies, in order.
    pub fn body_ids(&self) -> impl ExactSizeIterator<Item = BodyId> + use<> {
        (0..self.len()).map(BodyId::from_index)
    }

    /// Gives the pair of materials `a`, `b` (in either order) its own
    /// contact parameters, replacing those combined from the two materials
    /// (`ndem_math::PairOverride`); validated.
    pub fn set_pair(
        &mut self,
        a: MaterialId,
        b: MaterialId,
        pair: PairOverride,
    ) -> Result<(), StepError> {
        let (a, b) = (a.index(), b.index());
        for (m, field) in [(a, "pairs.materials"), (b, "pairs.materials")] {
            StepError::require(
                m < self.materials.len(),
                field,
                "refers to a material that does not exist",
            )?;
        }
        pair.validate()?;
        self.pairs.insert((a.min(b), a.max(b)), pair);
        Ok(())
    }

    /// The per-pair contact parameters, by material pair (smaller index
    /// first).
    pub fn pairs(&self) -> impl Iterator<Item = ((usize, usize), &PairOverride)> {
        self.pairs.iter().map(|(k, v)| (*k, v))
    }

    /// The contact properties of two bodies' materials with curvature
    /// radii `radius_a`, `radius_b`: combined from the materials, or the
    /// pair's own where [`Self::set_pair`] gave them.
    pub fn pair_properties(
        &self,
        material_a: usize,
        radius_a: f64,
        material_b: usize,
        radius_b: f64,
    ) -> Result<PairProperties, StepError> {
        let pair = PairProperties::combine(
            &self.materials[material_a],
            radius_a,
            &self.materials[material_b],
            radius_b,
        )?;
        Ok(
            match self
                .pairs
                .get(&(material_a.min(material_b), material_a.max(material_b)))
            {
                Some(o) => o.apply(&pair),
                None => pair,
            },
        )
    }

    /// Adds a joint (built with [`crate::Joint::lock`],
    /// [`crate::Joint::hinge`], [`crate::Joint::actuator`] and the like)
    /// after [`crate::Joint::validate`]; returns its handle.
    pub fn add_joint(&mut self, joint: crate::Joint) -> Result<JointId, StepError> {
        joint.validate(self.joints.len(), self.len())?;
        self.joints.push(joint);
        Ok(JointId::from_index(self.joints.len() - 1))
    }

    /// The joints.
    pub fn joints(&self) -> &[crate::Joint] {
        &self.joints
    }

    /// Mutable access to the joints (e.g. to change a motor's target).
    /// Prefer [`World::set_joint_drive`], which checks the new drive.
    pub fn joints_mut(&mut self) -> &mut [crate::Joint] {
        &mut self.joints
    }

    /// Replaces the drive of joint `joint` after checking it (a dig cycle's
    /// next target, say).
    pub fn set_joint_drive(
        &mut self,
        joint: JointId,
        drive: Option<crate::Drive>,
    ) -> Result<(), StepError> {
        self.joints
            .get_mut(joint.index())
            .ok_or(StepError::InvalidSettings {
                field: "joint",
                reason: "no joint with this index",
            })?
            .set_drive(drive)
    }

    /// Adds a body after checking it; returns its handle.
    pub fn add_body(&mut self, desc: BodyDesc) -> Result<BodyId, StepError> {
        let checked = self.check_desc(self.len(), &desc)?;
        Ok(self.push_body(desc, checked))
    }

    /// Adds one dynamic sphere of `radius` and `material` at rest at
    /// `position` ([`BodyDesc::sphere`], [`World::add_body`]).
    pub fn add_sphere(
        &mut self,
        radius: f64,
        material: MaterialId,
        position: Vec3,
    ) -> Result<BodyId, StepError> {
        self.add_body(BodyDesc::sphere(radius, material, position)?)
    }

    /// Adds bodies after checking all of them: either every body is added
    /// or none is, and the error names the first that fails by the index it
    /// would have had. The per-body vectors grow as `push` grows them, so
    /// many small insertions cost no more than one large one
    /// ([`World::try_reserve`] sizes a world that knows its size exactly).
    pub fn add_bodies(
        &mut self,
        descs: impl IntoIterator<Item = BodyDesc>,
    ) -> Result<BodyRange, StepError> {
        let start = self.len();
        let descs: Vec<BodyDesc> = descs.into_iter().collect();
        let checked = descs
            .iter()
            .enumerate()
            .map(|(k, d)| self.check_desc(start + k, d))
            .collect::<Result<Vec<_>, _>>()?;
        for (desc, checked) in descs.into_iter().zip(checked) {
            self.push_body(desc, checked);
        }
        Ok(BodyRange::new(start, self.len()))
    }

    /// Adds dynamic spheres of `radius` and `material` at rest at
    /// `positions` ([`World::add_bodies`]: all or none).
    pub fn add_spheres(
        &mut self,
        radius: f64,
        material: MaterialId,
        positions: impl IntoIterator<Item = Vec3>,
    ) -> Result<BodyRange, StepError> {
        let shape = Shape::sphere(radius)?;
        self.add_bodies(
            positions
                .into_iter()
                .map(|p| BodyDesc::dynamic(shape.clone(), material, p)),
        )
    }

    /// Adds dynamic spheres of `radius` and `material` touching on a simple
    /// cubic lattice of `counts = [n_x, n_y, n_z]` sites, x fastest: centres
    /// at `(2r i, 2r j, r + 2r k)`, so the lowest layer rests on the plane
    /// z = 0 ([`World::on_floor`]); a column is `[1, 1, n]`.
    pub fn add_sphere_stack(
        &mut self,
        radius: f64,
        material: MaterialId,
        [nx, ny, nz]: [usize; 3],
    ) -> Result<BodyRange, StepError> {
        let r = radius;
        let site = move |(i, j, k): (usize, usize, usize)| {
            Vec3::new(
                2.0 * r * i as f64,
                2.0 * r * j as f64,
                r + 2.0 * r * k as f64,
            )
        };
        let sites =
            (0..nz).flat_map(move |k| (0..ny).flat_map(move |j| (0..nx).map(move |i| (i, j, k))));
        self.add_spheres(radius, material, sites.map(site))
    }

    /// Checks `desc` as the description of body `i`; returns its material
    /// index and mass properties.
    fn check_desc(
        &self,
        i: usize,
        desc: &BodyDesc,
    ) -> Result<(u32, Option<MassProperties>), StepError> {
        desc.shape.validate()?;
        let unknown = || StepError::UnknownMaterial {
            body: i,
            material: desc.material.index(),
            count: self.materials.len(),
        };
        let Some(density) = self.materials.get(desc.material.index()).map(|m| m.density) else {
            return Err(unknown());
        };
        let material = u32::try_from(desc.material.index()).map_err(|_| unknown())?;
        check_vec("position", i, &desc.position)?;
        check_vec("velocity", i, &desc.velocity.linear)?;
        check_vec("angular_velocity", i, &desc.velocity.angular)?;
        check_vec("surface_velocity", i, &desc.surface_velocity)?;
        if !desc.orientation.coords.iter().all(|x| x.is_finite()) {
            return Err(StepError::NonFiniteState {
                field: "orientation",
                body: i,
            });
        }
        let mass = match desc.motion {
            Motion::Dynamic => Some(match desc.mass {
                Some(m) => MassProperties::new(m.mass, m.principal_inertia)?,
                None => default_mass(&desc.shape, density, i)?,
            }),
            _ => None,
        };
        Ok((material, mass))
    }

    /// Appends a checked body.
    fn push_body(
        &mut self,
        desc: BodyDesc,
        (material, mass): (u32, Option<MassProperties>),
    ) -> BodyId {
        let i = self.len();
        let velocity = if desc.motion == Motion::Static {
            Velocity6::ZERO
        } else {
            desc.velocity
        };
        self.kinds.push(desc.shape, desc.motion, mass);
        self.material.push(material);
        self.state.push(desc.position, desc.orientation, velocity);
        self.surface_velocity.push(i, desc.surface_velocity);
        self.collision_group.push(desc.collision_group);
        self.force.push(i, Vec3::zeros());
        self.torque.push(i, Vec3::zeros());
        BodyId::from_index(i)
    }

    /// Room for exactly `additional` more bodies, so that a scene that
    /// knows its size holds no growth slack in its per-body vectors. A
    /// count the allocator refuses (a mistyped size: `10¹⁵` spheres asked
    /// for 3.2·10¹⁶ bytes) is a
    /// typed error naming `bodies`; the world may then hold room for some
    /// of them.
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), StepError> {
        let refused = |_| StepError::InvalidSettings {
            field: "bodies",
            reason: "no room for that many more bodies (the allocation was refused)",
        };
        self.kinds.try_reserve_exact(additional).map_err(refused)?;
        self.material
            .try_reserve_exact(additional)
            .map_err(refused)?;
        self.state.try_reserve_exact(additional).map_err(refused)?;
        self.surface_velocity
            .try_reserve_exact(additional)
            .map_err(refused)?;
        self.collision_group
            .try_reserve_exact(additional)
            .map_err(refused)?;
        self.force.try_reserve_exact(additional).map_err(refused)?;
        self.torque.try_reserve_exact(additional).map_err(refused)?;
        Ok(())
    }

    /// Number of bodies.
    pub fn len(&self) -> usize {
        self.shapes().len()
    }
    /// `true` when there are no bodies.
    pub fn is_empty(&self) -> bool {
        self.shapes().is_empty()
    }
    /// Number of dynamic bodies that carry their own degrees of freedom
    /// (free bodies and hosts; members are counted through their host).
    pub fn dynamic_count(&self) -> usize {
        (0..self.len())
            .filter(|&i| {
                self.motions()[i] == Motion::Dynamic && self.kinds.membership()[i].is_none()
            })
            .count()
    }
    /// The position of `body`.
    ///
    /// # Panics
    /// When `body` is not a body of the world, as indexing a slice does.
    pub fn position(&self, body: BodyId) -> Vec3 {
        self.state.positions()[body.index()]
    }
    /// The orientation of `body` (panics as [`World::position`]).
    pub fn orientation(&self, body: BodyId) -> Quat {
        self.state.orientations()[body.index()]
    }
    /// The velocity of `body` (panics as [`World::position`]).
    pub fn velocity(&self, body: BodyId) -> Velocity6 {
        self.state.velocities()[body.index()]
    }
    /// Positions, by [`BodyId::index`].
    pub fn positions(&self) -> &[Vec3] {
        self.state.positions()
    }
    /// Orientations.
    pub fn orientations(&self) -> &[Quat] {
        self.state.orientations()
    }
    /// Velocities.
    pub fn velocities(&self) -> &[Velocity6] {
        self.state.velocities()
    }
    /// Shapes.
    pub fn shapes(&self) -> &[Shape] {
        self.kinds.shapes()
    }
    /// Motion types.
    pub fn motions(&self) -> &[Motion] {
        self.kinds.motions()
    }
    /// Material index of each body (into [`Self::materials`]).
    pub fn body_materials(&self) -> &[u32] {
        &self.material
    }
    /// Mass properties (`None` for non-dynamic bodies).
    pub fn mass_properties(&self) -> &[Option<MassProperties>] {
        self.kinds.mass()
    }
    /// Surface velocity of a body (zero unless one was given).
    ///
    /// # Panics
    /// When `body` is not a body of the world, as indexing a slice does.
    pub fn surface_velocity(&self, body: BodyId) -> Vec3 {
        let body = body.index();
        self.assert_body(body);
        self.surface_velocity.get(body)
    }

    /// Panics when `body` is not a body of the world (the getters'
    /// indexing, for the per-body values that are not held as vectors).
    fn assert_body(&self, body: usize) {
        assert!(body < self.len(), "body {body} of {} bodies", self.len());
    }

    /// A typed error when `body` is not a body of the world.
    fn check_body(&self, field: &'static str, body: usize) -> Result<(), StepError> {
        if body < self.len() {
            Ok(())
        } else {
            Err(StepError::UnknownBody {
                field,
                body,
                count: self.len(),
            })
        }
    }

    /// Mutable positions, orientations and velocities, for other time
    /// integrators (e.g. the smooth DEM in `ndem-smooth`). Callers must keep
    /// the state finite and must not move static bodies.
    pub fn state_mut(&mut self) -> (&mut [Vec3], &mut [Quat], &mut [Velocity6]) {
        self.state.all_mut()
    }

    /// User force and torque on a body.
    ///
    /// # Panics
    /// When `body` is not a body of the world, as indexing a slice does.
    pub fn user_force(&self, body: BodyId) -> (Vec3, Vec3) {
        let body = body.index();
        self.assert_body(body);
        (self.force.get(body), self.torque.get(body))
    }

    /// The description that would re-create `body` in its current state
    /// (used by scene files and checkpoints).
    ///
    /// # Panics
    /// When `body` is not a body of the world, as indexing a slice does.
    pub fn body_desc(&self, body: BodyId) -> BodyDesc {
        let i = body.index();
        BodyDesc {
            shape: self.shapes()[i].clone(),
            material: MaterialId::from_index(self.material[i] as usize),
            motion: self.motions()[i],
            mass: self.mass_properties()[i],
            position: self.positions()[i],
            orientation: self.orientations()[i],
            velocity: self.velocities()[i],
            surface_velocity: self.surface_velocity.get(i),
            collision_group: self.collision_group[i],
        }
    }

    /// Sets the position of a body. The members of a host do not follow
    /// until [`World::co_move`] (the stepper co-moves every member after
    /// its velocity update); call it after moving a host by hand.
    pub fn set_position(&mut self, body: BodyId, position: Vec3) -> Result<(), StepError> {
        let body = body.index();
        self.check_body("position", body)?;
        check_vec("position", body, &position)?;
        self.state.positions_mut()[body] = position;
        Ok(())
    }

    /// Sets the velocity of a body (the prescribed one for kinematic bodies).
    pub fn set_velocity(&mut self, body: BodyId, velocity: Velocity6) -> Result<(), StepError> {
        let body = body.index();
        self.check_body("velocity", body)?;
        check_vec("velocity", body, &velocity.linear)?;
        check_vec("angular_velocity", body, &velocity.angular)?;
        if self.motions()[body] != Motion::Static {
            self.state.velocities_mut()[body] = velocity;
        }
        Ok(())
    }

    /// Sets the user force and torque on a body (applied every step until
    /// changed), in addition to gravity.
    pub fn set_force(&mut self, body: BodyId, force: Vec3, torque: Vec3) -> Result<(), StepError> {
        let body = body.index();
        self.check_body("force", body)?;
        check_vec("force", body, &force)?;
        check_vec("torque", body, &torque)?;
        let bodies = self.len();
        self.force.set(body, force, bodies);
        self.torque.set(body, torque, bodies);
        Ok(())
    }

    /// Inverse mass block of a body at its current orientation.
    ///
    /// # Panics
    /// When `body` is not a body of the world, as indexing a slice does.
    pub fn inverse_mass(&self, body: BodyId) -> InverseMass {
        self.inverse_mass_at(body.index())
    }

    /// [`World::inverse_mass`] of the body at `body` of the arrays.
    pub(crate) fn inverse_mass_at(&self, body: usize) -> InverseMass {
        if self.kinds.membership()[body].is_some() {
            // a member has no degrees of freedom of its own
            return InverseMass::INFINITE_MASS;
        }
        match self.mass_properties()[body] {
            Some(m) => m.inverse(&self.orientations()[body]),
            None => InverseMass::INFINITE_MASS,
        }
    }

    /// Collision view of the bodies with per-body speculative distances.
    pub fn body_view<'a>(&'a self, sweep: &'a [f64]) -> BodyView<'a> {
        BodyView {
            shapes: self.shapes(),
            positions: self.state.positions(),
            orientations: self.state.orientations(),
            fixed: self.kinds.fixed(),
            sweep,
            groups: if self.collision_group.iter().any(|&g| g != 0) {
                &self.collision_group
            } else {
                &[]
            },
        }
    }

    /// `Δt (|v| + |ω| r_bound)` per body: how far any point of the body can
    /// travel in one step at its current velocity (zero for static bodies).
    /// Gravity and applied forces are left out: with them every resting
    /// body would sweep `g Δt²` and a bed's near pairs would join its
    /// problem (the built-in `packing`, steps 51-101: 7 364 contacts on
    /// average against 6 717), while a body at rest that falls clear of
    /// its support overlaps by at most `g Δt²` at the next step.
    pub fn sweep_distances(&self, dt: f64, out: &mut Vec<f64>) {
        out.clear();
        out.extend((0..self.len()).map(|i| {
            let radius = self.shapes()[i].bounding_radius();
            sweep_distance(self.motions()[i], &self.velocities()[i], radius, dt)
        }));
    }

    /// Checks that every body's state is finite, that every material is
    /// valid, that every body's material exists and that every joint is
    /// valid (`materials` is a public field and [`World::joints_mut`] hands
    /// out the joints: a caller may have edited either since the bodies
    /// and joints were added).
    pub fn validate_state(&self) -> Result<(), StepError> {
        self.validate_state_unless(None)
    }

    /// The stamp of the current positions, orientations and velocities:
    /// it changes whenever they may have been written (every mutable
    /// access to them takes a fresh one), and is kept by a clone.
    pub fn state_stamp(&self) -> StateStamp {
        self.state.stamp()
    }

    /// The stamp of what the bodies are: their number, shapes, motions,
    /// mass properties and memberships. It changes whenever any of them
    /// may have changed (every mutable access takes a fresh one), so
    /// per-body records formed from them can be kept until it does.
    pub fn kinds_stamp(&self) -> StateStamp {
        self.kinds.stamp()
    }

    /// [`Self::validate_state`], passing over the per-body finiteness check
    /// of positions, orientations and velocities when their stamp is
    /// `trusted`: a stepper that left them finite at that stamp knows them
    /// unchanged since. Everything else (materials, joints, material
    /// indices, pair overrides) is checked as always.
    pub fn validate_state_unless(&self, trusted: Option<StateStamp>) -> Result<(), StepError> {
        for m in &self.materials {
            m.validate()?;
        }
        for (k, j) in self.joints.iter().enumerate() {
            j.validate(k, self.len())?;
        }
        for (i, &material) in self.material.iter().enumerate() {
            let material = material as usize;
            if material >= self.materials.len() {
                return Err(StepError::UnknownMaterial {
                    body: i,
                    material,
                    count: self.materials.len(),
                });
            }
        }
        for (&(a, b), pair) in &self.pairs {
            StepError::require(
                a < self.materials.len() && b < self.materials.len(),
                "pairs.materials",
                "refers to a material that does not exist",
            )?;
            pair.validate()?;
        }
        if trusted == Some(self.state.stamp()) {
            return Ok(());
        }
        // one branch-free pass first (an OR of the per-component tests,
        // which the compiler can vectorise); only when it finds something
        // is the culprit looked for
        let bad = |v: &Vec3| !v.x.is_finite() | !v.y.is_finite() | !v.z.is_finite();
        let mut any = self.positions().iter().fold(false, |acc, p| acc | bad(p));
        any |= self
            .velocities()
            .iter()
            .fold(false, |acc, v| acc | bad(&v.linear) | bad(&v.angular));
        any |= self.orientations().iter().fold(false, |acc, q| {
            acc | q.coords.iter().fold(false, |a, x| a | !x.is_finite())
        });
        if !any {
            return Ok(());
        }
        for i in 0..self.len() {
            check_vec("position", i, &self.positions()[i])?;
            check_vec("velocity", i, &self.velocities()[i].linear)?;
            check_vec("angular_velocity", i, &self.velocities()[i].angular)?;
            if !self.orientations()[i].coords.iter().all(|x| x.is_finite()) {
                return Err(StepError::NonFiniteState {
                    field: "orientation",
                    body: i,
                });
            }
        }
        Ok(())
    }
}

fn check_vec(field: &'static str, body: usize, v: &Vec3) -> Result<(), StepError> {
    if v.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(StepError::NonFiniteState { field, body })
    }
}

/// Mass properties of body `body`'s shape from the material density.
fn default_mass(shape: &Shape, density: f64, body: usize) -> Result<MassProperties, StepError> {
    use std::f64::consts::PI;
    Ok(match shape {
        Shape::Sphere { radius } => MassProperties::solid_sphere(density, *radius)?,
        Shape::Box { half_extents } => {
            MassProperties::solid_box(8.0 * half_extents.product() * density, *half_extents)?
        }
        Shape::Cylinder {
            radius,
            half_height,
        } => MassProperties::solid_cylinder(
            PI * radius * radius * 2.0 * half_height * density,
            *radius,
            *half_height,
        )?,
        other => {
            let shape = match other {
                Shape::Convex(_) => "convex hull",
                Shape::TriMesh(_) => "triangle mesh",
                Shape::HalfSpace { .. } => "half-space",
                Shape::Drum { .. } => "drum",
                _ => "shape without volume",
            };
            return Err(StepError::MassPropertiesNeeded { body, shape });
        }
    })
}

mod sums;
#[cfg(test)]
mod tests;

/// `Δt (|v| + |ω| r)` for a body of bounding radius `r`, zero when static.
fn sweep_distance(motion: Motion, v: &Velocity6, radius: f64, dt: f64) -> f64 {
    if motion == Motion::Static {
        0.0
    } else {
        dt * (v.linear.norm() + v.angular.norm() * radius)
    }
}

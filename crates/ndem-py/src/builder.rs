//! `ndem.SceneBuilder`: a scene from materials, numpy arrays of spheres,
//! walls, boxes, meshes, joints and emitters.

use ndem::collide::Shape;
use ndem::math::{Material, Quat, Vec3, Velocity6};
use ndem::scenes::file::EmitterSpec;
use ndem::scenes::{Emitter, Scene};
use ndem::step::{BodyDesc, BodyId, Joint, MaterialId, Motion, World};
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrays::{Vectors, ints, read_floats, read_vectors, vec3};
use crate::errors::{invalid, scene_error, step_error, value_error};
use crate::options::RunSettings;
use crate::simulation::Simulation;
use crate::state;

/// Builds a scene body by body; `build()` makes a `Simulation` of it.
///
/// Every method checks its input and raises `ValueError` naming the
/// argument; indices returned (bodies, joints, materials) are the ones the
/// `Simulation`'s arrays use.
#[pyclass(module = "ndem", name = "SceneBuilder")]
pub struct SceneBuilder {
    name: String,
    world: World,
    emitters: Vec<Emitter>,
    duration: f64,
}

impl SceneBuilder {
    fn material_id(&self, material: usize) -> PyResult<MaterialId> {
        let n = self.world.materials.len();
        if material < n {
            Ok(MaterialId::from_index(material))
        } else if n == 0 {
            Err(invalid(
                "material",
                "no material yet: add one with material()",
            ))
        } else {
            Err(invalid(
                "material",
                format!("no material {material} ({n} materials)"),
            ))
        }
    }

    fn add(&mut self, desc: BodyDesc) -> PyResult<usize> {
        self.world
            .add_body(desc)
            .map(BodyId::index)
            .map_err(step_error)
    }

    fn body_pair(&self, a: usize, b: usize) -> PyResult<(BodyId, BodyId)> {
        Ok((
            state::body(&self.world, "a", a)?,
            state::body(&self.world, "b", b)?,
        ))
    }

    fn add_joint(&mut self, joint: Result<Joint, ndem::step::StepError>) -> PyResult<usize> {
        let id = self
            .world
            .add_joint(joint.map_err(step_error)?)
            .map_err(step_error)?;
        Ok(id.index())
    }

    /// A joint of bodies `a` and `b` about `axis` through `anchor`, made
    /// by `make` after the arguments are checked.
    fn axis_joint(
        &mut self,
        (a, b): (usize, usize),
        anchor: [f64; 3],
        axis: [f64; 3],
        make: impl FnOnce(&World, BodyId, BodyId, Vec3, Vec3) -> Result<Joint, ndem::step::StepError>,
    ) -> PyResult<usize> {
        let (a, b) = self.body_pair(a, b)?;
        let j = make(
            &self.world,
            a,
            b,
            vec3("anchor", anchor)?,
            vec3("axis", axis)?,
        );
        self.add_joint(j)
    }

    /// A body of `shape` at `position`, fixed or dynamic, optionally turned.
    fn solid(
        &mut self,
        shape: Shape,
        material: usize,
        position: [f64; 3],
        fixed: bool,
        orientation: Option<[f64; 4]>,
    ) -> PyResult<usize> {
        let m = self.material_id(material)?;
        let p = vec3("position", position)?;
        let mut desc = if fixed {
            BodyDesc::fixed(shape, m, p)
        } else {
            BodyDesc::dynamic(shape, m, p)
        };
        if let Some(q) = orientation {
            desc = desc.with_orientation(quaternion(q)?);
        }
        self.add(desc)
    }
}

/// A unit quaternion from `(x, y, z, w)`, normalised; refuses zero and
/// non-finite ones.
fn quaternion([x, y, z, w]: [f64; 4]) -> PyResult<Quat> {
    let q = nalgebra::Quaternion::new(w, x, y, z);
    let n = q.norm();
    if n.is_finite() && n > 0.0 {
        Ok(Quat::from_quaternion(q))
    } else {
        Err(invalid(
            "orientation",
            "must be a finite non-zero quaternion (x, y, z, w)",
        ))
    }
}

/// One radius for every sphere, or one per sphere.
fn radii(value: &Bound<'_, PyAny>, n: usize) -> PyResult<Vec<f64>> {
    if let Ok(r) = value.extract::<f64>() {
        return Ok(vec![r; n]);
    }
    let a: crate::arrays::Floats<'_> = value
        .extract()
        .map_err(|_| invalid("radii", "must be a number or a 1-D float array"))?;
    let v = read_floats("radii", &a)?;
    if v.len() != n {
        return Err(invalid(
            "radii",
            format!("has {} entries for {n} positions", v.len()),
        ));
    }
    Ok(v)
}

#[pymethods]
impl SceneBuilder {
    /// An empty scene called `name` with `gravity` \[m/s²\]; `duration`
    /// \[s\] is what `Simulation.run()` runs to.
    #[new]
    #[pyo3(signature = (name = "custom".to_string(), *, gravity = [0.0, 0.0, -9.81], duration = 1.0))]
    fn new(name: String, gravity: [f64; 3], duration: f64) -> PyResult<Self> {
        if !(duration.is_finite() && duration >= 0.0) {
            return Err(invalid(
                "duration",
                format!("must be finite and >= 0, got {duration}"),
            ));
        }
        let world = World::new(Vec::new(), vec3("gravity", gravity)?).map_err(step_error)?;
        Ok(Self {
            name,
            world,
            emitters: Vec::new(),
            duration,
        })
    }

    /// Adds a material; returns its index. Defaults: the warm-starting
    /// paper's glass beads (Table 1).
    #[pyo3(signature = (*, density = None, youngs_modulus = None, poisson_ratio = None,
        restitution = None, friction = None, rolling_resistance = None, damping = None,
        linear_stiffness = None))]
    fn material(
        &mut self,
        density: Option<f64>,
        youngs_modulus: Option<f64>,
        poisson_ratio: Option<f64>,
        restitution: Option<f64>,
        friction: Option<f64>,
        rolling_resistance: Option<f64>,
        damping: Option<f64>,
        linear_stiffness: Option<f64>,
    ) -> PyResult<usize> {
        let d = Material::default();
        let m = Material {
            density: density.unwrap_or(d.density),
            youngs_modulus: youngs_modulus.unwrap_or(d.youngs_modulus),
            poisson_ratio: poisson_ratio.unwrap_or(d.poisson_ratio),
            restitution: restitution.unwrap_or(d.restitution),
            friction: friction.unwrap_or(d.friction),
            rolling_resistance: rolling_resistance.unwrap_or(d.rolling_resistance),
            damping: damping.unwrap_or(d.damping),
            linear_stiffness: linear_stiffness.or(d.linear_stiffness),
        };
        self.world
            .add_material(m)
            .map(MaterialId::index)
            .map_err(step_error)
    }

    /// Adds dynamic spheres at `positions` `(n, 3)` with `radii` (one
    /// number or `(n,)`), optionally moving at `velocities` `(n, 3)`; all
    /// or none are added. Returns their body indices `(n,)` int64.
    #[pyo3(signature = (positions, radii, *, material = 0, velocities = None))]
    fn spheres<'py>(
        &mut self,
        py: Python<'py>,
        positions: Vectors<'py>,
        radii: &Bound<'py, PyAny>,
        material: usize,
        velocities: Option<Vectors<'py>>,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let m = self.material_id(material)?;
        let p = read_vectors("positions", &positions)?;
        let r = self::radii(radii, p.len())?;
        let v = match velocities {
            Some(v) => read_vectors("velocities", &v)?,
            None => vec![Vec3::zeros(); p.len()],
        };
        if v.len() != p.len() {
            return Err(invalid(
                "velocities",
                format!("has {} rows for {} positions", v.len(), p.len()),
            ));
        }
        let mut descs = Vec::with_capacity(p.len());
        for (i, ((p, r), v)) in p.into_iter().zip(r).zip(v).enumerate() {
            let shape =
                Shape::sphere(r).map_err(|e| invalid("radii", format!("entry {i}: {e}")))?;
            descs.push(
                BodyDesc::dynamic(shape, m, p).with_velocity(Velocity6::new(v, Vec3::zeros())),
            );
        }
        let range = self.world.add_bodies(descs).map_err(step_error)?;
        Ok(ints(py, range.iter().map(|b| b.index() as i64).collect()))
    }

    /// Adds a fixed plane through `point` with outward `normal` (the
    /// half-space below it is solid); returns its body index.
    #[pyo3(signature = (*, point = [0.0; 3], normal = [0.0, 0.0, 1.0], material = 0))]
    fn plane(&mut self, point: [f64; 3], normal: [f64; 3], material: usize) -> PyResult<usize> {
        let shape = Shape::half_space(vec3("normal", normal)?).map_err(value_error)?;
        self.solid(shape, material, point, true, None)
    }

    /// Adds a box of `half_extents` \[m\] centred at `center`; fixed unless
    /// `fixed=False`; `orientation` a quaternion `(x, y, z, w)`.
    #[pyo3(signature = (center, half_extents, *, material = 0, fixed = true, orientation = None))]
    #[pyo3(name = "box")]
    fn cuboid(
        &mut self,
        center: [f64; 3],
        half_extents: [f64; 3],
        material: usize,
        fixed: bool,
        orientation: Option<[f64; 4]>,
    ) -> PyResult<usize> {
        let shape = Shape::cuboid(vec3("half_extents", half_extents)?).map_err(value_error)?;
        self.solid(shape, material, center, fixed, orientation)
    }

    /// Adds a solid cylinder (axis along its body z) centred at `center`.
    #[pyo3(signature = (center, radius, half_height, *, material = 0, fixed = true, orientation = None))]
    fn cylinder(
        &mut self,
        center: [f64; 3],
        radius: f64,
        half_height: f64,
        material: usize,
        fixed: bool,
        orientation: Option<[f64; 4]>,
    ) -> PyResult<usize> {
        let shape = Shape::cylinder(radius, half_height).map_err(value_error)?;
        self.solid(shape, material, center, fixed, orientation)
    }

    /// Adds a triangle mesh from `vertices` `(v, 3)` \[m\, body frame\] and
    /// `indices` `(t, 3)` (counter-clockwise seen from outside), placed at
    /// `position`; fixed unless `fixed=False`.
    #[pyo3(signature = (vertices, indices, *, position = [0.0; 3], material = 0, fixed = true,
        orientation = None))]
    fn mesh(
        &mut self,
        vertices: Vectors<'_>,
        indices: crate::arrays::Indices<'_>,
        position: [f64; 3],
        material: usize,
        fixed: bool,
        orientation: Option<[f64; 4]>,
    ) -> PyResult<usize> {
        let v = read_vectors("vertices", &vertices)?;
        let idx = indices.as_array();
        if idx.ncols() != 3 {
            return Err(invalid(
                "indices",
                format!("must have shape (t, 3), got {:?}", idx.shape()),
            ));
        }
        let mut tris = Vec::with_capacity(idx.nrows());
        for (t, row) in idx.rows().into_iter().enumerate() {
            let mut tri = [0u32; 3];
            for (k, &x) in row.iter().enumerate() {
                tri[k] = u32::try_from(x)
                    .ok()
                    .filter(|&i| (i as usize) < v.len())
                    .ok_or_else(|| {
                        invalid(
                            "indices",
                            format!("triangle {t}: {x} is not a vertex index"),
                        )
                    })?;
            }
            tris.push(tri);
        }
        let shape = Shape::trimesh(&v, tris).map_err(value_error)?;
        self.solid(shape, material, position, fixed, orientation)
    }

    /// Joins bodies `a` and `b` by a hinge about `axis` through `anchor`,
    /// optionally driven at `speed` \[rad/s\] or to `position` \[rad\] with
    /// at most `max_force` \[N·m\]; returns the joint index.
    #[pyo3(signature = (a, b, anchor, axis, *, speed = None, position = None, max_force = f64::INFINITY))]
    fn hinge(
        &mut self,
        a: usize,
        b: usize,
        anchor: [f64; 3],
        axis: [f64; 3],
        speed: Option<f64>,
        position: Option<f64>,
        max_force: f64,
    ) -> PyResult<usize> {
        let drive = state::drive(speed, position, max_force)?;
        self.axis_joint((a, b), anchor, axis, |w, a, b, anchor, axis| {
            Joint::hinge(w, a, b, anchor, axis, drive)
        })
    }

    /// Joins `a` and `b` by a prismatic joint along `axis`, optionally
    /// driven at `speed` \[m/s\] with at most `max_force` \[N\].
    #[pyo3(signature = (a, b, anchor, axis, *, speed = None, max_force = f64::INFINITY))]
    fn prismatic(
        &mut self,
        a: usize,
        b: usize,
        anchor: [f64; 3],
        axis: [f64; 3],
        speed: Option<f64>,
        max_force: f64,
    ) -> PyResult<usize> {
        let motor = speed.map(|target_speed| ndem::step::Motor {
            target_speed,
            max_force,
        });
        self.axis_joint((a, b), anchor, axis, |w, a, b, anchor, axis| {
            Joint::prismatic(w, a, b, anchor, axis, motor)
        })
    }

    /// Locks `a` and `b` in their current relative pose.
    fn lock(&mut self, a: usize, b: usize, anchor: [f64; 3]) -> PyResult<usize> {
        let (a, b) = self.body_pair(a, b)?;
        let j = Joint::lock(&self.world, a, b, vec3("anchor", anchor)?);
        self.add_joint(j)
    }

    /// Joins `a` and `b` by a ball joint at `anchor`.
    fn ball(&mut self, a: usize, b: usize, anchor: [f64; 3]) -> PyResult<usize> {
        let (a, b) = self.body_pair(a, b)?;
        let j = Joint::ball(&self.world, a, b, vec3("anchor", anchor)?);
        self.add_joint(j)
    }

    /// Adds an emitter: `total` spheres at `rate` \[1/s\] from a horizontal
    /// disk of `radius` (or a `rectangle` of half extents `(x, y)`)
    /// centred at `center`, radii uniform in `particle_radius = (r_min,
    /// r_max)` (or bi-disperse), moving at `velocity`; `seed` fixes the
    /// draws. Returns the emitter's index.
    #[pyo3(signature = (center, particle_radius, rate, total, *, radius = 0.0, rectangle = None,
        bidisperse_fraction = 0.0, material = 0, velocity = [0.0; 3], seed = 0))]
    fn emitter(
        &mut self,
        center: [f64; 3],
        particle_radius: (f64, f64),
        rate: f64,
        total: usize,
        radius: f64,
        rectangle: Option<[f64; 2]>,
        bidisperse_fraction: f64,
        material: usize,
        velocity: [f64; 3],
        seed: u64,
    ) -> PyResult<usize> {
        let spec = EmitterSpec {
            centre: center,
            radius,
            rectangle,
            radius_min: particle_radius.0,
            radius_max: particle_radius.1,
            bidisperse_fraction,
            material,
            rate,
            velocity,
            total,
            emitted: 0,
            pending: 0.0,
            rng_state: seed,
        };
        let e = spec
            .to_emitter(self.world.materials.len())
            .map_err(scene_error)?;
        self.emitters.push(e);
        Ok(self.emitters.len() - 1)
    }

    /// Number of bodies so far.
    fn __len__(&self) -> usize {
        self.world.len()
    }

    /// A `Simulation` of the scene built so far (the builder keeps its
    /// bodies and can build again); keyword arguments are the run
    /// settings (`solver`, `iterations`, `warm_start`, `threads`,
    /// `reduce`, `impact_iterations`, `impact_join_velocity`, `reach_growth`, `dt`).
    #[pyo3(signature = (**settings))]
    fn build(&self, py: Python<'_>, settings: Option<&Bound<'_, PyDict>>) -> PyResult<Simulation> {
        let settings = RunSettings::from_kwargs(settings)?;
        if self.world.motions().iter().all(|m| *m != Motion::Dynamic) && self.emitters.is_empty() {
            return Err(invalid(
                "spheres",
                "the scene has no dynamic body and no emitter",
            ));
        }
        let scene = Scene {
            emitters: self.emitters.clone(),
            duration: self.duration,
            ..Scene::new(self.name.clone(), self.world.clone())
        };
        Simulation::from_scene(py, scene, &settings)
    }
}

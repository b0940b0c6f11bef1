//! The scene file format: TOML through serde. [`SceneFile`] is plain data;
//! [`SceneFile::to_scene`] validates and builds, [`SceneFile::from_scene`]
//! writes any scene (built-in or loaded) back out. Floats round-trip
//! exactly, so a scene written and read back is the same scene bit for bit.

use crate::choice::{SolverChoice, WarmStartChoice};
use crate::emitter::Emitter;
use crate::error::SceneError;
use crate::rng::Rng;
pub use crate::scene::OutputSpec;
use crate::scene::Scene;
pub use crate::shape_spec::ShapeSpec;
use crate::shape_spec::{a3, v3};
use crate::triaxial::TriaxialControl;
use ndem_math::{ContactLaw, MassProperties, Material, Quat, SpookSettings, Vec3, Velocity6};
use ndem_solve::{ContactRows, FrictionSet};
use ndem_step::{
    BodyDesc, BodyId, Drive, ImpactScope, Joint, JointKind, MaterialId, Motion, Motor,
    StepSettings, World,
};
use serde::{Deserialize, Serialize};

fn quat(q: [f64; 4]) -> Quat {
    // stored exactly as written ([w, x, y, z]); not renormalised, so that a
    // checkpoint restarts bit-identically
    Quat::new_unchecked(nalgebra::Quaternion::new(q[0], q[1], q[2], q[3]))
}
/// A unit quaternion `[w, x, y, z]` as written (finite, norm within 1e-6
/// of 1), or a typed error naming `field` and the entry.
fn unit_quat(field: &'static str, entry: usize, q: [f64; 4]) -> Result<Quat, SceneError> {
    let norm = q.iter().map(|x| x * x).sum::<f64>().sqrt();
    if !q.iter().all(|x| x.is_finite()) {
        return Err(invalid(
            field,
            format!("entry {entry}: {q:?} is not finite; give a unit quaternion [w, x, y, z]"),
        ));
    }
    if (norm - 1.0).abs() > 1e-6 {
        return Err(invalid(
            field,
            format!(
                "entry {entry}: {q:?} has norm {norm}; give a unit quaternion [w, x, y, z] (|norm - 1| <= 1e-6)"
            ),
        ));
    }
    Ok(quat(q))
}

fn a4(q: &Quat) -> [f64; 4] {
    [q.w, q.i, q.j, q.k]
}
fn identity4() -> [f64; 4] {
    [1.0, 0.0, 0.0, 0.0]
}
fn zero3() -> [f64; 3] {
    [0.0; 3]
}
fn yes() -> bool {
    true
}

/// A whole scene as data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SceneFile {
    /// Scene name.
    pub name: String,
    /// Gravity [m/s²].
    pub gravity: [f64; 3],
    /// Time stepping and solver.
    pub run: RunSpec,
    /// Materials.
    pub materials: Vec<MaterialSpec>,
    /// Bodies.
    pub bodies: Vec<BodySpec>,
    /// Joints.
    #[serde(default)]
    pub joints: Vec<JointSpec>,
    /// Emitters.
    #[serde(default)]
    pub emitters: Vec<EmitterSpec>,
    /// Servo of a triaxial cell, if the scene is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triaxial: Option<TriaxialControl>,
    /// Adaptive model reduction (`[reduction]`; absent: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduction: Option<crate::reduction::ReductionSpec>,
    /// Position targets of driven joints over time (`[schedule]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<crate::schedule::DriveSchedule>,
    /// Prescribed velocities of kinematic bodies over time (`[[motions]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub motions: Vec<crate::motion::KinematicMotion>,
    /// The reduction `ndem run --reduce` switches on when the file has no
    /// `[reduction]` (`[reduce_preset]`, the same fields; absent: Table 2
    /// with the contact split).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduce_preset: Option<crate::reduction::ReductionSpec>,
    /// Why reduction does not keep this scene's physics, where that is
    /// known (`ndem run --reduce` prints it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduce_caveat: Option<String>,
    /// Outputs.
    #[serde(default)]
    pub output: OutputSpec,
    /// Contact parameters of material pairs (`[[pairs]]`), replacing the
    /// values combined from the two materials.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<PairSpec>,
}

/// `[[pairs]]`: one pair of materials with its own contact parameters; a
/// value left out keeps the one combined from the two materials.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairSpec {
    /// The two material indices (either order; the same twice for contacts
    /// within one material).
    pub materials: [usize; 2],
    /// Friction coefficient `μ_t`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub friction: Option<f64>,
    /// Rolling resistance `μ_r`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_resistance: Option<f64>,
    /// Restitution coefficient in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restitution: Option<f64>,
    /// Dashpot time \[s\].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub damping: Option<f64>,
    /// Effective Hertz modulus `E*` \[Pa\] (Hertz contacts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective_modulus: Option<f64>,
    /// Linear stiffness `k_n` \[N/m\] (needs `run.per_material_stiffness`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear_stiffness: Option<f64>,
}

/// `[run]`: time stepping and solver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// Time step Δt \[s\].
    pub dt: f64,
    /// Simulated duration \[s\].
    pub duration: f64,
    /// Solver iterations per step N_it.
    pub iterations: usize,
    /// Solver.
    #[serde(default)]
    pub solver: SolverChoice,
    /// Warm start.
    #[serde(default)]
    pub warm_start: WarmStartChoice,
    /// Threads for the parts of a step that can use several (contact
    /// detection, solvers `pgs-coloured` and `pgs-direct-coloured`); 0
    /// (default) for every core. Results do not depend on it.
    #[serde(default)]
    pub threads: usize,
    /// "box" (papers) or "disk".
    #[serde(default = "default_friction")]
    pub friction: String,
    /// Rows per contact: 1, 3 or 6.
    #[serde(default = "default_rows")]
    pub rows: usize,
    /// Normal law: Hertz unless a linear stiffness [N/m] is given or
    /// `rigid_contacts` is set.
    #[serde(default)]
    pub linear_stiffness: Option<f64>,
    /// Rigid contacts (no compliance; the compatible-contact-dynamics
    /// paper's classic CD). Excludes `linear_stiffness`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rigid_contacts: bool,
    /// Linear contacts with each material's own `linear_stiffness` (the
    /// model-reduction paper's k_n per material). Excludes
    /// `linear_stiffness` and `rigid_contacts`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_material_stiffness: bool,
    /// Contact margin \[m\].
    #[serde(default)]
    pub margin: f64,
    /// Impact threshold v_imp [m/s].
    #[serde(default = "default_vimp")]
    pub impact_velocity: f64,
    /// Run the impact stage.
    #[serde(default = "yes")]
    pub impact_stage: bool,
    /// PGS sweeps of the impact stage (`StepSettings::impact_iterations`;
    /// the papers give none). In a packing the impact problem spans the
    /// whole contact network and 20 sweeps leave it unconverged
    /// (`impact_status` in `stats.csv`); more sweeps reduce its residual.
    /// At most [`crate::params::MAX_ITERATIONS`] while the stage is on.
    #[serde(default = "default_impact_iterations")]
    pub impact_iterations: usize,
    /// The impact stage on an active set grown from the impacting contacts
    /// (`ImpactScope::ActiveSet`), joined by contacts violated by more than
    /// this velocity [m/s] (5e-3 is 10 % of the paper's v_imp); absent: the
    /// whole contact network, as the papers' stepper.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impact_join_velocity: Option<f64>,
    /// Grow each body's reach in contact detection by what its partners'
    /// impulses can pass on within the step (`StepSettings::reach_growth`,
    /// `docs/theory.md` "Zero overlap"); default off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reach_growth: bool,
    /// Friction compliance γ_t.
    #[serde(default = "default_gamma")]
    pub friction_compliance: f64,
    /// Rolling compliance γ_r.
    #[serde(default = "default_gamma")]
    pub rolling_compliance: f64,
}

/// Scene files without `run.friction` get Coulomb's disk; the built-in
/// reproductions of the papers write `friction = "box"` explicitly.
fn default_friction() -> String {
    "disk".into()
}
fn default_rows() -> usize {
    6
}
fn default_vimp() -> f64 {
    0.05
}
fn default_impact_iterations() -> usize {
    StepSettings::default().impact_iterations
}
fn default_gamma() -> f64 {
    1e-6
}
fn dynamic() -> String {
    "dynamic".into()
}

/// `[[materials]]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaterialSpec {
    /// ρ [kg/m³].
    pub density: f64,
    /// E \[Pa\].
    pub youngs_modulus: f64,
    /// ν.
    pub poisson_ratio: f64,
    /// e.
    pub restitution: f64,
    /// μ_t.
    pub friction: f64,
    /// μ_r (default 0: no rolling resistance).
    #[serde(default)]
    pub rolling_resistance: f64,
    /// Dashpot time c \[s\].
    #[serde(default)]
    pub damping: f64,
    /// Linear normal stiffness k_n [N/m] of contacts within this material
    /// (`run.per_material_stiffness`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear_stiffness: Option<f64>,
}

/// `[[bodies]]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodySpec {
    /// Shape.
    pub shape: ShapeSpec,
    /// Material index.
    #[serde(default)]
    pub material: usize,
    /// "dynamic" (the default), "kinematic" or "static".
    #[serde(default = "dynamic")]
    pub motion: String,
    /// Position \[m\].
    pub position: [f64; 3],
    /// Orientation quaternion [w, x, y, z].
    #[serde(default = "identity4")]
    pub orientation: [f64; 4],
    /// Velocity [m/s].
    #[serde(default = "zero3")]
    pub velocity: [f64; 3],
    /// Angular velocity [rad/s].
    #[serde(default = "zero3")]
    pub angular_velocity: [f64; 3],
    /// Conveyor surface velocity [m/s].
    #[serde(default = "zero3")]
    pub surface_velocity: [f64; 3],
    /// Collision group (0: none); bodies of one non-zero group never touch.
    #[serde(default)]
    pub collision_group: u32,
    /// Mass \[kg\] (dynamic; default from shape and density).
    #[serde(default)]
    pub mass: Option<f64>,
    /// Principal inertia [kg m²] (with `mass`).
    #[serde(default)]
    pub inertia: Option<[f64; 3]>,
}

/// `[[joints]]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JointSpec {
    /// "lock" or "prismatic".
    pub kind: JointKindSpec,
    /// Body a.
    pub body_a: usize,
    /// Body b.
    pub body_b: usize,
    /// Anchor in a's frame.
    pub anchor_a: [f64; 3],
    /// Anchor in b's frame.
    pub anchor_b: [f64; 3],
    /// Relative orientation q_a⁻¹ q_b [w, x, y, z].
    pub relative_orientation: [f64; 4],
    /// Prismatic axis in a's frame.
    #[serde(default)]
    pub axis: Option<[f64; 3]>,
    /// Motor target speed [m/s or rad/s] (prismatic, hinge, actuator).
    #[serde(default)]
    pub motor_speed: Option<f64>,
    /// Position-drive target [m or rad] (hinge, actuator), instead of
    /// `motor_speed`.
    #[serde(default)]
    pub drive_target: Option<f64>,
    /// Length of an undriven actuator \[m\].
    #[serde(default)]
    pub rest_length: Option<f64>,
    /// Motor force bound \[N\].
    #[serde(default)]
    pub motor_max_force: Option<f64>,
    /// Compliance of the locked rows [m/N].
    pub compliance: f64,
}

/// Joint kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JointKindSpec {
    /// Lock.
    Lock,
    /// Prismatic.
    Prismatic,
    /// Hinge (revolute).
    Hinge,
    /// Ball (spherical).
    Ball,
    /// Massless linear actuator between the anchors.
    Actuator,
}

/// `[[emitters]]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmitterSpec {
    /// Centre of the source disk.
    pub centre: [f64; 3],
    /// Radius of the source disk.
    #[serde(default)]
    pub radius: f64,
    /// Half extents `[x, y]` of a rectangular source (instead of the disk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rectangle: Option<[f64; 2]>,
    /// Smallest particle radius.
    pub radius_min: f64,
    /// Largest particle radius.
    pub radius_max: f64,
    /// Probability of the small radius (bi-disperse), 0 for uniform.
    #[serde(default)]
    pub bidisperse_fraction: f64,
    /// Material index.
    #[serde(default)]
    pub material: usize,
    /// Particles per second.
    pub rate: f64,
    /// Initial velocity.
    #[serde(default = "zero3")]
    pub velocity: [f64; 3],
    /// Total to emit.
    pub total: usize,
    /// Emitted so far.
    #[serde(default)]
    pub emitted: usize,
    /// Fractional particles owed.
    #[serde(default)]
    pub pending: f64,
    /// Random state (seed for a new emitter).
    #[serde(default)]
    pub rng_state: u64,
}

impl EmitterSpec {
    /// The emitter, after checking every field (a typed error naming it);
    /// `materials` is the number of materials of its world.
    pub fn to_emitter(&self, materials: usize) -> Result<Emitter, SceneError> {
        let e = self;
        if !(e.radius_min > 0.0 && e.radius_max >= e.radius_min && e.rate >= 0.0) {
            return Err(invalid(
                "emitters",
                "need 0 < radius_min <= radius_max and rate >= 0",
            ));
        }
        for (field, v) in [
            ("emitters.centre", e.centre),
            ("emitters.velocity", e.velocity),
        ] {
            if !v.iter().all(|x| x.is_finite()) {
                return Err(invalid(field, format!("{v:?} is not finite")));
            }
        }
        if !(0.0..=1.0).contains(&e.bidisperse_fraction) {
            return Err(invalid(
                "emitters.bidisperse_fraction",
                format!("{} is not a probability in [0, 1]", e.bidisperse_fraction),
            ));
        }
        if !(e.rate.is_finite() && e.pending.is_finite() && e.pending >= 0.0) {
            return Err(invalid(
                "emitters.rate",
                "rate and pending must be finite (pending >= 0)",
            ));
        }
        if e.material >= materials {
            return Err(invalid("emitters.material", "unknown material"));
        }
        match e.rectangle {
            Some(h) if !h.iter().all(|x| x.is_finite() && *x > 0.0) => {
                return Err(invalid(
                    "emitters.rectangle",
                    "half extents must be finite and > 0",
                ));
            }
            None if !(e.radius.is_finite() && e.radius >= 0.0) => {
                return Err(invalid(
                    "emitters.radius",
                    "a disk source needs a finite radius >= 0",
                ));
            }
            _ => {}
        }
        Ok(Emitter {
            centre: v3(e.centre),
            radius: e.radius,
            rectangle: e.rectangle.map(|h| (h[0], h[1])),
            particle_radius: (e.radius_min, e.radius_max),
            bidisperse_fraction: e.bidisperse_fraction,
            material: e.material,
            rate: e.rate,
            velocity: v3(e.velocity),
            total: e.total,
            emitted: e.emitted,
            pending: e.pending,
            rng: Rng::new(e.rng_state),
        })
    }
}

fn invalid(field: &'static str, reason: impl Into<String>) -> SceneError {
    SceneError::Invalid {
        field,
        reason: reason.into(),
    }
}

impl SceneFile {
    /// Parses TOML text. Errors name the offending line and field.
    pub fn from_toml(text: &str) -> Result<Self, SceneError> {
        toml::from_str(text)
            .map_err(|e| invalid("scene file", e.to_string().trim().replace('\n', " ")))
    }

    /// Writes TOML text.
    pub fn to_toml(&self) -> Result<String, SceneError> {
        toml::to_string(self).map_err(|e| invalid("scene file", e.to_string()))
    }

    /// Builds (and validates) the scene.
    pub fn to_scene(&self) -> Result<Scene, SceneError> {
        if self.output.stats_every == 0 {
            return Err(invalid(
                "output.stats_every",
                "must be at least 1 (a statistics line every N steps)",
            ));
        }
        let world = self.world()?;
        let emitters = self.emitters(&world)?;
        let settings = self.step_settings()?;
        let r = &self.run;
        let schedule = match &self.schedule {
            Some(s) => {
                s.validate(&world)?;
                Some(s.clone())
            }
            None => None,
        };
        for m in &self.motions {
            m.validate(&world)?;
        }
        let settings_of = |r: &Option<crate::reduction::ReductionSpec>| -> Result<_, SceneError> {
            match r {
                Some(r) => {
                    let settings = r.to_settings()?;
                    crate::reduction::check_sensor_bodies(&settings, &world)?;
                    Ok(Some(settings))
                }
                None => Ok(None),
            }
        };
        Ok(Scene {
            output: self.output,
            settings,
            emitters,
            duration: r.duration,
            iterations: r.iterations,
            solver: r.solver,
            warm_start: r.warm_start,
            threads: r.threads,
            triaxial: self.triaxial,
            reduction: settings_of(&self.reduction)?,
            reduce_preset: settings_of(&self.reduce_preset).map_err(|e| SceneError::Invalid {
                field: "reduce_preset",
                reason: e.to_string(),
            })?,
            schedule,
            motions: self.motions.clone(),
            reduce_caveat: self.reduce_caveat.clone(),
            ..Scene::new(self.name.clone(), world)
        })
    }

    /// The world of the file: materials, pairs, bodies, joints.
    fn world(&self) -> Result<World, SceneError> {
        let materials: Vec<Material> = self
            .materials
            .iter()
            .map(|m| Material {
                density: m.density,
                youngs_modulus: m.youngs_modulus,
                poisson_ratio: m.poisson_ratio,
                restitution: m.restitution,
                friction: m.friction,
                rolling_resistance: m.rolling_resistance,
                damping: m.damping,
                linear_stiffness: m.linear_stiffness,
            })
            .collect();
        if materials.is_empty() {
            return Err(invalid("materials", "at least one material is needed"));
        }
        let mut world = World::new(materials, v3(self.gravity))?;
        for p in &self.pairs {
            if p.linear_stiffness.is_some() && !self.run.per_material_stiffness {
                return Err(invalid(
                    "pairs.linear_stiffness",
                    "a pair's linear stiffness needs run.per_material_stiffness = true",
                ));
            }
            world
                .set_pair(
                    MaterialId::from_index(p.materials[0]),
                    MaterialId::from_index(p.materials[1]),
                    ndem_math::PairOverride {
                        friction: p.friction,
                        rolling_resistance: p.rolling_resistance,
                        restitution: p.restitution,
                        damping: p.damping,
                        effective_modulus: p.effective_modulus,
                        linear_stiffness: p.linear_stiffness,
                    },
                )
                .map_err(|e| match e {
                    ndem_step::StepError::Math(m) => invalid("pairs", m.to_string()),
                    other => SceneError::from(other),
                })?;
        }
        for (i, b) in self.bodies.iter().enumerate() {
            let shape = b.shape.to_shape()?;
            let motion = match b.motion.as_str() {
                "dynamic" => Motion::Dynamic,
                "kinematic" => Motion::Kinematic,
                "static" => Motion::Static,
                other => {
                    return Err(invalid(
                        "bodies.motion",
                        format!("body {i}: `{other}` is not dynamic, kinematic or static"),
                    ));
                }
            };
            let mass = match (b.mass, b.inertia) {
                (Some(m), Some(i3)) => Some(MassProperties {
                    mass: m,
                    principal_inertia: v3(i3),
                }),
                (None, None) => None,
                _ => {
                    return Err(invalid(
                        "bodies.mass",
                        format!("body {i}: give both mass and inertia, or neither"),
                    ));
                }
            };
            world.add_body(BodyDesc {
                shape,
                material: MaterialId::from_index(b.material),
                motion,
                mass,
                position: v3(b.position),
                orientation: unit_quat("bodies.orientation", i, b.orientation)?,
                velocity: Velocity6::new(v3(b.velocity), v3(b.angular_velocity)),
                surface_velocity: v3(b.surface_velocity),
                collision_group: b.collision_group,
            })?;
        }
        for (k, j) in self.joints.iter().enumerate() {
            let kind = joint_kind(j)?;
            let relative_orientation =
                unit_quat("joints.relative_orientation", k, j.relative_orientation)?;
            world.add_joint(Joint {
                body_a: BodyId::from_index(j.body_a),
                body_b: BodyId::from_index(j.body_b),
                kind,
                anchor_a: v3(j.anchor_a),
                anchor_b: v3(j.anchor_b),
                relative_orientation,
                compliance: j.compliance,
            })?;
        }
        Ok(world)
    }

    /// The emitters of the file, checked against `world`'s materials.
    fn emitters(&self, world: &World) -> Result<Vec<Emitter>, SceneError> {
        let materials = world.materials.len();
        self.emitters
            .iter()
            .map(|e| e.to_emitter(materials))
            .collect()
    }

    /// The step settings of `[run]`.
    fn step_settings(&self) -> Result<StepSettings, SceneError> {
        let r = &self.run;
        let friction_set = match r.friction.as_str() {
            "box" => FrictionSet::Box,
            "disk" => FrictionSet::Disk,
            other => {
                return Err(invalid(
                    "run.friction",
                    format!("`{other}` is not box or disk"),
                ));
            }
        };
        let contact_rows = match r.rows {
            1 => ContactRows::Normal,
            3 => ContactRows::NormalFriction,
            6 => ContactRows::NormalFrictionRolling,
            n => return Err(invalid("run.rows", format!("{n} is not 1, 3 or 6"))),
        };
        let contact_law = match (
            r.linear_stiffness,
            r.rigid_contacts,
            r.per_material_stiffness,
        ) {
            (Some(_), true, _) => {
                return Err(invalid(
                    "run.rigid_contacts",
                    "rigid contacts exclude run.linear_stiffness",
                ));
            }
            (Some(_), _, true) | (_, true, true) => {
                return Err(invalid(
                    "run.per_material_stiffness",
                    "excludes run.linear_stiffness and run.rigid_contacts",
                ));
            }
            (None, false, true) => ContactLaw::LinearPerMaterial,
            (Some(stiffness), false, false) => ContactLaw::Linear { stiffness },
            (None, true, false) => ContactLaw::Rigid,
            (None, false, false) => ContactLaw::Hertz,
        };
        if let Some(v) = r.impact_join_velocity {
            crate::params::positive("run.impact_join_velocity", v)?;
        }
        let settings = StepSettings {
            dt: r.dt,
            contact_law,
            spook: SpookSettings {
                friction_compliance: r.friction_compliance,
                rolling_compliance: r.rolling_compliance,
                ..SpookSettings::default()
            },
            impact_velocity: r.impact_velocity,
            impact_stage: r.impact_stage,
            impact_iterations: r.impact_iterations,
            impact_scope: match r.impact_join_velocity {
                Some(join_velocity) => ImpactScope::ActiveSet { join_velocity },
                None => ImpactScope::WholeNetwork,
            },
            contact_rows,
            friction_set,
            margin: r.margin,
            reach_growth: r.reach_growth,
            ..StepSettings::default()
        };
        settings.validate()?;
        if !(r.duration.is_finite() && r.duration >= 0.0) {
            return Err(invalid("run.duration", "must be finite and >= 0"));
        }
        Ok(settings)
    }

    /// Describes a scene as data (all bodies in their current state).
    pub fn from_scene(scene: &Scene) -> SceneFile {
        let w = &scene.world;
        SceneFile {
            bodies: (0..w.len()).map(|i| BodySpec::of_body(w, i)).collect(),
            ..Self::from_scene_without_bodies(scene)
        }
    }

    /// [`SceneFile::from_scene`] with an empty body list, for a writer
    /// that streams the bodies ([`BodySpec::of_body`]) itself.
    pub fn from_scene_without_bodies(scene: &Scene) -> SceneFile {
        let w = &scene.world;
        let bodies = Vec::new();
        let joints = w.joints().iter().map(JointSpec::of).collect();
        let emitters = scene
            .emitters
            .iter()
            .map(|e| EmitterSpec {
                centre: a3(&e.centre),
                radius: e.radius,
                rectangle: e.rectangle.map(|(x, y)| [x, y]),
                radius_min: e.particle_radius.0,
                radius_max: e.particle_radius.1,
                bidisperse_fraction: e.bidisperse_fraction,
                material: e.material,
                rate: e.rate,
                velocity: a3(&e.velocity),
                total: e.total,
                emitted: e.emitted,
                pending: e.pending,
                rng_state: e.rng.state,
            })
            .collect();
        SceneFile {
            name: scene.name.clone(),
            gravity: a3(&w.gravity),
            run: RunSpec::of(scene),
            materials: w
                .materials
                .iter()
                .map(|m| MaterialSpec {
                    density: m.density,
                    youngs_modulus: m.youngs_modulus,
                    poisson_ratio: m.poisson_ratio,
                    restitution: m.restitution,
                    friction: m.friction,
                    rolling_resistance: m.rolling_resistance,
                    damping: m.damping,
                    linear_stiffness: m.linear_stiffness,
                })
                .collect(),
            bodies,
            joints,
            emitters,
            triaxial: scene.triaxial,
            reduction: scene
                .reduction
                .as_ref()
                .map(crate::reduction::ReductionSpec::from_settings),
            reduce_preset: scene
                .reduce_preset
                .as_ref()
                .map(crate::reduction::ReductionSpec::from_settings),
            schedule: scene.schedule.clone(),
            motions: scene.motions.clone(),
            reduce_caveat: scene.reduce_caveat.clone(),
            output: scene.output,
            pairs: w
                .pairs()
                .map(|((a, b), o)| PairSpec {
                    materials: [a, b],
                    friction: o.friction,
                    rolling_resistance: o.rolling_resistance,
                    restitution: o.restitution,
                    damping: o.damping,
                    effective_modulus: o.effective_modulus,
                    linear_stiffness: o.linear_stiffness,
                })
                .collect(),
        }
    }
}

impl BodySpec {
    /// Body `index` of `world` as data (what [`SceneFile::from_scene`]
    /// lists).
    pub fn of_body(world: &World, index: usize) -> Self {
        Self::of(&world.body_desc(BodyId::from_index(index)))
    }

    /// A body as data.
    fn of(d: &BodyDesc) -> Self {
        let shape = ShapeSpec::of_shape(&d.shape);
        BodySpec {
            shape,
            material: d.material.index(),
            motion: match d.motion {
                Motion::Dynamic => "dynamic",
                Motion::Kinematic => "kinematic",
                Motion::Static => "static",
            }
            .into(),
            position: a3(&d.position),
            orientation: a4(&d.orientation),
            velocity: a3(&d.velocity.linear),
            angular_velocity: a3(&d.velocity.angular),
            surface_velocity: a3(&d.surface_velocity),
            collision_group: d.collision_group,
            mass: d.mass.map(|m| m.mass),
            inertia: d.mass.map(|m| a3(&m.principal_inertia)),
        }
    }
}

impl JointSpec {
    /// A joint as data, with its drive.
    fn of(j: &Joint) -> Self {
        let (kind, axis, rest_length) = match j.kind {
            JointKind::Lock => (JointKindSpec::Lock, None, None),
            JointKind::Ball => (JointKindSpec::Ball, None, None),
            JointKind::Prismatic { axis, .. } => (JointKindSpec::Prismatic, Some(a3(&axis)), None),
            JointKind::Hinge { axis, .. } => (JointKindSpec::Hinge, Some(a3(&axis)), None),
            JointKind::Actuator { rest_length, .. } => {
                (JointKindSpec::Actuator, None, Some(rest_length))
            }
        };
        let drive = j.drive();
        JointSpec {
            kind,
            body_a: j.body_a.index(),
            body_b: j.body_b.index(),
            anchor_a: a3(&j.anchor_a),
            anchor_b: a3(&j.anchor_b),
            relative_orientation: a4(&j.relative_orientation),
            axis,
            motor_speed: match drive {
                Some(Drive::Speed(m)) => Some(m.target_speed),
                _ => None,
            },
            drive_target: match drive {
                Some(Drive::Position { target, .. }) => Some(target),
                _ => None,
            },
            rest_length,
            motor_max_force: drive.map(|d| d.max_force()),
            compliance: j.compliance,
        }
    }
}

impl RunSpec {
    /// The run settings of a scene as data.
    fn of(scene: &Scene) -> Self {
        let s = &scene.settings;
        RunSpec {
            dt: s.dt,
            duration: scene.duration,
            iterations: scene.iterations,
            solver: scene.solver,
            warm_start: scene.warm_start,
            threads: scene.threads,
            friction: match s.friction_set {
                FrictionSet::Box => "box",
                FrictionSet::Disk => "disk",
            }
            .into(),
            rows: s.contact_rows.count(),
            linear_stiffness: match s.contact_law {
                ContactLaw::Linear { stiffness } => Some(stiffness),
                ContactLaw::Hertz | ContactLaw::Rigid | ContactLaw::LinearPerMaterial => None,
            },
            rigid_contacts: s.contact_law == ContactLaw::Rigid,
            per_material_stiffness: s.contact_law == ContactLaw::LinearPerMaterial,
            margin: s.margin,
            impact_velocity: s.impact_velocity,
            impact_stage: s.impact_stage,
            impact_iterations: s.impact_iterations,
            impact_join_velocity: s.impact_scope.join_velocity(),
            reach_growth: s.reach_growth,
            friction_compliance: s.spook.friction_compliance,
            rolling_compliance: s.spook.rolling_compliance,
        }
    }
}

/// The joint kind of a `[[joints]]` entry, with its drive.
fn joint_kind(j: &JointSpec) -> Result<JointKind, SceneError> {
    let axis = || {
        j.axis
            .map(|a| Vec3::new(a[0], a[1], a[2]))
            .ok_or_else(|| invalid("joints.axis", "a prismatic or hinge joint needs an axis"))
    };
    let drive = match (j.motor_speed, j.drive_target, j.motor_max_force) {
        (Some(target_speed), None, Some(max_force)) => Some(Drive::Speed(Motor {
            target_speed,
            max_force,
        })),
        (None, Some(target), Some(max_force)) => Some(Drive::Position { target, max_force }),
        (None, None, None) => None,
        _ => {
            return Err(invalid(
                "joints.motor_max_force",
                "give motor_max_force with exactly one of motor_speed and drive_target",
            ));
        }
    };
    Ok(match j.kind {
        JointKindSpec::Lock => JointKind::Lock,
        JointKindSpec::Ball => JointKind::Ball,
        JointKindSpec::Prismatic => JointKind::Prismatic {
            axis: axis()?,
            motor: match drive {
                None => None,
                Some(Drive::Speed(m)) => Some(m),
                Some(Drive::Position { .. }) => {
                    return Err(invalid(
                        "joints.drive_target",
                        "prismatic joints take speed motors only",
                    ));
                }
            },
        },
        JointKindSpec::Hinge => JointKind::Hinge {
            axis: axis()?,
            drive,
        },
        JointKindSpec::Actuator => JointKind::Actuator {
            drive,
            rest_length: j.rest_length.ok_or_else(|| {
                invalid("joints.rest_length", "an actuator needs its rest length")
            })?,
        },
    })
}

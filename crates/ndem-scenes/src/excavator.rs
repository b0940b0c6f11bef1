//! The excavator of the warm-starting paper (section 5, Figs. 18-19): a
//! 50-tonne articulated machine digging a trench of polydisperse spheres
//! (diameters uniform in [25, 100] mm, ρ = 2500 kg/m³) through a
//! pre-programmed cycle of its hydraulic cylinders and slewing motor,
//! solved with the split solver (PGS for the particles, a direct block for
//! the machine) at Δt = 2.5 ms and N_it = 25.
//!
//! The machine (dimensions of a 50 t class backhoe; the paper gives only
//! its structure and total mass): a tracked base locked to the ground, a
//! cab on a slewing hinge driven by a rotational motor, a boom, an arm and
//! a bucket on hinges, and three linear actuators (boom, arm and bucket
//! cylinders) between them. The paper's machine has 10 bodies and 8
//! joints; ours has 5 bodies and 8 joints (lock, 4 hinges, 3 actuators):
//! the cylinders are massless two-point actuators rather than barrel and
//! rod bodies, and the bucket is driven directly rather than through a
//! four-bar linkage. The bucket is a triangle mesh (an open scoop).
//!
//! The machine and the trench's walls share a collision group: the
//! machine only touches particles.

use crate::choice::SolverChoice;
use crate::error::SceneError;
use crate::params::{G, positive};
use crate::rng::Rng;
use crate::scene::Scene;
use crate::schedule::DriveSchedule;
use ndem_collide::Shape;
use ndem_math::{MassProperties, Material, Quat, SettingError, Vec3};
use ndem_step::{BodyDesc, BodyId, Joint, JointId, MaterialId, StepSettings, World};

/// Collision group of the machine and the terrain (they never touch).
pub const MACHINE_GROUP: u32 = 7;

/// Dimensions and masses of the machine (SI). Defaults: a 50 t class
/// excavator (boom 7.0 m, arm 3.2 m, bucket 1.9 m pin to tip and 1.8 m
/// wide; masses 20, 19, 5, 2.5 and 3.5 t for base, cab, boom, arm and
/// bucket; cylinder force limits 1.2, 0.8 and 0.6 MN; slewing torque
/// 1.5 MN m, above a real machine's because our cycle swings 90° in 15 %
/// of it, faster than an operator would).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MachineSpec {
    /// Boom length, foot pin to nose pin \[m\].
    pub boom_length: f64,
    /// Arm length, nose pin to bucket pin \[m\].
    pub arm_length: f64,
    /// Bucket pin to teeth \[m\].
    pub bucket_length: f64,
    /// Bucket inner width \[m\].
    pub bucket_width: f64,
    /// Depth of the bucket's scoop (lip length and side height) \[m\].
    pub bucket_depth: f64,
    /// Masses \[kg\]: base, cab, boom, arm, bucket.
    pub masses: [f64; 5],
    /// Force bounds of the boom, arm and bucket cylinders \[N\].
    pub cylinder_force: [f64; 3],
    /// Torque bound of the slewing motor [N m].
    pub slew_torque: f64,
}

impl Default for MachineSpec {
    fn default() -> Self {
        Self {
            boom_length: 7.0,
            arm_length: 3.2,
            bucket_length: 1.9,
            bucket_width: 1.8,
            bucket_depth: 0.9,
            masses: [20e3, 19e3, 5e3, 2.5e3, 3.5e3],
            cylinder_force: [1.2e6, 8e5, 6e5],
            slew_torque: 1.5e6,
        }
    }
}

/// Parameters of [`excavator`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExcavatorSpec {
    /// Trench length (x, away from the machine), width and depth \[m\].
    pub trench: [f64; 3],
    /// Distance from the machine's slewing axis to the trench's near
    /// edge \[m\].
    pub trench_offset: f64,
    /// Particle diameters, uniform in `[min, max]` \[m\].
    pub diameter: [f64; 2],
    /// Particle density [kg/m³].
    pub density: f64,
    /// Particles' Young's modulus \[Pa\] (the paper gives none; 1 GPa, a
    /// crushed-rock contact stiffness: under the bucket's 1e3 N per
    /// contact the Hertz overlap of a 25 mm sphere is 0.6 mm, where the
    /// granular papers' 6 MPa would give 17 mm, its whole radius).
    pub youngs_modulus: f64,
    /// Particles' friction coefficient and rolling-resistance coefficient
    /// (not given by the paper: 0.6 and 0.1, a gravel's; the granular
    /// papers' glass-bead values 0.91 and 0.32 jam the bed against the
    /// bucket at the cylinders' force limits).
    pub friction: [f64; 2],
    /// Solid fraction the trench is filled to (sets the particle count).
    pub fill_fraction: f64,
    /// Settling time before the cycle starts \[s\].
    pub settle_time: f64,
    /// Duration of the dig cycle \[s\] (its phases scale with it).
    pub cycle_time: f64,
    /// The machine.
    pub machine: MachineSpec,
    /// Seed.
    pub seed: u64,
}

impl ExcavatorSpec {
    /// The paper's scale: a 6 m × 2.5 m × 2 m trench (about 1e5
    /// particles), a 20 s cycle.
    pub fn paper() -> Self {
        Self {
            trench: [6.0, 2.5, 2.0],
            trench_offset: 5.0,
            diameter: [0.025, 0.1],
            density: 2500.0,
            youngs_modulus: 1e9,
            friction: [0.6, 0.1],
            fill_fraction: 0.58,
            settle_time: 1.5,
            cycle_time: 20.0,
            machine: MachineSpec::default(),
            seed: 1,
        }
    }

    /// The `--quick` size: the same machine on a trench cut down to
    /// 3 m × 2.2 m × 0.45 m (about 1e4 particles), a 12 s cycle.
    pub fn quick() -> Self {
        Self {
            trench: [3.0, 2.2, 0.45],
            trench_offset: 6.0,
            settle_time: 1.0,
            cycle_time: 12.0,
            ..Self::paper()
        }
    }

    fn validate(&self) -> Result<(), SceneError> {
        for x in self.trench {
            positive("excavator.trench", x)?;
        }
        positive("excavator.trench_offset", self.trench_offset)?;
        positive("excavator.diameter", self.diameter[0])?;
        positive("excavator.density", self.density)?;
        positive("excavator.youngs_modulus", self.youngs_modulus)?;
        positive("excavator.cycle_time", self.cycle_time)?;
        if self.diameter[1].is_nan() || self.diameter[1] < self.diameter[0] {
            return Err(SceneError::Invalid {
                field: "excavator.diameter",
                reason: "max below min".into(),
            });
        }
        SceneError::require(
            self.fill_fraction > 0.0 && self.fill_fraction < 0.74,
            "excavator.fill_fraction",
            "must lie in (0, 0.74)",
        )?;
        if self.machine.bucket_width >= self.trench[1] {
            return Err(SceneError::Invalid {
                field: "excavator.trench",
                reason: "the bucket is wider than the trench".into(),
            });
        }
        Ok(())
    }
}

/// Body and joint indices of the machine, and what the measurements need.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// Bodies: base, cab, boom, arm, bucket.
    pub bodies: [BodyId; 5],
    /// Slewing hinge (cab on base, driven).
    pub slew: JointId,
    /// Boom, arm and bucket cylinders (actuators, driven).
    pub cylinders: [JointId; 3],
    /// Bucket pin and teeth in the bucket's frame (relative to its
    /// centre), and the unit mouth normal and width axis there.
    pub bucket_frame: BucketFrame,
    /// First particle body (particles are the bodies from here on).
    pub first_particle: BodyId,
    /// Trench bounds `[x0, x1, y0, y1]` and depth.
    pub trench: ([f64; 4], f64),
    /// The dig cycle.
    pub schedule: DriveSchedule,
}

/// The bucket's geometry in its body frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BucketFrame {
    /// Pin (relative to the bucket's centre).
    pub pin: Vec3,
    /// Teeth.
    pub tip: Vec3,
    /// Unit mouth normal (pointing out of the scoop).
    pub mouth: Vec3,
    /// Scoop depth along the mouth normal \[m\].
    pub depth: f64,
    /// Half width \[m\].
    pub half_width: f64,
}

impl BucketFrame {
    /// Whether a world point is inside the scoop of a bucket at the given
    /// pose: between the side plates, above the back plate, behind the
    /// lip line and within the scoop depth.
    pub fn contains(&self, position: Vec3, orientation: Quat, point: Vec3) -> bool {
        let local = orientation.inverse() * (point - position) - self.pin;
        let along = self.tip - self.pin;
        let length = along.norm();
        let e1 = along / length;
        let s = local.dot(&e1);
        let h = local.dot(&self.mouth);
        let y = local.y;
        (0.0..=length).contains(&s) && (0.0..=self.depth).contains(&h) && y.abs() <= self.half_width
    }
}

/// Rotation about +y by `angle`.
fn about_y(angle: f64) -> Quat {
    Quat::from_axis_angle(&Vec3::y_axis(), angle)
}

/// A point in the machine's vertical plane at angle `phi` (from +x,
/// towards +z) and distance `r` from `origin`.
fn polar(origin: Vec3, phi: f64, r: f64) -> Vec3 {
    origin + r * Vec3::new(phi.cos(), 0.0, phi.sin())
}

/// Pose of the digging arm in absolute plane angles: boom β, arm α and
/// bucket γ (pin to teeth), from +x towards +z.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ArmPose {
    boom: f64,
    arm: f64,
    bucket: f64,
}

/// The fixed points of the machine at creation.
struct Layout {
    foot: Vec3,
    spec: MachineSpec,
}

impl Layout {
    fn nose(&self, p: &ArmPose) -> Vec3 {
        polar(self.foot, p.boom, self.spec.boom_length)
    }
    fn pin(&self, p: &ArmPose) -> Vec3 {
        polar(self.nose(p), p.arm, self.spec.arm_length)
    }
    fn tip(&self, p: &ArmPose) -> Vec3 {
        polar(self.pin(p), p.bucket, self.spec.bucket_length)
    }

    /// Inverse kinematics: the arm pose putting the teeth at `tip` (in
    /// the machine's plane) with the bucket at angle `bucket`, boom above
    /// the foot-to-pin line.
    fn reach(&self, tip: Vec3, bucket: f64) -> Result<ArmPose, SceneError> {
        let pin = tip - self.spec.bucket_length * Vec3::new(bucket.cos(), 0.0, bucket.sin());
        let d = pin - self.foot;
        let dist = d.norm();
        let (lb, la) = (self.spec.boom_length, self.spec.arm_length);
        let cos_delta = (lb * lb + dist * dist - la * la) / (2.0 * lb * dist);
        if !(-1.0..=1.0).contains(&cos_delta) {
            return Err(SceneError::Invalid {
                field: "excavator.cycle",
                reason: format!("the teeth cannot reach {tip:?}"),
            });
        }
        let boom = d.z.atan2(d.x) + cos_delta.acos();
        let nose = polar(self.foot, boom, lb);
        let to_pin = pin - nose;
        Ok(ArmPose {
            boom,
            arm: to_pin.z.atan2(to_pin.x),
            bucket,
        })
    }
}

/// Length of an actuator from `fixed` (on the parent) to `moving` (on the
/// child) after the child turns by `theta` about +y through `hinge`.
fn actuator_length(fixed: Vec3, moving: Vec3, hinge: Vec3, theta: f64) -> f64 {
    (hinge + about_y(theta) * (moving - hinge) - fixed).norm()
}

/// Pin-to-teeth length of the bucket.
fn m_bucket(spec: &ExcavatorSpec) -> f64 {
    spec.machine.bucket_length
}

/// Builds the excavator scene (see the module docs).
pub fn excavator(spec: ExcavatorSpec) -> Result<Scene, SceneError> {
    let (scene, _) = excavator_with_machine(spec)?;
    Ok(scene)
}

/// As [`excavator`], also returning the machine's indices.
pub fn excavator_with_machine(spec: ExcavatorSpec) -> Result<(Scene, Machine), SceneError> {
    spec.validate()?;
    let particle = Material {
        density: spec.density,
        youngs_modulus: spec.youngs_modulus,
        friction: spec.friction[0],
        rolling_resistance: spec.friction[1],
        ..Material::default()
    };
    // the machine's steel: its stiffness enters the bucket's contacts with
    // the particles (E* = 1/((1-ν²)/E_a + (1-ν²)/E_b) is set by the softer
    // side); left at the default 6 MPa, a 14 mm sphere under 1 kN sank
    // 10 mm (0.7 of its radius) into the teeth
    let steel = Material {
        density: 7800.0,
        youngs_modulus: 200e9,
        friction: 0.5,
        rolling_resistance: 0.0,
        ..Material::default()
    };
    let mut world = World::new(vec![particle, steel], Vec3::new(0.0, 0.0, -G))?;
    let [length, width, depth] = spec.trench;
    let x0 = spec.trench_offset;
    let bounds = [x0, x0 + length, -0.5 * width, 0.5 * width];
    add_terrain(&mut world, bounds, depth)?;
    let (bodies, joints, bucket_frame, schedule) = add_machine(&mut world, &spec, bounds, depth)?;
    let first_particle = world.len();
    add_bed(&mut world, &spec, bounds, depth)?;
    let machine = Machine {
        bodies,
        slew: joints.0,
        cylinders: joints.1,
        bucket_frame,
        first_particle: BodyId::from_index(first_particle),
        trench: (bounds, depth),
        schedule: schedule.clone(),
    };
    schedule.validate(&world)?;
    let settings = StepSettings {
        dt: 2.5e-3,
        ..StepSettings::default()
    };
    let scene = Scene {
        settings,
        duration: spec.settle_time + spec.cycle_time,
        iterations: 25,
        solver: SolverChoice::PgsDirect,
        schedule: Some(schedule),
        reduce_preset: Some(reduction_preset(&spec, machine.bodies[4])?),
        ..Scene::new("excavator", world)
    };
    Ok((scene, machine))
}

/// What `ndem run excavator --reduce` runs (`docs/machines.md`, "With
/// model reduction"): the paper's Table 2 thresholds with the contact
/// split, and a split sensor that moves with the bucket, a sphere of the
/// bucket's length plus 0.1 m around its centre, so that the material the
/// bucket reaches stays resolved. Without it the bucket drags slower than
/// the contact split's speeds and meets the merged bed as rigid blocks.
pub fn reduction_preset(
    spec: &ExcavatorSpec,
    bucket: BodyId,
) -> Result<ndem_reduce::ReductionSettings, SceneError> {
    let radius = spec.machine.bucket_length + 0.1;
    Ok(ndem_reduce::ReductionSettings {
        sensors: vec![ndem_reduce::SensorSplit::following(
            Shape::sphere(radius)?,
            bucket,
            Vec3::zeros(),
        )],
        ..ndem_reduce::ReductionSettings::default()
    })
}

/// Static terrain: the trench floor (a plane at `−depth`) and four slabs
/// around the trench whose tops are the ground at z = 0.
fn add_terrain(world: &mut World, b: [f64; 4], depth: f64) -> Result<(), SceneError> {
    let [x0, x1, y0, y1] = b;
    let far = 20.0;
    let terrain = |shape: Shape, centre: Vec3| {
        BodyDesc::fixed(shape, MaterialId::from_index(0), centre)
            .with_collision_group(MACHINE_GROUP)
    };
    world.add_body(terrain(
        Shape::half_space(Vec3::z())?,
        Vec3::new(0.0, 0.0, -depth),
    ))?;
    let slab = |lo: Vec3, hi: Vec3| -> Result<BodyDesc, SceneError> {
        Ok(terrain(Shape::cuboid(0.5 * (hi - lo))?, 0.5 * (hi + lo)))
    };
    for (lo, hi) in [
        (Vec3::new(x0 - far, -far, -depth), Vec3::new(x0, far, 0.0)),
        (Vec3::new(x1, -far, -depth), Vec3::new(x1 + far, far, 0.0)),
        (Vec3::new(x0, -far, -depth), Vec3::new(x1, y0, 0.0)),
        (Vec3::new(x0, y1, -depth), Vec3::new(x1, far, 0.0)),
    ] {
        world.add_body(slab(lo, hi)?)?;
    }
    Ok(())
}

type MachineParts = (
    [BodyId; 5],
    (JointId, [JointId; 3]),
    BucketFrame,
    DriveSchedule,
);

/// The machine at its start pose and its dig cycle.
fn add_machine(
    world: &mut World,
    spec: &ExcavatorSpec,
    trench: [f64; 4],
    depth: f64,
) -> Result<MachineParts, SceneError> {
    let m = spec.machine;
    let layout = Layout {
        foot: Vec3::new(0.9, 0.0, 2.2),
        spec: m,
    };
    let body = |world: &mut World, shape: Shape, mass: MassProperties, at: Vec3, q: Quat| {
        let mut d = BodyDesc::dynamic(shape, MaterialId::from_index(1), at)
            .with_orientation(q)
            .with_collision_group(MACHINE_GROUP);
        d.mass = Some(mass);
        world.add_body(d)
    };
    let boxed = |mass: f64, half: Vec3| -> Result<(Shape, MassProperties), SceneError> {
        Ok((Shape::cuboid(half)?, MassProperties::solid_box(mass, half)?))
    };
    // base and cab
    let (s, mp) = boxed(m.masses[0], Vec3::new(2.3, 1.7, 0.6))?;
    let base = body(world, s, mp, Vec3::new(0.0, 0.0, 0.6), Quat::identity())?;
    let (s, mp) = boxed(m.masses[1], Vec3::new(1.8, 1.5, 0.9))?;
    let cab = body(world, s, mp, Vec3::new(-0.6, 0.0, 2.1), Quat::identity())?;
    // start pose: teeth above the far part of the trench
    let [x0, x1, _, _] = trench;
    let start = layout.reach(Vec3::new(x1 - 0.6, 0.0, 1.0), -60f64.to_radians())?;
    let nose = layout.nose(&start);
    let pin = layout.pin(&start);
    let tip = layout.tip(&start);
    let (s, mp) = boxed(m.masses[2], Vec3::new(0.5 * m.boom_length, 0.35, 0.4))?;
    let boom = body(
        world,
        s,
        mp,
        0.5 * (layout.foot + nose),
        about_y(-start.boom),
    )?;
    let (s, mp) = boxed(m.masses[3], Vec3::new(0.5 * m.arm_length, 0.3, 0.3))?;
    let arm = body(world, s, mp, 0.5 * (nose + pin), about_y(-start.arm))?;
    let (bucket_shape, bucket_frame, centre) = bucket_mesh(&m, pin, tip, start.bucket)?;
    let half = Vec3::new(
        0.5 * m.bucket_length,
        0.5 * m.bucket_width,
        0.5 * m.bucket_depth,
    );
    let bucket_mass = MassProperties::solid_box(m.masses[4], half)?;
    let bucket = body(world, bucket_shape, bucket_mass, centre, Quat::identity())?;
    // joints
    let ground = BodyId::from_index(0);
    world.add_joint(Joint::lock(world, ground, base, Vec3::new(0.0, 0.0, 0.6))?)?;
    let slew = world.add_joint(Joint::hinge(
        world,
        base,
        cab,
        Vec3::new(0.0, 0.0, 1.2),
        Vec3::z(),
        None,
    )?)?;
    world.add_joint(Joint::hinge(
        world,
        cab,
        boom,
        layout.foot,
        Vec3::y(),
        None,
    )?)?;
    world.add_joint(Joint::hinge(world, boom, arm, nose, Vec3::y(), None)?)?;
    world.add_joint(Joint::hinge(world, arm, bucket, pin, Vec3::y(), None)?)?;
    // cylinders: (parent anchor, child anchor, hinge) at the start pose
    let up = |phi: f64| Vec3::new(-phi.sin(), 0.0, phi.cos());
    let boom_dir = Vec3::new(start.boom.cos(), 0.0, start.boom.sin());
    let arm_dir = Vec3::new(start.arm.cos(), 0.0, start.arm.sin());
    let anchors = [
        (
            Vec3::new(1.6, 0.0, 1.3),
            layout.foot + 2.6 * boom_dir - 0.45 * up(start.boom),
            layout.foot,
        ),
        (
            layout.foot + 4.0 * boom_dir + 0.5 * up(start.boom),
            nose - 0.7 * arm_dir + 0.3 * up(start.arm),
            nose,
        ),
        (
            nose + 0.9 * arm_dir + 0.45 * up(start.arm),
            pin + 0.6 * up(start.arm) - 0.1 * arm_dir,
            pin,
        ),
    ];
    let pairs = [(cab, boom), (boom, arm), (arm, bucket)];
    let mut cylinders = [JointId::from_index(0); 3];
    for (k, ((a, b), (fixed, moving, _))) in pairs.iter().zip(&anchors).enumerate() {
        let cylinder = Joint::actuator(world, *a, *b, (*fixed, *moving), None)?;
        cylinders[k] = world.add_joint(cylinder)?;
    }
    let schedule = dig_cycle(
        spec,
        &layout,
        &start,
        &anchors,
        [slew, cylinders[0], cylinders[1], cylinders[2]].map(JointId::index),
        (x0, x1, depth),
    )?;
    Ok((
        [base, cab, boom, arm, bucket],
        (slew, cylinders),
        bucket_frame,
        schedule,
    ))
}

/// The bucket: an open scoop (back plate from pin to teeth, a lip from the
/// teeth towards the mouth, two side plates) as a triangle mesh about its
/// vertices' centroid; returns the shape, its frame and the centre.
fn bucket_mesh(
    m: &MachineSpec,
    pin: Vec3,
    tip: Vec3,
    angle: f64,
) -> Result<(Shape, BucketFrame, Vec3), SceneError> {
    // mouth normal: the bucket's plane normal on the machine's side when
    // the teeth point down
    let mouth = Vec3::new(angle.sin(), 0.0, -angle.cos());
    let w = 0.5 * m.bucket_width;
    let lip = tip + 0.6 * m.bucket_depth * mouth;
    let top = pin + m.bucket_depth * mouth;
    let side = |p: Vec3, s: f64| p + Vec3::new(0.0, s * w, 0.0);
    let points = [
        side(pin, 1.0),
        side(pin, -1.0),
        side(tip, 1.0),
        side(tip, -1.0),
        side(lip, 1.0),
        side(lip, -1.0),
        side(top, 1.0),
        side(top, -1.0),
    ];
    let centre = points.iter().sum::<Vec3>() / points.len() as f64;
    let vertices: Vec<Vec3> = points.iter().map(|p| p - centre).collect();
    // back (pin-tip), lip (tip-lip), sides (pin, tip, lip, top) at ±y
    let indices = vec![
        [0, 1, 3],
        [0, 3, 2],
        [2, 3, 5],
        [2, 5, 4],
        [0, 2, 4],
        [0, 4, 6],
        [1, 3, 5],
        [1, 5, 7],
    ];
    let shape = Shape::trimesh(&vertices, indices)?;
    let frame = BucketFrame {
        pin: pin - centre,
        tip: tip - centre,
        mouth,
        depth: m.bucket_depth,
        half_width: w,
    };
    Ok((shape, frame, centre))
}

/// The dig cycle as position targets of the slewing hinge and the three
/// cylinders: approach, penetrate, drag, curl, lift, swing, dump.
fn dig_cycle(
    spec: &ExcavatorSpec,
    layout: &Layout,
    start: &ArmPose,
    anchors: &[(Vec3, Vec3, Vec3); 3],
    joints: [usize; 4],
    (x0, x1, depth): (f64, f64, f64),
) -> Result<DriveSchedule, SceneError> {
    let dig = (0.5 * depth).min(1.0);
    let deg = |x: f64| x.to_radians();
    let tip = |x: f64, z: f64| Vec3::new(x, 0.0, z);
    let near = (x0 + 1.2).min(x1 - 1.0);
    // teeth-led phases by inverse kinematics; the curl turns the bucket
    // about its pin with boom and arm held; the lift raises the pin
    let approach = layout.reach(tip(x1 - 0.5, 0.3), deg(-70.0))?;
    let penetrate = layout.reach(tip(x1 - 0.8, -dig), deg(-85.0))?;
    let drag = layout.reach(tip(near, -dig), deg(-125.0))?;
    let curl = ArmPose {
        bucket: deg(-175.0),
        ..drag
    };
    let lifted_pin = layout.pin(&drag) + Vec3::new(-0.3, 0.0, 1.8);
    let lift = layout.reach(
        lifted_pin + m_bucket(spec) * Vec3::new(deg(-175.0).cos(), 0.0, deg(-175.0).sin()),
        deg(-175.0),
    )?;
    let dump = ArmPose {
        bucket: deg(-60.0),
        ..lift
    };
    // (phase, fraction of the cycle, arm pose, slew)
    let rows = [
        ("approach", 0.15, approach, 0.0),
        ("penetrate", 0.25, penetrate, 0.0),
        ("drag", 0.50, drag, 0.0),
        ("curl", 0.60, curl, 0.0),
        ("lift", 0.70, lift, 0.0),
        ("swing", 0.87, lift, deg(90.0)),
        ("dump", 0.95, dump, deg(90.0)),
        ("hold", 1.0, dump, deg(90.0)),
    ];
    let relative = |p: &ArmPose| {
        [
            -(p.boom - start.boom),
            -((p.arm - p.boom) - (start.arm - start.boom)),
            -((p.bucket - p.arm) - (start.bucket - start.arm)),
        ]
    };
    let lengths = |p: &ArmPose| -> Vec<f64> {
        relative(p)
            .iter()
            .zip(anchors)
            .map(|(&theta, (fixed, moving, hinge))| actuator_length(*fixed, *moving, *hinge, theta))
            .collect()
    };
    let mut times = vec![0.0, spec.settle_time];
    let mut phases = vec!["initial".to_string(), "settle".to_string()];
    let start_targets = {
        let mut t = vec![0.0];
        t.extend(lengths(start));
        t
    };
    let mut targets = vec![start_targets.clone(), start_targets];
    for (phase, fraction, pose, slew) in rows {
        let mut row = vec![slew];
        row.extend(lengths(&pose));
        times.push(spec.settle_time + fraction * spec.cycle_time);
        phases.push(phase.to_string());
        targets.push(row);
    }
    let m = spec.machine;
    Ok(DriveSchedule {
        joints: joints.to_vec(),
        max_force: vec![
            m.slew_torque,
            m.cylinder_force[0],
            m.cylinder_force[1],
            m.cylinder_force[2],
        ],
        phases,
        times,
        targets,
    })
}

/// Fills the trench with spheres of uniform diameters in layers: the
/// diameters are drawn, sorted, cut into layers of near-equal size (each
/// on a square lattice of its largest diameter, jittered) and the layers
/// stacked in a seeded random order, so sizes mix through the depth.
fn add_bed(
    world: &mut World,
    spec: &ExcavatorSpec,
    b: [f64; 4],
    depth: f64,
) -> Result<(), SceneError> {
    let [x0, x1, y0, y1] = b;
    let [dmin, dmax] = spec.diameter;
    let mean_volume = std::f64::consts::PI / 6.0 * (dmax.powi(4) - dmin.powi(4))
        / (4.0 * (dmax - dmin).max(1e-300));
    let mean_volume = if dmax > dmin {
        mean_volume
    } else {
        std::f64::consts::PI / 6.0 * dmin.powi(3)
    };
    let count = (spec.fill_fraction * (x1 - x0) * (y1 - y0) * depth / mean_volume).round() as usize;
    let mut rng = Rng::new(spec.seed);
    let mut diameters: Vec<f64> = (0..count).map(|_| rng.range(dmin, dmax)).collect();
    diameters.sort_by(f64::total_cmp);
    let mut layers: Vec<(f64, Vec<f64>)> = Vec::new();
    let mut i = 0;
    while i < count {
        let mut spacing = diameters[i] * 1.01;
        let fit = |s: f64| {
            ((x1 - x0) / s).floor().max(1.0) as usize * ((y1 - y0) / s).floor().max(1.0) as usize
        };
        let mut end = (i + fit(spacing)).min(count);
        while diameters[end - 1] * 1.01 > spacing {
            spacing = diameters[end - 1] * 1.01;
            end = (i + fit(spacing)).min(count);
        }
        layers.push((spacing, diameters[i..end].to_vec()));
        i = end;
    }
    for k in (1..layers.len()).rev() {
        let j = (rng.next_u64() % (k as u64 + 1)) as usize;
        layers.swap(k, j);
    }
    let mut z = -depth;
    for (spacing, sizes) in layers {
        let nx = ((x1 - x0) / spacing).floor().max(1.0) as usize;
        let ny = ((y1 - y0) / spacing).floor().max(1.0) as usize;
        let margin_x = 0.5 * ((x1 - x0) - nx as f64 * spacing);
        let margin_y = 0.5 * ((y1 - y0) - ny as f64 * spacing);
        for (k, d) in sizes.iter().enumerate() {
            let (ix, iy) = (k % nx, k / nx % ny);
            let jitter = 0.45 * (spacing - d);
            let p = Vec3::new(
                x0 + margin_x + (ix as f64 + 0.5) * spacing + rng.range(-jitter, jitter),
                y0 + margin_y + (iy as f64 + 0.5) * spacing + rng.range(-jitter, jitter),
                z + 0.5 * spacing,
            );
            world.add_sphere(0.5 * d, MaterialId::from_index(0), p)?;
        }
        z += spacing;
    }
    Ok(())
}

/// Surface heights over the trench on a square grid: per cell, the top
/// (`z + r`) of the highest particle whose centre lies in it.
#[derive(Debug, Clone, PartialEq)]
pub struct HeightMap {
    /// Cells along x.
    pub nx: usize,
    /// Cells along y.
    pub ny: usize,
    /// Cell side \[m\].
    pub cell: f64,
    /// Lower corner `(x0, y0)`.
    pub origin: (f64, f64),
    /// Heights `values[iy * nx + ix]` \[m\] (`None`: no particle).
    pub values: Vec<Option<f64>>,
}

impl HeightMap {
    /// The map of the particles of `world` over the trench of `machine`.
    pub fn measure(world: &World, machine: &Machine, cell: f64) -> Self {
        let ([x0, x1, y0, y1], _) = machine.trench;
        let nx = ((x1 - x0) / cell).round().max(1.0) as usize;
        let ny = ((y1 - y0) / cell).round().max(1.0) as usize;
        let mut values = vec![None; nx * ny];
        let shapes = world.shapes();
        for (i, p) in world
            .positions()
            .iter()
            .enumerate()
            .skip(machine.first_particle.index())
        {
            // particles only: an aggregate body of model reduction has no
            // shape of its own (its members are counted)
            let Some(r) = shapes[i].sphere_radius() else {
                continue;
            };
            if p.x < x0 || p.x >= x1 || p.y < y0 || p.y >= y1 {
                continue;
            }
            let ix = (((p.x - x0) / cell) as usize).min(nx - 1);
            let iy = (((p.y - y0) / cell) as usize).min(ny - 1);
            let v: &mut Option<f64> = &mut values[iy * nx + ix];
            *v = Some(v.map_or(p.z + r, |h| h.max(p.z + r)));
        }
        Self {
            nx,
            ny,
            cell,
            origin: (x0, y0),
            values,
        }
    }

    /// Mean height over the cells with a value whose centre satisfies
    /// `keep(x, y)`.
    pub fn mean_where(&self, keep: impl Fn(f64, f64) -> bool) -> f64 {
        let (mut sum, mut n) = (0.0, 0usize);
        for iy in 0..self.ny {
            for ix in 0..self.nx {
                let (x, y) = self.centre(ix, iy);
                if let Some(h) = self.values[iy * self.nx + ix]
                    && keep(x, y)
                {
                    sum += h;
                    n += 1;
                }
            }
        }
        if n == 0 { f64::NAN } else { sum / n as f64 }
    }

    /// Centre of cell `(ix, iy)`.
    pub fn centre(&self, ix: usize, iy: usize) -> (f64, f64) {
        (
            self.origin.0 + (ix as f64 + 0.5) * self.cell,
            self.origin.1 + (iy as f64 + 0.5) * self.cell,
        )
    }

    /// Volumes `(lowered, raised)` \[m³\] between this map (before) and
    /// `after`: the sums of the height drops and rises over cells with a
    /// value in both, times the cell area (bulk volume, voids included).
    pub fn changes(&self, after: &HeightMap) -> (f64, f64) {
        let area = self.cell * self.cell;
        let (mut lowered, mut raised) = (0.0, 0.0);
        for (b, a) in self.values.iter().zip(&after.values) {
            if let (Some(b), Some(a)) = (b, a) {
                lowered += (b - a).max(0.0) * area;
                raised += (a - b).max(0.0) * area;
            }
        }
        (lowered, raised)
    }
}

/// Particles in the bucket's scoop: `(count, solid volume [m³], mass [kg])`.
pub fn bucket_fill(world: &World, machine: &Machine) -> (usize, f64, f64) {
    let b = machine.bodies[4];
    let (pb, qb) = (world.position(b), world.orientation(b));
    let shapes = world.shapes();
    let masses = world.mass_properties();
    let (mut n, mut volume, mut mass) = (0, 0.0, 0.0);
    for (i, p) in world
        .positions()
        .iter()
        .enumerate()
        .skip(machine.first_particle.index())
    {
        // particles only: an aggregate body of model reduction carries its
        // members' mass, which they count themselves
        let Some(r) = shapes[i].sphere_radius() else {
            continue;
        };
        if machine.bucket_frame.contains(pb, qb, *p) {
            n += 1;
            volume += std::f64::consts::PI * 4.0 / 3.0 * r.powi(3);
            mass += masses[i].map_or(0.0, |m| m.mass);
        }
    }
    (n, volume, mass)
}

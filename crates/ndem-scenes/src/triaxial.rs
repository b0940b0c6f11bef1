//! The triaxial cell of the warm-starting paper, section 4.4: six dynamic
//! walls (100 kg) on prismatic motors around a sample. First all walls
//! apply the hydrostatic stress σ_h (force control: σ_i = f_i / A_i with
//! the current cross-section A_i); then the two end walls (z) are driven
//! inwards at a fixed speed while the side walls keep σ_x = σ_y = σ_h. The
//! deviator σ_z − σ_h is read from the end-wall motor forces.
//!
//! Gravity is off in this scene: with the paper's 100 Pa confinement, the
//! self-weight stress of a 0.2 m sample (≈ 4 kPa) and the weight of a
//! 100 kg end wall (≈ 30 kPa on its area) would dwarf the applied stress,
//! so the paper's numbers only make sense without gravity.

use crate::builders::{D, D2, Scene, SceneError, positive};
use crate::rng::Rng;
use ndem_collide::Shape;
use ndem_math::{MassProperties, Material, Vec3};
use ndem_step::{BodyDesc, Joint, JointKind, Motor, Stepper, World};
use serde::{Deserialize, Serialize};

/// Collision group shared by the six walls and their anchor: the walls
/// overlap at the edges of the cell and must not touch each other.
pub const WALL_GROUP: u32 = 1;

/// The state machine and servo of a triaxial cell. It only sets motor
/// targets and force bounds; the stepper does the rest.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriaxialControl {
    /// Wall bodies in the order −x, +x, −y, +y, −z, +z.
    pub walls: [usize; 6],
    /// Their prismatic joints (anchor → wall, axis pointing into the
    /// sample), same order.
    pub joints: [usize; 6],
    /// Half thickness of every wall \[m\].
    pub wall_half_thickness: f64,
    /// Hydrostatic (confining) stress σ_h \[Pa\] (paper: 100 Pa).
    pub confining_pressure: f64,
    /// Inward speed of each end wall during shear [m/s] (paper: 0.01).
    pub axial_speed: f64,
    /// Force bound of the end-wall motors during shear \[N\].
    pub axial_force_limit: f64,
    /// Inward target speed of force-controlled motors [m/s]; never reached,
    /// so their force saturates at σ_h A (force control).
    pub servo_speed: f64,
    /// Simulated time at which shear starts \[s\].
    pub shear_start_time: f64,
    /// Sample lengths [L_x, L_y, L_z] when shear started; set by
    /// [`TriaxialControl::apply`].
    pub shear_start_lengths: Option<[f64; 3]>,
}

/// One measurement of a triaxial cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TriaxialState {
    /// Inner sample lengths [L_x, L_y, L_z] \[m\].
    pub lengths: [f64; 3],
    /// Wall stresses [σ_x, σ_y, σ_z] \[Pa\]: mean inward motor force of the
    /// two walls of an axis over the current cross-section.
    pub stress: [f64; 3],
    /// Wall stresses from the contact forces on the walls (mean outward
    /// normal force of the two walls of an axis over the cross-section)
    /// \[Pa\]: equals [`TriaxialState::stress`] in equilibrium; the
    /// difference is the walls' inertia.
    pub contact_stress: [f64; 3],
    /// Deviator σ_z − σ_h \[Pa\].
    pub deviator: f64,
    /// Axial strain 1 − L_z / L_z0 (0 before shear).
    pub axial_strain: f64,
    /// Lateral strain (L_x + L_y)/(L_x0 + L_y0) − 1 (0 before shear;
    /// positive when the sample bulges).
    pub lateral_strain: f64,
    /// Volumetric strain 1 − V / V0 (0 before shear).
    pub volumetric_strain: f64,
    /// `true` once shear has started.
    pub shearing: bool,
}

impl TriaxialControl {
    /// Inner sample lengths [L_x, L_y, L_z] between opposite wall faces.
    pub fn lengths(&self, world: &World) -> [f64; 3] {
        let p = world.positions();
        [0, 1, 2].map(|k| {
            p[self.walls[2 * k + 1]][k] - p[self.walls[2 * k]][k] - 2.0 * self.wall_half_thickness
        })
    }

    /// `true` once shear has started at `time`.
    pub fn shearing(&self, time: f64) -> bool {
        time >= self.shear_start_time
    }

    /// Sets the motors for the next step at simulated time `time`: σ_h A on
    /// all walls while consolidating; then the end walls at the axial speed.
    pub fn apply(&mut self, world: &mut World, time: f64) -> Result<(), SceneError> {
        let l = self.lengths(world);
        if !l.iter().all(|x| x.is_finite() && *x > 0.0) {
            return Err(SceneError::Invalid {
                field: "triaxial",
                reason: format!("the walls crossed (sample lengths {l:?})"),
            });
        }
        let area = [l[1] * l[2], l[0] * l[2], l[0] * l[1]];
        let shearing = self.shearing(time);
        if shearing && self.shear_start_lengths.is_none() {
            self.shear_start_lengths = Some(l);
        }
        let joints = self.joints;
        let n_joints = world.joints().len();
        for (w, &j) in joints.iter().enumerate() {
            if j >= n_joints {
                return Err(SceneError::Invalid {
                    field: "triaxial.joints",
                    reason: format!("joint {j} does not exist"),
                });
            }
            let k = w / 2;
            let motor = if shearing && k == 2 {
                Motor {
                    target_speed: self.axial_speed,
                    max_force: self.axial_force_limit,
                }
            } else {
                Motor {
                    target_speed: self.servo_speed,
                    max_force: self.confining_pressure * area[k],
                }
            };
            let joint = &mut world.joints_mut()[j];
            match &mut joint.kind {
                JointKind::Prismatic { motor: m, .. } => *m = Some(motor),
                JointKind::Lock
                | JointKind::Ball
                | JointKind::Hinge { .. }
                | JointKind::Actuator { .. } => {
                    return Err(SceneError::Invalid {
                        field: "triaxial.joints",
                        reason: format!("joint {j} is not prismatic"),
                    });
                }
            }
        }
        Ok(())
    }

    /// Measures stresses and strains after a step of `stepper`.
    pub fn measure(&self, world: &World, stepper: &Stepper) -> TriaxialState {
        let l = self.lengths(world);
        let area = [l[1] * l[2], l[0] * l[2], l[0] * l[1]];
        let reactions = stepper.joint_reactions(world);
        let inward = |w: usize| -> f64 {
            // the drive force pushes the wall (body b) along +axis, inward
            reactions
                .get(self.joints[w])
                .and_then(|r| r.drive_force)
                .unwrap_or(f64::NAN)
        };
        let stress = [0, 1, 2].map(|k| 0.5 * (inward(2 * k) + inward(2 * k + 1)) / area[k]);
        let contacts = stepper.contact_forces();
        let pushed = |w: usize| {
            let k = w / 2;
            let outward = if w.is_multiple_of(2) { -1.0 } else { 1.0 };
            outward * crate::measure::force_on_body(&contacts, self.walls[w])[k]
        };
        let contact_stress = [0, 1, 2].map(|k| 0.5 * (pushed(2 * k) + pushed(2 * k + 1)) / area[k]);
        let (axial, lateral, volumetric) = match self.shear_start_lengths {
            Some(l0) => (
                1.0 - l[2] / l0[2],
                (l[0] + l[1]) / (l0[0] + l0[1]) - 1.0,
                1.0 - (l[0] * l[1] * l[2]) / (l0[0] * l0[1] * l0[2]),
            ),
            None => (0.0, 0.0, 0.0),
        };
        TriaxialState {
            lengths: l,
            stress,
            contact_stress,
            deviator: stress[2] - self.confining_pressure,
            axial_strain: axial,
            lateral_strain: lateral,
            volumetric_strain: volumetric,
            shearing: self.shear_start_lengths.is_some(),
        }
    }
}

/// Parameters of [`triaxial`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TriaxialSpec {
    /// Number of particles (not given in the paper; bi-disperse d and d₂,
    /// equal numbers).
    pub particles: usize,
    /// Hydrostatic stress σ_h \[Pa\] (paper: 100).
    pub confining_pressure: f64,
    /// Mass of each wall \[kg\] (paper: 100).
    pub wall_mass: f64,
    /// Young's modulus \[Pa\] (paper: 60 MPa for this test).
    pub youngs_modulus: f64,
    /// Inward speed of each end wall during shear [m/s] (paper: 0.01).
    pub axial_speed: f64,
    /// Duration of the hydrostatic consolidation \[s\].
    pub consolidation_time: f64,
    /// Initial solid fraction of the random loose sample.
    pub initial_fraction: f64,
    /// Shear until this axial strain (sets the scene duration).
    pub final_axial_strain: f64,
    /// Seed of the particle placement.
    pub seed: u64,
}

impl Default for TriaxialSpec {
    fn default() -> Self {
        Self {
            particles: 2000,
            confining_pressure: 100.0,
            wall_mass: 100.0,
            youngs_modulus: 60e6,
            axial_speed: 0.01,
            consolidation_time: 3.0,
            initial_fraction: 0.33,
            final_axial_strain: 0.45,
            seed: 1,
        }
    }
}

/// The triaxial cell (warm-starting paper, section 4.4): `particles`
/// spheres placed at random without overlap in a cube at the initial solid
/// fraction, six 100 kg walls on prismatic motors anchored to a static
/// body, no gravity. Consolidation under σ_h for `consolidation_time`, then
/// shear at the axial speed.
pub fn triaxial(spec: TriaxialSpec) -> Result<Scene, SceneError> {
    spec.validate()?;
    let material = Material {
        youngs_modulus: spec.youngs_modulus,
        ..Material::default()
    };
    let mut world = World::new(vec![material], Vec3::zeros())?;
    let radii: Vec<f64> = (0..spec.particles)
        .map(|i| if i % 2 == 0 { 0.5 * D } else { 0.5 * D2 })
        .collect();
    let solid: f64 = radii
        .iter()
        .map(|r| 4.0 / 3.0 * std::f64::consts::PI * r.powi(3))
        .sum();
    // small samples lose room to the walls: grow the box until the random
    // placement succeeds (deterministically)
    let mut side = (solid / spec.initial_fraction).cbrt();
    let mut attempt = 0;
    let centres = loop {
        match random_placement(&radii, 0.5 * side, spec.seed) {
            Some(c) => break c,
            None if attempt < 30 => {
                attempt += 1;
                side *= 1.03;
            }
            None => {
                return Err(SceneError::Invalid {
                    field: "initial_fraction",
                    reason: "random placement failed; lower the initial fraction".into(),
                });
            }
        }
    };
    // static anchor of the motors, far away and in the walls' group
    let anchor_position = Vec3::new(0.0, 0.0, -100.0 * side);
    let ground = world.add_body(
        BodyDesc::fixed(Shape::cuboid(Vec3::repeat(0.01))?, 0, anchor_position)
            .with_collision_group(WALL_GROUP),
    )?;
    let thickness = 0.5 * D;
    let (walls, joints) = add_walls(&mut world, ground, (side, thickness), &spec)?;
    for (c, r) in centres.iter().zip(&radii) {
        world.add_body(BodyDesc::dynamic(Shape::sphere(*r)?, 0, *c))?;
    }
    // shear until the final axial strain of a sample about 15 % shorter
    // than the loose one
    let shear_time = spec.final_axial_strain * 0.85 * side / (2.0 * spec.axial_speed);
    let control = TriaxialControl {
        walls,
        joints,
        wall_half_thickness: thickness,
        confining_pressure: spec.confining_pressure,
        axial_speed: spec.axial_speed,
        axial_force_limit: 1e3 * spec.confining_pressure * side * side,
        servo_speed: 1.0,
        shear_start_time: spec.consolidation_time,
        shear_start_lengths: None,
    };
    Ok(Scene {
        duration: spec.consolidation_time + shear_time,
        iterations: 200,
        triaxial: Some(control),
        ..Scene::new("triaxial", world)
    })
}

/// The six walls of the cell around the cube of edge `side`, each
/// `thickness` thick on a prismatic motor to `ground` pushing inwards at
/// up to `σ_h side²`: the wall bodies and their joints, in the order
/// `−x, +x, −y, +y, −z, +z`.
fn add_walls(
    world: &mut World,
    ground: usize,
    (side, thickness): (f64, f64),
    spec: &TriaxialSpec,
) -> Result<([usize; 6], [usize; 6]), SceneError> {
    let half = 0.5 * side;
    let mut walls = [0; 6];
    let mut joints = [0; 6];
    for k in 0..3 {
        for (s, sign) in [-1.0f64, 1.0].into_iter().enumerate() {
            let mut e = Vec3::zeros();
            e[k] = 1.0;
            let mut half_extents = Vec3::repeat(side);
            half_extents[k] = thickness;
            let centre = e * (sign * (half + thickness));
            let mut desc = BodyDesc::dynamic(Shape::cuboid(half_extents)?, 0, centre)
                .with_collision_group(WALL_GROUP);
            desc.mass = Some(MassProperties::solid_box(spec.wall_mass, half_extents)?);
            let w = world.add_body(desc)?;
            let axis = -sign * e;
            let j = world.add_joint(Joint::prismatic(
                world,
                ground,
                w,
                centre,
                axis,
                Some(Motor {
                    target_speed: 1.0,
                    max_force: spec.confining_pressure * side * side,
                }),
            )?)?;
            walls[2 * k + s] = w;
            joints[2 * k + s] = j;
        }
    }
    Ok((walls, joints))
}

impl TriaxialSpec {
    /// Checks the fields: positive pressure, wall mass, modulus, speed and
    /// strain, a finite non-negative consolidation time, an initial solid
    /// fraction in `(0, 0.4]` and at least one particle.
    pub fn validate(&self) -> Result<(), SceneError> {
        let spec = self;
        positive("confining_pressure", spec.confining_pressure)?;
        positive("wall_mass", spec.wall_mass)?;
        positive("youngs_modulus", spec.youngs_modulus)?;
        positive("axial_speed", spec.axial_speed)?;
        positive("final_axial_strain", spec.final_axial_strain)?;
        if !(spec.consolidation_time.is_finite() && spec.consolidation_time >= 0.0) {
            return Err(SceneError::Invalid {
                field: "consolidation_time",
                reason: "must be finite and >= 0".into(),
            });
        }
        if !(spec.initial_fraction > 0.0 && spec.initial_fraction <= 0.4) {
            return Err(SceneError::Invalid {
                field: "initial_fraction",
                reason: "random placement needs a fraction in (0, 0.4]".into(),
            });
        }
        if spec.particles == 0 {
            return Err(SceneError::Invalid {
                field: "particles",
                reason: "a triaxial sample needs particles".into(),
            });
        }
        Ok(())
    }
}

/// Random sequential placement of spheres (largest first) in the cube
/// `[-half, half]³` without overlap; deterministic for a seed. `None` when
/// a sphere finds no room in 2000 attempts.
fn random_placement(radii: &[f64], half: f64, seed: u64) -> Option<Vec<Vec3>> {
    let mut rng = Rng::new(seed);
    let r_max = radii.iter().copied().fold(0.0, f64::max);
    // cell list for the overlap test
    let cell = 2.0 * r_max;
    let n_cells = ((2.0 * half / cell).floor() as usize).max(1);
    let index = |x: f64| (((x + half) / cell) as usize).min(n_cells - 1);
    let mut grid: Vec<Vec<usize>> = vec![Vec::new(); n_cells * n_cells * n_cells];
    let mut order: Vec<usize> = (0..radii.len()).collect();
    order.sort_by(|&a, &b| radii[b].total_cmp(&radii[a]).then(a.cmp(&b)));
    let mut centres = vec![Vec3::zeros(); radii.len()];
    for &i in &order {
        let r = radii[i];
        let mut placed = false;
        for _ in 0..2_000 {
            let c = Vec3::new(
                rng.range(-half + r, half - r),
                rng.range(-half + r, half - r),
                rng.range(-half + r, half - r),
            );
            let (cx, cy, cz) = (index(c.x), index(c.y), index(c.z));
            let mut free = true;
            'scan: for x in cx.saturating_sub(1)..=(cx + 1).min(n_cells - 1) {
                for y in cy.saturating_sub(1)..=(cy + 1).min(n_cells - 1) {
                    for z in cz.saturating_sub(1)..=(cz + 1).min(n_cells - 1) {
                        for &j in &grid[(x * n_cells + y) * n_cells + z] {
                            if (centres[j] - c).norm() < r + radii[j] {
                                free = false;
                                break 'scan;
                            }
                        }
                    }
                }
            }
            if free {
                centres[i] = c;
                grid[(cx * n_cells + cy) * n_cells + cz].push(i);
                placed = true;
                break;
            }
        }
        if !placed {
            return None;
        }
    }
    Some(centres)
}

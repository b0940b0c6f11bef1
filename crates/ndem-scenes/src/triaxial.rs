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

use crate::error::SceneError;
use crate::params::{D, D2, positive};
use crate::rng::Rng;
use crate::scene::Scene;
use ndem_collide::Shape;
use ndem_math::{MassProperties, Material, SettingError, Vec3};
use ndem_step::{BodyDesc, BodyId, Joint, MaterialId, Motor, World};

pub(crate) mod control;
pub use control::{TriaxialControl, TriaxialState};

/// Collision group shared by the six walls and their anchor: the walls
/// overlap at the edges of the cell and must not touch each other.
pub const WALL_GROUP: u32 = 1;

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
        BodyDesc::fixed(
            Shape::cuboid(Vec3::repeat(0.01))?,
            MaterialId::from_index(0),
            anchor_position,
        )
        .with_collision_group(WALL_GROUP),
    )?;
    let thickness = 0.5 * D;
    let (walls, joints) = add_walls(&mut world, ground.index(), (side, thickness), &spec)?;
    for (c, r) in centres.iter().zip(&radii) {
        world.add_sphere(*r, MaterialId::from_index(0), *c)?;
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
            let mut desc = BodyDesc::dynamic(
                Shape::cuboid(half_extents)?,
                MaterialId::from_index(0),
                centre,
            )
            .with_collision_group(WALL_GROUP);
            desc.mass = Some(MassProperties::solid_box(spec.wall_mass, half_extents)?);
            let w = world.add_body(desc)?;
            let axis = -sign * e;
            let j = world.add_joint(Joint::prismatic(
                world,
                BodyId::from_index(ground),
                w,
                centre,
                axis,
                Some(Motor {
                    target_speed: 1.0,
                    max_force: spec.confining_pressure * side * side,
                }),
            )?)?;
            walls[2 * k + s] = w.index();
            joints[2 * k + s] = j.index();
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
        SceneError::require(
            spec.consolidation_time.is_finite() && spec.consolidation_time >= 0.0,
            "consolidation_time",
            "must be finite and >= 0",
        )?;
        SceneError::require(
            spec.initial_fraction > 0.0 && spec.initial_fraction <= 0.4,
            "initial_fraction",
            "random placement needs a fraction in (0, 0.4]",
        )?;
        SceneError::require(
            spec.particles != 0,
            "particles",
            "a triaxial sample needs particles",
        )?;
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

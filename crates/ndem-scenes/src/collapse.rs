//! The granular collapse of the adaptive-model-reduction paper (section
//! 4, Table 1, Figs. 6 and 9-11): bi-disperse spheres (d = 13 and 10 mm)
//! settle in a cube of side 15d with frictionless side walls; one wall is
//! raised quickly and the particles collapse into a semi-pile whose top
//! surface angle θ_collapse is read at t = 2 s.
//!
//! Choices the paper leaves open (stated in docs/reduction.md): the
//! particles start on a loose jittered lattice inside the cube instead of
//! being "emitted randomly from above"; the floor has the particles'
//! friction (a frictionless floor would let the pile spread without
//! bound); the two side walls beside the opening continue past the cube
//! (a channel of width 15d), so the collapse is a plane flow whose angle
//! is read on the channel's centre line; the gate rises at 1 m/s.

use crate::error::SceneError;
use crate::motion::KinematicMotion;
use crate::params::{D, D2, G, positive};
use crate::rng::Rng;
use crate::scene::Scene;
use crate::walls::add_planes;
use ndem_collide::Shape;
use ndem_math::{ContactLaw, Material, SettingError, Vec3, Velocity6};
use ndem_reduce::{ReductionSettings, TrialSplit};
use ndem_step::{BodyDesc, BodyId, MaterialId, Motion, StepSettings, World};

/// Parameters of [`collapse_cube`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CollapseSpec {
    /// Number of particles (paper 4000).
    pub particles: usize,
    /// Cube side in units of d (paper 15).
    pub side: f64,
    /// Fraction of small (10 mm) particles.
    pub small_fraction: f64,
    /// Linear normal stiffness k_n [N/m] of particles and walls, as each
    /// material's own (`ContactLaw::LinearPerMaterial`; paper 3 kN/m).
    pub stiffness: f64,
    /// Gate speed when raised [m/s].
    pub gate_speed: f64,
    /// Seed.
    pub seed: u64,
}

impl Default for CollapseSpec {
    fn default() -> Self {
        Self {
            particles: 4000,
            side: 15.0,
            small_fraction: 0.5,
            stiffness: 3e3,
            gate_speed: 1.0,
            seed: 1,
        }
    }
}

/// Indices of the collapse scene.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CollapseCube {
    /// The gate (kinematic box closing the cube at `x = side`).
    pub gate: BodyId,
    /// First particle body index.
    pub first_particle: BodyId,
    /// Cube side \[m\].
    pub side: f64,
}

impl CollapseCube {
    /// Raises the gate at `speed` (call once the bed has settled).
    pub fn open(&self, world: &mut World, speed: f64) -> Result<(), SceneError> {
        world.set_velocity(
            self.gate,
            Velocity6::new(Vec3::new(0.0, 0.0, speed), Vec3::zeros()),
        )?;
        Ok(())
    }
}

/// Builds the collapse scene with the gate closed (see the module docs):
/// the model-reduction paper's Table 1 (linear k_n, e = 0.18, μ_t = 0.91,
/// μ_r = 0.32, ρ = 3700 kg/m³, Δt = 5 ms, γ_t = γ_r = 1e-6).
pub fn collapse_cube(spec: CollapseSpec) -> Result<(Scene, CollapseCube), SceneError> {
    positive("collapse.stiffness", spec.stiffness)?;
    let holds_particles = spec.side > 2.0 && spec.side.is_finite() && spec.particles != 0;
    let reason = "the cube must be wider than 2 d and hold particles";
    SceneError::require(holds_particles, "collapse.side", reason)?;
    let particle = Material {
        linear_stiffness: Some(spec.stiffness),
        ..Material::default()
    };
    let frictionless = Material {
        friction: 0.0,
        rolling_resistance: 0.0,
        ..particle
    };
    let mut world = World::new(vec![particle, frictionless], Vec3::new(0.0, 0.0, -G))?;
    let side = spec.side * D;
    let floor = [(Vec3::z(), Vec3::zeros())];
    add_planes(&mut world, MaterialId::from_index(0), &floor)?;
    let walls = [
        (Vec3::x(), Vec3::zeros()),
        (Vec3::y(), Vec3::zeros()),
        (-Vec3::y(), Vec3::new(0.0, side, 0.0)),
    ];
    add_planes(&mut world, MaterialId::from_index(1), &walls)?;
    // the gate: tall enough for the loose initial lattice
    let height = 3.0 * side;
    let mut gate = BodyDesc::fixed(
        Shape::cuboid(Vec3::new(0.005, 0.5 * side + D, 0.5 * height))?,
        MaterialId::from_index(1),
        Vec3::new(side + 0.005, 0.5 * side, 0.5 * height),
    );
    gate.motion = Motion::Kinematic;
    let gate = world.add_body(gate)?;
    let first_particle = world.len();
    let spacing = 1.02 * D;
    let per_row = (side / spacing).floor() as usize;
    let mut rng = Rng::new(spec.seed);
    for k in 0..spec.particles {
        let (i, j, layer) = (k % per_row, k / per_row % per_row, k / (per_row * per_row));
        let d = if rng.uniform() < spec.small_fraction {
            D2
        } else {
            D
        };
        let jitter = 0.45 * (spacing - d);
        let p = Vec3::new(
            (i as f64 + 0.5) * spacing + rng.range(-jitter, jitter),
            (j as f64 + 0.5) * spacing + rng.range(-jitter, jitter),
            (layer as f64 + 0.5) * spacing,
        );
        world.add_sphere(0.5 * d, MaterialId::from_index(0), p)?;
    }
    let settings = StepSettings {
        contact_law: ContactLaw::LinearPerMaterial,
        ..StepSettings::papers()
    };
    let scene = Scene {
        settings,
        duration: 3.5,
        iterations: 150,
        ..Scene::new("collapse-cube", world)
    };
    Ok((
        scene,
        CollapseCube {
            gate,
            first_particle: BodyId::from_index(first_particle),
            side,
        },
    ))
}

/// Time the built-in collapse gives the bed to settle before the gate
/// rises \[s\] (the paper: "the particles are left to come to rest").
pub const SETTLE_TIME: f64 = 1.5;

/// The built-in `collapse` scene: [`collapse_cube`] whose gate rises at
/// `spec.gate_speed` once the bed has settled ([`SETTLE_TIME`]), run to
/// 2 s after the opening (where the paper reads θ_collapse). Its
/// [`Scene::reduce_preset`] is the paper's collapse setting, the trial
/// split with force and velocity tests (`tr-150-50-fv`), its trial solve
/// restricted to the members within 4 contact layers of a disturbed
/// contact ([`TrialSplit::disturbed_only`]), the deposit merged with the
/// floor ([`ReductionSettings::merge_with_static`]; the two together are
/// `tr-150-50-fv-near4-static` in `cargo xtask reduce collapse`): the
/// gate's rise is no impact, so the contact split alone leaves the
/// settled block one rigid aggregate. As in the paper, nothing merges
/// before the bed has settled (`start_time`). A distributed run solves
/// the whole unfolded model ([`TrialSplit::whole`]) and merges nothing
/// with the floor.
pub fn collapse_scene(spec: CollapseSpec) -> Result<(Scene, CollapseCube), SceneError> {
    let (mut scene, cube) = collapse_cube(spec)?;
    let rise = Velocity6::new(Vec3::new(0.0, 0.0, spec.gate_speed), Vec3::zeros());
    scene.motions = vec![KinematicMotion::starting_at(cube.gate, SETTLE_TIME, rise)];
    scene.name = "collapse".into();
    scene.duration = SETTLE_TIME + 2.0;
    scene.reduce_preset = Some(ReductionSettings {
        contact_split: None,
        trial_split: Some(TrialSplit {
            iterations: 50,
            velocity_test: true,
            depth: Some(4),
            disturbed_only: true,
            ..TrialSplit::default()
        }),
        start_time: SETTLE_TIME,
        merge_with_static: true,
        ..ReductionSettings::default()
    });
    Ok((scene, cube))
}

/// The top-surface angle of a collapsed plane pile \[degrees\]: the
/// particles are binned along x (bins of one large diameter) over the
/// channel, the highest particle top per bin is the surface, and a line
/// is fitted by least squares to the surface points whose height lies
/// between 15 % and 85 % of the highest; the angle is the line's
/// inclination. Particles listed in `detached` (no contact: flung away
/// from the contact network, as the paper discards them) are left out.
/// `NaN` when fewer than three bins fall on the slope.
pub fn surface_angle(world: &World, first_particle: usize, detached: &[bool]) -> f64 {
    let shapes = world.shapes();
    let mut bins: Vec<(i64, f64)> = Vec::new();
    for (i, p) in world.positions().iter().enumerate().skip(first_particle) {
        if detached.get(i).copied().unwrap_or(false) {
            continue;
        }
        let top = p.z + shapes[i].sphere_radius().unwrap_or(0.0);
        let bin = (p.x / D).floor() as i64;
        match bins.iter_mut().find(|b| b.0 == bin) {
            Some(b) => b.1 = b.1.max(top),
            None => bins.push((bin, top)),
        }
    }
    let highest = bins.iter().map(|b| b.1).fold(0.0, f64::max);
    let slope: Vec<(f64, f64)> = bins
        .iter()
        .filter(|b| b.1 >= 0.15 * highest && b.1 <= 0.85 * highest)
        .map(|b| ((b.0 as f64 + 0.5) * D, b.1))
        .collect();
    crate::measure::fitted_inclination(&slope)
}

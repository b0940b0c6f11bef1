//! The conveyor of the adaptive-model-reduction paper (section 4, Table
//! 1, Figs. 7-8): spheres (d = 13 mm) fall from a 15d × 4d source 0.1 m
//! above a belt 50d long moving at 0.1 m/s; a heap forms on the belt, is
//! carried along and discharges over the belt's head.
//!
//! Choices the paper leaves open (stated in docs/reduction.md):
//! - The source is 15d across the belt and 4d along it, centred across
//!   the belt, its centre 12d from the tail so the heap's upstream flank
//!   stays on the belt.
//! - The belt is 36d wide without skirts: a heap 0.1 m high with 41°
//!   flanks under a 15d-wide source is about 33d wide at its foot.
//! - At 0.1 m/s a belt cannot carry 1000 spheres/s of 13 mm under a 0.1 m
//!   drop (that needs a cross-section of about 0.019 m², a heap higher
//!   than the source), so the heap grows up to the source and the emitter,
//!   which never emits into occupied space, limits itself to what the
//!   belt carries. The particle count is what a run reports.
//! - A floor 0.5 m below the belt catches the discharge in interactive
//!   runs; the xtask suite retires particles once they have crossed the
//!   measuring plane 15d below the belt.

use crate::emitter::Emitter;
use crate::error::SceneError;
use crate::measure::{fitted_inclination, fitted_plane_inclination};
use crate::params::{D, G, positive};
use crate::rng::Rng;
use crate::scene::Scene;
use ndem_collide::Shape;
use ndem_math::{ContactLaw, Material, Quat, SettingError, Vec3};
use ndem_reduce::SensorSplit;
use ndem_step::{BodyDesc, BodyId, MaterialId, StepSettings, World};

/// Parameters of [`conveyor_belt`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConveyorSpec {
    /// Belt length in units of d (paper 50).
    pub length_d: f64,
    /// Belt width in units of d (not in the paper; 36, see the module docs).
    pub width_d: f64,
    /// Belt speed [m/s] (paper 0.1).
    pub speed: f64,
    /// Emission rate [particles/s] (paper 1000).
    pub rate: f64,
    /// Source size `(along the belt, across it)` in units of d (paper
    /// 15d × 4d; 4d along, 15d across here).
    pub source_d: (f64, f64),
    /// Height of the source above the belt \[m\] (paper 0.1).
    pub source_height: f64,
    /// Distance of the source centre from the belt's tail, in units of d.
    pub source_from_tail_d: f64,
    /// Most particles to emit.
    pub particles: usize,
    /// Linear normal stiffness k_n [N/m] (paper 3 kN/m).
    pub stiffness: f64,
    /// Seed.
    pub seed: u64,
}

impl Default for ConveyorSpec {
    fn default() -> Self {
        Self {
            length_d: 50.0,
            width_d: 36.0,
            speed: 0.1,
            rate: 1000.0,
            source_d: (4.0, 15.0),
            source_height: 0.1,
            source_from_tail_d: 12.0,
            particles: 1_000_000,
            stiffness: 3e3,
            seed: 1,
        }
    }
}

/// Where the conveyor's parts are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConveyorBelt {
    /// The belt body (static box whose surface moves along +x).
    pub belt: BodyId,
    /// Index of the first emitted particle.
    pub first_particle: BodyId,
    /// Belt length \[m\]; the tail is at x = 0, the head at x = length.
    pub length: f64,
    /// Belt width \[m\], centred on y = 0.
    pub width: f64,
    /// Height of the belt surface \[m\].
    pub top: f64,
    /// x of the source centre \[m\].
    pub source_x: f64,
    /// Half of the source's width across the belt \[m\].
    pub source_half_width: f64,
}

impl ConveyorBelt {
    /// The plane the discharge profile is measured on, 15d below the belt
    /// (paper).
    pub fn discharge_level(&self) -> f64 {
        self.top - 15.0 * D
    }

    /// The split sensor over the belt's head: a box 6d along the belt,
    /// across its full width and 16d high above it, so the material is
    /// resolved where it leaves the belt (the paper switches separation
    /// split off, so nothing else would split an aggregate tipping over
    /// the edge).
    pub fn head_sensor(&self) -> SensorSplit {
        SensorSplit::fixed(
            Shape::Box {
                half_extents: Vec3::new(3.0 * D, 0.5 * self.width + D, 8.0 * D),
            },
            Vec3::new(self.length, 0.0, self.top + 8.0 * D),
            Quat::identity(),
        )
    }

    /// Emitted particles still in play (free or aggregate members, not
    /// retired).
    pub fn particles_in_play(&self, world: &World) -> usize {
        (self.first_particle.index()..world.len())
            .filter(|&i| world.motions()[i] == ndem_step::Motion::Dynamic || world.is_member(i))
            .count()
    }
}

/// The discharge profile (model-reduction paper, Fig. 8): where the
/// particles retired by [`ConveyorBelt::retire_discharged`] crossed the
/// measuring plane, in bins of 1d along the belt axis from `from_d` to
/// `to_d` past the head. Particles found more than 1d behind the head left
/// over the belt's sides or tail and are counted apart.
#[derive(Debug, Clone, PartialEq)]
pub struct DischargeProfile {
    /// First bin edge, in d past the head.
    pub from_d: f64,
    /// Counts per bin.
    pub counts: Vec<usize>,
    /// Particles discharged over the head (in a bin or not).
    pub discharged: usize,
    /// Particles that left over the sides or the tail.
    pub spilled: usize,
}

impl DischargeProfile {
    /// An empty profile with bins of 1d over `[from_d, to_d)`.
    pub fn new(from_d: f64, to_d: f64) -> Self {
        Self {
            from_d,
            counts: vec![0; (to_d - from_d).ceil().max(0.0) as usize],
            discharged: 0,
            spilled: 0,
        }
    }

    /// Adds crossing points.
    pub fn record(&mut self, belt: &ConveyorBelt, crossed: &[Vec3]) {
        for p in crossed {
            if p.x <= belt.length - D {
                self.spilled += 1;
                continue;
            }
            self.discharged += 1;
            let b = ((p.x - belt.length) / D - self.from_d).floor();
            if b >= 0.0 && b < self.counts.len() as f64 {
                self.counts[b as usize] += 1;
            }
        }
    }

    /// `(bin centre in d past the head, particles per second per d)` over
    /// a recording of `seconds`.
    pub fn rates(&self, seconds: f64) -> Vec<(f64, f64)> {
        self.counts
            .iter()
            .enumerate()
            .map(|(b, &c)| (self.from_d + b as f64 + 0.5, c as f64 / seconds))
            .collect()
    }
}

/// Height of the belt surface above the floor \[m\].
const BELT_TOP: f64 = 0.5;

/// Builds the conveyor (see the module docs) with the paper's Table 1:
/// linear k_n per material, e = 0.18, μ_t = 0.91, μ_r = 0.32,
/// ρ = 3700 kg/m³, Δt = 5 ms.
pub fn conveyor_belt(spec: ConveyorSpec) -> Result<(Scene, ConveyorBelt), SceneError> {
    positive("conveyor.stiffness", spec.stiffness)?;
    positive("conveyor.length_d", spec.length_d)?;
    positive("conveyor.width_d", spec.width_d)?;
    positive("conveyor.rate", spec.rate)?;
    positive("conveyor.source_height", spec.source_height)?;
    positive("conveyor.source_d", spec.source_d.0.min(spec.source_d.1))?;
    SceneError::require(spec.speed.is_finite(), "conveyor.speed", "must be finite")?;
    let material = Material {
        linear_stiffness: Some(spec.stiffness),
        ..Material::default()
    };
    let mut world = World::new(vec![material], Vec3::new(0.0, 0.0, -G))?;
    world.add_body(BodyDesc::floor(MaterialId::from_index(0)))?;
    let (length, width) = (spec.length_d * D, spec.width_d * D);
    let thickness = 0.01;
    let belt = BodyDesc::fixed(
        Shape::cuboid(Vec3::new(0.5 * length, 0.5 * width, 0.5 * thickness))?,
        MaterialId::from_index(0),
        Vec3::new(0.5 * length, 0.0, BELT_TOP - 0.5 * thickness),
    )
    .with_surface_velocity(Vec3::new(spec.speed, 0.0, 0.0));
    let belt = world.add_body(belt)?;
    let first_particle = world.len();
    let emitter = Emitter {
        centre: Vec3::new(
            spec.source_from_tail_d * D,
            0.0,
            BELT_TOP + spec.source_height,
        ),
        radius: 0.0,
        rectangle: Some((0.5 * spec.source_d.0 * D, 0.5 * spec.source_d.1 * D)),
        particle_radius: (0.5 * D, 0.5 * D),
        bidisperse_fraction: 0.0,
        material: 0,
        rate: spec.rate,
        velocity: Vec3::zeros(),
        total: spec.particles,
        emitted: 0,
        pending: 0.0,
        rng: Rng::new(spec.seed),
    };
    let settings = StepSettings {
        contact_law: ContactLaw::LinearPerMaterial,
        ..StepSettings::papers()
    };
    let scene = Scene {
        settings,
        emitters: vec![emitter],
        duration: 20.0,
        iterations: 150,
        ..Scene::new("conveyor-belt", world)
    };
    Ok((
        scene,
        ConveyorBelt {
            belt,
            first_particle: BodyId::from_index(first_particle),
            length,
            width,
            top: BELT_TOP,
            source_x: spec.source_from_tail_d * D,
            source_half_width: 0.5 * spec.source_d.1 * D,
        },
    ))
}

/// A grid of cells over the belt: `nx` cells of length `dx` along x from
/// `x0`, `ny` cells of width d across from `y0`.
struct Grid {
    x0: f64,
    dx: f64,
    nx: usize,
    y0: f64,
    ny: usize,
}

impl Grid {
    /// The highest sphere top above the belt per cell (row-major by y;
    /// `NEG_INFINITY` for empty cells): the heap's surface.
    fn tops(&self, world: &World, belt: &ConveyorBelt) -> Vec<f64> {
        let mut top = vec![f64::NEG_INFINITY; self.nx * self.ny];
        for (i, p) in world
            .positions()
            .iter()
            .enumerate()
            .skip(belt.first_particle.index())
        {
            let Some(r) = world.shapes()[i].sphere_radius() else {
                continue;
            };
            let (kx, ky) = (
                ((p.x - self.x0) / self.dx).floor(),
                ((p.y - self.y0) / D).floor(),
            );
            if kx < 0.0 || ky < 0.0 || kx >= self.nx as f64 || ky >= self.ny as f64 {
                continue;
            }
            if p.z < belt.top {
                continue;
            }
            let k = ky as usize * self.nx + kx as usize;
            top[k] = top[k].max(p.z + r - belt.top);
        }
        top
    }

    /// Centre `(x, y)` of cell `k`.
    fn centre(&self, k: usize) -> (f64, f64) {
        let (kx, ky) = (k % self.nx, k / self.nx);
        (
            self.x0 + (kx as f64 + 0.5) * self.dx,
            self.y0 + (ky as f64 + 0.5) * D,
        )
    }
}

/// Whether a surface height lies on the heap's slope: at least 1.5d above
/// the belt (particles lying on the belt, which the paper excludes) and at
/// most 85 % of the highest (the heap's crest under the source).
fn on_slope(z: f64, highest: f64) -> bool {
    z.is_finite() && z >= 1.5 * D && z <= 0.85 * highest
}

/// The carried heap's flank angle across the belt (a conveyor's
/// surcharge angle) \[degrees\]: the particles in a slab 4d thick at the
/// belt's mid-length are binned across the belt (bins of 1d); the highest
/// sphere top per bin is the surface. A line is fitted to the bins on the
/// slope (`on_slope`) of each flank, and the angle is the mean of the two
/// flanks (either alone when the other has fewer than three bins; `NaN`
/// when both do). One reading of the model-reduction paper's θ_conv; the
/// suite compares the paper's value with the other,
/// [`upstream_face_angle`].
pub fn heap_angle(world: &World, belt: &ConveyorBelt) -> f64 {
    let grid = Grid {
        x0: 0.5 * belt.length - 2.0 * D,
        dx: 4.0 * D,
        nx: 1,
        y0: -0.5 * belt.width,
        ny: (belt.width / D).ceil().max(1.0) as usize,
    };
    let top = grid.tops(world, belt);
    let highest = top.iter().copied().fold(0.0, f64::max);
    let side = |left: bool| {
        let points: Vec<(f64, f64)> = top
            .iter()
            .enumerate()
            .map(|(k, &z)| (grid.centre(k).1, z))
            .filter(|&(y, z)| (y < 0.0) == left && on_slope(z, highest))
            .collect();
        fitted_inclination(&points)
    };
    match (side(true), side(false)) {
        (a, b) if a.is_finite() && b.is_finite() => 0.5 * (a + b),
        (a, _) if a.is_finite() => a,
        (_, b) => b,
    }
}

/// The heap's upstream face \[degrees\]: the pile's angle of repose
/// against the belt's motion, θ_conv of the model-reduction paper (section
/// 4). The particles under the source (across the belt: the source's
/// width less 1.5d on each side, at least 4d; along it: from the tail to
/// the source centre) are binned in cells of 1d × 1d; the highest sphere
/// top per cell is the surface there. The angle is the inclination of the
/// least-squares plane through the cells on the slope (`on_slope`;
/// [`fitted_plane_inclination`]); a plane over the whole face averages
/// out the single bumps a line per section would follow.
pub fn upstream_face_angle(world: &World, belt: &ConveyorBelt) -> f64 {
    let half = (belt.source_half_width - 1.5 * D).max(2.0 * D);
    let grid = Grid {
        x0: 0.0,
        dx: D,
        nx: (belt.source_x / D).floor().max(1.0) as usize,
        y0: -half,
        ny: (2.0 * half / D).ceil().max(1.0) as usize,
    };
    let top = grid.tops(world, belt);
    let highest = top.iter().copied().fold(0.0, f64::max);
    let points: Vec<(f64, f64, f64)> = top
        .iter()
        .enumerate()
        .filter(|&(_, &z)| on_slope(z, highest))
        .map(|(k, &z)| {
            let (x, y) = grid.centre(k);
            (x, y, z)
        })
        .collect();
    fitted_plane_inclination(&points)
}

impl ConveyorBelt {
    /// Retires the free particles that have fallen below
    /// [`discharge_level`](Self::discharge_level): each becomes a static
    /// body without mass, parked on a lattice below the floor where it
    /// touches nothing (body indices stay stable). Returns the positions
    /// at which they were found, for the discharge profile. Aggregate
    /// members are left alone: they fall with their host and are retired
    /// once split. `parked` counts retired particles across calls.
    pub fn retire_discharged(
        &self,
        world: &mut World,
        parked: &mut usize,
    ) -> Result<Vec<Vec3>, SceneError> {
        let level = self.discharge_level();
        let falling: Vec<usize> = (self.first_particle.index()..world.len())
            .filter(|&i| {
                world.motions()[i] == ndem_step::Motion::Dynamic
                    && !world.is_member(i)
                    && world.shapes()[i].sphere_radius().is_some()
                    && world.positions()[i].z < level
            })
            .collect();
        let mut crossed = Vec::with_capacity(falling.len());
        // a compact block under the floor keeps the broad phase's dense grid small
        let (row, spacing) = (40, 1.05 * D);
        for i in falling {
            crossed.push(world.positions()[i]);
            world.set_active(i, None)?;
            let (a, b, c) = (*parked % row, *parked / row % row, *parked / (row * row));
            world.set_position(
                BodyId::from_index(i),
                Vec3::new(a as f64, b as f64 - 0.5 * row as f64, -(c as f64) - 2.0) * spacing,
            )?;
            *parked += 1;
        }
        Ok(crossed)
    }
}

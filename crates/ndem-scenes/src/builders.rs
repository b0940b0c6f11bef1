//! Scene builders with the papers' parameters as defaults.

pub use crate::error::SceneError;
use crate::params::positive;
pub use crate::params::{D, D2, G, MAX_ITERATIONS};
pub use crate::scene::{ALL_CORES, Scene};
use crate::walls::add_planes;

use crate::emitter::Emitter;
use crate::rng::Rng;
use ndem_collide::Shape;
use ndem_math::{ContactLaw, Material, Quat, SettingError, Vec3, Velocity6};
use ndem_step::{BodyDesc, MaterialId, Motion, StepSettings, World};

fn gravity() -> Vec3 {
    Vec3::new(0.0, 0.0, -G)
}

/// A floor (the plane z = 0) and four static walls (half-spaces) bounding
/// `lo.x ≤ x ≤ hi.x`, `lo.y ≤ y ≤ hi.y`: an open-topped box.
fn add_open_box(world: &mut World, lo: [f64; 2], hi: [f64; 2]) -> Result<(), SceneError> {
    let walls = [
        (Vec3::z(), Vec3::zeros()),
        (Vec3::x(), Vec3::new(lo[0], 0.0, 0.0)),
        (-Vec3::x(), Vec3::new(hi[0], 0.0, 0.0)),
        (Vec3::y(), Vec3::new(0.0, lo[1], 0.0)),
        (-Vec3::y(), Vec3::new(0.0, hi[1], 0.0)),
    ];
    add_planes(world, MaterialId::from_index(0), &walls)
}

fn base_world(material: Material) -> Result<World, SceneError> {
    Ok(World::new(vec![material], gravity())?)
}

/// 1D column of `n` spheres of diameter d stacked with zero overlap on a
/// plane (warm-starting paper, section 4.1).
pub fn column(n: usize) -> Result<Scene, SceneError> {
    SceneError::require(n != 0, "n", "a column needs at least one sphere")?;
    Ok(Scene {
        duration: 3.0,
        iterations: 100,
        ..Scene::new("column", ndem_step::verification::column_world(n)?)
    })
}

/// Parameters of [`pile`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PileSpec {
    /// Number of particles (paper: 3363).
    pub particles: usize,
    /// Emission rate [1/s].
    pub rate: f64,
    /// Seed.
    pub seed: u64,
}

impl Default for PileSpec {
    fn default() -> Self {
        Self {
            particles: 3363,
            rate: 200.0,
            seed: 1,
        }
    }
}

/// Pile formation (section 4.2): particles of diameter d emitted from a
/// source 3d wide placed 20d above a ground plane, at 1.5 m/s downwards
/// (the paper gives no inflow speed or rate; this speed clears the source
/// fast enough for 200 particles/s).
pub fn pile(spec: PileSpec) -> Result<Scene, SceneError> {
    let world = World::on_floor(Material::default())?;
    let emitter = Emitter {
        centre: Vec3::new(0.0, 0.0, 20.0 * D),
        radius: 1.5 * D,
        rectangle: None,
        particle_radius: (0.5 * D, 0.5 * D),
        bidisperse_fraction: 0.0,
        material: 0,
        rate: spec.rate,
        velocity: Vec3::new(0.0, 0.0, -1.5),
        total: spec.particles,
        emitted: 0,
        pending: 0.0,
        rng: Rng::new(spec.seed),
    };
    Ok(Scene {
        emitters: vec![emitter],
        duration: spec.particles as f64 / spec.rate + 10.0,
        ..Scene::new("pile", world)
    })
}

/// Parameters of [`drum`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DrumSpec {
    /// Number of particles (paper: 4864).
    pub particles: usize,
    /// Angular velocity Ω [rad/s] (paper: 0.25).
    pub omega: f64,
    /// Drum diameter in units of d (paper: 40).
    pub diameter_d: f64,
    /// Drum width in units of d (paper: 7).
    pub width_d: f64,
    /// Frictionless end caps (the model-reduction paper's drum; the
    /// default, see docs/theory.md for the evidence): the caps are two
    /// static planes of a material with μ_t = μ_r = 0. `false`: the caps
    /// belong to the drum and have the particles' material.
    pub frictionless_caps: bool,
    /// Linear normal stiffness k_n [N/m] of particles and drum as each
    /// material's own (`ContactLaw::LinearPerMaterial`; the model-reduction
    /// paper's Table 1: 3 kN/m). `None`: Hertz (warm-starting paper).
    pub linear_stiffness: Option<f64>,
    /// Seed.
    pub seed: u64,
}

impl Default for DrumSpec {
    fn default() -> Self {
        Self {
            particles: 4864,
            omega: 0.25,
            diameter_d: 40.0,
            width_d: 7.0,
            frictionless_caps: true,
            linear_stiffness: None,
            seed: 1,
        }
    }
}

impl DrumSpec {
    /// The model-reduction paper's drum (section 4, Table 1): Ω = 0.5 rad/s,
    /// frictionless end caps, linear k_n = 3 kN/m; D = 40d, width 7d and
    /// 4864 bi-disperse particles as in the warm-starting paper's drum.
    pub fn model_reduction() -> Self {
        Self {
            omega: 0.5,
            linear_stiffness: Some(3e3),
            ..Self::default()
        }
    }
}

/// Rotating drum (section 4.3): a kinematic drum of diameter 40d and width
/// 7d rotating at Ω about the world y axis (centre at the origin), filled
/// with bi-disperse particles (d and d₂, equal numbers) placed on a lattice
/// in its lower part. With `frictionless_caps` the drum's own caps are
/// moved out of reach by one d and two static frictionless planes close
/// it at `y = ±width/2` (material 1); the caps' velocity is tangential to
/// them, so without friction a static plane acts as a rotating cap.
pub fn drum(spec: DrumSpec) -> Result<Scene, SceneError> {
    if let Some(k) = spec.linear_stiffness {
        positive("drum.linear_stiffness", k)?;
    }
    let particle = Material {
        linear_stiffness: spec.linear_stiffness,
        ..Material::default()
    };
    let caps = Material {
        friction: 0.0,
        rolling_resistance: 0.0,
        ..particle
    };
    let mut world = World::new(vec![particle, caps], gravity())?;
    let radius = 0.5 * spec.diameter_d * D;
    let half_width = 0.5 * spec.width_d * D;
    let shell_half_width = if spec.frictionless_caps {
        for (normal, y) in [(Vec3::y(), -half_width), (-Vec3::y(), half_width)] {
            world.add_body(BodyDesc::fixed(
                Shape::half_space(normal)?,
                MaterialId::from_index(1),
                Vec3::new(0.0, y, 0.0),
            ))?;
        }
        half_width + D
    } else {
        half_width
    };
    // drum axis (body z) along world y
    let q = Quat::from_axis_angle(&Vec3::x_axis(), -std::f64::consts::FRAC_PI_2);
    let mut desc = BodyDesc::fixed(
        Shape::drum(radius, shell_half_width)?,
        MaterialId::from_index(0),
        Vec3::zeros(),
    )
    .with_orientation(q);
    desc.motion = Motion::Kinematic;
    desc.velocity = Velocity6::new(Vec3::zeros(), Vec3::new(0.0, spec.omega, 0.0));
    world.add_body(desc)?;
    let mut rng = Rng::new(spec.seed);
    let s = 1.02 * D;
    let mut placed = 0;
    let nz = (2.0 * radius / s) as i64;
    'fill: for k in 0..nz {
        let z = -radius + 0.5 * s + k as f64 * s;
        let nx = (radius / s) as i64;
        for i in -nx..=nx {
            let x = i as f64 * s;
            if x * x + z * z > (radius - 0.5 * s).powi(2) {
                continue;
            }
            let ny = ((2.0 * half_width - s) / s).floor() as i64 + 1;
            for j in 0..ny {
                if placed >= spec.particles {
                    break 'fill;
                }
                let y = -half_width + 0.5 * s + j as f64 * s;
                let r = if placed % 2 == 0 { 0.5 * D } else { 0.5 * D2 };
                let jitter = Vec3::new(rng.range(-0.005, 0.005), 0.0, rng.range(-0.005, 0.005)) * D;
                world.add_sphere(r, MaterialId::from_index(0), Vec3::new(x, y, z) + jitter)?;
                placed += 1;
            }
        }
    }
    if placed < spec.particles {
        return Err(SceneError::Invalid {
            field: "particles",
            reason: format!("only {placed} particles fit in the drum"),
        });
    }
    let settings = StepSettings {
        contact_law: if spec.linear_stiffness.is_some() {
            ContactLaw::LinearPerMaterial
        } else {
            StepSettings::papers().contact_law
        },
        ..StepSettings::papers()
    };
    Ok(Scene {
        settings,
        duration: 20.0,
        ..Scene::new("drum", world)
    })
}

/// `n` spheres of radii 5-6 mm (rolling resistance 0.1) falling from a
/// lattice 14 mm apart (every other layer shifted 7 mm in y, so that the
/// layers interlock) into an open box 10 cm wide in y and `length` long in
/// x, with sideways speeds up to ±0.15 m/s so that they cross any vertical
/// cut: the scene of the distributed runs' tests, whose rest
/// state PGS resolves to 1e-6 m/s at Δt = 1 ms (the `packing` bed does
/// not reach that in 20 000 sweeps).
pub fn falling_lattice(n: usize, length: f64) -> Result<World, SceneError> {
    let m = Material {
        rolling_resistance: 0.1,
        ..Material::default()
    };
    let mut w = World::new(vec![m], Vec3::new(0.0, 0.0, -9.81))?;
    let h = 0.05;
    w.add_body(BodyDesc::floor(MaterialId::from_index(0)))?;
    for (normal, p) in [
        (Vec3::x(), Vec3::new(-length / 2.0, 0.0, 0.0)),
        (-Vec3::x(), Vec3::new(length / 2.0, 0.0, 0.0)),
        (Vec3::y(), Vec3::new(0.0, -h, 0.0)),
        (-Vec3::y(), Vec3::new(0.0, h, 0.0)),
    ] {
        w.add_body(BodyDesc::fixed(
            Shape::half_space(normal)?,
            MaterialId::from_index(0),
            p,
        ))?;
    }
    let nx = (((length - 0.014) / 0.014).floor() as usize).max(1);
    for i in 0..n {
        let (ix, iy, iz) = (i % nx, (i / nx) % 7, i / (7 * nx));
        let r = 0.005 + 0.001 * ((i * 37 % 11) as f64 / 11.0);
        let p = Vec3::new(
            -length / 2.0 + 0.008 + 0.014 * ix as f64 + 0.0005 * (i % 3) as f64,
            -0.042 + 0.014 * iy as f64 + 0.007 * (iz % 2) as f64,
            0.008 + 0.013 * iz as f64,
        );
        let v = Vec3::new(0.3 * ((i * 13 % 7) as f64 / 7.0 - 0.5), 0.0, 0.0);
        w.add_body(
            BodyDesc::sphere(r, MaterialId::from_index(0), p)?
                .with_velocity(Velocity6::new(v, Vec3::zeros())),
        )?;
    }
    Ok(w)
}

/// The spheres of [`box_packing`] as drawn, site by site and row by row
/// (before its Morton numbering): `(lattice site, centre, radius)`, radii
/// uniform in `[r_min, r_max]`, centres jittered by ±0.05 r_max across.
pub fn box_packing_draws(
    n: usize,
    [r_min, r_max]: [f64; 2],
    side: f64,
    seed: u64,
) -> impl Iterator<Item = ([u32; 3], Vec3, f64)> {
    let mut rng = Rng::new(seed);
    let h = 0.5 * side;
    let s = 2.2 * r_max;
    let per_side = ((side - s) / s).floor().max(1.0) as usize;
    (0..n).map(move |i| {
        let site = [
            i % per_side,
            (i / per_side) % per_side,
            i / (per_side * per_side),
        ];
        let p = Vec3::new(
            -h + s * (0.5 + site[0] as f64),
            -h + s * (0.5 + site[1] as f64),
            s * (0.5 + site[2] as f64),
        ) + Vec3::new(rng.range(-0.05, 0.05), rng.range(-0.05, 0.05), 0.0) * r_max;
        let radius = rng.range(r_min, r_max);
        (site.map(|c| c as u32), p, radius)
    })
}

/// A random packing: `n` spheres (radii uniform in `[r_min, r_max]`)
/// dropped from a loose random lattice into a box of side `side` with a
/// floor and four walls; run it to rest to get a dense packing. The box's
/// five walls are bodies 0-4; the spheres follow, numbered along the
/// Morton curve of their lattice sites
/// ([`ndem_math::locality::morton_code`]), so that the contacts, which the
/// stepper sweeps in body order, touch bodies close in memory
/// (`docs/performance.md`, "NDEM step").
///
/// The lattice's layers lie straight above each other (each sphere is
/// moved sideways by at most 5 % of `r_max`), so the spheres first land on
/// top of each other in columns, which tip and settle for seconds: after
/// 1.5 s a bed of 10⁵ still has tens of spheres falling faster than the
/// impact threshold, and at 25 PGS sweeps per step it keeps them
/// (`docs/performance.md`, "The beds").
pub fn box_packing(
    n: usize,
    r_min: f64,
    r_max: f64,
    side: f64,
    seed: u64,
) -> Result<Scene, SceneError> {
    SceneError::require(
        r_min > 0.0 && r_max >= r_min && side > 2.0 * r_max,
        "radii",
        "need 0 < r_min <= r_max < side/2",
    )?;
    let mut world = base_world(Material::default())?;
    let h = 0.5 * side;
    add_open_box(&mut world, [-h, -h], [h, h])?;
    // a count the allocator refuses is a typed error, not an abort
    let refused = || SceneError::Invalid {
        field: "particles",
        reason: format!("no room for {n} spheres (the allocation was refused)"),
    };
    world.try_reserve(n).map_err(|_| refused())?;
    // the spheres are drawn site by site, row by row, and numbered along
    // the Morton curve of their lattice sites: the same bed, numbered for
    // locality (`ndem_math::locality`)
    let mut spheres = Vec::new();
    spheres.try_reserve_exact(n).map_err(|_| refused())?;
    for (site, p, radius) in box_packing_draws(n, [r_min, r_max], side, seed) {
        spheres.push((ndem_math::locality::morton_code(site), p, radius));
    }
    // stable: sites beyond the code's 2^21 per axis keep their draw order
    spheres.sort_by_key(|&(code, _, _)| code);
    let sphere = |(_, p, radius): (u64, Vec3, f64)| {
        Ok(BodyDesc::sphere(radius, MaterialId::from_index(0), p)?)
    };
    let bodies: Result<Vec<BodyDesc>, SceneError> = spheres.into_iter().map(sphere).collect();
    world.add_bodies(bodies?)?;
    Ok(Scene {
        duration: 3.0,
        ..Scene::new("packing", world)
    })
}

/// Parameters of [`cannonball`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CannonballSpec {
    /// Spheres on a base edge (paper: 20, i.e. 2870 spheres).
    pub base: usize,
    /// Two species (Young's modulus 50 GPa and 5 GPa, assigned at random)
    /// instead of one (50 GPa).
    pub two_species: bool,
    /// Seed of the species assignment.
    pub seed: u64,
}

impl Default for CannonballSpec {
    fn default() -> Self {
        Self {
            base: 20,
            two_species: false,
            seed: 1,
        }
    }
}

/// The compatible-contact-dynamics paper's cannonball stack: a square
/// pyramid of spheres (d = 13 mm) with `base` spheres on a base edge, layer
/// `k` resting in the pockets of layer `k − 1`; the base layer is fixed.
/// Spheres start with gaps of 5 % of a radius and are frictionless; the
/// fixed base layer is the "floor" whose reactions are measured.
pub fn cannonball(spec: CannonballSpec) -> Result<Scene, SceneError> {
    if spec.base < 2 {
        return Err(SceneError::Invalid {
            field: "base",
            reason: "a pyramid needs at least 2 spheres on its base edge".into(),
        });
    }
    let frictionless = |e: f64| Material {
        youngs_modulus: e,
        friction: 0.0,
        rolling_resistance: 0.0,
        ..Material::default()
    };
    let mut world = World::new(vec![frictionless(50e9), frictionless(5e9)], gravity())?;
    let r = 0.5 * D;
    let gap = 0.05 * r;
    let s = 2.0 * r + gap;
    let mut rng = Rng::new(spec.seed);
    for k in 0..spec.base {
        let n = spec.base - k;
        // layer k sits in the pockets: offset s/2 in x and y, height s/√2
        let z = r + k as f64 * s / std::f64::consts::SQRT_2;
        let off = 0.5 * k as f64 * s;
        for j in 0..n {
            for i in 0..n {
                let material = usize::from(spec.two_species && rng.uniform() < 0.5);
                let p = Vec3::new(off + i as f64 * s, off + j as f64 * s, z);
                let desc = if k == 0 {
                    BodyDesc::fixed(Shape::sphere(r)?, MaterialId::from_index(material), p)
                } else {
                    BodyDesc::sphere(r, MaterialId::from_index(material), p)?
                };
                world.add_body(desc)?;
            }
        }
    }
    Ok(Scene {
        settings: StepSettings {
            dt: 1e-3,
            contact_rows: ndem_solve::ContactRows::Normal,
            ..StepSettings::papers()
        },
        duration: 0.5,
        iterations: 200,
        ..Scene::new("cannonball", world)
    })
}

/// The compatible-contact-dynamics paper's indeterminate beam: a rigid
/// platform (2 m × 0.2 m × 0.1 m) of weight 10 N on three static box
/// supports at x = −0.8, 0, 0.8 m, frictionless.
pub fn beam() -> Result<Scene, SceneError> {
    let material = Material {
        friction: 0.0,
        rolling_resistance: 0.0,
        ..Material::default()
    };
    let mut world = World::new(vec![material], gravity())?;
    let support = Vec3::new(0.05, 0.1, 0.05);
    for x in [-0.8, 0.0, 0.8] {
        world.add_body(BodyDesc::fixed(
            Shape::cuboid(support)?,
            MaterialId::from_index(0),
            Vec3::new(x, 0.0, support.z),
        ))?;
    }
    let he = Vec3::new(1.0, 0.1, 0.05);
    let mut platform = BodyDesc::dynamic(
        Shape::cuboid(he)?,
        MaterialId::from_index(0),
        Vec3::new(0.0, 0.0, 2.0 * support.z + he.z),
    );
    platform.mass = Some(ndem_math::MassProperties::solid_box(10.0 / G, he)?);
    world.add_body(platform)?;
    Ok(Scene {
        settings: StepSettings {
            contact_rows: ndem_solve::ContactRows::Normal,
            margin: 1e-4,
            ..StepSettings::papers()
        },
        duration: 1.0,
        iterations: 100,
        ..Scene::new("beam", world)
    })
}

/// A 3D column: spheres (d) on a square lattice `side × side × layers` in a
/// box container of the same cross-section, with zero overlap.
pub fn column3d(side: usize, layers: usize) -> Result<Scene, SceneError> {
    if side == 0 || layers == 0 {
        return Err(SceneError::Invalid {
            field: "side",
            reason: "need at least one sphere".into(),
        });
    }
    let mut world = base_world(Material::default())?;
    let r = 0.5 * D;
    let w = side as f64 * D;
    add_open_box(&mut world, [0.0, 0.0], [w, w])?;
    let site = move |i: usize, j: usize, k: usize| {
        Vec3::new(r + i as f64 * D, r + j as f64 * D, r + k as f64 * D)
    };
    let sites = (0..layers)
        .flat_map(|k| (0..side).flat_map(move |j| (0..side).map(move |i| site(i, j, k))));
    world.add_spheres(r, MaterialId::from_index(0), sites)?;
    Ok(Scene {
        duration: 3.0,
        iterations: 100,
        ..Scene::new("column3d", world)
    })
}

/// A conveyor: a static belt (box 1.5 m long, 0.1 m wide, top at 0.3 m)
/// whose surface moves at `speed` along +x, fed by an emitter above its
/// tail; particles pile on the belt, are carried and discharged at its head
/// onto the floor.
pub fn conveyor(particles: usize, speed: f64, seed: u64) -> Result<Scene, SceneError> {
    let mut world = World::on_floor(Material::default())?;
    let he = Vec3::new(0.75, 0.05, 0.01);
    let belt = BodyDesc::fixed(
        Shape::cuboid(he)?,
        MaterialId::from_index(0),
        Vec3::new(0.75, 0.0, 0.3 - he.z),
    )
    .with_surface_velocity(Vec3::new(speed, 0.0, 0.0));
    world.add_body(belt)?;
    // side boards keep the material on the belt
    for y in [-0.06, 0.06] {
        world.add_body(BodyDesc::fixed(
            Shape::cuboid(Vec3::new(0.75, 0.005, 0.03))?,
            MaterialId::from_index(0),
            Vec3::new(0.75, y, 0.33),
        ))?;
    }
    let emitter = Emitter {
        centre: Vec3::new(0.1, 0.0, 0.3 + 8.0 * D),
        radius: 2.0 * D,
        rectangle: None,
        particle_radius: (0.5 * D2, 0.5 * D),
        bidisperse_fraction: 0.0,
        material: 0,
        rate: 100.0,
        velocity: Vec3::new(0.0, 0.0, -1.0),
        total: particles,
        emitted: 0,
        pending: 0.0,
        rng: Rng::new(seed),
    };
    let mut scene = Scene {
        emitters: vec![emitter],
        duration: particles as f64 / 100.0 + 3.0,
        ..Scene::new("conveyor", world)
    };
    // the discharge falls 0.3 m onto the heap under the belt's head: with
    // the default 20 impact sweeps a sphere struck by a falling one is
    // driven through the sphere beneath it (overlap beyond its radius at
    // t = 4.7 s, and the run stops); 100 resolve these impacts
    scene.settings.impact_iterations = 100;
    Ok(scene)
}

/// Names of the built-in scenes.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "column",
        "1D column of 25 spheres (d = 13 mm) on a plane, warm-starting paper 4.1",
    ),
    (
        "pile",
        "pile formation: 3363 spheres emitted 20d above a plane, warm-starting paper 4.2",
    ),
    (
        "drum",
        "rotating drum D = 40d, width 7d, 0.25 rad/s, 4864 bi-disperse spheres, frictionless end caps, warm-starting paper 4.3",
    ),
    ("packing", "2000 polydisperse spheres settling in a box"),
    (
        "cannonball",
        "square pyramid of 2870 frictionless spheres on a fixed base layer, compatible-CD paper",
    ),
    (
        "beam",
        "rigid platform of weight 10 N on three supports, compatible-CD paper",
    ),
    ("column3d", "3 x 3 columns of 20 spheres on a plane"),
    (
        "collapse",
        "granular collapse: 4000 bi-disperse spheres settle in a 15d cube whose gate rises at 1.5 s, model-reduction paper (--reduce: trial split)",
    ),
    (
        "conveyor",
        "500 spheres poured on a conveyor belt at 0.5 m/s, model-reduction paper",
    ),
    (
        "excavator",
        "a 50 t excavator digging a 3 m trench of 1e4 spheres (25-100 mm) with cylinders and a slewing motor, warm-starting paper 5 (paper scale: cargo xtask excavator)",
    ),
    (
        "triaxial",
        "triaxial cell: 2000 bi-disperse spheres, six 100 kg walls on prismatic motors, 100 Pa then shear at 0.01 m/s, warm-starting paper 4.4",
    ),
];

/// The built-in `packing` with `n` spheres: the same radii in a box wide
/// enough for about 16 layers (the built-in's own 0.12 m for up to 2000).
pub fn packing(n: usize) -> Result<Scene, SceneError> {
    let r_max = 0.0065;
    let per_side = (n as f64 / 16.0).sqrt().ceil() + 1.2;
    box_packing(n, 0.005, r_max, (per_side * 2.2 * r_max).max(0.12), 1)
}

/// A built-in scene; `particles` sets the size of the scenes that have one
/// (`packing`: spheres in the bed; `pile`: spheres emitted at the paper's
/// rate), and is a typed error for the others.
pub fn builtin_sized(name: &str, particles: Option<usize>) -> Result<Scene, SceneError> {
    match (name, particles) {
        (_, None) => builtin(name),
        ("packing" | "pile", Some(0)) => Err(SceneError::Invalid {
            field: "particles",
            reason: format!("`{name}` needs at least 1"),
        }),
        ("packing", Some(n)) => packing(n).map(|s| with_caveat("packing", s)),
        ("pile", Some(n)) => pile(PileSpec {
            particles: n,
            ..PileSpec::default()
        }),
        (_, Some(_)) => Err(SceneError::Invalid {
            field: "particles",
            reason: format!(
                "`{name}` has no particle count to set (only `packing` and `pile` have one)"
            ),
        }),
    }
}

/// Why `ndem run NAME --reduce` does not give the full run's physics, for
/// the built-in scenes where that was measured (3 s, 600 steps, against
/// the full run; `docs/reduction.md`, "The built-in scenes with --reduce").
fn reduce_caveat(name: &str) -> Option<&'static str> {
    match name {
        "drum" => Some(
            "the bed co-rotates with the drum as one aggregate and is lifted past the full run's first avalanche \
             (at 3 s: potential energy -10.9 J against -15.7 J; with the trial split -12.3 J); \
             `cargo xtask reduce drum` reduces after a revolution of steady flow instead",
        ),
        "packing" => Some(
            "the lattice's columns merge as they land and cannot buckle, so the bed does not compact \
             (at 3 s: potential energy 8.49 J against 6.73 J)",
        ),
        "triaxial" => Some(
            "a triaxial test is shear-dominated, where the paper finds model reduction inappropriate: \
             merged, the sample is rigid (at 3 s: h = 0.85, kinetic energy 7e-7 J against 5.7e-4 J)",
        ),
        _ => None,
    }
}

fn with_caveat(name: &str, mut scene: Scene) -> Scene {
    scene.reduce_caveat = reduce_caveat(name).map(Into::into);
    scene
}

/// A built-in scene by name.
pub fn builtin(name: &str) -> Result<Scene, SceneError> {
    builtin_scene(name).map(|s| with_caveat(name, s))
}

fn builtin_scene(name: &str) -> Result<Scene, SceneError> {
    match name {
        "column" => column(25),
        "pile" => pile(PileSpec::default()),
        "drum" => drum(DrumSpec::default()),
        "packing" => box_packing(2000, 0.005, 0.0065, 0.12, 1),
        "cannonball" => cannonball(CannonballSpec::default()),
        "beam" => beam(),
        "column3d" => column3d(3, 20),
        "collapse" => crate::collapse::collapse_scene(crate::collapse::CollapseSpec::default())
            .map(|(s, _)| s),
        "conveyor" => conveyor(500, 0.5, 1),
        "triaxial" => crate::triaxial::triaxial(crate::triaxial::TriaxialSpec::default()),
        "excavator" => crate::excavator::excavator(crate::excavator::ExcavatorSpec::quick()),
        _ => Err(SceneError::Invalid {
            field: "scene",
            reason: format!(
                "unknown built-in scene `{name}` (built-in: {})",
                BUILTIN
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

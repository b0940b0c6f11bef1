//! The rapier3d peer of `cargo xtask peers rapier`.
//!
//! Reads a bed of spheres in the plain-text format written by xtask
//! (`gravity`, `dt`, `iterations`, `steps`, `warmup`, `material` lines, one
//! `plane` line per half-space wall and one `sphere` line per sphere, with
//! its velocity), builds it in rapier3d-f64 (one collider per body, no
//! sleeping, so that every sphere is stepped as in ndem), runs `warmup`
//! steps, then `steps` measured steps, and prints one JSON object:
//! CPU seconds of the measured steps (`/proc/self/task/*/schedstat`, the
//! clock xtask uses for ndem), the mean number of solver contact points,
//! the final kinetic energy and the largest sphere speed.
//!
//! `length_unit` sets `IntegrationParameters::length_unit`, the scale of
//! rapier's tolerances (prediction distance, allowed error, corrective
//! speed), which are tuned for metre-sized objects.
//!
//! `iterations` sets `IntegrationParameters::num_solver_iterations`:
//! rapier's soft-TGS solver runs that many substeps, each with one PGS
//! sweep over the contacts and one stabilization sweep.

use rapier3d_f64::na::Unit;
use rapier3d_f64::prelude::*;
use std::process::ExitCode;

/// What the bed file gives.
struct Bed {
    gravity: [f64; 3],
    dt: f64,
    length_unit: f64,
    iterations: usize,
    steps: usize,
    warmup: usize,
    density: f64,
    friction: f64,
    restitution: f64,
    planes: Vec<[f64; 6]>,
    spheres: Vec<[f64; 7]>,
}

fn numbers<const N: usize>(line: &str, fields: &[&str]) -> Result<[f64; N], String> {
    let values: Vec<f64> = fields
        .iter()
        .map(|f| f.parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("`{line}`: {e}"))?;
    values
        .try_into()
        .map_err(|_| format!("`{line}`: expected {N} numbers"))
}

fn read_bed(text: &str) -> Result<Bed, String> {
    let mut bed = Bed {
        gravity: [0.0, 0.0, -9.81],
        dt: 0.0,
        length_unit: 1.0,
        iterations: 0,
        steps: 0,
        warmup: 0,
        density: 0.0,
        friction: 0.0,
        restitution: 0.0,
        planes: Vec::new(),
        spheres: Vec::new(),
    };
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let key = fields.next().unwrap_or_default();
        let rest: Vec<&str> = fields.collect();
        match key {
            "gravity" => bed.gravity = numbers::<3>(line, &rest)?,
            "dt" => bed.dt = numbers::<1>(line, &rest)?[0],
            "length_unit" => bed.length_unit = numbers::<1>(line, &rest)?[0],
            "iterations" => bed.iterations = numbers::<1>(line, &rest)?[0] as usize,
            "steps" => bed.steps = numbers::<1>(line, &rest)?[0] as usize,
            "warmup" => bed.warmup = numbers::<1>(line, &rest)?[0] as usize,
            "material" => {
                let [d, f, e] = numbers::<3>(line, &rest)?;
                (bed.density, bed.friction, bed.restitution) = (d, f, e);
            }
            "plane" => bed.planes.push(numbers::<6>(line, &rest)?),
            "sphere" => bed.spheres.push(numbers::<7>(line, &rest)?),
            _ => return Err(format!("unknown line `{line}`")),
        }
    }
    if !(bed.dt > 0.0 && bed.iterations > 0 && bed.density > 0.0) {
        return Err("the bed needs dt, iterations and a material".into());
    }
    Ok(bed)
}

/// CPU seconds of this process, all threads.
fn cpu_seconds() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return f64::NAN;
    };
    let mut ns = 0u64;
    for t in tasks.flatten() {
        if let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) {
            ns += s
                .split_whitespace()
                .next()
                .and_then(|x| x.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    ns as f64 * 1e-9
}

fn build(bed: &Bed) -> (PhysicsWorld, Vec<RigidBodyHandle>) {
    let mut world = PhysicsWorld::new();
    let [gx, gy, gz] = bed.gravity;
    world.gravity = Vector::new(gx, gy, gz);
    world.integration_parameters.dt = bed.dt;
    world.integration_parameters.length_unit = bed.length_unit;
    world.integration_parameters.num_solver_iterations = bed.iterations;
    let ground = world.insert_body(RigidBodyBuilder::fixed());
    for &[nx, ny, nz, px, py, pz] in &bed.planes {
        let norm = (nx * nx + ny * ny + nz * nz).sqrt();
        let normal = Unit::new_unchecked(Vector::new(nx / norm, ny / norm, nz / norm));
        world.insert_collider(
            ColliderBuilder::halfspace(normal)
                .translation(Vector::new(px, py, pz))
                .friction(bed.friction)
                .restitution(bed.restitution),
            Some(ground),
        );
    }
    let mut spheres = Vec::with_capacity(bed.spheres.len());
    for &[x, y, z, r, vx, vy, vz] in &bed.spheres {
        let (h, _) = world.insert(
            RigidBodyBuilder::dynamic()
                .translation(Vector::new(x, y, z))
                .linvel(Vector::new(vx, vy, vz))
                .can_sleep(false),
            ColliderBuilder::ball(r)
                .density(bed.density)
                .friction(bed.friction)
                .restitution(bed.restitution),
        );
        spheres.push(h);
    }
    (world, spheres)
}

fn contact_points(world: &PhysicsWorld) -> usize {
    world
        .narrow_phase
        .contact_pairs()
        .map(|pair| match &pair.contacts {
            PairContacts::Rigid(rigid) => rigid
                .solver_manifolds()
                .iter()
                .map(|m| m.data.solver_contacts.len())
                .sum(),
            PairContacts::Soft { .. } => 0,
        })
        .sum()
}

fn run(text: &str) -> Result<String, String> {
    let bed = read_bed(text)?;
    let (mut world, spheres) = build(&bed);
    for _ in 0..bed.warmup {
        world.step();
    }
    let mut contacts = 0usize;
    let start = cpu_seconds();
    for _ in 0..bed.steps {
        world.step();
        contacts += contact_points(&world);
    }
    // the count is part of the loop in both codes' figures: ndem's step
    // reports its contacts as well
    let cpu = cpu_seconds() - start;
    let (mut kinetic, mut max_speed) = (0.0, 0.0f64);
    for h in &spheres {
        let b = &world.bodies[*h];
        let v = b.linvel();
        let w = b.angvel();
        let m = b.mass();
        let inertia = b.mass_properties().local_mprops.principal_inertia();
        kinetic += 0.5 * m * v.length_squared()
            + 0.5 * (inertia.x * w.x * w.x + inertia.y * w.y * w.y + inertia.z * w.z * w.z);
        max_speed = max_speed.max(v.length());
    }
    Ok(format!(
        "{{\"spheres\":{},\"steps\":{},\"iterations\":{},\"cpu_s\":{cpu:e},\"contact_points_mean\":{},\"kinetic_J\":{kinetic:e},\"max_speed_m_s\":{max_speed:e}}}",
        spheres.len(),
        bed.steps,
        bed.iterations,
        contacts as f64 / bed.steps.max(1) as f64
    ))
}

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: ndem-rapier-peer BED_FILE");
        return ExitCode::from(2);
    };
    let result = std::fs::read_to_string(&path)
        .map_err(|e| format!("{path}: {e}"))
        .and_then(|text| run(&text));
    match result {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ndem-rapier-peer: {e}");
            ExitCode::FAILURE
        }
    }
}

//! The rapier3d half of `cargo xtask peers ndem`: the bed that NDEM settled,
//! written for `xtask/rapier-peer` (rapier3d-f64, a separate workspace built
//! here on demand) and stepped there with the same time step, gravity,
//! density, friction, restitution and solver iterations.
//!
//! What is equal and what is not: the same spheres, walls and contacts, one
//! thread each, `f64` in both. rapier's soft-TGS solver runs
//! `num_solver_iterations` = 25 substeps, each with one PGS sweep over 3
//! rows per contact (normal and two friction rows) and one stabilization
//! sweep; ndem's step runs the impact stage and 25 sweeps over 6 rows per
//! contact (with rolling and twisting resistance). rapier's sleeping is
//! off, so that it steps every sphere as ndem does. rapier's tolerances
//! are tuned for metre-sized objects (a 2 cm prediction distance would make
//! every neighbour within two diameters a contact): its `length_unit` is
//! set to the mean sphere diameter, as its documentation asks for objects
//! of another scale.

use crate::report::{Progress, SuiteResult};
use ndem_collide::Shape;
use ndem_scenes::builders::Scene;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pinned peer version (`xtask/rapier-peer/Cargo.toml`).
pub(crate) const RAPIER: &str = "rapier3d-f64 0.36.1";

/// What one run of the peer measured.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RapierRun {
    /// CPU seconds per measured step.
    pub step_s: f64,
    /// Mean solver contact points per step.
    pub contact_points: f64,
    /// Kinetic energy after the measured steps \[J\].
    pub kinetic: f64,
    /// Largest sphere speed after the measured steps \[m/s\].
    pub max_speed: f64,
}

/// Builds the peer (release) and returns its binary, or `None` with a note
/// when it cannot be built here (for example without access to crates.io).
pub(crate) fn build(progress: &mut Progress) -> Option<PathBuf> {
    let root = crate::report::workspace_root();
    let target = root.join("target").join("rapier-peer");
    progress.note(&format!("building the {RAPIER} peer (xtask/rapier-peer)"));
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "--quiet", "--manifest-path"])
        .arg(root.join("xtask").join("rapier-peer").join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        .status();
    match status {
        Ok(s) if s.success() => Some(target.join("release").join("ndem-rapier-peer")),
        Ok(s) => {
            progress.note(&format!("the rapier3d peer did not build ({s}): ndem only"));
            None
        }
        Err(e) => {
            progress.note(&format!(
                "cannot run cargo for the rapier3d peer ({e}): ndem only"
            ));
            None
        }
    }
}

/// Writes the settled bed of `scene` for the peer: `warmup` steps to build
/// its contacts and warm-start impulses, then `steps` measured steps of
/// `iterations` solver iterations.
pub(crate) fn write_bed(
    path: &Path,
    scene: &Scene,
    (warmup, steps, iterations): (usize, usize, usize),
) -> SuiteResult<()> {
    let world = &scene.world;
    let material = world.materials.first().ok_or("the bed has no material")?;
    let g = world.gravity;
    let mut text = String::from("# bed written by cargo xtask peers for xtask/rapier-peer\n");
    let _ = writeln!(text, "gravity {:e} {:e} {:e}", g.x, g.y, g.z);
    let _ = writeln!(text, "dt {:e}", scene.settings.dt);
    let radii: Vec<f64> = world
        .shapes()
        .iter()
        .filter_map(Shape::sphere_radius)
        .collect();
    let diameter = 2.0 * radii.iter().sum::<f64>() / radii.len().max(1) as f64;
    let _ = writeln!(text, "length_unit {diameter:e}");
    let _ = writeln!(text, "iterations {iterations}");
    let _ = writeln!(text, "warmup {warmup}");
    let _ = writeln!(text, "steps {steps}");
    let _ = writeln!(
        text,
        "material {:e} {:e} {:e}",
        material.density, material.friction, material.restitution
    );
    for (i, shape) in world.shapes().iter().enumerate() {
        let p = world.positions()[i];
        let v = world.velocities()[i].linear;
        match shape {
            Shape::HalfSpace { normal } => {
                let _ = writeln!(
                    text,
                    "plane {:e} {:e} {:e} {:e} {:e} {:e}",
                    normal.x, normal.y, normal.z, p.x, p.y, p.z
                );
            }
            Shape::Sphere { radius } => {
                let _ = writeln!(
                    text,
                    "sphere {:e} {:e} {:e} {:e} {:e} {:e} {:e}",
                    p.x, p.y, p.z, radius, v.x, v.y, v.z
                );
            }
            other => {
                return Err(format!(
                    "the rapier peer takes spheres and planes, not {other:?}"
                ));
            }
        }
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs the peer on `bed`.
pub(crate) fn run(binary: &Path, bed: &Path) -> SuiteResult<RapierRun> {
    let out = Command::new(binary)
        .arg(bed)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    if !out.status.success() {
        return Err(format!(
            "the rapier peer failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("the rapier peer's output: {e}"))?;
    let field = |k: &str| {
        v[k].as_f64()
            .ok_or_else(|| format!("the rapier peer's output lacks `{k}`"))
    };
    let steps = field("steps")?.max(1.0);
    Ok(RapierRun {
        step_s: field("cpu_s")? / steps,
        contact_points: field("contact_points_mean")?,
        kinetic: field("kinetic_J")?,
        max_speed: field("max_speed_m_s")?,
    })
}

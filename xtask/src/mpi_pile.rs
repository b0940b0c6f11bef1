//! The pile formation (warm-starting paper, section 4.2) on 1, 2 and 4
//! MPI ranks for `cargo xtask mpi-scaling`: an emitter across the ranks
//! from an empty floor. Each run ends with a checkpoint of the whole
//! scene, from which the suite measures what the pile is (particles,
//! mass, heap angle, height) and compares it with the one-rank run.

use crate::report::{RankedRun, SuiteResult, figure};
use ndem::checkpoint::Checkpoint;
use ndem_math::Vec3;
use ndem_scenes::{builders, measure};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::Path;

/// One distributed pile run: its summary and the final pile's figures.
#[derive(Debug, Clone)]
pub(crate) struct PileRun {
    pub ranked: RankedRun,
    pub particles: usize,
    /// Dynamic bodies at the end.
    pub count: usize,
    /// Their total mass \[kg\].
    pub mass: f64,
    /// Heap angle ([`measure::pile_angle`], rings of width d) \[deg\].
    pub angle: f64,
    /// Mean of the 10 highest sphere tops within 3d of the axis \[m\].
    pub height: f64,
}

/// Steps of a pile of `particles`: to 10 s after the last is emitted.
fn steps_of(particles: usize) -> SuiteResult<u64> {
    let scene = builders::builtin_sized("pile", Some(particles)).map_err(|e| e.to_string())?;
    Ok((scene.duration / scene.settings.dt).round() as u64)
}

/// `mpirun -np ranks ndem run pile --particles N --mpi` to the scene's
/// end, a binary checkpoint at the last step, and its figures.
fn run_once(ndem: &Path, out: &Path, ranks: usize, particles: usize) -> SuiteResult<PileRun> {
    let steps = steps_of(particles)?;
    let dir = out.join(format!("runs/pile-{particles}-{ranks}"));
    let mut cmd = crate::report::mpirun_scene(ndem, ranks, "pile");
    cmd.args(["--particles", &particles.to_string()])
        .args(["--steps", &steps.to_string(), "--stats-every", "10"])
        .args(["--checkpoint-every", &steps.to_string()])
        .args(["--checkpoint-format", "binary"])
        .arg("--out")
        .arg(&dir);
    let what = format!("mpirun -np {ranks} ndem run pile --particles {particles} --mpi");
    let summary = crate::report::run_for_summary(&mut cmd, &what, &dir)?;
    let checkpoint = dir.join(format!("checkpoint_{steps:08}.ckpt"));
    let (scene, _) = Checkpoint::read_file(&checkpoint)?
        .restore()
        .map_err(|e| format!("{}: {e}", checkpoint.display()))?;
    let w = &scene.world;
    // the particle diameter d
    let d = (0..w.len())
        .find_map(|i| w.shapes()[i].sphere_radius())
        .map_or(f64::NAN, |r| 2.0 * r);
    let mass = (0..w.len())
        .filter_map(|i| w.mass_properties()[i].map(|m| m.mass))
        .sum();
    Ok(PileRun {
        ranked: RankedRun { ranks, summary },
        particles,
        count: w.dynamic_count(),
        mass,
        angle: measure::pile_angle(w, Vec3::zeros(), d),
        height: measure::pile_height_top(w, Vec3::zeros(), 3.0 * d, 10),
    })
}

/// The pile on each rank count of `ranks`.
pub(crate) fn measure_piles(
    ndem: &Path,
    out: &Path,
    particles: usize,
    ranks: &[usize],
) -> SuiteResult<Vec<PileRun>> {
    crate::report::by_ranks(
        "mpi-scaling pile",
        ranks,
        |r| run_once(ndem, out, r, particles),
        |r, run| {
            format!(
                "pile of {particles} on {r}: {:.4} s/step, angle {:.2}°",
                figure(&run.ranked.summary, "seconds_per_step"),
                run.angle
            )
        },
    )
}

/// Each run's figures and its differences from the one-rank run.
pub(crate) fn rows(runs: &[PileRun], cores: usize) -> Vec<Value> {
    crate::report::scaling_rows(
        runs,
        |r| &r.ranked,
        cores,
        |r, one| {
            json!({
                "particles": r.particles,
                "count": r.count,
                "mass_kg": r.mass,
                "angle_deg": r.angle,
                "height_m": r.height,
                "count_difference": one.map(|o| r.count as i64 - o.count as i64),
                "mass_relative_difference": one.map(|o| (r.mass - o.mass) / o.mass),
                "angle_difference_deg": one.map(|o| r.angle - o.angle),
                "height_difference_m": one.map(|o| r.height - o.height),
            })
        },
    )
}

/// The report's section.
pub(crate) fn report(rows: &[Value], particles: usize) -> String {
    let mut r = format!(
        "\n## The pile on several ranks\n\nThe `pile` scene (warm-starting paper 4.2) with {particles} spheres emitted at 200 per second onto an empty floor and 10 s of settling: `mpirun --oversubscribe -np R target/release/ndem run pile --particles {particles} --mpi`, PGS with the scene's 50 sweeps, the energy guard on. The emitter runs alike on every rank; each particle is owned by the rank whose box holds it. The heap angle is `measure::pile_angle` (the highest top in rings of width d, fitted over the rings between 0.2 and 0.8 of the heap's height), the height the mean of the 10 highest tops within 3d of the axis, both from the final checkpoint.\n\n| ranks | particles | mass [kg] | heap angle [°] | Δangle [°] | height [m] | s/step | efficiency | exchange fraction |\n|---|---|---|---|---|---|---|---|---|\n"
    );
    for row in rows {
        let f = |k: &str| row[k].as_f64().unwrap_or(f64::NAN);
        let _ = writeln!(
            r,
            "| {} | {} | {:.6} | {:.2} | {:+.2} | {:.4} | {:.4} | {:.2} | {:.2} |",
            crate::report::rank_label(row),
            row["count"],
            f("mass_kg"),
            f("angle_deg"),
            f("angle_difference_deg"),
            f("height_m"),
            f("seconds_per_step"),
            f("efficiency"),
            f("exchange_fraction"),
        );
    }
    r.push_str("\nThe trajectories of a pile differ between rank counts: its solves stop at their sweep cap, and such solves depend on the rank count (the subdomains couple Jacobi-wise); what is compared is the heap the particles form.\n");
    r
}

//! The quick excavator (warm-starting paper, section 5) on several MPI
//! ranks for `cargo xtask mpi-scaling`: the machine's bodies and joints
//! on every rank, the trench's spheres split among them. Each run writes
//! the joints' drive forces per step (`joints.csv`); the suite compares
//! the arm cylinder's mean force while the bucket drags through the
//! trench with the one-rank run's, and the time per step.

use crate::report::{RankedRun, SuiteResult, figure};
use ndem_scenes::excavator::{ExcavatorSpec, excavator_with_machine};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::Path;

/// One distributed excavator run.
#[derive(Debug, Clone)]
pub(crate) struct ExcavatorRun {
    pub ranked: RankedRun,
    pub steps: u64,
    /// Mean |arm cylinder force| over the steps of the `drag` phase \[N\]
    /// (NaN when the run ends before it).
    pub drag_force: f64,
    /// Steps of the drag phase the mean is taken over.
    pub drag_steps: usize,
}

/// Steps of the quick excavator to the end of its cycle, and the index of
/// the arm cylinder among its joints.
fn scene_figures() -> SuiteResult<(u64, usize)> {
    let (scene, machine) =
        excavator_with_machine(ExcavatorSpec::quick()).map_err(|e| e.to_string())?;
    let steps = (scene.duration / scene.settings.dt).round() as u64;
    Ok((steps, machine.cylinders[1].index()))
}

/// `mpirun -np ranks ndem run excavator --mpi` for `steps` steps (the
/// whole cycle when `None`) and the arm cylinder's drag force.
fn run_once(
    ndem: &Path,
    out: &Path,
    ranks: usize,
    steps: Option<u64>,
) -> SuiteResult<ExcavatorRun> {
    let (cycle, arm) = scene_figures()?;
    let steps = steps.unwrap_or(cycle).min(cycle);
    let dir = out.join(format!("runs/excavator-{ranks}"));
    let mut cmd = crate::report::mpirun_scene(ndem, ranks, "excavator");
    cmd.args(["--steps", &steps.to_string(), "--stats-every", "1"])
        .arg("--out")
        .arg(&dir);
    let what = format!("mpirun -np {ranks} ndem run excavator --mpi");
    let summary = crate::report::run_for_summary(&mut cmd, &what, &dir)?;
    let (drag_force, drag_steps) = phase_mean(&dir.join("joints.csv"), "drag", arm)?;
    Ok(ExcavatorRun {
        ranked: RankedRun { ranks, summary },
        steps,
        drag_force,
        drag_steps,
    })
}

/// Mean of |drive force| of joint `joint` over the lines of `joints.csv`
/// in `phase`, and their count.
fn phase_mean(path: &Path, phase: &str, joint: usize) -> SuiteResult<(f64, usize)> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let column = 3 + joint;
    let (mut sum, mut n) = (0.0, 0usize);
    for line in text.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        if cells.get(2) != Some(&phase) {
            continue;
        }
        let f: f64 = cells
            .get(column)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("{}: no drive force in `{line}`", path.display()))?;
        sum += f.abs();
        n += 1;
    }
    Ok((if n > 0 { sum / n as f64 } else { f64::NAN }, n))
}

/// The excavator on each rank count of `ranks`, `steps` steps each.
pub(crate) fn measure_excavators(
    ndem: &Path,
    out: &Path,
    steps: Option<u64>,
    ranks: &[usize],
) -> SuiteResult<Vec<ExcavatorRun>> {
    crate::report::by_ranks(
        "mpi-scaling excavator",
        ranks,
        |r| run_once(ndem, out, r, steps),
        |r, run| {
            format!(
                "excavator on {r}: {:.4} s/step, arm cylinder in drag {:.1} kN",
                figure(&run.ranked.summary, "seconds_per_step"),
                run.drag_force / 1e3
            )
        },
    )
}

/// Each run's figures and its differences from the one-rank run.
pub(crate) fn rows(runs: &[ExcavatorRun], cores: usize) -> Vec<Value> {
    crate::report::scaling_rows(
        runs,
        |r| &r.ranked,
        cores,
        |r, one| {
            json!({
                "steps": r.steps,
                "particles": figure(&r.ranked.summary, "particles"),
                "drag_steps": r.drag_steps,
                "arm_cylinder_drag_force_N": r.drag_force,
                "drag_force_relative_difference":
                    one.map(|o| (r.drag_force - o.drag_force) / o.drag_force),
            })
        },
    )
}

/// The report's section.
pub(crate) fn report(rows: &[Value]) -> String {
    let mut r = String::from(
        "\n## The excavator on several ranks\n\nThe quick `excavator` scene (warm-starting paper 5: about 10⁴ spheres of 25-100 mm in a 3 m trench, the split solver with N_it = 25, Δt = 2.5 ms): `mpirun --oversubscribe -np R target/release/ndem run excavator --mpi`. The machine's five bodies and eight joints are on every rank (rank 0 owns them); the spheres are split by the bisection; the joints are solved directly on every rank after each sweep's exchange. The drag force is the mean |force| of the arm cylinder over the steps of the `drag` phase (`joints.csv`).\n\n| ranks | steps | drag steps | arm cylinder in drag [kN] | difference from 1 rank | s/step | efficiency | exchange fraction |\n|---|---|---|---|---|---|---|---|\n",
    );
    for row in rows {
        let f = |k: &str| row[k].as_f64().unwrap_or(f64::NAN);
        let _ = writeln!(
            r,
            "| {} | {} | {} | {:.1} | {:+.2} % | {:.4} | {:.2} | {:.3} |",
            crate::report::rank_label(row),
            row["steps"],
            row["drag_steps"],
            f("arm_cylinder_drag_force_N") / 1e3,
            100.0 * f("drag_force_relative_difference"),
            f("seconds_per_step"),
            f("efficiency"),
            f("exchange_fraction"),
        );
    }
    r.push_str("\nSolves stopped at 25 sweeps depend on the rank count (the subdomains couple Jacobi-wise), so the trajectories of the spheres part; the machine follows the same schedule on every rank count, and what is compared is the force it needs.\n");
    r
}

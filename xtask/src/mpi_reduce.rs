//! Model reduction on several MPI ranks for `cargo xtask mpi-scaling`:
//! the `collapse` and `conveyor` scenes with `--reduce` on one process
//! (the `pgs` solver), on one MPI rank and on two (the subdomain PGS),
//! compared by their reduction level `h(t)` (adaptive-model-reduction
//! paper, section 4) step by step.

use crate::plot::{Axes, Series, line_plot};
use crate::report::SuiteResult;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::Path;

/// The scenes and their steps (`--quick`: to 0.75 s after the collapse's
/// gate rises, and half the conveyor's run).
fn scenes(quick: bool) -> [(&'static str, u64); 2] {
    if quick {
        [("collapse", 450), ("conveyor", 800)]
    } else {
        [("collapse", 700), ("conveyor", 1600)]
    }
}

/// One reduced run: who ran it and its `h` by step.
#[derive(Debug, Clone)]
pub(crate) struct ReducedRun {
    pub scene: &'static str,
    /// 0: one process without MPI.
    pub ranks: usize,
    pub seconds_per_step: f64,
    /// `(step, time, h)` of every step.
    pub level: Vec<(u64, f64, f64)>,
}

/// `(step, time, h)` from a run's `stats.csv` (either command's layout).
fn read_level(path: &Path) -> SuiteResult<Vec<(u64, f64, f64)>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| format!("{}: no column `{name}`", path.display()))
    };
    let (step, time, level) = (col("step")?, col("time")?, col("reduction_level")?);
    lines
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            let get = |k: usize| -> SuiteResult<f64> {
                cells
                    .get(k)
                    .and_then(|c| c.parse().ok())
                    .ok_or_else(|| format!("{}: bad line `{line}`", path.display()))
            };
            Ok((get(step)? as u64, get(time)?, get(level)?))
        })
        .collect()
}

/// What `ndem run` reads for `scene`: its built-in name, except for the
/// collapse, whose preset restricts the trial solve to disturbed members
/// and merges the deposit with the floor, both in one process
/// (distributed runs solve the whole unfolded model and merge nothing
/// with static geometry): a scene file with the preset as distributed
/// runs take it, written under `out`, so that one process and the ranks
/// run alike.
fn scene_arg(out: &Path, scene: &'static str) -> SuiteResult<String> {
    let mut s = ndem_scenes::builders::builtin(scene).map_err(|e| e.to_string())?;
    let Some(preset) = s.reduce_preset.as_mut() else {
        return Ok(scene.into());
    };
    let on_static = std::mem::replace(&mut preset.merge_with_static, false);
    let partial = match preset.trial_split.as_mut().filter(|t| t.is_partial()) {
        Some(t) => {
            *t = t.whole();
            true
        }
        None => false,
    };
    if !(on_static || partial) {
        return Ok(scene.into());
    }
    let path = out.join(format!("{scene}-as-distributed.toml"));
    let text = ndem_scenes::file::SceneFile::from_scene(&s)
        .to_toml()
        .map_err(|e| e.to_string())?;
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path.display().to_string())
}

/// `scene --reduce` (read from `arg`, [`scene_arg`]) for `steps` steps on
/// `ranks` MPI ranks (0: one process without MPI).
fn run_once(
    ndem: &Path,
    out: &Path,
    (scene, arg): (&'static str, &str),
    ranks: usize,
    steps: u64,
) -> SuiteResult<ReducedRun> {
    let dir = out.join(format!("runs/{scene}-reduce-{ranks}"));
    let mut cmd = if ranks == 0 {
        let mut c = std::process::Command::new(ndem);
        c.args(["run", arg, "--frame-every", "0", "--overwrite"]);
        c
    } else {
        crate::report::mpirun_scene(ndem, ranks, arg)
    };
    cmd.args([
        "--reduce",
        "--steps",
        &steps.to_string(),
        "--stats-every",
        "1",
    ])
    .arg("--out")
    .arg(&dir);
    let what = match ranks {
        0 => format!("ndem run {arg} --reduce"),
        r => format!("mpirun -np {r} ndem run {arg} --mpi --reduce"),
    };
    let summary = crate::report::run_for_summary(&mut cmd, &what, &dir)?;
    let seconds_per_step = match ranks {
        0 => summary["wall_time_s"].as_f64().unwrap_or(f64::NAN) / steps as f64,
        _ => summary["seconds_per_step"].as_f64().unwrap_or(f64::NAN),
    };
    Ok(ReducedRun {
        scene,
        ranks,
        seconds_per_step,
        level: read_level(&dir.join("stats.csv"))?,
    })
}

/// Every scene on one process, one rank and two.
pub(crate) fn measure(ndem: &Path, out: &Path, quick: bool) -> SuiteResult<Vec<ReducedRun>> {
    let mut runs = Vec::new();
    for (scene, steps) in scenes(quick) {
        let arg = scene_arg(out, scene)?;
        let found = crate::report::by_ranks(
            &format!("mpi-scaling {scene} --reduce"),
            &[0, 1, 2],
            |r| run_once(ndem, out, (scene, &arg), r, steps),
            |r, run| {
                format!(
                    "{scene} --reduce on {r} ranks (0: one process): h at the end {:.4}",
                    run.level.last().map_or(f64::NAN, |x| x.2)
                )
            },
        )?;
        runs.extend(found);
    }
    Ok(runs)
}

/// `(max |Δh|, mean |Δh|)` of `a` against `b` over their common steps.
fn level_difference(a: &ReducedRun, b: &ReducedRun) -> (f64, f64) {
    let (mut max, mut sum, mut n) = (0.0f64, 0.0, 0usize);
    for (x, y) in a.level.iter().zip(&b.level) {
        if x.0 == y.0 {
            let d = (x.2 - y.2).abs();
            max = max.max(d);
            sum += d;
            n += 1;
        }
    }
    (max, if n > 0 { sum / n as f64 } else { f64::NAN })
}

/// Each run's figures against the scene's one-rank run.
pub(crate) fn rows(runs: &[ReducedRun]) -> Vec<Value> {
    runs.iter()
        .map(|r| {
            let one = runs.iter().find(|o| o.scene == r.scene && o.ranks == 1);
            let (max, mean) = one.map_or((f64::NAN, f64::NAN), |o| level_difference(r, o));
            json!({
                "scene": r.scene,
                "ranks": r.ranks,
                "steps": r.level.len(),
                "seconds_per_step": r.seconds_per_step,
                "h_end": r.level.last().map_or(f64::NAN, |x| x.2),
                "h_max_abs_difference_from_1_rank": max,
                "h_mean_abs_difference_from_1_rank": mean,
            })
        })
        .collect()
}

/// `reduction_level.svg`: `h(t)` of every run.
pub(crate) fn plot(out: &Path, runs: &[ReducedRun]) -> SuiteResult<()> {
    let series: Vec<Series> = runs
        .iter()
        .map(|r| {
            let who = match r.ranks {
                0 => "one process".to_string(),
                n => format!("{n} rank(s)"),
            };
            let points = r.level.iter().map(|x| (x.1, x.2)).collect();
            Series::line(format!("{} {who}", r.scene), points)
        })
        .collect();
    line_plot(
        &out.join("reduction_level.svg"),
        Axes::new("reduction level with --reduce", "t [s]", "h"),
        &series,
    )
}

/// The report's section.
pub(crate) fn report(rows: &[Value]) -> String {
    let mut r = String::from(
        "\n## Model reduction on several ranks\n\n`ndem run S --reduce` (one process, the `pgs` solver) and `mpirun --oversubscribe -np R target/release/ndem run S --mpi --reduce` (the subdomain PGS), `--stats-every 1`: the reduction level h = 1 − (free particles + aggregates)/particles after every step, against the one-rank run. `collapse` merges its settled bed at 1.5 s, splits it as the gate rises and merges the deposit again; `conveyor` merges the heap on the belt as the emitter feeds it. Aggregates' bodies are on every rank; merge and split are decided alike on every rank (`docs/distributed.md`, \"Model reduction\").\n\n| scene | runner | steps | h at the end | max abs(Δh) from 1 rank | mean abs(Δh) | s/step |\n|---|---|---|---|---|---|---|\n",
    );
    for row in rows {
        let f = |k: &str| row[k].as_f64().unwrap_or(f64::NAN);
        let who = match row["ranks"].as_u64() {
            Some(0) => "one process".to_string(),
            Some(n) => format!("{n} rank(s)"),
            None => "?".to_string(),
        };
        let _ = writeln!(
            r,
            "| {} | {who} | {} | {:.4} | {:.4} | {:.4} | {:.4} |",
            row["scene"].as_str().unwrap_or(""),
            row["steps"],
            f("h_end"),
            f("h_max_abs_difference_from_1_rank"),
            f("h_mean_abs_difference_from_1_rank"),
            f("seconds_per_step"),
        );
    }
    r.push_str("\nThe solves stop at the scenes' sweep caps (collapse 150, conveyor 50), where the iterates of the one-process PGS, the one-rank and the two-rank subdomain PGS differ; merges and splits follow the velocities each run reaches, so h(t) of any two runs parts while the material flows and meets again where it rests. The one-process row measures that spread between two solvers that agree at convergence.\n");
    r
}

#[cfg(test)]
mod tests {
    use super::scene_arg;

    /// The collapse, whose preset's trial is partial, is read from a
    /// scene file with the whole trial; the conveyor by its name.
    #[test]
    fn every_runner_reads_the_whole_trial() {
        let out = std::env::temp_dir().join(format!("ndem-mpi-reduce-{}", std::process::id()));
        // the conveyor's preset has no partial trial: its name, nothing written
        assert_eq!(scene_arg(&out, "conveyor").unwrap(), "conveyor");
        std::fs::create_dir_all(&out).unwrap();
        let written = std::fs::read_to_string(scene_arg(&out, "collapse").unwrap());
        std::fs::remove_dir_all(&out).unwrap();
        let scene = ndem_scenes::file::SceneFile::from_toml(&written.unwrap())
            .and_then(|f| f.to_scene())
            .unwrap();
        let preset = scene.reduce_preset.unwrap();
        assert!(!preset.merge_with_static);
        let trial = preset.trial_split.unwrap();
        assert!(!trial.is_partial() && trial.velocity_test);
    }
}

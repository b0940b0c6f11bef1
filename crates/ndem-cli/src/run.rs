//! Running a scene: stepping with progress, statistics, frames, checkpoints
//! and a summary.

use ndem::checkpoint::Checkpoint;
use ndem::output::{self, FrameLog};
use ndem::scenes::{Scene, SceneError};
use ndem::step::{StepError, Stepper};
use serde::Serialize;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use thiserror::Error;

/// Why a run failed.
#[derive(Debug, Error)]
pub enum RunError {
    /// Scene could not be built or loaded.
    #[error(transparent)]
    Scene(#[from] SceneError),
    /// A step failed.
    #[error(transparent)]
    Step(#[from] StepError),
    /// Output could not be written.
    #[error("cannot write output in {dir}: {source}")]
    Output {
        /// Folder.
        dir: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
}

/// How long to run and what to write.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Number of steps to take.
    pub steps: u64,
    /// Output folder (`None`: no files).
    pub out: Option<PathBuf>,
    /// VTK frame every this many steps (0: none).
    pub frame_every: u64,
    /// Checkpoint every this many steps (0: none).
    pub checkpoint_every: u64,
    /// Show a progress bar on a terminal.
    pub progress: bool,
}

/// What a run did (written as `summary.json`).
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// Scene name.
    pub scene: String,
    /// Dynamic bodies at the end.
    pub particles: usize,
    /// Steps taken in this run.
    pub steps: u64,
    /// Simulated time at the end \[s\].
    pub time: f64,
    /// Mean number of contacts per step.
    pub mean_contacts: f64,
    /// Solver name.
    pub solver: String,
    /// Warm start name.
    pub warm_start: String,
    /// Iterations per step.
    pub iterations: usize,
    /// Wall time \[s\].
    pub wall_time_s: f64,
    /// Steps per second of wall time.
    pub steps_per_second: f64,
    /// Total time per stage \[s\].
    pub stage_times_s: StageSeconds,
    /// Frames written.
    pub frames: usize,
    /// Checkpoints written.
    pub checkpoints: Vec<String>,
    /// Mean reduction level `h` over the run (0 without reduction).
    pub mean_reduction_level: f64,
}

/// Stage totals.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StageSeconds {
    /// Detection.
    pub detection: f64,
    /// Assembly.
    pub assembly: f64,
    /// Impact stage.
    pub impact: f64,
    /// Continuous stage.
    pub continuous: f64,
    /// Model reduction (split and merge).
    pub reduction: f64,
}

fn io(dir: &std::path::Path) -> impl Fn(std::io::Error) -> RunError + '_ {
    move |source| RunError::Output {
        dir: dir.to_path_buf(),
        source,
    }
}

/// Runs `options.steps` steps of `scene` with `stepper`, writing outputs.
/// Files appear atomically: a run that fails leaves no file that looks
/// complete (`summary.json` is written last).
pub fn run_scene(
    scene: &mut Scene,
    stepper: &mut Stepper,
    options: &RunOptions,
) -> Result<RunSummary, RunError> {
    if let Some(dir) = &options.out {
        output::prepare_dir(dir).map_err(io(dir))?;
        // a previous summary would look like this run's
        let _ = std::fs::remove_file(dir.join("summary.json"));
    }
    let bar = if options.progress {
        let b = indicatif::ProgressBar::new(options.steps);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} steps  {per_sec}  eta {eta}  {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(b)
    } else {
        None
    };
    let start = Instant::now();
    let mut csv = String::from(output::STATS_HEADER);
    csv.push('\n');
    let mut frames = FrameLog::default();
    let mut checkpoints = Vec::new();
    let mut stage = [Duration::ZERO; 5];
    let mut contacts_sum = 0u64;
    let mut level_sum = 0.0;
    let write_frame =
        |frames: &mut FrameLog, scene: &Scene, stepper: &Stepper| -> Result<(), RunError> {
            if let Some(dir) = &options.out {
                frames
                    .write_frame(
                        dir,
                        &scene.world,
                        &stepper.contact_forces(),
                        stepper.time(),
                        stepper.step_count(),
                    )
                    .map_err(io(dir))?;
            }
            Ok(())
        };
    if options.frame_every > 0 {
        write_frame(&mut frames, scene, stepper)?;
    }
    for k in 1..=options.steps {
        let s = match scene.step(stepper) {
            Ok(s) => s,
            Err(e) => {
                // keep what the run produced up to the failed step: the
                // statistics and the frame collections (no summary.json,
                // which marks a finished run); checkpoints are untouched
                if let Some(dir) = &options.out {
                    output::write_atomic(&dir.join("stats.csv"), csv.as_bytes())
                        .map_err(io(dir))?;
                    frames.write_collections(dir).map_err(io(dir))?;
                }
                return Err(e.into());
            }
        };
        contacts_sum += s.contacts as u64;
        stage[0] += s.times.detection;
        stage[1] += s.times.assembly;
        stage[2] += s.times.impact;
        stage[3] += s.times.continuous;
        stage[4] += s.times.reduction;
        let reduction = stepper
            .hooks_as::<ndem::reduce::Reducer>()
            .map(|r| r.stats());
        if let Some(r) = &reduction {
            level_sum += r.level;
        }
        csv.push_str(&output::stats_line(&s, reduction.as_ref()));
        csv.push('\n');
        if options.frame_every > 0 && k % options.frame_every == 0 {
            write_frame(&mut frames, scene, stepper)?;
        }
        if options.checkpoint_every > 0
            && k % options.checkpoint_every == 0
            && let Some(dir) = &options.out
        {
            {
                let name = format!("checkpoint_{:08}.json", stepper.step_count());
                output::write_atomic(
                    &dir.join(&name),
                    Checkpoint::capture(scene, stepper).to_json().as_bytes(),
                )
                .map_err(io(dir))?;
                checkpoints.push(name);
            }
        }
        if let Some(b) = &bar {
            b.inc(1);
            if k % 20 == 0 {
                b.set_message(format!("t = {:.3} s, {} contacts", s.time, s.contacts));
            }
        }
        if k % 1000 == 0 {
            tracing::info!(
                step = s.step,
                time = s.time,
                contacts = s.contacts,
                kinetic_energy = s.kinetic_energy,
                "progress"
            );
        }
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let wall = start.elapsed().as_secs_f64();
    let summary = RunSummary {
        scene: scene.name.clone(),
        particles: (0..scene.world.len())
            .filter(|&i| {
                scene.world.motions()[i] == ndem::step::Motion::Dynamic
                    && !matches!(scene.world.shapes()[i], ndem::collide::Shape::Empty)
            })
            .count(),
        steps: options.steps,
        time: stepper.time(),
        mean_contacts: if options.steps > 0 {
            contacts_sum as f64 / options.steps as f64
        } else {
            0.0
        },
        solver: stepper.solver_mut().name().to_string(),
        warm_start: scene.warm_start.name().to_string(),
        iterations: stepper.solver_mut().max_iterations(),
        wall_time_s: wall,
        steps_per_second: options.steps as f64 / wall.max(1e-12),
        stage_times_s: StageSeconds {
            detection: stage[0].as_secs_f64(),
            assembly: stage[1].as_secs_f64(),
            impact: stage[2].as_secs_f64(),
            continuous: stage[3].as_secs_f64(),
            reduction: stage[4].as_secs_f64(),
        },
        frames: frames.frames.len(),
        checkpoints,
        mean_reduction_level: if options.steps > 0 {
            level_sum / options.steps as f64
        } else {
            0.0
        },
    };
    if let Some(dir) = &options.out {
        output::write_atomic(&dir.join("stats.csv"), csv.as_bytes()).map_err(io(dir))?;
        frames.write_collections(dir).map_err(io(dir))?;
        let json = serde_json::to_string_pretty(&summary).unwrap_or_default();
        output::write_atomic(&dir.join("summary.json"), json.as_bytes()).map_err(io(dir))?;
    }
    Ok(summary)
}

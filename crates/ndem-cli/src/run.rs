//! Running a scene: stepping with progress, streaming statistics, frames,
//! checkpoints and a summary, and stopping cleanly on request (Ctrl-C).
//!
//! Files are written as the run goes: `stats.csv` (and `joints.csv` for a
//! scene with joints) is appended line by line
//! and flushed at every frame and checkpoint, the `.pvd` collections are
//! rewritten at every frame, and `summary.json` is written at the end of a
//! finished or interrupted run (with `"interrupted": true` and the last
//! step), never by a failed one.

use crate::progress::Progress;
pub use crate::progress::ProgressStyle;
use ndem::checkpoint::{Checkpoint, CheckpointFormat};
use ndem::output::{self, FrameLog};
use ndem::scenes::{Scene, SceneError};
use ndem::step::{StepError, Stepper};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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
    /// The output folder holds another run's files.
    #[error(
        "output folder {dir} already holds a run ({found}); choose another --out, or pass --overwrite to replace it"
    )]
    FolderNotEmpty {
        /// Folder.
        dir: PathBuf,
        /// One of the files found.
        found: String,
    },
}

/// What to do with an output folder that already holds a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FolderPolicy {
    /// Refuse ([`RunError::FolderNotEmpty`]).
    #[default]
    New,
    /// Remove the earlier run's files (frames, collections, statistics,
    /// summary, checkpoints) first.
    Overwrite,
    /// Continue the earlier run from step `from_step` (a resume): its
    /// statistics and frames after that step are dropped, the rest kept,
    /// and this run's are appended.
    Append {
        /// The step the run continues from.
        from_step: u64,
    },
}

/// How long to run and what to write.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Number of steps to take.
    pub steps: u64,
    /// Output folder (`None`: no files).
    pub out: Option<PathBuf>,
    /// VTK frame at every step count divisible by this (0: none); the
    /// first and the last state are always written when it is not 0.
    pub frame_every: u64,
    /// A statistics line at every step count divisible by this (≥ 1).
    pub stats_every: u64,
    /// Checkpoint at every step count divisible by this (0: none).
    pub checkpoint_every: u64,
    /// The checkpoints' format.
    pub checkpoint_format: CheckpointFormat,
    /// Progress display.
    pub progress: ProgressStyle,
    /// An output folder that already holds a run.
    pub folder: FolderPolicy,
    /// Set (by a Ctrl-C handler) to stop after the current step, write
    /// everything and report the run as interrupted.
    pub stop: Option<Arc<AtomicBool>>,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            steps: 0,
            out: None,
            frame_every: 0,
            stats_every: 1,
            checkpoint_every: 0,
            checkpoint_format: CheckpointFormat::Json,
            progress: ProgressStyle::Quiet,
            folder: FolderPolicy::New,
            stop: None,
        }
    }
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
    /// Step count at the start of this run (0, or the checkpoint's).
    pub first_step: u64,
    /// Step count at the end.
    pub last_step: u64,
    /// Simulated time at the end \[s\].
    pub time: f64,
    /// The run was stopped on request (Ctrl-C) before its last step.
    pub interrupted: bool,
    /// Mean number of contacts per step.
    pub mean_contacts: f64,
    /// Most contacts of a step.
    pub max_contacts: usize,
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
    /// Frames written by this run.
    pub frames: usize,
    /// Checkpoints written.
    pub checkpoints: Vec<String>,
    /// Mean reduction level `h` over the run (0 without reduction).
    pub mean_reduction_level: f64,
    /// Peak resident memory of the process so far \[bytes\] (`VmHWM` of
    /// `/proc/self/status`; `None` where the system does not say), scene
    /// loading included.
    pub peak_rss_bytes: Option<u64>,
    /// Steps that ran the impact stage.
    pub impact_steps: u64,
    /// Of those, steps whose impact solve did not reach its tolerance
    /// (`impact_status` other than `converged` in `stats.csv`).
    pub impact_unconverged_steps: u64,
    /// Continuous-stage solves by how they ended (`status` in `stats.csv`:
    /// `converged`, `iteration-limit`, `stalled`, `diverged`), steps with
    /// contacts only.
    pub statuses: std::collections::BTreeMap<&'static str, u64>,
    /// Steps whose mean normal residual left the overlaps off the contact
    /// law (`unresolved` in `stats.csv`).
    pub unresolved_steps: u64,
    /// Whether the continuous stage ran a fixed number of iterations per
    /// step (the papers' setting) rather than stopping at a tolerance.
    pub fixed_budget: bool,
    /// The mean normal residual of a step above which it is unresolved
    /// \[m/s\] (`StepStats::residual_tolerance`, the last step's).
    pub residual_tolerance: f64,
    /// Median over the steps with contacts of the continuous stage's mean
    /// normal residual \[m/s\] (0 without such steps).
    pub normal_residual_median: f64,
    /// Its largest value \[m/s\] and the step it was seen at.
    pub normal_residual_max: (f64, u64),
    /// Largest normal residual an impact solve ended with \[m/s\].
    pub impact_residual_max: f64,
    /// Sweep cap of the impact stage.
    pub impact_iterations: usize,
    /// Tolerance of the impact stage's solver (its stopping rule's).
    pub impact_tolerance: f64,
    /// Largest overlap relative to its contact's radius over the run's
    /// steps (`overlap_max` in `stats.csv`; a step above 1 fails).
    pub overlap_max: f64,
    /// The step it was seen at (0 without contacts).
    pub overlap_max_step: u64,
}

/// The median of `values` (sorted in place; 0 when empty; NaN last).
fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Peak resident set size of this process \[bytes\], from Linux's
/// `/proc/self/status`.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
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

/// The error of a file operation in the output folder `dir`.
fn output_error(dir: &Path) -> impl Fn(std::io::Error) -> RunError + Copy + '_ {
    |source| RunError::Output {
        dir: dir.to_path_buf(),
        source,
    }
}

/// The files of a run in an output folder.
struct RunFiles {
    dir: PathBuf,
    stats: std::io::BufWriter<std::fs::File>,
    /// `joints.csv`, for a scene with joints.
    joints: Option<std::io::BufWriter<std::fs::File>>,
    frames: FrameLog,
    /// Step of the last frame written.
    last_frame: Option<u64>,
    written_frames: usize,
}

impl RunFiles {
    fn io(&self) -> impl Fn(std::io::Error) -> RunError + '_ {
        output_error(&self.dir)
    }

    /// Prepares `dir` by `policy` and opens the statistics file, and the
    /// joints' file for a scene of `joints` joints (none for 0).
    fn open(dir: &Path, policy: FolderPolicy, joints: usize) -> Result<Self, RunError> {
        let io = output_error(dir);
        output::prepare_dir(dir).map_err(io)?;
        let earlier = output::run_files(dir).map_err(io)?;
        let (stats_text, frames) = match policy {
            FolderPolicy::New => {
                if let Some(found) = earlier.first() {
                    return Err(RunError::FolderNotEmpty {
                        dir: dir.to_path_buf(),
                        found: found.display().to_string(),
                    });
                }
                (format!("{}\n", output::STATS_HEADER), FrameLog::default())
            }
            FolderPolicy::Overwrite => {
                for f in &earlier {
                    std::fs::remove_file(dir.join(f)).map_err(io)?;
                }
                (format!("{}\n", output::STATS_HEADER), FrameLog::default())
            }
            FolderPolicy::Append { from_step } => {
                let _ = std::fs::remove_file(dir.join("summary.json"));
                let stats = output::stats_up_to(dir, from_step).map_err(io)?;
                let frames = FrameLog::read_up_to(dir, from_step).map_err(io)?;
                (stats, frames)
            }
        };
        let appended = |name: &str, text: &str| -> Result<_, RunError> {
            output::write_atomic(&dir.join(name), text.as_bytes()).map_err(io)?;
            let file = std::fs::OpenOptions::new()
                .append(true)
                .open(dir.join(name))
                .map_err(io)?;
            Ok(std::io::BufWriter::new(file))
        };
        let stats = appended("stats.csv", &stats_text)?;
        let joints = match (joints, policy) {
            (0, _) => None,
            (n, FolderPolicy::Append { from_step }) => {
                let text = output::joints_up_to(dir, from_step, n).map_err(io)?;
                Some(appended("joints.csv", &text)?)
            }
            (n, _) => Some(appended(
                "joints.csv",
                &format!("{}\n", output::joints_header(n)),
            )?),
        };
        let last_frame = frames.last_step();
        Ok(Self {
            dir: dir.to_path_buf(),
            stats,
            joints,
            frames,
            last_frame,
            written_frames: 0,
        })
    }

    fn stats_line(&mut self, line: &str) -> Result<(), RunError> {
        writeln!(self.stats, "{line}").map_err(self.io())
    }

    /// The line of `joints.csv` after step `s` (nothing for a scene
    /// without joints): the schedule's phase and each joint's drive force.
    fn joints_line(
        &mut self,
        scene: &Scene,
        stepper: &Stepper,
        s: &ndem::step::StepStats,
    ) -> Result<(), RunError> {
        let Some(w) = self.joints.as_mut() else {
            return Ok(());
        };
        let phase = scene.schedule.as_ref().map_or("", |p| p.phase_at(s.time));
        let reactions = stepper.joint_reactions(&scene.world);
        let line = output::joints_line(
            s.step,
            s.time,
            phase,
            reactions.iter().map(|r| r.drive_force),
        );
        writeln!(w, "{line}").map_err(output_error(&self.dir))
    }

    /// Flushes the statistics and rewrites the collections.
    fn flush(&mut self) -> Result<(), RunError> {
        self.stats.flush().map_err(self.io())?;
        if let Some(w) = self.joints.as_mut() {
            w.flush().map_err(output_error(&self.dir))?;
        }
        self.frames.write_collections(&self.dir).map_err(self.io())
    }

    fn frame(&mut self, scene: &Scene, stepper: &Stepper) -> Result<(), RunError> {
        let step = stepper.step_count();
        if self.last_frame == Some(step) {
            return Ok(());
        }
        self.frames
            .write_frame(
                &self.dir,
                &scene.world,
                stepper
                    .contact_forces_iter()
                    .chain(stepper.held_contact_forces_iter()),
                stepper.time(),
                step,
            )
            .map_err(self.io())?;
        self.last_frame = Some(step);
        self.written_frames += 1;
        self.flush()
    }

    fn checkpoint(
        &mut self,
        scene: &Scene,
        stepper: &mut Stepper,
        format: CheckpointFormat,
    ) -> Result<String, RunError> {
        let name = format!(
            "checkpoint_{:08}.{}",
            stepper.step_count(),
            format.extension()
        );
        Checkpoint::write_scene(scene, stepper, &self.dir.join(&name), format)
            .map_err(self.io())?;
        self.flush()?;
        Ok(name)
    }
}

/// Running totals of a run.
#[derive(Default)]
struct Totals {
    stage: [Duration; 5],
    contacts: u64,
    max_contacts: usize,
    level: f64,
    steps: u64,
    impact_steps: u64,
    impact_unconverged_steps: u64,
    statuses: std::collections::BTreeMap<&'static str, u64>,
    unresolved_steps: u64,
    overlap_max: (f64, u64),
    checkpoints: Vec<String>,
    /// The continuous stage's mean normal residual of each step with
    /// contacts.
    normal_residuals: Vec<f64>,
    normal_residual_max: (f64, u64),
    impact_residual_max: f64,
    residual_tolerance: f64,
}

/// Runs `options.steps` steps of `scene` with `stepper`, writing outputs as
/// it goes (see the module docs). A failed step returns the error with the
/// statistics and frames up to it written (no `summary.json`); a stop
/// request ends the run after the current step with everything written and
/// `interrupted` set.
pub fn run_scene(
    scene: &mut Scene,
    stepper: &mut Stepper,
    options: &RunOptions,
) -> Result<RunSummary, RunError> {
    let stats_every = options.stats_every.max(1);
    let mut files = match &options.out {
        Some(dir) => Some(RunFiles::open(
            dir,
            options.folder,
            scene.world.joints().len(),
        )?),
        None => None,
    };
    let mut progress = Progress::new(options.progress, options.steps);
    let start = Instant::now();
    let first_step = stepper.step_count();
    let mut totals = Totals::default();
    if options.frame_every > 0
        && let Some(f) = files.as_mut()
    {
        f.frame(scene, stepper)?;
    }
    let mut interrupted = false;
    for _ in 0..options.steps {
        if options
            .stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::SeqCst))
        {
            interrupted = true;
            break;
        }
        let s = match scene.step(stepper) {
            Ok(s) => s,
            Err(e) => {
                // keep what the run produced up to the failed step: the
                // statistics and the frame collections (no summary.json,
                // which marks a finished run)
                if let Some(f) = files.as_mut() {
                    f.flush()?;
                }
                return Err(e.into());
            }
        };
        totals.record(&s, stepper);
        let step = stepper.step_count();
        if let Some(f) = files.as_mut() {
            if step.is_multiple_of(stats_every) {
                let reduction = stepper
                    .hooks_as::<ndem::reduce::Reducer>()
                    .map(|r| r.stats());
                f.stats_line(&output::stats_line(&s, reduction.as_ref()))?;
                f.joints_line(scene, stepper, &s)?;
            }
            if options.frame_every > 0 && step.is_multiple_of(options.frame_every) {
                f.frame(scene, stepper)?;
            }
            if options.checkpoint_every > 0 && step.is_multiple_of(options.checkpoint_every) {
                totals
                    .checkpoints
                    .push(f.checkpoint(scene, stepper, options.checkpoint_format)?);
            }
        }
        progress.step(&s);
    }
    progress.finish();
    if let Some(f) = files.as_mut() {
        if options.frame_every > 0 {
            // the final state, whatever the interval
            f.frame(scene, stepper)?;
        }
        f.flush()?;
    }
    let summary = totals.summary(
        scene,
        stepper,
        start.elapsed(),
        first_step,
        interrupted,
        &files,
    );
    if let Some(f) = &files {
        let json = serde_json::to_string_pretty(&summary).unwrap_or_default();
        output::write_atomic(&f.dir.join("summary.json"), json.as_bytes()).map_err(f.io())?;
    }
    Ok(summary)
}

impl Totals {
    fn record(&mut self, s: &ndem::step::StepStats, stepper: &mut Stepper) {
        self.steps += 1;
        self.contacts += s.contacts as u64;
        self.max_contacts = self.max_contacts.max(s.contacts);
        if let Some(status) = s.impact_status {
            self.impact_steps += 1;
            self.impact_unconverged_steps +=
                u64::from(status != ndem::solve::SolverStatus::Converged);
            self.impact_residual_max = self.impact_residual_max.max(s.impact_residual);
        }
        self.residual_tolerance = s.residual_tolerance;
        if s.contacts > 0 {
            *self.statuses.entry(s.status.name()).or_default() += 1;
            let residual = s.residuals.normal.mean;
            self.normal_residuals.push(residual);
            if residual > self.normal_residual_max.0 {
                self.normal_residual_max = (residual, s.step);
            }
        }
        self.unresolved_steps += u64::from(s.unresolved);
        if s.overlap_max > self.overlap_max.0 {
            self.overlap_max = (s.overlap_max, s.step);
        }
        let t = &s.times;
        for (acc, d) in self.stage.iter_mut().zip([
            t.detection,
            t.assembly,
            t.impact,
            t.continuous,
            t.reduction,
        ]) {
            *acc += d;
        }
        if let Some(r) = stepper.hooks_as::<ndem::reduce::Reducer>() {
            self.level += r.stats().level;
        }
    }

    fn summary(
        mut self,
        scene: &Scene,
        stepper: &mut Stepper,
        wall: Duration,
        first_step: u64,
        interrupted: bool,
        files: &Option<RunFiles>,
    ) -> RunSummary {
        let wall = wall.as_secs_f64();
        let per_step = |x: f64| {
            if self.steps > 0 {
                x / self.steps as f64
            } else {
                0.0
            }
        };
        let world = &scene.world;
        RunSummary {
            scene: scene.name.clone(),
            particles: (0..world.len())
                .filter(|&i| {
                    world.motions()[i] == ndem::step::Motion::Dynamic
                        && !matches!(world.shapes()[i], ndem::collide::Shape::Empty)
                })
                .count(),
            steps: self.steps,
            first_step,
            last_step: stepper.step_count(),
            time: stepper.time(),
            interrupted,
            mean_contacts: per_step(self.contacts as f64),
            max_contacts: self.max_contacts,
            solver: stepper.solver_mut().name().to_string(),
            warm_start: scene.warm_start.name().to_string(),
            iterations: stepper.solver_mut().max_iterations(),
            wall_time_s: wall,
            steps_per_second: self.steps as f64 / wall.max(1e-12),
            stage_times_s: StageSeconds {
                detection: self.stage[0].as_secs_f64(),
                assembly: self.stage[1].as_secs_f64(),
                impact: self.stage[2].as_secs_f64(),
                continuous: self.stage[3].as_secs_f64(),
                reduction: self.stage[4].as_secs_f64(),
            },
            frames: files.as_ref().map_or(0, |f| f.written_frames),
            checkpoints: self.checkpoints,
            mean_reduction_level: per_step(self.level),
            peak_rss_bytes: peak_rss_bytes(),
            impact_steps: self.impact_steps,
            impact_unconverged_steps: self.impact_unconverged_steps,
            statuses: self.statuses,
            unresolved_steps: self.unresolved_steps,
            fixed_budget: !stepper.solver_mut().stopping().early_stop,
            residual_tolerance: self.residual_tolerance,
            normal_residual_median: median(&mut self.normal_residuals),
            normal_residual_max: self.normal_residual_max,
            impact_residual_max: self.impact_residual_max,
            impact_iterations: stepper.settings().impact_iterations,
            impact_tolerance: stepper.impact_solver_mut().stopping().tolerance,
            overlap_max: self.overlap_max.0,
            overlap_max_step: self.overlap_max.1,
        }
    }
}

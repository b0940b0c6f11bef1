//! The `ndem` command: run built-in or file scenes, list and describe them,
//! resume from checkpoints.
//!
//! Exit codes: 0 done; 2 bad input or a failed run (one line on stderr
//! naming the field, or the step and time); 130 interrupted by Ctrl-C
//! (everything written, `summary.json` says `"interrupted": true`).

use clap::{Parser, Subcommand};
use ndem::checkpoint::{Checkpoint, CheckpointFormat};
use ndem::scenes::compatible::{ForceMethod, network_forces};
use ndem::scenes::{Scene, SceneFile, SolverChoice, WarmStartChoice, builders};
use ndem_cli::run::{FolderPolicy, ProgressStyle, RunOptions, run_scene};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "ndem",
    version,
    about = "Nonsmooth DEM (contact dynamics) for granular matter"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a built-in scene or a scene file (.toml). A built-in name wins
    /// over a file or folder of the same name: write `./name` for the file.
    Run {
        /// Built-in scene name, or path to a scene file.
        scene: String,
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        overrides: Overrides,
        /// Number of spheres of the built-in `packing` bed (a box about
        /// 16 layers deep) or emitted by the built-in `pile` (200 per
        /// second; the run lasts until 10 s after the last); other
        /// built-ins have no size to set.
        #[arg(long)]
        particles: Option<usize>,
        /// Run distributed on the ranks of `mpirun -np N ndem run … --mpi`
        /// (domain decomposition; needs the `mpi` feature).
        #[arg(long)]
        mpi: bool,
        /// With --mpi: the smooth (penalty) DEM instead of NDEM, at 0.1 of
        /// the critical time step.
        #[arg(long, requires = "mpi")]
        smooth: bool,
    },
    /// Continue a run from a checkpoint file: by default to the scene's end
    /// time, into a new folder beside the original run's.
    Resume {
        /// Checkpoint (.json or binary .ckpt) written by `ndem run
        /// --checkpoint-every`.
        checkpoint: PathBuf,
        #[command(flatten)]
        run: RunArgs,
        /// Threads for the resumed run (0: every core; default: the
        /// checkpoint's `run.threads`). Results do not depend on it.
        #[arg(long)]
        threads: Option<usize>,
        /// Continue the original run's files in its folder (statistics and
        /// frames after the checkpoint are replaced) instead of a new one.
        #[arg(long, conflicts_with = "out")]
        append: bool,
        /// Continue distributed on the ranks of `mpirun` (any number of
        /// them; needs the `mpi` feature).
        #[arg(long, conflicts_with = "append")]
        mpi: bool,
    },
    /// Contact forces of a packing at rest (a settled scene file or a
    /// checkpoint) under the run's contact law: PGS or APGD on one step at
    /// rest, or compatible contact dynamics on the static load; written as
    /// `forces.csv`.
    Forces {
        /// Built-in scene name, scene file, or checkpoint (.json or .ckpt).
        input: String,
        /// pgs, apgd or compatible.
        #[arg(long, value_parser = force_method, default_value = "compatible")]
        method: ForceMethod,
        /// Output folder (default: `target/ndem/<scene>-forces-<method>`).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// List the built-in scenes.
    List,
    /// Describe a scene; with --toml, print it as a scene file.
    Describe {
        /// Built-in scene name, or path to a scene file.
        scene: String,
        /// Print the whole scene file.
        #[arg(long)]
        toml: bool,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// Number of steps (default: to the scene's end time).
    #[arg(long, conflicts_with = "time")]
    steps: Option<u64>,
    /// Simulated time to run \[s\].
    #[arg(long, allow_negative_numbers = true)]
    time: Option<f64>,
    /// Output folder (default: `target/ndem/<scene>`). A folder holding
    /// another run is refused unless --overwrite is given.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the run already in the output folder.
    #[arg(long)]
    overwrite: bool,
    /// Write a VTK frame every N steps (0: none; default: the scene's
    /// `[output] frame_every`).
    #[arg(long)]
    frame_every: Option<u64>,
    /// A statistics line every N steps (default: the scene's `[output]
    /// stats_every`).
    #[arg(long)]
    stats_every: Option<u64>,
    /// Write a checkpoint every N steps (0: none).
    #[arg(long, default_value_t = 0)]
    checkpoint_every: u64,
    /// Checkpoint format: json (`checkpoint_N.json`) or binary
    /// (`checkpoint_N.ckpt`, for large scenes); `ndem resume` reads both.
    #[arg(long, default_value = "json", value_parser = checkpoint_format)]
    checkpoint_format: CheckpointFormat,
    /// With --mpi (NDEM): every particle's ghosts reach as far as the
    /// fastest particle's (`GhostReach::Uniform`, which the smooth DEM
    /// always uses) instead of as far as its own sweep.
    #[arg(long, requires = "mpi")]
    uniform_ghost_reach: bool,
    /// With --mpi (NDEM): the ranks sweep in phases, Gauss-Seidel-wise
    /// between ranks (`SubdomainSweep::Phased`), instead of all at once
    /// with the shared bodies' masses split.
    #[arg(long, requires = "mpi")]
    phased_sweeps: bool,
}

/// `--checkpoint-format`: a [`CheckpointFormat`] by its name.
fn checkpoint_format(name: &str) -> Result<CheckpointFormat, String> {
    CheckpointFormat::from_name(name)
        .ok_or_else(|| format!("unknown checkpoint format `{name}` (one of json, binary)"))
}

/// `--solver`: a [`SolverChoice`] by its name.
fn solver_choice(name: &str) -> Result<SolverChoice, String> {
    SolverChoice::parse(name).map_err(|e| format!("solver: {e}"))
}

/// `--warm-start`: a [`WarmStartChoice`] by its name.
fn warm_start_choice(name: &str) -> Result<WarmStartChoice, String> {
    WarmStartChoice::parse(name).map_err(|e| format!("warm start: {e}"))
}

/// `--method` of `ndem forces`.
fn force_method(name: &str) -> Result<ForceMethod, String> {
    ForceMethod::parse(name).map_err(|e| format!("method: {e}"))
}

/// `ndem forces`: the contact forces of a packing at rest.
fn forces(input: &str, method: ForceMethod, out: Option<PathBuf>) -> Result<(), Failure> {
    let scene = if input.ends_with(".json") || input.ends_with(".ckpt") {
        let cp = Checkpoint::read_file(Path::new(input))
            .map_err(|e| format!("cannot read checkpoint {input}: {e}"))?;
        cp.restore().map_err(|e| format!("{input}: {e}"))?.0
    } else {
        load(input)?
    };
    let name = ForceMethod::ALL
        .iter()
        .find(|(m, _)| *m == method)
        .map_or("", |(_, n)| *n);
    let (forces, residual) = network_forces(&scene, method).map_err(|e| e.to_string())?;
    let out = out.unwrap_or_else(|| {
        PathBuf::from("target/ndem").join(format!("{}-forces-{name}", scene.name))
    });
    let mut csv = String::from("body_a,body_b,normal_x,normal_y,normal_z,normal_force_N\n");
    for f in &forces {
        csv.push_str(&format!(
            "{},{},{:e},{:e},{:e},{:e}\n",
            f.body_a, f.body_b, f.normal.x, f.normal.y, f.normal.z, f.force
        ));
    }
    std::fs::create_dir_all(&out)
        .and_then(|()| ndem::output::write_atomic(&out.join("forces.csv"), csv.as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    let world = &scene.world;
    let weight: f64 = (0..world.len())
        .filter(|&i| world.motions()[i] == ndem::step::Motion::Dynamic)
        .map(|i| world.mass_properties()[i].map_or(0.0, |m| m.mass) * world.gravity.norm())
        .sum();
    let dynamic = |i: usize| world.motions()[i] == ndem::step::Motion::Dynamic;
    // vertical force the static bodies carry
    let carried: f64 = forces
        .iter()
        .map(|f| {
            let up = f.force * f.normal.z;
            match (dynamic(f.body_a), dynamic(f.body_b)) {
                (true, false) => up,
                (false, true) => -up,
                _ => 0.0,
            }
        })
        .sum();
    say(format_args!(
        "{}: {} contacts by {name}; the supports carry {carried:.6e} N of the weight {weight:.6e} N{}; written to {}\n",
        scene.name,
        forces.len(),
        residual.map_or(String::new(), |r| format!(
            " (truss equilibrium residual {r:.1e})"
        )),
        out.join("forces.csv").display()
    ))
}

/// A built-in scene by name, else a scene file. The rule: a built-in name
/// always means the built-in scene (a folder that a run created under a
/// scene's name never hides it); anything else is a path, and must be a
/// readable file (write `./column` for a file called `column`).
fn load(scene: &str) -> Result<Scene, String> {
    if builders::BUILTIN.iter().any(|(name, _)| *name == scene) {
        return builders::builtin(scene).map_err(|e| e.to_string());
    }
    let path = Path::new(scene);
    let looks_like_path = scene.ends_with(".toml") || scene.contains(std::path::MAIN_SEPARATOR);
    if !looks_like_path && !path.exists() {
        let names: Vec<&str> = builders::BUILTIN.iter().map(|(n, _)| *n).collect();
        return Err(format!(
            "unknown built-in scene `{scene}` (one of {}); a scene file is given by its path",
            names.join(", ")
        ));
    }
    if path.is_dir() {
        return Err(format!(
            "cannot read scene file {scene}: it is a folder, not a scene file"
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read scene file {scene}: {e}"))?;
    let file = SceneFile::from_toml(&text).map_err(|e| format!("{scene}: {e}"))?;
    file.to_scene().map_err(|e| format!("{scene}: {e}"))
}

/// Steps to take: `--steps`, `--time`, or to the scene's end time from the
/// current time `now`.
fn steps_for(scene: &Scene, run: &RunArgs, now: f64) -> Result<u64, String> {
    let dt = scene.settings.dt;
    match (run.steps, run.time) {
        (Some(n), _) => Ok(n),
        (None, Some(t)) if t.is_finite() && t > 0.0 && t < 0.5 * dt => Err(format!(
            "--time {t} s is shorter than half a step (Δt = {dt} s): no step would run; \
             give --time of at least {} s, or --steps",
            0.5 * dt
        )),
        (None, Some(t)) if t.is_finite() && t >= 0.0 => Ok((t / dt).round() as u64),
        (None, Some(t)) => Err(format!("--time must be finite and >= 0, got {t}")),
        (None, None) => match ((scene.duration - now) / dt).round() {
            n if n >= 1.0 => Ok(n as u64),
            _ => Err(format!(
                "nothing to run: t = {now} s is within half a step (Δt = {dt} s) of the \
                 scene's end time {} s; give --steps or --time to run past it",
                scene.duration
            )),
        },
    }
}

/// What `ndem` prints on standard output; a closed pipe (`ndem … | head`)
/// ends the command quietly.
fn say(text: std::fmt::Arguments<'_>) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_fmt(text)
        .and_then(|()| out.flush())
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::BrokenPipe => Failure::ClosedPipe,
            _ => Failure::Error(format!("cannot write to standard output: {e}")),
        })
}

/// How a command ends when it does not succeed.
enum Failure {
    /// Bad input or a failed run: one line, exit code 2.
    Error(String),
    /// Stopped by Ctrl-C after writing everything: exit code 130.
    Interrupted,
    /// Standard output was closed by its reader: exit quietly.
    ClosedPipe,
}

impl From<String> for Failure {
    fn from(e: String) -> Self {
        Failure::Error(e)
    }
}

fn describe(scene: &str, toml: bool) -> Result<(), Failure> {
    let s = load(scene)?;
    if toml {
        let text = SceneFile::from_scene(&s)
            .to_toml()
            .map_err(|e| e.to_string())?;
        return say(format_args!("{text}"));
    }
    say(format_args!(
        "{}: {} bodies ({} dynamic), {} materials, {} joints, {} emitters ({} particles to emit); dt = {} s, duration = {} s, solver {} x {}, warm start {}\n",
        s.name,
        s.world.len(),
        s.world.dynamic_count(),
        s.world.materials.len(),
        s.world.joints().len(),
        s.emitters.len(),
        s.emitters
            .iter()
            .map(|e| e.total - e.emitted)
            .sum::<usize>(),
        s.settings.dt,
        s.duration,
        s.solver.name(),
        s.iterations,
        s.warm_start.name()
    ))
}

/// The options of `ndem run` that replace the scene's own settings.
#[derive(clap::Args)]
struct Overrides {
    /// Solver for the continuous stage: pgs, pgs-blocked, pgs-direct,
    /// jacobi, apgd, pgs-coloured (PGS in the coloured contact order,
    /// swept on --threads threads with the same result on any number) or
    /// pgs-direct-coloured (pgs-direct's joint solve with those sweeps).
    #[arg(long, value_parser = solver_choice)]
    solver: Option<SolverChoice>,
    /// Threads for the parts of a step that can use several (contact
    /// detection, problem assembly, the pgs-coloured and
    /// pgs-direct-coloured sweeps of 12 288
    /// contacts or more); 0 for every core (the default of scene
    /// files). Results do not depend on it.
    #[arg(long)]
    threads: Option<usize>,
    /// Iterations per step (N_it).
    #[arg(long)]
    iterations: Option<usize>,
    /// PGS sweeps of the impact stage (default: the scene's
    /// `run.impact_iterations`, 20).
    #[arg(long = "impact-iterations")]
    impact_iterations: Option<usize>,
    /// Solve the impact stage on the contacts the impacts reach: an
    /// active set grown from the impacting contacts, joined by contacts
    /// violated by more than this velocity [m/s] (5e-3: 10 % of v_imp;
    /// default: the scene's `run.impact_join_velocity`, else the whole
    /// network, as the papers)
    #[arg(long = "impact-join-velocity")]
    impact_join_velocity: Option<f64>,
    /// Grow each body's reach in contact detection by what its partners'
    /// impulses can pass on within the step, so that a body struck within
    /// a step meets the contacts it is driven into in that step (default:
    /// the scene's `run.reach_growth`, else off; one process only)
    #[arg(long = "reach-growth")]
    reach_growth: bool,
    /// Warm-start policy: cold, history, model, model-raw or
    /// safeguarded-history.
    #[arg(long = "warm-start", value_parser = warm_start_choice)]
    warm_start: Option<WarmStartChoice>,
    /// Adaptive model reduction with the paper's thresholds (Table 2):
    /// the scene's `[reduce_preset]` (the built-in collapse: trial
    /// split; the excavator: a split sensor that moves with the bucket),
    /// else the contact split; a `[reduction]` table wins.
    #[arg(long)]
    reduce: bool,
}

impl Overrides {
    /// Sets what was given on `s`; `--reduce` switches on the scene's
    /// reduction and prints its caveat, if it has one. On MPI ranks
    /// (`distributed`) a preset whose trial solves part of the unfolded
    /// model solves all of it, with a warning
    /// (`Scene::switch_on_distributed_reduction`).
    fn apply(self, s: &mut Scene, distributed: bool) {
        if let Some(x) = self.solver {
            s.solver = x;
        }
        if let Some(n) = self.threads {
            s.threads = n;
        }
        if let Some(n) = self.iterations {
            s.iterations = n;
        }
        if let Some(n) = self.impact_iterations {
            s.settings.impact_iterations = n;
        }
        if let Some(join_velocity) = self.impact_join_velocity {
            s.settings.impact_scope = ndem::step::ImpactScope::ActiveSet { join_velocity };
        }
        if self.reach_growth {
            s.settings.reach_growth = true;
        }
        if let Some(x) = self.warm_start {
            s.warm_start = x;
        }
        if self.reduce {
            if !distributed {
                s.switch_on_reduction();
            } else if s.switch_on_distributed_reduction() {
                eprintln!(
                    "warning: --reduce on `{}` with --mpi: its preset runs as distributed runs can (the trial solve over the whole unfolded model, aggregates not merged with static geometry; the preset's own settings need one process)",
                    s.name
                );
            }
            if let Some(caveat) = &s.reduce_caveat {
                eprintln!("warning: --reduce on `{}`: {caveat}", s.name);
            }
        }
    }
}

fn execute(cli: Cli, stop: &Arc<AtomicBool>) -> Result<(), Failure> {
    match cli.command {
        Command::List => {
            for (name, about) in builders::BUILTIN {
                say(format_args!("{name:10} {about}\n"))?;
            }
            Ok(())
        }
        Command::Describe { scene, toml } => describe(&scene, toml),
        Command::Forces { input, method, out } => forces(&input, method, out),
        Command::Run {
            scene,
            run,
            overrides,
            particles,
            mpi,
            smooth,
        } => {
            let mut s = match particles {
                Some(n) => builders::builtin_sized(&scene, Some(n)).map_err(|e| e.to_string())?,
                None => load(&scene)?,
            };
            overrides.apply(&mut s, mpi);
            if mpi {
                let out = run.out.clone().unwrap_or_else(|| {
                    PathBuf::from("target/ndem").join(format!("{}-mpi", s.name))
                });
                return distributed(s, Default::default(), (0.0, 0), &run, out, smooth);
            }
            let mut stepper = s.stepper().map_err(|e| e.to_string())?;
            let out = run
                .out
                .clone()
                .unwrap_or_else(|| PathBuf::from("target/ndem").join(&s.name));
            let folder = if run.overwrite {
                FolderPolicy::Overwrite
            } else {
                FolderPolicy::New
            };
            go(&mut s, &mut stepper, &run, out, folder, stop)
        }
        Command::Resume {
            checkpoint,
            run,
            threads,
            append,
            mpi,
        } => {
            let mut cp = Checkpoint::read_file(&checkpoint)
                .map_err(|e| format!("cannot read checkpoint {}: {e}", checkpoint.display()))?;
            if let Some(n) = threads {
                cp.scene.run.threads = n;
            }
            let (mut s, mut stepper) = cp
                .restore()
                .map_err(|e| format!("{}: {e}", checkpoint.display()))?;
            // the scene and stepper hold all of it now: free its copy (the
            // bodies and stored impulses of a large run) before stepping
            let from_step = cp.step;
            drop(cp);
            if mpi {
                let empty = ndem::solve::ImpulseHistory::new();
                let h = stepper.history().unwrap_or(&empty);
                let global =
                    |k: ndem::math::ContactKey| (k.body_a as u64, k.body_b as u64, k.feature);
                let history = (
                    h.sorted_contacts()
                        .into_iter()
                        .map(|(k, v)| (global(k), v))
                        .collect(),
                    h.sorted_rows()
                        .into_iter()
                        .map(|(k, l)| (global(k), l))
                        .collect(),
                );
                let out = run.out.clone().unwrap_or_else(|| {
                    PathBuf::from("target/ndem")
                        .join(format!("{}-mpi-resumed-{:08}", s.name, from_step))
                });
                let clock = (stepper.time(), stepper.step_count());
                let aggregates = stepper
                    .hooks_as::<ndem::reduce::Reducer>()
                    .map(|r| r.state())
                    .unwrap_or_default();
                return distributed(s, (history, aggregates), clock, &run, out, false);
            }
            let run_dir = checkpoint
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf();
            let (out, folder) = if append {
                (run_dir, FolderPolicy::Append { from_step })
            } else {
                let out = run.out.clone().unwrap_or_else(|| {
                    let name = run_dir
                        .file_name()
                        .map_or_else(|| s.name.clone(), |n| n.to_string_lossy().into_owned());
                    run_dir.with_file_name(format!("{name}-resumed-{from_step:08}"))
                });
                let folder = if run.overwrite {
                    FolderPolicy::Overwrite
                } else {
                    FolderPolicy::New
                };
                (out, folder)
            };
            go(&mut s, &mut stepper, &run, out, folder, stop)
        }
    }
}

/// A resumed run's warm-start multipliers by global key: the contacts'
/// impulses and the joint rows'.
type WarmHistory = (
    Vec<((u64, u64, u32), ndem::solve::StoredImpulse)>,
    Vec<((u64, u64, u32), f64)>,
);

/// What a resumed run carries besides the scene: its warm-start
/// multipliers and its rigid aggregates (by index in the scene).
type Carried = (WarmHistory, ndem::reduce::ReducerState);

/// `--mpi`: the run on the ranks of `mpirun`.
#[cfg(feature = "mpi")]
fn distributed(
    scene: Scene,
    (history, aggregates): Carried,
    clock: (f64, u64),
    run: &RunArgs,
    out: PathBuf,
    smooth: bool,
) -> Result<(), Failure> {
    use ndem_cli::distributed::{DistributedOptions, Start, run_distributed};
    let steps = steps_for(&scene, run, clock.0)?;
    let opts = DistributedOptions {
        steps,
        out,
        overwrite: run.overwrite,
        frame_every: run.frame_every.unwrap_or(scene.output.frame_every as u64),
        stats_every: run.stats_every.unwrap_or(scene.output.stats_every as u64),
        checkpoint_every: run.checkpoint_every,
        checkpoint_format: run.checkpoint_format,
        smooth,
        uniform_ghost_reach: run.uniform_ghost_reach,
        phased_sweeps: run.phased_sweeps,
    };
    let message = run_distributed(
        Start {
            scene,
            history: history.0,
            rows: history.1,
            clock,
            aggregates,
        },
        &opts,
    )?;
    say(format_args!("{message}"))
}

/// `--mpi` without the `mpi` feature.
#[cfg(not(feature = "mpi"))]
fn distributed(
    _scene: Scene,
    _carried: Carried,
    _clock: (f64, u64),
    _run: &RunArgs,
    _out: PathBuf,
    _smooth: bool,
) -> Result<(), Failure> {
    Err(Failure::Error(
        "--mpi: this ndem was built without MPI; build it with `cargo build --release -p ndem-cli --features mpi` (needs `apt-get install libopenmpi-dev openmpi-bin clang libclang-dev`) and run it under `mpirun`".into(),
    ))
}

fn go(
    s: &mut Scene,
    stepper: &mut ndem::step::Stepper,
    run: &RunArgs,
    out: PathBuf,
    folder: FolderPolicy,
    stop: &Arc<AtomicBool>,
) -> Result<(), Failure> {
    let steps = steps_for(s, run, stepper.time())?;
    let stats_every = run.stats_every.unwrap_or(s.output.stats_every as u64);
    if stats_every == 0 {
        return Err(Failure::Error("--stats-every must be at least 1".into()));
    }
    tracing::info!(scene = %s.name, steps, out = %out.display(), "run");

    let summary = run_scene(
        s,
        stepper,
        &RunOptions {
            steps,
            out: Some(out.clone()),
            frame_every: run.frame_every.unwrap_or(s.output.frame_every as u64),
            stats_every,
            checkpoint_every: run.checkpoint_every,
            checkpoint_format: run.checkpoint_format,
            progress: if std::io::stderr().is_terminal() {
                ProgressStyle::Bar
            } else {
                ProgressStyle::Lines {
                    every: Duration::from_secs(10),
                }
            },
            folder,
            stop: Some(Arc::clone(stop)),
        },
    )
    .map_err(|e| e.to_string())?;
    say(format_args!(
        "{}: {} steps to t = {:.3} s{}, {} particles, {:.0} contacts on average, {:.1} s wall time ({:.1} steps/s); output in {}\n",
        summary.scene,
        summary.steps,
        summary.time,
        if summary.interrupted {
            " (interrupted)"
        } else {
            ""
        },
        summary.particles,
        summary.mean_contacts,
        summary.wall_time_s,
        summary.steps_per_second,
        out.display()
    ))?;
    say(format_args!("{}", solve_summary(&summary)))?;
    let threads = ndem::par::blocks::resolve_threads(s.threads);
    if threads > 1 && !s.solver.solves_on_threads() {
        say(format_args!(
            "note: contact detection and assembly ran on up to {threads} threads (one per part of the work: fewer on a small scene); the `{}` solver swept on one (`--solver {}` sweeps on all of them, in another contact order)\n",
            s.solver.name(),
            if s.solver.solves_joints_directly() {
                SolverChoice::PgsDirectColoured.name()
            } else {
                SolverChoice::PgsColoured.name()
            }
        ))?;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads > cores {
        say(format_args!(
            "note: {threads} threads on {cores} cores: the threads took turns on the cores (the same result, but slower: each parallel pass waits for all of its threads)\n"
        ))?;
    }
    let split_from = ndem::solve::PgsSettings::default().parallel_min_contacts;
    if threads > 1
        && matches!(
            s.solver,
            SolverChoice::PgsColoured | SolverChoice::PgsDirectColoured
        )
        && summary.steps > 0
        && summary.max_contacts < split_from
    {
        say(format_args!(
            "note: the {} sweeps ran on one thread: no step had {split_from} contacts (at most {}; smaller problems are swept on one, `PgsSettings::parallel_min_contacts`); detection and assembly used {threads}\n",
            s.solver.name(),
            summary.max_contacts
        ))?;
    }
    if summary.interrupted {
        return Err(Failure::Interrupted);
    }
    Ok(())
}

/// What the run's solves reached, in words: at a fixed iteration budget
/// (the papers' setting) the budget, the residual reached against the
/// tolerance and the unresolved steps; with a tolerance, the solves that
/// missed it. Then the largest overlap and the impact stage.
fn solve_summary(summary: &ndem_cli::run::RunSummary) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let solves: u64 = summary.statuses.values().sum();
    let count = |name: &str| summary.statuses.get(name).copied().unwrap_or(0);
    let unresolved = format!(
        "{} of {solves} steps unresolved (their residual leaves overlaps off the contact law; `unresolved` in stats.csv)",
        summary.unresolved_steps
    );
    if summary.fixed_budget && solves > 0 {
        let _ = writeln!(
            text,
            "continuous stage: {} iterations per step, a fixed budget (the papers' setting), not a tolerance; mean normal residual per step: median {:.1e} m/s, largest {:.1e} m/s (step {}), against {:.1e} m/s for a resolved step; {unresolved}",
            summary.iterations,
            summary.normal_residual_median,
            summary.normal_residual_max.0,
            summary.normal_residual_max.1,
            summary.residual_tolerance,
        );
        let grew = count("diverged");
        if grew > 0 {
            let _ = writeln!(
                text,
                "  {grew} of those solves ended with a larger residual of some row kind than they started with (`diverged` in the `status` column)"
            );
        }
    } else {
        let unconverged = solves - count("converged");
        if unconverged > 0 || summary.unresolved_steps > 0 {
            let counts: Vec<String> = summary
                .statuses
                .iter()
                .map(|(name, n)| format!("{n} {name}"))
                .collect();
            let _ = writeln!(
                text,
                "continuous stage: {unconverged} of {solves} solves did not reach their tolerance ({}); {unresolved}",
                counts.join(", ")
            );
        }
    }
    if summary.overlap_max > 0.0 {
        let _ = writeln!(
            text,
            "largest overlap: {:.3} of its contact's radius at step {} (a step stops above 1; `overlap_max` in stats.csv)",
            summary.overlap_max, summary.overlap_max_step
        );
    }
    if summary.impact_steps > 0 {
        let outcome = if summary.impact_unconverged_steps == 0 {
            "every one reached it".to_string()
        } else {
            format!(
                "{} ended short of it, with normal residuals up to {:.1e} m/s",
                summary.impact_unconverged_steps, summary.impact_residual_max
            )
        };
        let _ = writeln!(
            text,
            "impact stage: {} steps had impacts, each solved to a tolerance of {:.0e} m/s in at most {} sweeps; {outcome} (`impact_status`, `impact_residual` in stats.csv)",
            summary.impact_steps, summary.impact_tolerance, summary.impact_iterations,
        );
    }
    text
}

fn main() -> ExitCode {
    // before any large block and any other thread (src/allocator.rs)
    let _ = ndem_cli::allocator::fix_mmap_threshold();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    // Ctrl-C: finish the current step, write everything, exit 130; a
    // second Ctrl-C exits at once
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("ndem: stopping after this step (Ctrl-C again to quit at once)");
    });
    match execute(cli, &stop) {
        Ok(()) | Err(Failure::ClosedPipe) => ExitCode::SUCCESS,
        Err(Failure::Interrupted) => ExitCode::from(130),
        Err(Failure::Error(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

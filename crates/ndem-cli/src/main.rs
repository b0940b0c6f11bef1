//! The `ndem` command: run built-in or file scenes, list and describe them,
//! resume from checkpoints.

use clap::{Parser, Subcommand};
use ndem::checkpoint::Checkpoint;
use ndem::scenes::{Scene, SceneFile, SolverChoice, WarmStartChoice, builders};
use ndem_cli::run::{RunOptions, run_scene};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

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
    /// Run a built-in scene or a scene file (.toml).
    Run {
        /// Built-in scene name or path to a scene file.
        scene: String,
        #[command(flatten)]
        run: RunArgs,
        /// Solver for the continuous stage: pgs, pgs-blocked, pgs-direct,
        /// jacobi or apgd.
        #[arg(long, value_parser = solver_choice)]
        solver: Option<SolverChoice>,
        /// Iterations per step (N_it).
        #[arg(long)]
        iterations: Option<usize>,
        /// Warm-start policy: cold, history, model, model-raw or
        /// safeguarded-history.
        #[arg(long = "warm-start", value_parser = warm_start_choice)]
        warm_start: Option<WarmStartChoice>,
        /// Adaptive model reduction with the paper's thresholds (Table 2,
        /// contact split), unless the scene file has a `[reduction]` table.
        #[arg(long)]
        reduce: bool,
    },
    /// Continue a run from a checkpoint file.
    Resume {
        /// Checkpoint (.json) written by `ndem run --checkpoint-every`.
        checkpoint: PathBuf,
        #[command(flatten)]
        run: RunArgs,
    },
    /// List the built-in scenes.
    List,
    /// Describe a scene; with --toml, print it as a scene file.
    Describe {
        /// Built-in scene name or path to a scene file.
        scene: String,
        /// Print the whole scene file.
        #[arg(long)]
        toml: bool,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// Number of steps (default: the scene's duration).
    #[arg(long, conflicts_with = "time")]
    steps: Option<u64>,
    /// Simulated time to run \[s\].
    #[arg(long)]
    time: Option<f64>,
    /// Output folder (default: `target/ndem/<scene>`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write a VTK frame every N steps (0: none).
    #[arg(long, default_value_t = 100)]
    frame_every: u64,
    /// Write a checkpoint every N steps (0: none).
    #[arg(long, default_value_t = 0)]
    checkpoint_every: u64,
}

/// `--solver`: a [`SolverChoice`] by its name.
fn solver_choice(name: &str) -> Result<SolverChoice, String> {
    SolverChoice::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = SolverChoice::ALL.iter().map(|c| c.name()).collect();
        format!("unknown solver `{name}` (one of {})", names.join(", "))
    })
}

/// `--warm-start`: a [`WarmStartChoice`] by its name.
fn warm_start_choice(name: &str) -> Result<WarmStartChoice, String> {
    WarmStartChoice::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = WarmStartChoice::ALL.iter().map(|c| c.name()).collect();
        format!("unknown warm start `{name}` (one of {})", names.join(", "))
    })
}

fn load(scene: &str) -> Result<Scene, String> {
    if scene.ends_with(".toml") || std::path::Path::new(scene).exists() {
        let text = std::fs::read_to_string(scene)
            .map_err(|e| format!("cannot read scene file {scene}: {e}"))?;
        let file = SceneFile::from_toml(&text).map_err(|e| format!("{scene}: {e}"))?;
        file.to_scene().map_err(|e| format!("{scene}: {e}"))
    } else {
        builders::builtin(scene).map_err(|e| e.to_string())
    }
}

fn steps_for(scene: &Scene, run: &RunArgs) -> Result<u64, String> {
    let dt = scene.settings.dt;
    match (run.steps, run.time) {
        (Some(n), _) => Ok(n),
        (None, Some(t)) if t.is_finite() && t >= 0.0 => Ok((t / dt).round() as u64),
        (None, Some(t)) => Err(format!("--time must be finite and >= 0, got {t}")),
        (None, None) => Ok((scene.duration / dt).round() as u64),
    }
}

fn execute(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::List => {
            for (name, about) in builders::BUILTIN {
                println!("{name:10} {about}");
            }
            Ok(())
        }
        Command::Describe { scene, toml } => {
            let s = load(&scene)?;
            if toml {
                print!(
                    "{}",
                    SceneFile::from_scene(&s)
                        .to_toml()
                        .map_err(|e| e.to_string())?
                );
            } else {
                println!(
                    "{}: {} bodies ({} dynamic), {} materials, {} joints, {} emitters ({} particles to emit); dt = {} s, duration = {} s, solver {} x {}, warm start {}",
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
                );
            }
            Ok(())
        }
        Command::Run {
            scene,
            run,
            solver,
            iterations,
            warm_start,
            reduce,
        } => {
            let mut s = load(&scene)?;
            if let Some(x) = solver {
                s.solver = x;
            }
            if let Some(n) = iterations {
                s.iterations = n;
            }
            if let Some(x) = warm_start {
                s.warm_start = x;
            }
            if reduce && s.reduction.is_none() {
                s.reduction = Some(ndem::reduce::ReductionSettings::default());
            }
            let mut stepper = s.stepper().map_err(|e| e.to_string())?;
            go(&mut s, &mut stepper, &run)
        }
        Command::Resume { checkpoint, run } => {
            let text = std::fs::read_to_string(&checkpoint)
                .map_err(|e| format!("cannot read checkpoint {}: {e}", checkpoint.display()))?;
            let cp = Checkpoint::from_json(&text)
                .map_err(|e| format!("{}: {e}", checkpoint.display()))?;
            let (mut s, mut stepper) = cp.restore().map_err(|e| e.to_string())?;
            go(&mut s, &mut stepper, &run)
        }
    }
}

fn go(s: &mut Scene, stepper: &mut ndem::step::Stepper, run: &RunArgs) -> Result<(), String> {
    let steps = steps_for(s, run)?;
    let out = run
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("target/ndem").join(&s.name));
    tracing::info!(scene = %s.name, steps, out = %out.display(), "run");
    let summary = run_scene(
        s,
        stepper,
        &RunOptions {
            steps,
            out: Some(out.clone()),
            frame_every: run.frame_every,
            checkpoint_every: run.checkpoint_every,
            progress: std::io::stderr().is_terminal(),
        },
    )
    .map_err(|e| e.to_string())?;
    println!(
        "{}: {} steps to t = {:.3} s, {} particles, {:.0} contacts on average, {:.1} s wall time ({:.1} steps/s); output in {}",
        summary.scene,
        summary.steps,
        summary.time,
        summary.particles,
        summary.mean_contacts,
        summary.wall_time_s,
        summary.steps_per_second,
        out.display()
    );
    Ok(())
}

fn main() -> ExitCode {
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
    match execute(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

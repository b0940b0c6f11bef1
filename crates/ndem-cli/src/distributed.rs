//! `ndem run --mpi`: a scene run on the ranks of `mpirun` (feature `mpi`),
//! by the distributed NDEM step (or the smooth DEM with `--smooth`) of
//! `ndem-mpi`. Rank 0 writes the statistics, the summary, the `.pvtp`
//! frames' index and checkpoints (in the ordinary format: a run resumes on
//! any number of ranks, or on one without MPI); every rank writes its own
//! frame pieces.

use ndem::checkpoint::{Checkpoint, CheckpointFormat};
use ndem::scenes::{Scene, SolverChoice, WarmStartChoice};
use ndem::solve::{JointRows, PgsSettings, Stopping, StoredImpulse, SubdomainSweep};
use ndem_mpi::{
    Communicator, DistributedNdem, DistributedNdemSettings, DistributedSmooth, DomainSettings,
    ExchangeCounters, GhostReach, GlobalKey, MpiComm, MpiError, ParallelFrames,
};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What to run and where.
#[derive(Debug, Clone)]
pub struct DistributedOptions {
    /// Steps to take.
    pub steps: u64,
    /// Output folder.
    pub out: PathBuf,
    /// Replace a run already in `out`.
    pub overwrite: bool,
    /// A frame every N steps (0: none).
    pub frame_every: u64,
    /// A statistics line every N steps.
    pub stats_every: u64,
    /// A checkpoint every N steps (0: none; NDEM only).
    pub checkpoint_every: u64,
    /// The checkpoints' format.
    pub checkpoint_format: CheckpointFormat,
    /// The smooth DEM instead of NDEM (at 0.1 of the critical time step).
    pub smooth: bool,
    /// NDEM with [`GhostReach::Uniform`] instead of its default
    /// [`GhostReach::PerBody`] (the smooth DEM always uses the uniform
    /// reach).
    pub uniform_ghost_reach: bool,
    /// NDEM with [`SubdomainSweep::Phased`] instead of the default
    /// [`SubdomainSweep::MassSplit`].
    pub phased_sweeps: bool,
}

/// Where a run starts: a scene, and for a resumed run the warm-start
/// impulses (by index in the scene) and the clock.
#[derive(Debug, Clone)]
pub struct Start {
    /// The whole scene (every rank builds it).
    pub scene: Scene,
    /// Warm-start impulses by global key.
    pub history: Vec<(GlobalKey, StoredImpulse)>,
    /// Warm-start multipliers of the joints' rows by global key.
    pub rows: Vec<(GlobalKey, f64)>,
    /// `(time, step)`.
    pub clock: (f64, u64),
    /// The rigid aggregates by index in the scene (a resumed reduced run's;
    /// empty otherwise).
    pub aggregates: ndem::reduce::ReducerState,
}

/// The stepper a distributed run drives.
enum Run {
    Ndem(Box<DistributedNdem<MpiComm>>),
    Smooth(Box<DistributedSmooth<MpiComm>>),
}

/// One step's figures.
struct Line {
    time: f64,
    contacts: usize,
    kinetic_energy: f64,
    iterations: usize,
    status: &'static str,
    /// The impact solve's status (`skipped` without impacts; the smooth
    /// stepper has none).
    impact_status: &'static str,
    rebuilt: bool,
    /// The continuous solve's mean normal residual and largest residual
    /// over every row [m/s], and the impact solve's largest normal residual
    /// (zeros for the smooth DEM).
    residuals: [f64; 3],
    /// Model reduction's figures (zeros without reduction).
    reduction: ndem::reduce::ReductionStats,
}

impl Line {
    /// The header of `stats.csv`.
    const STATS_HEADER: &str = "step,time,contacts,kinetic_energy,iterations,status,rebuilt,impact_status,reduction_level,aggregates,merges,split_members,residual_normal_mean,residual_max,impact_residual\n";

    /// Appends the `stats.csv` line of step `step`.
    fn write_stats(&self, step: u64, stats: &mut String) {
        let _ = writeln!(
            stats,
            "{step},{:e},{},{:e},{},{},{},{},{:e},{},{},{},{:e},{:e},{:e}",
            self.time,
            self.contacts,
            self.kinetic_energy,
            self.iterations,
            self.status,
            self.rebuilt,
            self.impact_status,
            self.reduction.level,
            self.reduction.aggregates,
            self.reduction.merges,
            self.reduction.split_members,
            self.residuals[0],
            self.residuals[1],
            self.residuals[2]
        );
    }
}

impl Run {
    fn step(&mut self) -> Result<Line, MpiError> {
        Ok(match self {
            Run::Ndem(r) => {
                let s = r.step()?;
                let reduction = r.reduction_stats().unwrap_or_default();
                Line {
                    reduction,
                    time: s.local.time,
                    contacts: s.contacts,
                    kinetic_energy: s.kinetic_energy,
                    iterations: s.local.iterations,
                    status: s.local.status.name(),
                    impact_status: s.local.impact_status.map_or("skipped", |x| x.name()),
                    rebuilt: s.rebuilt,
                    residuals: [
                        s.local.residuals.normal.mean,
                        s.local.residuals.max,
                        s.local.impact_residual,
                    ],
                }
            }
            Run::Smooth(r) => {
                let s = r.step()?;
                Line {
                    time: s.time,
                    contacts: s.contacts,
                    kinetic_energy: s.kinetic_energy,
                    iterations: 0,
                    status: "explicit",
                    impact_status: "skipped",
                    rebuilt: s.rebuilt,
                    residuals: [0.0; 3],
                    reduction: ndem::reduce::ReductionStats::default(),
                }
            }
        })
    }

    fn domain(&self) -> &ndem_mpi::Domain<MpiComm> {
        match self {
            Run::Ndem(r) => r.domain(),
            Run::Smooth(r) => r.domain(),
        }
    }

    fn counters(&self) -> ExchangeCounters {
        match self {
            Run::Ndem(r) => r.exchange_counters(),
            Run::Smooth(r) => r.exchange_counters(),
        }
    }
}

/// Refuses what the decomposition does not support, naming it.
fn check(scene: &Scene, opts: &DistributedOptions) -> Result<(), String> {
    if opts.smooth && !scene.emitters.is_empty() {
        return Err(
            "emitters (`[[emitters]]`) run distributed with NDEM only, not with --smooth".into(),
        );
    }
    if opts.smooth && scene.reduction.is_some() {
        return Err(
            "model reduction (`[reduction]`, --reduce) runs distributed with NDEM only, not with --smooth"
                .into(),
        );
    }
    if scene.settings.impact_scope != ndem::step::ImpactScope::WholeNetwork {
        return Err(
            "the active-set impact stage (`run.impact_join_velocity`, --impact-join-velocity) is not supported in distributed runs"
                .into(),
        );
    }
    if scene.settings.reach_growth {
        return Err(
            "reach growth (`run.reach_growth`, --reach-growth) is not supported in distributed runs: a rank's ghosts have partners on other ranks"
                .into(),
        );
    }
    if opts.smooth && !scene.motions.is_empty() {
        return Err(
            "prescribed motions (`[[motions]]`) run distributed with NDEM only, not with --smooth"
                .into(),
        );
    }
    if opts.smooth && opts.checkpoint_every > 0 {
        return Err(
            "--checkpoint-every: checkpoints of distributed runs are written for NDEM only".into(),
        );
    }
    if opts.stats_every == 0 {
        return Err("--stats-every must be at least 1".into());
    }
    Ok(())
}

fn build(start: &Start, opts: &DistributedOptions) -> Result<Run, MpiError> {
    let scene = &start.scene;
    if opts.smooth {
        let critical = ndem::smooth::stepper::critical_time_step(
            &scene.world,
            &ndem::smooth::SmoothLaw::Hertz,
        );
        let settings = ndem::smooth::SmoothSettings {
            dt: 0.1 * critical,
            ..ndem::smooth::SmoothSettings::default()
        };
        let run =
            DistributedSmooth::new(MpiComm, &scene.world, settings, DomainSettings::default())?;
        return Ok(Run::Smooth(Box::new(run)));
    }
    let settings = DistributedNdemSettings {
        step: scene.settings,
        pgs: PgsSettings {
            stopping: Stopping::iterations(scene.iterations.max(1)),
            joints: if scene.solver.solves_joints_directly() {
                JointRows::Direct
            } else {
                JointRows::Iterative
            },
            ..PgsSettings::default()
        },
        warm_start: scene.warm_start != WarmStartChoice::Cold,
        domain: DomainSettings {
            ghost_reach: if opts.uniform_ghost_reach {
                GhostReach::Uniform
            } else {
                GhostReach::PerBody
            },
            ..DomainSettings::default()
        },
        subdomain_sweep: if opts.phased_sweeps {
            SubdomainSweep::Phased
        } else {
            SubdomainSweep::MassSplit
        },
    };
    let mut run = DistributedNdem::new(MpiComm, &scene.world, settings)?;
    let _kept = run.set_history(&start.history);
    run.set_joint_row_history(&start.rows);
    run.set_clock(start.clock.0, start.clock.1);
    if let Some(reduction) = &scene.reduction {
        run.set_reduction(reduction.clone(), start.aggregates.clone())?;
    }
    Ok(Run::Ndem(Box::new(run)))
}

/// Runs `start` on the MPI ranks. Every rank calls it; rank 0 returns the
/// line to print, the others an empty one.
pub fn run_distributed(start: Start, opts: &DistributedOptions) -> Result<String, String> {
    let Some(_universe) = mpi::initialize() else {
        return Err("MPI was already initialised".into());
    };
    check(&start.scene, opts)?;
    let comm = MpiComm;
    let (rank, ranks) = (comm.rank(), comm.size());
    let prepared = if rank == 0 {
        prepare(&opts.out, opts.overwrite)
    } else {
        Ok(())
    };
    let failed = comm.max(&[if prepared.is_err() { 1.0 } else { 0.0 }])[0] > 0.0;
    prepared?;
    if failed {
        return Err("rank 0 could not prepare the output folder".into());
    }
    let mut run = build(&start, opts).map_err(|e| e.to_string())?;
    let subdomain_pgs = [
        SolverChoice::Pgs,
        SolverChoice::PgsDirect,
        SolverChoice::PgsDirectColoured,
    ];
    if rank == 0 && !opts.smooth && !subdomain_pgs.contains(&start.scene.solver) {
        eprintln!(
            "note: distributed runs solve with pgs-subdomain; the scene's solver `{}` is not used",
            start.scene.solver.name()
        );
    }
    let mut stats = String::from(Line::STATS_HEADER);
    let mut drives = format!(
        "{}\n",
        ndem::output::joints_header(start.scene.world.joints().len())
    );
    let mut frames = ParallelFrames::new();
    let mut emitters = start.scene.emitters.clone();
    let mut triaxial = start.scene.triaxial;
    let wall = Instant::now();
    let (mut iterations, mut last) = (0u64, None);
    let first_step = start.clock.1;
    for k in 1..=opts.steps {
        if let Run::Ndem(r) = &mut run {
            r.emit(&mut emitters).map_err(|e| e.to_string())?;
            if let Some(s) = &start.scene.schedule {
                r.apply_schedule(s).map_err(|e| e.to_string())?;
            }
            if let Some(c) = &mut triaxial {
                r.apply_triaxial(c).map_err(|e| e.to_string())?;
            }
            r.apply_motions(&start.scene.motions)
                .map_err(|e| e.to_string())?;
        }
        let line = run.step().map_err(|e| e.to_string())?;
        let step = first_step + k;
        if let Run::Ndem(r) = &run
            && rank == 0
            && (k % opts.stats_every == 0 || k == opts.steps)
        {
            let phase = start
                .scene
                .schedule
                .as_ref()
                .map_or("", |p| p.phase_at(line.time));
            let forces = r.joint_reactions().into_iter().map(|j| j.drive_force);
            drives.push_str(&ndem::output::joints_line(step, line.time, phase, forces));
            drives.push('\n');
        }
        iterations += line.iterations as u64;
        if rank == 0 && (k % opts.stats_every == 0 || k == opts.steps) {
            line.write_stats(step, &mut stats);
        }
        if opts.frame_every > 0 && k % opts.frame_every == 0 {
            frames
                .write(run.domain(), &opts.out, line.time, step)
                .map_err(|e| e.to_string())?;
        }
        if opts.checkpoint_every > 0 && k % opts.checkpoint_every == 0 {
            let state = (emitters.as_slice(), triaxial);
            checkpoint(&mut run, &start.scene, state, opts, step)?;
        }
        last = Some(line);
    }
    let seconds = wall.elapsed().as_secs_f64();
    frames
        .write_collection(&opts.out, rank)
        .map_err(|e| e.to_string())?;
    let summary = summary(&run, &start.scene, opts, seconds, iterations, last.as_ref());
    if rank == 0 {
        write(&opts.out.join("stats.csv"), &stats)?;
        write(&opts.out.join("summary.json"), &summary)?;
        if !start.scene.world.joints().is_empty() && !opts.smooth {
            write(&opts.out.join("joints.csv"), &drives)?;
        }
    }
    if rank != 0 {
        return Ok(String::new());
    }
    Ok(format!(
        "{}: {} steps on {ranks} ranks, {seconds:.2} s wall time; output in {}\n",
        start.scene.name,
        opts.steps,
        opts.out.display()
    ))
}

/// The summary (collective: maxima and sums over ranks).
fn summary(
    run: &Run,
    scene: &Scene,
    opts: &DistributedOptions,
    seconds: f64,
    iterations: u64,
    last: Option<&Line>,
) -> String {
    let comm = run.domain().comm();
    let c = run.counters();
    let rss = crate::run::peak_rss_bytes().unwrap_or(0) as f64;
    let domain = run.domain();
    let ghosts: usize = domain.ghosts_received().iter().map(Vec::len).sum();
    let owned = domain.owned_count() as f64;
    let max = comm.max(&[seconds, c.seconds, rss, owned]);
    let sums = comm.sum(&[
        c.values_sent as f64,
        c.exchanges as f64,
        c.seconds,
        rss,
        ghosts as f64,
    ]);
    let ranks = comm.size();
    let steps = opts.steps.max(1) as f64;
    let json = serde_json::json!({
        "scene": scene.name,
        "stepper": if opts.smooth { "smooth" } else { "ndem" },
        "solver": if opts.smooth { "explicit" } else { "pgs-subdomain" },
        "ranks": ranks,
        "steps": opts.steps,
        "particles": domain.dynamic_len(),
        "wall_time_s": max[0],
        "seconds_per_step": max[0] / steps,
        "exchange_seconds_max": max[1],
        "exchange_fraction": if max[0] > 0.0 { sums[2] / ranks as f64 / max[0] } else { 0.0 },
        "values_sent_per_step": sums[0] / steps,
        "bytes_sent_per_step": 8.0 * sums[0] / steps,
        "exchanges_per_step_per_rank": sums[1] / ranks as f64 / steps,
        "mean_iterations": iterations as f64 / steps,
        "layout_rebuilds": run.domain().rebuilds(),
        "layouts_kept": run.domain().layouts_kept(),
        "contacts": last.map_or(0, |l| l.contacts),
        "kinetic_energy": last.map_or(0.0, |l| l.kinetic_energy),
        "reduction_level": last.map_or(0.0, |l| l.reduction.level),
        "aggregates": last.map_or(0, |l| l.reduction.aggregates),
        "peak_rss_bytes_max": max[2],
        "owned_per_rank_max": max[3],
        "ghosts_per_rank_mean": sums[4] / ranks as f64,
        "peak_rss_bytes_total": sums[3],
    });
    serde_json::to_string_pretty(&json).unwrap_or_default()
}

/// A checkpoint of the whole scene, gathered on rank 0 (collective).
fn checkpoint(
    run: &mut Run,
    scene: &Scene,
    (emitters, triaxial): (
        &[ndem::scenes::Emitter],
        Option<ndem::scenes::TriaxialControl>,
    ),
    opts: &DistributedOptions,
    step: u64,
) -> Result<(), String> {
    let Run::Ndem(r) = run else {
        return Ok(());
    };
    let world = r.gather().map_err(|e| e.to_string())?;
    let history = r.gather_history();
    let aggregates = r.reducer_state();
    let (Some(world), Some(history)) = (world, history) else {
        return Ok(());
    };
    let mut whole = scene.clone();
    whole.world = world;
    whole.emitters = emitters.to_vec();
    whole.triaxial = triaxial;
    let mut stepper = whole.stepper().map_err(|e| e.to_string())?;
    if let (Some(settings), Some(state)) = (&whole.reduction, aggregates) {
        let reducer = ndem::reduce::Reducer::restore(settings.clone(), state, &whole.world)
            .map_err(|e| format!("checkpoint at step {step}: {e}"))?;
        stepper.set_hooks(Box::new(reducer));
    }
    let mut h = ndem::solve::ImpulseHistory::new();
    for ((a, b, f), v) in history {
        h.insert(ndem::math::ContactKey::new(a as u32, b as u32, f), v);
    }
    for ((a, b, f), l) in r.joint_row_history() {
        h.insert_row(ndem::math::ContactKey::new(a as u32, b as u32, f), l);
    }
    let _kept = stepper.set_history(h);
    stepper.set_clock(r.stepper().time(), r.stepper().step_count());
    let format = opts.checkpoint_format;
    let path = opts
        .out
        .join(format!("checkpoint_{step:08}.{}", format.extension()));
    Checkpoint::write_scene(&whole, &mut stepper, &path, format)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn prepare(dir: &Path, overwrite: bool) -> Result<(), String> {
    if dir.join("summary.json").exists() && !overwrite {
        return Err(format!(
            "{} holds another run; give --overwrite to replace it",
            dir.display()
        ));
    }
    if overwrite && dir.join("frames").exists() {
        std::fs::remove_dir_all(dir.join("frames"))
            .map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    ndem::output::write_atomic(path, text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

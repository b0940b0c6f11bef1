//! `cargo xtask scaling [--quick] [--particles N] [--repeats R]
//! [threads=1,2,...] [checkpoint=FILE]`: what the coloured PGS sweep's work
//! schedule allows on T threads, against what the listed thread counts
//! measure on this host.
//!
//! A resting bed (the peers' bed: `--particles`, default 10⁵, `--quick`
//! 10⁴; settled as `cargo xtask peers ndem` settles it; or, with
//! `checkpoint=FILE`, the bed of an `ndem run` checkpoint) is stepped once
//! to get its continuous problem, whose blocks and colours give the
//! schedule bound ([`ndem_solve::schedule`]) for T = 1 … 64: one sweep with
//! a barrier after it, and the run of 25 sweeps without barriers that the
//! step makes. The step is measured on each listed thread count (coloured
//! PGS, interleaved, `--repeats` rounds, minima per stage; default one and
//! two threads); the serial fraction of each pass is what Amdahl's law
//! makes of its one-thread and T-thread times. The full size adds a
//! lattice packing of 10⁶ spheres (the test kit's `sphere_packing`): its
//! schedule bound and its 25-sweep solve on the listed thread counts.

use crate::SuiteOptions;
use crate::peers_ndem::{self, Config, SWEEPS, StepTimes};
use crate::plot::{Axes, Series, line_plot};
use crate::report::{self, Progress, SuiteResult};
use ndem::checkpoint::Checkpoint;
use ndem::par::blocks::MAX_THREADS;
use ndem_scenes::SolverChoice;
use ndem_scenes::builders::Scene;
use ndem_solve::schedule::SweepSchedule;
use ndem_solve::{
    ContactProblem, ImpulseHistory, PgsSettings, ProjectedGaussSeidel, Solver, Stopping,
};
use ndem_step::World;
use ndem_testkit::generate::{PackingSpec, sphere_packing};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Thread counts the bound is given for.
const THREADS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Block counts the bound is given for: the default, two between and the
/// most a run may ask for (`PgsSettings::colour_blocks`).
const BLOCKS: [usize; 4] = [32, 64, 128, 256];

/// Block counts beyond what the sweep allows (its block sets hold 256
/// blocks): the schedule the same rules give with wider sets
/// ([`SweepSchedule::with_block_count`]).
const WIDER: [usize; 1] = [512];

/// What `scaling` reads after its name: `threads=LIST` (the thread
/// counts the step is measured on, increasing, the first 1; default 1,2)
/// and `checkpoint=FILE` (a bed from `ndem run --checkpoint-every`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Words {
    pub(crate) threads: Vec<usize>,
    pub(crate) checkpoint: Option<PathBuf>,
}

impl Words {
    /// The words, or an error naming the one that is wrong.
    pub(crate) fn parse(words: &[String]) -> Result<Self, String> {
        let mut parsed = Words {
            threads: vec![1, 2],
            checkpoint: None,
        };
        for w in words {
            if let Some(list) = w.strip_prefix("threads=") {
                parsed.threads = thread_list(list).ok_or_else(|| {
                    format!(
                        "`{w}`: `threads=` takes increasing counts from 1 (`threads=1,2,4,8,16`)"
                    )
                })?;
            } else if let Some(path) = w.strip_prefix("checkpoint=").filter(|p| !p.is_empty()) {
                parsed.checkpoint = Some(PathBuf::from(path));
            } else {
                return Err(format!(
                    "`scaling` takes `threads=1,2,...` and `checkpoint=FILE`, not `{w}`"
                ));
            }
        }
        Ok(parsed)
    }
}

/// Comma-separated counts, strictly increasing from 1, each at most
/// [`MAX_THREADS`] (what the passes' thread checks allow).
fn thread_list(list: &str) -> Option<Vec<usize>> {
    let counts: Vec<usize> = list
        .split(',')
        .map(|t| t.parse().ok().filter(|&t| (1..=MAX_THREADS).contains(&t)))
        .collect::<Option<_>>()?;
    let increasing = counts.windows(2).all(|w| w[0] < w[1]);
    (counts.first() == Some(&1) && increasing).then_some(counts)
}

/// The coloured step on `threads` threads.
fn coloured(threads: usize) -> Config {
    Config {
        solver: SolverChoice::PgsColoured,
        threads,
    }
}

/// One problem's schedule: blocks, colours and the bounds.
struct Bounds {
    bed: String,
    contacts: usize,
    rows: Vec<Value>,
}

/// The schedule bounds of `problem` for every block count and thread
/// count: the sweep's own schedule ([`BLOCKS`]), checked against the one
/// its rules rebuild, and the rules' schedule with more blocks
/// ([`WIDER`]).
fn bounds(bed: &str, problem: &ContactProblem) -> SuiteResult<Bounds> {
    let mut rows = Vec::new();
    let own = BLOCKS.map(|b| (b, SweepSchedule::new(problem, b), "sweep"));
    for (_, schedule, _) in &own {
        if SweepSchedule::with_block_count(problem, schedule.blocks()) != *schedule {
            return Err(format!(
                "{bed}: the rules' schedule with {} blocks is not the sweep's own",
                schedule.blocks()
            ));
        }
    }
    let wider = WIDER.map(|b| {
        let s = SweepSchedule::with_block_count(problem, b);
        (b, s, "wider sets (not built)")
    });
    for (blocks, schedule, kind) in own.iter().chain(&wider) {
        let sizes = schedule.block_contacts();
        for threads in THREADS {
            let b = schedule.bound(threads, SWEEPS);
            rows.push(json!({
                "bed": bed,
                "schedule": kind,
                "colour_blocks": blocks,
                "blocks": schedule.blocks(),
                "colours": schedule.colours(),
                "largest_block": sizes.iter().max(),
                "threads": threads,
                "bound_one_sweep": b.sweep,
                "bound_run_of_25": b.run,
            }));
        }
    }
    Ok(Bounds {
        bed: bed.to_string(),
        contacts: problem.contacts().len(),
        rows,
    })
}

/// The continuous problem of one step of the settled bed (coloured PGS,
/// one thread).
fn step_problem(scene: &Scene, history: &ImpulseHistory) -> SuiteResult<ContactProblem> {
    let mut s = scene.clone();
    s.solver = SolverChoice::PgsColoured;
    s.iterations = SWEEPS;
    s.threads = 1;
    let mut stepper = s.stepper().map_err(|e| e.to_string())?;
    if !stepper.set_history(history.clone()) {
        return Err("the bed's warm start keeps no history".into());
    }
    s.step(&mut stepper).map_err(|e| e.to_string())?;
    let (problem, _) = stepper.last_problem().ok_or("the step kept no problem")?;
    Ok(problem.clone())
}

/// The step of the bed on each of `threads`, interleaved, `repeats`
/// rounds of `steps` steps: the fastest round per thread count, and
/// whether every count ended every round in the same world, bit for bit.
fn measure_step(
    (scene, history): (&Scene, &ImpulseHistory),
    threads: &[usize],
    (steps, repeats): (usize, usize),
    progress: &mut Progress,
) -> SuiteResult<(Vec<StepTimes>, bool)> {
    let mut best: Vec<Option<StepTimes>> = vec![None; threads.len()];
    let mut first: Option<World> = None;
    let mut agree = true;
    for r in 0..repeats {
        for (k, &t) in threads.iter().enumerate() {
            let config = coloured(t);
            let (times, world) = peers_ndem::measure(scene, history, config, steps)?;
            progress.note(&format!(
                "round {}: {} {:.1} ms per step",
                r + 1,
                config.label(),
                times.step() * 1e3
            ));
            match &first {
                None => first = Some(world),
                Some(w) => {
                    agree &=
                        w.positions() == world.positions() && w.velocities() == world.velocities();
                }
            }
            if best[k].is_none_or(|b| times.step() < b.step()) {
                best[k] = Some(times);
            }
        }
    }
    Ok((
        best.into_iter().map(Option::unwrap_or_default).collect(),
        agree,
    ))
}

/// One block count's 25-sweep solve of a problem ([`measure_solves`]).
#[derive(Debug, Clone)]
struct BlockSolve {
    colour_blocks: usize,
    /// Fastest solve on each listed thread count \[s\].
    seconds: Vec<f64>,
    /// Mean and largest row residual after the solve \[m/s\] (the same on
    /// any thread count).
    residual: [f64; 2],
}

/// 25 coloured sweeps of `problem` from a cold start with each of
/// `colour_blocks`, on each of `threads`, all cases interleaved,
/// `repeats` rounds: the fastest solve of each and the residuals it
/// leaves.
fn measure_solves(
    problem: &ContactProblem,
    colour_blocks: &[usize],
    threads: &[usize],
    repeats: usize,
) -> SuiteResult<Vec<BlockSolve>> {
    let mut out: Vec<BlockSolve> = colour_blocks
        .iter()
        .map(|&colour_blocks| BlockSolve {
            colour_blocks,
            seconds: vec![f64::INFINITY; threads.len()],
            residual: [f64::NAN; 2],
        })
        .collect();
    for _ in 0..repeats {
        for case in &mut out {
            for (k, &threads) in threads.iter().enumerate() {
                let mut pgs = ProjectedGaussSeidel::new(PgsSettings {
                    parallel_min_contacts: 0,
                    colour_blocks: case.colour_blocks,
                    ..PgsSettings::coloured(Stopping::iterations(SWEEPS), threads)
                })
                .map_err(|e| e.to_string())?;
                let (mut lambda, mut v) = problem.cold_start();
                let t = std::time::Instant::now();
                let report = pgs
                    .solve(problem, &mut lambda, &mut v)
                    .map_err(|e| e.to_string())?;
                case.seconds[k] = case.seconds[k].min(t.elapsed().as_secs_f64());
                case.residual = [report.residuals.mean, report.residuals.max];
            }
        }
    }
    Ok(out)
}

/// Amdahl's serial fraction `s` of a pass from its one-thread time and
/// its time on `threads` threads: `t_T = t₁ (s + (1 − s)/T)`; NaN on one
/// thread.
fn serial_fraction(one: f64, (threads, time): (usize, f64)) -> f64 {
    let t = threads as f64;
    (t * time / one - 1.0) / (t - 1.0)
}

/// The measured passes of the step: name and seconds per step on each
/// listed thread count.
fn passes(times: &[StepTimes]) -> Vec<(&'static str, Vec<f64>)> {
    let by_count: Vec<_> = times.iter().map(StepTimes::by_pass).collect();
    let names = by_count.first().map(|p| p.map(|(name, _)| name));
    names
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(k, name)| (name, by_count.iter().map(|p| p[k].1).collect()))
        .collect()
}

/// The bed of an `ndem run` checkpoint and its stepper's impulse history.
fn checkpoint_bed(path: &Path) -> SuiteResult<(Scene, ImpulseHistory)> {
    let checkpoint = Checkpoint::read_file(path)
        .map_err(|e| format!("cannot read checkpoint {}: {e}", path.display()))?;
    let (scene, stepper) = checkpoint.restore().map_err(|e| e.to_string())?;
    let history = stepper
        .history()
        .cloned()
        .ok_or_else(|| format!("{}: the run's warm start keeps no history", path.display()))?;
    Ok((scene, history))
}

/// The machine the suite runs on: its processor's name (`/proc/cpuinfo`)
/// and the threads the system runs at once.
fn machine() -> (String, usize) {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_else(|| "unknown processor".into());
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    (model, cores)
}

/// Runs the suite.
pub fn run(opts: &SuiteOptions) -> SuiteResult<bool> {
    let words = Words::parse(&opts.args)?;
    report::prepare(&opts.out)?;
    let t0 = std::time::Instant::now();
    let repeats = opts.repeats.unwrap_or(3);
    let steps = 5;
    let mut progress = Progress::new("scaling", 1);
    let (scene, history, bed) = match &words.checkpoint {
        Some(_) if opts.particles.is_some() => {
            return Err("--particles and `checkpoint=` name two beds; give one".into());
        }
        Some(path) => {
            let (scene, history) = checkpoint_bed(path)?;
            let bed = format!("bed of {}", path.display());
            (scene, history, bed)
        }
        None => {
            let n = opts
                .particles
                .unwrap_or(if opts.quick { 10_000 } else { 100_000 });
            let (scene, history) = peers_ndem::settle(n, &mut progress)?;
            (scene, history, format!("settled bed of {n}"))
        }
    };
    let problem = step_problem(&scene, &history)?;
    let mut all = vec![bounds(&bed, &problem)?];
    let default_blocks = PgsSettings::default().colour_blocks;
    let schedule = SweepSchedule::new(&problem, default_blocks);
    let step_bound: Vec<f64> = (words.threads.iter())
        .map(|&t| schedule.bound(t, SWEEPS).run)
        .collect();
    let host_before = crate::host::probe();
    progress.note("the bed's solve with each block count");
    let solves = measure_solves(&problem, &BLOCKS, &words.threads, repeats)?;
    drop(problem);
    let bed_and_history = (&scene, &history);
    let (step, agree) = measure_step(
        bed_and_history,
        &words.threads,
        (steps, repeats),
        &mut progress,
    )?;
    let mut million = None;
    if !opts.quick {
        progress.note("lattice packing of 10⁶ spheres");
        let lattice = sphere_packing(&PackingSpec {
            cells: [100, 100, 100],
            ..PackingSpec::default()
        })
        .map_err(|e| e.to_string())?;
        all.push(bounds("lattice of 10⁶", &lattice)?);
        let solve = measure_solves(&lattice, &[default_blocks], &words.threads, repeats)?;
        million = solve.into_iter().next().map(|s| s.seconds);
    }
    let host = crate::host::AroundRuns {
        before: host_before,
        after: crate::host::probe(),
    };
    progress.tick("done");
    let measured = Measured {
        bed: (bed, scene.world.len()),
        machine: machine(),
        threads: &words.threads,
        step: &step,
        step_bound: &step_bound,
        agree,
        solves: &solves,
        million,
        host,
    };
    write(opts, (steps, repeats), &all, &measured)?;
    let wall = t0.elapsed().as_secs_f64();
    progress.note(&format!("wall time {wall:.0} s"));
    if !agree {
        progress.note("the thread counts ended in different worlds (report.md)");
    }
    // a run whose thread counts disagree fails: the coloured order
    // promises the same iterate on any count
    Ok(agree)
}

/// What the suite timed on this host.
struct Measured<'a> {
    /// The measured bed's name and body count.
    bed: (String, usize),
    /// The processor's name and the threads the system runs at once.
    machine: (String, usize),
    /// The thread counts of every timing below.
    threads: &'a [usize],
    /// The bed's step on each thread count.
    step: &'a [StepTimes],
    /// The sweep's schedule bound with the default blocks (run of 25) on
    /// each thread count.
    step_bound: &'a [f64],
    /// Whether every thread count ended in the same world, bit for bit.
    agree: bool,
    /// The bed's continuous problem solved with each block count.
    solves: &'a [BlockSolve],
    /// The 10⁶ lattice's solve on each thread count (full size only).
    million: Option<Vec<f64>>,
    /// The host's cache-line transfer, arithmetic and memory-read
    /// scaling before and after the timings.
    host: crate::host::AroundRuns,
}

/// Writes `summary.json`, `bounds.csv`, `passes.csv`, `solves.csv`,
/// `bounds.svg` and `report.md`.
fn write(
    opts: &SuiteOptions,
    (steps, repeats): (usize, usize),
    all: &[Bounds],
    timed: &Measured<'_>,
) -> SuiteResult<()> {
    let rows: Vec<&Value> = all.iter().flat_map(|b| &b.rows).collect();
    write_bounds(opts, all, &rows)?;
    let measured = passes(timed.step);
    let pass_rows = pass_json(&measured, timed.threads);
    let keys = ["pass", "threads", "seconds", "speed_up", "serial_fraction"];
    report::write_csv(
        &opts.out.join("passes.csv"),
        &keys,
        &csv_rows(&pass_rows, &keys),
    )?;
    let solve_rows: Vec<Value> = (timed.solves.iter())
        .flat_map(|s| {
            let one = s.seconds[0];
            timed.threads.iter().zip(&s.seconds).map(move |(t, sec)| {
                json!({
                    "colour_blocks": s.colour_blocks, "threads": t, "seconds": sec,
                    "speed_up": one / sec, "mean_residual": s.residual[0], "max_residual": s.residual[1],
                })
            })
        })
        .collect();
    let keys = [
        "colour_blocks",
        "threads",
        "seconds",
        "speed_up",
        "mean_residual",
        "max_residual",
    ];
    report::write_csv(
        &opts.out.join("solves.csv"),
        &keys,
        &csv_rows(&solve_rows, &keys),
    )?;
    let (model, cores) = &timed.machine;
    let summary = json!({
        "suite": "scaling",
        "quick": opts.quick,
        "bed": timed.bed.0,
        "bodies": timed.bed.1,
        "machine": {"processor": model, "threads_at_once": cores},
        "threads": timed.threads,
        "steps_per_round": steps,
        "repeats": repeats,
        "contacts": all.iter().map(|b| json!({"bed": b.bed, "contacts": b.contacts})).collect::<Vec<_>>(),
        "bounds": rows,
        "passes": pass_rows,
        "step_schedule_bound": timed.step_bound,
        "step_cpu_s": timed.step.iter().map(StepTimes::cpu).collect::<Vec<_>>(),
        "every_thread_count_bit_identical": timed.agree,
        "solves": solve_rows,
        "lattice_solve_s": timed.million,
        "host": timed.host.to_json(),
        "load_average": report::load_average(),
    });
    report::write_summary(&opts.out, &summary)?;
    let md = markdown(opts, (steps, repeats), all, &measured, timed);
    std::fs::write(opts.out.join("report.md"), md).map_err(|e| e.to_string())?;
    Ok(())
}

/// `bounds.csv` and `bounds.svg`.
fn write_bounds(opts: &SuiteOptions, all: &[Bounds], rows: &[&Value]) -> SuiteResult<()> {
    let keys = [
        "bed",
        "schedule",
        "colour_blocks",
        "blocks",
        "colours",
        "largest_block",
        "threads",
        "bound_one_sweep",
        "bound_run_of_25",
    ];
    let owned: Vec<Value> = rows.iter().map(|r| (*r).clone()).collect();
    report::write_csv(
        &opts.out.join("bounds.csv"),
        &keys,
        &csv_rows(&owned, &keys),
    )?;
    let curve = |b: &Bounds, blocks: usize| {
        let points = b.rows.iter().filter(|r| r["colour_blocks"] == blocks);
        let point = |r: &Value| {
            let x = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
            (x("threads"), x("bound_run_of_25"))
        };
        Series::line(
            format!("{}, {blocks} blocks", b.bed),
            points.map(point).collect(),
        )
    };
    let series: Vec<Series> = all
        .iter()
        .flat_map(|b| [32, 64, 256].map(|blocks| curve(b, blocks)))
        .chain([Series::line(
            "T (linear)",
            THREADS.iter().map(|&t| (t as f64, t as f64)).collect(),
        )])
        .collect();
    line_plot(
        &opts.out.join("bounds.svg"),
        Axes::new(
            "speed-up the coloured sweep's schedule allows (run of 25 sweeps)",
            "threads",
            "bound",
        )
        .log_x()
        .log_y(),
        &series,
    )
}

/// The rows of `values` as CSV cells in the order of `keys`.
fn csv_rows(values: &[Value], keys: &[&str]) -> Vec<Vec<String>> {
    let cell = |r: &Value, k: &str| r[k].to_string().trim_matches('"').to_string();
    (values.iter())
        .map(|r| keys.iter().map(|k| cell(r, k)).collect())
        .collect()
}

/// One row per pass and thread count: seconds per step, speed-up over
/// one thread and Amdahl's serial fraction (null on one thread).
fn pass_json(measured: &[(&str, Vec<f64>)], threads: &[usize]) -> Vec<Value> {
    let mut rows = Vec::new();
    for (name, seconds) in measured {
        for (&t, &sec) in threads.iter().zip(seconds) {
            let s = serial_fraction(seconds[0], (t, sec));
            rows.push(json!({
                "pass": name, "threads": t, "seconds": sec,
                "speed_up": seconds[0] / sec,
                "serial_fraction": if t == 1 { Value::Null } else { json!(s) },
            }));
        }
    }
    rows
}

/// The report.
fn markdown(
    opts: &SuiteOptions,
    (steps, repeats): (usize, usize),
    all: &[Bounds],
    measured: &[(&str, Vec<f64>)],
    timed: &Measured<'_>,
) -> String {
    let mut md = report::heading("Scaling: the coloured sweep's schedule bound", opts.quick);
    let (model, cores) = &timed.machine;
    let _ = writeln!(
        md,
        "The bound is the total work of the coloured PGS sweep over the time its schedule takes on T threads \
         (blocks of consecutive contacts, each thread a range of blocks, a block waiting for the earlier blocks \
         it shares a moving body with; work counted in contacts; `ndem_solve::schedule`). Rows `sweep`: the \
         sweep's own schedule (up to 256 blocks); rows `wider sets (not built)`: the schedule the same rules give \
         with more blocks than the sweep's 256-member block sets hold. Bed: {} ({} bodies). Machine: {model}, \
         {cores} threads at once. Load: {}.\n",
        timed.bed.0,
        timed.bed.1,
        report::load_average()
    );
    for b in all {
        bounds_md(&mut md, b);
    }
    measured_md(&mut md, (steps, repeats), measured, timed, *cores);
    solves_md(&mut md, timed);
    let _ = write!(md, "\n{}", timed.host.text());
    md
}

/// The schedule bounds of one bed.
fn bounds_md(md: &mut String, b: &Bounds) {
    let _ = writeln!(md, "### {} ({} contacts)\n", b.bed, b.contacts);
    report::table_header(
        md,
        "schedule | colour blocks | blocks | colours | T | one sweep | run of 25 sweeps",
    );
    for r in &b.rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {:.2} | {:.2} |",
            r["schedule"].as_str().unwrap_or(""),
            r["colour_blocks"],
            r["blocks"],
            r["colours"],
            r["threads"],
            r["bound_one_sweep"].as_f64().unwrap_or(f64::NAN),
            r["bound_run_of_25"].as_f64().unwrap_or(f64::NAN),
        );
    }
    md.push('\n');
}

/// The step's passes on every thread count, beside the schedule bound.
fn measured_md(
    md: &mut String,
    (steps, repeats): (usize, usize),
    measured: &[(&str, Vec<f64>)],
    timed: &Measured<'_>,
    cores: usize,
) {
    let counts: Vec<String> = (timed.threads.iter())
        .map(|&t| {
            let over = if t > cores { ", oversubscribed" } else { "" };
            format!("T = {t}{over}")
        })
        .collect();
    let _ = writeln!(
        md,
        "### Measured on this machine\n\nThe step of the bed, coloured PGS with {SWEEPS} sweeps, the thread counts \
         interleaved, {repeats} rounds of {steps} steps, fastest round per thread count: ms per step, and beside \
         T > 1 the speed-up over one thread and Amdahl's serial fraction s (`t_T = t₁ (s + (1 − s)/T)`; noise \
         makes it negative when a pass gains more than T×). Every thread count ended in the same world bit for \
         bit: {}.\n",
        if timed.agree { "yes" } else { "**no**" }
    );
    report::table_header(md, &format!("pass | {}", counts.join(" | ")));
    for (name, seconds) in measured {
        let cells: Vec<String> = (timed.threads.iter().zip(seconds))
            .map(|(&t, &sec)| match t {
                1 => format!("{:.2}", sec * 1e3),
                _ => format!(
                    "{:.2} ({:.2}×, s = {:.2})",
                    sec * 1e3,
                    seconds[0] / sec,
                    serial_fraction(seconds[0], (t, sec))
                ),
            })
            .collect();
        table_row(md, name, cells.into_iter());
    }
    let bound = timed.step_bound.iter().map(|b| format!("{b:.2}×"));
    let name = format!("the sweeps' schedule bound (default blocks, run of {SWEEPS})");
    table_row(md, &name, bound);
    let cpu = (timed.step.iter()).map(|t| format!("{:.2}", t.cpu() / t.step()));
    table_row(md, "CPU time over wall time", cpu);
}

/// A table row: `name`, then `cells`.
fn table_row(md: &mut String, name: &str, cells: impl Iterator<Item = String>) {
    let cells: Vec<String> = cells.collect();
    let _ = writeln!(md, "| {name} | {} |", cells.join(" | "));
}

/// The bed's solve with each block count, and the lattice's.
fn solves_md(md: &mut String, timed: &Measured<'_>) {
    let counts: Vec<String> = timed
        .threads
        .iter()
        .map(|t| format!("T = {t} [ms]"))
        .collect();
    let _ = writeln!(
        md,
        "\nThe bed's continuous problem, {SWEEPS} coloured sweeps from a cold start with each block count \
         (the thread counts interleaved, fastest; residuals of the returned λ, the same on any thread count):\n"
    );
    report::table_header(
        md,
        &format!(
            "colour blocks | {} | mean residual [m/s] | max residual [m/s]",
            counts.join(" | ")
        ),
    );
    for s in timed.solves {
        let times: Vec<String> = (s.seconds.iter())
            .map(|&sec| format!("{:.1} ({:.2}×)", sec * 1e3, s.seconds[0] / sec))
            .collect();
        let _ = writeln!(
            md,
            "| {} | {} | {:.3e} | {:.3e} |",
            s.colour_blocks,
            times.join(" | "),
            s.residual[0],
            s.residual[1]
        );
    }
    if let Some(seconds) = &timed.million {
        let _ = write!(
            md,
            "\nLattice of 10⁶: {SWEEPS} coloured sweeps from a cold start"
        );
        for (t, sec) in timed.threads.iter().zip(seconds) {
            let _ = write!(md, ", {sec:.2} s on {t}");
        }
        md.push_str(".\n");
    }
}

#[cfg(test)]
mod tests {
    use super::{Words, serial_fraction, thread_list};

    #[test]
    fn amdahls_fraction_inverts_amdahls_law() {
        // t_T = t₁ (s + (1 − s)/T) with s = 0.2
        let t1 = 10.0;
        for t in [2usize, 4, 16] {
            let tt = t1 * (0.2 + 0.8 / t as f64);
            assert!(
                (serial_fraction(t1, (t, tt)) - 0.2).abs() < 1e-12,
                "T = {t}"
            );
        }
        // on two threads it is the two-thread form, 2 t₂/t₁ − 1
        assert!((serial_fraction(8.0, (2, 5.0)) - 0.25).abs() < 1e-15);
    }

    #[test]
    fn thread_lists_start_at_one_and_increase() {
        assert_eq!(thread_list("1,2,4,8,16"), Some(vec![1, 2, 4, 8, 16]));
        assert_eq!(thread_list("1"), Some(vec![1]));
        for bad in ["", "2,4", "1,1", "1,4,2", "1,0", "1,x", "1,2000"] {
            assert_eq!(thread_list(bad), None, "{bad}");
        }
        let words = ["checkpoint=a.ckpt", "threads=1,3"].map(String::from);
        let parsed = Words::parse(&words).unwrap();
        assert_eq!(parsed.threads, vec![1, 3]);
        assert_eq!(parsed.checkpoint.unwrap().to_str(), Some("a.ckpt"));
        assert_eq!(Words::parse(&[]).unwrap().threads, vec![1, 2]);
    }
}

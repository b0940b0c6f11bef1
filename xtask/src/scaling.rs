//! `cargo xtask scaling [--quick] [--particles N] [--repeats R]`: what the
//! coloured PGS sweep's work schedule allows on T threads, against what
//! one and two threads measure on this host.
//!
//! A resting bed (the peers' bed: `--particles`, default 10⁵, `--quick`
//! 10⁴; settled as `cargo xtask peers ndem` settles it) is stepped once
//! to get its continuous problem, whose blocks and colours give the
//! schedule bound ([`ndem_solve::schedule`]) for T = 1 … 64: one sweep with
//! a barrier after it, and the run of 25 sweeps without barriers that the
//! step makes. The step is measured on one and two threads (coloured PGS,
//! interleaved, `--repeats` rounds, minima per stage); the serial fraction
//! of each pass is what Amdahl's law makes of those two times. The full
//! size adds a lattice packing of 10⁶ spheres (the test kit's
//! `sphere_packing`): its schedule bound and its 25-sweep solve on one and
//! two threads.

use crate::SuiteOptions;
use crate::peers_ndem::{self, Config, SWEEPS, StepTimes};
use crate::plot::{Axes, Series, line_plot};
use crate::report::{self, Progress, SuiteResult};
use ndem_scenes::SolverChoice;
use ndem_scenes::builders::Scene;
use ndem_solve::schedule::SweepSchedule;
use ndem_solve::{
    ContactProblem, ImpulseHistory, PgsSettings, ProjectedGaussSeidel, Solver, Stopping,
};
use ndem_testkit::generate::{PackingSpec, sphere_packing};
use serde_json::{Value, json};
use std::fmt::Write as _;

/// Thread counts the bound is given for.
const THREADS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Block counts the bound is given for: the default, two between and the
/// most a run may ask for (`PgsSettings::colour_blocks`).
const BLOCKS: [usize; 4] = [32, 64, 128, 256];

/// Block counts beyond what the sweep allows (its block sets hold 256
/// blocks): the schedule the same rules give with wider sets
/// ([`SweepSchedule::with_block_count`]).
const WIDER: [usize; 1] = [512];

/// The coloured step on one and on two threads (`peers ndem`'s last two
/// configurations).
fn coloured() -> &'static [Config] {
    &peers_ndem::CONFIGS[1..]
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

/// The step of the settled bed on one and two threads, interleaved,
/// `repeats` rounds of `steps` steps: the fastest round per configuration.
fn measure_step(
    scene: &Scene,
    history: &ImpulseHistory,
    (steps, repeats): (usize, usize),
    progress: &mut Progress,
) -> SuiteResult<[StepTimes; 2]> {
    let mut best: [Option<StepTimes>; 2] = [None, None];
    for r in 0..repeats {
        for (k, config) in coloured().iter().enumerate() {
            let (t, _) = peers_ndem::measure(scene, history, *config, steps)?;
            progress.note(&format!(
                "round {}: {} {:.1} ms per step",
                r + 1,
                config.label,
                t.step() * 1e3
            ));
            if best[k].is_none_or(|b| t.step() < b.step()) {
                best[k] = Some(t);
            }
        }
    }
    Ok(best.map(Option::unwrap_or_default))
}

/// One block count's 25-sweep solve of a problem ([`measure_solves`]).
#[derive(Debug, Clone, Copy)]
struct BlockSolve {
    colour_blocks: usize,
    /// Fastest solve on one and on two threads \[s\].
    seconds: [f64; 2],
    /// Mean and largest row residual after the solve \[m/s\] (the same on
    /// any thread count).
    residual: [f64; 2],
}

/// 25 coloured sweeps of `problem` from a cold start with each of
/// `colour_blocks`, on one and two threads, all cases interleaved,
/// `repeats` rounds: the fastest solve of each and the residuals it
/// leaves.
fn measure_solves(
    problem: &ContactProblem,
    colour_blocks: &[usize],
    repeats: usize,
) -> SuiteResult<Vec<BlockSolve>> {
    let mut out: Vec<BlockSolve> = colour_blocks
        .iter()
        .map(|&colour_blocks| BlockSolve {
            colour_blocks,
            seconds: [f64::INFINITY; 2],
            residual: [f64::NAN; 2],
        })
        .collect();
    for _ in 0..repeats {
        for case in &mut out {
            for (k, threads) in [1, 2].into_iter().enumerate() {
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

/// Amdahl's serial fraction `s` of a pass from its one- and two-thread
/// times: `t₂ = t₁ (s + (1 − s)/2)`.
fn serial_fraction(one: f64, two: f64) -> f64 {
    2.0 * two / one - 1.0
}

/// The measured passes of the step: name, one-thread and two-thread
/// seconds per step.
fn passes(t: &[StepTimes; 2]) -> Vec<(&'static str, f64, f64)> {
    t[0].by_pass()
        .into_iter()
        .zip(t[1].by_pass())
        .map(|((name, one), (_, two))| (name, one, two))
        .collect()
}

/// Runs the suite.
pub fn run(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    let t0 = std::time::Instant::now();
    let n = opts
        .particles
        .unwrap_or(if opts.quick { 10_000 } else { 100_000 });
    let repeats = opts.repeats.unwrap_or(3);
    let steps = 5;
    let mut progress = Progress::new("scaling", 1);
    let (scene, history) = peers_ndem::settle(n, &mut progress)?;
    let problem = step_problem(&scene, &history)?;
    let mut all = vec![bounds(&format!("settled bed of {n}"), &problem)?];
    progress.note("the settled bed's solve with each block count");
    let solves = measure_solves(&problem, &BLOCKS, repeats)?;
    drop(problem);
    let step = measure_step(&scene, &history, (steps, repeats), &mut progress)?;
    let mut million = None;
    if !opts.quick {
        progress.note("lattice packing of 10⁶ spheres");
        let lattice = sphere_packing(&PackingSpec {
            cells: [100, 100, 100],
            ..PackingSpec::default()
        })
        .map_err(|e| e.to_string())?;
        all.push(bounds("lattice of 10⁶", &lattice)?);
        let [default] =
            measure_solves(&lattice, &[PgsSettings::default().colour_blocks], repeats)?[..]
        else {
            return Err("one block count measured, one result expected".into());
        };
        million = Some(default.seconds);
    }
    progress.tick("done");
    let measured = Measured {
        step: &step,
        solves: &solves,
        million,
    };
    write(opts, (n, steps, repeats), &all, &measured)?;
    let wall = t0.elapsed().as_secs_f64();
    progress.note(&format!("wall time {wall:.0} s"));
    Ok(true)
}

/// What the suite timed on this host.
struct Measured<'a> {
    /// The settled bed's step on one and two threads.
    step: &'a [StepTimes; 2],
    /// The settled bed's continuous problem solved with each block count.
    solves: &'a [BlockSolve],
    /// The 10⁶ lattice's solve on one and two threads (full size only).
    million: Option<[f64; 2]>,
}

/// Writes `summary.json`, `bounds.csv`, `passes.csv`, `solves.csv`,
/// `bounds.svg` and `report.md`.
fn write(
    opts: &SuiteOptions,
    (n, steps, repeats): (usize, usize, usize),
    all: &[Bounds],
    timed: &Measured<'_>,
) -> SuiteResult<()> {
    let Measured {
        step,
        solves,
        million,
    } = *timed;
    let rows: Vec<&Value> = all.iter().flat_map(|b| &b.rows).collect();
    let cell = |r: &Value, k: &str| r[k].to_string().trim_matches('"').to_string();
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
    let csv: Vec<Vec<String>> = rows
        .iter()
        .map(|r| keys.iter().map(|k| cell(r, k)).collect())
        .collect();
    report::write_csv(&opts.out.join("bounds.csv"), &keys, &csv)?;
    let measured = passes(step);
    let pass_rows: Vec<Vec<String>> = measured
        .iter()
        .map(|(name, one, two)| {
            vec![
                name.to_string(),
                format!("{one:e}"),
                format!("{two:e}"),
                format!("{}", one / two),
                format!("{}", serial_fraction(*one, *two)),
            ]
        })
        .collect();
    report::write_csv(
        &opts.out.join("passes.csv"),
        &[
            "pass",
            "one_thread_s",
            "two_threads_s",
            "speed_up",
            "serial_fraction",
        ],
        &pass_rows,
    )?;
    let solve_rows: Vec<Vec<String>> = solves
        .iter()
        .map(|s| {
            vec![
                s.colour_blocks.to_string(),
                format!("{:e}", s.seconds[0]),
                format!("{:e}", s.seconds[1]),
                format!("{:e}", s.residual[0]),
                format!("{:e}", s.residual[1]),
            ]
        })
        .collect();
    report::write_csv(
        &opts.out.join("solves.csv"),
        &[
            "colour_blocks",
            "one_thread_s",
            "two_threads_s",
            "mean_residual",
            "max_residual",
        ],
        &solve_rows,
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
    )?;
    let summary = json!({
        "suite": "scaling",
        "quick": opts.quick,
        "particles": n,
        "steps_per_round": steps,
        "repeats": repeats,
        "contacts": all.iter().map(|b| json!({"bed": b.bed, "contacts": b.contacts})).collect::<Vec<_>>(),
        "bounds": rows,
        "passes": measured.iter().map(|(name, one, two)| json!({
            "pass": name, "one_thread_s": one, "two_threads_s": two,
            "speed_up": one / two, "serial_fraction": serial_fraction(*one, *two),
        })).collect::<Vec<_>>(),
        "solves": solves.iter().map(|s| json!({
            "colour_blocks": s.colour_blocks, "one_thread_s": s.seconds[0], "two_threads_s": s.seconds[1],
            "speed_up": s.seconds[0] / s.seconds[1], "mean_residual": s.residual[0], "max_residual": s.residual[1],
        })).collect::<Vec<_>>(),
        "lattice_solve_s": million.map(|m| json!({"one_thread": m[0], "two_threads": m[1], "speed_up": m[0] / m[1]})),
        "load_average": report::load_average(),
    });
    report::write_summary(&opts.out, &summary)?;
    let md = markdown(opts, (n, steps, repeats), all, &measured, timed);
    std::fs::write(opts.out.join("report.md"), md).map_err(|e| e.to_string())?;
    Ok(())
}

/// The report.
fn markdown(
    opts: &SuiteOptions,
    (n, steps, repeats): (usize, usize, usize),
    all: &[Bounds],
    measured: &[(&str, f64, f64)],
    timed: &Measured<'_>,
) -> String {
    let mut md = report::heading("Scaling: the coloured sweep's schedule bound", opts.quick);
    let _ = writeln!(
        md,
        "The bound is the total work of the coloured PGS sweep over the time its schedule takes on T threads \
         (blocks of consecutive contacts, each thread a range of blocks, a block waiting for the earlier blocks \
         it shares a moving body with; work counted in contacts; `ndem_solve::schedule`). Rows `sweep`: the \
         sweep's own schedule (up to 256 blocks); rows `wider sets (not built)`: the schedule the same rules give \
         with more blocks than the sweep's 256-member block sets hold. Settled bed of {n} spheres (`cargo xtask \
         peers ndem`'s bed). Load: {}.\n",
        report::load_average()
    );
    for b in all {
        let _ = writeln!(md, "### {} ({} contacts)\n", b.bed, b.contacts);
        report::table_header(
            &mut md,
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
    let _ = writeln!(
        md,
        "### Measured on this host\n\nThe step of the settled bed, coloured PGS with {SWEEPS} sweeps, one and two \
         threads interleaved, {repeats} rounds of {steps} steps, fastest round per thread count; the serial \
         fraction s is Amdahl's from the two times (`t₂ = t₁ (s + (1 − s)/2)`; noise makes it negative when a \
         pass gains more than 2×).\n"
    );
    report::table_header(
        &mut md,
        "pass | 1 thread [ms] | 2 threads [ms] | speed-up | serial fraction",
    );
    for (name, one, two) in measured {
        let _ = writeln!(
            md,
            "| {name} | {:.2} | {:.2} | {:.2} | {:.2} |",
            one * 1e3,
            two * 1e3,
            one / two,
            serial_fraction(*one, *two)
        );
    }
    let _ = writeln!(
        md,
        "\nThe settled bed's continuous problem, {SWEEPS} coloured sweeps from a cold start with each block count \
         (one and two threads interleaved, {repeats} rounds, fastest; residuals of the returned λ, the same on any \
         thread count):\n"
    );
    report::table_header(
        &mut md,
        "colour blocks | 1 thread [ms] | 2 threads [ms] | speed-up | mean residual [m/s] | max residual [m/s]",
    );
    for s in timed.solves {
        let _ = writeln!(
            md,
            "| {} | {:.1} | {:.1} | {:.2} | {:.3e} | {:.3e} |",
            s.colour_blocks,
            s.seconds[0] * 1e3,
            s.seconds[1] * 1e3,
            s.seconds[0] / s.seconds[1],
            s.residual[0],
            s.residual[1]
        );
    }
    if let Some([one, two]) = timed.million {
        let _ = writeln!(
            md,
            "\nLattice of 10⁶: {SWEEPS} coloured sweeps from a cold start, {one:.2} s on one thread, {two:.2} s \
             on two ({:.2}×).",
            one / two
        );
    }
    md
}

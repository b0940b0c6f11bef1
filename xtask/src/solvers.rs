//! `cargo xtask solvers`: PGS (row-wise and blocked), projected Jacobi and
//! APGD, cold and history-warm-started, on contact-problem snapshots from a
//! settled 1D column of 50 spheres, a resting 3D pile and a dense random
//! packing. Residual (mean row residual, `ndem_solve::metrics`) against
//! iterations and wall time, and iterations/time to reach relative residuals
//! 1e-2, 1e-4, 1e-6 (relative to the cold start's initial residual).

use crate::SuiteOptions;
use crate::plot::{Axes, Series, line_plot};
use crate::report::{self, Progress, SuiteResult};
use ndem_scenes::SolverChoice;
use ndem_scenes::builders;
use ndem_solve::*;
use ndem_step::{StepSettings, Stepper};
use ndem_testkit::generate::{PackingSpec, sphere_packing};
use serde_json::json;

/// A problem and the history of the step before it.
struct Snapshot {
    name: &'static str,
    problem: ContactProblem,
    history: ImpulseHistory,
}

fn settle(
    mut scene: builders::Scene,
    seconds: f64,
    iterations: usize,
) -> SuiteResult<(ContactProblem, ImpulseHistory)> {
    scene.settings = StepSettings {
        friction_set: FrictionSet::Disk,
        ..scene.settings
    };
    let mut stepper =
        Stepper::with_warm_pgs(scene.settings, iterations).map_err(|e| e.to_string())?;
    let steps = (seconds / scene.settings.dt).round() as usize;
    let mut history = ImpulseHistory::new();
    for _ in 0..steps {
        history = stepper.history().cloned().unwrap_or_default();
        scene.step(&mut stepper).map_err(|e| e.to_string())?;
    }
    let (p, _) = stepper.last_problem().ok_or("no problem")?;
    Ok((p.clone(), history))
}

fn snapshots(quick: bool) -> SuiteResult<Vec<Snapshot>> {
    let mut out = Vec::new();
    let (p, h) = settle(builders::column(50).map_err(|e| e.to_string())?, 2.0, 500)?;
    out.push(Snapshot {
        name: "column50",
        problem: p,
        history: h,
    });
    let n = if quick { 200 } else { 800 };
    let (p, h) = settle(
        builders::box_packing(n, 0.005, 0.0065, 0.1, 3).map_err(|e| e.to_string())?,
        if quick { 1.5 } else { 2.5 },
        100,
    )?;
    out.push(Snapshot {
        name: "pile",
        problem: p,
        history: h,
    });
    let cells = if quick { [8, 8, 6] } else { [16, 16, 10] };
    let spec = PackingSpec {
        cells,
        friction_set: FrictionSet::Disk,
        ..PackingSpec::default()
    };
    let first = sphere_packing(&spec).map_err(|e| e.to_string())?;
    let (mut lam, mut vel) = first.cold_start();
    ProjectedGaussSeidel::with_stopping(Stopping::iterations(300))
        .map_err(|e| e.to_string())?
        .solve(&first, &mut lam, &mut vel)
        .map_err(|e| e.to_string())?;
    let mut history = ImpulseHistory::new();
    history.record(&first, &lam);
    let second = sphere_packing(&PackingSpec {
        compression: spec.compression + 1e-4,
        ..spec
    })
    .map_err(|e| e.to_string())?;
    out.push(Snapshot {
        name: "packing",
        problem: second,
        history,
    });
    Ok(out)
}

/// What the suite collects from each solve.
#[derive(Default)]
struct Records {
    csv: Vec<Vec<String>>,
    summary: Vec<serde_json::Value>,
    table: String,
    by_iter: Vec<Series>,
    by_time: Vec<Series>,
}

/// One solve of `problem` by `choice` from a `start` (cold or warm),
/// recorded in `rec`; `r0`, `r0_all` are the cold start's residuals.
fn solve_and_record(
    rec: &mut Records,
    snap: &Snapshot,
    variant: &str,
    problem: &ContactProblem,
    (choice, start): (SolverChoice, &str),
    iterations: usize,
    (r0, r0_all): (f64, f64),
) -> SuiteResult<()> {
    let name = choice.name();
    let mut s = choice.build(iterations).map_err(|e| e.to_string())?;
    let (mut lam, mut vel) = problem.cold_start();
    if start == "warm" {
        HistoryWarmStart::default()
            .start_from(&snap.history, problem, &mut lam, &mut vel)
            .map_err(|e| e.to_string())?;
    }
    let mut hist = ResidualHistory::new();
    s.solve_observed(problem, &mut lam, &mut vel, &mut hist)
        .map_err(|e| e.to_string())?;
    let pts: Vec<(usize, f64, f64)> = hist
        .entries
        .iter()
        .map(|e| {
            (
                e.iteration,
                e.elapsed.as_secs_f64(),
                e.stats.normal.mean / r0,
            )
        })
        .collect();
    for e in &hist.entries {
        rec.csv.push(vec![
            snap.name.to_string(),
            variant.to_string(),
            name.to_string(),
            start.to_string(),
            e.iteration.to_string(),
            format!("{:e}", e.elapsed.as_secs_f64()),
            format!("{:e}", e.stats.normal.mean / r0),
            format!("{:e}", e.stats.mean / r0_all),
            format!("{:e}", e.stats.normal.mean),
            format!("{:e}", e.stats.friction.mean),
            format!("{:e}", e.stats.rolling.mean),
        ]);
    }
    let last_all = hist
        .entries
        .last()
        .map_or(f64::NAN, |e| e.stats.mean / r0_all);
    let reach: Vec<Option<(usize, f64)>> = LEVELS
        .iter()
        .map(|&lvl| pts.iter().find(|p| p.2 <= lvl).map(|p| (p.0, p.1)))
        .collect();
    let fmt_it = |x: &Option<(usize, f64)>| x.map_or("-".to_string(), |v| v.0.to_string());
    let fmt_t =
        |x: &Option<(usize, f64)>| x.map_or("-".to_string(), |v| format!("{:.2}", 1e3 * v.1));
    let last = pts.last().map_or(f64::NAN, |p| p.2);
    rec.table.push_str(&format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1e} | {:.1e} |\n",
        snap.name,
        variant,
        name,
        start,
        fmt_it(&reach[0]),
        fmt_it(&reach[1]),
        fmt_it(&reach[2]),
        fmt_t(&reach[0]),
        fmt_t(&reach[1]),
        fmt_t(&reach[2]),
        last,
        last_all
    ));
    rec.summary.push(json!({
            "snapshot": snap.name, "rows": variant, "solver": name, "start": start,
            "contacts": problem.contacts().len(),
            "initial_residual": r0,
            "final_relative_normal_residual": last,
            "final_relative_all_rows_residual": last_all,
            "iterations_to": LEVELS.iter().zip(&reach).map(|(l, r)| (format!("{l:e}"), json!(r.map(|v| v.0)))).collect::<serde_json::Map<_, _>>(),
            "seconds_to": LEVELS.iter().zip(&reach).map(|(l, r)| (format!("{l:e}"), json!(r.map(|v| v.1)))).collect::<serde_json::Map<_, _>>(),
        }));
    let label = format!("{name} {start}");
    rec.by_iter.push(Series::line(
        label.clone(),
        pts.iter().map(|p| (p.0 as f64, p.2)).collect(),
    ));
    rec.by_time.push(Series::line(
        label,
        pts.iter().map(|p| (1e3 * p.1, p.2)).collect(),
    ));
    Ok(())
}

/// The solvers compared, as the scenes and the command line name them.
const SOLVERS: [SolverChoice; 4] = [
    SolverChoice::Pgs,
    SolverChoice::PgsBlocked,
    SolverChoice::Jacobi,
    SolverChoice::Apgd,
];
const LEVELS: [f64; 3] = [1e-2, 1e-4, 1e-6];

/// Runs the suite.
pub fn run(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    let iterations = if opts.quick { 400 } else { 2000 };
    let snaps = snapshots(opts.quick)?;
    let mut progress = Progress::new("solvers", snaps.len() * 2 * SOLVERS.len() * 2);
    let mut rec = Records {
        table: String::from(
            "| snapshot | rows | solver | start | it to 1e-2 | it to 1e-4 | it to 1e-6 | ms to 1e-2 | ms to 1e-4 | ms to 1e-6 | final rel. normal residual | final rel. residual, all rows |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        ),
        ..Records::default()
    };
    for snap in &snaps {
        for variant in ["full", "frictionless"] {
            let problem = if variant == "full" {
                snap.problem.clone()
            } else {
                snap.problem.with_contact_rows(ContactRows::Normal)
            };
            let mut eval = ResidualEvaluator::new();
            let s0 = eval.stats(
                &problem,
                &vec![0.0; problem.len()],
                Some(problem.free_velocity()),
            );
            let r0 = s0.normal.mean.max(1e-300);
            let r0_all = s0.mean.max(1e-300);
            rec.by_iter.clear();
            rec.by_time.clear();
            for choice in SOLVERS {
                let name = choice.name();
                for start in ["cold", "warm"] {
                    solve_and_record(
                        &mut rec,
                        snap,
                        variant,
                        &problem,
                        (choice, start),
                        iterations,
                        (r0, r0_all),
                    )?;
                    progress.tick(&format!("{} {variant} {name} {start}", snap.name));
                }
            }
            let title = format!(
                "{} ({variant}, {} contacts)",
                snap.name,
                problem.contacts().len()
            );
            line_plot(
                &opts
                    .out
                    .join(format!("{}_{variant}_iterations.svg", snap.name)),
                Axes::new(&title, "iteration", "relative normal residual").log_y(),
                &rec.by_iter,
            )?;
            line_plot(
                &opts.out.join(format!("{}_{variant}_time.svg", snap.name)),
                Axes::new(&title, "time [ms]", "relative normal residual").log_y(),
                &rec.by_time,
            )?;
        }
    }
    report::write_csv(
        &opts.out.join("history.csv"),
        &[
            "snapshot",
            "rows",
            "solver",
            "start",
            "iteration",
            "time_s",
            "relative_normal_residual",
            "relative_all_rows_residual",
            "normal_mean",
            "friction_mean",
            "rolling_mean",
        ],
        &rec.csv,
    )?;
    let summary = json!({
        "suite": "solvers", "quick": opts.quick, "iterations": iterations,
        "friction_set": "disk", "residual": "mean normal-row residual relative to the cold start's initial value (thresholds); all-rows mean also reported",
        "runs": rec.summary, "wall_time_s": progress.elapsed(),
    });
    report::write_summary(&opts.out, &summary)?;
    let md = format!(
        "# cargo xtask solvers{}\n\nSnapshots: the continuous-stage problem of a settled 1D column of 50 spheres, \
         of a resting pile in a box, and of a dense lattice packing (all with disk friction and rolling rows: \
         `full`), and the same problems restricted to their normal rows (`frictionless`). Warm start: history \
         (β = 0.85) from the previous step's solution. Residual: mean normal-row residual (velocity units, the quantity \
         of the warm-starting paper's Fig. 4) relative to the cold start's initial value; the last column is the mean \
         over all rows (friction and rolling rows included) relative to its initial value. APGD solves the cone complementarity problem on `full` problems (Anitescu), \
         whose solution is not the MCP solution PGS and Jacobi approach, so its MCP residual levels off there; on \
         `frictionless` problems all four solve the same QP.\n\n{}\n\nPlots: `<snapshot>_<rows>_iterations.svg`, \
         `<snapshot>_<rows>_time.svg`. Wall time {:.1} s.\n",
        if opts.quick { " --quick" } else { "" },
        rec.table,
        progress.elapsed()
    );
    report::write(&opts.out.join("report.md"), &md)?;
    println!("{}", rec.table);
    Ok(true)
}

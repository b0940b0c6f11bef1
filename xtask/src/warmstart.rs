//! `cargo xtask warmstart column|pile`: the warm-starting paper's sections
//! 4.1 and 4.2 with our engine.

use crate::SuiteOptions;
use crate::plot::{Axes, Series, line_plot};
use crate::report::{self, SuiteResult};
use ndem_scenes::builders::{self, PileSpec, Scene};
use ndem_scenes::measure;
use ndem_solve::metrics::{ResidualHistogram, relative_multiplier_error};
use ndem_solve::*;
use ndem_step::{StepSettings, Stepper};
use rayon::prelude::*;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// The warm-start variants of the paper (section 4.2 ablation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// λ₀ = 0.
    Cold,
    /// History on all rows with the velocity update (β = 0.85).
    History,
    /// History on normal rows only.
    HistoryNormal,
    /// History without the velocity update of eq. 8.
    HistoryNoVelocity,
    /// Model-based.
    Model,
}

impl Method {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Method::Cold => "cold",
            Method::History => "history",
            Method::HistoryNormal => "history-normal",
            Method::HistoryNoVelocity => "history-no-velocity",
            Method::Model => "model",
        }
    }

    /// The policy, holding `history` when it keeps one.
    fn policy_from(self, history: &ImpulseHistory) -> Box<dyn WarmStart> {
        let mut policy = self.policy();
        if let Some(h) = policy.history_mut() {
            h.clone_from(history);
        }
        policy
    }

    pub(crate) fn policy(self) -> Box<dyn WarmStart> {
        match self {
            Method::Cold => Box::new(ColdStart),
            Method::History => Box::new(HistoryWarmStart::default()),
            Method::HistoryNormal => Box::new(HistoryWarmStart {
                rows: WarmRows::NormalOnly,
                ..HistoryWarmStart::default()
            }),
            Method::HistoryNoVelocity => Box::new(HistoryWarmStart {
                apply_velocity: false,
                ..HistoryWarmStart::default()
            }),
            Method::Model => Box::new(ModelWarmStart),
        }
    }
}

/// A stepper for `method` with `iterations` PGS sweeps, continuing from a
/// saved start: the impulse history (kept only by the history-based
/// methods; the cold and model starts carry nothing between steps) and
/// the clock (time, step).
pub(crate) fn resumed_stepper(
    scene: &Scene,
    method: Method,
    iterations: usize,
    start: &(ImpulseHistory, f64, u64),
) -> SuiteResult<Stepper> {
    let mut stepper = Stepper::new(scene.settings, pgs(iterations)?, method.policy())
        .map_err(|e| e.to_string())?;
    let _carried = stepper.set_history(start.0.clone());
    stepper.set_clock(start.1, start.2);
    Ok(stepper)
}

pub(crate) fn pgs(iterations: usize) -> SuiteResult<Box<ProjectedGaussSeidel>> {
    Ok(Box::new(
        ProjectedGaussSeidel::with_stopping(Stopping::iterations(iterations))
            .map_err(|e| e.to_string())?,
    ))
}

pub(crate) struct Counter {
    done: AtomicUsize,
    total: usize,
    pub(crate) start: Instant,
    label: &'static str,
}

impl Counter {
    pub(crate) fn new(label: &'static str, total: usize) -> Self {
        eprintln!("[{label}] 0/{total}");
        Self {
            done: AtomicUsize::new(0),
            total,
            start: Instant::now(),
            label,
        }
    }
    pub(crate) fn tick(&self, what: &str) {
        let d = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        eprintln!(
            "[{}] {d}/{} {what} ({:.1} s)",
            self.label,
            self.total,
            self.start.elapsed().as_secs_f64()
        );
    }
}

/// One solve of a problem snapshot: the method's warm start from
/// `history`, then `iterations` PGS sweeps recorded in `observer`; returns
/// the final λ and v.
fn observed_solve(
    problem: &ContactProblem,
    history: &ImpulseHistory,
    method: Method,
    iterations: usize,
    observer: &mut ResidualHistory,
) -> SuiteResult<(Vec<f64>, Vec<ndem_math::Velocity6>)> {
    let (mut lam, mut vel) = problem.cold_start();
    method
        .policy_from(history)
        .initialize(problem, &mut lam, &mut vel)
        .map_err(|e| e.to_string())?;
    pgs(iterations)?
        .solve_observed(problem, &mut lam, &mut vel, observer)
        .map_err(|e| format!("snapshot solve ({}): {e}", method.name()))?;
    Ok((lam, vel))
}

/// Iteration grid: roughly geometric from 1 to `max`.
fn iteration_grid(max: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut x = 1.0f64;
    while (x as usize) < max {
        let n = x.round() as usize;
        if v.last() != Some(&n) {
            v.push(n);
        }
        x *= 1.35;
    }
    v.push(max);
    v
}

/// Column of `n` spheres run to rest (4 s; the final 0.5 s averaged).
fn column_eps(n: usize, iterations: usize, method: Method) -> SuiteResult<f64> {
    let mut scene = builders::column(n).map_err(|e| e.to_string())?;
    let mut stepper = Stepper::new(scene.settings, pgs(iterations)?, method.policy())
        .map_err(|e| e.to_string())?;
    let steps = (4.0 / scene.settings.dt) as usize;
    let avg_from = steps - (0.5 / scene.settings.dt) as usize;
    let mut sum = 0.0;
    for k in 0..steps {
        scene.step(&mut stepper).map_err(|e| e.to_string())?;
        if k >= avg_from {
            sum += measure::column_height_error(&scene.world, n);
        }
    }
    Ok(sum / (steps - avg_from) as f64)
}

/// Fewest grid iterations from which `|ε_l|` stays within `eps`.
pub(crate) fn required(grid: &[usize], errors: &[f64], eps: f64) -> Option<usize> {
    let mut ans = None;
    for (i, &n) in grid.iter().enumerate().rev() {
        if errors[i].is_nan() {
            continue; // not run (or diverged): no evidence either way
        }
        if errors[i].abs() <= eps {
            ans = Some(n);
        } else {
            break;
        }
    }
    ans
}

/// Fig. 4: the mean normal residual during one PGS solve of the N_p = 25
/// column at rest, cold and history.
fn figure4(out: &std::path::Path) -> SuiteResult<()> {
    let mut scene = builders::column(25).map_err(|e| e.to_string())?;
    let mut stepper = Stepper::new(scene.settings, pgs(100)?, Method::History.policy())
        .map_err(|e| e.to_string())?;
    for _ in 0..(3.0 / scene.settings.dt) as usize {
        scene.step(&mut stepper).map_err(|e| e.to_string())?;
    }
    let history = stepper.history().cloned().unwrap_or_default();
    scene.step(&mut stepper).map_err(|e| e.to_string())?;
    let (problem, _) = stepper.last_problem().ok_or("no problem")?;
    let mut fig4 = Vec::new();
    let mut fig4_csv = Vec::new();
    for m in [Method::Cold, Method::History] {
        let mut h = ResidualHistory::new();
        observed_solve(problem, &history, m, 100, &mut h)?;
        fig4.push(Series::line(
            m.name(),
            h.entries
                .iter()
                .map(|e| (e.iteration as f64, e.stats.normal.mean))
                .collect(),
        ));
        for e in &h.entries {
            fig4_csv.push(vec![
                m.name().into(),
                e.iteration.to_string(),
                format!("{:e}", e.stats.normal.mean),
            ]);
        }
    }
    report::write_csv(
        &out.join("fig4_residual.csv"),
        &["method", "iteration", "mean_normal_residual"],
        &fig4_csv,
    )?;
    line_plot(
        &out.join("fig4_residual.svg"),
        Axes::new(
            "mean normal residual, N_p = 25 column (Fig. 4)",
            "iteration",
            "mean normal residual [m/s]",
        )
        .log_y(),
        &fig4,
    )?;
    Ok(())
}

/// Iterations needed for |ε_l| ≤ ε (ε = 0.1, 1, 5 %) by size and method:
/// the report table, the summary rows, the mean cold/history speed-up per
/// ε, `column_required.csv` and Fig. 3.
struct Required {
    table: String,
    summary: Vec<serde_json::Value>,
    speedups: serde_json::Map<String, serde_json::Value>,
}

fn required_iterations(
    out: &std::path::Path,
    (sizes, grid, max_it): (&[usize], &[usize], usize),
    methods: &[Method],
    eps_of: &std::collections::BTreeMap<(usize, &'static str), Vec<f64>>,
) -> SuiteResult<Required> {
    let tolerances = [1e-3, 1e-2, 5e-2];
    let mut req_rows = Vec::new();
    let mut summary_req = Vec::new();
    let mut speedups = serde_json::Map::new();
    let mut table = String::from(
        "| ε | N_p | cold | history | model | cold/history |\n|---|---|---|---|---|---|\n",
    );
    for &eps in &tolerances {
        let mut ratios = Vec::new();
        let mut series: Vec<Series> = Vec::new();
        for m in methods {
            let pts: Vec<(f64, f64)> = sizes
                .iter()
                .filter_map(|&n| {
                    required(grid, &eps_of[&(n, m.name())], eps).map(|r| (n as f64, r as f64))
                })
                .collect();
            series.push(Series::markers(m.name(), pts));
        }
        for &n in sizes {
            let r: Vec<Option<usize>> = methods
                .iter()
                .map(|m| required(grid, &eps_of[&(n, m.name())], eps))
                .collect();
            let ratio = match (r[0], r[1]) {
                (Some(c), Some(h)) => Some(c as f64 / h as f64),
                _ => None,
            };
            if let Some(x) = ratio {
                ratios.push(x);
            }
            let f = |x: Option<usize>| x.map_or(format!("> {max_it}"), |v| v.to_string());
            table.push_str(&format!(
                "| {:.1} % | {n} | {} | {} | {} | {} |\n",
                100.0 * eps,
                f(r[0]),
                f(r[1]),
                f(r[2]),
                ratio.map_or("-".into(), |x| format!("{x:.2}"))
            ));
            req_rows.push(vec![
                format!("{eps}"),
                n.to_string(),
                format!("{:?}", r[0]),
                format!("{:?}", r[1]),
                format!("{:?}", r[2]),
            ]);
            summary_req.push(json!({"eps": eps, "n_p": n, "cold": r[0], "history": r[1], "model": r[2], "cold_over_history": ratio}));
        }
        let mean_ratio = if ratios.is_empty() {
            None
        } else {
            Some(ratios.iter().sum::<f64>() / ratios.len() as f64)
        };
        speedups.insert(format!("{eps}"), json!(mean_ratio));
        line_plot(
            &out.join(format!("fig3_required_iterations_eps{}.svg", eps)),
            Axes::new(
                &format!("iterations for |eps_l| <= {:.1} % (Fig. 3)", 100.0 * eps),
                "N_p",
                "N_it^eps",
            ),
            &series,
        )?;
    }
    report::write_csv(
        &out.join("column_required.csv"),
        &["eps", "n_p", "cold", "history", "model"],
        &req_rows,
    )?;
    Ok(Required {
        table,
        summary: summary_req,
        speedups,
    })
}

/// `cargo xtask warmstart column`.
pub fn column(opts: &SuiteOptions) -> SuiteResult<bool> {
    let out = &opts.out;
    report::prepare(out)?;
    let sizes: Vec<usize> = if opts.quick {
        vec![5, 10, 25]
    } else {
        vec![5, 10, 25, 50, 100]
    };
    let max_it = if opts.quick { 300 } else { 2000 };
    let grid = iteration_grid(max_it);
    let methods = [Method::Cold, Method::History, Method::Model];
    let mut cases: Vec<(usize, Method, usize)> = Vec::new();
    for &n in &sizes {
        for &m in &methods {
            for &it in &grid {
                cases.push((n, m, it));
            }
        }
    }
    let counter = Counter::new("warmstart column", cases.len());
    let results: Vec<SuiteResult<f64>> = cases
        .par_iter()
        .map(|&(n, m, it)| {
            let r = column_eps(n, it, m);
            counter.tick(&format!("N_p={n} {} N_it={it}", m.name()));
            r
        })
        .collect();
    let mut eps_of = std::collections::BTreeMap::new();
    let mut csv = Vec::new();
    // A run the stepper refused (a blow-up: energy from nowhere, bodies
    // passing through each other, a diverged solve) is recorded as NaN with
    // its message; `required` treats NaN as no evidence.
    let mut refused = Vec::new();
    for ((n, m, it), r) in cases.iter().zip(results) {
        let e = match r {
            Ok(e) => e,
            Err(msg) => {
                refused.push(format!("N_p = {n}, {}, N_it = {it}: {msg}", m.name()));
                f64::NAN
            }
        };
        csv.push(vec![
            n.to_string(),
            m.name().into(),
            it.to_string(),
            format!("{e:e}"),
        ]);
        eps_of
            .entry((*n, m.name()))
            .or_insert_with(Vec::new)
            .push(e);
    }
    report::write_csv(
        &out.join("column_eps.csv"),
        &["n_p", "method", "n_it", "eps_l"],
        &csv,
    )?;
    let Required {
        table,
        summary: summary_req,
        speedups,
    } = required_iterations(out, (&sizes, &grid, max_it), &methods, &eps_of)?;

    figure4(out)?;
    let wall = counter.start.elapsed().as_secs_f64();
    let summary = json!({
        "suite": "warmstart column", "quick": opts.quick, "sizes": sizes, "iteration_grid": grid,
        "required_iterations": summary_req,
        "speedup_cold_over_history": speedups,
        "speedup_note": "mean over N_p of N_it^eps(cold) / N_it^eps(history); keys are eps",
        "refused_runs": refused,
        "paper": {"speedup": "about 3", "scaling": "N_it^eps roughly linear in N_p"},
        "wall_time_s": wall,
    });
    report::write_summary(out, &summary)?;
    let md = format!(
        "# cargo xtask warmstart column{}\n\nWarm-starting paper, section 4.1. Columns of N_p spheres (d = 13 mm, Table 1) \
         stacked with zero overlap, Δt = 5 ms, PGS with N_it iterations, run 4 s; ε_l = (l − l_Nit)/l against the \
         analytic Hertz height, averaged over the last 0.5 s. N_it^ε is the fewest grid value from which |ε_l| stays \
         within ε (grid {:?}).\n\n{table}\n\nMean speed-up N_it^ε(cold)/N_it^ε(history) (key `speedup_cold_over_history` \
         in `summary.json`, by ε): {}.\n\nPaper: warm starting needs about 3× fewer iterations, and N_it^ε grows \
         almost linearly with N_p.\n\nFigures: `fig3_required_iterations_eps*.svg` (Fig. 3), `fig4_residual.svg` \
         (Fig. 4). Data: `column_eps.csv`, `column_required.csv`, `fig4_residual.csv`. Wall time {wall:.0} s.\n\n\
         Runs the stepper refused (recorded as NaN, no evidence either way): {}\n",
        if opts.quick { " --quick" } else { "" },
        grid,
        serde_json::to_string(&speedups).unwrap_or_default(),
        if refused.is_empty() {
            "none.".to_string()
        } else {
            format!(
                "\n\n{}",
                refused
                    .iter()
                    .map(|r| format!("- {r}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        },
    );
    report::write(&out.join("report.md"), &md)?;
    println!(
        "{table}\nspeed-up cold/history by eps: {}",
        serde_json::to_string(&speedups).unwrap_or_default()
    );
    Ok(true)
}

/// The reference pile's time step (the paper's Δt = 0.2 ms).
const REFERENCE_DT: f64 = 2e-4;
/// Sweeps per step of the reference pile. At Δt = 0.2 ms, 20 history
/// warm-started sweeps per step are 500 sweeps per 5 ms of simulated time;
/// the paper's fixed N_it = 500 at this step (12 500 sweeps per 5 ms) would
/// take a day here, and PGS's largest row change does not fall below 1e-5
/// m/s within 500 sweeps on this pile, so a tolerance-based stop saves
/// nothing. `--quick` also runs 40 sweeps per step to show how much the
/// reference itself still moves.
const REFERENCE_ITERATIONS: [usize; 2] = [20, 40];

/// What one pile run cost.
#[derive(Debug, Clone, Copy, Default)]
struct PileCost {
    steps: usize,
    iterations: usize,
    wall_s: f64,
}

/// A pile run: emission, then rest; returns the scene at the end.
fn run_pile(
    spec: PileSpec,
    rest: f64,
    dt: f64,
    stopping: Stopping,
    method: Method,
    progress: Option<&str>,
) -> SuiteResult<(Scene, Stepper, PileCost)> {
    let t0 = Instant::now();
    let mut scene = builders::pile(spec).map_err(|e| e.to_string())?;
    scene.settings = StepSettings {
        dt,
        ..scene.settings
    };
    let solver = ProjectedGaussSeidel::with_stopping(stopping).map_err(|e| e.to_string())?;
    let mut stepper = Stepper::new(scene.settings, Box::new(solver), method.policy())
        .map_err(|e| e.to_string())?;
    let emit_time = spec.particles as f64 / spec.rate;
    let cap = (4.0 * emit_time / dt).round() as usize + 10;
    let mut cost = PileCost::default();
    // a progress line every 2 s of simulated time for long runs
    let every = (2.0 / dt).round().max(1.0) as usize;
    let mut step = |scene: &mut Scene, stepper: &mut Stepper| -> SuiteResult<()> {
        let st = scene.step(stepper).map_err(|e| e.to_string())?;
        cost.steps += 1;
        cost.iterations += st.iterations;
        if let Some(label) = progress
            && cost.steps % every == 0
        {
            eprintln!(
                "[warmstart pile]   {label}: t = {:.1} s, {} particles, {:.1} sweeps per step, {:.0} s",
                st.time,
                scene.world.dynamic_count(),
                cost.iterations as f64 / cost.steps as f64,
                t0.elapsed().as_secs_f64()
            );
        }
        Ok(())
    };
    let mut k = 0;
    while !scene.emitters_done() {
        step(&mut scene, &mut stepper)?;
        k += 1;
        if k > cap {
            return Err(format!(
                "emission stalled: {} of {} emitted",
                scene.world.dynamic_count(),
                spec.particles
            ));
        }
    }
    for _ in 0..(rest / dt).round() as usize {
        step(&mut scene, &mut stepper)?;
    }
    cost.wall_s = t0.elapsed().as_secs_f64();
    Ok((scene, stepper, cost))
}

fn height(scene: &Scene) -> f64 {
    measure::pile_height_top(&scene.world, ndem_math::Vec3::zeros(), 2.0 * builders::D, 5)
}

/// One run of the pile suite.
#[derive(Debug, Clone, Copy, PartialEq)]
enum PileCase {
    /// Δt = 0.2 ms, history warm start, the given N_it.
    Reference(usize),
    /// Δt = 5 ms with the given method and N_it.
    Run(Method, usize),
}

/// Figs. 7-9 on the resting pile of the Δt = 5 ms, N_it = 500 run: the
/// multiplier error (eq. 13) and residual of one solve, cold and history,
/// and after 1 s more at N_it = 100 the mean residual and its histogram.
fn figures_7_to_9(out: &std::path::Path, resting: (Scene, Stepper), dt: f64) -> SuiteResult<()> {
    let (mut scene, mut stepper) = resting;
    eprintln!("[warmstart pile] figures 7-9");
    let history = stepper.history().cloned().unwrap_or_default();
    scene.step(&mut stepper).map_err(|e| e.to_string())?;
    let (problem, _) = stepper.last_problem().ok_or("no problem")?;
    let problem = problem.clone();
    let mut runs = Vec::new();
    for m in [Method::Cold, Method::History] {
        let mut h = ResidualHistory::with_lambdas();
        observed_solve(&problem, &history, m, 500, &mut h)?;
        runs.push((m, h));
    }
    let reference_lambda = runs[0].1.lambdas.last().cloned().unwrap_or_default();
    let mut fig7 = Vec::new();
    let mut fig8 = Vec::new();
    let mut fig78_csv = Vec::new();
    for (m, h) in &runs {
        let e7: Vec<(f64, f64)> = h
            .lambdas
            .iter()
            .enumerate()
            .filter_map(|(k, l)| {
                relative_multiplier_error(&problem, &reference_lambda, l)
                    .map(|e| ((k + 1) as f64, e.max(1e-16)))
            })
            .collect();
        for ((k, e), entry) in e7.iter().zip(&h.entries) {
            fig78_csv.push(vec![
                m.name().into(),
                k.to_string(),
                format!("{e:e}"),
                format!("{:e}", entry.stats.mean),
                format!("{:e}", entry.stats.normal.mean),
                format!("{:e}", entry.stats.friction.mean),
                format!("{:e}", entry.stats.rolling.mean),
            ]);
        }
        fig7.push(Series::line(m.name(), e7));
        fig8.push(mean_residual_series(m.name(), h));
    }
    report::write_csv(
        &out.join("fig7_fig8_solve.csv"),
        &[
            "method",
            "iteration",
            "multiplier_error_eq13",
            "mean_residual",
            "normal",
            "friction",
            "rolling",
        ],
        &fig78_csv,
    )?;
    line_plot(
        &out.join("fig7_multiplier_error.svg"),
        Axes::new(
            "relative normal multiplier error, resting pile (eq. 13, Fig. 7)",
            "iteration",
            "eps_lambda",
        )
        .log_y(),
        &fig7,
    )?;
    // Fig. 8-9: from the resting pile, run 1 s with N_it = 100, cold and
    // warm, then one solve.
    let mut fig9_csv = Vec::new();
    let mut fig8b = Vec::new();
    for m in [Method::Cold, Method::History] {
        let (mut s2, mut st2) = (
            scene.clone(),
            Stepper::new(scene.settings, pgs(100)?, m.policy()).map_err(|e| e.to_string())?,
        );
        // false for the cold and model starts, which carry nothing between steps
        let _carried = st2.set_history(stepper.history().cloned().unwrap_or_default());
        for _ in 0..(1.0 / dt) as usize {
            s2.step(&mut st2)
                .map_err(|e| format!("figure 8 run ({}): {e}", m.name()))?;
        }
        let hist = st2.history().cloned().unwrap_or_default();
        s2.step(&mut st2).map_err(|e| e.to_string())?;
        let (p2, _) = st2.last_problem().ok_or("no problem")?;
        let mut h = ResidualHistory::new();
        let (lam, vel) = observed_solve(p2, &hist, m, 100, &mut h)?;
        fig8b.push(mean_residual_series(m.name(), &h));
        let mut ev = ResidualEvaluator::new();
        let rows = ev.row_residuals(p2, &lam, Some(&vel)).to_vec();
        let hist9 = ResidualHistogram::new(p2, &rows, -12.0, 2.0, 28);
        for (ki, kind) in ["normal", "friction", "rolling", "bilateral"]
            .iter()
            .enumerate()
        {
            for (b, c) in hist9.counts[ki].iter().enumerate() {
                fig9_csv.push(vec![
                    m.name().into(),
                    kind.to_string(),
                    format!("{:.2}", hist9.log10_min + b as f64 * hist9.bin_width),
                    c.to_string(),
                ]);
            }
        }
    }
    line_plot(
        &out.join("fig8_mean_residual.svg"),
        Axes::new(
            "mean residual during a solve after 1 s at N_it = 100 (Fig. 8)",
            "iteration",
            "mean residual",
        )
        .log_y(),
        &fig8b,
    )?;
    report::write_csv(
        &out.join("fig9_histogram.csv"),
        &["method", "kind", "log10_residual_bin_start", "count"],
        &fig9_csv,
    )?;
    let _ = fig8;
    Ok(())
}

/// The pile height error against the reference for every method and
/// N_it (`pile_height.csv`, Fig. 6): the report table and the errors by
/// method.
fn height_errors(
    out: &std::path::Path,
    methods: &[Method],
    grid: &[usize],
    done: &[(PileCase, f64, PileCost)],
    h_ref: f64,
) -> SuiteResult<(String, serde_json::Map<String, serde_json::Value>)> {
    let lookup = |case: PileCase| done.iter().find(|d| d.0 == case).map(|d| (d.1, d.2));
    let mut csv = Vec::new();
    let mut table = String::from("| method | ");
    table.push_str(
        &grid
            .iter()
            .map(|n| format!("N_it={n}"))
            .collect::<Vec<_>>()
            .join(" | "),
    );
    table.push_str(" |\n|---|");
    table.push_str(&"---|".repeat(grid.len()));
    table.push('\n');
    let mut series = Vec::new();
    let mut errors_json = serde_json::Map::new();
    for m in methods.iter() {
        let mut row = format!("| {} |", m.name());
        let mut pts = Vec::new();
        let mut errs = Vec::new();
        for n in grid.iter() {
            let Some((h, cost)) = lookup(PileCase::Run(*m, *n)) else {
                row.push_str(" — |");
                errs.push(f64::NAN);
                continue;
            };
            let e = (h_ref - h) / h_ref;
            row.push_str(&format!(" {:.2} % |", 100.0 * e));
            csv.push(vec![
                m.name().into(),
                n.to_string(),
                format!("{h:e}"),
                format!("{e:e}"),
                format!("{:.1}", cost.wall_s),
            ]);
            pts.push((*n as f64, e.abs().max(1e-6)));
            errs.push(e);
        }
        errors_json.insert(m.name().into(), json!(errs));
        table.push_str(&row);
        table.push('\n');
        series.push(Series::line(m.name(), pts));
    }
    report::write_csv(
        &out.join("pile_height.csv"),
        &["method", "n_it", "height_m", "eps_l", "wall_s"],
        &csv,
    )?;
    line_plot(
        &out.join("fig6_height_error.svg"),
        Axes::new(
            "pile height error against the reference (Fig. 6)",
            "N_it",
            "|eps_l|",
        )
        .log_x()
        .log_y(),
        &series,
    )?;
    Ok((table, errors_json))
}

/// A pile run's outcome: the case, its height and cost.
type PileDone = (PileCase, f64, PileCost);

/// All runs: their outcomes, the failures' messages, the resting pile of
/// the converged run.
type PileRuns = (Vec<PileDone>, Vec<String>, Option<(Scene, Stepper)>);

/// Runs every case in parallel. A case whose simulation diverged (a typed
/// solver error) is recorded as NaN with its message; the references and
/// the converged run (`converged_iterations`, history) must succeed, and
/// the latter's resting pile is kept for Figs. 7-9.
fn run_cases(
    cases: &[PileCase],
    (spec, rest, dt): (PileSpec, f64, f64),
    converged_iterations: usize,
    counter: &Counter,
) -> SuiteResult<PileRuns> {
    type Ran = (f64, PileCost, Option<(Scene, Stepper)>);
    let results: Vec<SuiteResult<Ran>> = cases
        .par_iter()
        .map(|&case| {
            let (label, r) = match case {
                PileCase::Reference(n) => (
                    format!("reference dt={REFERENCE_DT} N_it={n}"),
                    run_pile(
                        spec,
                        rest,
                        REFERENCE_DT,
                        Stopping::iterations(n),
                        Method::History,
                        Some("reference"),
                    ),
                ),
                PileCase::Run(m, n) => (
                    format!("{} N_it={n}", m.name()),
                    run_pile(spec, rest, dt, Stopping::iterations(n), m, None),
                ),
            };
            let keep = case == PileCase::Run(Method::History, converged_iterations);
            let r = r
                .map(|(s, st, cost)| (height(&s), cost, keep.then_some((s, st))))
                .map_err(|e| format!("pile run {label}: {e}"));
            if let Err(e) = &r {
                eprintln!("[warmstart pile] FAILED {e}");
            }
            counter.tick(&label);
            r
        })
        .collect();
    // A case whose simulation diverged (a typed solver error) is recorded as
    // NaN with its message; the references and the converged run must
    // succeed.
    let mut done: Vec<(PileCase, f64, PileCost)> = Vec::new();
    let mut failures = Vec::new();
    let mut resting = None;
    for (case, r) in cases.iter().zip(results) {
        match (case, r) {
            (_, Ok((h, cost, keep))) => {
                done.push((*case, h, cost));
                if keep.is_some() {
                    resting = keep;
                }
            }
            (PileCase::Run(_, n), Err(e)) if *n != converged_iterations => {
                failures.push(e);
                done.push((*case, f64::NAN, PileCost::default()));
            }
            (_, Err(e)) => return Err(e),
        }
    }
    Ok((done, failures, resting))
}

/// `cargo xtask warmstart pile`.
pub fn pile(opts: &SuiteOptions) -> SuiteResult<bool> {
    let out = &opts.out;
    report::prepare(out)?;
    let mut spec = if opts.quick {
        PileSpec {
            particles: 600,
            rate: 200.0,
            seed: 1,
        }
    } else {
        PileSpec {
            particles: 3363,
            rate: 200.0,
            seed: 1,
        }
    };
    if let Some(n) = opts.particles {
        spec.particles = n;
    }
    let rest = if opts.quick { 1.5 } else { 3.0 };
    let dt = 5e-3;
    let grid: Vec<usize> = if opts.quick {
        vec![5, 10, 20, 50, 100]
    } else {
        vec![5, 10, 20, 50, 100, 200]
    };
    let methods = [
        Method::Cold,
        Method::History,
        Method::HistoryNormal,
        Method::HistoryNoVelocity,
        Method::Model,
    ];
    // The Δt = 5 ms, N_it = 500 history run: the converged answer at the
    // experiments' time step, and the resting pile of Figs. 7-9.
    let converged_iterations = 500;
    let references: &[usize] = if opts.quick {
        &REFERENCE_ITERATIONS
    } else {
        &REFERENCE_ITERATIONS[..1]
    };
    let mut cases: Vec<PileCase> = references.iter().map(|&n| PileCase::Reference(n)).collect();
    cases.push(PileCase::Run(Method::History, converged_iterations));
    // The ablations (normal rows only, no velocity update, model-based) stop
    // at N_it = 100 in the full run: their point is made at low N_it, and
    // N_it = 200 for all five would add a quarter to the wall time.
    let grid_of = |m: Method| -> Vec<usize> {
        grid.iter()
            .copied()
            .filter(|&n| opts.quick || n <= 100 || matches!(m, Method::Cold | Method::History))
            .collect()
    };
    if std::env::var_os("NDEM_PILE_REFERENCE_ONLY").is_none() {
        for &m in &methods {
            cases.extend(grid_of(m).into_iter().map(|n| PileCase::Run(m, n)));
        }
    }
    let counter = Counter::new("warmstart pile", cases.len());
    let (done, failures, resting) =
        run_cases(&cases, (spec, rest, dt), converged_iterations, &counter)?;
    let lookup = |case: PileCase| done.iter().find(|d| d.0 == case).map(|d| (d.1, d.2));
    let (h_ref, ref_cost) = lookup(PileCase::Reference(references[0])).ok_or("no reference")?;
    let (h_conv, conv_cost) =
        lookup(PileCase::Run(Method::History, converged_iterations)).ok_or("no converged run")?;
    let reference_runs: Vec<serde_json::Value> = references
        .iter()
        .filter_map(|&n| {
            let (h, c) = lookup(PileCase::Reference(n))?;
            Some(
                json!({"n_it": n, "height_m": h, "relative_to_first": (h - h_ref) / h_ref,
                "steps": c.steps, "wall_s": c.wall_s}),
            )
        })
        .collect();
    let height_at = |mi: usize, gi: usize| {
        lookup(PileCase::Run(methods[mi], grid[gi])).map_or(f64::NAN, |r| r.0)
    };
    let (table, errors_json) = height_errors(out, &methods, &grid, &done, h_ref)?;
    // iterations needed for |ε| ≤ 2 % and 5 %
    let mut need = serde_json::Map::new();
    for (mi, m) in methods.iter().enumerate() {
        let errs: Vec<f64> = (0..grid.len())
            .map(|gi| (h_ref - height_at(mi, gi)) / h_ref)
            .collect();
        let mut by = serde_json::Map::new();
        for eps in [0.02, 0.05, 0.1] {
            by.insert(format!("{eps}"), json!(required(&grid, &errs, eps)));
        }
        need.insert(m.name().into(), json!(by));
    }

    figures_7_to_9(out, resting.ok_or("the converged run kept no pile")?, dt)?;
    let wall = counter.start.elapsed().as_secs_f64();
    let summary = json!({
        "suite": "warmstart pile", "quick": opts.quick,
        "particles": spec.particles, "rate_per_s": spec.rate, "rest_s": rest, "dt": dt,
        "reference": {"dt": REFERENCE_DT, "n_it": references[0], "warm_start": "history", "height_m": h_ref, "height_in_d": h_ref / builders::D,
            "steps": ref_cost.steps, "wall_s": ref_cost.wall_s, "runs": reference_runs},
        "converged_at_dt": {"dt": dt, "n_it": converged_iterations, "warm_start": "history", "height_m": h_conv,
            "eps_l": (h_ref - h_conv) / h_ref, "wall_s": conv_cost.wall_s},
        "iteration_grid": grid,
        "height_error_by_method": errors_json,
        "iterations_needed": need,
        "failed_runs": failures,
        "paper": {"history_all_rows": "about half the iterations of cold", "normal_only": "little gain", "no_velocity_update": "worse than cold", "reference_height_d": 15},
        "wall_time_s": wall,
    });
    report::write_summary(out, &summary)?;
    let md = format!(
        "# cargo xtask warmstart pile{}\n\nWarm-starting paper, section 4.2. {} particles (d = 13 mm) emitted at {} /s (1.5 m/s \
         downwards) from a source 3d wide, 20d above the floor, then {rest} s of rest after the last emission; Δt = 5 ms.\n\n\
         Reference: the paper's Δt = 0.2 ms with history warm start and {} PGS sweeps per step, i.e. {} sweeps per 5 ms of \
         simulated time (the paper: N_it = 500 at 0.2 ms, which would take a day here) ({} steps, {:.0} s); reference runs \
         (with more sweeps per step under `--quick`, the reference's own iteration error): {}. \
         Reference height {:.4} m = {:.1} d (paper: about 15 d for 3363 particles). The same pile at Δt = 5 ms with \
         N_it = 500 is {:.4} m, ε_l = {:.2} %: the part of every error below that does not come from the iterations.\n\n\
         Height: mean of the 5 highest sphere tops within 2d of the axis. Height error ε_l = (h_ref − h)/h_ref:\n\n{table}\n\n\
         Iterations needed for |ε_l| ≤ 2 % / 5 % / 10 % (`null`: not reached on the grid): {}\n\nPaper: history on all \
         rows needs about half the iterations of cold; normal rows only give little; without the velocity update warm \
         starting is worse than cold.\n\nFigures: `fig6_height_error.svg`, `fig7_multiplier_error.svg` (eq. 13 against \
         the cold solve's 500th iterate, on the resting Δt = 5 ms, N_it = 500 pile), `fig8_mean_residual.svg`; histogram \
         data (Fig. 9) in `fig9_histogram.csv`; heights and wall time per run in `pile_height.csv`. Wall time {wall:.0} s.\n",
        if opts.quick { " --quick" } else { "" },
        spec.particles,
        spec.rate,
        references[0],
        references[0] * 25,
        ref_cost.steps,
        ref_cost.wall_s,
        serde_json::to_string(&reference_runs).unwrap_or_default(),
        h_ref,
        h_ref / builders::D,
        h_conv,
        100.0 * (h_ref - h_conv) / h_ref,
        serde_json::to_string(&need).unwrap_or_default(),
    );
    report::write(&out.join("report.md"), &md)?;
    println!(
        "{table}\nreference height {h_ref:.4} m; needed: {}",
        serde_json::to_string(&need).unwrap_or_default()
    );
    Ok(true)
}

/// The mean residual against the iteration of one solve (Fig. 8).
fn mean_residual_series(name: &str, history: &ResidualHistory) -> Series {
    let points = history
        .entries
        .iter()
        .map(|e| (e.iteration as f64, e.stats.mean))
        .collect();
    Series::line(name, points)
}

//! `cargo xtask fclib [--quick] [FILES…]`: every solver on FCLIB problems
//! (the three files of `crates/ndem-fclib/tests/data/` by default), cold start; Coulomb merit against
//! sweeps and time; sweeps and time to 1e-6 and 1e-8 beside Siconos 4.4's
//! NSGS counts; a Dolan-Moré performance profile (fraction of problems
//! solved to 1e-8 within τ × the best time).

use crate::SuiteOptions;
use crate::plot::{self, Axes, Series};
use crate::report::{self, Progress, SuiteResult};
use ndem_solve::{
    LocalApgd, LocalGaussSeidel, LocalIteration, LocalProblem, LocalSolver, SemismoothNewton,
    Stopping,
};
use serde_json::json;
use std::path::PathBuf;

const SHARED: [(&str, Option<(usize, usize)>); 3] = [
    ("Box_Stacks-i0122-82-5.hdf5", Some((13, 23))),
    ("Spheres-i099-356-679.hdf5", Some((166, 234))),
    (
        "LMGC_100_PR_PerioBox-i00361-60-03000.hdf5",
        Some((513, 815)),
    ),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Nsgs,
    Pgs,
    Newton,
    Apgd,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Nsgs => "nsgs (exact local solve)",
            Method::Pgs => "pgs (one pass per contact)",
            Method::Newton => "semismooth newton",
            Method::Apgd => "apgd + De Saxcé fixed point",
        }
    }
}

struct Run {
    trace: Vec<(usize, f64, f64)>,
    merit: f64,
    status: String,
}

impl Method {
    fn solver(self, cap: usize) -> Box<dyn LocalSolver> {
        match self {
            Method::Nsgs | Method::Pgs => Box::new(LocalGaussSeidel {
                stopping: Stopping::to_tolerance(cap, 1e-10),
                local_iterations: if self == Method::Nsgs { 10 } else { 1 },
                ..LocalGaussSeidel::default()
            }),
            Method::Newton => Box::new(SemismoothNewton::default()),
            Method::Apgd => Box::new(LocalApgd::default()),
        }
    }
}

fn run(p: &LocalProblem, method: Method, cap: usize) -> SuiteResult<Run> {
    let mut r = vec![0.0; 3 * p.contacts()];
    let mut trace = vec![(0, 0.0, p.merit(&r))];
    // the observer's own time (the merit evaluation) is not in `elapsed`
    let mut record = |it: &LocalIteration<'_>| {
        trace.push((
            it.iteration,
            it.elapsed.as_secs_f64(),
            p.merit(it.reactions),
        ));
    };
    let rep = method
        .solver(cap)
        .solve_observed(p, &mut r, &mut record)
        .map_err(|e| e.to_string())?;
    Ok(Run {
        trace,
        merit: rep.merit,
        status: rep.status.name().to_string(),
    })
}

fn first_below(trace: &[(usize, f64, f64)], eps: f64) -> Option<(usize, f64)> {
    trace.iter().find(|t| t.2 <= eps).map(|t| (t.0, t.1))
}

/// `cargo xtask fclib`.
pub fn run_suite(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    let files: Vec<(PathBuf, Option<(usize, usize)>)> = if opts.args.len() > 1 {
        opts.args[1..]
            .iter()
            .map(|f| (PathBuf::from(f), None))
            .collect()
    } else {
        SHARED
            .iter()
            .map(|(f, s)| {
                (
                    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                        .join("../crates/ndem-fclib/tests/data")
                        .join(f),
                    *s,
                )
            })
            .collect()
    };
    let cap = if opts.quick { 2000 } else { 20_000 };
    let methods = [Method::Nsgs, Method::Pgs, Method::Newton, Method::Apgd];
    let mut progress = Progress::new("fclib", files.len() * methods.len());
    let mut rows = Vec::new();
    let mut table = String::from(
        "| problem | contacts | solver | status | merit reached | sweeps to 1e-6 | to 1e-8 | time to 1e-8 [ms] | Siconos NSGS 1e-6 / 1e-8 |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut times: Vec<Vec<Option<f64>>> = Vec::new();
    let mut trace_series = Vec::new();
    let mut results = Vec::new();
    for (path, siconos) in &files {
        let name = path
            .file_name()
            .map_or("problem".into(), |n| n.to_string_lossy().into_owned());
        let p = ndem_fclib::read(path)
            .map_err(|e| e.to_string())?
            .to_local()
            .map_err(|e| e.to_string())?;
        let mut row_times = Vec::new();
        for m in methods {
            let r = run(&p, m, cap)?;
            let (s6, s8) = (first_below(&r.trace, 1e-6), first_below(&r.trace, 1e-8));
            progress.tick(&format!("{name}: {} {} {:e}", m.name(), r.status, r.merit));
            table.push_str(&format!(
                "| {name} | {} | {} | {} | {:.1e} | {} | {} | {} | {} |\n",
                p.contacts(),
                m.name(),
                r.status,
                r.merit,
                s6.map_or("-".into(), |s| s.0.to_string()),
                s8.map_or("-".into(), |s| s.0.to_string()),
                s8.map_or("-".into(), |s| format!("{:.2}", s.1 * 1e3)),
                siconos.map_or("-".into(), |(a, b)| format!("{a} / {b}")),
            ));
            for &(k, t, merit) in &r.trace {
                rows.push(vec![
                    name.clone(),
                    m.name().into(),
                    k.to_string(),
                    format!("{t:e}"),
                    format!("{merit:e}"),
                ]);
            }
            trace_series.push(Series::line(
                format!("{name}: {}", m.name()),
                r.trace
                    .iter()
                    .filter(|t| t.2 > 0.0)
                    .map(|t| (t.1.max(1e-7), t.2))
                    .collect(),
            ));
            results.push(json!({
                "problem": name, "contacts": p.contacts(), "solver": m.name(), "status": r.status,
                "merit": r.merit, "sweeps_to_1e-6": s6.map(|s| s.0), "sweeps_to_1e-8": s8.map(|s| s.0),
                "seconds_to_1e-8": s8.map(|s| s.1), "siconos_nsgs": siconos.map(|(a, b)| [a, b]),
            }));
            row_times.push(s8.map(|s| s.1.max(1e-9)));
        }
        times.push(row_times);
    }
    report::write_csv(
        &opts.out.join("traces.csv"),
        &["problem", "solver", "iteration", "seconds", "merit"],
        &rows,
    )?;
    plot::line_plot(
        &opts.out.join("merit_vs_time.svg"),
        Axes {
            title: "Coulomb merit against solver time",
            x: "time [s] (log10)",
            y: "merit (log10)",
            log_x: true,
            log_y: true,
        },
        &trace_series,
    )?;
    // Dolan-Moré profile: ρ_s(τ) = fraction of problems solved by s within
    // τ × the best time on that problem
    let taus: Vec<f64> = (0..=60).map(|i| 10f64.powf(i as f64 / 20.0)).collect();
    let profile: Vec<Series> = methods
        .iter()
        .enumerate()
        .map(|(k, m)| {
            let pts = taus
                .iter()
                .map(|&tau| {
                    let solved = times
                        .iter()
                        .filter(|row| {
                            let best = row.iter().flatten().fold(f64::INFINITY, |a, &b| a.min(b));
                            row[k].is_some_and(|t| t <= tau * best)
                        })
                        .count();
                    (tau, solved as f64 / times.len().max(1) as f64)
                })
                .collect();
            Series::line(m.name(), pts)
        })
        .collect();
    plot::line_plot(
        &opts.out.join("performance_profile.svg"),
        Axes {
            title: "Performance profile (merit 1e-8)",
            x: "τ (log10): within τ × the best time",
            y: "fraction of problems solved",
            log_x: true,
            log_y: false,
        },
        &profile,
    )?;
    let summary = json!({
        "suite": "fclib", "quick": opts.quick, "sweep_cap": cap, "results": results,
        "wall_time_s": progress.elapsed(),
    });
    report::write_summary(&opts.out, &summary)?;
    let md = format!(
        "# cargo xtask fclib{}\n\nEach problem solved from a cold start by every solver (sweep cap {cap}; Newton 100 \
         iterations; APGD 50 outer fixed-point iterations of up to 20 000 inner ones). Merit: FCLIB's Coulomb natural-map error with De Saxcé's modified velocity, \
         E = ‖r − P_K(r − û)‖/(1 + ‖q‖).\n\n{table}\n\
         Siconos 4.4's NSGS (exact local solves) from `crates/ndem-fclib/tests/data/README.md`. Plots: `merit_vs_time.svg`, \
         `performance_profile.svg` (Dolan-Moré, merit 1e-8). Data: `traces.csv`, `summary.json`.\n",
        if opts.quick { " --quick" } else { "" },
    );
    report::write(&opts.out.join("report.md"), &md)?;
    println!("{table}");
    Ok(true)
}

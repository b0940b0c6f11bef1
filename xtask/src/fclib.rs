//! `cargo xtask fclib [--quick] [FILES…]`: every solver on FCLIB problems
//! (by default the three files of `crates/ndem-fclib/tests/data/` and two
//! generated problems with a known solution, rank deficient, one with a
//! non-symmetric `W`, written as FCLIB files beside the report), cold
//! start; Coulomb merit against sweeps and time; sweeps and time to 1e-6
//! and 1e-8 beside Siconos 4.4's NSGS counts; a Dolan-Moré performance
//! profile (fraction of problems solved to 1e-8 within τ × the best time).
//! A file that cannot be read, or a solver that refuses a problem, is a
//! row of the report and the suite goes on.

use crate::SuiteOptions;
use crate::plot::{self, Axes, Series};
use crate::report::{self, Progress, SuiteResult};
use ndem_solve::{
    LocalApgd, LocalGaussSeidel, LocalIteration, LocalPortfolio, LocalProblem, LocalSolver,
    ProximalPoint, SemismoothNewton, Stopping,
};
use ndem_testkit::generate::{ManufacturedSpec, manufactured_local_problem};
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
    Prox,
    Apgd,
    Portfolio,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Nsgs => "nsgs (exact local solve)",
            Method::Pgs => "pgs (one pass per contact)",
            Method::Newton => "semismooth newton",
            Method::Prox => "proximal point (inner newton)",
            Method::Apgd => "apgd + De Saxcé fixed point",
            Method::Portfolio => "portfolio (nsgs, newton, prox)",
        }
    }
}

struct Run {
    trace: Vec<(usize, f64, f64)>,
    merit: f64,
    status: String,
    /// The solver that answered (the portfolio's stage).
    answered: &'static str,
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
            Method::Prox => Box::new(ProximalPoint::default()),
            Method::Apgd => Box::new(LocalApgd::default()),
            Method::Portfolio => Box::new(LocalPortfolio {
                tolerance: 1e-10,
                ..LocalPortfolio::default()
            }),
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
        answered: rep.solver,
    })
}

fn first_below(trace: &[(usize, f64, f64)], eps: f64) -> Option<(usize, f64)> {
    trace.iter().find(|t| t.2 <= eps).map(|t| (t.0, t.1))
}

/// `cargo xtask fclib`.
pub fn run_suite(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    let sources = problems(opts)?;
    let cap = if opts.quick { 2000 } else { 20_000 };
    let methods = [
        Method::Nsgs,
        Method::Pgs,
        Method::Newton,
        Method::Prox,
        Method::Apgd,
        Method::Portfolio,
    ];
    let mut progress = Progress::new("fclib", sources.len() * methods.len());
    let mut rows = Vec::new();
    let mut table = String::from(
        "| problem | contacts | solver | status | merit reached | sweeps to 1e-6 | to 1e-8 | time to 1e-8 [ms] | Siconos NSGS 1e-6 / 1e-8 |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut times: Vec<Vec<Option<f64>>> = Vec::new();
    let mut trace_series = Vec::new();
    let mut results = Vec::new();
    for (name, loaded, siconos) in sources {
        let p = match loaded {
            Ok(p) => p,
            Err(why) => {
                for _ in methods {
                    progress.tick(&format!("{name}: refused"));
                }
                table.push_str(&format!(
                    "| {name} | - | - | refused: {why} | - | - | - | - | - |\n"
                ));
                results.push(json!({"problem": name, "error": why}));
                continue;
            }
        };
        let mut row_times = Vec::new();
        for m in methods {
            let r = match run(&p, m, cap) {
                Ok(r) => r,
                Err(why) => {
                    progress.tick(&format!("{name}: {} refused", m.name()));
                    table.push_str(&format!(
                        "| {name} | {} | {} | refused: {why} | - | - | - | - | - |\n",
                        p.contacts(),
                        m.name()
                    ));
                    results.push(json!({"problem": name, "solver": m.name(), "error": why}));
                    row_times.push(None);
                    continue;
                }
            };
            let (s6, s8) = (first_below(&r.trace, 1e-6), first_below(&r.trace, 1e-8));
            progress.tick(&format!("{name}: {} {} {:e}", m.name(), r.status, r.merit));
            table.push_str(&format!(
                "| {name} | {} | {} | {} | {:.1e} | {} | {} | {} | {} |\n",
                p.contacts(),
                m.name(),
                if m == Method::Portfolio {
                    format!("{} ({})", r.status, r.answered)
                } else {
                    r.status.clone()
                },
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
                "answered_by": r.answered, "symmetric": p.is_symmetric(),
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
        Axes::new(
            "Coulomb merit against solver time",
            "time [s] (log10)",
            "merit (log10)",
        )
        .log_x()
        .log_y(),
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
        Axes::new(
            "Performance profile (merit 1e-8)",
            "τ (log10): within τ × the best time",
            "fraction of problems solved",
        )
        .log_x(),
        &profile,
    )?;
    let summary = json!({
        "suite": "fclib", "quick": opts.quick, "sweep_cap": cap, "results": results,
        "wall_time_s": progress.elapsed(),
    });
    report::write_summary(&opts.out, &summary)?;
    let md = format!(
        "# cargo xtask fclib{}\n\nEach problem solved from a cold start by every solver (sweep cap {cap}; Newton 100 \
         iterations; proximal point 200 outer iterations of up to 30 Newton ones; APGD 50 outer fixed-point iterations of \
         up to 20 000 inner ones; the portfolio to 1e-10, naming the stage that answered). `generated-*` problems have a \
         known solution (`ndem_testkit::generate::manufactured_local_problem`, 8 bodies, 40 contacts: W of rank at most 48 \
         of 120) and are written beside this report as FCLIB files. Merit: FCLIB's Coulomb natural-map error with De Saxcé's modified velocity, \
         E = ‖r − P_K(r − û)‖/(1 + ‖q‖).\n\n{table}\n\
         Siconos 4.4's NSGS (exact local solves) from `crates/ndem-fclib/tests/data/README.md`. Plots: `merit_vs_time.svg`, \
         `performance_profile.svg` (Dolan-Moré, merit 1e-8). Data: `traces.csv`, `summary.json`.\n",
        if opts.quick { " --quick" } else { "" },
    );
    report::write(&opts.out.join("report.md"), &md)?;
    println!("{table}");
    Ok(true)
}

/// The problems of a run: the files given, or the three of the test data
/// and two generated ones (written as FCLIB files to the output folder).
/// Each with its name, the problem or why it cannot be read, and
/// Siconos' NSGS counts where known.
type Source = (String, Result<LocalProblem, String>, Option<(usize, usize)>);

fn problems(opts: &SuiteOptions) -> SuiteResult<Vec<Source>> {
    let read = |path: &PathBuf| -> Result<LocalProblem, String> {
        ndem_fclib::read(path)
            .map_err(|e| e.to_string())?
            .to_local()
            .map_err(|e| e.to_string())
    };
    let file_name = |path: &PathBuf| {
        path.file_name()
            .map_or("problem".into(), |n| n.to_string_lossy().into_owned())
    };
    if opts.args.len() > 1 {
        return Ok(opts.args[1..]
            .iter()
            .map(|f| {
                let path = PathBuf::from(f);
                (file_name(&path), read(&path), None)
            })
            .collect());
    }
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../crates/ndem-fclib/tests/data");
    let mut out: Vec<Source> = SHARED
        .iter()
        .map(|(f, s)| {
            let path = data.join(f);
            (file_name(&path), read(&path), *s)
        })
        .collect();
    for (name, asymmetry) in [
        ("generated-rank-deficient.hdf5", 0.0),
        ("generated-nonsymmetric.hdf5", 0.3),
    ] {
        let spec = ManufacturedSpec {
            asymmetry,
            ..ManufacturedSpec::default()
        };
        let (p, _) = manufactured_local_problem(&spec).map_err(|e| e.to_string())?;
        ndem_fclib::write_local(&opts.out.join(name), &p).map_err(|e| e.to_string())?;
        out.push((name.into(), Ok(p), None));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that cannot be read is a row of the report, and the suite
    /// runs the other files and writes its report.
    #[test]
    fn a_refused_file_is_a_row_and_the_report_is_written() {
        let out = std::env::temp_dir().join(format!("ndem-xtask-fclib-{}", std::process::id()));
        let data =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../crates/ndem-fclib/tests/data");
        let opts = SuiteOptions {
            out: out.clone(),
            quick: true,
            args: vec![
                "fclib".into(),
                out.join("no-such-problem.hdf5").display().to_string(),
                data.join(SHARED[0].0).display().to_string(),
            ],
            particles: None,
            repeats: None,
            seed: None,
        };
        run_suite(&opts).unwrap();
        let report = std::fs::read_to_string(out.join("report.md")).unwrap();
        let _ = std::fs::remove_dir_all(&out);
        assert!(
            report.contains("| no-such-problem.hdf5 | - | - | refused: "),
            "{report}"
        );
        assert!(
            report.contains("| Box_Stacks-i0122-82-5.hdf5 | 82 | portfolio"),
            "{report}"
        );
    }
}

//! `cargo xtask fuzz [--quick] [--cases N] [--seed N]`: mutated scene files and
//! checkpoints fed to the loaders and a few steps of the stepper
//! (`ndem_cli::fuzz`); every case must end in a result or a typed error.
//! Writes the distinct error messages reached, every panic with its input
//! (and a case that runs for a minute, with its input, ending the run),
//! `summary.json` and `report.md`.

use crate::SuiteOptions;
use crate::report::{self, Progress, SuiteResult};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A case that has not ended after this long is reported as a hang.
const HANG_SECONDS: u64 = 60;

/// The watch's counter once every case has ended: what follows (the
/// report) is not a case.
const ALL_DONE: usize = usize::MAX;

/// Starts a thread that watches the cases finished (the returned counter):
/// when one case runs for [`HANG_SECONDS`], it writes that case's input
/// (`hang_<case>_<kind>.txt` in `out`), says so, and ends the process with
/// a failure, so that a case that never ends is a finding with its input
/// instead of a suite that stops making progress (for example
/// `run.impact_iterations = 2⁶⁴ − 1` without its check). Storing [`ALL_DONE`] in the counter
/// ends the watch.
fn watch_for_hangs(out: &Path, seed: u64, steps: usize) -> Arc<AtomicUsize> {
    let done = Arc::new(AtomicUsize::new(0));
    let (watched, out) = (Arc::clone(&done), out.to_path_buf());
    std::thread::spawn(move || {
        let mut last = (0, Instant::now());
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let k = watched.load(Ordering::Relaxed);
            if k == ALL_DONE {
                return;
            }
            if k != last.0 {
                last = (k, Instant::now());
                continue;
            }
            if last.1.elapsed() >= Duration::from_secs(HANG_SECONDS) {
                let corpus = ndem_cli::fuzz::corpus();
                let (kind, input) = ndem_cli::fuzz::case_input(&corpus, seed, k);
                let file = out.join(format!("hang_{k:06}_{kind}.txt"));
                let _ = std::fs::write(&file, &input);
                eprintln!(
                    "fuzz: case {k} ({kind}, {steps} steps) has run for {HANG_SECONDS} s: its input is in {}",
                    file.display()
                );
                std::process::exit(1);
            }
        }
    });
    done
}

/// `cargo xtask fuzz`.
pub fn run(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    let default: usize = if opts.quick { 5_000 } else { 100_000 };
    let cases: usize = match opts.args.iter().position(|a| a == "--cases") {
        Some(i) => opts
            .args
            .get(i + 1)
            .and_then(|n| n.parse().ok())
            .ok_or("--cases needs a number")?,
        None => default,
    };
    // `--seed S`: case k takes seed S + k (default 1); a range of cases
    // not run before starts past the last one's seed
    let (seed, steps) = (opts.seed.unwrap_or(1), 3);
    // progress in blocks of 1000 cases
    let blocks = cases.div_ceil(1000);
    let mut progress = Progress::new("fuzz (blocks of 1000 cases)", blocks);
    let start = Instant::now();
    let done = watch_for_hangs(&opts.out, seed, steps);
    let rep = ndem_cli::fuzz::fuzz(cases, seed, steps, &mut |k, r| {
        done.store(k + 1, Ordering::Relaxed);
        if (k + 1).is_multiple_of(1000) || k + 1 == cases {
            progress.tick(&format!(
                "{} cases: {} panics, {} distinct errors",
                k + 1,
                r.panics.len(),
                r.distinct_errors.len()
            ));
        }
    });
    done.store(ALL_DONE, Ordering::Relaxed);
    let seconds = start.elapsed().as_secs_f64();
    let errors: Vec<Vec<String>> = rep
        .distinct_errors
        .iter()
        .map(|e| vec![e.replace(',', ";")])
        .collect();
    report::write_csv(&opts.out.join("errors.csv"), &["error"], &errors)?;
    for (k, kind, message, input) in &rep.panics {
        report::write(
            &opts.out.join(format!("panic_{k:06}_{kind}.txt")),
            &format!("{message}\n---\n{input}"),
        )?;
    }
    let summary = json!({
        "cases": rep.cases,
        "seed": seed,
        "steps_per_case": steps,
        "accepted": rep.accepted,
        "distinct_errors": rep.distinct_errors.len(),
        "panics": rep.panics.len(),
        "seconds": seconds,
        "corpus": ["column (4 spheres)", "beam", "pile (30 spheres, emitter)", "conveyor (belt mesh, emitter)", "column with two materials, a [[pairs]] entry and [reduction]", "checkpoints of the five after 5 steps"],
    });
    report::write_summary(&opts.out, &summary)?;
    let mut md = report::heading("cargo xtask fuzz", opts.quick);
    md.push_str(&format!(
        "{} mutated inputs (byte flips, truncations, numbers replaced by extremes or other types, lines dropped or doubled; seed {seed}) of scene files and checkpoints of small scenes, each loaded and stepped {steps} times.\n\n\
         | cases | loaded and stepped | distinct error messages | panics | time [s] |\n|---|---|---|---|---|\n| {} | {} | {} | {} | {seconds:.1} |\n\n\
         The error messages are in `errors.csv` (digits masked); each panic, with its input, in `panic_*.txt`.\n",
        rep.cases,
        rep.cases,
        rep.accepted,
        rep.distinct_errors.len(),
        rep.panics.len()
    ));
    report::write(&opts.out.join("report.md"), &md)?;
    println!(
        "fuzz: {} cases, {} panics, {} distinct errors, {seconds:.1} s",
        rep.cases,
        rep.panics.len(),
        rep.distinct_errors.len()
    );
    Ok(rep.panics.is_empty())
}

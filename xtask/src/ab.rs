//! `cargo xtask ab [BASE] [--threads N] [--steps N] [--callgrind]
//! [--particles N] [--repeats N] [--quick]`: the `ndem` command built from
//! git revision `BASE` (default `HEAD`) against the working tree, on one
//! settled bed, in one run.
//!
//! Why: a change to a kernel is judged by what it does to the step, and
//! this project's host is shared and noisy (the same binary's continuous
//! stage swings by up to 35 % between runs, `docs/performance.md`). The
//! suite compares two builds reproducibly:
//!
//! 1. builds `ndem` at `BASE` (a detached git worktree in
//!    `target/xtask-ab-base/src` with its target folder beside it, both
//!    kept between calls, so that a call rebuilds only the crates whose
//!    files differ from the last call's revision) and from the working
//!    tree;
//! 2. settles the built-in `packing` bed with the base build
//!    (`pgs-coloured`, 25 sweeps, `--threads`) and keeps its checkpoint
//!    (written by the base: a build reads the checkpoints of the versions
//!    before it);
//! 3. resumes that checkpoint with each build in turn, `--repeats` times
//!    in the order ABBA… (a drift of the host then weighs on both), with
//!    the load average before each run and the host probe
//!    ([`crate::host`]) before and after them; reports each stage's mean time per
//!    step, the minimum over the repeats, the ratio of the minima, and in
//!    how many pairs the working tree was faster;
//! 4. compares every run's statistics (`stats.csv`, all columns but the
//!    timings) with the first base run's: whether the change leaves the
//!    trajectory bit for bit;
//! 5. replays every built-in scene with each build (one thread, a
//!    statistics line every step, [`REPLAY_STEPS`]) and compares the
//!    statistics the same way: a layout change must give bit-identical
//!    single-thread replays of the built-in scenes;
//! 6. with `--callgrind`, runs each build once under `valgrind
//!    --tool=callgrind` for a few steps and reports the inclusive
//!    instruction counts of the functions that take at least 0.5 % of
//!    either run: stable where the timings are not.
//!
//! Writes `runs.csv`, `runs.svg`, `replays.csv`, `callgrind.csv` (with
//! `--callgrind`), `summary.json` and `report.md`.

use crate::SuiteOptions;
use crate::plot::{Axes, Series, line_plot};
use crate::report::{self, Progress, SuiteResult};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The stage columns of `stats.csv` the suite times, with their names in
/// the report.
const STAGES: [(&str, &str); 5] = [
    ("t_detection_s", "detection"),
    ("t_assembly_s", "assembly"),
    ("t_impact_s", "impact"),
    ("t_continuous_s", "continuous"),
    ("t_total_s", "step"),
];

/// Steps of each built-in scene's replay: 60, or as many as the scene
/// needs before most of its bodies touch (the pile is emitted from 20 d
/// above its floor) or a step costs seconds (the excavator).
const REPLAY_STEPS: [(&str, usize); 2] = [("pile", 200), ("excavator", 30)];

/// The continuous stage's and the whole step's places in [`STAGES`].
const CONTINUOUS: usize = 3;
const STEP: usize = 4;

/// Functions below this share of a callgrind run (in both builds) are
/// left out of the report.
const CALLGRIND_SHARE: f64 = 0.005;

/// What the command line asks of the suite beyond [`SuiteOptions`].
#[derive(Debug, Clone, PartialEq)]
struct AbArgs {
    /// Git revision of the base build.
    base: String,
    /// Threads of the settled bed's scene (and so of every resumed run).
    threads: usize,
    /// Steps of each timed run; `None`: the size's default.
    steps: Option<usize>,
    /// Whether to count instructions with callgrind as well.
    callgrind: bool,
}

fn parse_args(args: &[String]) -> SuiteResult<AbArgs> {
    let mut parsed = AbArgs {
        base: "HEAD".into(),
        threads: 1,
        steps: None,
        callgrind: false,
    };
    let mut base_given = false;
    let mut args = args.iter();
    while let Some(a) = args.next() {
        let mut number = |flag: &str| -> SuiteResult<usize> {
            args.next()
                .and_then(|n| n.parse().ok())
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{flag} needs a positive number"))
        };
        match a.as_str() {
            "--threads" => parsed.threads = number("--threads")?,
            "--steps" => parsed.steps = Some(number("--steps")?),
            "--callgrind" => parsed.callgrind = true,
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            rev if !base_given => {
                parsed.base = rev.into();
                base_given = true;
            }
            extra => return Err(format!("a second base revision `{extra}`")),
        }
    }
    Ok(parsed)
}

/// The suite's sizes: particles, settling steps, timed steps, repeats.
fn sizes(opts: &SuiteOptions, args: &AbArgs) -> (usize, usize, usize, usize) {
    let (particles, settle, steps, repeats) = if opts.quick {
        (10_000, 100, 20, 3)
    } else {
        (30_000, 200, 20, 5)
    };
    (
        opts.particles.unwrap_or(particles),
        settle,
        args.steps.unwrap_or(steps),
        opts.repeats.unwrap_or(repeats),
    )
}

/// One build of `ndem`: its label, commit, whether the tree it came from
/// had uncommitted changes, and the binary (copied into the output).
#[derive(Debug, Clone)]
struct Build {
    label: &'static str,
    commit: String,
    dirty: bool,
    binary: PathBuf,
}

fn git(dir: &Path, args: &[&str]) -> SuiteResult<String> {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `cargo build --release -p ndem-cli` in `dir`, into `target` when given.
fn cargo_build(dir: &Path, target: Option<&Path>) -> SuiteResult<()> {
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo
        .current_dir(dir)
        .args(["build", "--release", "-q", "-p", "ndem-cli"]);
    if let Some(t) = target {
        cargo.env("CARGO_TARGET_DIR", t);
    }
    let status = cargo
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("building ndem in {} failed", dir.display()));
    }
    Ok(())
}

fn copy_binary(from: &Path, to: &Path) -> SuiteResult<PathBuf> {
    std::fs::copy(from, to)
        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))?;
    Ok(to.to_path_buf())
}

/// The working tree's build.
fn build_head(root: &Path, out: &Path) -> SuiteResult<Build> {
    cargo_build(root, None)?;
    Ok(Build {
        label: "head",
        commit: git(root, &["rev-parse", "HEAD"])?,
        dirty: !git(root, &["status", "--porcelain", "--untracked-files=no"])?.is_empty(),
        binary: copy_binary(&root.join("target/release/ndem"), &out.join("ndem-head"))?,
    })
}

/// The build of revision `rev`, from a detached worktree kept between
/// calls in `target/xtask-ab-base/src` beside its target folder: checking
/// out another revision there rewrites only the files that differ, so
/// cargo rebuilds only the crates they belong to (a worktree made afresh
/// gave every file a new modification time and cost a full rebuild of
/// the workspace, 36 s, on every call). A folder that is not a usable
/// worktree (removed, interrupted) is made afresh.
fn build_base(root: &Path, out: &Path, rev: &str) -> SuiteResult<Build> {
    let commit = git(
        root,
        &["rev-parse", "--verify", &format!("{rev}^{{commit}}")],
    )?;
    let target = root.join("target/xtask-ab-base");
    let tree = target.join("src");
    let tree_text = tree.to_string_lossy().into_owned();
    let reused = tree.join(".git").is_file()
        && git(
            &tree,
            &["checkout", "--quiet", "--force", "--detach", &commit],
        )
        .is_ok()
        && git(&tree, &["clean", "--quiet", "--force", "-d"]).is_ok();
    if !reused {
        if tree.exists() {
            let _ = git(root, &["worktree", "remove", "--force", &tree_text]);
            let _ = std::fs::remove_dir_all(&tree);
        }
        // a worktree whose folder is gone is still registered until pruned
        git(root, &["worktree", "prune"])?;
        git(root, &["worktree", "add", "--detach", &tree_text, &commit])?;
    }
    cargo_build(&tree, Some(&target))?;
    let binary = copy_binary(&target.join("release/ndem"), &out.join("ndem-base"))?;
    Ok(Build {
        label: "base",
        commit,
        dirty: false,
        binary,
    })
}

/// The first 12 characters of a commit's name.
fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// Runs `ndem` with `args`; an error carries the end of its stderr.
fn ndem(binary: &Path, args: &[String]) -> SuiteResult<()> {
    let out = Command::new(binary)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(5).collect();
        return Err(format!(
            "{} {} failed: {}",
            binary.display(),
            args.join(" "),
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ));
    }
    Ok(())
}

/// Settles the `packing` bed with `binary` and returns its checkpoint.
fn settle(
    binary: &Path,
    out: &Path,
    (particles, steps, threads): (usize, usize, usize),
) -> SuiteResult<PathBuf> {
    let dir = out.join("settle");
    let args = [
        "run",
        "packing",
        "--particles",
        &particles.to_string(),
        "--steps",
        &steps.to_string(),
        "--checkpoint-every",
        &steps.to_string(),
        "--stats-every",
        &steps.to_string(),
        "--frame-every",
        "0",
        "--iterations",
        "25",
        "--solver",
        "pgs-coloured",
        "--threads",
        &threads.to_string(),
        "--out",
        &dir.to_string_lossy(),
        "--overwrite",
    ]
    .map(String::from);
    ndem(binary, &args)?;
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("checkpoint_"))
        })
        .collect();
    found.sort();
    found
        .pop()
        .ok_or_else(|| format!("no checkpoint in {}", dir.display()))
}

/// `ndem <command> --steps N`, a statistics line every step and no
/// frames, into `dir`; returns its `stats.csv`.
fn statistics_of(
    binary: &Path,
    command: &[String],
    steps: usize,
    dir: &Path,
) -> SuiteResult<String> {
    let mut args = command.to_vec();
    args.extend(
        [
            "--steps",
            &steps.to_string(),
            "--stats-every",
            "1",
            "--frame-every",
            "0",
            "--out",
            &dir.to_string_lossy(),
            "--overwrite",
        ]
        .map(String::from),
    );
    ndem(binary, &args)?;
    let path = dir.join("stats.csv");
    std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// One timed run: each stage's mean time per step \[s\], the continuous
/// stage per contact-iteration \[ns\], and the statistics without timings.
#[derive(Debug, Clone)]
struct Timed {
    label: &'static str,
    repeat: usize,
    load: f64,
    steps: usize,
    contacts: f64,
    stages: [f64; STAGES.len()],
    continuous_ns: f64,
    trajectory: String,
}

/// Reads `stats.csv`: the means of a run and its columns without timings.
fn parse_stats(text: &str) -> SuiteResult<(usize, f64, [f64; STAGES.len()], f64, String)> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty stats.csv")?.split(',').collect();
    let column = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| format!("stats.csv has no column {name}"))
    };
    let stage_cols: Vec<usize> = STAGES
        .iter()
        .map(|(c, _)| column(c))
        .collect::<Result<_, _>>()?;
    let (contacts_col, iterations_col) = (column("contacts")?, column("iterations")?);
    let kept: Vec<usize> = (0..header.len())
        .filter(|&k| !header[k].starts_with("t_"))
        .collect();
    let (mut sums, mut contacts, mut contact_iterations) = ([0.0; STAGES.len()], 0.0, 0.0);
    let mut trajectory = String::new();
    let mut steps = 0;
    for line in lines.filter(|l| !l.is_empty()) {
        let cells: Vec<&str> = line.split(',').collect();
        let number = |k: usize| -> SuiteResult<f64> {
            cells
                .get(k)
                .and_then(|c| c.parse().ok())
                .ok_or_else(|| format!("stats.csv: bad cell {k} in `{line}`"))
        };
        for (s, &k) in sums.iter_mut().zip(&stage_cols) {
            *s += number(k)?;
        }
        contacts += number(contacts_col)?;
        contact_iterations += number(contacts_col)? * number(iterations_col)?;
        let row: Vec<&str> = kept
            .iter()
            .map(|&k| cells.get(k).copied().unwrap_or(""))
            .collect();
        trajectory.push_str(&row.join(","));
        trajectory.push('\n');
        steps += 1;
    }
    if steps == 0 {
        return Err("stats.csv has no steps".into());
    }
    let continuous_ns = sums[CONTINUOUS] * 1e9 / contact_iterations.max(1.0);
    let means = sums.map(|s| s / steps as f64);
    Ok((
        steps,
        contacts / steps as f64,
        means,
        continuous_ns,
        trajectory,
    ))
}

/// Resumes `checkpoint` with `build` for `steps` steps.
fn timed_run(
    build: &Build,
    checkpoint: &Path,
    out: &Path,
    (repeat, steps): (usize, usize),
) -> SuiteResult<Timed> {
    let dir = out.join(format!("runs/{}-{repeat}", build.label));
    let load = report::load_average()
        .split_whitespace()
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or(f64::NAN);
    let command = ["resume".to_string(), checkpoint.to_string_lossy().into()];
    let text = statistics_of(&build.binary, &command, steps, &dir)?;
    let (steps, contacts, stages, continuous_ns, trajectory) = parse_stats(&text)?;
    Ok(Timed {
        label: build.label,
        repeat,
        load,
        steps,
        contacts,
        stages,
        continuous_ns,
        trajectory,
    })
}

/// The first line where two runs' statistics differ, if any.
fn first_difference(a: &str, b: &str) -> Option<String> {
    let (mut la, mut lb) = (a.lines(), b.lines());
    for step in 0.. {
        match (la.next(), lb.next()) {
            (None, None) => return None,
            (x, y) if x == y => {}
            (x, y) => {
                return Some(format!(
                    "row {step}: `{}` against `{}`",
                    x.unwrap_or("(none)"),
                    y.unwrap_or("(none)")
                ));
            }
        }
    }
    None
}

/// One built-in scene replayed by both builds: its statistics rows and
/// the first difference, if any (or the error of a build that failed).
#[derive(Debug, Clone)]
struct Replay {
    scene: String,
    rows: usize,
    outcome: Result<Option<String>, String>,
}

/// The built-in scenes `binary` lists.
fn scene_names(binary: &Path) -> SuiteResult<Vec<String>> {
    let out = Command::new(binary)
        .arg("list")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect())
}

/// The statistics of `scene` replayed by `build` (without timings).
fn replay_one(build: &Build, scene: &str, out: &Path) -> SuiteResult<(usize, String)> {
    let steps = REPLAY_STEPS
        .iter()
        .find(|(s, _)| *s == scene)
        .map_or(60, |(_, n)| *n);
    let dir = out.join(format!("replay/{}/{scene}", build.label));
    let command = ["run", scene, "--threads", "1"].map(String::from);
    let text = statistics_of(&build.binary, &command, steps, &dir)?;
    let (rows, _, _, _, trajectory) = parse_stats(&text)?;
    Ok((rows, trajectory))
}

/// Every built-in scene of the working tree's build, replayed by both.
fn replays(
    builds: (&Build, &Build),
    out: &Path,
    progress: &mut Progress,
) -> SuiteResult<Vec<Replay>> {
    let (base, head) = builds;
    let mut done = Vec::new();
    for scene in scene_names(&head.binary)? {
        let outcome = replay_one(base, &scene, out).and_then(|(rows_b, b)| {
            let (rows_h, h) = replay_one(head, &scene, out)?;
            Ok((rows_b.max(rows_h), first_difference(&b, &h)))
        });
        let (rows, outcome) = match outcome {
            Ok((rows, diff)) => (rows, Ok(diff)),
            Err(e) => (0, Err(e)),
        };
        progress.note(&format!(
            "replay {scene}: {}",
            match &outcome {
                Ok(None) => "identical".to_string(),
                Ok(Some(d)) => format!("differs at {d}"),
                Err(e) => format!("failed: {e}"),
            }
        ));
        done.push(Replay {
            scene,
            rows,
            outcome,
        });
    }
    Ok(done)
}

/// Inclusive instructions by function name.
type Counts = std::collections::BTreeMap<String, u64>;

/// Inclusive instruction counts by function of one callgrind run of
/// `build` on `checkpoint` (`None` when valgrind is not installed).
fn callgrind(
    build: &Build,
    checkpoint: &Path,
    out: &Path,
    steps: usize,
) -> SuiteResult<Option<Counts>> {
    if Command::new("valgrind").arg("--version").output().is_err() {
        return Ok(None);
    }
    let file = out.join(format!("callgrind-{}.out", build.label));
    let dir = out.join(format!("runs/{}-callgrind", build.label));
    let status = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", file.display()))
        .arg(&build.binary)
        .args(["resume", &checkpoint.to_string_lossy(), "--steps"])
        .arg(steps.to_string())
        .args([
            "--stats-every",
            "1",
            "--frame-every",
            "0",
            "--overwrite",
            "--out",
        ])
        .arg(&dir)
        .output()
        .map_err(|e| format!("cannot run valgrind: {e}"))?;
    if !status.status.success() {
        return Err(format!("callgrind of the {} build failed", build.label));
    }
    let annotated = Command::new("callgrind_annotate")
        .args(["--inclusive=yes", "--auto=no", "--threshold=100"])
        .arg(&file)
        .output()
        .map_err(|e| format!("cannot run callgrind_annotate: {e}"))?;
    Ok(Some(parse_annotate(&String::from_utf8_lossy(
        &annotated.stdout,
    ))))
}

/// `(function, inclusive instructions)` from `callgrind_annotate
/// --inclusive=yes` output, one entry per function name (the largest of
/// its lines: callgrind splits a function by the source file of inlined
/// code, and the file paths of two worktrees differ).
fn parse_annotate(text: &str) -> Counts {
    let mut by_name = Counts::new();
    for line in text.lines() {
        let line = line.trim_start();
        let Some((count, rest)) = line.split_once(' ') else {
            continue;
        };
        let Ok(count) = count.replace(',', "").parse::<u64>() else {
            continue;
        };
        // `N (x%)  file:function [binary]`
        let rest = rest.trim_start();
        let rest = rest.split_once(")  ").map_or(rest, |(_, r)| r);
        let location = rest.rsplit_once(" [").map_or(rest, |(l, _)| l);
        let name = match location.split_once(".rs:") {
            Some((_, f)) => f,
            None => location.split_once(':').map_or(location, |(_, f)| f),
        };
        let entry = by_name.entry(name.trim().to_string()).or_default();
        *entry = (*entry).max(count);
    }
    by_name
}

/// Rows of `(function, base, head)` for the functions that take at least
/// [`CALLGRIND_SHARE`] of either run, largest first.
fn callgrind_rows(base: &Counts, head: &Counts) -> Vec<(String, u64, u64)> {
    let total = |v: &Counts| v.values().copied().max().unwrap_or(1) as f64;
    let (tb, th) = (total(base), total(head));
    let count = |v: &Counts, name: &str| v.get(name).copied().unwrap_or(0);
    let names: std::collections::BTreeSet<&String> = base.keys().chain(head.keys()).collect();
    let mut rows: Vec<(String, u64, u64)> = names
        .into_iter()
        .map(|n| (n.clone(), count(base, n), count(head, n)))
        .filter(|(_, b, h)| *b as f64 >= CALLGRIND_SHARE * tb || *h as f64 >= CALLGRIND_SHARE * th)
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.1.max(r.2)));
    rows
}

/// The minimum of `values`, NaN when empty.
fn minimum(values: impl Iterator<Item = f64>) -> f64 {
    values.fold(f64::NAN, f64::min)
}

/// Per stage: base minimum, head minimum, and the pairs (same repeat)
/// in which head was faster.
fn stage_summary(runs: &[Timed], stage: usize) -> (f64, f64, usize, usize) {
    let of = |label: &'static str| runs.iter().filter(move |r| r.label == label);
    let base = minimum(of("base").map(|r| r.stages[stage]));
    let head = minimum(of("head").map(|r| r.stages[stage]));
    let pairs: Vec<(f64, f64)> = of("base")
        .filter_map(|b| {
            of("head")
                .find(|h| h.repeat == b.repeat)
                .map(|h| (b.stages[stage], h.stages[stage]))
        })
        .collect();
    let faster = pairs.iter().filter(|(b, h)| h < b).count();
    (base, head, faster, pairs.len())
}

/// Runs the suite.
pub fn run(opts: &SuiteOptions) -> SuiteResult<bool> {
    let args = parse_args(&opts.args)?;
    let (particles, settle_steps, steps, repeats) = sizes(opts, &args);
    report::prepare(&opts.out)?;
    let out = std::fs::canonicalize(&opts.out)
        .map_err(|e| format!("cannot resolve {}: {e}", opts.out.display()))?;
    let root = report::workspace_root();
    let total = 4 + 2 * repeats + if args.callgrind { 2 } else { 0 };
    let mut progress = Progress::new("ab", total);
    let base = build_base(&root, &out, &args.base)?;
    progress.tick(&format!(
        "base build: {} ({})",
        args.base,
        short(&base.commit)
    ));
    let head = build_head(&root, &out)?;
    progress.tick(&format!(
        "working tree build: {}{}",
        short(&head.commit),
        if head.dirty { " with changes" } else { "" }
    ));
    let checkpoint = settle(&base.binary, &out, (particles, settle_steps, args.threads))?;
    progress.tick(&format!(
        "{particles} spheres settled for {settle_steps} steps on {} thread(s)",
        args.threads
    ));
    // the host's state beside the timings (`crate::host`): what a second
    // thread gains, and how fast memory is read, move from run to run
    let host_before = crate::host::probe();
    let mut runs = Vec::new();
    for repeat in 0..repeats {
        let order = if repeat % 2 == 0 {
            [&base, &head]
        } else {
            [&head, &base]
        };
        for build in order {
            let r = timed_run(build, &checkpoint, &out, (repeat, steps))?;
            progress.tick(&format!(
                "{} #{repeat}: step {:.1} ms, continuous {:.1} ns per contact-iteration (load {:.2})",
                r.label,
                r.stages[STEP] * 1e3,
                r.continuous_ns,
                r.load
            ));
            runs.push(r);
        }
    }
    let host = crate::host::AroundRuns {
        before: host_before,
        after: crate::host::probe(),
    };
    let replayed = replays((&base, &head), &out, &mut progress)?;
    let same = replayed.iter().filter(|r| r.outcome == Ok(None)).count();
    progress.tick(&format!(
        "built-in scenes replayed: {same} of {} bit-identical",
        replayed.len()
    ));
    let counts = if args.callgrind {
        let cg_steps = if opts.quick { 2 } else { 3 };
        let b = callgrind(&base, &checkpoint, &out, cg_steps)?;
        progress.tick("callgrind: base");
        let h = callgrind(&head, &checkpoint, &out, cg_steps)?;
        progress.tick("callgrind: working tree");
        b.zip(h).map(|(b, h)| callgrind_rows(&b, &h))
    } else {
        None
    };
    let measured = Measured {
        runs: &runs,
        host,
        replays: &replayed,
        counts: counts.as_deref(),
    };
    write_outputs(&out, (&base, &head), &args, &measured)?;
    // a build that fails a scene the other runs is a failed comparison
    Ok(replayed.iter().all(|r| r.outcome.is_ok()))
}

/// What the suite measured.
struct Measured<'a> {
    runs: &'a [Timed],
    /// The host probe before and after the timed runs.
    host: crate::host::AroundRuns,
    replays: &'a [Replay],
    counts: Option<&'a [(String, u64, u64)]>,
}

impl Measured<'_> {
    /// The timed runs whose statistics differ from the first base run's.
    fn differences(&self) -> Vec<(String, String)> {
        let reference = self.runs.first().map_or("", |r| r.trajectory.as_str());
        self.runs
            .iter()
            .filter_map(|r| {
                first_difference(reference, &r.trajectory)
                    .map(|d| (format!("{}-{}", r.label, r.repeat), d))
            })
            .collect()
    }

    /// The smallest continuous stage per contact-iteration of a build.
    fn continuous_ns(&self, label: &str) -> f64 {
        minimum(
            self.runs
                .iter()
                .filter(|r| r.label == label)
                .map(|r| r.continuous_ns),
        )
    }

    /// The lowest and highest load average before a run.
    fn loads(&self) -> (f64, f64) {
        let loads = self.runs.iter().map(|r| r.load);
        (minimum(loads.clone()), loads.fold(f64::NAN, f64::max))
    }
}

/// `runs.svg`: each run's step and continuous stage (mean per step) in the
/// order the runs were made, one series per build and stage, so that a
/// drift of the host shows as a trend both builds follow and a change as
/// a gap between them.
fn plot_runs(out: &Path, runs: &[Timed]) -> SuiteResult<()> {
    let series_of = |label: &'static str, stage: usize, name: &str| {
        let points = runs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.label == label)
            .map(|(k, r)| ((k + 1) as f64, r.stages[stage] * 1e3))
            .collect();
        Series::markers(format!("{name}, {label}"), points)
    };
    let series = [
        series_of("base", STEP, "step"),
        series_of("head", STEP, "step"),
        series_of("base", CONTINUOUS, "continuous stage"),
        series_of("head", CONTINUOUS, "continuous stage"),
    ];
    line_plot(
        &out.join("runs.svg"),
        Axes::new(
            "the two builds' runs in the order they were made (ABBA...)",
            "run",
            "mean per step [ms]",
        ),
        &series,
    )
}

/// Writes `runs.csv`, `runs.svg`, `replays.csv`, `callgrind.csv`,
/// `summary.json` and `report.md`.
fn write_outputs(
    out: &Path,
    builds: (&Build, &Build),
    args: &AbArgs,
    measured: &Measured<'_>,
) -> SuiteResult<()> {
    let rows: Vec<Vec<String>> = measured
        .runs
        .iter()
        .map(|r| {
            let mut row = vec![
                r.label.to_string(),
                r.repeat.to_string(),
                format!("{:.2}", r.load),
                r.steps.to_string(),
                format!("{:.0}", r.contacts),
            ];
            row.extend(r.stages.iter().map(|s| format!("{:.3}", s * 1e3)));
            row.push(format!("{:.2}", r.continuous_ns));
            row
        })
        .collect();
    let mut header = vec!["build", "repeat", "load", "steps", "contacts"];
    let stage_headers: Vec<String> = STAGES.iter().map(|(_, n)| format!("{n}_ms")).collect();
    header.extend(stage_headers.iter().map(String::as_str));
    header.push("continuous_ns_per_contact_iteration");
    report::write_csv(&out.join("runs.csv"), &header, &rows)?;
    plot_runs(out, measured.runs)?;
    let rows: Vec<Vec<String>> = measured
        .replays
        .iter()
        .map(|r| {
            vec![
                r.scene.clone(),
                r.rows.to_string(),
                replay_verdict(r).into(),
            ]
        })
        .collect();
    report::write_csv(
        &out.join("replays.csv"),
        &["scene", "rows", "statistics"],
        &rows,
    )?;
    if let Some(counts) = measured.counts {
        let rows: Vec<Vec<String>> = counts
            .iter()
            .map(|(n, b, h)| {
                vec![
                    format!("\"{}\"", n.replace('"', "'")),
                    b.to_string(),
                    h.to_string(),
                ]
            })
            .collect();
        report::write_csv(
            &out.join("callgrind.csv"),
            &["function", "base", "head"],
            &rows,
        )?;
    }
    report::write_summary(out, &summary_json(builds, args, measured))?;
    report::write(&out.join("report.md"), &report_text(builds, args, measured))
}

/// `identical`, `differs` or `failed`.
fn replay_verdict(r: &Replay) -> &'static str {
    match r.outcome {
        Ok(None) => "identical",
        Ok(Some(_)) => "differs",
        Err(_) => "failed",
    }
}

fn summary_json((base, head): (&Build, &Build), args: &AbArgs, measured: &Measured<'_>) -> Value {
    let runs = measured.runs;
    let stages: serde_json::Map<String, Value> = STAGES
        .iter()
        .enumerate()
        .map(|(k, (_, name))| {
            let (b, h, faster, pairs) = stage_summary(runs, k);
            (
                name.to_string(),
                json!({"base_min_ms": b * 1e3, "head_min_ms": h * 1e3, "ratio": h / b,
                       "head_faster_pairs": faster, "pairs": pairs}),
            )
        })
        .collect();
    let (load_min, load_max) = measured.loads();
    let differences = measured.differences();
    let replays: Vec<Value> = measured
        .replays
        .iter()
        .map(|r| {
            let detail = match &r.outcome {
                Ok(d) => d.clone(),
                Err(e) => Some(e.clone()),
            };
            json!({"scene": r.scene, "rows": r.rows, "statistics": replay_verdict(r), "first_difference": detail})
        })
        .collect();
    json!({
        "base": {"revision": args.base, "commit": base.commit},
        "head": {"commit": head.commit, "uncommitted_changes": head.dirty},
        "threads": args.threads,
        "steps": runs.first().map_or(0, |r| r.steps),
        "contacts": runs.first().map_or(0.0, |r| r.contacts),
        "stages": stages,
        "continuous_ns_per_contact_iteration": {
            "base_min": measured.continuous_ns("base"),
            "head_min": measured.continuous_ns("head"),
        },
        "statistics_identical": differences.is_empty(),
        "differences": differences.iter().map(|(r, d)| json!({"run": r, "first": d})).collect::<Vec<_>>(),
        "replays_identical": measured.replays.iter().all(|r| r.outcome == Ok(None)),
        "replays": replays,
        "load_min": load_min,
        "load_max": load_max,
        "host": measured.host.to_json(),
        "callgrind": measured.counts.map(|c| c.iter().map(|(n, b, h)| json!({"function": n, "base": b, "head": h})).collect::<Vec<_>>()),
    })
}

fn report_text((base, head): (&Build, &Build), args: &AbArgs, measured: &Measured<'_>) -> String {
    let runs = measured.runs;
    let mut s = report::heading("Two builds of `ndem` on one bed", false);
    let (steps, contacts) = runs.first().map_or((0, 0.0), |r| (r.steps, r.contacts));
    let (load_min, load_max) = measured.loads();
    s += &format!(
        "Base: `{}` ({}). Working tree: {}{}. The settled `packing` bed, {contacts:.0} contacts, \
         {} thread(s), {steps} steps per run, {} runs of each build in the order ABBA…, load \
         {load_min:.2}-{load_max:.2}.\n\n",
        args.base,
        short(&base.commit),
        short(&head.commit),
        if head.dirty {
            " with uncommitted changes"
        } else {
            ""
        },
        args.threads,
        runs.len() / 2,
    );
    s += &measured.host.text();
    s += "| stage | base, min | working tree, min | ratio | working tree faster |\n|---|---|---|---|---|\n";
    for (k, (_, name)) in STAGES.iter().enumerate() {
        let (b, h, faster, pairs) = stage_summary(runs, k);
        s += &format!(
            "| {name} | {:.2} ms | {:.2} ms | {:.3} | {faster} of {pairs} pairs |\n",
            b * 1e3,
            h * 1e3,
            h / b
        );
    }
    s += &format!(
        "\nContinuous stage per contact-iteration: {:.2} ns (base) and {:.2} ns (working tree) at \
         the minima. Each run's figures are in `runs.csv`, plotted in run order in `runs.svg`.\n\n",
        measured.continuous_ns("base"),
        measured.continuous_ns("head")
    );
    let differences = measured.differences();
    if differences.is_empty() {
        s += "**The bed's runs: bit-identical.** Every run's statistics (all columns of `stats.csv` \
              but the timings) equal the first base run's.\n";
    } else {
        s += "**The bed's runs differ.** Runs whose statistics differ from the first base run's:\n\n";
        for (run, d) in differences {
            s += &format!("- {run}: {d}\n");
        }
    }
    s += &replay_text(measured.replays);
    if let Some(counts) = measured.counts {
        s += "\n## Instructions (callgrind, inclusive, one run of each build)\n\n\
              | function | base | working tree | ratio |\n|---|---|---|---|\n";
        for (n, b, h) in counts.iter().take(40) {
            s += &format!(
                "| `{}` | {b} | {h} | {:.4} |\n",
                n.replace('|', "\\|"),
                *h as f64 / (*b).max(1) as f64
            );
        }
    }
    s
}

/// The replays' section of the report.
fn replay_text(replays: &[Replay]) -> String {
    let same = replays.iter().filter(|r| r.outcome == Ok(None)).count();
    let mut s = format!(
        "\n## The built-in scenes, replayed\n\nOne thread, a statistics line every step, 60 steps \
         (pile 200, excavator 30): **{same} of {} bit-identical** (all columns of `stats.csv` but the \
         timings).\n\n| scene | rows | statistics |\n|---|---|---|\n",
        replays.len()
    );
    for r in replays {
        let detail = match &r.outcome {
            Ok(None) => "identical".to_string(),
            Ok(Some(d)) => format!("differ, first at {d}"),
            Err(e) => format!("failed: {e}"),
        };
        s += &format!(
            "| {} | {} | {} |\n",
            r.scene,
            r.rows,
            detail.replace('|', "\\|")
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_name_the_base_and_the_options() {
        let args: Vec<String> = ["HEAD~2", "--threads", "2", "--callgrind", "--steps", "8"]
            .map(String::from)
            .into();
        let parsed = parse_args(&args).unwrap();
        assert_eq!(
            parsed,
            AbArgs {
                base: "HEAD~2".into(),
                threads: 2,
                steps: Some(8),
                callgrind: true
            }
        );
        assert_eq!(parse_args(&[]).unwrap().base, "HEAD");
        let bad = ["--threads", "0"].map(String::from);
        assert!(parse_args(&bad).unwrap_err().contains("--threads"));
        let two = ["a", "b"].map(String::from);
        assert!(parse_args(&two).is_err());
    }

    #[test]
    fn statistics_split_into_means_and_trajectory() {
        let text = "step,contacts,iterations,kinetic_energy,t_detection_s,t_assembly_s,t_impact_s,t_continuous_s,t_total_s\n\
                    1,100,25,0.5,0.001,0.002,0.003,0.004,0.010\n\
                    2,300,25,0.25,0.003,0.002,0.001,0.006,0.012\n";
        let (steps, contacts, stages, ns, trajectory) = parse_stats(text).unwrap();
        assert_eq!(steps, 2);
        assert_eq!(contacts, 200.0);
        assert_eq!(stages, [0.002, 0.002, 0.002, 0.005, 0.011]);
        // 0.010 s over 100·25 + 300·25 contact-iterations
        assert!((ns - 1e7 / 10_000.0).abs() < 1e-9, "{ns}");
        assert_eq!(trajectory, "1,100,25,0.5\n2,300,25,0.25\n");
        assert_eq!(first_difference(&trajectory, &trajectory), None);
        let other = trajectory.replace("0.25", "0.26");
        assert!(
            first_difference(&trajectory, &other)
                .unwrap()
                .starts_with("row 1")
        );
    }

    #[test]
    fn annotate_lines_give_the_largest_count_per_function() {
        let text = "  8,179,871,509 (100.0%)  ???:0x000000000001ab70 [/lib/ld.so]\n\
                    4,864,585,577 (59.47%)  /a/crates/x/src/pgs.rs:ndem_solve::pgs::sweep [/tmp/ndem]\n\
                    1,405,479,404 (17.18%)  /rustc/1/library/core/src/ops/arith.rs:ndem_solve::pgs::sweep [/tmp/ndem]\n\
                    Ir  file:function\n";
        let parsed = parse_annotate(text);
        assert_eq!(parsed.get("ndem_solve::pgs::sweep"), Some(&4_864_585_577));
        assert_eq!(parsed.get("0x000000000001ab70"), Some(&8_179_871_509));
        assert_eq!(parsed.len(), 2);
        let head = Counts::from([("ndem_solve::pgs::sweep".into(), 4_000_000_000)]);
        let rows = callgrind_rows(&parsed, &head);
        assert_eq!(rows[0].0, "0x000000000001ab70");
        assert_eq!(
            rows[1],
            (
                "ndem_solve::pgs::sweep".into(),
                4_864_585_577,
                4_000_000_000
            )
        );
        // a function only one build has is listed with 0 for the other
        let head = Counts::from([("ndem_solve::pgs::new_pass".into(), 1_000_000_000)]);
        let rows = callgrind_rows(&parsed, &head);
        assert!(rows.contains(&("ndem_solve::pgs::new_pass".into(), 0, 1_000_000_000)));
        assert!(rows.contains(&("ndem_solve::pgs::sweep".into(), 4_864_585_577, 0)));
    }
}

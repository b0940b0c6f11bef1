//! Output helpers: folders, CSV, JSON summaries, progress lines.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// Error type of the suites (I/O and simulation errors as text).
pub type SuiteResult<T> = Result<T, String>;

/// The workspace's root folder (the parent of `xtask/`).
pub fn workspace_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| std::path::PathBuf::from("."), Path::to_path_buf)
}

/// Creates the output folder.
pub fn prepare(out: &Path) -> SuiteResult<()> {
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))
}

/// Writes a file atomically (temporary file then rename), so that an
/// interrupted run never leaves a half-written file that looks complete.
pub fn write(path: &Path, contents: &str) -> SuiteResult<()> {
    let tmp = path.with_extension("partial");
    let mut f =
        std::fs::File::create(&tmp).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    f.write_all(contents.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Writes `summary.json` (pretty-printed) into `out`, with the machine's
/// load average at the time of writing (`load_average`, from
/// `/proc/loadavg`) when the summary does not carry its own.
pub fn write_summary(out: &Path, summary: &serde_json::Value) -> SuiteResult<()> {
    let mut summary = summary.clone();
    if let Some(map) = summary.as_object_mut() {
        map.entry("load_average")
            .or_insert_with(|| load_average().into());
    }
    let text = serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?;
    write(&out.join("summary.json"), &text)
}

/// The machine's load averages (1, 5, 15 min; `/proc/loadavg`), for
/// reports: timings on a shared machine mean little without them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Appends a Markdown table's header row and its rule: `columns` are the
/// header cells separated by ` | ` (`"a | b"` gives `| a | b |` and
/// `|---|---|`).
pub(crate) fn table_header(md: &mut String, columns: &str) {
    let n = columns.split(" | ").count();
    md.push_str("| ");
    md.push_str(columns);
    md.push_str(" |\n|");
    md.push_str(&"---|".repeat(n));
    md.push('\n');
}

/// The first line of a suite's `report.md`: `# title`, marked `--quick`
/// for the quick size.
pub fn heading(title: &str, quick: bool) -> String {
    format!("# {title}{}\n\n", if quick { ", --quick" } else { "" })
}

/// Writes a CSV file from a header and rows.
pub fn write_csv(path: &Path, header: &[&str], rows: &[Vec<String>]) -> SuiteResult<()> {
    let mut s = header.join(",");
    s.push('\n');
    for r in rows {
        s.push_str(&r.join(","));
        s.push('\n');
    }
    write(path, &s)
}

/// Splits the results of a batch of runs into the successes and the error
/// messages of the failed runs (each also printed under `label`).
pub fn split_failures<T>(label: &str, results: Vec<SuiteResult<T>>) -> (Vec<T>, Vec<String>) {
    let mut ok = Vec::new();
    let mut failures = Vec::new();
    for r in results {
        match r {
            Ok(x) => ok.push(x),
            Err(e) => {
                eprintln!("[{label}] FAILED {e}");
                failures.push(e);
            }
        }
    }
    (ok, failures)
}

/// Progress reporter on stderr.
pub struct Progress {
    total: usize,
    done: usize,
    start: Instant,
    label: String,
}

impl Progress {
    /// Starts a progress line for `total` items.
    pub fn new(label: &str, total: usize) -> Self {
        eprintln!("[{label}] 0/{total}");
        Self {
            total,
            done: 0,
            start: Instant::now(),
            label: label.into(),
        }
    }

    /// Marks one item done.
    pub fn tick(&mut self, what: &str) {
        self.done += 1;
        eprintln!(
            "[{}] {}/{} {what} ({:.1} s)",
            self.label,
            self.done,
            self.total,
            self.start.elapsed().as_secs_f64()
        );
    }

    /// A progress message inside the current item.
    pub fn note(&self, what: &str) {
        eprintln!(
            "[{}] {}/{} … {what} ({:.1} s)",
            self.label,
            self.done,
            self.total,
            self.start.elapsed().as_secs_f64()
        );
    }

    /// Seconds since the start.
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
}

/// `mpirun --allow-run-as-root --oversubscribe -np ranks ndem run scene
/// --mpi --frame-every 0 --overwrite`, for the caller to add its options.
pub fn mpirun_scene(ndem: &Path, ranks: usize, scene: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(ranks.to_string())
        .arg(ndem)
        .args(["run", scene, "--mpi", "--frame-every", "0", "--overwrite"]);
    cmd
}

/// Runs `run` for each rank count of `ranks` in order, ticking a
/// progress line (`line` of each result) named `name`.
pub fn by_ranks<T>(
    name: &str,
    ranks: &[usize],
    mut run: impl FnMut(usize) -> SuiteResult<T>,
    line: impl Fn(usize, &T) -> String,
) -> SuiteResult<Vec<T>> {
    let mut progress = Progress::new(name, ranks.len());
    let mut out = Vec::with_capacity(ranks.len());
    for &r in ranks {
        let result = run(r)?;
        progress.tick(&line(r, &result));
        out.push(result);
    }
    Ok(out)
}

/// A number of a run's `summary.json` (NaN when it has none).
pub fn figure(summary: &serde_json::Value, key: &str) -> f64 {
    summary[key].as_f64().unwrap_or(f64::NAN)
}

/// A distributed run: its rank count and its `summary.json`.
#[derive(Debug, Clone)]
pub struct RankedRun {
    /// Ranks it ran on.
    pub ranks: usize,
    /// Its `summary.json`.
    pub summary: serde_json::Value,
}

/// The rows of distributed runs on several rank counts: each run's own
/// figures (`own`, given the one-rank run if there is one) and those every
/// distributed run reports, from its `summary.json`: the rank count,
/// whether it oversubscribes the `cores`, seconds per step, the strong-scaling efficiency against the
/// one-rank run and the fraction of time in exchanges.
pub fn scaling_rows<R>(
    runs: &[R],
    ranked: impl Fn(&R) -> &RankedRun,
    cores: usize,
    own: impl Fn(&R, Option<&R>) -> serde_json::Value,
) -> Vec<serde_json::Value> {
    let one = runs.iter().find(|r| ranked(r).ranks == 1);
    let t1 = one.map_or(f64::NAN, |o| figure(&ranked(o).summary, "seconds_per_step"));
    runs.iter()
        .map(|r| {
            let RankedRun { ranks, summary } = ranked(r);
            let ranks = *ranks;
            let t = figure(summary, "seconds_per_step");
            let mut row = serde_json::json!({
                "ranks": ranks,
                "oversubscribed": ranks > cores,
                "seconds_per_step": t,
                "efficiency": t1 / t / ranks as f64,
                "exchange_fraction": summary["exchange_fraction"],
            });
            if let (Some(row), serde_json::Value::Object(extra)) =
                (row.as_object_mut(), own(r, one))
            {
                row.extend(extra);
            }
            row
        })
        .collect()
}

/// A report table's rank cell: `2`, or `4 (oversubscribed)`.
pub fn rank_label(row: &serde_json::Value) -> String {
    let note = if row["oversubscribed"] == true {
        " (oversubscribed)"
    } else {
        ""
    };
    format!("{}{note}", row["ranks"])
}

/// Runs `cmd` (an `mpirun … ndem run … --out dir`) and reads the run's
/// `summary.json`; an error names `what` with the run's last line of
/// standard error.
pub fn run_for_summary(
    cmd: &mut std::process::Command,
    what: &str,
    dir: &std::path::Path,
) -> SuiteResult<serde_json::Value> {
    let output = cmd
        .output()
        .map_err(|e| format!("cannot run mpirun: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{what}: {}",
            String::from_utf8_lossy(&output.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ));
    }
    let text = std::fs::read_to_string(dir.join("summary.json"))
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

//! Helpers the model-reduction suites share: the papers' fixed-N_it PGS
//! stepper, mean and spread of samples, and running a plan of runs two at
//! a time (one per core).

use crate::plot::{self, Axes, Series};
use crate::report::{self, SuiteResult};
use ndem_solve::{HistoryWarmStart, ProjectedGaussSeidel, Stopping};
use ndem_step::{StepSettings, Stepper};
use std::path::Path;

/// A stepper with PGS at exactly `iterations` sweeps (the papers' N_it)
/// and history warm starting.
pub(crate) fn history_stepper(iterations: usize, settings: StepSettings) -> SuiteResult<Stepper> {
    stepper_stopping(Stopping::iterations(iterations), settings)
}

/// A stepper with PGS stopping as `stopping` says and history warm
/// starting.
pub(crate) fn stepper_stopping(stopping: Stopping, settings: StepSettings) -> SuiteResult<Stepper> {
    let pgs = ProjectedGaussSeidel::with_stopping(stopping).map_err(|e| e.to_string())?;
    Stepper::new(
        settings,
        Box::new(pgs),
        Box::new(HistoryWarmStart::default()),
    )
    .map_err(|e| e.to_string())
}

/// Mean and (population) standard deviation; `(NaN, NaN)` for no samples.
pub(crate) fn mean_sd(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n).sqrt();
    (m, sd)
}

/// Runs `run` on every entry of `plan`, two at a time on scoped threads,
/// and returns the results in plan order; `done` sees each result as its
/// pair finishes. A panicking run becomes an error.
pub(crate) fn in_pairs<P: Sync, T: Send>(
    plan: &[P],
    run: impl Fn(&P) -> SuiteResult<T> + Sync,
    mut done: impl FnMut(&SuiteResult<T>),
) -> Vec<SuiteResult<T>> {
    let mut out = Vec::with_capacity(plan.len());
    for pair in plan.chunks(2) {
        let results: Vec<SuiteResult<T>> = std::thread::scope(|scope| {
            let handles: Vec<_> = pair
                .iter()
                .map(|p| {
                    let run = &run;
                    scope.spawn(move || run(p))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err("a run panicked".into())))
                .collect()
        });
        for r in results {
            done(&r);
            out.push(r);
        }
    }
    out
}

/// A plan's runs, two at a time ([`in_pairs`]): what succeeded, what
/// failed ([`crate::report::split_failures`]), and the runs that completed
/// beside a failed partner ([`alone_after_partner_failed`]).
pub(crate) struct PairedRuns<T> {
    pub(crate) outcomes: Vec<T>,
    pub(crate) failures: Vec<String>,
    pub(crate) alone: Vec<String>,
}

/// Runs the entries of `plan`, each named by `name` ([`in_pairs`]), of
/// suite `label`, with a progress line per finished run: `line` of a
/// success, "failed: …" of a failure.
pub(crate) fn run_plan<P: Sync, T: Send>(
    label: &str,
    (plan, name): (&[P], fn(&P) -> &str),
    run: impl Fn(&P) -> SuiteResult<T> + Sync,
    line: impl Fn(&T) -> String,
    progress: &mut crate::report::Progress,
) -> PairedRuns<T> {
    let results = in_pairs(plan, run, |r| match r {
        Ok(o) => progress.tick(&line(o)),
        Err(e) => progress.tick(&format!("failed: {e}")),
    });
    let names: Vec<&str> = plan.iter().map(name).collect();
    let alone = alone_after_partner_failed(&names, &results);
    let (outcomes, failures) = crate::report::split_failures(label, results);
    PairedRuns {
        outcomes,
        failures,
        alone,
    }
}

/// The runs of `results` (in the order of `names`, paired as [`in_pairs`]
/// pairs them) that completed beside a partner that failed, each as
/// "NAME (beside PARTNER, which failed)": once the partner stopped they
/// ran alone, so their wall time shares less contention than the other
/// runs' and a speed-up taken from it is not comparable with the others
/// (for example the drum's ref-150, the reference of every speed-up, once
/// cs-150 fails).
pub(crate) fn alone_after_partner_failed<T>(
    names: &[&str],
    results: &[SuiteResult<T>],
) -> Vec<String> {
    let alone = |run: &str, partner: &str| format!("{run} (beside {partner}, which failed)");
    names
        .chunks(2)
        .zip(results.chunks(2))
        .filter_map(|(n, r)| match (r, n) {
            ([Ok(_), Err(_)], [a, b]) => Some(alone(a, b)),
            ([Err(_), Ok(_)], [a, b]) => Some(alone(b, a)),
            _ => None,
        })
        .collect()
}

/// The report's sentence on [`alone_after_partner_failed`]'s runs (empty
/// when there are none).
/// Writes `summary.json` of a suite whose runs ran two at a time, one per
/// core: the suite's own `fields` and its runs, with the failed runs, the
/// runs that ran alone after their partner failed, and the pairing note.
pub(crate) fn write_paired_summary(
    out: &std::path::Path,
    mut fields: serde_json::Value,
    runs: Vec<serde_json::Value>,
    (failures, alone): (&[String], &[String]),
) -> SuiteResult<()> {
    if let Some(map) = fields.as_object_mut() {
        map.insert("runs".into(), runs.into());
        map.insert("failed_runs".into(), failures.into());
        map.insert("ran_alone_after_partner_failed".into(), alone.into());
        map.insert(
            "note".into(),
            "runs ran two at a time, one per core: wall times include the other run's memory traffic".into(),
        );
    }
    crate::report::write_summary(out, &fields)
}

pub(crate) fn alone_note(alone: &[String]) -> String {
    if alone.is_empty() {
        return String::new();
    }
    format!(
        "\n**Speed-ups not comparable in this run:** {} ran alone after its partner failed, so its wall time \
         shares less contention than the paired runs'. A speed-up over it (ref-150 is every speed-up's base) is \
         biased low; its own speed-up is biased high.\n",
        alone.join(", ")
    )
}

/// `base` at the suite's size: `--quick` keeps the fill fraction in a
/// smaller drum (1250 particles, D = 24 d, W = 5 d); `--particles` sets
/// the count.
pub(crate) fn drum_size(
    base: ndem_scenes::builders::DrumSpec,
    opts: &crate::SuiteOptions,
) -> ndem_scenes::builders::DrumSpec {
    let mut spec = if opts.quick {
        ndem_scenes::builders::DrumSpec {
            particles: 1250,
            diameter_d: 24.0,
            width_d: 5.0,
            ..base
        }
    } else {
        base
    };
    if let Some(n) = opts.particles {
        spec.particles = n;
    }
    spec
}

/// One run's `(t, θ, h)` samples, as the model-reduction suites record them.
pub(crate) type Samples = Vec<(f64, f64, f64)>;

/// Titles of the θ(t) and h(t) plots.
pub(crate) struct TraceTitles<'a> {
    pub theta: &'a str,
    pub level: &'a str,
    /// Label of the time axis.
    pub time: &'a str,
}

/// Writes `theta.svg` (θ(t)) and `level.svg` (h(t)) in `out`, one line per
/// run.
pub(crate) fn theta_and_level_plots(
    out: &Path,
    runs: &[(&str, Samples)],
    titles: &TraceTitles<'_>,
) -> SuiteResult<()> {
    let series = |f: fn(&(f64, f64, f64)) -> f64| -> Vec<Series> {
        runs.iter()
            .map(|(name, s)| Series::line(*name, s.iter().map(|p| (p.0, f(p))).collect()))
            .collect()
    };
    for (file, title, y, f) in [
        (
            "theta.svg",
            titles.theta,
            "θ [°]",
            (|p: &(f64, f64, f64)| p.1) as fn(&_) -> f64,
        ),
        ("level.svg", titles.level, "h", |p: &(f64, f64, f64)| p.2),
    ] {
        plot::line_plot(
            &out.join(file),
            Axes {
                title,
                x: titles.time,
                y,
                ..Axes::default()
            },
            &series(f),
        )?;
    }
    Ok(())
}

/// Writes the `(run, t, θ, h)` samples of every run to `csv` in `out`,
/// and `theta.svg`, `level.svg` from them.
pub(crate) fn write_traces<'a>(
    out: &Path,
    csv: &str,
    runs: impl IntoIterator<Item = (&'a str, &'a Samples)>,
    titles: &TraceTitles<'_>,
) -> SuiteResult<()> {
    let runs: Vec<(&str, Samples)> = runs.into_iter().map(|(n, s)| (n, s.clone())).collect();
    trace_csv(&out.join(csv), &runs)?;
    theta_and_level_plots(out, &runs, titles)
}

/// The columns every model-reduction run reports against the reference
/// run ref-150 (`reference`: its θ and wall time): θ − θ_ref, mean h, wall
/// time, steps and the speed-up over ref-150.
fn versus_ref150(
    reference: Option<(f64, f64)>,
    (theta, level): (f64, f64),
    (wall, steps): (f64, usize),
) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert(
        "theta_minus_ref150_deg".into(),
        reference.map(|r| theta - r.0).into(),
    );
    m.insert("mean_reduction_level".into(), level.into());
    m.insert("wall_s".into(), wall.into());
    m.insert("steps".into(), steps.into());
    m.insert(
        "speed_up_over_ref150".into(),
        reference.map(|r| r.1 / wall).into(),
    );
    m
}

/// What [`rows_versus_ref150`] reads of a run: its name, (θ, mean h) and
/// (wall time, steps).
pub(crate) type RunKey<'a> = (&'a str, (f64, f64), (f64, usize));

/// The summary rows of model-reduction runs: each run's own columns
/// (`own`) and those against ref-150 ([`versus_ref150`], the reference
/// found by name among `outcomes`), and ref-150's (θ, wall time).
pub(crate) fn rows_versus_ref150<O>(
    outcomes: &[O],
    key: impl Fn(&O) -> RunKey<'_>,
    own: impl Fn(&O) -> serde_json::Value,
) -> (Option<(f64, f64)>, Vec<serde_json::Value>) {
    let reference = outcomes
        .iter()
        .map(&key)
        .find(|k| k.0 == "ref-150")
        .map(|(_, (theta, _), (wall, _))| (theta, wall));
    let rows = outcomes
        .iter()
        .map(|o| {
            let (_, theta_level, wall_steps) = key(o);
            with_columns(own(o), versus_ref150(reference, theta_level, wall_steps))
        })
        .collect();
    (reference, rows)
}

/// `row` (a JSON object) with `columns` added.
fn with_columns(
    mut row: serde_json::Value,
    columns: serde_json::Map<String, serde_json::Value>,
) -> serde_json::Value {
    if let Some(map) = row.as_object_mut() {
        map.extend(columns);
    }
    row
}

/// Writes the `(run, t, θ, h)` samples of every run as a CSV.
fn trace_csv(path: &Path, runs: &[(&str, Samples)]) -> SuiteResult<()> {
    let rows: Vec<Vec<String>> = runs
        .iter()
        .flat_map(|(name, s)| {
            s.iter().map(move |(t, theta, h)| {
                vec![
                    name.to_string(),
                    format!("{t:.3}"),
                    format!("{theta:.3}"),
                    format!("{h:.4}"),
                ]
            })
        })
        .collect();
    report::write_csv(path, &["run", "t_s", "theta_deg", "h"], &rows)
}

/// `angle_by_run.svg`: our mean θ per run beside the paper's, runs placed
/// at 1, 2, … in the order of `paper` `(run, θ)`.
pub(crate) fn angle_by_run_plot(
    path: &Path,
    title: &str,
    paper: &[(&str, f64)],
    ours: &[(&str, f64)],
) -> SuiteResult<()> {
    let index = |name: &str| paper.iter().position(|p| p.0 == name).unwrap_or(0) as f64 + 1.0;
    plot::line_plot(
        path,
        Axes {
            title,
            x: "run",
            y: "θ [°]",
            ..Axes::default()
        },
        &[
            Series::markers(
                "ndem (mean over the window)",
                ours.iter().map(|o| (index(o.0), o.1)).collect(),
            ),
            Series::markers(
                "paper Table 3",
                paper
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (i as f64 + 1.0, p.1))
                    .collect(),
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run that completed beside a failed partner is named, whichever
    /// side of the pair it was on; runs whose partner completed, or that
    /// ran last and alone by plan, or that failed themselves, are not.
    #[test]
    fn runs_left_alone_by_a_failed_partner_are_named() {
        let names = ["ref-150", "cs-150", "tr-f", "tr-fv", "ref-500"];
        let results: Vec<SuiteResult<()>> = vec![
            Ok(()),
            Err("overlap".into()),
            Err("diverged".into()),
            Ok(()),
            Ok(()),
        ];
        assert_eq!(
            alone_after_partner_failed(&names, &results),
            [
                "ref-150 (beside cs-150, which failed)",
                "tr-fv (beside tr-f, which failed)"
            ]
        );
        let all_ok: Vec<SuiteResult<()>> = names.iter().map(|_| Ok(())).collect();
        assert!(alone_after_partner_failed(&names, &all_ok).is_empty());
        assert!(alone_note(&[]).is_empty());
        assert!(
            alone_note(&["ref-150 (beside cs-150, which failed)".into()])
                .contains("not comparable")
        );
    }
}

//! `cargo xtask reduce drum [--quick]`: the adaptive-model-reduction
//! paper's rotating drum (section 4, Table 3, Fig. 12). The drum (D = 40d,
//! width 7d, Ω = 0.5 rad/s, 4864 bi-disperse spheres, frictionless end
//! caps, Table 1 with linear k_n = 3 kN/m) turns one revolution at full
//! resolution (N_it = 150); six runs then continue from that state:
//! ref-500 and ref-150 (full resolution), cs-150 (contact split and a
//! sensor at the lift height), tr-150-50-f and tr-150-50-fv (background
//! trial solve of 50 sweeps: force balance, and force and velocity), and
//! tr-150-50-fv-d2 (its partial trial over each aggregate's outer two
//! layers, `TrialSplit::depth`). The
//! surface angle is read over the central D/2 of the drum
//! ([`measure::drum_surface_angle`]) every 0.05 s and averaged, with the
//! reduction level h, over the last part of each run.

use crate::SuiteOptions;
use crate::report::{self, Progress, SuiteResult};
use crate::runs::{
    PairedRuns, TraceTitles, angle_by_run_plot, history_stepper, mean_sd, rows_versus_ref150,
    run_plan, write_traces,
};
use ndem_math::Vec3;
use ndem_reduce::{Reducer, ReductionSettings, SensorSplit, TrialSplit};
use ndem_scenes::builders::{D, DrumSpec, drum};
use ndem_scenes::reduction::drum_lift_sensor;
use ndem_scenes::{Scene, measure};
use ndem_solve::ImpulseHistory;
use serde_json::json;
use std::fmt::Write as _;
use std::time::Instant;

/// A row of the paper's Table 3 for the drum.
struct PaperRow {
    run: &'static str,
    /// θ and its spread [°].
    theta: (f64, f64),
    /// Reduction level h and its spread (`None`: reference run).
    level: Option<(f64, f64)>,
}

const fn row(run: &'static str, theta: (f64, f64), level: Option<(f64, f64)>) -> PaperRow {
    PaperRow { run, theta, level }
}

/// The paper's Table 3 drum rows.
const PAPER: [PaperRow; 5] = [
    row("ref-500", (44.0, 3.0), None),
    row("ref-150", (43.0, 2.0), None),
    row("cs-150", (49.0, 5.0), Some((0.7, 0.1))),
    row("tr-150-50-f", (44.0, 3.0), Some((0.4, 0.1))),
    row("tr-150-50-fv", (45.0, 2.0), Some((0.4, 0.1))),
];

/// Sampling interval of θ and h \[s\].
const SAMPLE: f64 = 0.05;

/// The state every run continues from.
struct Start {
    scene: Scene,
    history: ImpulseHistory,
    time: f64,
    step: u64,
}

struct Outcome {
    name: &'static str,
    /// `(t, θ, h)` every [`SAMPLE`] s after the start.
    trace: Vec<(f64, f64, f64)>,
    theta: (f64, f64),
    level: (f64, f64),
    wall: f64,
    steps: usize,
}

fn plan(sensor: SensorSplit) -> [(&'static str, usize, Option<ReductionSettings>); 8] {
    let trial = |velocity_test, depth, disturbed_only| ReductionSettings {
        contact_split: None,
        trial_split: Some(TrialSplit {
            iterations: 50,
            velocity_test,
            depth,
            disturbed_only,
            ..TrialSplit::default()
        }),
        ..ReductionSettings::default()
    };
    let contact_and_sensor = ReductionSettings {
        sensors: vec![sensor],
        ..ReductionSettings::default()
    };
    // run in pairs: ref-150 beside cs-150, the two trial runs together,
    // then ref-500 beside the partial trial over each aggregate's outer 2
    // layers (`TrialSplit::depth`), and the two trials over the members
    // within 4 layers of a disturbed contact and over the whole disturbed
    // aggregates (`TrialSplit::disturbed_only`) together, so each reduced
    // run's wall time shares its contention with a comparable run
    [
        ("ref-150", 150, None),
        ("cs-150", 150, Some(contact_and_sensor)),
        ("tr-150-50-f", 150, Some(trial(false, None, false))),
        ("tr-150-50-fv", 150, Some(trial(true, None, false))),
        ("ref-500", 500, None),
        ("tr-150-50-fv-d2", 150, Some(trial(true, Some(2), false))),
        ("tr-150-50-fv-near4", 150, Some(trial(true, Some(4), true))),
        ("tr-150-50-fv-near", 150, Some(trial(true, None, true))),
    ]
}

fn run(
    name: &'static str,
    iterations: usize,
    reduction: Option<ReductionSettings>,
    start: &Start,
    spec: &DrumSpec,
    (seconds, average): (f64, f64),
) -> SuiteResult<Outcome> {
    let mut scene = start.scene.clone();
    let settings = scene.settings;
    let mut st = history_stepper(iterations, settings)?;
    if !st.set_history(start.history.clone()) {
        return Err("the warm-start policy keeps no history to continue from".into());
    }
    st.set_clock(start.time, start.step);
    if let Some(r) = reduction {
        st.set_hooks(Box::new(Reducer::new(r).map_err(|e| e.to_string())?));
    }
    let diameter = spec.diameter_d * D;
    let steps = (seconds / settings.dt).round() as usize;
    let every = (SAMPLE / settings.dt).round() as usize;
    let mut trace = Vec::new();
    let clock = Instant::now();
    for k in 1..=steps {
        scene.step(&mut st).map_err(|e| format!("{name}: {e}"))?;
        if k % every == 0 {
            let level = st.hooks_as::<Reducer>().map_or(0.0, |r| r.stats().level);
            let theta = measure::drum_surface_angle(&scene.world, Vec3::zeros(), diameter, D);
            trace.push((k as f64 * settings.dt, theta, level));
        }
    }
    let window: Vec<&(f64, f64, f64)> = trace
        .iter()
        .filter(|p| p.0 > seconds - average && p.1.is_finite())
        .collect();
    let column = |f: fn(&(f64, f64, f64)) -> f64| window.iter().map(|p| f(p)).collect::<Vec<_>>();
    Ok(Outcome {
        name,
        theta: mean_sd(&column(|p| p.1)),
        level: mean_sd(&column(|p| p.2)),
        trace,
        wall: clock.elapsed().as_secs_f64(),
        steps,
    })
}

/// Titles of the θ(t) and h(t) plots.
const TRACE_TITLES: TraceTitles<'static> = TraceTitles {
    theta: "drum surface angle over the central D/2",
    level: "reduction level h(t)",
    time: "t after the first revolution [s]",
};

fn write_plots(opts: &SuiteOptions, outcomes: &[Outcome]) -> SuiteResult<()> {
    let runs = outcomes.iter().map(|o| (o.name, &o.trace));
    write_traces(&opts.out, "drum.csv", runs, &TRACE_TITLES)?;
    let paper: Vec<(&str, f64)> = PAPER.iter().map(|p| (p.run, p.theta.0)).collect();
    let ours: Vec<(&str, f64)> = outcomes.iter().map(|o| (o.name, o.theta.0)).collect();
    angle_by_run_plot(
        &opts.out.join("angle_by_run.svg"),
        "θ per run: 1 ref-500, 2 ref-150, 3 cs-150, 4 tr-150-50-f, 5 tr-150-50-fv",
        &paper,
        &ours,
    )
}

/// Runs the suite.
pub fn drum_suite(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    let spec = crate::runs::drum_size(DrumSpec::model_reduction(), opts);
    let revolution = 2.0 * std::f64::consts::PI / spec.omega.abs();
    let (seconds, average) = if opts.quick { (4.0, 3.0) } else { (8.0, 6.0) };
    let mut progress = Progress::new("reduce drum", 10);
    let mut scene = drum(spec).map_err(|e| e.to_string())?;
    let mut spin = history_stepper(150, scene.settings)?;
    for _ in 0..(revolution / scene.settings.dt).round() as usize {
        scene
            .step(&mut spin)
            .map_err(|e| format!("first revolution: {e}"))?;
    }
    let start = Start {
        history: spin.history().cloned().unwrap_or_default(),
        time: spin.time(),
        step: spin.step_count(),
        scene,
    };
    let sensor = drum_lift_sensor(&start.scene.world, &spec)
        .ok_or("no particle on the drum's lifting side")?;
    progress.tick(&format!(
        "{} particles, one revolution ({revolution:.2} s); lift sensor at x = {:.3}, z = {:.3} m",
        spec.particles, sensor.position.x, sensor.position.z
    ));
    let plan = plan(sensor.clone());
    // two runs at a time, one per core
    let PairedRuns {
        outcomes,
        failures,
        alone,
    } = run_plan(
        "reduce drum",
        (&plan, |p| p.0),
        |(name, it, red)| run(name, *it, red.clone(), &start, &spec, (seconds, average)),
        |o| {
            format!(
                "{}: θ = {:.1} ± {:.1}°, h = {:.2} ± {:.2}, {:.0} s",
                o.name, o.theta.0, o.theta.1, o.level.0, o.level.1, o.wall
            )
        },
        &mut progress,
    );
    write_plots(opts, &outcomes)?;
    write_summary(
        opts,
        &spec,
        &sensor,
        &outcomes,
        (&failures, &alone),
        (seconds, average),
    )?;
    progress.tick("written");
    Ok(failures.is_empty())
}

fn write_summary(
    opts: &SuiteOptions,
    spec: &DrumSpec,
    sensor: &SensorSplit,
    outcomes: &[Outcome],
    (failures, alone): (&[String], &[String]),
    (seconds, average): (f64, f64),
) -> SuiteResult<()> {
    let (reference, runs) = rows_versus_ref150(
        outcomes,
        |o| (o.name, (o.theta.0, o.level.0), (o.wall, o.steps)),
        |o| {
            let paper = PAPER.iter().find(|p| p.run == o.name);
            json!({
                "run": o.name,
                "theta_deg": o.theta.0,
                "theta_sd_deg": o.theta.1,
                "paper_theta_deg": paper.map(|p| p.theta.0),
                "paper_theta_sd_deg": paper.map(|p| p.theta.1),
                "reduction_level_sd": o.level.1,
                "paper_reduction_level": paper.and_then(|p| p.level).map(|h| h.0),
            })
        },
    );
    let summary = json!({
        "suite": "reduce-drum",
        "quick": opts.quick,
        "particles": spec.particles,
        "diameter_d": spec.diameter_d,
        "width_d": spec.width_d,
        "omega_rad_s": spec.omega,
        "frictionless_caps": spec.frictionless_caps,
        "linear_stiffness_N_per_m": spec.linear_stiffness,
        "run_s": seconds,
        "average_over_last_s": average,
        "lift_sensor_position_m": [sensor.position.x, sensor.position.y, sensor.position.z],
        "lift_sensor": "a box 8d high across the lifting half of the drum and its full width, centred in height on the highest particle there",
    });
    crate::runs::write_paired_summary(&opts.out, summary, runs, (failures, alone))?;
    let mut md = report::heading("Rotating drum (model-reduction paper, Table 3)", opts.quick);
    let _ = writeln!(
        md,
        "{} bi-disperse particles, D = {}d, width {}d, Ω = {} rad/s, frictionless end caps, linear k_n = 3 kN/m, \
         Δt = 5 ms. One revolution at N_it = 150, then each run for {seconds} s; θ (surface over the central D/2) and h \
         averaged over the last {average} s (mean ± sd of samples every {SAMPLE} s). Lift sensor (cs-150): a band 8d high \
         across the lifting half (from the axis to the wall), centred at x = {:.3} m, z = {:.3} m. Load: {}.\n",
        spec.particles,
        spec.diameter_d,
        spec.width_d,
        spec.omega,
        sensor.position.x,
        sensor.position.z,
        report::load_average()
    );
    report::table_header(
        &mut md,
        "run | θ ours [°] | θ paper [°] | θ − θ(ref-150) [°] | h ours | h paper | wall [s] | speed-up over ref-150",
    );
    for o in outcomes {
        let paper = PAPER.iter().find(|p| p.run == o.name);
        let _ = writeln!(
            md,
            "| {} | {:.1} ± {:.1} | {} | {:+.1} | {:.2} ± {:.2} | {} | {:.0} | {:.2} |",
            o.name,
            o.theta.0,
            o.theta.1,
            paper.map_or("-".into(), |p| format!(
                "{:.0} ± {:.0}",
                p.theta.0, p.theta.1
            )),
            reference.map_or(f64::NAN, |r| o.theta.0 - r.0),
            o.level.0,
            o.level.1,
            paper.map_or("-".into(), |p| p
                .level
                .map_or("0".into(), |h| format!("{:.1} ± {:.1}", h.0, h.1))),
            o.wall,
            reference.map_or(f64::NAN, |r| r.1 / o.wall),
        );
    }
    md += &crate::runs::alone_note(alone);
    let _ = writeln!(
        md,
        "\nFailed runs: {failures:?}\n\nPlots: `theta.svg`, `level.svg`, `angle_by_run.svg`. Data: `drum.csv`."
    );
    report::write(&opts.out.join("report.md"), &md)
}

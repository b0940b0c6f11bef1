//! `cargo xtask reduce conveyor [--quick]`: the adaptive-model-reduction
//! paper's conveyor (section 4, Table 3, Figs. 7-8). The belt fills at
//! full resolution (N_it = 150) until the heap discharges steadily; three
//! runs then continue from that state: ref-500 and ref-150 (full
//! resolution) and cs-150 (contact split and a sensor over the belt's
//! head, where the material leaves the belt). Each run reports the heap's
//! angle of repose θ_conv on its upstream face
//! ([`conveyor::upstream_face_angle`]), the carried heap's flanks across
//! the belt ([`conveyor::heap_angle`]), the discharge profile 15d below the belt,
//! and h(t), averaged over the last part of the run.

use crate::SuiteOptions;
use crate::plot::{self, Axes, Series};
use crate::report::{self, Progress, SuiteResult};
use crate::runs::{
    PairedRuns, Samples, TraceTitles, angle_by_run_plot, history_stepper, mean_sd,
    rows_versus_ref150, run_plan, theta_and_level_plots,
};
use ndem_math::Vec3;
use ndem_reduce::{Reducer, ReductionSettings};
use ndem_scenes::Scene;
use ndem_scenes::conveyor::{self, ConveyorBelt, ConveyorSpec, DischargeProfile};
use ndem_solve::ImpulseHistory;
use ndem_step::Stepper;
use serde_json::json;
use std::fmt::Write as _;
use std::time::Instant;

/// The paper's Table 3 conveyor rows: `(run, θ [°], ± [°], h)`.
const PAPER: [(&str, f64, f64, Option<f64>); 3] = [
    ("ref-500", 41.5, 0.7, None),
    ("ref-150", 40.6, 0.5, None),
    ("cs-150", 40.3, 0.8, Some(0.85)),
];

/// Sampling interval \[s\].
const SAMPLE: f64 = 0.05;

/// Discharge-profile bins: 1d wide from 5d behind the head to 25d past it.
const PROFILE: (f64, f64) = (-5.0, 25.0);

struct Start {
    scene: Scene,
    history: ImpulseHistory,
    time: f64,
    step: u64,
    parked: usize,
}

struct Sample {
    t: f64,
    /// θ_conv: the heap's upstream face along the belt [°].
    theta: f64,
    /// The carried heap's flanks across the belt (surcharge angle) [°].
    flank: f64,
    level: f64,
    /// Particles in play (not retired).
    particles: usize,
}

struct Outcome {
    name: &'static str,
    trace: Vec<Sample>,
    theta: (f64, f64),
    flank: (f64, f64),
    level: (f64, f64),
    particles: f64,
    /// Particles per second discharged over the head in the window.
    discharge_rate: f64,
    /// Particles per second that left over the belt's sides or tail.
    spill_rate: f64,
    /// `(x past the head [d], crossings per second per d)`.
    profile: Vec<(f64, f64)>,
    wall: f64,
    steps: usize,
}

/// One step of the conveyor: the scene (emitter, solve) and then the
/// particles that fell past the measuring plane are retired.
fn step(
    scene: &mut Scene,
    st: &mut Stepper,
    belt: &ConveyorBelt,
    parked: &mut usize,
) -> SuiteResult<Vec<Vec3>> {
    scene.step(st).map_err(|e| e.to_string())?;
    belt.retire_discharged(&mut scene.world, parked)
        .map_err(|e| e.to_string())
}

fn run(
    name: &'static str,
    iterations: usize,
    reduction: Option<ReductionSettings>,
    (start, belt): (&Start, &ConveyorBelt),
    (seconds, average): (f64, f64),
) -> SuiteResult<Outcome> {
    let mut scene = start.scene.clone();
    let mut parked = start.parked;
    let dt = scene.settings.dt;
    let mut st = history_stepper(iterations, scene.settings)?;
    if !st.set_history(start.history.clone()) {
        return Err("the warm-start policy keeps no history to continue from".into());
    }
    st.set_clock(start.time, start.step);
    if let Some(r) = reduction {
        st.set_hooks(Box::new(Reducer::new(r).map_err(|e| e.to_string())?));
    }
    let steps = (seconds / dt).round() as usize;
    let every = (SAMPLE / dt).round() as usize;
    let mut profile = DischargeProfile::new(PROFILE.0, PROFILE.1);
    let mut trace = Vec::new();
    let clock = Instant::now();
    for k in 1..=steps {
        let crossed =
            step(&mut scene, &mut st, belt, &mut parked).map_err(|e| format!("{name}: {e}"))?;
        let t = k as f64 * dt;
        if t > seconds - average {
            profile.record(belt, &crossed);
        }
        if k % every == 0 {
            trace.push(Sample {
                t,
                theta: conveyor::upstream_face_angle(&scene.world, belt),
                flank: conveyor::heap_angle(&scene.world, belt),
                level: st.hooks_as::<Reducer>().map_or(0.0, |r| r.stats().level),
                particles: belt.particles_in_play(&scene.world),
            });
        }
    }
    let window: Vec<&Sample> = trace.iter().filter(|s| s.t > seconds - average).collect();
    let thetas: Vec<f64> = window
        .iter()
        .map(|s| s.theta)
        .filter(|x| x.is_finite())
        .collect();
    let flanks: Vec<f64> = window
        .iter()
        .map(|s| s.flank)
        .filter(|x| x.is_finite())
        .collect();
    let levels: Vec<f64> = window.iter().map(|s| s.level).collect();
    let counts: Vec<f64> = window.iter().map(|s| s.particles as f64).collect();
    Ok(Outcome {
        name,
        theta: mean_sd(&thetas),
        flank: mean_sd(&flanks),
        level: mean_sd(&levels),
        particles: mean_sd(&counts).0,
        discharge_rate: profile.discharged as f64 / average,
        spill_rate: profile.spilled as f64 / average,
        profile: profile.rates(average),
        trace,
        wall: clock.elapsed().as_secs_f64(),
        steps,
    })
}

/// Fills the belt at full resolution until `fill` seconds.
fn fill(
    mut scene: Scene,
    belt: &ConveyorBelt,
    seconds: f64,
    progress: &mut Progress,
) -> SuiteResult<Start> {
    let mut st = history_stepper(150, scene.settings)?;
    let mut parked = 0;
    let steps = (seconds / scene.settings.dt).round() as usize;
    for k in 1..=steps {
        step(&mut scene, &mut st, belt, &mut parked).map_err(|e| format!("filling: {e}"))?;
        if k % (steps / 4).max(1) == 0 && k < steps {
            progress.note(&format!(
                "filling: t = {:.1} s, {} particles in play, {parked} discharged",
                st.time(),
                belt.particles_in_play(&scene.world)
            ));
        }
    }
    Ok(Start {
        history: st.history().cloned().unwrap_or_default(),
        time: st.time(),
        step: st.step_count(),
        parked,
        scene,
    })
}

/// Runs the suite.
pub fn conveyor_suite(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    let spec = if opts.quick {
        ConveyorSpec {
            length_d: 30.0,
            width_d: 28.0,
            rate: 600.0,
            source_d: (4.0, 9.0),
            source_from_tail_d: 10.0,
            ..ConveyorSpec::default()
        }
    } else {
        ConveyorSpec::default()
    };
    let (fill_s, seconds, average) = if opts.quick {
        (8.0, 4.0, 3.0)
    } else {
        (15.0, 8.0, 6.0)
    };
    let mut progress = Progress::new("reduce conveyor", 5);
    let (scene, belt) = conveyor::conveyor_belt(spec).map_err(|e| e.to_string())?;
    let start = fill(scene, &belt, fill_s, &mut progress)?;
    progress.tick(&format!(
        "belt filled for {fill_s} s: {} particles in play, {} discharged",
        belt.particles_in_play(&start.scene.world),
        start.parked
    ));
    let cs = ReductionSettings {
        sensors: vec![belt.head_sensor()],
        ..ReductionSettings::default()
    };
    // ref-150 and cs-150 run side by side, so their wall times share the
    // same contention and their ratio is the speed-up
    let plan: [(&'static str, usize, Option<ReductionSettings>); 3] = [
        ("ref-150", 150, None),
        ("cs-150", 150, Some(cs)),
        ("ref-500", 500, None),
    ];
    let PairedRuns {
        outcomes,
        failures,
        alone,
    } = run_plan(
        "reduce conveyor",
        (&plan, |p| p.0),
        |(name, it, red)| run(name, *it, red.clone(), (&start, &belt), (seconds, average)),
        |o| {
            format!(
                "{}: θ = {:.1} ± {:.1}°, h = {:.2}, {:.0} particles, discharge {:.0}/s, {:.0} s",
                o.name, o.theta.0, o.theta.1, o.level.0, o.particles, o.discharge_rate, o.wall
            )
        },
        &mut progress,
    );
    write_plots(opts, &outcomes)?;
    write_summary(
        opts,
        &spec,
        &belt,
        &outcomes,
        (&failures, &alone),
        (fill_s, seconds, average),
    )?;
    progress.tick("written");
    Ok(failures.is_empty())
}

/// Titles of the θ(t) and h(t) plots.
const TRACE_TITLES: TraceTitles<'static> = TraceTitles {
    theta: "θ_conv: the heap's upstream face along the belt",
    level: "reduction level h(t) (paper: about 0.85 steady)",
    time: "t after filling [s]",
};

fn write_plots(opts: &SuiteOptions, outcomes: &[Outcome]) -> SuiteResult<()> {
    let mut rows = Vec::new();
    for o in outcomes {
        for s in &o.trace {
            rows.push(vec![
                o.name.to_string(),
                format!("{:.3}", s.t),
                format!("{:.3}", s.theta),
                format!("{:.3}", s.flank),
                format!("{:.4}", s.level),
                s.particles.to_string(),
            ]);
        }
    }
    report::write_csv(
        &opts.out.join("conveyor.csv"),
        &[
            "run",
            "t_s",
            "theta_upstream_face_deg",
            "flank_across_deg",
            "h",
            "particles",
        ],
        &rows,
    )?;
    let mut prof_rows = Vec::new();
    for o in outcomes {
        for (x, v) in &o.profile {
            prof_rows.push(vec![o.name.to_string(), format!("{x}"), format!("{v:e}")]);
        }
    }
    report::write_csv(
        &opts.out.join("discharge.csv"),
        &["run", "x_past_head_d", "particles_per_s"],
        &prof_rows,
    )?;
    let runs: Vec<(&str, Samples)> = outcomes
        .iter()
        .map(|o| {
            (
                o.name,
                o.trace.iter().map(|s| (s.t, s.theta, s.level)).collect(),
            )
        })
        .collect();
    theta_and_level_plots(&opts.out, &runs, &TRACE_TITLES)?;
    plot::line_plot(
        &opts.out.join("discharge.svg"),
        Axes::new(
            "discharge profile 15d below the belt (paper Fig. 8)",
            "x past the belt's head [d]",
            "particles per s per d",
        ),
        &outcomes
            .iter()
            .map(|o| Series::line(o.name, o.profile.clone()))
            .collect::<Vec<_>>(),
    )?;
    let paper: Vec<(&str, f64)> = PAPER.iter().map(|p| (p.0, p.1)).collect();
    let ours: Vec<(&str, f64)> = outcomes.iter().map(|o| (o.name, o.theta.0)).collect();
    angle_by_run_plot(
        &opts.out.join("angle_by_run.svg"),
        "θ_conv per run: 1 ref-500, 2 ref-150, 3 cs-150",
        &paper,
        &ours,
    )
}

fn write_summary(
    opts: &SuiteOptions,
    spec: &ConveyorSpec,
    belt: &ConveyorBelt,
    outcomes: &[Outcome],
    (failures, alone): (&[String], &[String]),
    (fill_s, seconds, average): (f64, f64, f64),
) -> SuiteResult<()> {
    let (reference, runs) = rows_versus_ref150(
        outcomes,
        |o| (o.name, (o.theta.0, o.level.0), (o.wall, o.steps)),
        |o| {
            let paper = PAPER.iter().find(|p| p.0 == o.name);
            json!({
                "run": o.name,
                "theta_deg": o.theta.0,
                "theta_sd_deg": o.theta.1,
                "flank_across_deg": o.flank.0,
                "flank_across_sd_deg": o.flank.1,
                "paper_theta_deg": paper.map(|p| p.1),
                "paper_theta_sd_deg": paper.map(|p| p.2),
                "paper_reduction_level": paper.and_then(|p| p.3),
                "mean_particles_in_play": o.particles,
                "discharge_rate_per_s": o.discharge_rate,
                "spill_rate_per_s": o.spill_rate,
            })
        },
    );
    let summary = json!({
        "suite": "reduce-conveyor",
        "quick": opts.quick,
        "belt_length_d": spec.length_d,
        "belt_width_d": spec.width_d,
        "belt_speed_m_s": spec.speed,
        "emission_rate_per_s": spec.rate,
        "source_d": [spec.source_d.0, spec.source_d.1],
        "source_height_m": spec.source_height,
        "discharge_level_m": belt.discharge_level(),
        "fill_s": fill_s,
        "run_s": seconds,
        "average_over_last_s": average,
    });
    crate::runs::write_paired_summary(&opts.out, summary, runs, (failures, alone))?;
    let mut md = report::heading("Conveyor (model-reduction paper, Table 3)", opts.quick);
    let _ = writeln!(
        md,
        "Belt {}d × {}d at {} m/s, source {}d along × {}d across, {} m above the belt, {} particles/s offered \
         (the emitter never emits into occupied space), d = 13 mm, linear k_n = 3 kN/m, Δt = 5 ms. Filled at \
         N_it = 150 for {fill_s} s, then each run for {seconds} s; θ_conv, h and the discharge profile over the last \
         {average} s. Load: {}.\n",
        spec.length_d,
        spec.width_d,
        spec.speed,
        spec.source_d.0,
        spec.source_d.1,
        spec.source_height,
        spec.rate,
        report::load_average()
    );
    report::table_header(
        &mut md,
        "run | θ_conv ours (upstream face) [°] | flanks across the belt [°] | θ paper [°] | θ − θ(ref-150) [°] | h ours | h paper | particles | discharge [1/s] | wall [s] | speed-up over ref-150",
    );
    for o in outcomes {
        let paper = PAPER.iter().find(|p| p.0 == o.name);
        let _ = writeln!(
            md,
            "| {} | {:.1} ± {:.1} | {:.1} ± {:.1} | {} | {:+.1} | {:.2} ± {:.2} | {} | {:.0} | {:.0} | {:.0} | {:.2} |",
            o.name,
            o.theta.0,
            o.theta.1,
            o.flank.0,
            o.flank.1,
            paper.map_or("-".into(), |p| format!("{:.1} ± {:.1}", p.1, p.2)),
            reference.map_or(f64::NAN, |r| o.theta.0 - r.0),
            o.level.0,
            o.level.1,
            paper
                .and_then(|p| p.3)
                .map_or("0".into(), |h| format!("{h:.2}")),
            o.particles,
            o.discharge_rate,
            o.wall,
            reference.map_or(f64::NAN, |r| r.1 / o.wall),
        );
    }
    md += &crate::runs::alone_note(alone);
    let _ = writeln!(
        md,
        "\nθ_conv: the slope the heap forms against the belt's motion under the source (the pile's angle of repose, \
         on a vertical section along the belt); flanks: the carried heap's sides across the belt at mid-length (the \
         conveyor's surcharge angle, the other reading of the paper's \"mid-section\"). The paper's θ is compared \
         with the first.\n\nFailed runs: {failures:?}\n\nPlots: `theta.svg`, `level.svg`, `discharge.svg` (Fig. 8), `angle_by_run.svg`. \
         Data: `conveyor.csv`, `discharge.csv`."
    );
    report::write(&opts.out.join("report.md"), &md)
}

//! `cargo xtask reduce collapse [--quick]`: the adaptive-model-reduction
//! paper's granular collapse (section 4, Table 3, Figs. 6, 9-11). One bed
//! is settled (PGS, N_it = 150), then ten runs start from it with the
//! gate raised: ref-500 and ref-150 (full resolution), tr-150-50-f and
//! tr-150-50-fv (model reduction with the background trial solve of 50
//! sweeps, force balance, and force and velocity tests), the same two
//! with a trial solve every second and every fourth step (`/2`, `/4`,
//! `TrialSplit::every`), and tr-150-50-fv on every and every fourth step
//! with the partial trial over each aggregate's outer two layers (`-d2`,
//! `TrialSplit::depth`).
//! θ_collapse is read at 2 s after the gate opens; h(t) and θ(t) are
//! recorded.

use crate::SuiteOptions;
use crate::report::{self, Progress, SuiteResult};
use crate::runs::{TraceTitles, history_stepper, in_pairs, rows_versus_ref150, write_traces};
use ndem_reduce::{Reducer, ReductionSettings, TrialSplit};
use ndem_scenes::collapse::{
    CollapseCube, CollapseSpec, SETTLE_TIME, collapse_scene, surface_angle,
};
use ndem_step::{Stepper, World};
use serde_json::json;
use std::fmt::Write as _;
use std::time::Instant;

/// Titles of the θ(t) and h(t) plots.
const TRACE_TITLES: TraceTitles<'static> = TraceTitles {
    theta: "top-surface angle during the collapse (paper Fig. 10)",
    level: "reduction level h(t) (paper Fig. 11)",
    time: "t after the gate opens [s]",
};

/// The paper's Table 3 collapse row: `(run, θ [°])`.
const PAPER: [(&str, f64); 4] = [
    ("ref-500", 36.2),
    ("ref-150", 29.9),
    ("tr-150-50-f", 37.5),
    ("tr-150-50-fv", 34.0),
];

struct Outcome {
    name: &'static str,
    /// `(t, θ, h)` every 0.05 s after the gate opens.
    trace: Vec<(f64, f64, f64)>,
    theta: f64,
    /// Potential energy lost from the gate's opening to the end \[J\].
    energy_drop: f64,
    mean_level: f64,
    wall: f64,
    steps: usize,
}

/// Particles without any contact (the paper discards those that leave
/// the contact network).
fn detached(world: &World, stepper: &Stepper) -> Vec<bool> {
    let mut touched = vec![false; world.len()];
    for c in stepper.contacts().iter() {
        touched[c.body_a()] = true;
        touched[c.body_b()] = true;
    }
    touched.iter().map(|t| !t).collect()
}

#[allow(clippy::too_many_arguments)]
fn run(
    name: &'static str,
    iterations: usize,
    reduction: Option<ReductionSettings>,
    settled: &World,
    cube: CollapseCube,
    settings: ndem_step::StepSettings,
    seconds: f64,
) -> SuiteResult<Outcome> {
    let mut world = settled.clone();
    cube.open(&mut world, 1.0).map_err(|e| e.to_string())?;
    let energy_before = world.potential_energy();
    let mut st = history_stepper(iterations, settings)?;
    if let Some(r) = reduction {
        st.set_hooks(Box::new(Reducer::new(r).map_err(|e| e.to_string())?));
    }
    let steps = (seconds / settings.dt).round() as usize;
    let every = (0.05 / settings.dt).round() as usize;
    let mut trace = Vec::new();
    let (mut level_sum, mut theta) = (0.0, f64::NAN);
    let start = Instant::now();
    for k in 1..=steps {
        st.step(&mut world).map_err(|e| format!("{name}: {e}"))?;
        let level = st.hooks_as::<Reducer>().map_or(0.0, |r| r.stats().level);
        level_sum += level;
        if k % every == 0 || k == steps {
            theta = surface_angle(&world, cube.first_particle.index(), &detached(&world, &st));
            trace.push((k as f64 * settings.dt, theta, level));
        }
    }
    Ok(Outcome {
        name,
        trace,
        theta,
        energy_drop: energy_before - world.potential_energy(),
        mean_level: level_sum / steps.max(1) as f64,
        wall: start.elapsed().as_secs_f64(),
        steps,
    })
}

/// Writes the θ(t) and h(t) CSV and plots.
fn write_outcome_traces(opts: &SuiteOptions, outcomes: &[Outcome]) -> SuiteResult<()> {
    let runs = outcomes.iter().map(|o| (o.name, &o.trace));
    write_traces(&opts.out, "collapse.csv", runs, &TRACE_TITLES)
}

/// Runs the suite.
pub fn collapse(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    let spec = if opts.quick {
        CollapseSpec {
            particles: 1000,
            side: 9.5,
            ..CollapseSpec::default()
        }
    } else {
        CollapseSpec::default()
    };
    let (settle_time, seconds) = (SETTLE_TIME, 2.0);
    let mut progress = Progress::new("reduce collapse", 16);
    // the built-in scene: `ndem run collapse --reduce` runs its preset,
    // tr-150-50-fv, switched on at the opening
    let (scene, cube) = collapse_scene(spec).map_err(|e| e.to_string())?;
    let preset = scene
        .reduce_preset
        .clone()
        .ok_or("the collapse scene has no reduction preset")?;
    let settings = scene.settings;
    let mut world = scene.world;
    let mut settle = history_stepper(150, settings)?;
    for _ in 0..(settle_time / settings.dt).round() as usize {
        settle
            .step(&mut world)
            .map_err(|e| format!("settling: {e}"))?;
    }
    let kinetic = world.kinetic_energy();
    progress.tick(&format!(
        "{} particles settled for {settle_time} s (kinetic energy {kinetic:.2e} J)",
        spec.particles
    ));
    let trial = |velocity_test, every, depth, disturbed_only| ReductionSettings {
        trial_split: preset.trial_split.map(|t| TrialSplit {
            velocity_test,
            every,
            depth,
            disturbed_only,
            ..t
        }),
        start_time: 0.0,
        merge_with_static: false,
        ..preset.clone()
    };
    // the paper's four runs, the trial runs with a trial solve every
    // second and every fourth step (`TrialSplit::every`), partial trial
    // solves over each aggregate's outer 2 layers (`TrialSplit::depth`),
    // trial solves over the members within 4 layers of a disturbed
    // contact (`TrialSplit::disturbed_only`), and those with the deposit
    // merged with the floor (`ReductionSettings::merge_with_static`)
    let on_static = |settings: ReductionSettings| ReductionSettings {
        merge_with_static: true,
        ..settings
    };
    let plan: [(&'static str, usize, Option<ReductionSettings>); 14] = [
        ("ref-500", 500, None),
        ("ref-150", 150, None),
        ("tr-150-50-f", 150, Some(trial(false, 1, None, false))),
        ("tr-150-50-fv", 150, Some(trial(true, 1, None, false))),
        ("tr-150-50-f/2", 150, Some(trial(false, 2, None, false))),
        ("tr-150-50-fv/2", 150, Some(trial(true, 2, None, false))),
        ("tr-150-50-f/4", 150, Some(trial(false, 4, None, false))),
        ("tr-150-50-fv/4", 150, Some(trial(true, 4, None, false))),
        ("tr-150-50-fv-d2", 150, Some(trial(true, 1, Some(2), false))),
        (
            "tr-150-50-fv/4-d2",
            150,
            Some(trial(true, 4, Some(2), false)),
        ),
        (
            "tr-150-50-fv-near4",
            150,
            Some(trial(true, 1, Some(4), true)),
        ),
        (
            "tr-150-50-fv/4-near4",
            150,
            Some(trial(true, 4, Some(4), true)),
        ),
        (
            "tr-150-50-fv-near4-static",
            150,
            Some(on_static(trial(true, 1, Some(4), true))),
        ),
        (
            "tr-150-50-fv/4-near4-static",
            150,
            Some(on_static(trial(true, 4, Some(4), true))),
        ),
    ];
    // two runs at a time, one per core
    let results = in_pairs(
        &plan,
        |(name, it, red)| run(name, *it, red.clone(), &world, cube, settings, seconds),
        |r| {
            if let Ok(o) = r {
                progress.tick(&format!(
                    "{}: θ = {:.1}°, mean h = {:.2}, {:.0} s",
                    o.name, o.theta, o.mean_level, o.wall
                ));
            }
        },
    );
    let outcomes = results.into_iter().collect::<SuiteResult<Vec<_>>>()?;
    write_outcome_traces(opts, &outcomes)?;
    let reference_drop = outcomes
        .iter()
        .find(|o| o.name == "ref-150")
        .map(|o| o.energy_drop);
    let (_, runs) = rows_versus_ref150(
        &outcomes,
        |o| (o.name, (o.theta, o.mean_level), (o.wall, o.steps)),
        |o| {
            let paper = PAPER.iter().find(|p| p.0 == o.name).map(|p| p.1);
            json!({
                "run": o.name,
                "theta_deg": o.theta,
                "potential_energy_drop_J": o.energy_drop,
                "energy_drop_over_ref150": reference_drop.map(|d| o.energy_drop / d),
                "paper_theta_deg": paper,
            })
        },
    );
    let summary = json!({
        "suite": "reduce-collapse",
        "quick": opts.quick,
        "particles": spec.particles,
        "cube_side_d": spec.side,
        "linear_stiffness_N_per_m": spec.stiffness,
        "dt_s": settings.dt,
        "settle_s": settle_time,
        "kinetic_energy_after_settling_J": kinetic,
        "seconds_after_opening": seconds,
        "runs": runs,
        "paper_h": "0 % (ref), 50-100 % (tr)",
        "note": "runs ran two at a time, one per core: wall times include the other run's memory traffic",
    });
    report::write_summary(&opts.out, &summary)?;
    let mut md = String::new();
    let _ = writeln!(md, "# Granular collapse (model-reduction paper, Table 3)\n");
    let _ = writeln!(
        md,
        "{} bi-disperse particles, cube {}d, linear k_n = {} N/m, Δt = {} s; θ at {seconds} s after the gate opens. Load: {}.\n",
        spec.particles,
        spec.side,
        spec.stiffness,
        settings.dt,
        report::load_average()
    );
    report::table_header(
        &mut md,
        "run | θ ours [°] | θ paper [°] | θ − θ(ref-150) [°] | energy drop / ref-150 | mean h | wall [s] | speed-up over ref-150",
    );
    for r in &runs {
        let _ = writeln!(
            md,
            "| {} | {:.1} | {} | {:+.1} | {:.2} | {:.2} | {:.0} | {:.2} |",
            r["run"].as_str().unwrap_or(""),
            r["theta_deg"].as_f64().unwrap_or(f64::NAN),
            r["paper_theta_deg"]
                .as_f64()
                .map_or("-".into(), |x| format!("{x:.1}")),
            r["theta_minus_ref150_deg"].as_f64().unwrap_or(f64::NAN),
            r["energy_drop_over_ref150"].as_f64().unwrap_or(f64::NAN),
            r["mean_reduction_level"].as_f64().unwrap_or(f64::NAN),
            r["wall_s"].as_f64().unwrap_or(f64::NAN),
            r["speed_up_over_ref150"].as_f64().unwrap_or(f64::NAN),
        );
    }
    let _ = writeln!(
        md,
        "\nPlots: `theta.svg` (Fig. 10), `level.svg` (Fig. 11). Data: `collapse.csv`."
    );
    report::write(&opts.out.join("report.md"), &md)?;
    progress.tick("written");
    Ok(true)
}

//! `cargo xtask excavator [--quick] [timing] [coloured] [active-set]`: the warm-starting paper's
//! excavator (section 5, Figs. 18-19) dug with cold and with history warm
//! starting at Δt = 2.5 ms, N_it = 25 (PGS for the particles, the direct
//! block for the machine).
//!
//! Writes the cylinder force trajectories (`forces_<run>.csv`, the Fig. 19
//! plot of the middle (arm) cylinder), surface height maps before digging
//! and at the end (`heights_<run>_<when>.csv`, SVG maps), the displaced
//! volume, the bucket fill, wall time per simulated second and per stage,
//! `summary.json` and `report.md` with the paper's figures beside ours.
//! `timing` runs only the warm start over the settling and the first
//! second of the cycle, to measure the cost per simulated second (at paper
//! scale without `--quick`). `coloured` sweeps the contacts in the coloured
//! order on every core (`pgs-direct-coloured`): with `timing` the one run
//! uses it; alone it adds a run with it beside the scene's `pgs-direct` and
//! compares the two. `active-set` (with `timing`) solves the impact stage
//! on the active set the impacts reach (`ImpactScope::ActiveSet`, join
//! velocity 5e-3 m/s) instead of the scene's whole network.

use crate::SuiteOptions;
use crate::plot::{self, Axes, Field, Series};
use crate::report::{self, Progress, SuiteResult};
use ndem_scenes::excavator::{
    ExcavatorSpec, HeightMap, Machine, bucket_fill, excavator_with_machine,
};
use ndem_scenes::{SolverChoice, WarmStartChoice};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;

/// Height-map cell \[m\].
const CELL: f64 = 0.1;

/// What one run measured.
struct Run {
    name: &'static str,
    particles: usize,
    /// `(t, phase index, slew torque, boom, arm, bucket cylinder forces,
    /// largest overlap relative to its contact's radius)`.
    forces: Vec<[f64; 7]>,
    before: HeightMap,
    after: HeightMap,
    /// Bucket fill `(count, solid volume, mass)` at the end of the lift.
    fill_after_lift: (usize, f64, f64),
    /// Largest fill seen.
    fill_max: (usize, f64, f64),
    wall: f64,
    simulated: f64,
    stage_seconds: BTreeMap<&'static str, f64>,
    /// Per phase of the schedule: time and impact-stage figures.
    phase_seconds: BTreeMap<String, PhaseTally>,
    statuses: BTreeMap<&'static str, usize>,
    steps: usize,
    mean_contacts: f64,
    /// Mean reduction level h over the cycle (0 without reduction).
    mean_level: f64,
    /// Why the run stopped early (the step's error), if it did.
    failure: Option<String>,
}

/// One run's choices.
#[derive(Clone, Copy)]
struct RunChoice {
    name: &'static str,
    warm: WarmStartChoice,
    solver: SolverChoice,
    reduce: bool,
    /// With `reduce`: the bucket carries its load merged
    /// (`ReductionSettings::carried_loads`), and its sensor is removed once
    /// the bucket stops digging (the end of the curl), so that the load in
    /// it is no longer held resolved.
    carry: bool,
    /// With `reduce`: aggregates resting on the trench's floor and walls
    /// merge with them (`ReductionSettings::merge_with_static`).
    on_static: bool,
    /// The impact stage on the default active set
    /// (`ImpactScope::active_set()`) instead of the scene's whole network.
    active_set: bool,
}

/// One phase's steps: their time, and what their impact stages solved.
#[derive(Debug, Default)]
struct PhaseTally {
    steps: usize,
    step_s: f64,
    impact_s: f64,
    /// Steps with an impacting contact.
    impacting: usize,
    /// Over those steps: the contacts of the impact problems solved, and
    /// the solver contacts.
    impact_contacts: usize,
    contacts: usize,
    /// Steps whose impact problem held more than a quarter of the solver
    /// contacts (the whole network, or an active set that gave way to it).
    wide: usize,
    /// Sum over the steps of the reduction level h (0 without reduction).
    level: f64,
}

impl PhaseTally {
    /// Counts step `st`, after which the reduction level was `level`.
    fn add(&mut self, st: &ndem_step::StepStats, level: f64) {
        self.steps += 1;
        self.level += level;
        self.step_s += st.times.total.as_secs_f64();
        self.impact_s += st.times.impact.as_secs_f64();
        if st.impacts > 0 {
            self.impacting += 1;
            self.impact_contacts += st.impact_contacts;
            self.contacts += st.contacts;
            self.wide += usize::from(4 * st.impact_contacts > st.contacts);
        }
    }

    fn json(&self) -> Value {
        json!({
            "steps": self.steps,
            "step_s": self.step_s,
            "impact_s": self.impact_s,
            "impact_share": self.impact_s / self.step_s,
            "steps_with_impacts": self.impacting,
            "impact_problem_share_of_contacts": self.impact_contacts as f64 / self.contacts.max(1) as f64,
            "steps_solving_over_a_quarter": self.wide,
            "mean_reduction_level": self.level / self.steps.max(1) as f64,
        })
    }
}

fn simulate(
    spec: ExcavatorSpec,
    choice: RunChoice,
    until: Option<f64>,
    alone: bool,
) -> SuiteResult<(Run, Machine)> {
    let name = choice.name;
    let (mut scene, machine) = excavator_with_machine(spec).map_err(|e| e.to_string())?;
    scene.warm_start = choice.warm;
    scene.solver = choice.solver;
    if choice.active_set {
        scene.settings.impact_scope = ndem_step::ImpactScope::active_set();
    }
    if !alone {
        // the runs share the 2 cores: one thread each (the same result)
        scene.threads = 1;
    }
    if choice.reduce {
        // the scene's `--reduce` preset: a sensor that moves with the
        // bucket keeps the material around it resolved
        let preset = scene
            .reduce_preset
            .clone()
            .ok_or("the excavator has a reduce preset")?;
        scene.reduction = Some(ndem_reduce::ReductionSettings {
            carried_loads: choice.carry,
            merge_with_static: choice.on_static,
            ..preset
        });
    }
    let mut stepper = scene.stepper().map_err(|e| e.to_string())?;
    let dt = scene.settings.dt;
    let duration = until.unwrap_or(scene.duration);
    let steps = (duration / dt).round() as usize;
    let schedule = machine.schedule.clone();
    let phase_index = |t: f64| {
        schedule
            .times
            .partition_point(|&x| x <= t)
            .saturating_sub(1)
    };
    let pose_time =
        |phase: &str| schedule.times[schedule.phases.iter().position(|p| p == phase).unwrap_or(0)];
    let lift_end = pose_time("lift");
    let dig_end = choice.carry.then(|| pose_time("curl"));
    let mut forces = Vec::with_capacity(steps);
    let mut before = None;
    let mut fill_after_lift = (0, 0.0, 0.0);
    let mut fill_max = (0, 0.0, 0.0);
    let mut stage_seconds: BTreeMap<&'static str, f64> = BTreeMap::new();
    let mut phase_seconds: BTreeMap<String, PhaseTally> = BTreeMap::new();
    let mut statuses: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut contacts = 0usize;
    let (mut level_sum, mut level_steps) = (0.0, 0usize);
    let start = Instant::now();
    let mut last_report = Instant::now();
    let mut failure = None;
    let mut done = 0;
    for k in 0..steps {
        if let Some(r) = stepper.hooks_as::<ndem_reduce::Reducer>()
            && !r.settings().sensors.is_empty()
            && dig_end.is_some_and(|t| k as f64 * dt >= t)
        {
            r.remove_sensor(0).map_err(|e| e.to_string())?;
        }
        let st = match scene.step(&mut stepper) {
            Ok(st) => st,
            Err(e) => {
                failure = Some(format!("{name}: {e}"));
                break;
            }
        };
        done = k + 1;
        let r = stepper.joint_reactions(&scene.world);
        let drive = |j: usize| r[j].drive_force.unwrap_or(f64::NAN);
        forces.push([
            st.time,
            phase_index(st.time) as f64,
            drive(machine.slew.index()),
            drive(machine.cylinders[0].index()),
            drive(machine.cylinders[1].index()),
            drive(machine.cylinders[2].index()),
            st.overlap_max,
        ]);
        for (stage, d) in [
            ("detection", st.times.detection),
            ("assembly", st.times.assembly),
            ("impact", st.times.impact),
            ("continuous", st.times.continuous),
            ("total", st.times.total),
        ] {
            *stage_seconds.entry(stage).or_default() += d.as_secs_f64();
        }
        let level = stepper
            .hooks_as::<ndem_reduce::Reducer>()
            .map(|r| r.stats().level);
        let phase = schedule.phase_at(st.time).to_string();
        phase_seconds
            .entry(phase)
            .or_default()
            .add(&st, level.unwrap_or(0.0));
        *statuses.entry(st.status.name()).or_default() += 1;
        if st.time > spec.settle_time
            && let Some(level) = level
        {
            level_sum += level;
            level_steps += 1;
        }
        contacts += st.contacts;
        if before.is_none() && st.time >= spec.settle_time - 0.5 * dt {
            before = Some(HeightMap::measure(&scene.world, &machine, CELL));
        }
        if k % 20 == 0 || (st.time - lift_end).abs() < 0.5 * dt {
            let fill = bucket_fill(&scene.world, &machine);
            if fill.1 > fill_max.1 {
                fill_max = fill;
            }
            if (st.time - lift_end).abs() < 0.5 * dt {
                fill_after_lift = fill;
            }
        }
        if last_report.elapsed().as_secs_f64() > 30.0 {
            last_report = Instant::now();
            eprintln!(
                "[excavator {name}] t = {:.2} s of {duration:.1} ({}), {} contacts, {:.0} s",
                st.time,
                schedule.phase_at(st.time),
                st.contacts,
                start.elapsed().as_secs_f64()
            );
        }
    }
    let after = HeightMap::measure(&scene.world, &machine, CELL);
    // spheres only: model reduction's aggregate bodies follow the particles
    let particles = scene.world.shapes()[machine.first_particle.index()..]
        .iter()
        .filter(|s| s.sphere_radius().is_some())
        .count();
    Ok((
        Run {
            name,
            particles,
            forces,
            before: before.unwrap_or_else(|| after.clone()),
            after,
            fill_after_lift,
            fill_max,
            wall: start.elapsed().as_secs_f64(),
            simulated: done as f64 * dt,
            stage_seconds,
            phase_seconds,
            statuses,
            steps: done,
            mean_contacts: contacts as f64 / done.max(1) as f64,
            mean_level: level_sum / level_steps.max(1) as f64,
            failure,
        },
        machine,
    ))
}

/// Every run after the first against the first: wall time per simulated
/// second, the drag phase's arm-cylinder force, the lowered volume and the
/// bucket fill after the lift, as ratios, and the mean reduction level.
fn against_first(runs: &[Run], machine: &Machine) -> Value {
    let first = &runs[0];
    let drag = |r: &Run| phase_mean(r, machine, "drag", 4);
    let (first_lowered, _) = first.before.changes(&first.after);
    let by_run: serde_json::Map<String, Value> = runs[1..]
        .iter()
        .map(|run| {
            let (lowered, _) = run.before.changes(&run.after);
            let figures = json!({
                "speed_up_first_over_this_wall": (first.wall / first.simulated) / (run.wall / run.simulated),
                "mean_reduction_level": run.mean_level,
                "drag_force_over_first": drag(run) / drag(first),
                "lowered_volume_over_first": lowered / first_lowered,
                "bucket_fill_after_lift_over_first": run.fill_after_lift.2 / first.fill_after_lift.2,
            });
            (run.name.to_string(), figures)
        })
        .collect();
    Value::Object(by_run)
}

/// `column` over the rows whose phase is `phase` (none when the schedule
/// has no such phase or the run did not reach it).
fn phase_column(run: &Run, machine: &Machine, phase: &str, column: usize) -> Vec<f64> {
    let Some(p) = machine.schedule.phases.iter().position(|x| x == phase) else {
        return Vec::new();
    };
    // the phase named by a row runs from the previous row to it
    run.forces
        .iter()
        .filter(|r| r[1] as usize + 1 == p)
        .map(|r| r[column])
        .collect()
}

/// Mean of `|column|` over the rows whose phase is `phase` (NaN, i.e.
/// `null` in `summary.json`, when the run did not reach it).
fn phase_mean(run: &Run, machine: &Machine, phase: &str, column: usize) -> f64 {
    let rows = phase_column(run, machine, phase, column);
    if rows.is_empty() {
        return f64::NAN;
    }
    rows.iter().map(|x| x.abs()).sum::<f64>() / rows.len() as f64
}

/// Largest of `column` over the rows whose phase is `phase` (NaN when the
/// run did not reach it).
fn phase_max(run: &Run, machine: &Machine, phase: &str, column: usize) -> f64 {
    phase_column(run, machine, phase, column)
        .into_iter()
        .fold(f64::NAN, f64::max)
}

fn heights_csv(path: &std::path::Path, map: &HeightMap) -> SuiteResult<()> {
    let mut rows = Vec::new();
    for iy in 0..map.ny {
        for ix in 0..map.nx {
            let (x, y) = map.centre(ix, iy);
            let h = map.values[iy * map.nx + ix].map_or(String::new(), |h| format!("{h:.5}"));
            rows.push(vec![format!("{x:.3}"), format!("{y:.3}"), h]);
        }
    }
    report::write_csv(path, &["x_m", "y_m", "height_m"], &rows)
}

fn height_plot(
    path: &std::path::Path,
    title: &str,
    map: &HeightMap,
    depth: f64,
) -> SuiteResult<()> {
    plot::heat_map(
        path,
        &Field {
            title,
            nx: map.nx,
            nz: map.ny,
            values: &map.values,
            extent: (
                map.origin.0,
                map.origin.0 + map.nx as f64 * map.cell,
                map.origin.1,
                map.origin.1 + map.ny as f64 * map.cell,
            ),
            range: (-depth, 0.2),
            vertical: "y [m]",
        },
    )
}

/// Writes one run's CSV files and height maps; returns its summary entry.
fn run_outputs(
    opts: &SuiteOptions,
    run: &Run,
    machine: &Machine,
    spec: &ExcavatorSpec,
) -> SuiteResult<serde_json::Value> {
    let depth = machine.trench.1;
    let half_bucket = 0.5 * spec.machine.bucket_width;
    let side_strip = move |_x: f64, y: f64| y.abs() > half_bucket + 0.1;
    let header = [
        "t_s",
        "phase",
        "slew_torque_Nm",
        "boom_N",
        "arm_N",
        "bucket_N",
        "overlap_max",
    ];
    let rows: Vec<Vec<String>> = run
        .forces
        .iter()
        .map(|r| {
            let mut row = vec![format!("{:.4}", r[0])];
            row.push(
                machine.schedule.phases[(r[1] as usize + 1).min(machine.schedule.phases.len() - 1)]
                    .clone(),
            );
            row.extend(r[2..].iter().map(|x| format!("{x:.6e}")));
            row
        })
        .collect();
    report::write_csv(
        &opts.out.join(format!("forces_{}.csv", run.name)),
        &header,
        &rows,
    )?;
    for (when, map, title) in [
        ("before", &run.before, "before digging"),
        ("after", &run.after, "at the end"),
    ] {
        let file = |ext: &str| opts.out.join(format!("heights_{}_{when}.{ext}", run.name));
        heights_csv(&file("csv"), map)?;
        let title = format!("surface height {title}, {} start [m]", run.name);
        height_plot(&file("svg"), &title, map, depth)?;
    }
    let (lowered, raised) = run.before.changes(&run.after);
    // fraction of steps each drive spent at its force limit
    let saturated: Vec<f64> = (0..4)
        .map(|k| {
            let limit = machine.schedule.max_force[k];
            let at = run
                .forces
                .iter()
                .filter(|r| r[2 + k].abs() >= 0.999 * limit)
                .count();
            at as f64 / run.forces.len().max(1) as f64
        })
        .collect();
    let undisturbed_before = run.before.mean_where(|_, _| true);
    let undisturbed_after = run.after.mean_where(side_strip);
    Ok(json!({
        "run": run.name,
        "failure": run.failure,
        "particles": run.particles,
        "steps": run.steps,
        "simulated_s": run.simulated,
        "wall_s": run.wall,
        "wall_per_simulated_s": run.wall / run.simulated,
        "stage_s": run.stage_seconds,
        "by_phase": run.phase_seconds.iter().map(|(phase, t)| (phase.clone(), t.json())).collect::<serde_json::Map<_, _>>(),
        "statuses": run.statuses,
        "mean_contacts": run.mean_contacts,
        "mean_reduction_level": run.mean_level,
        "fraction_of_steps_at_force_limit": {"slew": saturated[0], "boom": saturated[1], "arm": saturated[2], "bucket": saturated[3]},
        "bed_height_after_settling_m": undisturbed_before,
        "side_strip_height_at_end_m": undisturbed_after,
        "volume_lowered_m3": lowered,
        "volume_raised_m3": raised,
        "bucket_fill_after_lift": {"particles": run.fill_after_lift.0, "solid_m3": run.fill_after_lift.1, "kg": run.fill_after_lift.2},
        "bucket_fill_max": {"particles": run.fill_max.0, "solid_m3": run.fill_max.1, "kg": run.fill_max.2},
        // the artificial compression of an under-resolved solve: the
        // step stops above 1
        "overlap_max_relative": {
            "settle": phase_max(run, machine, "settle", 6),
            "penetrate": phase_max(run, machine, "penetrate", 6),
            "drag": phase_max(run, machine, "drag", 6),
            "curl": phase_max(run, machine, "curl", 6),
            "lift": phase_max(run, machine, "lift", 6),
        },
        "arm_cylinder_mean_force_N": {
            "penetrate": phase_mean(run, machine, "penetrate", 4),
            "drag": phase_mean(run, machine, "drag", 4),
            "curl": phase_mean(run, machine, "curl", 4),
            "lift": phase_mean(run, machine, "lift", 4),
        },
    }))
}

/// Runs the suite.
pub fn run(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    let spec = if opts.quick {
        ExcavatorSpec::quick()
    } else {
        ExcavatorSpec::paper()
    };
    let timing = opts.args.iter().any(|a| a == "timing");
    let reduce = opts.args.iter().any(|a| a == "reduce");
    let carry = opts.args.iter().any(|a| a == "carry");
    let on_static = opts.args.iter().any(|a| a == "static");
    let coloured = opts.args.iter().any(|a| a == "coloured");
    let active_set = opts.args.iter().any(|a| a == "active-set");
    if active_set && !timing {
        return Err(
            "`excavator active-set` goes with `timing`: `excavator timing [coloured] active-set`"
                .into(),
        );
    }
    if carry && !reduce {
        return Err("`excavator carry` adds a run to `reduce`: `excavator reduce carry`".into());
    }
    if on_static && !reduce {
        return Err("`excavator static` adds a run to `reduce`: `excavator reduce static`".into());
    }
    if coloured && reduce {
        return Err("`excavator coloured` goes with `timing` or alone, not with `reduce`".into());
    }
    let choice = |name, warm, reduce| RunChoice {
        name,
        warm,
        solver: SolverChoice::PgsDirect,
        reduce,
        carry: false,
        on_static: false,
        active_set,
    };
    let runs_wanted: Vec<RunChoice> = if timing && coloured {
        vec![RunChoice {
            solver: SolverChoice::PgsDirectColoured,
            ..choice("warm-coloured", WarmStartChoice::History, false)
        }]
    } else if timing {
        vec![choice("warm", WarmStartChoice::History, false)]
    } else if coloured {
        vec![
            choice("warm", WarmStartChoice::History, false),
            RunChoice {
                solver: SolverChoice::PgsDirectColoured,
                ..choice("warm-coloured", WarmStartChoice::History, false)
            },
        ]
    } else if reduce {
        let mut runs = vec![
            choice("warm", WarmStartChoice::History, false),
            choice("warm-reduced", WarmStartChoice::History, true),
        ];
        if carry {
            runs.push(RunChoice {
                carry: true,
                ..choice("warm-reduced-carried", WarmStartChoice::History, true)
            });
        }
        if on_static {
            runs.push(RunChoice {
                on_static: true,
                ..choice("warm-reduced-static", WarmStartChoice::History, true)
            });
        }
        runs
    } else {
        vec![
            choice("cold", WarmStartChoice::Cold, false),
            choice("warm", WarmStartChoice::History, false),
        ]
    };
    let until = timing.then_some(spec.settle_time + 1.0);
    let mut progress = Progress::new("excavator", runs_wanted.len());
    let alone = runs_wanted.len() == 1;
    // the runs share nothing: one thread each (their wall times then
    // include the others' load; `timing` runs alone, on every core)
    let results: Vec<SuiteResult<(Run, Machine)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = runs_wanted
            .iter()
            .map(|&c| scope.spawn(move || simulate(spec, c, until, alone)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a run panicked".into())))
            .collect()
    });
    let mut runs = Vec::new();
    let mut machine = None;
    let (results, mut failures) = report::split_failures("excavator", results);
    failures.extend(results.iter().filter_map(|(r, _)| r.failure.clone()));
    for (run, m) in results {
        progress.tick(&format!(
            "{}: {} particles, {:.1} s simulated in {:.0} s",
            run.name, run.particles, run.simulated, run.wall
        ));
        machine = Some(m);
        runs.push(run);
    }
    let machine = match machine {
        Some(m) => m,
        None => {
            let (_, m) = excavator_with_machine(spec).map_err(|e| e.to_string())?;
            m
        }
    };
    let depth = machine.trench.1;
    let per_run = runs
        .iter()
        .map(|run| run_outputs(opts, run, &machine, &spec))
        .collect::<SuiteResult<Vec<_>>>()?;
    // one line per run: a column of `forces` (divided by `divisor`) against time
    let plot_column = |file: &str, axes: Axes<'_>, column: usize, divisor: f64| {
        let series: Vec<Series> = runs
            .iter()
            .map(|r| {
                Series::line(
                    format!("{} start", r.name),
                    r.forces
                        .iter()
                        .map(|f| (f[0], f[column] / divisor))
                        .collect(),
                )
            })
            .collect();
        plot::line_plot(&opts.out.join(file), axes, &series)
    };
    plot_column(
        "arm_cylinder_force.svg",
        Axes::new(
            "middle (arm) cylinder force, Δt = 2.5 ms, N_it = 25 (paper Fig. 19)",
            "t [s]",
            "force [kN]",
        ),
        4,
        1e3,
    )?;
    plot_column(
        "overlap_max.svg",
        Axes::new(
            "largest overlap relative to its contact's radius (the step stops above 1)",
            "t [s]",
            "δ/R",
        ),
        6,
        1.0,
    )?;
    let comparison = if (reduce || coloured) && runs.len() >= 2 {
        Some(against_first(&runs, &machine))
    } else if runs.len() == 2 {
        let (c, w) = (&runs[0], &runs[1]);
        let drag = |r: &Run| phase_mean(r, &machine, "drag", 4);
        let bed = |r: &Run| r.before.mean_where(|_, _| true);
        let (cl, _) = c.before.changes(&c.after);
        let (wl, _) = w.before.changes(&w.after);
        Some(json!({
            "drag_force_warm_over_cold": drag(w) / drag(c),
            "bed_height_difference_relative": (bed(w) - bed(c)) / (bed(c) + depth),
            "lowered_volume_warm_over_cold": wl / cl,
        }))
    } else {
        None
    };
    let summary = json!({
        "suite": "excavator",
        "quick": opts.quick,
        "timing_only": timing,
        "reduction_comparison": reduce,
        "order_comparison": coloured && !timing,
        "trench_m": spec.trench,
        "dt_s": 2.5e-3,
        "iterations": 25,
        "solver": runs_wanted.iter().map(|c| c.solver.name()).collect::<Vec<_>>(),
        "impact_join_velocity_m_s": active_set
            .then(ndem_step::ImpactScope::active_set)
            .and_then(ndem_step::ImpactScope::join_velocity),
        "schedule": {"phases": machine.schedule.phases, "times_s": machine.schedule.times},
        "runs": per_run,
        "failed_runs": failures,
        "cold_vs_warm": comparison,
        "paper": {
            "drag_force_warm_over_cold": "almost 1.5 (8-10 s)",
            "undisturbed_height_difference": "10 %",
            "displaced_volume_difference": "at least 30 %",
            "wall_per_simulated_s": "about 100 s on a 6-core Xeon X5690",
        },
        "note": if timing { "one run alone" } else { "the runs ran concurrently on the 2 cores, one thread each: wall times include each other's load" },
        "load_average": report::load_average(),
    });
    report::write_summary(&opts.out, &summary)?;
    report::write(&opts.out.join("report.md"), &report_md(&summary))?;
    Ok(failures.is_empty())
}

/// The report's table of every run against the first ([`against_first`]).
fn comparison_md(s: &mut String, comparison: &Value, reduction: bool) {
    let _ = if reduction {
        writeln!(s, "\n## Model reduction (model-reduction paper, Fig. 1)\n")
    } else {
        writeln!(
            s,
            "\n## Coloured contact order (`pgs-direct-coloured`) against the given one (`pgs-direct`)\n"
        )
    };
    let runs: Vec<(&String, &Value)> = comparison.as_object().into_iter().flatten().collect();
    let first = if reduction { "full" } else { "warm" };
    let names: Vec<String> = runs.iter().map(|(n, _)| format!("{n} / {first}")).collect();
    report::table_header(s, &format!("quantity | {}", names.join(" | ")));
    let mut rows = vec![(
        "wall time speed-up (first run's time / this run's)",
        "speed_up_first_over_this_wall",
    )];
    if reduction {
        rows.push(("mean reduction level h", "mean_reduction_level"));
    }
    rows.extend([
        ("drag-phase arm cylinder force", "drag_force_over_first"),
        ("lowered volume", "lowered_volume_over_first"),
        (
            "bucket fill after lift",
            "bucket_fill_after_lift_over_first",
        ),
    ]);
    for (label, key) in rows {
        let cells: Vec<String> = runs
            .iter()
            .map(|(_, r)| format!("{:.3}", r[key].as_f64().unwrap_or(f64::NAN)))
            .collect();
        let _ = writeln!(s, "| {label} | {} |", cells.join(" | "));
    }
}

/// Each run's time per step, impact stage's share and mean reduction
/// level h by phase of the schedule, in the schedule's order.
fn phases_md(s: &mut String, summary: &serde_json::Value) {
    let _ = writeln!(s, "\n## By phase\n");
    report::table_header(
        s,
        "run | phase | steps | step [ms] | impact stage [ms] | impact share | steps with impacts | their impact problems' share of the contacts | steps solving over a quarter | mean h",
    );
    let order = summary["schedule"]["phases"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for r in summary["runs"].as_array().into_iter().flatten() {
        for phase in order.iter().filter_map(|p| p.as_str()) {
            let p = &r["by_phase"][phase];
            let Some(steps) = p["steps"].as_f64() else {
                continue;
            };
            let per_step = |key: &str| 1e3 * p[key].as_f64().unwrap_or(f64::NAN) / steps;
            let _ = writeln!(
                s,
                "| {} | {phase} | {steps} | {:.1} | {:.1} | {:.2} | {} | {:.3} | {} | {:.3} |",
                r["run"].as_str().unwrap_or(""),
                per_step("step_s"),
                per_step("impact_s"),
                p["impact_share"].as_f64().unwrap_or(f64::NAN),
                p["steps_with_impacts"],
                p["impact_problem_share_of_contacts"]
                    .as_f64()
                    .unwrap_or(f64::NAN),
                p["steps_solving_over_a_quarter"],
                p["mean_reduction_level"].as_f64().unwrap_or(0.0)
            );
        }
    }
}

fn report_md(summary: &serde_json::Value) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Excavator (warm-starting paper, section 5)\n");
    let _ = writeln!(
        s,
        "Trench {} m, Δt = 2.5 ms, N_it = 25, PGS for the particles with the direct block for the machine (solver by run: {}). Load: {}.\n",
        summary["trench_m"], summary["solver"], summary["load_average"]
    );
    if let Some(v) = summary["impact_join_velocity_m_s"].as_f64() {
        let _ = writeln!(
            s,
            "Impact stage on the active set the impacts reach (join velocity {v:e} m/s), not the papers' whole network.\n"
        );
    }
    report::table_header(
        &mut s,
        "run | particles | wall s per simulated s | bed height after settling [m] | lowered volume [m³] | raised [m³] | bucket fill after lift [kg] | arm cylinder mean force in drag [kN] | largest overlap δ/R: settle, penetrate, drag | statuses",
    );
    for r in summary["runs"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "| {} | {} | {:.1} | {:.4} | {:.3} | {:.3} | {:.0} | {} | {} | {} |",
            r["run"].as_str().unwrap_or(""),
            r["particles"],
            r["wall_per_simulated_s"].as_f64().unwrap_or(f64::NAN),
            r["bed_height_after_settling_m"]
                .as_f64()
                .unwrap_or(f64::NAN),
            r["volume_lowered_m3"].as_f64().unwrap_or(f64::NAN),
            r["volume_raised_m3"].as_f64().unwrap_or(f64::NAN),
            r["bucket_fill_after_lift"]["kg"]
                .as_f64()
                .unwrap_or(f64::NAN),
            // `–` for a run that did not reach the drag
            r["arm_cylinder_mean_force_N"]["drag"]
                .as_f64()
                .map_or("–".into(), |f| format!("{:.1}", f / 1e3)),
            ["settle", "penetrate", "drag"]
                .map(|p| r["overlap_max_relative"][p]
                    .as_f64()
                    .map_or("–".into(), |x| format!("{x:.3}")))
                .join(", "),
            r["statuses"]
        );
    }
    let c = &summary["cold_vs_warm"];
    for f in summary["failed_runs"].as_array().into_iter().flatten() {
        let _ = writeln!(s, "\n**Failed run**: {}", f.as_str().unwrap_or(""));
    }
    let reduction = summary["reduction_comparison"].as_bool() == Some(true);
    if reduction || summary["order_comparison"].as_bool() == Some(true) {
        comparison_md(&mut s, c, reduction);
        if reduction {
            // where the reduced run gains: h and the step by phase
            phases_md(&mut s, summary);
        }
        return s;
    }
    if summary["timing_only"].as_bool() == Some(true) {
        phases_md(&mut s, summary);
        return s;
    }
    let _ = writeln!(s, "\n## Against the paper\n");
    let _ = writeln!(s, "| quantity | paper | ours |\n|---|---|---|");
    let _ = writeln!(
        s,
        "| drag-phase arm cylinder force, warm / cold | almost 1.5 | {:.3} |",
        c["drag_force_warm_over_cold"].as_f64().unwrap_or(f64::NAN)
    );
    let _ = writeln!(
        s,
        "| undisturbed height difference (bed height after settling, relative to the bed depth) | 10 % | {:.2} % |",
        100.0
            * c["bed_height_difference_relative"]
                .as_f64()
                .unwrap_or(f64::NAN)
    );
    let _ = writeln!(
        s,
        "| displaced (lowered) volume, warm / cold | differ by at least 30 % | {:.3} |",
        c["lowered_volume_warm_over_cold"]
            .as_f64()
            .unwrap_or(f64::NAN)
    );
    let _ = writeln!(
        s,
        "| wall time per simulated second | about 100 s (6-core Xeon X5690, 1e5 particles) | see the table (this machine: 2 cores, one used) |"
    );
    let _ = writeln!(
        s,
        "\nPlots: `arm_cylinder_force.svg` (Fig. 19), `overlap_max.svg` (largest overlap relative to its contact's radius), `heights_<run>_<before|after>.svg`. Data: `forces_<run>.csv`, `heights_<run>_<when>.csv`."
    );
    s
}

//! `cargo xtask creep [--quick]`: how a pile left at rest creeps. A
//! 200-sphere pile (the warm-starting paper's pile scene, Table 1
//! material, Hertz contacts) is formed and settled once; then, from that
//! same state, it is left at rest for 75 s (quick: 15 s) with each
//! combination of iterations per step, warm start and time step. Reported
//! per simulated minute: the potential-energy drift, the largest and the
//! mean displacement (relative to the radius), and the change of the
//! number of contacts.

use crate::SuiteOptions;
use crate::plot::{Axes, Series, line_plot};
use crate::report::{self, Progress, SuiteResult};
use ndem_scenes::builders::{self, PileSpec, Scene};
use ndem_scenes::{SolverChoice, WarmStartChoice};
use ndem_step::Stepper;
use serde_json::json;

/// One creep run.
struct Creep {
    iterations: usize,
    /// Adaptive model reduction on (resting spheres merged).
    reduce: bool,
    warm_start: WarmStartChoice,
    dt: f64,
    /// Potential-energy change per simulated minute \[J/min\].
    energy_per_minute: f64,
    /// Largest displacement per simulated minute, over the radius.
    max_displacement_per_minute: f64,
    /// Mean displacement per simulated minute, over the radius.
    mean_displacement_per_minute: f64,
    /// Contacts at the start and the end of the rest period.
    contacts: (usize, usize),
    /// Steps whose solve did not converge (of all).
    unconverged: (usize, usize),
    /// Potential energy against time `(t, E_p − E_p0)`.
    trace: Vec<(f64, f64)>,
}

/// The settled pile: formed with history warm start and 200 iterations,
/// then left 5 s to settle.
fn settled_pile(quick: bool) -> SuiteResult<Scene> {
    let mut scene = builders::pile(PileSpec {
        particles: 200,
        rate: 200.0,
        seed: 7,
    })
    .map_err(|e| e.to_string())?;
    scene.iterations = 200;
    scene.warm_start = WarmStartChoice::History;
    let mut stepper = scene.stepper().map_err(|e| e.to_string())?;
    let seconds = if quick { 4.0 } else { 6.0 };
    for _ in 0..(seconds / scene.settings.dt).round() as usize {
        scene.step(&mut stepper).map_err(|e| e.to_string())?;
    }
    Ok(scene)
}

fn creep(
    settled: &Scene,
    (iterations, warm_start, dt, reduce): (usize, WarmStartChoice, f64, bool),
    seconds: f64,
) -> SuiteResult<Creep> {
    let mut scene = settled.clone();
    if reduce {
        scene.reduction = Some(ndem_reduce::ReductionSettings::default());
    }
    scene.settings.dt = dt;
    scene.iterations = iterations;
    scene.warm_start = warm_start;
    scene.solver = SolverChoice::Pgs;
    let mut stepper: Stepper = scene.stepper().map_err(|e| e.to_string())?;
    let start_positions = scene.world.positions().to_vec();
    let radius = 0.5 * builders::D;
    let e0 = scene.world.potential_energy();
    let steps = (seconds / dt).round() as usize;
    let (mut first_contacts, mut last_contacts, mut unconverged) = (0, 0, 0);
    let mut trace = vec![(0.0, 0.0)];
    for k in 1..=steps {
        let s = scene.step(&mut stepper).map_err(|e| e.to_string())?;
        if k == 1 {
            first_contacts = s.contacts;
        }
        last_contacts = s.contacts;
        if s.status != ndem_solve::SolverStatus::Converged {
            unconverged += 1;
        }
        if k % (steps / 100).max(1) == 0 {
            trace.push((k as f64 * dt, scene.world.potential_energy() - e0));
        }
    }
    let minutes = seconds / 60.0;
    let moved: Vec<f64> = scene
        .world
        .positions()
        .iter()
        .zip(&start_positions)
        .enumerate()
        .filter(|(i, _)| scene.world.motions()[*i] == ndem_step::Motion::Dynamic)
        .map(|(_, (p, q))| (p - q).norm() / radius)
        .collect();
    Ok(Creep {
        iterations,
        reduce,
        warm_start,
        dt,
        energy_per_minute: (scene.world.potential_energy() - e0) / minutes,
        max_displacement_per_minute: moved.iter().copied().fold(0.0, f64::max) / minutes,
        mean_displacement_per_minute: moved.iter().sum::<f64>()
            / moved.len().max(1) as f64
            / minutes,
        contacts: (first_contacts, last_contacts),
        unconverged: (unconverged, steps),
        trace,
    })
}

/// `cargo xtask creep`.
pub fn run(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    let seconds = if opts.quick { 15.0 } else { 75.0 };
    let grid: Vec<(usize, WarmStartChoice, f64, bool)> = [25, 100, 500]
        .into_iter()
        .flat_map(|n| {
            [WarmStartChoice::Cold, WarmStartChoice::History]
                .into_iter()
                .map(move |w| (n, w, 0.005, false))
        })
        .chain([
            (100, WarmStartChoice::History, 0.0025, false),
            (100, WarmStartChoice::History, 0.001, false),
            (100, WarmStartChoice::History, 0.005, true),
        ])
        .collect();
    let mut progress = Progress::new("creep", grid.len() + 1);
    let settled = settled_pile(opts.quick)?;
    progress.tick(&format!(
        "pile formed and settled: {} spheres, E_p = {:.6} J",
        settled.world.dynamic_count(),
        settled.world.potential_energy()
    ));
    let mut runs = Vec::new();
    for (n, w, dt, reduce) in grid {
        let r = creep(&settled, (n, w, dt, reduce), seconds)?;
        progress.tick(&format!(
            "N_it {n}, {}{}, dt {dt}: dE_p {:.2e} J/min, max move {:.3} r/min",
            w.name(),
            if reduce { ", reduced" } else { "" },
            r.energy_per_minute,
            r.max_displacement_per_minute
        ));
        runs.push(r);
    }
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            vec![
                r.iterations.to_string(),
                r.warm_start.name().into(),
                r.reduce.to_string(),
                format!("{}", r.dt),
                format!("{:e}", r.energy_per_minute),
                format!("{:e}", r.max_displacement_per_minute),
                format!("{:e}", r.mean_displacement_per_minute),
                r.contacts.0.to_string(),
                r.contacts.1.to_string(),
                r.unconverged.0.to_string(),
                r.unconverged.1.to_string(),
            ]
        })
        .collect();
    report::write_csv(
        &opts.out.join("creep.csv"),
        &[
            "iterations",
            "warm_start",
            "reduction",
            "dt_s",
            "potential_energy_change_J_per_min",
            "max_displacement_radii_per_min",
            "mean_displacement_radii_per_min",
            "contacts_start",
            "contacts_end",
            "unconverged_steps",
            "steps",
        ],
        &rows,
    )?;
    let series: Vec<Series> = runs
        .iter()
        .map(|r| {
            Series::line(
                format!(
                    "N_it {} {}{} dt {}",
                    r.iterations,
                    r.warm_start.name(),
                    if r.reduce { " reduced" } else { "" },
                    r.dt
                ),
                r.trace.clone(),
            )
        })
        .collect();
    line_plot(
        &opts.out.join("potential_energy.svg"),
        Axes::new(
            "Potential energy change of a pile at rest",
            "t [s]",
            "E_p - E_p0 [J]",
        ),
        &series,
    )?;
    let summary = json!({
        "spheres": settled.world.dynamic_count(),
        "rest_s": seconds,
        "initial_potential_energy_J": settled.world.potential_energy(),
        "runs": runs.iter().map(|r| json!({
            "iterations": r.iterations, "warm_start": r.warm_start.name(), "reduction": r.reduce, "dt_s": r.dt,
            "potential_energy_change_J_per_min": r.energy_per_minute,
            "max_displacement_radii_per_min": r.max_displacement_per_minute,
            "mean_displacement_radii_per_min": r.mean_displacement_per_minute,
            "contacts": [r.contacts.0, r.contacts.1],
            "unconverged_steps": r.unconverged.0, "steps": r.unconverged.1,
        })).collect::<Vec<_>>(),
    });
    report::write_summary(&opts.out, &summary)?;
    let mut md = report::heading("cargo xtask creep", opts.quick);
    md.push_str(&format!(
        "A pile of {} spheres (pile scene, d = 13 mm, Table 1 material, Hertz) formed and settled, then left at rest for {seconds} s from that same state with each setting. Per simulated minute:\n\n\
         | N_it | warm start | Δt [s] | ΔE_p [J/min] | largest move [r/min] | mean move [r/min] | contacts start → end | unconverged steps |\n|---|---|---|---|---|---|---|---|\n",
        settled.world.dynamic_count()
    ));
    for r in &runs {
        md.push_str(&format!(
            "| {} | {}{} | {} | {:.2e} | {:.3} | {:.2e} | {} → {} | {} of {} |\n",
            r.iterations,
            r.warm_start.name(),
            if r.reduce { " + reduction" } else { "" },
            r.dt,
            r.energy_per_minute,
            r.max_displacement_per_minute,
            r.mean_displacement_per_minute,
            r.contacts.0,
            r.contacts.1,
            r.unconverged.0,
            r.unconverged.1
        ));
    }
    md.push_str("\nPlot: `potential_energy.svg`. Data: `creep.csv`, `summary.json`.\n");
    report::write(&opts.out.join("report.md"), &md)?;
    Ok(true)
}

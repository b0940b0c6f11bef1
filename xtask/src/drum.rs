//! `cargo xtask warmstart drum`: the warm-starting paper's section 4.3.
//!
//! The flow is established once (N_it = 100, history warm start); every
//! (warm start, N_it) case then continues from that state, adapts for a
//! transition period and is averaged over the paper's 2 s.

use crate::SuiteOptions;
use crate::plot::{Axes, Field, Series, heat_map, line_plot};
use crate::report::{self, SuiteResult};
use crate::runs::mean_sd;
use crate::warmstart::{Counter, Method, pgs, resumed_stepper};
use ndem_math::Vec3;
use ndem_scenes::builders::{D, DrumSpec, drum};
use ndem_scenes::{Scene, measure};
use ndem_solve::ImpulseHistory;
use ndem_step::{Motion, Stepper};
use rayon::prelude::*;
use serde_json::json;

/// Plug-zone threshold on v_r (paper: 0.15).
const PLUG: f64 = 0.15;

struct DrumRun {
    method: Method,
    iterations: usize,
    plug: f64,
    plug_sd: f64,
    angle: f64,
    angle_sd: f64,
    /// Mean v_r per cross-section cell (x-z plane, cell size d).
    field: Vec<Option<f64>>,
    wall_s: f64,
}

/// Cross-section grid over the drum: cells of size d.
struct Grid {
    n: usize,
    half: f64,
}

impl Grid {
    fn cell(&self, p: &Vec3) -> Option<usize> {
        let f = |x: f64| ((x + self.half) / (2.0 * self.half) * self.n as f64).floor();
        let (ix, iz) = (f(p.x), f(p.z));
        (ix >= 0.0 && iz >= 0.0 && ix < self.n as f64 && iz < self.n as f64)
            .then(|| iz as usize * self.n + ix as usize)
    }
}

#[allow(clippy::too_many_arguments)]
fn continue_flow(
    scene0: &Scene,
    start: &(ImpulseHistory, f64, u64),
    method: Method,
    iterations: usize,
    transition: f64,
    average: f64,
    spec: &DrumSpec,
    grid: &Grid,
) -> SuiteResult<DrumRun> {
    let t0 = std::time::Instant::now();
    let mut scene = scene0.clone();
    let mut stepper = resumed_stepper(&scene, method, iterations, start)?;
    let dt = scene.settings.dt;
    let radius = 0.5 * spec.diameter_d * D;
    let axis = Vec3::y();
    for _ in 0..(transition / dt).round() as usize {
        scene.step(&mut stepper).map_err(|e| e.to_string())?;
    }
    let mut plugs = Vec::new();
    let mut angles = Vec::new();
    let mut sum = vec![0.0; grid.n * grid.n];
    let mut count = vec![0usize; grid.n * grid.n];
    for _ in 0..(average / dt).round() as usize {
        scene.step(&mut stepper).map_err(|e| e.to_string())?;
        let w = &scene.world;
        let vr = measure::corotation_speed(w, Vec3::zeros(), axis, spec.omega, radius);
        plugs.push(vr.iter().filter(|&&x| x <= PLUG).count() as f64 / vr.len().max(1) as f64);
        angles.push(measure::dynamic_angle_of_repose(w, Vec3::zeros()));
        let dynamic = (0..w.len()).filter(|&i| w.motions()[i] == Motion::Dynamic);
        for (i, v) in dynamic.zip(&vr) {
            if let Some(c) = grid.cell(&w.positions()[i]) {
                sum[c] += v;
                count[c] += 1;
            }
        }
    }
    let (plug, plug_sd) = mean_sd(&plugs);
    let (angle, angle_sd) = mean_sd(&angles);
    let samples = plugs.len().max(1);
    let field = sum
        .iter()
        .zip(&count)
        // a cell counts when a particle sits in it a quarter of the time
        .map(|(s, &c)| (4 * c >= samples).then(|| s / c as f64))
        .collect();
    Ok(DrumRun {
        method,
        iterations,
        plug,
        plug_sd,
        angle,
        angle_sd,
        field,
        wall_s: t0.elapsed().as_secs_f64(),
    })
}

/// The flow established from rest: `spin_up` seconds with N_it = 100 and
/// history warm start; the plug fraction, angle and contacts every 20 steps
/// go to `spin_up.csv`.
fn establish_flow(
    spec: DrumSpec,
    spin_up: f64,
    out: &std::path::Path,
) -> SuiteResult<(Scene, Stepper)> {
    let mut scene = drum(spec).map_err(|e| e.to_string())?;
    let mut stepper = Stepper::new(scene.settings, pgs(100)?, Method::History.policy())
        .map_err(|e| e.to_string())?;
    let dt = scene.settings.dt;
    let radius = 0.5 * spec.diameter_d * D;
    let mut spin_csv = Vec::new();
    for k in 0..(spin_up / dt).round() as usize {
        let st = scene.step(&mut stepper).map_err(|e| e.to_string())?;
        if k % 20 == 0 {
            let w = &scene.world;
            spin_csv.push(vec![
                format!("{:.3}", stepper.time()),
                format!(
                    "{:e}",
                    measure::plug_fraction(w, Vec3::zeros(), Vec3::y(), spec.omega, radius, PLUG)
                ),
                format!("{:e}", measure::dynamic_angle_of_repose(w, Vec3::zeros())),
                st.contacts.to_string(),
            ]);
        }
    }
    report::write_csv(
        &out.join("spin_up.csv"),
        &["time_s", "plug_fraction", "angle_deg", "contacts"],
        &spin_csv,
    )?;
    Ok((scene, stepper))
}

/// The plug fraction error (eq. 14) and the dynamic angle of every run
/// against `reference` (cold, largest N_it): the report table, the
/// per-method JSON, `drum_results.csv` and Figs. 12-13.
fn results_and_figures(
    out: &std::path::Path,
    runs: &[DrumRun],
    methods: &[Method],
    reference: f64,
) -> SuiteResult<(String, serde_json::Map<String, serde_json::Value>)> {
    let mut csv = Vec::new();
    let mut table = String::from(
        "| warm start | N_it | plug fraction (mean ± sd over 2 s) | ε_plug (eq. 14) | dynamic angle [°] | wall time [s] |\n|---|---|---|---|---|---|\n",
    );
    let mut fig12 = Vec::new();
    let mut fig13 = Vec::new();
    let mut by_method = serde_json::Map::new();
    for &m in methods {
        let mut e_pts = Vec::new();
        let mut a_pts = Vec::new();
        let mut entries = Vec::new();
        for r in runs.iter().filter(|r| r.method == m) {
            let eps = reference - r.plug;
            table.push_str(&format!(
                "| {} | {} | {:.3} ± {:.3} | {:+.3} | {:.1} ± {:.1} | {:.0} |\n",
                m.name(),
                r.iterations,
                r.plug,
                r.plug_sd,
                eps,
                r.angle,
                r.angle_sd,
                r.wall_s
            ));
            csv.push(vec![
                m.name().into(),
                r.iterations.to_string(),
                format!("{:e}", r.plug),
                format!("{:e}", r.plug_sd),
                format!("{eps:e}"),
                format!("{:e}", r.angle),
                format!("{:e}", r.angle_sd),
                format!("{:.1}", r.wall_s),
            ]);
            e_pts.push((r.iterations as f64, eps));
            a_pts.push((r.iterations as f64, r.angle));
            entries.push(json!({"n_it": r.iterations, "plug_fraction": r.plug, "plug_sd": r.plug_sd,
                "eps_plug": eps, "angle_deg": r.angle, "angle_sd_deg": r.angle_sd, "wall_s": r.wall_s}));
        }
        fig12.push(Series::line(m.name(), e_pts));
        fig13.push(Series::line(m.name(), a_pts));
        by_method.insert(m.name().into(), json!(entries));
    }
    report::write_csv(
        &out.join("drum_results.csv"),
        &[
            "method",
            "n_it",
            "plug_fraction",
            "plug_sd",
            "eps_plug",
            "angle_deg",
            "angle_sd_deg",
            "wall_s",
        ],
        &csv,
    )?;
    line_plot(
        &out.join("fig12_plug_error.svg"),
        Axes::new(
            "plug-zone fraction error against cold N_it = 500 (eq. 14, Fig. 12)",
            "N_it",
            "eps_plug",
        )
        .log_x(),
        &fig12,
    )?;
    line_plot(
        &out.join("fig13_angle.svg"),
        Axes::new("dynamic angle of repose (Fig. 13)", "N_it", "angle [deg]").log_x(),
        &fig13,
    )?;
    Ok((table, by_method))
}

/// `cargo xtask warmstart drum`.
pub fn run(opts: &SuiteOptions) -> SuiteResult<bool> {
    let out = &opts.out;
    report::prepare(out)?;
    let mut spec = crate::runs::drum_size(DrumSpec::default(), opts);
    // frictionless end caps by default (the model-reduction paper's, and
    // what the evidence supports: docs/theory.md); `cargo xtask warmstart
    // drum frictional-caps` gives the caps the particles' material
    spec.frictionless_caps = !opts.args.iter().any(|a| a == "frictional-caps");
    let (spin_up, transition, average) = (8.0, 1.0, 2.0);
    let grid_n: Vec<usize> = if opts.quick {
        vec![10, 30, 100, 500]
    } else {
        vec![10, 20, 50, 100, 200, 500]
    };
    let methods = [Method::Cold, Method::History];
    let mut cases: Vec<(Method, usize)> = Vec::new();
    for &m in &methods {
        cases.extend(grid_n.iter().map(|&n| (m, n)));
    }
    cases.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    let counter = Counter::new("warmstart drum", cases.len() + 1);
    // establish the flow
    let (scene, stepper) = establish_flow(spec, spin_up, out)?;
    let dt = scene.settings.dt;
    let radius = 0.5 * spec.diameter_d * D;
    counter.tick(&format!("flow established after {spin_up} s"));
    let start = (
        stepper.history().cloned().unwrap_or_default(),
        stepper.time(),
        stepper.step_count(),
    );
    let cell_grid = Grid {
        n: (spec.diameter_d.ceil() as usize).max(1),
        half: radius,
    };
    let results: Vec<SuiteResult<DrumRun>> = cases
        .par_iter()
        .map(|&(m, n)| {
            let r = continue_flow(&scene, &start, m, n, transition, average, &spec, &cell_grid)
                .map_err(|e| format!("drum {} N_it={n}: {e}", m.name()));
            counter.tick(&format!("{} N_it={n}", m.name()));
            r
        })
        .collect();
    let (mut runs, failures) = report::split_failures("warmstart drum", results);
    runs.sort_by_key(|r| (r.method.name(), r.iterations));
    let n_max = *grid_n.last().unwrap_or(&500);
    let reference = runs
        .iter()
        .find(|r| r.method == Method::Cold && r.iterations == n_max)
        .map(|r| r.plug)
        .ok_or("the cold reference run failed")?;
    let (table, by_method) = results_and_figures(out, &runs, &methods, reference)?;
    let mut field_csv = Vec::new();
    let n_min = grid_n[0];
    for (m, n) in [
        (Method::Cold, n_min),
        (Method::Cold, n_max),
        (Method::History, n_min),
    ] {
        if let Some(r) = runs.iter().find(|r| r.method == m && r.iterations == n) {
            let title = format!("v_r, {} N_it = {n} (Fig. 11; blue 0, red ≥ 1)", m.name());
            heat_map(
                &out.join(format!("fig11_{}_{n}.svg", m.name())),
                &Field {
                    title: &title,
                    nx: cell_grid.n,
                    nz: cell_grid.n,
                    values: &r.field,
                    extent: (-radius, radius, -radius, radius),
                    range: (0.0, 1.0),
                    vertical: "z [m]",
                },
            )?;
            for (c, v) in r.field.iter().enumerate() {
                if let Some(v) = v {
                    field_csv.push(vec![
                        m.name().into(),
                        n.to_string(),
                        (c % cell_grid.n).to_string(),
                        (c / cell_grid.n).to_string(),
                        format!("{v:e}"),
                    ]);
                }
            }
        }
    }
    report::write_csv(
        &out.join("fig11_field.csv"),
        &["method", "n_it", "ix", "iz", "mean_v_r"],
        &field_csv,
    )?;
    let wall = counter.start.elapsed().as_secs_f64();
    let summary = json!({
        "suite": "warmstart drum", "quick": opts.quick,
        "particles": spec.particles, "diameter_d": spec.diameter_d, "width_d": spec.width_d,
        "omega_rad_s": spec.omega, "dt": dt, "frictionless_caps": spec.frictionless_caps,
        "spin_up_s": spin_up, "transition_s": transition, "average_s": average,
        "plug_threshold": PLUG, "reference": {"method": "cold", "n_it": n_max, "plug_fraction": reference},
        "iteration_grid": grid_n,
        "results": by_method,
        "failed_runs": failures,
        "paper": {"plug_fraction_n500": "0.58 +- 0.05", "angle_cold_deg": 48, "angle_warm_deg": 50},
        "wall_time_s": wall,
    });
    report::write_summary(out, &summary)?;
    let md = format!(
        "# cargo xtask warmstart drum{}\n\nWarm-starting paper, section 4.3. Drum D = {}d, width {}d, Ω = {} rad/s, {} \
         bi-disperse spheres (13 and 10 mm, equal numbers), Table 1 material, Δt = 5 ms, {} end caps. The flow is established over \
         {spin_up} s (N_it = 100, history); each case then continues from that state for a {transition} s transition and is \
         averaged over {average} s (every step).\n\nPlug zone: v_r = |v − Ω × r|/(RΩ) ≤ {PLUG}; ε_plug = (N_plug^ref − N_plug)/N_p \
         against cold N_it = {n_max} (eq. 14). Dynamic angle of repose from the centre-of-mass displacement.\n\n{table}\n\
         Paper: plug fraction 58 ± 5 % at N_it = 500; dynamic angle 48° (cold) and 50° (warm) at N_it = 500.\n\n\
         Failed runs: {:?}\n\nFigures: `fig11_*.svg` (cross-section v_r), `fig12_plug_error.svg`, `fig13_angle.svg`. Data: \
         `drum_results.csv`, `fig11_field.csv`, `spin_up.csv`. Wall time {wall:.0} s.\n",
        if opts.quick { " --quick" } else { "" },
        spec.diameter_d,
        spec.width_d,
        spec.omega,
        spec.particles,
        if spec.frictionless_caps {
            "frictionless"
        } else {
            "frictional (particle material)"
        },
        failures,
    );
    report::write(&out.join("report.md"), &md)?;
    println!("{table}");
    Ok(failures.is_empty())
}

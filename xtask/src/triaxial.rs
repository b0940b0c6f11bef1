//! `cargo xtask warmstart triaxial`: the warm-starting paper's section 4.4.
//!
//! One sample is consolidated under the hydrostatic stress (N_it = 200,
//! history warm start); every (warm start, N_it) case then shears that same
//! sample, so the cases differ only in the solver budget and policy.

use crate::SuiteOptions;
use crate::plot::{Axes, Series, line_plot};
use crate::report::{self, SuiteResult};
use crate::warmstart::{Counter, Method, pgs, required, resumed_stepper};
use ndem_scenes::Scene;
use ndem_scenes::measure;
use ndem_scenes::triaxial::{TriaxialControl, TriaxialSpec, TriaxialState, triaxial};
use ndem_solve::ImpulseHistory;
use ndem_step::Stepper;
use rayon::prelude::*;
use serde_json::json;

/// Lateral-strain window of the critical deviator (paper: 10-25 %).
const WINDOW: (f64, f64) = (0.10, 0.25);

struct ShearRun {
    sample: usize,
    method: Method,
    iterations: usize,
    /// (axial, lateral, volumetric strain, σ_x, σ_y, σ_z, deviator, and
    /// the contact stresses on the walls x, y, z)
    series: Vec<[f64; 10]>,
    wall_s: f64,
}

impl ShearRun {
    /// Mean deviator with the strain of column `col` inside the window.
    fn critical(&self, col: usize) -> f64 {
        let v: Vec<f64> = self
            .series
            .iter()
            .filter(|r| r[col] >= WINDOW.0 && r[col] <= WINDOW.1)
            .map(|r| r[6])
            .collect();
        if v.is_empty() {
            f64::NAN
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    }
}

fn control(scene: &Scene) -> SuiteResult<TriaxialControl> {
    scene
        .triaxial
        .ok_or_else(|| "not a triaxial scene".to_string())
}

/// Consolidation under σ_h; returns the scene and stepper at shear start,
/// with a CSV of the consolidation.
fn consolidate(spec: TriaxialSpec) -> SuiteResult<(Scene, Stepper, Vec<Vec<String>>)> {
    let mut scene = triaxial(spec).map_err(|e| e.to_string())?;
    let mut stepper = Stepper::new(scene.settings, pgs(200)?, Method::History.policy())
        .map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    let c0 = control(&scene)?;
    while stepper.time() + 0.5 * scene.settings.dt < c0.shear_start_time {
        scene.step(&mut stepper).map_err(|e| e.to_string())?;
        let c = control(&scene)?;
        let s = c.measure(&scene.world, &stepper);
        rows.push(vec![
            format!("{:.4}", stepper.time()),
            format!("{:e}", s.lengths[0]),
            format!("{:e}", s.lengths[1]),
            format!("{:e}", s.lengths[2]),
            format!("{:e}", measure::solid_fraction(&scene.world, s.lengths)),
            format!("{:e}", scene.world.kinetic_energy()),
        ]);
    }
    Ok((scene, stepper, rows))
}

fn shear(
    sample: usize,
    scene0: &Scene,
    start_state: &(ImpulseHistory, f64, u64),
    method: Method,
    iterations: usize,
    max_lateral: f64,
) -> SuiteResult<ShearRun> {
    let start = std::time::Instant::now();
    let mut scene = scene0.clone();
    let mut stepper = resumed_stepper(&scene, method, iterations, start_state)?;
    let mut series = Vec::new();
    while stepper.time() < scene.duration {
        scene.step(&mut stepper).map_err(|e| e.to_string())?;
        let s = control(&scene)?.measure(&scene.world, &stepper);
        if !s.deviator.is_finite() {
            return Err("non-finite deviator".into());
        }
        series.push([
            s.axial_strain,
            s.lateral_strain,
            s.volumetric_strain,
            s.stress[0],
            s.stress[1],
            s.stress[2],
            s.deviator,
            s.contact_stress[0],
            s.contact_stress[1],
            s.contact_stress[2],
        ]);
        if s.lateral_strain >= max_lateral {
            break;
        }
    }
    Ok(ShearRun {
        sample,
        method,
        iterations,
        series,
        wall_s: start.elapsed().as_secs_f64(),
    })
}

/// A consolidated sample: the scene, the warm-start state `(history,
/// time, step)` to shear from, the consolidation rows, the sample's state
/// and its solid fraction.
type Consolidated = (
    Scene,
    (ImpulseHistory, f64, u64),
    Vec<Vec<String>>,
    TriaxialState,
    f64,
);

/// One consolidated sample per seed `spec.seed + k`, `k < samples`, in
/// parallel; their consolidation histories go to `consolidation.csv`.
fn consolidate_samples(
    spec: TriaxialSpec,
    samples: usize,
    counter: &Counter,
    out: &std::path::Path,
) -> SuiteResult<Vec<Consolidated>> {
    // one consolidated sample per seed
    let consolidated: Vec<SuiteResult<Consolidated>> = (0..samples)
        .into_par_iter()
        .map(|k| {
            let r = consolidate(TriaxialSpec {
                seed: spec.seed + k as u64,
                ..spec
            })
            .map(|(scene, stepper, rows)| {
                let c = control(&scene)?;
                let s0 = c.measure(&scene.world, &stepper);
                let phi = measure::solid_fraction(&scene.world, s0.lengths);
                counter.tick(&format!(
                    "sample {k} consolidated: solid fraction {phi:.3}, sides {:.4} {:.4} {:.4} m",
                    s0.lengths[0], s0.lengths[1], s0.lengths[2]
                ));
                let start_state = (
                    stepper.history().cloned().unwrap_or_default(),
                    stepper.time(),
                    stepper.step_count(),
                );
                Ok((scene, start_state, rows, s0, phi))
            });
            r.and_then(|x| x)
        })
        .collect();
    let consolidated: Vec<_> = consolidated.into_iter().collect::<SuiteResult<_>>()?;
    let mut cons_csv = Vec::new();
    for (k, c) in consolidated.iter().enumerate() {
        for row in &c.2 {
            let mut line = vec![k.to_string()];
            line.extend(row.iter().cloned());
            cons_csv.push(line);
        }
    }
    report::write_csv(
        &out.join("consolidation.csv"),
        &[
            "sample",
            "time_s",
            "lx_m",
            "ly_m",
            "lz_m",
            "solid_fraction",
            "kinetic_j",
        ],
        &cons_csv,
    )?;
    Ok(consolidated)
}

/// Every shear run's series, one CSV.
fn write_series_csv(out: &std::path::Path, runs: &[ShearRun]) -> SuiteResult<()> {
    let mut csv = Vec::new();
    for r in runs {
        for row in &r.series {
            let mut line = vec![
                r.sample.to_string(),
                r.method.name().to_string(),
                r.iterations.to_string(),
            ];
            line.extend(row.iter().map(|x| format!("{x:e}")));
            csv.push(line);
        }
    }
    report::write_csv(
        &out.join("triaxial_series.csv"),
        &[
            "sample",
            "method",
            "n_it",
            "axial_strain",
            "lateral_strain",
            "volumetric_strain",
            "sigma_x_pa",
            "sigma_y_pa",
            "sigma_z_pa",
            "deviator_pa",
            "contact_sigma_x_pa",
            "contact_sigma_y_pa",
            "contact_sigma_z_pa",
        ],
        &csv,
    )?;
    Ok(())
}

/// The critical deviators by method and N_it (mean ± sd over samples),
/// with the N_it from which they level off.
struct Critical {
    table: String,
    csv: Vec<Vec<String>>,
    fig15: Vec<Series>,
    by_method: serde_json::Map<String, serde_json::Value>,
    levels: serde_json::Map<String, serde_json::Value>,
}

fn critical_deviators(runs: &[ShearRun], methods: &[Method], grid: &[usize]) -> Critical {
    let mut crit_csv = Vec::new();
    let mut table = String::from(
        "| warm start | N_it | critical deviator, lateral 10-25 % [kPa] (mean ± sd over samples) | same, axial 10-25 % [kPa] | wall time per run [s] |\n|---|---|---|---|---|\n",
    );
    let mut fig15 = Vec::new();
    let mut critical_json = serde_json::Map::new();
    let mut levels = serde_json::Map::new();
    let mean_sd = |v: &[f64]| {
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
        (m, sd)
    };
    for &m in methods {
        let mut pts = Vec::new();
        let mut vals = Vec::new();
        let mut ns = Vec::new();
        let mut entries = Vec::new();
        for &n in grid {
            let group: Vec<&ShearRun> = runs
                .iter()
                .filter(|r| r.method == m && r.iterations == n)
                .collect();
            if group.is_empty() {
                continue;
            }
            let ql: Vec<f64> = group.iter().map(|r| r.critical(1)).collect();
            let qa: Vec<f64> = group.iter().map(|r| r.critical(0)).collect();
            let wall_run = group.iter().map(|r| r.wall_s).sum::<f64>() / group.len() as f64;
            let (ml, sl) = mean_sd(&ql);
            let (ma, sa) = mean_sd(&qa);
            table.push_str(&format!(
                "| {} | {n} | {:.3} ± {:.3} | {:.3} ± {:.3} | {wall_run:.0} |\n",
                m.name(),
                ml / 1e3,
                sl / 1e3,
                ma / 1e3,
                sa / 1e3,
            ));
            for (r, (l, a)) in group.iter().zip(ql.iter().zip(&qa)) {
                crit_csv.push(vec![
                    r.sample.to_string(),
                    m.name().into(),
                    n.to_string(),
                    format!("{l:e}"),
                    format!("{a:e}"),
                    format!("{:.1}", r.wall_s),
                ]);
            }
            entries.push(json!({"n_it": n, "critical_deviator_pa": ml, "sd_pa": sl,
                "critical_deviator_axial_window_pa": ma, "per_sample_pa": ql}));
            pts.push((n as f64, ml / 1e3));
            vals.push(ml);
            ns.push(n);
        }
        critical_json.insert(m.name().into(), json!(entries));
        // level-off: the smallest N_it from which the critical deviator
        // stays within 10 % of the largest N_it's
        let last = vals.last().copied().unwrap_or(f64::NAN);
        let rel: Vec<f64> = vals.iter().map(|v| (v - last) / last).collect();
        levels.insert(m.name().into(), json!(required(&ns, &rel, 0.1)));
        fig15.push(Series::line(m.name(), pts));
    }
    Critical {
        table,
        csv: crit_csv,
        fig15,
        by_method: critical_json,
        levels,
    }
}

/// `cargo xtask warmstart triaxial`.
pub fn run(opts: &SuiteOptions) -> SuiteResult<bool> {
    let out = &opts.out;
    report::prepare(out)?;
    let mut spec = TriaxialSpec {
        particles: if opts.quick { 600 } else { 3000 },
        consolidation_time: 6.0,
        ..TriaxialSpec::default()
    };
    if let Some(n) = opts.particles {
        spec.particles = n;
    }
    let samples: usize = if opts.quick { 2 } else { 3 };
    let grid: Vec<usize> = if opts.quick {
        vec![10, 30, 100, 300, 1000]
    } else {
        vec![10, 20, 50, 100, 200, 500, 1000]
    };
    let methods = [Method::Cold, Method::History];
    let mut cases: Vec<(usize, Method, usize)> = Vec::new();
    for k in 0..samples {
        for &m in &methods {
            cases.extend(grid.iter().map(|&n| (k, m, n)));
        }
    }
    // longest runs first, so the two threads finish together
    cases.sort_by_key(|&(k, _, n)| (std::cmp::Reverse(n), k));
    let counter = Counter::new("warmstart triaxial", cases.len() + samples);
    let consolidated = consolidate_samples(spec, samples, &counter, out)?;
    let phi0 = consolidated.iter().map(|c| c.4).sum::<f64>() / samples as f64;
    let s0 = consolidated[0].3;
    let scene = &consolidated[0].0;
    let max_lateral = WINDOW.1 + 0.02;
    let results: Vec<SuiteResult<ShearRun>> = cases
        .par_iter()
        .map(|&(k, m, n)| {
            let (scene, start_state, ..) = &consolidated[k];
            let r = shear(k, scene, start_state, m, n, max_lateral)
                .map_err(|e| format!("triaxial sample {k} {} N_it={n}: {e}", m.name()));
            counter.tick(&format!("sample {k} {} N_it={n}", m.name()));
            r
        })
        .collect();
    let (runs, failures) = report::split_failures("warmstart triaxial", results);
    write_series_csv(out, &runs)?;
    let Critical {
        table,
        csv: crit_csv,
        fig15,
        by_method: critical_json,
        levels,
    } = critical_deviators(&runs, &methods, &grid);
    report::write_csv(
        &out.join("triaxial_critical.csv"),
        &[
            "sample",
            "method",
            "n_it",
            "critical_deviator_lateral_window_pa",
            "critical_deviator_axial_window_pa",
            "wall_s",
        ],
        &crit_csv,
    )?;
    line_plot(
        &out.join("fig15_critical_deviator.svg"),
        Axes::new(
            "critical deviator (lateral strain 10-25 %) against N_it (Fig. 15)",
            "N_it",
            "sigma_z^c - sigma_h [kPa]",
        )
        .log_x(),
        &fig15,
    )?;
    let fig16_n = [100, *grid.last().unwrap_or(&1000)];
    let fig16: Vec<Series> = runs
        .iter()
        .filter(|r| r.sample == 0 && fig16_n.contains(&r.iterations))
        .map(|r| {
            Series::line(
                format!("{} N_it={}", r.method.name(), r.iterations),
                r.series.iter().map(|x| (x[1], x[6] / 1e3)).collect(),
            )
        })
        .collect();
    line_plot(
        &out.join("fig16_deviator_strain.svg"),
        Axes::new(
            "deviator against lateral strain, sample 0 (Fig. 16)",
            "lateral strain",
            "sigma_z - sigma_h [kPa]",
        ),
        &fig16,
    )?;
    let wall = counter.start.elapsed().as_secs_f64();
    let summary = json!({
        "suite": "warmstart triaxial", "quick": opts.quick,
        "particles": spec.particles, "samples": samples, "confining_pressure_pa": spec.confining_pressure,
        "wall_mass_kg": spec.wall_mass, "youngs_modulus_pa": spec.youngs_modulus,
        "axial_speed_m_s": spec.axial_speed, "dt": scene.settings.dt, "gravity": [0.0, 0.0, 0.0],
        "consolidation": {"time_s": spec.consolidation_time, "n_it": 200, "warm_start": "history",
            "mean_solid_fraction": phi0, "lengths_m_sample0": s0.lengths},
        "iteration_grid": grid,
        "critical_deviator": critical_json,
        "level_off_n_it_within_10pct": levels,
        "failed_runs": failures,
        "paper": {"critical_deviator_kpa": "1 +- 0.2", "level_off_warm": 200, "level_off_cold": 1000},
        "wall_time_s": wall,
    });
    report::write_summary(out, &summary)?;
    let md = format!(
        "# cargo xtask warmstart triaxial{}\n\nWarm-starting paper, section 4.4. {samples} samples (seeds) of {} bi-disperse spheres (13 and 10 mm, \
         E = {:.0} MPa, Table 1 otherwise) placed at random at solid fraction {:.2}, six {:.0} kg walls on prismatic motors, \
         no gravity (see `ndem_scenes::triaxial`), Δt = 5 ms. Consolidation: {:.1} s at σ_h = {:.0} Pa on all walls \
         (N_it = 200, history), reaching mean solid fraction {phi0:.3} (sample 0: sides {:.4} × {:.4} × {:.4} m); every case below \
         shears these same samples: end walls driven inwards at {} m/s each, side walls force-controlled at σ_h.\n\n\
         Deviator σ_z − σ_h from the end-wall motor forces; critical deviator = its mean over lateral strain \
         (L_x + L_y)/(L_x0 + L_y0) − 1 in 10-25 % (paper's window); the axial-strain window is given too.\n\n{table}\n\
         Level-off (smallest N_it from which the critical deviator stays within 10 % of the largest N_it's): {}. \
         Paper: about 1 ± 0.2 kPa for both; warm levels off at N_it ≳ 200, cold at 1000.\n\nFailed runs: {:?}\n\n\
         Figures: `fig15_critical_deviator.svg`, `fig16_deviator_strain.svg`. Data: `triaxial_series.csv`, \
         `triaxial_critical.csv`, `consolidation.csv`. Wall time {wall:.0} s.\n",
        if opts.quick { " --quick" } else { "" },
        spec.particles,
        spec.youngs_modulus / 1e6,
        spec.initial_fraction,
        spec.wall_mass,
        spec.consolidation_time,
        spec.confining_pressure,
        s0.lengths[0],
        s0.lengths[1],
        s0.lengths[2],
        spec.axial_speed,
        serde_json::to_string(&levels).unwrap_or_default(),
        failures,
    );
    report::write(&out.join("report.md"), &md)?;
    println!(
        "{table}\nlevel-off: {}",
        serde_json::to_string(&levels).unwrap_or_default()
    );
    Ok(failures.is_empty())
}

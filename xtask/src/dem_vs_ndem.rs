//! `cargo xtask dem-vs-ndem`: the slides' cost comparison, measured. For a
//! 1D column and a small pile in a box, and particle stiffness (Young's
//! modulus) over three decades, the wall time each method needs to reach the
//! same settled height within 1 %: the smooth DEM (Hertz-Mindlin, explicit,
//! Δt = 0.1 Δt_Rayleigh) and NDEM (SPOOK, Δt = 5 ms, the fewest PGS
//! iterations on a grid that reach the height).

use crate::SuiteOptions;
use crate::plot::{Axes, Series, line_plot};
use crate::report::{self, Progress, SuiteResult};
use ndem_math::Material;
use ndem_scenes::builders::{self, Scene};
use ndem_scenes::measure;
use ndem_smooth::{SmoothLaw, SmoothSettings, SmoothStepper};
use ndem_step::{StepSettings, Stepper, World};
use serde_json::json;
use std::time::Instant;

fn with_modulus(mut scene: Scene, e: f64) -> Scene {
    for m in &mut scene.world.materials {
        *m = Material {
            youngs_modulus: e,
            ..*m
        };
    }
    scene
}

/// Settled height measure: the column's top, or the pile's centre of mass.
fn measure_height(world: &World, column: Option<usize>) -> f64 {
    match column {
        Some(n) => measure::sphere_top(world, n),
        None => measure::centre_of_mass_height(world),
    }
}

fn run_dem(scene: &Scene, settle: f64, column: Option<usize>) -> SuiteResult<(f64, f64, usize)> {
    let mut world = scene.world.clone();
    let crit = ndem_smooth::stepper::critical_time_step(&world, &SmoothLaw::Hertz);
    let dt = 0.1 * crit;
    let mut st =
        SmoothStepper::new(SmoothSettings::with_dt(dt), &world).map_err(|e| e.to_string())?;
    let steps = (settle / dt).round() as usize;
    let t = Instant::now();
    for _ in 0..steps {
        st.step(&mut world).map_err(|e| e.to_string())?;
    }
    Ok((
        measure_height(&world, column),
        t.elapsed().as_secs_f64(),
        steps,
    ))
}

fn run_ndem(
    scene: &Scene,
    settle: f64,
    iterations: usize,
    column: Option<usize>,
) -> SuiteResult<(f64, f64)> {
    let mut world = scene.world.clone();
    let settings = StepSettings::papers();
    let mut st = Stepper::with_warm_pgs(settings, iterations).map_err(|e| e.to_string())?;
    let t = Instant::now();
    for _ in 0..(settle / settings.dt).round() as usize {
        st.step(&mut world).map_err(|e| e.to_string())?;
    }
    Ok((measure_height(&world, column), t.elapsed().as_secs_f64()))
}

/// Runs the suite.
pub fn run(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    let moduli: Vec<f64> = if opts.quick {
        vec![6e6, 6e7, 6e8, 6e9]
    } else {
        vec![6e6, 6e7, 6e8, 6e9, 6e10]
    };
    let (n_col, n_pile) = if opts.quick { (10, 60) } else { (25, 200) };
    let grid = [2usize, 5, 10, 20, 50, 100, 200, 500];
    let mut progress = Progress::new("dem-vs-ndem", 2 * moduli.len());
    let mut rows = Vec::new();
    let mut summary = Vec::new();
    let mut series = Vec::new();
    let mut table = String::from(
        "| case | E [Pa] | reference height [m] | DEM Δt [s] | DEM steps | DEM wall [s] | DEM error | NDEM N_it | NDEM wall [s] | NDEM error | DEM/NDEM wall |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for case in ["column", "pile"] {
        let mut dem_pts = Vec::new();
        let mut ndem_pts = Vec::new();
        for &e in &moduli {
            let (scene, column, settle) = match case {
                "column" => (
                    builders::column(n_col).map_err(|e| e.to_string())?,
                    Some(n_col),
                    2.0,
                ),
                _ => (
                    builders::box_packing(n_pile, 0.005, 0.0065, 0.06, 2)
                        .map_err(|e| e.to_string())?,
                    None,
                    1.5,
                ),
            };
            let scene = with_modulus(scene, e);
            let (h_dem, t_dem, dem_steps) = run_dem(&scene, settle, column)?;
            let reference = match column {
                Some(n) => ndem_step::verification::column_height(
                    n,
                    0.0065,
                    &scene.world.materials[0],
                    9.81,
                )
                .map_err(|e| e.to_string())?,
                None => h_dem,
            };
            let dem_err = (h_dem - reference) / reference;
            let mut found = None;
            let mut closest = (0usize, f64::INFINITY);
            for &it in &grid {
                let (h, t) = run_ndem(&scene, settle, it, column)?;
                let err = (h - reference) / reference;
                if err.abs() < closest.1.abs() {
                    closest = (it, err);
                }
                if err.abs() <= 0.01 {
                    found = Some((it, t, err));
                    break;
                }
            }
            let dt_dem = settle / dem_steps as f64;
            let (it, t_ndem, err_ndem) =
                found.map_or((None, f64::NAN, f64::NAN), |(i, t, e)| (Some(i), t, e));
            table.push_str(&format!(
                "| {case} | {e:.0e} | {reference:.5} | {dt_dem:.2e} | {dem_steps} | {t_dem:.2} | {:.2} % | {} | {t_ndem:.3} | {:.2} % | {:.1} |\n",
                100.0 * dem_err,
                it.map_or(format!("none (closest: {:.1} % at N_it={})", 100.0 * closest.1, closest.0), |i| i.to_string()),
                100.0 * err_ndem,
                t_dem / t_ndem
            ));
            rows.push(vec![
                case.into(),
                format!("{e:e}"),
                format!("{reference:e}"),
                format!("{dt_dem:e}"),
                dem_steps.to_string(),
                format!("{t_dem:e}"),
                format!("{dem_err:e}"),
                format!("{it:?}"),
                format!("{t_ndem:e}"),
                format!("{err_ndem:e}"),
            ]);
            summary.push(json!({"case": case, "youngs_modulus": e, "reference_height": reference, "dem": {"dt": dt_dem, "steps": dem_steps, "wall_s": t_dem, "height_error": dem_err}, "ndem": {"dt": 5e-3, "iterations": it, "wall_s": t_ndem, "height_error": err_ndem}, "dem_over_ndem_wall": t_dem / t_ndem}));
            dem_pts.push((e, t_dem));
            if t_ndem.is_finite() {
                ndem_pts.push((e, t_ndem));
            }
            progress.tick(&format!("{case} E={e:e}"));
        }
        series.push(Series::line(format!("DEM {case}"), dem_pts));
        series.push(Series::line(format!("NDEM {case}"), ndem_pts));
    }
    line_plot(
        &opts.out.join("wall_time_vs_stiffness.svg"),
        Axes::new(
            "wall time to the settled height within 1 %",
            "Young's modulus [Pa]",
            "wall time [s]",
        )
        .log_x()
        .log_y(),
        &series,
    )?;
    report::write_csv(
        &opts.out.join("dem_vs_ndem.csv"),
        &[
            "case",
            "youngs_modulus",
            "reference_height",
            "dem_dt",
            "dem_steps",
            "dem_wall_s",
            "dem_error",
            "ndem_iterations",
            "ndem_wall_s",
            "ndem_error",
        ],
        &rows,
    )?;
    let s = json!({"suite": "dem-vs-ndem", "quick": opts.quick, "column_particles": n_col, "pile_particles": n_pile, "runs": summary,
        "slides_claim": "NDEM's advantage grows with stiffness: the DEM time step shrinks as E^-1/2 while NDEM keeps dt = 5 ms", "wall_time_s": progress.elapsed()});
    report::write(
        &opts.out.join("summary.json"),
        &serde_json::to_string_pretty(&s).map_err(|e| e.to_string())?,
    )?;
    let md = format!(
        "# cargo xtask dem-vs-ndem{}\n\nColumn of {n_col} spheres (reference: analytic Hertz height) and a pile of {n_pile} \
         spheres settling in a box (reference: the DEM's centre-of-mass height), settled for 2 s and 1.5 s. DEM: \
         Hertz-Mindlin with Δt = 0.1 Δt_Rayleigh. NDEM: Δt = 5 ms, history warm start, the fewest PGS iterations of \
         {grid:?} that reach the reference within 1 %. Wall times on this machine, single thread.\n\n{table}\n\nSlides' \
         claim: NDEM's advantage grows with stiffness. Plot: `wall_time_vs_stiffness.svg`. Wall time {:.0} s.\n",
        if opts.quick { " --quick" } else { "" },
        progress.elapsed()
    );
    report::write(&opts.out.join("report.md"), &md)?;
    println!("{table}");
    let _ = measure::pile_height;
    Ok(true)
}

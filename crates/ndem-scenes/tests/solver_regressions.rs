//! Regression tests for the solver findings of "Solvers that are right or
//! say so": APGD at the stepper's budgets, the model warm start on stiff
//! materials, and the stall flag of a stiff column.

use ndem_scenes::builders::builtin;
use ndem_scenes::measure::column_height_error;
use ndem_scenes::{Scene, SolverChoice, WarmStartChoice};

/// Runs a scene for its duration; returns the scene, the largest kinetic
/// energy seen, the last step's statistics.
fn run(mut scene: Scene) -> (Scene, f64, ndem_step::StepStats) {
    let mut stepper = scene.stepper().unwrap();
    let steps = (scene.duration / scene.settings.dt).round() as usize;
    let mut max_ke = 0.0f64;
    let mut last = None;
    for _ in 0..steps {
        let s = scene.step(&mut stepper).unwrap();
        max_ke = max_ke.max(s.kinetic_energy);
        last = Some(s);
    }
    (scene, max_ke, last.unwrap())
}

/// The built-in 25-sphere column (Hertz, E = 6 MPa, Δt = 5 ms) with APGD
/// at 50 iterations per step keeps its height within 1 % of the analytic
/// Hertz height with every warm start (APGD unscaled, or with its best
/// iterate chosen by residuals at different step sizes, collapses the
/// column to 0.05-0.07 m of its 0.3145 m). Asked: 1 %; measured:
/// |ε_l| ≤ 5.5e-5 (cold, the worst), so the tolerance is 10× that.
#[test]
fn apgd_column_keeps_its_height_with_every_warm_start() {
    for ws in [
        WarmStartChoice::Cold,
        WarmStartChoice::History,
        WarmStartChoice::Model,
        WarmStartChoice::ModelRaw,
    ] {
        let mut scene = builtin("column").unwrap();
        scene.solver = SolverChoice::Apgd;
        scene.iterations = 50;
        scene.warm_start = ws;
        let n = scene.world.dynamic_count();
        let (scene, _, last) = run(scene);
        let err = column_height_error(&scene.world, n);
        println!(
            "apgd x 50, {}: eps_l = {err:e}, status {}",
            ws.name(),
            last.status.name()
        );
        assert!(err.abs() <= 5.5e-4, "{}: eps_l = {err}", ws.name());
    }
}

fn stiff_column(ws: WarmStartChoice) -> Scene {
    let mut scene = builtin("column").unwrap();
    scene.world.materials[0].youngs_modulus = 1e9;
    scene.iterations = 200;
    scene.warm_start = ws;
    scene
}

/// A stiff Hertz column (E = 1e9 Pa, Δt = 5 ms, 200 PGS sweeps): the
/// model warm start as the scene offers it (safeguarded) keeps the column
/// at rest with no energy spike beyond the cold run's settling (measured:
/// the same 6.7e-4 J peak while the column settles, then 1e-31 J). The
/// paper's unguarded formula (`model-raw`) throws spheres off (peak above
/// 1 J; measured 1.2 J by step 85) until two spheres pass through each
/// other and the step is refused: the limit this guards against.
#[test]
fn model_warm_start_on_a_stiff_column_stays_at_rest() {
    let (_, cold_peak, _) = run(stiff_column(WarmStartChoice::Cold));
    let (_, model_peak, last) = run(stiff_column(WarmStartChoice::Model));
    println!(
        "stiff column: cold peak KE {cold_peak:e} J, safeguarded model peak {model_peak:e} J, final {:e} J",
        last.kinetic_energy
    );
    assert!(
        model_peak <= cold_peak * (1.0 + 1e-9),
        "{model_peak} > {cold_peak}"
    );
    assert!(last.kinetic_energy < 1e-20);
    // the paper's formula: spheres thrown off (peak above 1 J), then two
    // spheres pass through each other and the stepper stops with a typed
    // error naming the step (measured: step 86, overlap 11 mm > r)
    let mut scene = stiff_column(WarmStartChoice::ModelRaw);
    let mut stepper = scene.stepper().unwrap();
    let mut raw_peak = 0.0f64;
    let err = loop {
        match scene.step(&mut stepper) {
            Ok(s) => raw_peak = raw_peak.max(s.kinetic_energy),
            Err(e) => break e,
        }
        assert!(
            stepper.time() < scene.duration,
            "the unguarded model start no longer blows up"
        );
    };
    println!("unguarded model: peak KE {raw_peak:e} J, then {err}");
    assert!(raw_peak > 1.0, "peak {raw_peak}");
    assert!(matches!(
        err,
        ndem_scenes::SceneError::Step(
            ndem_step::StepError::OverlapBeyondRadius { .. }
                | ndem_step::StepError::EnergyGrowth { .. }
        )
    ));
}

/// The stiff column at 200 cold sweeps comes to rest with its overlaps off
/// the Hertz values; the step statistics say so (`unresolved`), where
/// before only `residual_max` showed it.
#[test]
fn stiff_column_rest_state_is_flagged_unresolved() {
    let (_, _, last) = run(stiff_column(WarmStartChoice::Cold));
    println!(
        "stiff column at rest: mean normal residual {:e}, tolerance {:e}, status {}",
        last.residuals.normal.mean,
        last.residual_tolerance,
        last.status.name()
    );
    assert!(last.kinetic_energy < 1e-20);
    assert!(last.unresolved);
}

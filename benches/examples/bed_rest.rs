//! Whether the peers suite's "resting" bed rests, and what Algorithm 1's
//! impact stage costs a step on it and on a bed that does.
//!
//! `cargo run --release -p ndem-benches --example bed_rest -- [N] [FORM]
//! [THREADS] [SECONDS] [reduce]` builds `N` spheres (default 10 000) as `cargo
//! xtask peers` does (`builders::box_packing`, r = 5-6.5 mm, seed 11,
//! e = 0.5, μ = 0.5, μ_r = 0.1, about 16 layers in an open box), settles
//! them for 1.5 s with the scene's own stepper (PGS, 50 iterations) and
//! then steps `SECONDS` (default 0.5 s) with the suite's measured
//! configuration: `pgs-coloured`, 25 sweeps, history warm start carried
//! over, on `THREADS` threads (default 1). The first measured step is not
//! timed (it allocates), as in the suite. The first 20 steps are the
//! suite's lead-in (`LEAD_IN_S` in `xtask/src/peers_ndem.rs`), in which
//! the bed sags as the sweeps drop from 50 to 25; the suite times the
//! steps after it, this example all of them. With `reduce`, the measured steps
//! also run model reduction (`ReductionSettings::default()`, the
//! adaptive-model-reduction paper's merging and splitting), which the
//! suite does not.
//!
//! `FORM` is how the spheres start:
//! - `lattice` (default): the suite's bed, a square lattice of spacing
//!   2.2 r_max whose layers lie straight above each other (each sphere
//!   jittered sideways by at most 0.05 r_max), so the spheres land on top
//!   of each other in columns;
//! - `nested`: the same spheres with every other layer shifted by half a
//!   spacing along x and y, so each sphere lands in the hollow between
//!   four below.
//!
//! Every 20 steps it prints the contacts, the kinetic energy, the spheres
//! faster than `v_imp` and than 5 mm/s, the impacting contacts per step
//! and the steps that solved an impact problem; at the end the measured
//! steps' mean time, apart for steps with and without an impact solve
//! (`docs/performance.md`, "The beds").

use ndem_math::Vec3;
use ndem_scenes::{Scene, SolverChoice, builders};
use ndem_step::{BodyId, Motion, StepStats};

const R_MIN: f64 = 0.005;
const R_MAX: f64 = 0.0065;
const SEED: u64 = 11;
const SETTLE_S: f64 = 1.5;
const SWEEPS: usize = 25;
const WINDOW: usize = 20;

/// The suite's bed of `n` spheres (`xtask/src/peers.rs`, `bed`), with every
/// other layer shifted by half a lattice spacing when `nested`.
fn bed(n: usize, nested: bool) -> Scene {
    let per_side = ((n as f64 / 16.0).sqrt().ceil() as usize).max(2);
    let side = (per_side as f64 + 1.2) * 2.2 * R_MAX;
    let mut scene = builders::box_packing(n, R_MIN, R_MAX, side, SEED).expect("a bed");
    for m in &mut scene.world.materials {
        m.restitution = 0.5;
        m.friction = 0.5;
        m.rolling_resistance = 0.1;
    }
    if nested {
        let spacing = 2.2 * R_MAX;
        for i in 0..scene.world.len() {
            let p = scene.world.positions()[i];
            let layer = (p.z / spacing - 0.5).round() as i64;
            if scene.world.motions()[i] == Motion::Dynamic && layer % 2 == 1 {
                let shift = Vec3::new(0.5 * spacing, 0.5 * spacing, 0.0);
                scene
                    .world
                    .set_position(BodyId::from_index(i), p + shift)
                    .expect("a position");
            }
        }
    }
    scene
}

/// How many of `steps` `keep` selects, their mean step time and its
/// stages \[ms\].
fn mean_ms(steps: &[StepStats], keep: impl Fn(&StepStats) -> bool) -> String {
    let kept: Vec<&StepStats> = steps.iter().filter(|s| keep(s)).collect();
    if kept.is_empty() {
        return "none".into();
    }
    let mean = |stage: fn(&StepStats) -> std::time::Duration| {
        kept.iter()
            .map(|s| stage(s).as_secs_f64() * 1e3)
            .sum::<f64>()
            / kept.len() as f64
    };
    format!(
        "{} ({:.1} ms: detection {:.1}, assembly {:.1}, impact {:.1}, continuous {:.1}, reduction {:.1})",
        kept.len(),
        mean(|s| s.times.total),
        mean(|s| s.times.detection),
        mean(|s| s.times.assembly),
        mean(|s| s.times.impact),
        mean(|s| s.times.continuous),
        mean(|s| s.times.reduction),
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(10_000, |s| s.parse().expect("N"));
    let form = args.next().unwrap_or_else(|| "lattice".into());
    let nested = match form.as_str() {
        "lattice" => false,
        "nested" => true,
        other => panic!("FORM: lattice or nested, not {other}"),
    };
    let threads: usize = args.next().map_or(1, |s| s.parse().expect("THREADS"));
    let seconds: f64 = args.next().map_or(0.5, |s| s.parse().expect("SECONDS"));
    let reduce = match args.next().as_deref() {
        None => false,
        Some("reduce") => true,
        Some(other) => panic!("the fifth argument is `reduce` or nothing, not {other}"),
    };
    let mut scene = bed(n, nested);
    let mut stepper = scene.stepper().expect("a stepper");
    let dt = scene.settings.dt;
    let v_imp = scene.settings.impact_velocity;
    let settle = (SETTLE_S / dt).round() as usize;
    let measured = (seconds / dt).round() as usize;
    println!(
        "{n} spheres, {form} bed, measured on {threads} thread(s){}",
        if reduce { " with model reduction" } else { "" }
    );
    let mut window: Vec<StepStats> = Vec::new();
    let mut timed: Vec<StepStats> = Vec::new();
    for k in 0..settle + measured {
        if k == settle {
            let history = stepper.history().cloned().unwrap_or_default();
            scene.solver = SolverChoice::PgsColoured;
            scene.iterations = SWEEPS;
            scene.threads = threads;
            if reduce {
                scene.reduction = Some(ndem::reduce::ReductionSettings::default());
            }
            stepper = scene.stepper().expect("a stepper");
            assert!(stepper.set_history(history), "a history warm start");
        }
        let stats = scene.step(&mut stepper).expect("a step");
        if k > settle {
            timed.push(stats);
        }
        window.push(stats);
        if window.len() == WINDOW {
            let last = window.last().expect("a step");
            let speeds = scene.world.velocities().iter().map(|v| v.linear.norm());
            let fast = speeds.clone().filter(|&s| s > v_imp).count();
            let moving = speeds.filter(|&s| s > 5e-3).count();
            let impacts: usize = window.iter().map(|s| s.impacts).sum();
            let solves = window.iter().filter(|s| s.impact_status.is_some()).count();
            println!(
                "t {:.2} s ({}): contacts {}, E_k {:.2e} J, faster than v_imp {fast}, than 5 mm/s {moving}, impacting contacts per step {:.2}, steps with an impact solve {solves} of {WINDOW}",
                (k + 1) as f64 * dt,
                if k < settle { "settling" } else { "measured" },
                last.contacts,
                last.kinetic_energy,
                impacts as f64 / WINDOW as f64,
            );
            window.clear();
        }
    }
    println!(
        "measured steps: {}; with an impact solve {}, without {}",
        mean_ms(&timed, |_| true),
        mean_ms(&timed, |s| s.impact_status.is_some()),
        mean_ms(&timed, |s| s.impact_status.is_none()),
    );
}

//! `cargo xtask reduce speedup [--quick]`: the measured speed-up of
//! adaptive model reduction against the full-resolution step, as a function
//! of the reduction level h, beside the model-reduction paper's cost model
//! (eq. 39: `S = 1/(δ + (1 − h)^{1+γ})`, γ = 1/3, δ = 0.01 and 0.1; the
//! paper's speed-ups were modelled, never timed).
//!
//! Scene: a resting simple-cubic bed of spheres (d = 13 mm, Table 1 of the
//! warm-starting paper, Hertz, Δt = 5 ms, PGS with N_it = 150 as in the
//! model-reduction paper's runs, history warm start). h is controlled by
//! split sensors over the top of the bed: the particles under them stay
//! free, the rest merges. Each h is timed against the full model in the
//! same run, interleaved, minimum of three repeats.
//!
//! Accuracy at the same N_it: after the timing, each level's reduced
//! answer is read on the unfolded problem (every member a body of its own,
//! the contacts inside an aggregate in it; `ndem_step::unfolded_problem`)
//! and its residual set beside the full model's of its last step
//! ([`unfolded_residuals`]).

use crate::SuiteOptions;
use crate::plot::{self, Axes, Series};
use crate::reduce_classes;
use crate::report::{self, Progress, SuiteResult};
use ndem_collide::Shape;
use ndem_math::{Material, Quat, Vec3, Velocity6};
use ndem_reduce::{Reducer, ReductionSettings, SensorSplit};
use ndem_solve::{
    ContactProblem, DEFAULT_TOLERANCE, HistoryWarmStart, HubRows, PgsSettings,
    ProjectedGaussSeidel, ResidualEvaluator, ResidualStats, SolverStatus, Stopping,
};
use ndem_step::{BodyDesc, MaterialId, Motion, StageTimes, StepSettings, Stepper, World};
use serde_json::json;
use std::time::Instant;

const R: f64 = 0.0065;
const ITERATIONS: usize = 150;

fn bed(n: [usize; 3]) -> SuiteResult<World> {
    lattice_bed(n, |_| (R, 0.0, 0.0))
}

/// Spheres on the simple-cubic lattice of spacing `2R` on a floor:
/// `sphere(lattice index)` gives each radius and horizontal offset.
fn lattice_bed(
    n: [usize; 3],
    mut sphere: impl FnMut([usize; 3]) -> (f64, f64, f64),
) -> SuiteResult<World> {
    let e = |e: ndem_step::StepError| e.to_string();
    let mut w = World::new(vec![Material::default()], Vec3::new(0.0, 0.0, -9.81)).map_err(e)?;
    w.add_body(BodyDesc::floor(MaterialId::from_index(0)))
        .map_err(e)?;
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                let (r, dx, dy) = sphere([i, j, k]);
                let at = Vec3::new(
                    2.0 * R * i as f64 + dx,
                    2.0 * R * j as f64 + dy,
                    R + 2.0 * R * k as f64,
                );
                let body = BodyDesc::sphere(r, MaterialId::from_index(0), at);
                w.add_body(body.map_err(|x| x.to_string())?).map_err(e)?;
            }
        }
    }
    Ok(w)
}

/// The papers' fixed N_it, or with `tolerance` PGS stopping at that
/// residual (at most [`MAX_ITERATIONS`] sweeps): equal accuracy for the
/// full and the reduced model instead of equal work per contact.
fn stepper(tolerance: Option<f64>, hubs: HubRows) -> SuiteResult<Stepper> {
    let stopping = match tolerance {
        None => Stopping::iterations(ITERATIONS),
        Some(t) => Stopping::to_tolerance(MAX_ITERATIONS, t),
    };
    let pgs = ProjectedGaussSeidel::new(PgsSettings {
        stopping,
        hubs,
        ..PgsSettings::default()
    })
    .map_err(|e| e.to_string())?;
    Stepper::new(
        StepSettings::papers(),
        Box::new(pgs),
        Box::new(HistoryWarmStart::default()),
    )
    .map_err(|e| e.to_string())
}

/// Fewest contacts of a body solved as a block with `hubs`.
const HUB_MIN_CONTACTS: usize = 64;

/// Steps a random bed settles for at the papers' N_it before the
/// measurement. After 200 (1 s) the quick bed still creeps: PGS needs
/// 1160-2360 sweeps per step to reach 2e-3 m/s, level to level, and steps
/// miss it at 3000; after 2000 (10 s) 743-929.
const RANDOM_SETTLE: usize = 2000;

/// Steps the full model takes with the measured settings (a tolerance)
/// after the random bed's settling at N_it, before the first level: its
/// first steps there solve further what 150 sweeps a step left (as the
/// lattice, which settles with the measured settings, already has).
const RANDOM_WARM_UP: usize = 40;

/// Seed of the random bed's radii and offsets.
const RANDOM_SEED: u64 = 1;

/// Sweep cap of the equal-accuracy runs.
const MAX_ITERATIONS: usize = 3000;

/// Sensors that keep about `free` particles of the top of the bed free:
/// whole top layers, then rows of the next layer.
fn sensors(n: [usize; 3], free: usize) -> Vec<SensorSplit> {
    let layer = n[0] * n[1];
    let (layers, rest) = (free / layer, free % layer);
    let rows = rest / n[1];
    let extent = |i: usize| 2.0 * R * i as f64;
    let mut out = Vec::new();
    let top = R + extent(n[2] - 1);
    let eps = 0.25 * R;
    if layers > 0 {
        let z0 = top - extent(layers - 1);
        let half = Vec3::new(extent(n[0]), extent(n[1]), 0.5 * (top - z0) + eps);
        out.push(SensorSplit::fixed(
            Shape::Box { half_extents: half },
            Vec3::new(extent(n[0]) / 2.0, extent(n[1]) / 2.0, 0.5 * (top + z0)),
            Quat::identity(),
        ));
    }
    if rows > 0 && layers < n[2] {
        let z = top - extent(layers);
        let x1 = extent(rows - 1);
        out.push(SensorSplit::fixed(
            Shape::Box {
                half_extents: Vec3::new(0.5 * x1 + eps, extent(n[1]), eps),
            },
            Vec3::new(0.5 * x1, extent(n[1]) / 2.0, z),
            Quat::identity(),
        ));
    }
    // sensors act on members whose sphere reaches into them: shrink the
    // boxes by the radius so that only the intended particles count
    for s in &mut out {
        if let Shape::Box { half_extents } = &mut s.shape {
            half_extents.z = (half_extents.z - R).max(0.1 * R);
        }
    }
    out
}

/// The bed a speed-up is measured on: the simple-cubic lattice, or the
/// random packing settled from it ([`random_bed`]), with its lattice size.
#[derive(Debug, Clone, Copy)]
enum Bed {
    Lattice([usize; 3]),
    Random([usize; 3]),
}

/// Spheres of radii uniform in `[0.8 R, R]` on the lattice of spacing
/// `2R`, each centre moved horizontally by up to `0.2 R` (seeded): no
/// two overlap at the start, and the columns buckle as they settle into
/// a disordered packing whose friction and rolling rows carry load.
fn random_bed(n: [usize; 3], seed: u64) -> SuiteResult<World> {
    let mut rng = ndem_math::rng::Rng::new(seed);
    lattice_bed(n, |_| {
        let r = R * rng.range(0.8, 1.0);
        (r, rng.range(-0.2, 0.2) * R, rng.range(-0.2, 0.2) * R)
    })
}

/// The random bed ([`random_bed`]) settled for [`RANDOM_SETTLE`] steps at
/// the papers' N_it (the tolerance would spend minutes on the fall), and
/// the full model continuing from it with the measured settings, after
/// [`RANDOM_WARM_UP`] steps with them when they are a tolerance.
fn settled_random_bed(
    n: [usize; 3],
    tolerance: Option<f64>,
    hubs: HubRows,
) -> SuiteResult<(World, Stepper)> {
    let mut world = random_bed(n, RANDOM_SEED)?;
    let mut settling = stepper(None, hubs)?;
    for _ in 0..RANDOM_SETTLE {
        settling.step(&mut world).map_err(|e| e.to_string())?;
    }
    let mut full = stepper(tolerance, hubs)?;
    if !full.set_history(settling.history().cloned().unwrap_or_default()) {
        return Err("the warm-start policy keeps no history to continue from".into());
    }
    full.set_clock(settling.time(), settling.step_count());
    if tolerance.is_some() {
        for _ in 0..RANDOM_WARM_UP {
            full.step(&mut world).map_err(|e| e.to_string())?;
        }
    }
    Ok((world, full))
}

/// A sensor over the whole bed that keeps about the `free` highest
/// spheres of a random bed free (those whose centre is at or above the
/// `free`-th highest centre; a sphere reaches into the box when its
/// centre lies within its radius, at least `0.8 R`, of the box).
fn sensors_above(world: &World, n: [usize; 3], free: usize) -> Vec<SensorSplit> {
    let mut heights: Vec<f64> = world.positions().iter().skip(1).map(|p| p.z).collect();
    heights.sort_by(|a, b| b.total_cmp(a));
    let Some(&cut) = heights.get(free.min(heights.len().saturating_sub(1))) else {
        return Vec::new();
    };
    let top = heights[0] + 2.0 * R;
    let bottom = cut + 0.8 * R * (1.0 - 1e-9);
    let half = Vec3::new(
        R * (n[0] as f64 + 2.0),
        R * (n[1] as f64 + 2.0),
        0.5 * (top - bottom),
    );
    vec![SensorSplit::fixed(
        Shape::Box { half_extents: half },
        Vec3::new(R * n[0] as f64, R * n[1] as f64, 0.5 * (top + bottom)),
        Quat::identity(),
    )]
}

#[derive(Debug, Clone, Copy, Default)]
struct Timing {
    total: f64,
    times: [f64; 6],
    /// Contacts in the solve in the last timed step.
    contacts: usize,
    /// Mean PGS sweeps per step.
    iterations: f64,
    /// Steps whose solve did not reach the tolerance.
    unconverged: usize,
    /// The residuals of the last timed step's solve.
    residuals: ResidualStats,
}

fn time_steps(world: &mut World, st: &mut Stepper, steps: usize) -> SuiteResult<Timing> {
    let mut t = Timing::default();
    let start = Instant::now();
    for _ in 0..steps {
        let s = st.step(world).map_err(|e| e.to_string())?;
        t.contacts = s.contacts;
        t.residuals = s.residuals;
        t.iterations += s.iterations as f64 / steps as f64;
        if s.status != SolverStatus::Converged {
            t.unconverged += 1;
        }
        let StageTimes {
            detection,
            assembly,
            impact,
            continuous,
            reduction,
            ..
        } = s.times;
        for (k, d) in [detection, assembly, impact, continuous, reduction]
            .into_iter()
            .enumerate()
        {
            t.times[k] += d.as_secs_f64() / steps as f64;
        }
    }
    t.total = start.elapsed().as_secs_f64() / steps as f64;
    Ok(t)
}

/// Reduced steps [`unfolded_residuals`] takes to find one that neither
/// merges nor splits.
const UNFOLDED_ATTEMPTS: usize = 5;

/// The reduced model's answer on the unfolded problem: one more reduced
/// step, then the unfolded problem of the state before it, `λ` from the
/// stepper's impulse history after it (this step's impulses on the
/// contacts it solved, the held ones on the contacts inside an aggregate,
/// taken whole: β = 1), and the residual statistics at
/// `v = v* + M⁻¹Gᵀλ`, as the solvers check their own answers. A step
/// that merged or split is passed over (the state before it is then not
/// the one it solved): `None` when [`UNFOLDED_ATTEMPTS`] steps all did.
fn unfolded_residuals(world: &mut World, st: &mut Stepper) -> SuiteResult<Option<ResidualStats>> {
    for _ in 0..UNFOLDED_ATTEMPTS {
        let before = world.clone();
        st.step(world).map_err(|e| e.to_string())?;
        if (0..world.len()).all(|i| world.host_of(i) == before.host_of(i)) {
            return unfolded_answer(&before, st).map(Some);
        }
    }
    Ok(None)
}

/// [`unfolded_residuals`] of the step `st` took from `before`.
fn unfolded_answer(before: &World, st: &Stepper) -> SuiteResult<ResidualStats> {
    let (problem, _) = ndem_step::unfolded_problem(before, st.contacts(), st.settings())
        .map_err(|e| e.to_string())?;
    let history = st
        .history()
        .ok_or("the warm-start policy keeps no impulse history")?;
    let whole = HistoryWarmStart {
        beta: 1.0,
        ..HistoryWarmStart::default()
    };
    let mut lambda = vec![0.0; problem.len()];
    let mut velocity = vec![Velocity6::ZERO; problem.body_count()];
    whole
        .start_from(history, &problem, &mut lambda, &mut velocity)
        .map_err(|e| e.to_string())?;
    Ok(ResidualEvaluator::new().stats(&problem, &lambda, None))
}

/// The full and the reduced model timed side by side at reduction level
/// `h` (sensors leave `(1 − h)` of the `total` spheres free): the best of
/// `repeats` runs of `steps` steps each, the reducer's statistics, the
/// floor contacts left in the reduced solve and the reduced answer's
/// residuals on the unfolded problem ([`unfolded_residuals`]).
fn time_level(
    world: &mut World,
    full: &mut Stepper,
    (bed, total, h): (Bed, usize, f64),
    (tolerance, hubs, keep_problem, on_static): (Option<f64>, HubRows, bool, bool),
    (steps, repeats): (usize, usize),
) -> SuiteResult<LevelRun> {
    let free = (((1.0 - h) * total as f64).round() as usize).saturating_sub(1);
    let sensors = match bed {
        Bed::Lattice(n) => sensors(n, free),
        Bed::Random(n) => sensors_above(world, n, free),
    };
    let settings = ReductionSettings {
        sensors,
        merge_with_static: on_static,
        ..ReductionSettings::default()
    };
    let mut reduced_world = world.clone();
    let mut reduced = stepper(tolerance, hubs)?;
    if !reduced.set_history(full.history().cloned().unwrap_or_default()) {
        return Err("the warm-start policy keeps no history to continue from".into());
    }
    reduced.set_clock(full.time(), full.step_count());
    reduced.set_hooks(Box::new(Reducer::new(settings).map_err(|e| e.to_string())?));
    for _ in 0..3 {
        reduced
            .step(&mut reduced_world)
            .map_err(|e| e.to_string())?;
    }
    let mut best_full = Timing {
        total: f64::MAX,
        ..Timing::default()
    };
    let mut best_red = best_full;
    // the residuals of the full model's last timed step, whichever
    // repeat was fastest
    let mut last_full = ResidualStats::default();
    for _ in 0..repeats {
        let f = time_steps(world, full, steps)?;
        let r = time_steps(&mut reduced_world, &mut reduced, steps)?;
        last_full = f.residuals;
        if f.total < best_full.total {
            best_full = f;
        }
        if r.total < best_red.total {
            best_red = r;
        }
    }
    best_full.residuals = last_full;
    let stats = reduced
        .hooks_as::<Reducer>()
        .map(|r| r.stats())
        .unwrap_or_default();
    // contacts of the merged bed with the floor (body 0) stay in the solve
    // unless the bed merged with the floor (its host then static)
    let floor = reduced
        .contacts()
        .iter()
        .filter(|c| {
            let other = if c.body_a() == 0 {
                c.body_b()
            } else {
                c.body_a()
            };
            (c.body_a() == 0 || c.body_b() == 0)
                && reduced_world.motions()[reduced_world.carrier(other)] != Motion::Static
        })
        .count();
    // the last reduced problem, for the residual classes
    let problem = keep_problem.then(|| reduced.last_problem().map(|(p, _)| p.clone()));
    let unfolded = unfolded_residuals(&mut reduced_world, &mut reduced)?;
    Ok(LevelRun {
        full: best_full,
        reduced: best_red,
        stats,
        floor,
        unfolded,
        problem: problem.flatten(),
    })
}

/// What [`time_level`] measured at one level.
struct LevelRun {
    full: Timing,
    reduced: Timing,
    stats: ndem_reduce::ReductionStats,
    /// Contacts of the merged bed with the floor in the reduced solve.
    floor: usize,
    /// The reduced answer's residuals on the unfolded problem.
    unfolded: Option<ResidualStats>,
    /// The last reduced problem, when asked for.
    problem: Option<ContactProblem>,
}

impl LevelRun {
    /// The reduction level h reached.
    fn h(&self) -> f64 {
        self.stats.level
    }

    /// The full step's time over the reduced one's.
    fn speedup(&self) -> f64 {
        self.full.total / self.reduced.total
    }
}

/// Largest residual of the normal, friction and rolling rows \[m/s\].
fn largest(r: &ResidualStats) -> [f64; 3] {
    [r.normal.max, r.friction.max, r.rolling.max]
}

/// The `speedup.csv` row of a level measured for target `h`.
fn csv_row(h: f64, level: &LevelRun) -> Vec<String> {
    let (level_h, speedup) = (level.h(), level.speedup());
    let LevelRun {
        full: best_full,
        reduced: best_red,
        stats,
        floor,
        unfolded,
        ..
    } = level;
    let full = largest(&best_full.residuals);
    let reduced = unfolded.as_ref().map(largest);
    let mut row = vec![
        format!("{h}"),
        format!("{:e}", level_h),
        stats.free.to_string(),
        stats.aggregates.to_string(),
        format!("{:e}", best_full.total),
        format!("{:e}", best_red.total),
        format!("{:e}", speedup),
        format!("{:e}", best_red.times[0]),
        format!("{:e}", best_red.times[1]),
        format!("{:e}", best_red.times[3]),
        format!("{:e}", best_red.times[4]),
        best_full.contacts.to_string(),
        best_red.contacts.to_string(),
        floor.to_string(),
        format!("{:.1}", best_full.iterations),
        format!("{:.1}", best_red.iterations),
        (best_full.unconverged + best_red.unconverged).to_string(),
    ];
    row.extend(full.iter().map(|x| format!("{x:e}")));
    row.extend((0..3).map(|k| reduced.map_or_else(String::new, |r| format!("{:e}", r[k]))));
    row
}

/// The report table of the measured levels.
fn speedup_table(measured: &[LevelRun]) -> String {
    let mut table = String::from(
        "| h | free | aggregates | full step [ms] | reduced step [ms] | speed-up | contacts in solve: full / reduced (floor) | contact ratio | sweeps per step: full / reduced | paper S (δ = 0.01) | reduced: detection / solve / reduction [ms] |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for level in measured {
        let (h, s, floor) = (level.h(), level.speedup(), level.floor);
        let (f, r, st) = (&level.full, &level.reduced, &level.stats);
        table.push_str(&format!(
            "| {h:.3} | {} | {} | {:.1} | {:.2} | {s:.1} | {} / {} ({floor}) | {:.1} | {:.0} / {:.0} | {:.1} | {:.2} / {:.2} / {:.2} |\n",
            st.free,
            st.aggregates,
            f.total * 1e3,
            r.total * 1e3,
            f.contacts,
            r.contacts,
            f.contacts as f64 / r.contacts.max(1) as f64,
            f.iterations,
            r.iterations,
            1.0 / (0.01 + (1.0 - h).powf(4.0 / 3.0)),
            r.times[0] * 1e3,
            r.times[3] * 1e3,
            r.times[4] * 1e3,
        ));
    }
    table
}

/// The report table of the residuals: the full model's after its last
/// timed step and the reduced answer's on the unfolded problem.
fn unfolded_table(measured: &[LevelRun]) -> String {
    let mut table = String::from(
        "| h | full: largest normal / friction / rolling residual [m/s] | reduced on the unfolded problem: the same | reduced over full (normal, friction, rolling) |\n|---|---|---|---|\n",
    );
    let three = |r: [f64; 3]| format!("{:.1e} / {:.1e} / {:.1e}", r[0], r[1], r[2]);
    for level in measured {
        let (h, full) = (level.h(), largest(&level.full.residuals));
        let (reduced, ratio) = match level.unfolded.as_ref().map(largest) {
            Some(r) => (
                three(r),
                format!(
                    "{:.1e}, {:.1e}, {:.1e}",
                    r[0] / full[0],
                    r[1] / full[1],
                    r[2] / full[2]
                ),
            ),
            None => ("–".into(), "–".into()),
        };
        table.push_str(&format!(
            "| {h:.3} | {} | {reduced} | {ratio} |\n",
            three(full)
        ));
    }
    table
}

/// The measured levels as JSON.
fn speedup_points(measured: &[LevelRun]) -> Vec<serde_json::Value> {
    measured.iter().map(|l| (l.h(), l.speedup(), &l.full, &l.reduced, &l.stats, l.floor, &l.unfolded)).map(|(h, s, f, r, st, floor, unfolded)| json!({
            "h": h, "speedup": s, "t_full_s": f.total, "t_reduced_s": r.total,
            "full_solve_contacts": f.contacts, "reduced_solve_contacts": r.contacts, "reduced_floor_contacts": floor,
            "full_sweeps_per_step": f.iterations, "reduced_sweeps_per_step": r.iterations,
            "unconverged_steps": f.unconverged + r.unconverged,
            "free": st.free, "aggregates": st.aggregates,
            "reduced_times_s": {"detection": r.times[0], "assembly": r.times[1], "impact": r.times[2], "solve": r.times[3], "reduction": r.times[4]},
            "full_largest_residual_normal_friction_rolling": largest(&f.residuals),
            "reduced_on_unfolded_largest_residual_normal_friction_rolling": unfolded.as_ref().map(largest),
        })).collect::<Vec<_>>()
}

/// The tolerance of a `tolerance=X` word (`X` finite and positive).
pub fn tolerance_word(word: &str) -> Option<f64> {
    let x: f64 = word.strip_prefix("tolerance=")?.parse().ok()?;
    (x.is_finite() && x > 0.0).then_some(x)
}

/// `cargo xtask reduce speedup`.
pub fn speedup(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    // `cargo xtask reduce speedup tolerance`: both models solve to the
    // default residual tolerance instead of the papers' fixed N_it
    let tolerance = opts.args.iter().find_map(|a| match a.as_str() {
        "tolerance" => Some(DEFAULT_TOLERANCE),
        other => tolerance_word(other),
    });
    // `hubs`: PGS solves each body with many contacts (the merged bed) as
    // one block per sweep
    let hubs = if opts.args.iter().any(|a| a == "hubs") {
        HubRows::Block {
            min_contacts: HUB_MIN_CONTACTS,
        }
    } else {
        HubRows::RowWise
    };
    let n = if opts.quick {
        [20, 20, 10]
    } else {
        [25, 25, 16]
    };
    let total = n[0] * n[1] * n[2];
    let targets = [0.5, 0.7, 0.8, 0.9, 0.95, 0.98];
    let (settle, steps, repeats) = if opts.quick { (40, 3, 3) } else { (60, 6, 3) };
    let mut progress = Progress::new("reduce speedup", 1 + targets.len());
    let random = opts.args.iter().any(|a| a == "random");
    // `static`: aggregates resting on the floor merge with it
    // (`ReductionSettings::merge_with_static`)
    let on_static = opts.args.iter().any(|a| a == "static");
    let (mut world, mut full, settle, kind) = if random {
        let (world, full) = settled_random_bed(n, tolerance, hubs)?;
        (world, full, RANDOM_SETTLE, Bed::Random(n))
    } else {
        let mut world = bed(n)?;
        let mut full = stepper(tolerance, hubs)?;
        for _ in 0..settle {
            full.step(&mut world).map_err(|e| e.to_string())?;
        }
        (world, full, settle, Bed::Lattice(n))
    };
    progress.tick(&format!("{total} particles settled ({settle} steps)"));
    let mut rows = Vec::new();
    let mut measured = Vec::new();
    // `classes`: each level's last reduced problem solved again from a cold start
    let classes = opts.args.iter().any(|a| a == "classes");
    let mut class_rows = Vec::new();
    for &h in &targets {
        let mut level = time_level(
            &mut world,
            &mut full,
            (kind, total, h),
            (tolerance, hubs, classes, on_static),
            (steps, repeats),
        )?;
        progress.tick(&format!(
            "h = {:.3} (target {h}): full {:.1} ms, reduced {:.1} ms, speed-up {:.1}",
            level.h(),
            level.full.total * 1e3,
            level.reduced.total * 1e3,
            level.speedup()
        ));
        if let Some(problem) = level.problem.take() {
            class_rows.extend(reduce_classes::class_rows(
                &problem,
                level.h(),
                HUB_MIN_CONTACTS,
            )?);
        }
        rows.push(csv_row(h, &level));
        measured.push(level);
    }
    if classes {
        report::write_csv(
            &opts.out.join("residual_classes.csv"),
            &reduce_classes::HEADER,
            &class_rows,
        )?;
    }
    report::write_csv(
        &opts.out.join("speedup.csv"),
        &[
            "target_h",
            "h",
            "free",
            "aggregates",
            "t_full_s",
            "t_reduced_s",
            "speedup",
            "reduced_detection_s",
            "reduced_assembly_s",
            "reduced_solve_s",
            "reduced_reduction_s",
            "full_solve_contacts",
            "reduced_solve_contacts",
            "reduced_floor_contacts",
            "full_sweeps_per_step",
            "reduced_sweeps_per_step",
            "unconverged_steps",
            "full_largest_normal_residual_m_per_s",
            "full_largest_friction_residual_m_per_s",
            "full_largest_rolling_residual_m_per_s",
            "reduced_on_unfolded_largest_normal_residual_m_per_s",
            "reduced_on_unfolded_largest_friction_residual_m_per_s",
            "reduced_on_unfolded_largest_rolling_residual_m_per_s",
        ],
        &rows,
    )?;
    let model = |delta: f64| -> Vec<(f64, f64)> {
        (0..=98)
            .map(|i| {
                let h = i as f64 / 100.0;
                (h, 1.0 / (delta + (1.0 - h).powf(4.0 / 3.0)))
            })
            .collect()
    };
    plot::line_plot(
        &opts.out.join("speedup.svg"),
        Axes::new(
            "Speed-up of model reduction against the full model",
            "reduction level h",
            "speed-up S (log10)",
        )
        .log_y(),
        &[
            Series::markers(
                "measured (ndem)",
                measured.iter().map(|m| (m.h(), m.speedup())).collect(),
            ),
            Series::line("paper eq. 39, δ = 0.01", model(0.01)),
            Series::line("paper eq. 39, δ = 0.1", model(0.1)),
        ],
    )?;
    let table = speedup_table(&measured);
    let accuracy = unfolded_table(&measured);
    let summary = json!({
        "suite": "reduce speedup",
        "quick": opts.quick,
        "particles": total,
        "iterations": if tolerance.is_some() { json!(null) } else { json!(ITERATIONS) },
        "tolerance": tolerance,
        "max_iterations_at_tolerance": tolerance.map(|_| MAX_ITERATIONS),
        "bed": if random { "random" } else { "lattice" },
        "settle_steps": settle,
        "hub_blocks": hubs != HubRows::RowWise,
        "merge_with_static": on_static,
        "residual_classes": classes.then_some("residual_classes.csv"),
        "steps_per_timing": steps,
        "repeats": repeats,
        "points": speedup_points(&measured),
        "paper_model": "S = 1/(delta + (1-h)^(4/3)); with delta = 0.01: 4.7 at h = 0.7, 35 at h = 0.95 (the paper quotes 5 and 50)",
        "wall_time_s": progress.elapsed(),
    });
    report::write_summary(&opts.out, &summary)?;
    let md = format!(
        "# cargo xtask reduce speedup{}\n\n{} (d = 13 mm, Table 1, Hertz, Δt = 5 ms, \
         {}, history warm start). The reduction level h is set by split sensors over the top of the bed \
         (the particles under them stay free; the rest merges, contact split on). Each h is timed against the full model in the \
         same run, interleaved, {steps} steps per timing, minimum of {repeats} repeats. Load average: {}.\n\n{table}\n\
         Paper (model only, eq. 39 with γ = 1/3): S = 1/(δ + (1 − h)^{{4/3}}); with δ = 0.01 it gives 4.7 at h = 0.7 and 35 \
         at h = 0.95, not the quoted 5 and 50 (50 needs δ ≈ 0.001). Plot: `speedup.svg`; data: `speedup.csv`.\n\n\
         The accuracy of the two at these settings: the full model's largest residuals after its last timed step, and the \
         reduced answer's on the unfolded problem (every member a body of its own, the contacts inside an aggregate in it, \
         their impulses those the stepper holds; residuals at v = v* + M⁻¹Gᵀλ as the solvers check their own; a dash \
         where five steps in a row merged or split):\n\n{accuracy}\n\
         Where the time of a reduced step goes: the solve, as in the full step. With the papers' fixed N_it every sweep \
         visits every contact in the solve, so the speed-up is bounded by the ratio of contacts in the solve (column \
         'contact ratio'), not by 1/(1 − h)^(1+γ): the paper's γ models the extra iterations a larger system needs for \
         the same accuracy, which a fixed N_it never spends. {} Contact detection still visits every particle (member \
         contacts are the connectivity network for splitting) but costs a few per cent.\n",
        opts.args.iter().skip(1).fold(
            String::from(if opts.quick { " --quick" } else { "" }),
            |a, w| a + " " + w
        ),
        match kind {
            Bed::Lattice(_) => format!("A resting simple-cubic bed of {total} spheres"),
            Bed::Random(_) => format!(
                "A random bed of {total} spheres (radii 0.8-1 R dropped from the lattice with offsets up to 0.2 R, \
                 seed {RANDOM_SEED}) settled for {settle} steps at N_it = {ITERATIONS}{}",
                if tolerance.is_some() {
                    format!(", then {RANDOM_WARM_UP} steps of the full model at the tolerance")
                } else {
                    String::new()
                }
            ),
        },
        match (tolerance, hubs) {
            (None, HubRows::RowWise) => format!("PGS N_it = {ITERATIONS}"),
            (None, _) => format!("PGS N_it = {ITERATIONS} with hub blocks"),
            (Some(t), h) => format!(
                "PGS{} to the residual tolerance {t:e} (at most {MAX_ITERATIONS} sweeps; equal accuracy)",
                if h == HubRows::RowWise {
                    ""
                } else {
                    " with hub blocks"
                }
            ),
        },
        report::load_average(),
        if on_static {
            "The merged bed merges with the floor (`merge_with_static`): its host is static and its contacts with \
             the floor leave the solve; the free particles rest on an immovable body."
        } else {
            "The merged bed keeps its contacts with the floor (one per bottom particle, ∝ N^(2/3)) in the solve."
        }
    );
    report::write(&opts.out.join("report.md"), &md)?;
    println!("{table}");
    Ok(true)
}

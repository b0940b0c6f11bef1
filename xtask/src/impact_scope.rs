//! `cargo xtask impact-scope [--quick] [SCENE...] [samples=N]`: the
//! active-set impact stage (`ImpactScope::ActiveSet`) against the papers'
//! whole-network impact stage on every built-in scene.
//!
//! Each built-in scene runs with its own settings (whole network). At
//! `N` evenly spaced points of the run (6, `--quick` 3), the state before
//! the next step that has impacting contacts is captured
//! ([`ndem::checkpoint::Checkpoint`]),
//! restored twice with the impact stage given `SWEEPS` sweeps to its
//! tolerance of 1e-10, and stepped once with each scope. The two steps
//! start from the same state and history, so their post-impact velocities
//! `v⁺` differ only by what the two impact stages did: the rows the active
//! set leaves out may keep a violation up to its join velocity `v_j`. Had
//! the whole network solved such a row, its normal impulse would have
//! changed the normal velocity by at most `v_j`, and the friction and
//! rolling impulses it bounds (`μ λ_n`, `μ_r R* λ_n`) would have turned
//! the body too: a body of mass `m`, bounding radius `r` and smallest
//! principal inertia `I` differs by at most `c v_j`, with
//! `c = max(1 + μ, (m r²/I)(μ + μ_r))` (2.5 (μ + μ_r) for a sphere; `μ`
//! and `μ_r` the largest of the scene's materials and pairs), in linear
//! velocity or in angular velocity times `r`, from one left-out row. The
//! suite reports the largest difference over the dynamic bodies in m/s,
//! over `v_j`, and over each body's `c v_j`. `v⁺` is read from the
//! continuous problem's free velocity `v* = v⁺ + Δt M⁻¹ f_ext` (the same
//! `f_ext` in both steps) by a hook around the scene's own. A sample
//! counts only when both impact solves reach their tolerance; one that
//! does not is reported with its status and not counted. The velocities
//! at the end of the two steps are reported beside (the continuous
//! stage's fixed iterations carry the difference on).
//!
//! The region the impacts reach: the same state stepped with the impact
//! stage off gives `v⁻ + Δt M⁻¹ f_ext`, so that the whole-network steps'
//! `v*` less it is `v⁺ − v⁻`. A contact is reached when it touches a
//! dynamic body whose velocity the stage changed by more than `v_j`
//! (linear, or angular times the bounding radius), which an active set
//! that agrees with the whole network must hold. It is counted for the
//! whole-network stage with `SWEEPS` sweeps and with the scene's own
//! (`run.impact_iterations`).
//!
//! Writes `samples.csv`, `agreement.svg`, `summary.json` and `report.md`.

use crate::SuiteOptions;
use crate::plot::{Axes, Series, line_plot};
use crate::report::{self, Progress, SuiteResult};
use ndem::checkpoint::Checkpoint;
use ndem_collide::ContactSet;
use ndem_math::Velocity6;
use ndem_scenes::builders::{self, Scene};
use ndem_solve::SolverStatus;
use ndem_step::{
    BodyId, DetectedView, ImpactScope, ModelHooks, Motion, SolvedView, StepError, StepStats,
    Stepper, World,
};
use serde_json::json;

/// Impact-stage sweeps of the compared steps (each to 1e-10).
const SWEEPS: usize = 5000;

/// Steps run per scene, full and `--quick`: the excavator's full run goes
/// through settling, approach and the bucket's penetration (steps
/// 0-1599); the others' first seconds hold their falls and impacts.
fn steps(scene: &str, quick: bool) -> usize {
    match (scene, quick) {
        ("excavator", false) => 1600,
        ("excavator", true) => 300,
        (_, false) => 400,
        (_, true) => 120,
    }
}

/// One compared step.
struct Sample {
    scene: String,
    step: u64,
    contacts: usize,
    impacts: usize,
    /// Contacts of the active set's last impact problem.
    set: usize,
    whole_status: Option<SolverStatus>,
    active_status: Option<SolverStatus>,
    /// Largest normal-row residual of each impact solve, whole network and
    /// active set \[m/s\].
    residuals: [f64; 2],
    /// Largest difference of the post-impact velocities `v⁺` \[m/s\].
    difference: f64,
    /// Largest difference of `v⁺` over the body's bound `c v_j`.
    over_bound: f64,
    /// Largest difference of the velocities at the end of the steps
    /// \[m/s\].
    end_difference: f64,
    /// Contacts the whole-network stage reached (module docs), with the
    /// scene's own sweeps and with `SWEEPS`.
    reached: [usize; 2],
}

impl Sample {
    /// Both impact solves reached their tolerance.
    fn converged(&self) -> bool {
        self.whole_status == Some(SolverStatus::Converged)
            && self.active_status == Some(SolverStatus::Converged)
    }
}

/// The largest friction and rolling-resistance coefficients of `world`'s
/// materials and pair overrides, `(μ, μ_r)`.
fn largest_coefficients(world: &World) -> (f64, f64) {
    let materials = world
        .materials
        .iter()
        .map(|m| (m.friction, m.rolling_resistance));
    let pairs = world.pairs().map(|(_, p)| {
        (
            p.friction.unwrap_or(0.0),
            p.rolling_resistance.unwrap_or(0.0),
        )
    });
    materials
        .chain(pairs)
        .fold((0.0f64, 0.0f64), |(a, b), (m, r)| (a.max(m), b.max(r)))
}

/// `c` of body `i` (module docs): `max(1 + μ, (m r²/I)(μ + μ_r))`.
fn coupling(world: &World, i: usize, (mu, mu_r): (f64, f64), radius: f64) -> f64 {
    let inverse = world.inverse_mass(BodyId::from_index(i));
    let turn = if inverse.inv_mass > 0.0 && radius.is_finite() {
        let largest = inverse.inv_inertia.symmetric_eigenvalues().max();
        radius * radius * largest / inverse.inv_mass
    } else {
        0.0
    };
    (1.0 + mu).max(turn * (mu + mu_r))
}

/// How far body `i`'s velocity `a` is from `b` \[m/s\]: linear, or
/// angular times the body's bounding radius (none for an unbounded body).
fn body_difference(world: &World, i: usize, a: &Velocity6, b: &Velocity6) -> f64 {
    let radius = world.shapes()[i].bounding_radius();
    let rotation = if radius.is_finite() {
        (a.angular - b.angular).norm() * radius
    } else {
        0.0
    };
    (a.linear - b.linear).norm().max(rotation)
}

/// The largest difference between two velocity lists over the dynamic
/// bodies of `world` (linear, or angular times the body's bounding radius)
/// \[m/s\], and the largest over each body's `c v_j`.
fn largest_difference(
    world: &World,
    (a, b): (&[Velocity6], &[Velocity6]),
    join_velocity: f64,
) -> (f64, f64) {
    let coefficients = largest_coefficients(world);
    let (mut largest, mut over_bound) = (0.0f64, 0.0f64);
    for (i, (va, vb)) in a.iter().zip(b).enumerate() {
        if world.motions()[i] != Motion::Dynamic {
            continue;
        }
        let d = body_difference(world, i, va, vb);
        largest = largest.max(d);
        let radius = world.shapes()[i].bounding_radius();
        let bound = coupling(world, i, coefficients, radius) * join_velocity;
        over_bound = over_bound.max(d / bound);
    }
    (largest, over_bound)
}

/// The scene's own hooks, and copies of the continuous problem's free
/// velocity `v*` and its contacts' bodies of the last step.
struct FreeVelocity {
    inner: Box<dyn ModelHooks>,
    free: Vec<Velocity6>,
    bodies: Vec<[u32; 2]>,
}

impl ModelHooks for FreeVelocity {
    fn after_detection(
        &mut self,
        world: &mut World,
        contacts: &mut ContactSet,
        detected: &DetectedView<'_>,
    ) -> Result<(), StepError> {
        self.inner.after_detection(world, contacts, detected)
    }

    fn after_solve(&mut self, world: &mut World, solved: &SolvedView<'_>) -> Result<(), StepError> {
        self.free.clear();
        self.free.extend_from_slice(solved.problem.free_velocity());
        self.bodies.clear();
        self.bodies
            .extend(solved.problem.contacts().iter().map(|c| c.bodies));
        self.inner.after_solve(world, solved)
    }
}

/// What one step from a saved state gave.
struct Stepped {
    scene: Scene,
    stats: StepStats,
    /// The continuous problem's free velocity `v*`.
    free: Vec<Velocity6>,
    /// The bodies of the continuous problem's contacts (the world's).
    bodies: Vec<[u32; 2]>,
}

/// One step from `saved` with the impact stage in `scope` given `sweeps`,
/// or with no impact stage (`None`).
fn step_from(saved: &Checkpoint, stage: Option<(ImpactScope, usize)>) -> SuiteResult<Stepped> {
    let mut saved = saved.clone();
    let Some((scope, sweeps)) = stage else {
        saved.scene.run.impact_stage = false;
        return step_saved(saved);
    };
    saved.scene.run.impact_iterations = sweeps;
    saved.scene.run.impact_join_velocity = scope.join_velocity();
    step_saved(saved)
}

/// One step from `saved` as it is, recording `v*` and the contacts.
fn step_saved(saved: Checkpoint) -> SuiteResult<Stepped> {
    let (mut scene, mut stepper) = saved.restore().map_err(|e| e.to_string())?;
    let inner = stepper.take_hooks();
    stepper.set_hooks(Box::new(FreeVelocity {
        inner,
        free: Vec::new(),
        bodies: Vec::new(),
    }));
    let stats = scene.step(&mut stepper).map_err(|e| e.to_string())?;
    let (free, bodies) = stepper
        .hooks_as::<FreeVelocity>()
        .map(|h| (std::mem::take(&mut h.free), std::mem::take(&mut h.bodies)))
        .ok_or("the recording hook was replaced during the step")?;
    Ok(Stepped {
        scene,
        stats,
        free,
        bodies,
    })
}

/// The contacts of `stepped` that touch a dynamic body whose `v*` differs
/// from `without`'s (the step with no impact stage) by more than
/// `join_velocity` (linear, or angular times the bounding radius).
fn reached(stepped: &Stepped, without: &[Velocity6], join_velocity: f64) -> usize {
    let world = &stepped.scene.world;
    let changed: Vec<bool> = (stepped.free.iter().zip(without).enumerate())
        .map(|(i, (a, b))| {
            world.motions()[i] == Motion::Dynamic && body_difference(world, i, a, b) > join_velocity
        })
        .collect();
    let touches = |b: u32| changed.get(b as usize).copied().unwrap_or(false);
    (stepped.bodies.iter())
        .filter(|[a, b]| touches(*a) || touches(*b))
        .count()
}

/// The two steps from `saved`, compared.
fn compare(name: &str, saved: &Checkpoint, join_velocity: f64) -> SuiteResult<Sample> {
    let whole = step_from(saved, Some((ImpactScope::WholeNetwork, SWEEPS)))?;
    let active = step_from(
        saved,
        Some((ImpactScope::ActiveSet { join_velocity }, SWEEPS)),
    )?;
    let own_sweeps = saved.scene.run.impact_iterations;
    let own = step_from(saved, Some((ImpactScope::WholeNetwork, own_sweeps)))?;
    let without = step_from(saved, None)?;
    let (s_whole, s_active) = (&whole.stats, &active.stats);
    let world = &whole.scene.world;
    let (difference, over_bound) =
        largest_difference(world, (&whole.free, &active.free), join_velocity);
    let ends = (world.velocities(), active.scene.world.velocities());
    Ok(Sample {
        scene: name.into(),
        step: s_whole.step,
        contacts: s_whole.contacts,
        impacts: s_whole.impacts,
        set: s_active.impact_contacts,
        whole_status: s_whole.impact_status,
        active_status: s_active.impact_status,
        residuals: [s_whole.impact_residual, s_active.impact_residual],
        difference,
        over_bound,
        end_difference: largest_difference(world, ends, join_velocity).0,
        reached: [
            reached(&own, &without.free, join_velocity),
            reached(&whole, &without.free, join_velocity),
        ],
    })
}

/// Runs `name` for its steps with its own settings and compares the two
/// impact stages at up to `count` evenly spaced steps with impacts.
fn scene_samples(
    name: &str,
    quick: bool,
    count: usize,
    join_velocity: f64,
    progress: &Progress,
) -> SuiteResult<Vec<Sample>> {
    let mut scene = builders::builtin(name).map_err(|e| e.to_string())?;
    let mut stepper: Stepper = scene.stepper().map_err(|e| e.to_string())?;
    let total = steps(name, quick);
    let mut samples = Vec::new();
    for k in 0..total {
        let wanted = samples.len() < count && k >= (samples.len() + 1) * total / (count + 1);
        let saved = wanted.then(|| Checkpoint::capture(&scene, &mut stepper));
        let stats = scene.step(&mut stepper).map_err(|e| e.to_string())?;
        if let Some(saved) = saved.filter(|_| stats.impacts > 0) {
            let s = compare(name, &saved, join_velocity)?;
            progress.note(&format!(
                "{name} step {}: {} impacts, set {} of {} contacts (reached {} / {}), v+ {:.2e} m/s ({:.2} of c v_j), end {:.2e} m/s ({:?} / {:?}, residuals {:.1e} / {:.1e} m/s)",
                s.step,
                s.impacts,
                s.set,
                s.contacts,
                s.reached[0],
                s.reached[1],
                s.difference,
                s.over_bound,
                s.end_difference,
                s.whole_status,
                s.active_status,
                s.residuals[0],
                s.residuals[1]
            ));
            samples.push(s);
        }
    }
    Ok(samples)
}

/// `cargo xtask impact-scope`.
pub fn run(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    let join_velocity = ImpactScope::active_set()
        .join_velocity()
        .ok_or("the default active set has no join velocity")?;
    let count =
        (opts.args.iter().find_map(|a| samples_word(a))).unwrap_or(if opts.quick { 3 } else { 6 });
    let named = |n: &&str| opts.args.iter().any(|a| a == n);
    let any_named = builders::BUILTIN.iter().any(|(n, _)| named(n));
    let names: Vec<&str> = builders::BUILTIN
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| !any_named || named(n))
        .collect();
    let mut progress = Progress::new("impact-scope", names.len());
    let mut samples = Vec::new();
    for name in &names {
        let found = scene_samples(name, opts.quick, count, join_velocity, &progress)?;
        progress.tick(&format!("{name}: {} compared steps", found.len()));
        samples.extend(found);
    }
    write_outputs(opts, (&names, count), &samples, join_velocity)?;
    Ok(samples
        .iter()
        .all(|s| !s.converged() || s.over_bound <= 1.0))
}

/// The samples per scene a word `samples=N` (N ≥ 1) asks for.
pub fn samples_word(word: &str) -> Option<usize> {
    let n: usize = word.strip_prefix("samples=")?.parse().ok()?;
    (n >= 1).then_some(n)
}

fn status_name(s: Option<SolverStatus>) -> String {
    s.map_or_else(|| "none".into(), |s| format!("{s:?}"))
}

/// The figures of some samples: how many, how many counted (both solves
/// converged) and within `c v_j`, and the largest differences among the
/// counted ones.
struct Tally {
    compared: usize,
    converged: usize,
    agreeing: usize,
    /// Largest `v⁺` difference \[m/s\].
    largest: f64,
    /// Largest `v⁺` difference over the body's `c v_j`.
    over_bound: f64,
    /// Largest end-of-step difference \[m/s\].
    end: f64,
}

impl Tally {
    fn of<'a>(samples: impl Iterator<Item = &'a Sample>) -> Self {
        let mut t = Tally {
            compared: 0,
            converged: 0,
            agreeing: 0,
            largest: 0.0,
            over_bound: 0.0,
            end: 0.0,
        };
        for s in samples {
            t.compared += 1;
            if !s.converged() {
                continue;
            }
            t.converged += 1;
            t.agreeing += usize::from(s.over_bound <= 1.0);
            t.largest = t.largest.max(s.difference);
            t.over_bound = t.over_bound.max(s.over_bound);
            t.end = t.end.max(s.end_difference);
        }
        t
    }

    /// The samples of scene `name`.
    fn of_scene(samples: &[Sample], name: &str) -> Self {
        Self::of(samples.iter().filter(|s| s.scene == name))
    }
}

fn write_outputs(
    opts: &SuiteOptions,
    (names, count): (&[&str], usize),
    samples: &[Sample],
    join_velocity: f64,
) -> SuiteResult<()> {
    let rows: Vec<Vec<String>> = samples
        .iter()
        .map(|s| {
            vec![
                s.scene.clone(),
                s.step.to_string(),
                s.contacts.to_string(),
                s.impacts.to_string(),
                s.set.to_string(),
                status_name(s.whole_status),
                status_name(s.active_status),
                format!("{:e}", s.residuals[0]),
                format!("{:e}", s.residuals[1]),
                format!("{:e}", s.difference),
                format!("{:e}", s.over_bound),
                format!("{:e}", s.end_difference),
                s.reached[0].to_string(),
                s.reached[1].to_string(),
            ]
        })
        .collect();
    report::write_csv(
        &opts.out.join("samples.csv"),
        &[
            "scene",
            "step",
            "contacts",
            "impacting_contacts",
            "active_set_contacts",
            "whole_network_status",
            "active_set_status",
            "whole_network_normal_residual_m_per_s",
            "active_set_normal_residual_m_per_s",
            "largest_post_impact_velocity_difference_m_per_s",
            "largest_post_impact_difference_over_bound",
            "largest_end_of_step_velocity_difference_m_per_s",
            "reached_by_whole_network_own_sweeps",
            "reached_by_whole_network_suite_sweeps",
        ],
        &rows,
    )?;
    plot(opts, names, samples)?;
    let all = Tally::of(samples.iter());
    let summary = json!({
        "join_velocity_m_per_s": join_velocity,
        "impact_sweeps": SWEEPS,
        "samples_per_scene": count,
        "impact_tolerance": 1e-10,
        "samples": all.compared,
        "converged_samples": all.converged,
        "agreeing_samples": all.agreeing,
        "largest_difference_converged_m_per_s": all.largest,
        "largest_difference_converged_over_join_velocity": all.largest / join_velocity,
        "largest_difference_converged_over_bound": all.over_bound,
        "scenes": per_scene(names, samples),
    });
    report::write_summary(&opts.out, &summary)?;
    report::write(
        &opts.out.join("report.md"),
        &report_text((opts.quick, count), names, samples, join_velocity),
    )
}

/// Per scene: samples, counted ones, the largest difference among them,
/// and the set sizes.
fn per_scene(names: &[&str], samples: &[Sample]) -> serde_json::Value {
    names
        .iter()
        .map(|n| {
            let t = Tally::of_scene(samples, n);
            let own = samples.iter().filter(|s| s.scene == *n);
            json!({
                "scene": n,
                "samples": t.compared,
                "converged": t.converged,
                "agreeing": t.agreeing,
                "largest_over_bound": t.over_bound,
                "largest_difference_m_per_s": t.largest,
                "largest_end_of_step_difference_m_per_s": t.end,
                "set_over_network": own.clone().map(|s| s.set as f64 / s.contacts.max(1) as f64).collect::<Vec<_>>(),
                "reached_over_network_own_sweeps": own.clone().map(|s| share(s.reached[0], s)).collect::<Vec<_>>(),
                "reached_over_network_suite_sweeps": own.map(|s| share(s.reached[1], s)).collect::<Vec<_>>(),
            })
        })
        .collect()
}

fn plot(opts: &SuiteOptions, names: &[&str], samples: &[Sample]) -> SuiteResult<()> {
    let mut series: Vec<Series> = names
        .iter()
        .map(|n| {
            let points = samples
                .iter()
                .filter(|s| s.scene == *n && s.converged())
                .map(|s| {
                    let fraction = s.set as f64 / s.contacts.max(1) as f64;
                    (fraction, s.over_bound.max(1e-16))
                })
                .collect();
            Series::markers(n.to_string(), points)
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    series.push(Series::line("bound c v_j", vec![(0.0, 1.0), (1.0, 1.0)]));
    line_plot(
        &opts.out.join("agreement.svg"),
        Axes::new(
            "Active-set against whole-network impact stage (both converged)",
            "active set / contact network",
            "largest v+ difference / (c v_j)",
        )
        .log_y(),
        &series,
    )
}

/// `count` contacts as a share of `s`'s network.
fn share(count: usize, s: &Sample) -> f64 {
    count as f64 / s.contacts.max(1) as f64
}

/// A largest difference for the report, a dash where nothing counted.
fn figure(none: bool, x: f64) -> String {
    if none {
        "–".into()
    } else {
        format!("{x:.2e}")
    }
}

fn report_text(
    (quick, count): (bool, usize),
    names: &[&str],
    samples: &[Sample],
    join_velocity: f64,
) -> String {
    let mut md = report::heading("cargo xtask impact-scope", quick);
    md.push_str(&format!(
        "Each built-in scene runs with its own settings; at up to {} evenly spaced steps with impacting contacts the state before the step is restored twice and stepped once with each impact stage, both given {} sweeps to 1e-10. A sample counts when both impact solves converged. Reached: the contacts touching a dynamic body whose velocity the whole-network stage changed by more than v_j (linear, or angular times its bounding radius), with the scene's own impact sweeps and with the suite's, as a share of the network: what an active set that agrees with the whole network must hold. Bound: `c v_j` per body, with the join velocity v_j = {join_velocity:e} m/s and `c = max(1 + μ, (m r²/I)(μ + μ_r))` (what one left-out row's normal, friction and rolling impulses can change; 2.5 (μ + μ_r) for a sphere).\n\n",
        count,
        SWEEPS
    ));
    report::table_header(
        &mut md,
        "scene | steps run | compared | both converged | v⁺ within c v_j | largest v⁺ difference [m/s] | over v_j | over c v_j | largest end-of-step difference [m/s] | set / network | reached by the whole network, own sweeps; suite's",
    );
    for n in names {
        let t = Tally::of_scene(samples, n);
        let none = t.converged == 0;
        let sets: Vec<String> = samples
            .iter()
            .filter(|s| s.scene == *n)
            .map(|s| format!("{}/{}", s.set, s.contacts))
            .collect();
        let reach: Vec<String> = samples
            .iter()
            .filter(|s| s.scene == *n)
            .map(|s| {
                let [own, suite] = s.reached.map(|r| 100.0 * share(r, s));
                format!("{own:.1} %; {suite:.1} %")
            })
            .collect();
        md.push_str(&format!(
            "| {n} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            steps(n, quick),
            t.compared,
            t.converged,
            t.agreeing,
            figure(none, t.largest),
            figure(none, t.largest / join_velocity),
            figure(none, t.over_bound),
            figure(none, t.end),
            if sets.is_empty() {
                "no impacts".into()
            } else {
                sets.join(", ")
            },
            reach.join(", ")
        ));
    }
    md.push_str("\nSamples not counted (an impact solve stopped short of 1e-10; status and largest normal-row residual of each, then the v⁺ difference): ");
    let unconverged: Vec<String> = samples
        .iter()
        .filter(|s| !s.converged())
        .map(|s| {
            format!(
                "{} {} (whole {} at {:.1e} m/s, active {} at {:.1e} m/s; v⁺ difference {:.2e} m/s)",
                s.scene,
                s.step,
                status_name(s.whole_status),
                s.residuals[0],
                status_name(s.active_status),
                s.residuals[1],
                s.difference
            )
        })
        .collect();
    md.push_str(&if unconverged.is_empty() {
        "none".into()
    } else {
        unconverged.join("; ")
    });
    md.push_str("\n\nPlot: `agreement.svg`. Data: `samples.csv`, `summary.json`.\n");
    md
}

#[cfg(test)]
mod tests {
    use super::{Stepped, coupling, reached};
    use ndem_math::{Material, Vec3};
    use ndem_step::{BodyDesc, MaterialId, World};
    use ndem_step::{Motion, StepStats};

    /// A sphere's `m r²/I` is 5/2: `c = max(1 + μ, 2.5 (μ + μ_r))`.
    #[test]
    fn a_sphere_turns_by_five_halves_of_its_friction() {
        let mut world = World::on_floor(Material::default()).unwrap();
        let r = 0.01;
        let sphere =
            BodyDesc::sphere(r, MaterialId::from_index(0), Vec3::new(0.0, 0.0, r)).unwrap();
        let id = world.add_body(sphere).unwrap();
        let c = coupling(&world, id.index(), (0.9, 0.3), r);
        assert!((c - 3.0).abs() < 1e-12, "{c}");
        let c = coupling(&world, id.index(), (0.2, 0.0), r);
        assert!((c - 1.2).abs() < 1e-12, "{c}");
    }

    /// A contact is reached when one of its bodies is dynamic and changed
    /// by more than `v_j`, linearly or by its angular velocity times its
    /// bounding radius; a static body's change reaches nothing.
    #[test]
    fn reached_contacts_touch_a_body_changed_by_more_than_the_join_velocity() {
        let scene = ndem_scenes::builders::builtin("column").unwrap();
        let world = &scene.world;
        // body 0 is the floor, the spheres of radius 6.5 mm follow
        assert_eq!(world.motions()[0], Motion::Static);
        let without = world.velocities().to_vec();
        let mut free = without.clone();
        free[0].linear.x += 1.0;
        free[2].linear.x += 6e-3;
        free[4].angular.y += 5e-3 / 6.5e-3 * 1.01;
        free[6].linear.z += 4e-3;
        free[7].angular.x += 5e-3 / 6.5e-3 * 0.99;
        let bodies: Vec<[u32; 2]> = (0..9).map(|i| [i, i + 1]).collect();
        let stepped = Stepped {
            scene,
            stats: StepStats::default(),
            free,
            bodies,
        };
        // contacts (1, 2), (2, 3), (3, 4) and (4, 5); not (0, 1) by the
        // floor, nor those of bodies 6 and 7, changed by less than 5e-3
        assert_eq!(reached(&stepped, &without, 5e-3), 4);
    }
}

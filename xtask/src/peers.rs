//! `cargo xtask peers [--quick]`: our two steppers beside LIGGGHTS on the
//! same bed of spheres, run interleaved, with CPU-time ratios.
//!
//! The bed is `builders::box_packing` (radii 5-6.5 mm, `Material::default()`
//! without rolling resistance, since LIGGGHTS' default Hertz-Mindlin model has
//! none), dropped into an open box about 16 layers deep. Both DEM codes use
//! Hertz-Mindlin with tangential history, the same time step (0.1 of the
//! Rayleigh step), the same Verlet skin (0.2 of the smallest radius, rebuilt
//! when a sphere has moved half of it) and the same restitution and
//! friction. Neither keeps a list of each step's contacts: LIGGGHTS writes
//! only its thermo output, and ours runs with `record_contacts` off. LIGGGHTS runs as a child process from a data file of our
//! positions; its CPU time is the child's user + system time, ours the
//! process's. Each size runs `repeats` times, ours and LIGGGHTS alternating,
//! and the report gives the minimum and the load average.

use crate::SuiteOptions;
use crate::peers_bed::{
    DEFAULT_SEED, FRICTION, R_MIN, RESTITUTION, bed, children_cpu_seconds, own_cpu_seconds,
};
use crate::plot::{Axes, Series, line_plot};
use crate::report::{self, Progress, SuiteResult};
use crate::targets::{Bound, TargetCheck};
use ndem_scenes::builders::Scene;
use ndem_smooth::{SmoothLaw, SmoothSettings, SmoothStepper};
use ndem_step::BodyId;
use ndem_step::World;
use serde_json::json;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// Rolling-resistance coefficient `μ_r` of the variant with rolling
/// resistance (LIGGGHTS: `rolling_friction epsd` with viscous damping 0.3;
/// ours: model C with `η_r = 0.3`).
const ROLLING: f64 = 0.1;

/// Settings shared by both DEM codes for `world`; ours keeps no contact
/// set, as LIGGGHTS keeps none without a `compute pair/gran/local`.
fn smooth_settings(world: &World) -> SmoothSettings {
    let critical = ndem_smooth::stepper::critical_time_step(world, &SmoothLaw::Hertz);
    SmoothSettings {
        dt: 0.1 * critical,
        rolling: world.materials[0].rolling_resistance > 0.0,
        record_contacts: false,
        ..SmoothSettings::default()
    }
}

/// One DEM run: CPU time of the settling phase and of the rest phase, the
/// kinetic energy trace `(t, E_k)`, and Verlet rebuilds per 1000 steps in
/// the rest phase.
#[derive(Debug, Clone, Default)]
struct DemRun {
    settle_cpu: f64,
    rest_cpu: f64,
    trace: Vec<(f64, f64)>,
    rest_rebuilds_per_1000: f64,
    final_kinetic: f64,
}

/// Steps of the two phases and the sampling interval.
#[derive(Debug, Clone, Copy)]
struct Phases {
    dt: f64,
    settle: usize,
    rest: usize,
    every: usize,
}

fn run_smooth(scene: &Scene, phases: Phases) -> SuiteResult<DemRun> {
    let mut world = scene.world.clone();
    let mut st = SmoothStepper::new(smooth_settings(&world), &world).map_err(|e| e.to_string())?;
    let mut run = DemRun::default();
    let start = own_cpu_seconds();
    let mut rebuilds_at_rest = 0;
    for k in 1..=phases.settle + phases.rest {
        let s = st.step(&mut world).map_err(|e| e.to_string())?;
        if k % phases.every == 0 {
            run.trace.push((s.time, s.kinetic_energy));
        }
        if k == phases.settle {
            run.settle_cpu = own_cpu_seconds() - start;
            rebuilds_at_rest = st.rebuilds();
        }
        run.final_kinetic = s.kinetic_energy;
    }
    run.rest_cpu = own_cpu_seconds() - start - run.settle_cpu;
    run.rest_rebuilds_per_1000 =
        (st.rebuilds() - rebuilds_at_rest) as f64 * 1000.0 / phases.rest.max(1) as f64;
    Ok(run)
}

/// `true` when the `liggghts` program runs here.
pub(crate) fn liggghts_available() -> bool {
    // `liggghts -h` prints its version and exits with 1: that it started
    // is what counts
    Command::new("liggghts")
        .args(["-log", "none", "-h"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("LIGGGHTS"))
}

/// Writes `bed.data` and `in.bed` for LIGGGHTS into `dir`.
fn write_liggghts(dir: &Path, world: &World, phases: Phases, skin: f64) -> SuiteResult<()> {
    let spheres: Vec<usize> = (0..world.len())
        .filter(|&i| world.shapes()[i].sphere_radius().is_some())
        .collect();
    let m = &world.materials[0];
    let pos = world.positions();
    let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
    for &i in &spheres {
        for k in 0..3 {
            lo[k] = lo[k].min(pos[i][k]);
            hi[k] = hi[k].max(pos[i][k]);
        }
    }
    // the box walls of `box_packing`: x, y = ±h, floor z = 0
    let h = -world.positions()[1].x;
    let mut data = format!(
        "LIGGGHTS data file: ndem peer bed\n\n{} atoms\n1 atom types\n\n{} {} xlo xhi\n{} {} ylo yhi\n{} {} zlo zhi\n\nAtoms\n\n",
        spheres.len(),
        -h,
        h,
        -h,
        h,
        -0.01,
        hi[2] + 0.05
    );
    for (id, &i) in spheres.iter().enumerate() {
        let r = world.shapes()[i].sphere_radius().unwrap_or(0.0);
        let p = pos[i];
        let _ = writeln!(
            data,
            "{} 1 {:.17e} {:.17e} {:.17e} {:.17e} {:.17e}",
            id + 1,
            2.0 * r,
            m.density,
            p.x,
            p.y,
            p.z
        );
    }
    report::write(&dir.join("bed.data"), &data)?;
    let (model, rolling_coeffs) = if m.rolling_resistance > 0.0 {
        (
            "hertz tangential history rolling_friction epsd",
            format!(
                "fix m5 all property/global coefficientRollingFriction peratomtypepair 1 {:.17e}\nfix m6 all property/global coefficientRollingViscousDamping peratomtypepair 1 0.3\n",
                m.rolling_resistance
            ),
        )
    } else {
        ("hertz tangential history", String::new())
    };
    let input = format!(
        "# ndem peer bed: Hertz-Mindlin with tangential history, rolling resistance {mu_r}
atom_style granular
atom_modify map array
boundary f f f
newton off
communicate single vel yes
units si
read_data bed.data
neighbor {skin:.17e} bin
neigh_modify delay 0
fix m1 all property/global youngsModulus peratomtype {e:.17e}
fix m2 all property/global poissonsRatio peratomtype {nu:.17e}
fix m3 all property/global coefficientRestitution peratomtypepair 1 {restitution:.17e}
fix m4 all property/global coefficientFriction peratomtypepair 1 {mu:.17e}
{rolling_coeffs}pair_style gran model {model}
pair_coeff * *
timestep {dt:.17e}
fix gravi all gravity 9.81 vector 0.0 0.0 -1.0
fix wz all wall/gran model {model} primitive type 1 zplane 0.0
fix wx1 all wall/gran model {model} primitive type 1 xplane {xlo:.17e}
fix wx2 all wall/gran model {model} primitive type 1 xplane {xhi:.17e}
fix wy1 all wall/gran model {model} primitive type 1 yplane {xlo:.17e}
fix wy2 all wall/gran model {model} primitive type 1 yplane {xhi:.17e}
fix integr all nve/sphere
compute ket all ke
compute ker all erotate/sphere
thermo_style custom step atoms c_ket c_ker
thermo {every}
thermo_modify lost ignore norm no
run {settle}
run {rest}
write_dump all custom settled.dump id x y z modify format \"%d %.17g %.17g %.17g\" sort id
",
        e = m.youngs_modulus,
        nu = m.poisson_ratio,
        mu_r = m.rolling_resistance,
        restitution = RESTITUTION,
        mu = FRICTION,
        dt = phases.dt,
        xlo = -h,
        xhi = h,
        every = phases.every,
        settle = phases.settle,
        rest = phases.rest,
    );
    report::write(&dir.join("in.bed"), &input)
}

/// Runs LIGGGHTS in `dir` and reads its log.
fn run_liggghts(dir: &Path, phases: Phases) -> SuiteResult<DemRun> {
    let before = children_cpu_seconds();
    let status = Command::new("liggghts")
        .current_dir(dir)
        .args(["-in", "in.bed", "-log", "log.bed", "-screen", "none"])
        .status()
        .map_err(|e| format!("cannot run liggghts: {e}"))?;
    let cpu = children_cpu_seconds() - before;
    if !status.success() {
        return Err(format!(
            "liggghts failed ({status}); see {}",
            dir.join("log.bed").display()
        ));
    }
    let log = std::fs::read_to_string(dir.join("log.bed")).map_err(|e| e.to_string())?;
    parse_liggghts_log(&log, phases, cpu)
}

/// `(step, E_k)` of a thermo line `step atoms c_ket c_ker`.
fn thermo_line(fields: &[&str]) -> Option<(u64, f64)> {
    match fields {
        [step, _, kt, kr] => Some((
            step.parse().ok()?,
            kt.parse::<f64>().ok()? + kr.parse::<f64>().ok()?,
        )),
        _ => None,
    }
}

/// The thermo lines (`step atoms c_ket c_ker`), the two runs' loop times
/// (which split the CPU time between the phases) and neighbour-list builds.
fn parse_liggghts_log(log: &str, phases: Phases, cpu: f64) -> SuiteResult<DemRun> {
    let mut run = DemRun::default();
    let mut loops = Vec::new();
    let mut builds = Vec::new();
    for line in log.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if let Some((step, kinetic)) = thermo_line(&f)
            && step > 0
            && step % phases.every as u64 == 0
        {
            let t = step as f64 * phases.dt;
            if run.trace.last().is_none_or(|l| l.0 < t) {
                run.trace.push((t, kinetic));
            }
            run.final_kinetic = kinetic;
        }
        if let Some(rest) = line.strip_prefix("Loop time of ") {
            loops.push(
                rest.split_whitespace()
                    .next()
                    .and_then(|x| x.parse::<f64>().ok()),
            );
        }
        if let Some(rest) = line.strip_prefix("Neighbor list builds = ") {
            builds.push(rest.trim().parse::<f64>().unwrap_or(f64::NAN));
        }
    }
    let (Some(Some(l1)), Some(Some(l2))) = (loops.first(), loops.get(1)) else {
        return Err("liggghts log has no loop times".into());
    };
    // split the child's CPU time in proportion to the two loops' wall times
    run.settle_cpu = cpu * l1 / (l1 + l2);
    run.rest_cpu = cpu * l2 / (l1 + l2);
    run.rest_rebuilds_per_1000 =
        builds.get(1).copied().unwrap_or(f64::NAN) * 1000.0 / phases.rest.max(1) as f64;
    Ok(run)
}

/// Sphere positions of LIGGGHTS' final state (`settled.dump`, sorted by
/// id, which is our sphere order).
fn read_settled(dir: &Path) -> SuiteResult<Vec<ndem_math::Vec3>> {
    let text = std::fs::read_to_string(dir.join("settled.dump")).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut atoms = false;
    for line in text.lines() {
        if line.starts_with("ITEM: ATOMS") {
            atoms = true;
            continue;
        }
        if atoms {
            let v: Vec<f64> = line
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            if v.len() == 4 {
                out.push(ndem_math::Vec3::new(v[1], v[2], v[3]));
            }
        }
    }
    Ok(out)
}

/// Our smooth DEM started at rest from the bed LIGGGHTS settled: the
/// largest and the final kinetic energy over `steps` steps. A bed at rest
/// under one code is at rest under the other when the contact laws agree.
fn ours_from_peer_bed(
    scene: &Scene,
    settled: &[ndem_math::Vec3],
    steps: usize,
) -> SuiteResult<(f64, f64)> {
    let mut world = scene.world.clone();
    let spheres: Vec<usize> = (0..world.len())
        .filter(|&i| world.shapes()[i].sphere_radius().is_some())
        .collect();
    if spheres.len() != settled.len() {
        return Err(format!(
            "LIGGGHTS kept {} of {} spheres",
            settled.len(),
            spheres.len()
        ));
    }
    for (&i, p) in spheres.iter().zip(settled) {
        world
            .set_position(BodyId::from_index(i), *p)
            .map_err(|e| e.to_string())?;
        world
            .set_velocity(BodyId::from_index(i), ndem_math::Velocity6::ZERO)
            .map_err(|e| e.to_string())?;
    }
    let mut st = SmoothStepper::new(smooth_settings(&world), &world).map_err(|e| e.to_string())?;
    let (mut max, mut last) = (0.0f64, 0.0);
    for _ in 0..steps {
        last = st
            .step(&mut world)
            .map_err(|e| e.to_string())?
            .kinetic_energy;
        max = max.max(last);
    }
    Ok((max, last))
}

/// Reports repeat `r` of `code`'s run and keeps it in `best` if it took
/// the least CPU time so far.
fn keep_fastest(
    best: &mut Option<DemRun>,
    run: DemRun,
    (n, rolling, r, code): (usize, f64, usize, &str),
    progress: &mut Progress,
) {
    progress.note(&format!(
        "n = {n}, μ_r = {rolling}, repeat {}: {code} {:.1} s + {:.1} s CPU, E_k at rest {:.2e} J",
        r + 1,
        run.settle_cpu,
        run.rest_cpu,
        run.final_kinetic
    ));
    let cpu = |x: &DemRun| x.settle_cpu + x.rest_cpu;
    if best.as_ref().is_none_or(|b| cpu(&run) < cpu(b)) {
        *best = Some(run);
    }
}

/// What one size of the comparison measured.
struct SizeResult {
    n: usize,
    /// Rolling-resistance coefficient μ_r.
    rolling: f64,
    phases: Phases,
    ours: DemRun,
    peer: Option<DemRun>,
    /// Ours from LIGGGHTS' settled bed: largest and final E_k.
    from_peer_bed: Option<(f64, f64)>,
    repeats: usize,
}

fn compare_size(
    opts: &SuiteOptions,
    (n, rolling): (usize, f64),
    phases_for: impl Fn(f64) -> Phases,
    repeats: usize,
    progress: &mut Progress,
) -> SuiteResult<SizeResult> {
    let scene = bed(n, opts.seed.unwrap_or(DEFAULT_SEED), rolling)?;
    let settings = smooth_settings(&scene.world);
    let phases = phases_for(settings.dt);
    let dir = opts.out.join(format!("liggghts-{n}-mu_r-{rolling}"));
    report::prepare(&dir)?;
    let peer_here = liggghts_available();
    if peer_here {
        let skin = settings.skin * R_MIN;
        write_liggghts(&dir, &scene.world, phases, skin)?;
    }
    let (mut ours, mut peer): (Option<DemRun>, Option<DemRun>) = (None, None);
    for r in 0..repeats {
        let o = run_smooth(&scene, phases)?;
        keep_fastest(&mut ours, o, (n, rolling, r, "ndem-smooth"), progress);
        if peer_here {
            let p = run_liggghts(&dir, phases)?;
            keep_fastest(&mut peer, p, (n, rolling, r, "LIGGGHTS"), progress);
        }
    }
    let from_peer_bed = if peer_here {
        Some(ours_from_peer_bed(
            &scene,
            &read_settled(&dir)?,
            phases.rest,
        )?)
    } else {
        None
    };
    progress.tick(&format!("n = {n}, μ_r = {rolling}"));
    Ok(SizeResult {
        n,
        rolling,
        phases,
        ours: ours.unwrap_or_default(),
        peer,
        from_peer_bed,
        repeats,
    })
}

fn kinetic_plot(out: &Path, results: &[SizeResult]) -> SuiteResult<()> {
    let mut series = Vec::new();
    for r in results {
        let label = |code: &str| format!("{code}, N = {}, μ_r = {}", r.n, r.rolling);
        series.push(Series::line(label("ndem-smooth"), r.ours.trace.clone()));
        if let Some(p) = &r.peer {
            series.push(Series::line(label("LIGGGHTS"), p.trace.clone()));
        }
    }
    line_plot(
        &out.join("kinetic_energy.svg"),
        Axes::new(
            "kinetic energy of the bed (translation + rotation)",
            "t [s]",
            "E_k [J]",
        )
        .log_y(),
        &series,
    )
}

/// The target for the smooth DEM: CPU time at most LIGGGHTS' on
/// one thread, at 10⁴ and 10⁵ spheres, with and without rolling
/// resistance (not measured where LIGGGHTS did not run). Its other target,
/// a settled bed at LIGGGHTS' rest level of kinetic energy, has no single
/// threshold here: the report's columns give both energies and
/// `docs/performance.md` judges them.
fn smooth_target_checks(results: &[SizeResult]) -> Vec<TargetCheck> {
    results
        .iter()
        .filter(|r| r.n == 10_000 || r.n == 100_000)
        .map(|r| TargetCheck {
            what: format!("smooth DEM CPU time over LIGGGHTS' (μ_r = {})", r.rolling),
            particles: r.n,
            bound: Bound::AtMost(1.0),
            measured: r.peer.as_ref().map_or(f64::NAN, |p| {
                (r.ours.settle_cpu + r.ours.rest_cpu) / (p.settle_cpu + p.rest_cpu)
            }),
        })
        .collect()
}

fn summary_rows(results: &[SizeResult]) -> (Vec<serde_json::Value>, Vec<Vec<String>>, String) {
    let mut json_rows = Vec::new();
    let mut csv = Vec::new();
    let mut table = String::from(
        "| N | μ_r | steps settle + rest | ndem-smooth CPU [s] | LIGGGHTS CPU [s] | ratio (ours / LIGGGHTS) | E_k at end, ours [J] | LIGGGHTS [J] | ours from LIGGGHTS' bed: max / end E_k [J] | rebuilds / 1000 rest steps, ours | LIGGGHTS |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in results {
        let ours = r.ours.settle_cpu + r.ours.rest_cpu;
        let peer = r.peer.as_ref().map(|p| p.settle_cpu + p.rest_cpu);
        let ratio = peer.map(|p| ours / p);
        json_rows.push(json!({
            "particles": r.n,
            "rolling_resistance": r.rolling,
            "dt_s": r.phases.dt,
            "settle_steps": r.phases.settle,
            "rest_steps": r.phases.rest,
            "repeats": r.repeats,
            "ours_cpu_s": ours,
            "ours_settle_cpu_s": r.ours.settle_cpu,
            "ours_rest_cpu_s": r.ours.rest_cpu,
            "ours_final_kinetic_J": r.ours.final_kinetic,
            "ours_rest_rebuilds_per_1000": r.ours.rest_rebuilds_per_1000,
            "liggghts_cpu_s": peer,
            "liggghts_final_kinetic_J": r.peer.as_ref().map(|p| p.final_kinetic),
            "liggghts_rest_rebuilds_per_1000": r.peer.as_ref().map(|p| p.rest_rebuilds_per_1000),
            "cpu_ratio_ours_over_liggghts": ratio,
            "ours_from_liggghts_bed_max_kinetic_J": r.from_peer_bed.map(|x| x.0),
            "ours_from_liggghts_bed_final_kinetic_J": r.from_peer_bed.map(|x| x.1),
        }));
        let fmt = |x: Option<f64>, p: usize| x.map_or("–".to_string(), |v| format!("{v:.p$}"));
        let fmte = |x: Option<f64>| x.map_or("–".to_string(), |v| format!("{v:.2e}"));
        csv.push(vec![
            r.n.to_string(),
            r.rolling.to_string(),
            format!("{ours:.3}"),
            fmt(peer, 3),
            fmt(ratio, 3),
            format!("{:.3e}", r.ours.final_kinetic),
            fmte(r.peer.as_ref().map(|p| p.final_kinetic)),
        ]);
        let _ = writeln!(
            table,
            "| {} | {} | {} + {} | {ours:.2} | {} | {} | {:.2e} | {} | {} | {:.1} | {} |",
            r.n,
            r.rolling,
            r.phases.settle,
            r.phases.rest,
            fmt(peer, 2),
            fmt(ratio, 2),
            r.ours.final_kinetic,
            fmte(r.peer.as_ref().map(|p| p.final_kinetic)),
            r.from_peer_bed
                .map_or("–".into(), |(m, e)| format!("{m:.2e} / {e:.2e}")),
            r.ours.rest_rebuilds_per_1000,
            fmt(r.peer.as_ref().map(|p| p.rest_rebuilds_per_1000), 1),
        );
    }
    (json_rows, csv, table)
}

/// Runs the suite.
pub fn run(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    let sizes: Vec<usize> = match opts.particles {
        Some(n) => vec![n],
        None if opts.quick => vec![1000],
        None => vec![1000, 10_000, 100_000],
    };
    let repeats = opts.repeats.unwrap_or(if opts.quick { 2 } else { 3 });
    // what a second thread can gain on this host, before the runs and
    // after them (a virtual machine's cores may move in between)
    let host_before = crate::host::probe();
    let mut progress = Progress::new("peers", 2 * sizes.len());
    // the NDEM half runs after the smooth one
    if !liggghts_available() {
        progress.note("liggghts not found (apt-get install liggghts): ours only");
    }
    // `peers smooth` or `peers ndem` runs one half; `peers ndem ours`
    // leaves rapier3d out (at 10⁵ its own settling takes half an hour)
    let part = opts.args.first().map(String::as_str);
    if let Some(p) = part
        && p != "smooth"
        && p != "ndem"
    {
        return Err(format!("unknown part `{p}` (smooth or ndem)"));
    }
    // `peers smooth settled` settles the 10⁵ bed for the full 1.5 s too
    // (the bed is 16 layers deep at every size, so it comes to rest in the
    // same time; about 45 minutes at 10⁵ with LIGGGHTS)
    let (with_rapier, settle_fully) = match opts.args.get(1).map(String::as_str) {
        None => (true, false),
        Some("ours") if part == Some("ndem") => (false, false),
        Some("settled") if part == Some("smooth") => (false, true),
        Some(other) => {
            return Err(format!(
                "unknown option `{other}` (`peers ndem ours` or `peers smooth settled`)"
            ));
        }
    };
    let mut results = Vec::new();
    for &n in sizes.iter().filter(|_| part != Some("ndem")) {
        // settle for 1.5 s, then 2000 steps at rest; at 10^5 the settling
        // phase is cut to 2000 steps (a cost comparison of a falling bed)
        // unless `settled` is asked for
        let phases_for = |dt: f64| {
            let settle = if n >= 100_000 && !settle_fully {
                2000
            } else {
                (1.5 / dt).round() as usize
            };
            Phases {
                dt,
                settle,
                rest: 2000,
                every: ((0.02 / dt).round() as usize).max(1),
            }
        };
        for rolling in [0.0, ROLLING] {
            results.push(compare_size(
                opts,
                (n, rolling),
                phases_for,
                repeats,
                &mut progress,
            )?);
        }
    }
    let mut ndem = Vec::new();
    let rapier = if part != Some("smooth") && with_rapier {
        crate::peers_rapier::build(&mut progress)
    } else {
        None
    };
    for &n in sizes.iter().filter(|_| part != Some("smooth")) {
        let (steps, ndem_repeats) = if n >= 100_000 { (5, 2) } else { (20, 3) };
        let repeats = opts.repeats.unwrap_or(ndem_repeats);
        ndem.push(crate::peers_ndem::compare(
            n,
            (steps, repeats),
            (rapier.as_deref(), &opts.out),
            &mut progress,
        )?);
    }
    let (ndem_rows, ndem_table) = crate::peers_ndem::summarise(&ndem);
    let mut checks = smooth_target_checks(&results);
    checks.extend(crate::peers_ndem::target_checks(&ndem));
    let (target_rows, targets_md) = crate::targets::render(&checks, &sizes);
    kinetic_plot(&opts.out, &results)?;
    let mut trace_rows = Vec::new();
    for r in &results {
        let runs = [
            ("ndem-smooth", Some(&r.ours)),
            ("liggghts", r.peer.as_ref()),
        ];
        for (code, run) in runs {
            for (t, e) in run.map(|x| x.trace.as_slice()).unwrap_or_default() {
                trace_rows.push(vec![
                    code.to_string(),
                    r.n.to_string(),
                    r.rolling.to_string(),
                    format!("{t:.4}"),
                    format!("{e:.4e}"),
                ]);
            }
        }
    }
    report::write_csv(
        &opts.out.join("kinetic_energy.csv"),
        &[
            "code",
            "particles",
            "rolling_resistance",
            "t_s",
            "kinetic_J",
        ],
        &trace_rows,
    )?;
    let (rows, csv, table) = summary_rows(&results);
    report::write_csv(
        &opts.out.join("peers.csv"),
        &[
            "particles",
            "rolling_resistance",
            "ours_cpu_s",
            "liggghts_cpu_s",
            "ratio",
            "ours_final_kinetic_J",
            "liggghts_final_kinetic_J",
        ],
        &csv,
    )?;
    let host = crate::host::AroundRuns {
        before: host_before,
        after: crate::host::probe(),
    };
    report::write_summary(
        &opts.out,
        &json!({
            "suite": "peers",
            "host": host.to_json(),
            "quick": opts.quick,
            "liggghts": liggghts_available(),
            "smooth_bed_seed": opts.seed.unwrap_or(DEFAULT_SEED),
            "rapier": rapier.as_ref().map(|_| crate::peers_rapier::RAPIER),
            "sizes": rows,
            "ndem": ndem_rows,
            "targets": target_rows,
            "cpu_time": "ours: /proc/self/stat utime + stime (1/100 s); LIGGGHTS: the child's cutime + cstime (1/100 s); rapier3d: its process's /proc/self/task/*/schedstat over the measured steps (one thread)",
        }),
    )?;
    let mut md = report::heading("Peers: ndem-smooth beside LIGGGHTS on one bed", opts.quick);
    let _ = writeln!(
        md,
        "Hertz-Mindlin with tangential history, without rolling resistance and with μ_r = {ROLLING} (LIGGGHTS `epsd`, ours model C, both with viscous damping 0.3; LIGGGHTS' `epsd` leaves twisting free, ours resists it), Δt = 0.1 Δt_Rayleigh, skin 0.2 r_min, no per-step contact list in either (ours with `record_contacts` off), e = {RESTITUTION}, μ = {FRICTION}; bed seed {}; minimum CPU time of {repeats} interleaved repeats. Load: {}.\n",
        opts.seed.unwrap_or(DEFAULT_SEED),
        report::load_average()
    );
    md.push_str(&host.text());
    md.push_str(&table);
    let _ = writeln!(
        md,
        "\n## NDEM step on the bed settled by NDEM (μ_r = {ROLLING}, 6-row contacts, {} sweeps, history warm start)\n\nMinimum over interleaved repeats of the mean step.\n",
        25
    );
    md.push_str(&ndem_table);
    md.push_str(&targets_md);
    report::write(&opts.out.join("report.md"), &md)?;
    println!("{table}\n{ndem_table}{targets_md}");
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::{DemRun, Phases, SizeResult, smooth_target_checks};
    use crate::targets::{Bound, TargetStatus};

    fn size(n: usize, ours: (f64, f64), peer: Option<(f64, f64)>) -> SizeResult {
        let run = |(settle_cpu, rest_cpu)| DemRun {
            settle_cpu,
            rest_cpu,
            ..DemRun::default()
        };
        SizeResult {
            n,
            rolling: 0.1,
            phases: Phases {
                dt: 1e-5,
                settle: 10,
                rest: 10,
                every: 1,
            },
            ours: run(ours),
            peer: peer.map(run),
            from_peer_bed: None,
            repeats: 1,
        }
    }

    #[test]
    fn the_smooth_target_is_the_whole_runs_cpu_ratio_at_its_sizes() {
        let results = [
            size(1000, (1.0, 1.0), Some((1.0, 1.0))),
            size(10_000, (3.0, 1.0), Some((2.0, 3.0))),
            size(100_000, (3.0, 3.0), Some((2.0, 3.0))),
            size(100_000, (3.0, 3.0), None),
        ];
        let checks = smooth_target_checks(&results);
        // no target at 10³
        assert_eq!(checks.len(), 3);
        assert!(checks.iter().all(|c| c.bound == Bound::AtMost(1.0)));
        // settling and rest together: 4 / 5 and 6 / 5
        assert_eq!(checks[0].particles, 10_000);
        assert_eq!(checks[0].measured, 0.8);
        assert_eq!(checks[0].status(), TargetStatus::Met);
        assert_eq!(checks[1].measured, 1.2);
        assert_eq!(checks[1].status(), TargetStatus::NotMet);
        // without LIGGGHTS the ratio is not measured
        assert_eq!(checks[2].status(), TargetStatus::NotMeasured);
    }
}

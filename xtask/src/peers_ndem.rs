//! The NDEM half of `cargo xtask peers`: the step on a resting bed, PGS in
//! the papers' order on one thread against the coloured order on one and
//! on two threads, per stage, interleaved; and rapier3d on the same bed
//! when its peer builds (`peers_rapier`).

use crate::peers_bed::{bed, own_cpu_seconds};
use crate::peers_rapier::{self, RAPIER, RapierRun};
use crate::report::{Progress, SuiteResult};
use crate::targets::{Bound, TargetCheck};
use ndem_scenes::SolverChoice;
use ndem_scenes::builders::Scene;
use ndem_step::{StepStats, Stepper, World};
use serde_json::json;
use std::fmt::Write as _;
use std::path::Path;

/// Sweeps per step, as in the papers' runs.
pub(crate) const SWEEPS: usize = 25;

/// One configuration of the measured step.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    pub(crate) solver: SolverChoice,
    pub(crate) threads: usize,
}

impl Config {
    /// The solver's name and the thread count ("pgs-coloured, 2 threads").
    pub(crate) fn label(&self) -> String {
        let plural = if self.threads == 1 { "" } else { "s" };
        format!("{}, {} thread{plural}", self.solver.name(), self.threads)
    }
}

pub(crate) const CONFIGS: [Config; 3] = [
    Config {
        solver: SolverChoice::Pgs,
        threads: 1,
    },
    Config {
        solver: SolverChoice::PgsColoured,
        threads: 1,
    },
    Config {
        solver: SolverChoice::PgsColoured,
        threads: 2,
    },
];

/// Per-step stage times (seconds, the minimum over repeats of the mean
/// over the measured steps) and the contacts.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StepTimes {
    detection: f64,
    assembly: f64,
    impact: f64,
    continuous: f64,
    total: f64,
    /// CPU seconds per step (all threads).
    cpu: f64,
    contacts: f64,
    /// Steps whose impact stage solved an impact problem (some contact
    /// impacted), of the measured steps: the impact stage's time depends
    /// on it more than on the code, and two builds whose beds were settled
    /// to other round-off can differ in it.
    impact_solves: usize,
    /// Impacting contacts per step.
    impacts: f64,
    /// Wall time of the untimed first step, which also grows the
    /// stepper's reused vectors to the bed's size \[s\].
    first_step: f64,
    /// The continuous stage of the fastest measured step, per contact and
    /// sweep \[ns\]: beside the mean, how far the shared host's swings
    /// (20 % between single steps of one run at 10⁵) lift it.
    fastest_continuous: f64,
    /// Steps added.
    added: usize,
    /// Whether the bed rests while it is measured: its contacts at the
    /// first and the last measured step (a bed that compacts gains
    /// contacts), ...
    contacts_first: usize,
    contacts_last: usize,
    /// ... its kinetic energy at the last step \[J\] ...
    kinetic_energy: f64,
    /// ... and the spheres faster than the impact threshold `v_imp` at the
    /// end, each a candidate impact for the next steps' impact stage.
    faster_than_impact: usize,
}

impl StepTimes {
    fn add(&mut self, st: &StepStats, steps: usize) {
        let (t, contacts) = (&st.times, st.contacts);
        if self.added == 0 {
            self.contacts_first = contacts;
        }
        self.added += 1;
        self.contacts_last = contacts;
        self.kinetic_energy = st.kinetic_energy;
        self.impact_solves += usize::from(st.impact_status.is_some());
        self.impacts += st.impacts as f64 / steps as f64;
        let k = 1.0 / steps as f64;
        self.detection += t.detection.as_secs_f64() * k;
        self.assembly += t.assembly.as_secs_f64() * k;
        self.impact += t.impact.as_secs_f64() * k;
        self.continuous += t.continuous.as_secs_f64() * k;
        self.total += t.total.as_secs_f64() * k;
        self.contacts += contacts as f64 * k;
        let this_step = ns_per_contact_iteration(t.continuous.as_secs_f64(), contacts as f64);
        if self.fastest_continuous == 0.0 || this_step < self.fastest_continuous {
            self.fastest_continuous = this_step;
        }
    }

    /// Seconds per step.
    pub(crate) fn step(&self) -> f64 {
        self.total
    }

    /// CPU seconds per step, all threads.
    pub(crate) fn cpu(&self) -> f64 {
        self.cpu
    }

    /// The step's passes by name and their seconds per step, the step
    /// last.
    pub(crate) fn by_pass(&self) -> [(&'static str, f64); 6] {
        let rest = self.total - self.detection - self.assembly - self.impact - self.continuous;
        [
            ("detection", self.detection),
            ("assembly", self.assembly),
            ("impact stage", self.impact),
            ("continuous stage", self.continuous),
            ("the rest (integration, warm start)", rest),
            ("step", self.total),
        ]
    }

    /// Continuous stage per contact and sweep \[ns\].
    fn per_contact_iteration(&self) -> f64 {
        ns_per_contact_iteration(self.continuous, self.contacts)
    }
}

/// A continuous stage of `seconds` over `contacts` contacts and [`SWEEPS`]
/// sweeps, per contact and sweep \[ns\].
fn ns_per_contact_iteration(seconds: f64, contacts: f64) -> f64 {
    seconds * 1e9 / (contacts * SWEEPS as f64).max(1.0)
}

/// Time the bed is stepped with the measured sweeps before it is measured
/// \[s\]: the settling's 50 iterations per step hold it stiffer than 25
/// sweeps do, and in the steps after the change it sags (at 10⁵ its
/// kinetic energy rose tenfold and it gained 3 % contacts in five steps;
/// `docs/performance.md`, "The beds").
const LEAD_IN_S: f64 = 0.1;

/// Settles `n` spheres with NDEM (the scene's own stepper, 1.5 s), then
/// steps them [`LEAD_IN_S`] with `pgs-coloured` and [`SWEEPS`] sweeps on
/// every core (its worlds are the same on any thread count), and returns
/// the scene with its settled world and the warm-start history.
pub(crate) fn settle(
    n: usize,
    progress: &mut Progress,
) -> SuiteResult<(Scene, ndem_solve::ImpulseHistory)> {
    let mut scene = bed(n, crate::peers_bed::DEFAULT_SEED, 0.1)?;
    let mut stepper = scene.stepper().map_err(|e| e.to_string())?;
    let steps = (1.5 / scene.settings.dt).round() as usize;
    for k in 0..steps {
        scene.step(&mut stepper).map_err(|e| e.to_string())?;
        if k % 100 == 99 {
            progress.note(&format!(
                "NDEM bed of {n}: settling, step {} of {steps}",
                k + 1
            ));
        }
    }
    let history = stepper.history().cloned().unwrap_or_default();
    let mut lead = scene.clone();
    lead.solver = SolverChoice::PgsColoured;
    lead.iterations = SWEEPS;
    lead.threads = 0;
    let mut stepper = lead.stepper().map_err(|e| e.to_string())?;
    if !stepper.set_history(history) {
        return Err("the bed's warm start keeps no history".into());
    }
    let lead_steps = (LEAD_IN_S / scene.settings.dt).round() as usize;
    for _ in 0..lead_steps {
        lead.step(&mut stepper).map_err(|e| e.to_string())?;
    }
    progress.note(&format!(
        "NDEM bed of {n}: {lead_steps} steps with the measured sweeps"
    ));
    scene.world = lead.world;
    let history = stepper.history().cloned().unwrap_or_default();
    Ok((scene, history))
}

/// `steps` steps of the settled bed with `config`, after one step that is
/// not averaged: a fresh stepper's first step also allocates and fills
/// the vectors every later step reuses (at 10⁵ spheres some 100 MB of new
/// pages), which the steady step does not do and rapier's run, timed
/// after its own settling, does not include either; its time is reported
/// apart (`first_step_s`).
pub(crate) fn measure(
    scene: &Scene,
    history: &ndem_solve::ImpulseHistory,
    config: Config,
    steps: usize,
) -> SuiteResult<(StepTimes, World)> {
    let mut s = scene.clone();
    s.solver = config.solver;
    s.iterations = SWEEPS;
    s.threads = config.threads;
    let mut stepper: Stepper = s.stepper().map_err(|e| e.to_string())?;
    if !stepper.set_history(history.clone()) {
        return Err("the bed's warm start keeps no history".into());
    }
    let first = s.step(&mut stepper).map_err(|e| e.to_string())?;
    let mut times = StepTimes {
        first_step: first.times.total.as_secs_f64(),
        ..StepTimes::default()
    };
    let cpu = own_cpu_seconds();
    for _ in 0..steps {
        let st = s.step(&mut stepper).map_err(|e| e.to_string())?;
        times.add(&st, steps);
    }
    times.cpu = (own_cpu_seconds() - cpu) / steps as f64;
    let v_imp = s.settings.impact_velocity;
    times.faster_than_impact = (s.world.velocities().iter())
        .filter(|v| v.linear.norm() > v_imp)
        .count();
    Ok((times, s.world))
}

/// What the NDEM comparison measured at one size.
pub(crate) struct NdemResult {
    n: usize,
    steps: usize,
    repeats: usize,
    times: Vec<(Config, StepTimes)>,
    /// The coloured runs on 1 and 2 threads ended in the same world.
    threads_agree: bool,
    /// rapier3d on the same bed (fastest repeat), when its peer built.
    rapier: Option<RapierRun>,
}

/// Settles the bed and measures every configuration, interleaved, with
/// the rapier3d peer (`rapier`, its binary) after ours in every repeat; its
/// bed file goes to `out`.
pub(crate) fn compare(
    n: usize,
    (steps, repeats): (usize, usize),
    (rapier, out): (Option<&Path>, &Path),
    progress: &mut Progress,
) -> SuiteResult<NdemResult> {
    let (scene, history) = settle(n, progress)?;
    let bed_file = out.join(format!("rapier-bed-{n}.txt"));
    if rapier.is_some() {
        // rapier settles the bed NDEM settled for as long as NDEM did
        // (1.5 s): its contact model holds it at other overlaps, and the
        // measured steps should see its own bed at rest
        let warmup = (1.5 / scene.settings.dt).round() as usize;
        peers_rapier::write_bed(&bed_file, &scene, (warmup, steps, SWEEPS))?;
    }
    let mut best_rapier: Option<RapierRun> = None;
    let mut best: Vec<Option<StepTimes>> = vec![None; CONFIGS.len()];
    let mut worlds: Vec<Option<World>> = vec![None; CONFIGS.len()];
    for r in 0..repeats {
        for (k, &config) in CONFIGS.iter().enumerate() {
            let (t, world) = measure(&scene, &history, config, steps)?;
            progress.note(&format!(
                "NDEM bed of {n}, repeat {}: {} {:.1} ms per step (first step {:.1} ms, not averaged), continuous {:.1} ns per contact-iteration (fastest step {:.1})",
                r + 1,
                config.label(),
                t.total * 1e3,
                t.first_step * 1e3,
                t.per_contact_iteration(),
                t.fastest_continuous
            ));
            if best[k].is_none_or(|b| t.total < b.total) {
                best[k] = Some(t);
            }
            worlds[k] = Some(world);
        }
        if let Some(binary) = rapier {
            let run = peers_rapier::run(binary, &bed_file)?;
            progress.note(&format!(
                "NDEM bed of {n}, repeat {}: {RAPIER} {:.1} ms per step, {:.0} contact points",
                r + 1,
                run.step_s * 1e3,
                run.contact_points
            ));
            if best_rapier.is_none_or(|b| run.step_s < b.step_s) {
                best_rapier = Some(run);
            }
        }
    }
    let agree = match (&worlds[1], &worlds[2]) {
        (Some(a), Some(b)) => a.positions() == b.positions() && a.velocities() == b.velocities(),
        _ => false,
    };
    Ok(NdemResult {
        n,
        steps,
        repeats,
        times: CONFIGS
            .iter()
            .zip(best)
            .map(|(c, t)| (*c, t.unwrap_or_default()))
            .collect(),
        threads_agree: agree,
        rapier: best_rapier,
    })
}

impl NdemResult {
    /// The times of the configuration with `solver` on `threads` threads.
    fn times_of(&self, solver: SolverChoice, threads: usize) -> Option<&StepTimes> {
        self.times
            .iter()
            .find(|(c, _)| c.solver == solver && c.threads == threads)
            .map(|(_, t)| t)
    }

    /// The coloured solver's continuous stage on one thread over two: the
    /// means per step, and the fastest steps (the target "≥ 1.7× faster on
    /// two threads"). NaN when either run is missing.
    fn coloured_two_over_one(&self) -> (f64, f64) {
        let of = |threads: usize| self.times_of(SolverChoice::PgsColoured, threads);
        match (of(1), of(2)) {
            (Some(one), Some(two)) => (
                one.continuous / two.continuous,
                one.fastest_continuous / two.fastest_continuous,
            ),
            _ => (f64::NAN, f64::NAN),
        }
    }
}

/// The targets for the NDEM step, judged on the runs at the sizes
/// they are set for: at 10⁵ spheres the coloured continuous stage on one
/// thread (≤ 45 ns per contact-iteration), its gain on two threads
/// (≥ 1.7×, the means) and the two-thread step (≤ 0.25 s); at 10⁴ the
/// step of `pgs` on one thread over rapier3d's at equal iterations
/// (≤ 0.6; not measured when rapier3d did not run).
pub(crate) fn target_checks(results: &[NdemResult]) -> Vec<TargetCheck> {
    let mut checks = Vec::new();
    for r in results {
        let coloured = |threads| r.times_of(SolverChoice::PgsColoured, threads);
        let check = |what: &str, bound, measured: Option<f64>| TargetCheck {
            what: what.to_string(),
            particles: r.n,
            bound,
            measured: measured.unwrap_or(f64::NAN),
        };
        if r.n == 100_000 {
            checks.push(check(
                "NDEM continuous stage, pgs-coloured, 1 thread [ns per contact-iteration]",
                Bound::AtMost(45.0),
                coloured(1).map(StepTimes::per_contact_iteration),
            ));
            checks.push(check(
                "NDEM continuous stage, pgs-coloured: time on 1 thread over time on 2",
                Bound::AtLeast(1.7),
                Some(r.coloured_two_over_one().0),
            ));
            checks.push(check(
                "NDEM step, pgs-coloured, 2 threads [s]",
                Bound::AtMost(0.25),
                coloured(2).map(|t| t.total),
            ));
        }
        if r.n == 10_000 {
            let ours = r.times_of(SolverChoice::Pgs, 1).map(|t| t.total);
            checks.push(check(
                "NDEM step, pgs 1 thread, over rapier3d's at equal iterations",
                Bound::AtMost(0.6),
                ours.zip(r.rapier).map(|(t, x)| t / x.step_s),
            ));
        }
    }
    checks
}

/// Summary rows and the report's table.
pub(crate) fn summarise(results: &[NdemResult]) -> (Vec<serde_json::Value>, String) {
    let mut rows = Vec::new();
    let mut table = String::from(
        "| N | contacts | configuration | step [ms] | detection [ms] | assembly [ms] | impact [ms] | steps with an impact solve | continuous [ms] | ns per contact-iteration (fastest step) | speed-up of the step over pgs, 1 thread | first step, not averaged [ms] |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in results {
        let base = r.times[0].1.total;
        let (mean_ratio, fastest_ratio) = r.coloured_two_over_one();
        for (c, t) in &r.times {
            rows.push(json!({
                "particles": r.n,
                "configuration": c.label(),
                "steps": r.steps,
                "repeats": r.repeats,
                "contacts": t.contacts,
                "step_s": t.total,
                "detection_s": t.detection,
                "assembly_s": t.assembly,
                "impact_s": t.impact,
                "steps_with_impact_solve": t.impact_solves,
                "impacting_contacts_per_step": t.impacts,
                "continuous_s": t.continuous,
                "continuous_ns_per_contact_iteration": t.per_contact_iteration(),
                "continuous_ns_per_contact_iteration_fastest_step": t.fastest_continuous,
                "speed_up_over_pgs_one_thread": base / t.total,
                "cpu_s_per_step": t.cpu,
                "first_step_s": t.first_step,
                "contacts_first_measured_step": t.contacts_first,
                "contacts_last_measured_step": t.contacts_last,
                "kinetic_energy_last_step_j": t.kinetic_energy,
                "spheres_faster_than_impact_velocity": t.faster_than_impact,
                "coloured_one_and_two_threads_bit_identical": r.threads_agree,
                "coloured_continuous_two_threads_over_one": mean_ratio,
                "coloured_continuous_two_threads_over_one_fastest_steps": fastest_ratio,
                "rapier_step_cpu_s": r.rapier.map(|x| x.step_s),
                "step_over_rapier": r.rapier.map(|x| t.total / x.step_s),
            }));
            let _ = writeln!(
                table,
                "| {} | {:.0} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {} of {} ({:.1} contacts) | {:.1} | {:.1} ({:.1}) | {:.2} | {:.1} |",
                r.n,
                t.contacts,
                c.label(),
                t.total * 1e3,
                t.detection * 1e3,
                t.assembly * 1e3,
                t.impact * 1e3,
                t.impact_solves,
                r.steps,
                t.impacts,
                t.continuous * 1e3,
                t.per_contact_iteration(),
                t.fastest_continuous,
                base / t.total,
                t.first_step * 1e3
            );
        }
        // below the solver's size for splitting, the "2 threads" sweeps
        // ran on one (detection and assembly still used both)
        let split_from = ndem_solve::PgsSettings::default().parallel_min_contacts;
        let below = r.times.iter().any(|(_, t)| t.contacts < split_from as f64);
        let _ = writeln!(
            table,
            "| {} | | coloured on 1 and 2 threads: {}; continuous stage {:.2}× faster on two (fastest steps {:.2}×){} | | | | | | | | | |",
            r.n,
            if r.threads_agree {
                "bit-identical worlds"
            } else {
                "WORLDS DIFFER"
            },
            mean_ratio,
            fastest_ratio,
            if below {
                format!(
                    "; sweeps on one thread below {split_from} contacts (`PgsSettings::parallel_min_contacts`)"
                )
            } else {
                String::new()
            }
        );
        table.push_str(&bed_state_row(r));
    }
    table.push_str(&rapier_table(results));
    (rows, table)
}

/// A row of the report's table saying whether the measured bed rests
/// (the coloured run on one thread): a bed that creeps gains contacts and
/// keeps spheres faster than `v_imp`, so Algorithm 1's impact stage solves
/// the whole network on most steps (`docs/performance.md`, "The beds").
fn bed_state_row(r: &NdemResult) -> String {
    let Some(t) = r.times_of(SolverChoice::PgsColoured, 1) else {
        return String::new();
    };
    let growth = t.contacts_last as f64 / (t.contacts_first as f64).max(1.0) - 1.0;
    format!(
        "| {} | | the bed over the measured steps (pgs-coloured, 1 thread): contacts {} → {} ({:+.2} %), E_k {:.2e} J at the last, {} spheres faster than v_imp at the end | | | | | | | | | |\n",
        r.n,
        t.contacts_first,
        t.contacts_last,
        growth * 100.0,
        t.kinetic_energy,
        t.faster_than_impact
    )
}

/// The rapier3d comparison: our step time over rapier's at equal sweeps.
fn rapier_table(results: &[NdemResult]) -> String {
    if results.is_empty() {
        return String::new();
    }
    if results.iter().all(|r| r.rapier.is_none()) {
        return String::from(
            "\nrapier3d: not run (`peers ndem ours`, or its peer did not build; see `xtask/rapier-peer`).\n",
        );
    }
    let mut table = format!(
        "\n### Against {RAPIER} on the same bed ({SWEEPS} iterations each, one thread; ours: wall time of the step, rapier: CPU time)\n\n| N | code | contacts | step [ms] | ours / rapier |\n|---|---|---|---|---|\n"
    );
    for r in results {
        let Some(peer) = r.rapier else { continue };
        let _ = writeln!(
            table,
            "| {} | {RAPIER} (3 rows, {SWEEPS} substeps; E_k after {:.1e} J, largest speed {:.1e} m/s) | {:.0} points | {:.1} | 1 |",
            r.n,
            peer.kinetic,
            peer.max_speed,
            peer.contact_points,
            peer.step_s * 1e3
        );
        for (c, t) in &r.times {
            let _ = writeln!(
                table,
                "| {} | ndem {} | {:.0} | {:.1} (CPU {:.1}) | **{:.2}** |",
                r.n,
                c.label(),
                t.contacts,
                t.total * 1e3,
                t.cpu * 1e3,
                t.total / peer.step_s
            );
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::{CONFIGS, NdemResult, SWEEPS, StepTimes, summarise, target_checks};
    use crate::targets::{Bound, TargetStatus};
    use ndem_step::StepStats;
    use std::time::Duration;

    fn step(contacts: usize, continuous_ms: u64) -> StepStats {
        let mut st = StepStats {
            contacts,
            ..StepStats::default()
        };
        st.times.continuous = Duration::from_millis(continuous_ms);
        st
    }

    #[test]
    fn the_two_thread_ratio_is_the_coloured_runs_one_over_two() {
        let times = |continuous: f64, fastest: f64| StepTimes {
            continuous,
            fastest_continuous: fastest,
            ..StepTimes::default()
        };
        let result_with = |times| NdemResult {
            n: 1000,
            steps: 5,
            repeats: 1,
            times,
            threads_agree: true,
            rapier: None,
        };
        let result = result_with(vec![
            (CONFIGS[0], times(9.0, 90.0)),
            (CONFIGS[1], times(3.0, 40.0)),
            (CONFIGS[2], times(2.0, 25.0)),
        ]);
        assert_eq!(result.coloured_two_over_one(), (1.5, 1.6));
        let (_, table) = summarise(&[result]);
        assert!(table.contains("continuous stage 1.50× faster on two (fastest steps 1.60×)"));
        // without the two-thread run there is no ratio
        let mut one_run = result_with(vec![(CONFIGS[1], times(3.0, 40.0))]);
        assert!(one_run.coloured_two_over_one().0.is_nan());
        one_run.times.push((CONFIGS[2], times(2.0, 25.0)));
        assert_eq!(one_run.coloured_two_over_one(), (1.5, 1.6));
    }

    #[test]
    fn the_targets_are_judged_at_their_sizes_on_the_right_runs() {
        let times = |total: f64, continuous: f64| StepTimes {
            total,
            continuous,
            contacts: 1000.0,
            ..StepTimes::default()
        };
        let result = |n| NdemResult {
            n,
            steps: 5,
            repeats: 1,
            // ns per contact-iteration: continuous · 1e9 / (1000 · 25)
            times: vec![
                (CONFIGS[0], times(0.9, 0.002)),
                (CONFIGS[1], times(0.7, 0.001)),
                (CONFIGS[2], times(0.3, 0.0005)),
            ],
            threads_agree: true,
            rapier: None,
        };
        assert!(target_checks(&[result(1000)]).is_empty());
        let checks = target_checks(&[result(100_000)]);
        assert_eq!(checks.len(), 3);
        // the one-thread coloured run (40 ns), not the papers' pgs (80)
        assert_eq!(checks[0].bound, Bound::AtMost(45.0));
        assert!((checks[0].measured - 40.0).abs() < 1e-9);
        assert_eq!(checks[0].status(), TargetStatus::Met);
        // one thread over two: 0.001 / 0.0005
        assert_eq!(checks[1].bound, Bound::AtLeast(1.7));
        assert_eq!(checks[1].measured, 2.0);
        // the two-thread step, 0.3 s
        assert_eq!(checks[2].measured, 0.3);
        assert_eq!(checks[2].status(), TargetStatus::NotMet);
        // at 10⁴ only rapier3d's ratio, not measured without its run
        let checks = target_checks(&[result(10_000)]);
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].status(), TargetStatus::NotMeasured);
        let mut with_rapier = result(10_000);
        with_rapier.rapier = Some(crate::peers_rapier::RapierRun {
            step_s: 1.8,
            ..Default::default()
        });
        let checks = target_checks(&[with_rapier]);
        // pgs on one thread: 0.9 / 1.8
        assert_eq!(checks[0].measured, 0.5);
        assert_eq!(checks[0].status(), TargetStatus::Met);
    }

    #[test]
    fn step_times_keep_the_mean_and_the_fastest_step() {
        let mut t = StepTimes::default();
        // 1000 contacts: 25 ms and 50 ms are 1000 and 2000 ns per
        // contact-iteration
        let per = |ms: f64| ms * 1e6 / (1000.0 * SWEEPS as f64);
        t.add(&step(1000, 50), 2);
        t.add(&step(1000, 25), 2);
        // the durations' seconds are rounded to doubles: agreement to
        // round-off, not bits
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b;
        assert!(close(t.per_contact_iteration(), per(37.5)));
        assert!(close(t.fastest_continuous, per(25.0)));
    }

    #[test]
    fn the_bed_state_is_the_first_and_last_measured_step() {
        let mut t = StepTimes::default();
        // a first step without contacts is still the first
        for (contacts, energy) in [(0, 3e-4), (1010, 2e-4), (1020, 1e-4)] {
            let mut st = step(contacts, 10);
            st.kinetic_energy = energy;
            t.add(&st, 3);
        }
        assert_eq!((t.contacts_first, t.contacts_last), (0, 1020));
        t.contacts_first = 1000;
        assert_eq!(t.kinetic_energy, 1e-4);
        t.faster_than_impact = 7;
        let result = NdemResult {
            n: 1000,
            steps: 3,
            repeats: 1,
            // the row reads the coloured run on one thread, not `pgs`'s
            times: vec![(CONFIGS[0], StepTimes::default()), (CONFIGS[1], t)],
            threads_agree: true,
            rapier: None,
        };
        let (_, table) = summarise(&[result]);
        assert!(
            table.contains("contacts 1000 → 1020 (+2.00 %), E_k 1.00e-4 J at the last, 7 spheres faster than v_imp at the end"),
            "{table}"
        );
    }
}

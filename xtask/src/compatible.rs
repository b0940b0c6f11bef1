//! `cargo xtask compatible beam|cannonball`: compatible contact dynamics
//! against PGS, APGD and (for the cannonball) the smooth DEM.

use crate::SuiteOptions;
use crate::plot::{Axes, ForceSegment, Series, force_network, line_plot};
use crate::report::{self, SuiteResult};
use crate::warmstart::Counter;
use ndem_math::ContactLaw;
use ndem_scenes::builders::{self, CannonballSpec, Scene};
use ndem_scenes::compatible::{StaticSolveSettings, static_solve};
use ndem_scenes::measure;
use ndem_smooth::{SmoothLaw, SmoothSettings, SmoothStepper};
use ndem_solve::*;
use ndem_step::Stepper;
use ndem_testkit::generate::beam_problem;
use rayon::prelude::*;
use serde_json::json;

fn solve(
    p: &ContactProblem,
    solver: &mut dyn Solver,
) -> SuiteResult<(Vec<f64>, Vec<ndem_math::Velocity6>)> {
    let (mut lam, mut vel) = p.cold_start();
    solver
        .solve(p, &mut lam, &mut vel)
        .map_err(|e| e.to_string())?;
    Ok((lam, vel))
}

fn pgs(n: usize, order: ContactOrder) -> SuiteResult<ProjectedGaussSeidel> {
    ProjectedGaussSeidel::new(PgsSettings {
        stopping: Stopping::iterations(n),
        order,
        ..Default::default()
    })
    .map_err(|e| e.to_string())
}

/// `cargo xtask compatible beam`.
pub fn beam(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    let p = beam_problem(10.0).map_err(|e| e.to_string())?;
    let dt = p.dt();
    let mut rows = Vec::new();
    let mut table =
        String::from("| method | left | middle | right | sum |\n|---|---|---|---|---|\n");
    let mut add = |name: String, f: &[f64], rows: &mut Vec<Vec<String>>| {
        table.push_str(&format!(
            "| {name} | {:.6} | {:.6} | {:.6} | {:.6} |\n",
            f[0],
            f[1],
            f[2],
            f.iter().sum::<f64>()
        ));
        rows.push(vec![
            name,
            format!("{:e}", f[0]),
            format!("{:e}", f[1]),
            format!("{:e}", f[2]),
        ]);
    };
    let mut orders: Vec<(String, ContactOrder)> = vec![
        ("given".into(), ContactOrder::Given),
        ("reversed".into(), ContactOrder::Reversed),
    ];
    for seed in 0..4 {
        orders.push((format!("shuffled {seed}"), ContactOrder::Shuffled { seed }));
    }
    let mut pgs_spread = 0.0f64;
    let mut pgs_answers = Vec::new();
    for (name, order) in &orders {
        let (lam, _) = solve(&p, &mut pgs(50, *order)?)?;
        let f: Vec<f64> = lam.iter().map(|l| l / dt).collect();
        add(format!("PGS, 50 sweeps, {name} order"), &f, &mut rows);
        pgs_answers.push(f);
    }
    for i in 0..3 {
        let (lo, hi) = pgs_answers
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), f| {
                (a.min(f[i]), b.max(f[i]))
            });
        pgs_spread = pgs_spread.max(hi - lo);
    }
    let mut apgd = Apgd::new(ApgdSettings {
        stopping: Stopping::to_tolerance(5000, 1e-12),
        ..Default::default()
    })
    .map_err(|e| e.to_string())?;
    let (lam, _) = solve(&p, &mut apgd)?;
    add(
        "APGD".into(),
        &lam.iter().map(|l| l / dt).collect::<Vec<_>>(),
        &mut rows,
    );
    let (_, vel) = solve(&p, &mut pgs(2000, ContactOrder::Given)?)?;
    let mut errs = serde_json::Map::new();
    for (name, k, expected) in [
        ("uniform", [1.0, 1.0, 1.0], [10.0 / 3.0; 3]),
        ("middle 3x stiffer", [1.0, 3.0, 1.0], [2.0, 6.0, 2.0]),
    ] {
        let sol = compatible_forces(&p, &vel, &k, &TrussSettings::default())
            .map_err(|e| e.to_string())?;
        add(format!("compatible CD, {name}"), &sol.forces, &mut rows);
        add(format!("analytic, {name}"), &expected, &mut rows);
        let rel = (0..3)
            .map(|i| ((sol.forces[i] - expected[i]) / expected[i]).abs())
            .fold(0.0, f64::max);
        errs.insert(name.into(), json!({"forces": sol.forces, "analytic": expected, "max_relative_error": rel, "outer_iterations": sol.outer_iterations, "inner_iterations": sol.inner_iterations}));
    }
    report::write_csv(
        &opts.out.join("beam.csv"),
        &["method", "left", "middle", "right"],
        &rows,
    )?;
    let summary = json!({"suite": "compatible beam", "weight": 10.0, "compatible": errs, "pgs_order_spread_N": pgs_spread});
    report::write_summary(&opts.out, &summary)?;
    let md = format!(
        "# cargo xtask compatible beam\n\nA rigid platform of weight 10 N on three supports (x = −0.8, 0, 0.8 m), \
         frictionless. PGS after 50 sweeps depends on the contact order (largest spread between orders: {pgs_spread:.3} N); \
         compatible CD picks the elastic answer: 10/3 each for uniform stiffness, 2, 6, 2 with the middle support \
         three times stiffer.\n\n{table}\n"
    );
    report::write(&opts.out.join("report.md"), &md)?;
    println!("{table}");
    Ok(true)
}

/// Per-contact normal forces `(body a, body b, f_n)` drawn as a side view
/// of the slab of bodies within one sphere spacing of the pyramid's middle
/// plane `y = y_mid`.
fn network(scene: &Scene, y_mid: f64, contacts: &[(usize, usize, f64)]) -> Vec<ForceSegment> {
    let pos = scene.world.positions();
    let near = |i: usize| (pos[i].y - y_mid).abs() < 0.6 * builders::D;
    contacts
        .iter()
        .filter(|(a, b, _)| near(*a) && near(*b))
        .map(|&(a, b, f)| ForceSegment {
            from: (pos[a].x, pos[a].z),
            to: (pos[b].x, pos[b].z),
            force: f,
        })
        .collect()
}

/// Classic contact dynamics on the pyramid (the paper's step 1 and its
/// "APGD" and "PGS" answers): rigid, frictionless contacts, Δt = 1 ms.
struct ClassicCd {
    /// Base reactions: PGS, APGD (the runs' last steps).
    reactions: [Vec<f64>; 2],
    /// Base reactions of the converged static solve (APGD).
    converged: Vec<f64>,
    /// Per-contact normal forces `(a, b, f_n)`: PGS, APGD.
    contacts: [Vec<(usize, usize, f64)>; 2],
    /// Step 1 of compatible CD: the static solve's problem and velocities
    /// `v⁺`, and its scene (the PGS-settled positions at rest).
    problem: ContactProblem,
    velocity: Vec<ndem_math::Velocity6>,
    scene: Scene,
    /// Kinetic energy of the settled PGS scene \[J\].
    kinetic_energy: f64,
    /// What the converged step-1 solve took: iterations and its largest
    /// residual.
    step1: (usize, f64),
}

fn classic_cd(scene0: &Scene) -> SuiteResult<ClassicCd> {
    let mut reactions = [Vec::new(), Vec::new()];
    let mut per_contact = [Vec::new(), Vec::new()];
    let mut last = None;
    for (k, solver) in ["pgs", "apgd"].into_iter().enumerate() {
        let mut scene = scene0.clone();
        scene.settings.contact_law = ContactLaw::Rigid;
        let s: Box<dyn Solver> = if solver == "pgs" {
            Box::new(pgs(scene.iterations, ContactOrder::Given)?)
        } else {
            Box::new(
                Apgd::new(ApgdSettings {
                    stopping: Stopping::iterations(scene.iterations),
                    ..Default::default()
                })
                .map_err(|e| e.to_string())?,
            )
        };
        let mut st = Stepper::new(scene.settings, s, Box::new(HistoryWarmStart::default()))
            .map_err(|e| e.to_string())?;
        for _ in 0..(scene.duration / scene.settings.dt).round() as usize {
            scene.step(&mut st).map_err(|e| e.to_string())?;
        }
        let forces = st.contact_forces();
        reactions[k] = measure::support_reactions(&scene.world, |i| {
            ndem_scenes::measure::force_on_body(&forces, i).z
        });
        per_contact[k] = forces
            .iter()
            .map(|f| {
                (
                    f.key.body_a as usize,
                    f.key.body_b as usize,
                    f.force_on_a.dot(&f.normal),
                )
            })
            .collect();
        if solver == "pgs" {
            last = Some(scene);
        }
    }
    let settled = last.ok_or("no PGS run")?;
    // Step 1 of compatible CD: the CD solve of the static pile (see
    // `ndem_scenes::compatible` for why not the settled run's last step);
    // its forces are also the converged classic-CD (APGD) answer.
    let snap =
        static_solve(&settled, &StaticSolveSettings::default()).map_err(|e| e.to_string())?;
    let forces = snap.stepper.contact_forces();
    let converged = measure::support_reactions(&snap.scene.world, |i| {
        ndem_scenes::measure::force_on_body(&forces, i).z
    });
    let (problem, _, velocity) = snap.step_one().ok_or("no problem")?;
    Ok(ClassicCd {
        reactions,
        converged,
        contacts: per_contact,
        problem: problem.clone(),
        velocity,
        kinetic_energy: settled.world.kinetic_energy(),
        step1: (snap.stats.iterations, snap.stats.residuals.max),
        scene: snap.scene,
    })
}

/// The smooth-DEM reference of one contact model: the pyramid dropped and
/// settled with E = 50 GPa (two species: 50 and 5 GPa).
struct DemReference {
    scene0: Scene,
    dem_scene: Scene,
    /// Base reactions.
    f_dem: Vec<f64>,
    /// Per-contact normal forces `(a, b, f_n)`.
    dem_contacts: Vec<(usize, usize, f64)>,
    dt: f64,
    settle: f64,
    dem_ke: f64,
}

fn dem_reference(base: usize, two_species: bool, p: f64) -> SuiteResult<DemReference> {
    let scene0 = builders::cannonball(CannonballSpec {
        base,
        two_species,
        seed: 3,
    })
    .map_err(|e| e.to_string())?;
    let r = 0.5 * builders::D;
    let law = if p > 1.0 {
        SmoothLaw::Hertz
    } else {
        SmoothLaw::LinearModulus { length: r }
    };
    let mut dem_world = scene0.world.clone();
    let crit = ndem_smooth::stepper::critical_time_step(&dem_world, &law);
    // a sphere in the pyramid has up to twelve contacts: 0.1 of the
    // two-body bound keeps the symplectic step stable
    let dt = 0.1 * crit;
    let mut dem = SmoothStepper::new(
        SmoothSettings {
            dt,
            law,
            ..SmoothSettings::default()
        },
        &dem_world,
    )
    .map_err(|e| e.to_string())?;
    let settle = 0.2;
    for _ in 0..(settle / dt).round() as usize {
        dem.step(&mut dem_world).map_err(|e| e.to_string())?;
    }
    let dem_ke = dem_world.kinetic_energy();
    let dem_scene = Scene {
        world: dem_world,
        ..scene0.clone()
    };
    let dem_forces = dem.contact_forces().to_vec();
    let f_dem = measure::support_reactions(&dem_scene.world, |i| dem_forces[i].z);
    let dem_contacts = dem
        .normal_forces(&dem_scene.world)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|(c, f)| (c.body_a(), c.body_b(), f))
        .collect();
    Ok(DemReference {
        scene0,
        dem_scene,
        f_dem,
        dem_contacts,
        dt,
        settle,
        dem_ke,
    })
}

/// Compatible CD (steps 2-3) on the classic run's static step, with the
/// stiffness of one model (`p`: the law's exponent).
struct CompatibleStep {
    sol: TrussSolution,
    /// Residual acceleration in the load, relative to g (0 at rest).
    load_acceleration: f64,
    /// Per-contact compatible forces `(a, b, f_n)`.
    comp_contacts: Vec<(usize, usize, f64)>,
    /// Base reactions from the compatible forces.
    f_comp: Vec<f64>,
}

fn compatible_step(cd: &ClassicCd, scene0: &Scene, p: f64) -> SuiteResult<CompatibleStep> {
    // compatible CD on the last PGS step, stiffness of this model
    let (prob, scene) = (&cd.problem, &cd.scene);
    let vel = &cd.velocity;
    // residual acceleration in the load, relative to g: 0 at rest
    let g = scene.world.gravity;
    let load_acceleration = (0..prob.body_count())
        .filter(|&i| prob.inverse_mass().get(i).is_some_and(|m| m.inv_mass > 0.0))
        .map(|i| (vel[i].linear - prob.free_velocity()[i].linear + g * prob.dt()).norm())
        .fold(0.0, f64::max)
        / (g.norm() * prob.dt());
    let materials = scene0.world.body_materials();
    let k: Vec<f64> = prob
        .contacts()
        .iter()
        .map(|c| {
            let (a, b) = (c.bodies[0] as usize, c.bodies[1] as usize);
            let ma = &scene0.world.materials[materials[a] as usize];
            let mb = &scene0.world.materials[materials[b] as usize];
            1.0 / (ma.plane_strain_compliance() + mb.plane_strain_compliance())
        })
        .collect();
    let sol = compatible_forces(
        prob,
        vel,
        &k,
        &TrussSettings {
            exponent: p,
            tolerance: 1e-8,
            ..Default::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let comp_contacts: Vec<(usize, usize, f64)> = prob
        .contacts()
        .iter()
        .zip(&sol.forces)
        .map(|(c, f)| (c.bodies[0] as usize, c.bodies[1] as usize, *f))
        .collect();
    let per_body = measure::vertical_force_per_body(
        scene.world.len(),
        prob.contacts().iter().zip(&sol.forces).map(|(c, f)| {
            (
                c.bodies[0] as usize,
                c.bodies[1] as usize,
                c.jacobian.frame.normal,
                *f,
            )
        }),
    );
    let f_comp = measure::support_reactions(&scene.world, |i| per_body[i]);
    Ok(CompatibleStep {
        sol,
        load_acceleration,
        comp_contacts,
        f_comp,
    })
}

/// The floor reactions of one model (DEM, PGS, APGD, APGD converged,
/// compatible) and the force networks of the middle slab.
fn cannonball_plots(
    opts: &SuiteOptions,
    name: &str,
    floors: [&[f64]; 5],
    nets: [(&str, Vec<ForceSegment>); 4],
) -> SuiteResult<()> {
    let stem = name.replace(' ', "_");
    let indexed = |f: &[f64]| f.iter().enumerate().map(|(i, f)| (i as f64, *f)).collect();
    line_plot(
        &opts.out.join(format!("floor_{stem}.svg")),
        Axes::new(
            &format!("floor reactions, {name}"),
            "base sphere",
            "vertical reaction [N]",
        ),
        &["DEM", "PGS", "APGD", "APGD converged", "compatible"]
            .iter()
            .zip(floors)
            .map(|(label, f)| Series::markers(*label, indexed(f)))
            .collect::<Vec<_>>(),
    )?;
    // force networks of the middle slab, one force scale for all four
    let fmax = nets
        .iter()
        .flat_map(|(_, n)| n.iter().map(|s| s.force))
        .fold(0.0, f64::max);
    for (label, net) in &nets {
        force_network(
            &opts.out.join(format!(
                "network_{stem}_{}.svg",
                label.replace(' ', "_").to_lowercase()
            )),
            &format!("force network, {name}: {label} (middle slab)"),
            net,
            fmax,
        )?;
    }
    Ok(())
}

/// `cargo xtask compatible cannonball`.
pub fn cannonball(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    let base = opts.particles.unwrap_or(if opts.quick { 6 } else { 20 });
    let models = [
        ("hookean", false, 1.0),
        ("hertzian", false, 1.5),
        ("two-species hookean", true, 1.0),
    ];
    let counter = Counter::new("compatible cannonball", models.len() + 1);
    // Step 1 and the classic answers: rigid CD knows no material law, and
    // both species have the same density, so one run serves all models.
    // It runs beside the three DEM references (rayon, one task each).
    let uniform = builders::cannonball(CannonballSpec {
        base,
        two_species: false,
        seed: 3,
    })
    .map_err(|e| e.to_string())?;
    let (cd, dems) = rayon::join(
        || {
            let r = classic_cd(&uniform);
            counter.tick("classic CD (rigid, frictionless): PGS and APGD");
            r
        },
        || {
            models
                .par_iter()
                .map(|&(name, two, p)| {
                    let r = dem_reference(base, two, p);
                    counter.tick(&format!("DEM reference, {name}"));
                    r
                })
                .collect::<Vec<_>>()
        },
    );
    let cd = cd?;
    let r = 0.5 * builders::D;
    let y_mid = 0.5 * (base as f64 - 1.0) * (2.0 * r + 0.05 * r);
    let mut table = String::from(
        "| contacts | spheres | PGS error | APGD error | APGD converged, static | compatible CD error | DEM Δt [s] |\n|---|---|---|---|---|---|---|\n",
    );
    let mut summary = Vec::new();
    let mut csv = Vec::new();
    for ((name, _, p), dem) in models.into_iter().zip(dems) {
        let dem = dem?;
        let (f_dem, dem_contacts, dt) = (&dem.f_dem, &dem.dem_contacts, dem.dt);
        let CompatibleStep {
            sol,
            load_acceleration,
            comp_contacts,
            f_comp,
        } = compatible_step(&cd, &dem.scene0, p)?;
        let scene = &cd.scene;
        let prob = &cd.problem;
        let [f_pgs, f_apgd] = &cd.reactions;
        let (e_pgs, e_apgd, e_conv, e_comp) = (
            measure::relative_l2_error(f_pgs, f_dem),
            measure::relative_l2_error(f_apgd, f_dem),
            measure::relative_l2_error(&cd.converged, f_dem),
            measure::relative_l2_error(&f_comp, f_dem),
        );
        table.push_str(&format!(
            "| {name} | {} | {e_pgs:.3} | {e_apgd:.3} | {e_conv:.2e} | {e_comp:.2e} | {dt:.2e} |\n",
            scene.world.dynamic_count()
        ));
        for j in 0..f_dem.len() {
            let mut row = vec![name.to_string(), j.to_string()];
            for f in [f_dem, f_pgs, f_apgd, &cd.converged, &f_comp] {
                row.push(format!("{:e}", f.get(j).copied().unwrap_or(f64::NAN)));
            }
            csv.push(row);
        }
        summary.push(json!({"contacts": name, "spheres": scene.world.dynamic_count(), "base_spheres": f_dem.len(),
            "relative_floor_error": {"pgs": e_pgs, "apgd": e_apgd, "apgd_converged_static": e_conv, "compatible": e_comp},
            "compatible_over_best_classic_run": e_comp / e_pgs.min(e_apgd),
            "truss": {"residual": sol.residual, "outer": sol.outer_iterations, "inner": sol.inner_iterations, "converged": sol.converged},
            "load_residual_acceleration_over_g": load_acceleration,
            "contacts_cd": prob.contacts().len(), "contacts_dem": dem_contacts.len(), "dem_dt": dt, "dem_settle_s": dem.settle, "dem_kinetic_energy_J": dem.dem_ke}));
        cannonball_plots(
            opts,
            name,
            [f_dem, f_pgs, f_apgd, &cd.converged, &f_comp],
            [
                ("DEM", network(&dem.dem_scene, y_mid, dem_contacts)),
                ("PGS", network(scene, y_mid, &cd.contacts[0])),
                ("APGD", network(scene, y_mid, &cd.contacts[1])),
                ("compatible CD", network(scene, y_mid, &comp_contacts)),
            ],
        )?;
    }
    report::write_csv(
        &opts.out.join("floor_reactions.csv"),
        &[
            "contacts",
            "base_sphere",
            "dem",
            "pgs",
            "apgd",
            "apgd_converged_static",
            "compatible",
        ],
        &csv,
    )?;
    let s = json!({"suite": "compatible cannonball", "quick": opts.quick, "base_edge": base, "runs": summary,
        "classic_cd": {"contact_law": "rigid", "dt": cd.scene.settings.dt, "iterations": cd.scene.iterations, "duration_s": cd.scene.duration,
            "kinetic_energy_J": cd.kinetic_energy, "step1_apgd_iterations": cd.step1.0, "step1_apgd_residual": cd.step1.1},
        "paper_table1": {"apgd": 0.17, "pgs": 0.19, "two_species_apgd": 0.22, "two_species_pgs": 0.25}, "wall_time_s": counter.start.elapsed().as_secs_f64()});
    report::write(
        &opts.out.join("summary.json"),
        &serde_json::to_string_pretty(&s).map_err(|e| e.to_string())?,
    )?;
    let md = format!(
        "# cargo xtask compatible cannonball{}\n\nSquare pyramid with {base} spheres on a base edge (paper: 20), base layer \
         fixed, frictionless, dropped from 5 % radius gaps. Classic CD as in the paper: rigid contacts (no compliance, \
         `ContactLaw::Rigid`), Δt = {} s, {} iterations, {} s, history warm start, solved by PGS and by APGD; rigid CD knows \
         no material law, so one run serves all three models. DEM reference: Hertz or linear (k = E* r) with E = 50 GPa \
         (two species: 50 and 5 GPa), Δt = 0.1 of the two-body critical step, 0.2 s. Compatible CD: step 1 is a CD solve of \
         the static pile (the PGS-settled positions at rest, contact margin 1e-3 r, no position correction, APGD to 1e-12; \
         its forces are the column \"APGD converged, static\"), then the truss problem with each model's relative \
         stiffness (docs/theory.md says why the settled run's last step is not used). Relative floor-reaction error against DEM \
         (‖f − f_DEM‖/‖f_DEM‖ over the base spheres):\n\n{table}\nPaper (Table 1): APGD 0.17, PGS 0.19 (uniform Hookean \
         and Hertzian), 0.22 and 0.25 (two species); compatible CD close to DEM (its figure was lost in extraction).\n\n\
         Force networks of the middle slab (`network_<model>_<method>.svg`, one force scale per model) and floor \
         reactions (`floor_<model>.svg`).\n",
        if opts.quick { " --quick" } else { "" },
        cd.scene.settings.dt,
        cd.scene.iterations,
        cd.scene.duration,
    );
    report::write(&opts.out.join("report.md"), &md)?;
    println!("{table}");
    Ok(true)
}

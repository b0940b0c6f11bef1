//! Distributed runs on MPI ranks. Run by `.ci/run` as
//! `mpirun -np 1` and `mpirun -np 2` on the built test binary (a plain
//! `cargo test --features mpi` runs it as one rank). Checks on every rank
//! that the run agrees with the serial stepper on the whole scene; exits
//! non-zero on the first failure.

mod common;

use ndem_mpi::*;
use ndem_smooth::{SmoothLaw, SmoothSettings, SmoothStepper, stepper::critical_time_step};
use ndem_step::World;

fn smooth_settings(w: &World) -> SmoothSettings {
    SmoothSettings {
        dt: 0.1 * critical_time_step(w, &SmoothLaw::Hertz),
        ..SmoothSettings::default()
    }
}

/// Smooth DEM on the MPI ranks against the serial stepper, bit for bit.
fn smooth_matches_serial(comm: MpiComm) -> Result<String, String> {
    let steps = 1500;
    let scene = common::bed(300, 0.2);
    let mut run = DistributedSmooth::new(
        comm,
        &scene,
        smooth_settings(&scene),
        DomainSettings::default(),
    )
    .map_err(|e| e.to_string())?;
    for _ in 0..steps {
        run.step().map_err(|e| e.to_string())?;
    }
    let Some(world) = run.gather().map_err(|e| e.to_string())? else {
        return Ok("gathered on rank 0".into());
    };
    let mut reference = scene.clone();
    let mut st =
        SmoothStepper::new(smooth_settings(&reference), &reference).map_err(|e| e.to_string())?;
    for _ in 0..steps {
        st.step(&mut reference).map_err(|e| e.to_string())?;
    }
    for i in 0..world.len() {
        if world.positions()[i] != reference.positions()[i]
            || world.velocities()[i] != reference.velocities()[i]
        {
            return Err(format!("body {i} differs from the serial run"));
        }
    }
    Ok(format!(
        "{} bodies bit-identical after {steps} steps, {} layout rebuilds",
        world.len(),
        run.domain().rebuilds()
    ))
}

/// A 16-sphere column: its rest state on the MPI ranks equals a one-rank
/// run's within 2e-11 m (the bound of `tests/ndem.rs`, which also says
/// where it comes from).
fn column_rests_as_on_one_rank(comm: MpiComm) -> Result<String, String> {
    use ndem_collide::Shape;
    use ndem_math::{Material, Vec3};
    use ndem_step::BodyDesc;
    let mut scene = World::new(vec![Material::default()], Vec3::new(0.0, 0.0, -9.81))
        .map_err(|e| e.to_string())?;
    scene
        .add_body(BodyDesc::fixed(
            Shape::half_space(Vec3::z()).map_err(|e| e.to_string())?,
            0,
            Vec3::zeros(),
        ))
        .map_err(|e| e.to_string())?;
    for i in 0..16 {
        let p = Vec3::new(0.0, 0.0, 0.005 + 0.01 * i as f64);
        scene
            .add_body(BodyDesc::dynamic(
                Shape::sphere(0.005).map_err(|e| e.to_string())?,
                0,
                p,
            ))
            .map_err(|e| e.to_string())?;
    }
    let mut s = DistributedNdemSettings::default();
    s.step.dt = 1e-3;
    s.pgs.stopping = ndem_solve::Stopping::to_tolerance(3000, 1e-10);
    let mut run = DistributedNdem::new(comm, &scene, s).map_err(|e| e.to_string())?;
    let mut owned_each_step = true;
    for _ in 0..300 {
        run.step().map_err(|e| e.to_string())?;
        let owned = run
            .domain()
            .comm()
            .sum(&[run.domain().owned_count() as f64])[0];
        owned_each_step &= owned as usize == 16;
    }
    if !owned_each_step {
        return Err("a body was lost or duplicated".into());
    }
    let Some(world) = run.gather().map_err(|e| e.to_string())? else {
        return Ok("gathered on rank 0".into());
    };
    let one = run_on_threads(1, |c| {
        let mut r = DistributedNdem::new(c, &scene, s).map_err(|e| e.to_string())?;
        for _ in 0..300 {
            r.step().map_err(|e| e.to_string())?;
        }
        r.gather().map_err(|e| e.to_string())
    });
    let one = one
        .into_iter()
        .next()
        .ok_or("no rank")??
        .ok_or("not gathered")?;
    let d = (0..world.len())
        .map(|i| (world.positions()[i] - one.positions()[i]).norm())
        .fold(0.0, f64::max);
    if d > 2e-11 {
        return Err(format!("{d:.3e} m from the one-rank rest state"));
    }
    Ok(format!(
        "rest state {d:.3e} m from one rank's; every step owned each body once"
    ))
}

/// One check on the MPI ranks: a line to print, or what failed.
type Case = fn(MpiComm) -> Result<String, String>;

fn main() {
    let Some(_universe) = mpi::initialize() else {
        eprintln!("MPI is already initialised");
        std::process::exit(2);
    };
    let comm = MpiComm;
    let cases: [(&str, Case); 2] = [
        ("smooth DEM equals the serial run", smooth_matches_serial),
        (
            "NDEM column rests as on one rank",
            column_rests_as_on_one_rank,
        ),
    ];
    let mut failed = false;
    for (name, case) in cases {
        match case(comm) {
            Ok(msg) => println!("rank {}/{}: ok   {name}: {msg}", comm.rank(), comm.size()),
            Err(msg) => {
                println!("rank {}/{}: FAIL {name}: {msg}", comm.rank(), comm.size());
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}

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

fn main() {
    let Some(_universe) = mpi::initialize() else {
        eprintln!("MPI is already initialised");
        std::process::exit(2);
    };
    let comm = MpiComm;
    let cases: [(&str, fn(MpiComm) -> Result<String, String>); 1] =
        [("smooth DEM equals the serial run", smooth_matches_serial)];
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

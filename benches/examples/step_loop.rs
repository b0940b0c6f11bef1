//! The plain Rust stepping loop, the baseline of the Python binding's cost
//! (`crates/ndem-py/bench/overhead.py`).
//!
//! `cargo run --release -p ndem-benches --example step_loop -- [N] [STEPS]`
//! builds the built-in `packing` with `N` spheres (default 10 000), as
//! `ndem.Simulation.builtin("packing", N)` does, and steps it `STEPS`
//! times (default 40) with `Scene::step`, nothing else in the loop; it
//! prints `{"particles": N, "steps": STEPS, "seconds_per_step": t}` with
//! `t` the loop's wall time over `STEPS`.

use std::time::Instant;

use ndem_scenes::builders;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let particles: usize = args.next().map_or(Ok(10_000), |a| a.parse())?;
    let steps: u64 = args.next().map_or(Ok(40), |a| a.parse())?;
    let mut scene = builders::builtin_sized("packing", Some(particles))?;
    let mut stepper = scene.stepper()?;
    let start = Instant::now();
    for _ in 0..steps {
        scene.step(&mut stepper)?;
    }
    let per_step = start.elapsed().as_secs_f64() / steps as f64;
    println!(
        "{{\"particles\": {particles}, \"steps\": {steps}, \"seconds_per_step\": {per_step}}}"
    );
    Ok(())
}

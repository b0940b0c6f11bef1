//! Time and memory of writing and resuming a checkpoint of a large scene.
//!
//! `cargo run --release -p ndem-benches --example checkpoint_io -- N FORMAT
//! write PATH [STEPS]` builds the built-in `packing` with `N` spheres,
//! takes `STEPS` steps (default 1; warm-start impulses exist for the
//! contacts made by then) and writes a checkpoint in
//! `FORMAT` (`json` or `binary`) to `PATH`; `… N FORMAT read PATH` (a new
//! process) reads it back and restores the scene and its stepper. Each
//! prints one JSON line: the seconds of the write (capture included) or of
//! the read (restore included), the file's size, the resident memory
//! before and the peak (`VmHWM`) of the process, per particle.

use std::path::PathBuf;
use std::time::Instant;

use ndem::checkpoint::{Checkpoint, CheckpointFormat};
use ndem_scenes::builders;

/// A field of `/proc/self/status` in bytes (0 where it cannot be read).
fn status_bytes(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some([n, format, mode, path]), steps) = (args.get(..4), args.get(4)) else {
        return Err("usage: checkpoint_io N json|binary write|read PATH [STEPS]".into());
    };
    let steps: usize = steps.map_or(Ok(1), |s| s.parse())?;
    let n: usize = n.parse()?;
    let format = CheckpointFormat::from_name(format).ok_or("format: json or binary")?;
    let path = PathBuf::from(path);
    let (seconds, rss_before) = if mode == "write" {
        let mut scene = builders::builtin_sized("packing", Some(n))?;
        let mut stepper = scene.stepper()?;
        for _ in 0..steps {
            scene.step(&mut stepper)?;
        }
        eprintln!(
            "{} contacts stored",
            stepper.history().map_or(0, |h| h.len())
        );
        let before = status_bytes("VmRSS:");
        let start = Instant::now();
        Checkpoint::write_scene(&scene, &mut stepper, &path, format)?;
        (start.elapsed().as_secs_f64(), before)
    } else {
        let before = status_bytes("VmRSS:");
        let start = Instant::now();
        let (scene, _stepper) = Checkpoint::read_file(&path)?.restore()?;
        assert!(scene.world.len() >= n);
        (start.elapsed().as_secs_f64(), before)
    };
    let peak = status_bytes("VmHWM:");
    println!(
        "{{\"particles\": {n}, \"format\": \"{}\", \"mode\": \"{mode}\", \"seconds\": {seconds:.3}, \"file_bytes\": {}, \"rss_before_per_particle\": {:.0}, \"peak_per_particle\": {:.0}}}",
        format.extension(),
        std::fs::metadata(&path)?.len(),
        rss_before as f64 / n as f64,
        peak as f64 / n as f64
    );
    Ok(())
}

//! The peers' bed of spheres and the CPU clocks the peer comparisons
//! read (`cargo xtask peers`: the smooth half in `peers.rs`, the NDEM half
//! in `peers_ndem.rs`).

use crate::report::SuiteResult;
use ndem_math::Material;
use ndem_scenes::builders::{self, Scene};

/// Largest sphere radius of the bed \[m\].
pub(crate) const R_MAX: f64 = 0.0065;

/// Smallest sphere radius \[m\].
pub(crate) const R_MIN: f64 = 0.005;

/// Restitution of the peer comparison (LIGGGHTS takes it per type pair;
/// ours comes from the material).
pub(crate) const RESTITUTION: f64 = 0.5;

/// Friction coefficient of the peer comparison.
pub(crate) const FRICTION: f64 = 0.5;

/// The bed's seed unless `--seed` gives another.
pub(crate) const DEFAULT_SEED: u64 = 11;

/// The bed of `n` spheres: a loose lattice about 16 layers deep in an open
/// box, rolling-resistance coefficient `rolling`.
pub(crate) fn bed(n: usize, seed: u64, rolling: f64) -> SuiteResult<Scene> {
    let per_side = ((n as f64 / 16.0).sqrt().ceil() as usize).max(2);
    let side = (per_side as f64 + 1.2) * 2.2 * R_MAX;
    let mut scene =
        builders::box_packing(n, R_MIN, R_MAX, side, seed).map_err(|e| e.to_string())?;
    for m in &mut scene.world.materials {
        *m = Material {
            restitution: RESTITUTION,
            friction: FRICTION,
            rolling_resistance: rolling,
            ..*m
        };
    }
    Ok(scene)
}

/// CPU seconds of this process, all threads including those that have
/// ended (the solvers' scoped threads do): `/proc/self/stat` fields utime
/// and stime, in clock ticks of 1/100 s. (The per-task `schedstat` clocks
/// have nanosecond resolution but lose the time of ended threads.)
pub(crate) fn own_cpu_seconds() -> f64 {
    proc_stat_seconds(14, 15)
}

/// The sum of two clock-tick fields of `/proc/self/stat`, in seconds.
fn proc_stat_seconds(first: usize, second: usize) -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // fields after the command name, which is in parentheses
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state)
    let tick = |i: usize| f.get(i - 3).and_then(|x| x.parse::<f64>().ok());
    match (tick(first), tick(second)) {
        (Some(u), Some(s)) => (u + s) / 100.0,
        _ => f64::NAN,
    }
}

/// CPU seconds of waited-for children (`/proc/self/stat` fields cutime and
/// cstime, in clock ticks of 1/100 s).
pub(crate) fn children_cpu_seconds() -> f64 {
    proc_stat_seconds(16, 17)
}

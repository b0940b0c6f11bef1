//! Profiling driver: the smooth DEM settling the `cargo xtask peers` bed
//! (a loose lattice falling into an open box, the regime where the Verlet
//! list is rebuilt often). `cargo run --release -p ndem-benches --example
//! smooth_settle -- [particles] [steps] [mu_r] [record]`; `record` 0 turns
//! `record_contacts` off (default 1, on). Prints, for each sixth of the run, its
//! wall time, Verlet rebuilds, touching contacts and kinetic energy, and at
//! the end a hash of every position and velocity bit (to check that a
//! change leaves the trajectory as it was).

use ndem_math::Material;
use ndem_smooth::{SmoothLaw, SmoothSettings, SmoothStepper};
use std::time::Instant;

fn main() {
    let arg = |i: usize, default: f64| {
        std::env::args()
            .nth(i)
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let n = arg(1, 10_000.0) as usize;
    let steps = arg(2, 4000.0) as usize;
    let rolling = arg(3, 0.0);
    let record_contacts = arg(4, 1.0) != 0.0;
    let (r_min, r_max) = (0.005, 0.0065);
    let per_side = ((n as f64 / 16.0).sqrt().ceil() as usize).max(2);
    let side = (per_side as f64 + 1.2) * 2.2 * r_max;
    let mut scene = ndem_scenes::builders::box_packing(n, r_min, r_max, side, 1).unwrap();
    for m in &mut scene.world.materials {
        *m = Material {
            restitution: 0.5,
            friction: 0.5,
            rolling_resistance: rolling,
            ..*m
        };
    }
    let mut world = scene.world;
    let critical = ndem_smooth::stepper::critical_time_step(&world, &SmoothLaw::Hertz);
    let settings = SmoothSettings {
        dt: 0.1 * critical,
        rolling: rolling > 0.0,
        record_contacts,
        ..SmoothSettings::default()
    };
    let mut st = SmoothStepper::new(settings, &world).unwrap();
    let every = (steps / 6).max(1);
    let mut start = Instant::now();
    let mut rebuilds = 0;
    for k in 1..=steps {
        let s = st.step(&mut world).unwrap();
        if k % every == 0 || k == steps {
            println!(
                "steps {:>6}: {:.3} s, {} rebuilds, {} contacts, E_k {:.6e} J",
                k,
                start.elapsed().as_secs_f64(),
                st.rebuilds() - rebuilds,
                s.contacts,
                s.kinetic_energy
            );
            start = Instant::now();
            rebuilds = st.rebuilds();
        }
    }
    println!("state hash {:016x}", state_hash(&world));
}

/// FNV-1a over the bits of every position and velocity component.
fn state_hash(world: &ndem_step::World) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let positions = world.positions().iter().flat_map(|x| x.iter().copied());
    let velocities = world.velocities().iter().flat_map(|v| {
        let (l, a) = (v.linear, v.angular);
        [l.x, l.y, l.z, a.x, a.y, a.z]
    });
    for x in positions.chain(velocities) {
        for byte in x.to_bits().to_le_bytes() {
            h = (h ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

//! Overhead of model reduction per step on a resting packing of 10⁴
//! spheres (25 × 25 × 16, d = 13 mm, Table 1, Δt = 5 ms, 40 PGS sweeps,
//! history warm start):
//!
//! `cargo run --release -p ndem-reduce --example overhead`
//!
//! Prints the mean step time without reduction, the mean step time with
//! every sphere merged, and the split and merge time inside the reduced
//! step (minimum of three repeats of 20 steps each, interleaved).

use ndem_math::Material;
use ndem_reduce::{Reducer, ReductionSettings};
use ndem_step::{MaterialId, StepSettings, Stepper, World};
use std::time::Instant;

fn packing() -> (World, Stepper) {
    let mut w = World::on_floor(Material::default()).unwrap();
    let r = 0.0065;
    w.add_sphere_stack(r, MaterialId::from_index(0), [25, 25, 16])
        .unwrap();
    let st = Stepper::with_warm_pgs(StepSettings::papers(), 40).unwrap();
    (w, st)
}

fn main() {
    let (mut w, mut st) = packing();
    let t = Instant::now();
    for _ in 0..100 {
        st.step(&mut w).unwrap();
    }
    eprintln!("settled 100 steps in {:.1} s", t.elapsed().as_secs_f64());
    let (mut w_red, mut st_red) = (w.clone(), packing().1);
    assert!(st_red.set_history(st.history().cloned().unwrap_or_default()));
    st_red.set_clock(st.time(), st.step_count());
    st_red.set_hooks(Box::new(
        Reducer::new(ReductionSettings::default()).unwrap(),
    ));
    for _ in 0..5 {
        st_red.step(&mut w_red).unwrap();
    }
    let steps = 20;
    let (mut full, mut reduced, mut split, mut merge) = (f64::MAX, f64::MAX, f64::MAX, f64::MAX);
    let mut level = 0.0;
    let mut contacts = (0, 0);
    for _ in 0..3 {
        let t = Instant::now();
        for _ in 0..steps {
            contacts.0 = st.step(&mut w).unwrap().contacts;
        }
        full = full.min(t.elapsed().as_secs_f64() / steps as f64);
        let t = Instant::now();
        let (mut s, mut m) = (0.0, 0.0);
        for _ in 0..steps {
            contacts.1 = st_red.step(&mut w_red).unwrap().contacts;
            let r = st_red.hooks_as::<Reducer>().unwrap().stats();
            s += r.split_time.as_secs_f64();
            m += r.merge_time.as_secs_f64();
            level = r.level;
        }
        reduced = reduced.min(t.elapsed().as_secs_f64() / steps as f64);
        split = split.min(s / steps as f64);
        merge = merge.min(m / steps as f64);
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "particles 10000, h = {level:.4}, contacts in the solve: full {} reduced {}",
        contacts.0, contacts.1
    );
    println!(
        "step: full {:.2} ms, reduced {:.2} ms (speed-up {:.1})",
        full * 1e3,
        reduced * 1e3,
        full / reduced
    );
    println!(
        "reduction overhead in the reduced step: split {:.2} ms + merge {:.2} ms = {:.1} % of the reduced step, {:.1} % of the full step",
        split * 1e3,
        merge * 1e3,
        100.0 * (split + merge) / reduced,
        100.0 * (split + merge) / full
    );
    println!("load average: {}", load.trim());
}

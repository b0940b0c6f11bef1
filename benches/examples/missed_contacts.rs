//! Contacts that detection did not see coming: a pair first detected
//! already overlapping, whose gap at the previous step's detection lay
//! beyond the pair's reach (margin plus the two bodies' sweeps).
//!
//! `cargo run --release -p ndem-benches --example missed_contacts -- SCENE
//! [STEPS] [reach]` steps the built-in `SCENE` (with `reach`:
//! `StepSettings::reach_growth` on) and prints, every 100 steps and at the
//! end, the contacts born overlapping, the largest such overlap relative
//! to the smaller radius of curvature of the pair, and the wall time.

use std::collections::HashSet;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("pile", String::as_str);
    let mut scene = ndem_scenes::builders::builtin(name).expect("a built-in scene");
    let steps: usize = match args.get(2).map(String::as_str) {
        Some(n) if n != "reach" => n.parse().expect("STEPS"),
        _ => (scene.duration / scene.settings.dt).round() as usize,
    };
    scene.settings.reach_growth = args.iter().any(|a| a == "reach");
    let start = std::time::Instant::now();
    let mut stepper = scene.stepper().expect("a stepper");
    let mut before: HashSet<(u32, u32)> = HashSet::new();
    let (mut born, mut worst, mut worst_step) = (0usize, 0.0f64, 0usize);
    let mut contacts = 0usize;
    for k in 1..=steps {
        scene.step(&mut stepper).expect("a step");
        let world = &scene.world;
        let mut now = HashSet::new();
        for c in stepper.contacts().as_slice() {
            let pair = (c.key.body_a, c.key.body_b);
            now.insert(pair);
            if c.gap < 0.0 && !before.contains(&pair) {
                let r = world.shapes()[c.body_a()]
                    .curvature_radius()
                    .min(world.shapes()[c.body_b()].curvature_radius());
                born += 1;
                if -c.gap / r > worst {
                    worst = -c.gap / r;
                    worst_step = k;
                }
            }
        }
        contacts += now.len();
        before = now;
        if k % 100 == 0 || k == steps {
            println!(
                "{name} step {k}: {born} contacts born overlapping ({:.2e} of contact-steps), largest overlap {worst:.3e} of the radius (step {worst_step}), {:.1} s",
                born as f64 / contacts.max(1) as f64,
                start.elapsed().as_secs_f64()
            );
        }
    }
}

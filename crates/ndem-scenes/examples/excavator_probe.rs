//! Prints the excavator's layout and dig cycle, then runs a few steps.
use ndem_scenes::excavator::{ExcavatorSpec, excavator_with_machine};

fn main() {
    let quick = std::env::args().nth(1).as_deref() != Some("paper");
    let spec = if quick {
        ExcavatorSpec::quick()
    } else {
        ExcavatorSpec::paper()
    };
    let (mut scene, machine) = excavator_with_machine(spec).unwrap();
    println!(
        "bodies {}, particles {}",
        scene.world.len(),
        scene.world.len() - machine.first_particle.index()
    );
    let s = &machine.schedule;
    for (k, t) in s.times.iter().enumerate() {
        println!("{:>9} t={:6.2} targets {:?}", s.phases[k], t, s.targets[k]);
    }
    let steps: usize = std::env::args()
        .nth(2)
        .and_then(|x| x.parse().ok())
        .unwrap_or(200);
    let mut stepper = scene.stepper().unwrap();
    let t0 = std::time::Instant::now();
    for k in 0..steps {
        let st = scene.step(&mut stepper).unwrap();
        if k % 200 == 0 || k + 1 == steps {
            let b = machine.bodies[4];
            let (pb, qb) = (scene.world.position(b), scene.world.orientation(b));
            let fill = scene.world.positions()[machine.first_particle.index()..]
                .iter()
                .filter(|p| machine.bucket_frame.contains(pb, qb, **p))
                .count();
            println!("   bucket at {pb:.2?}, {fill} particles inside");
            let r = stepper.joint_reactions(&scene.world);
            let coords: Vec<f64> = [
                machine.slew,
                machine.cylinders[0],
                machine.cylinders[1],
                machine.cylinders[2],
            ]
            .iter()
            .map(|&j| {
                scene.world.joints()[j.index()]
                    .coordinate(&scene.world)
                    .unwrap()
            })
            .collect();
            let f: Vec<f64> = machine
                .cylinders
                .iter()
                .map(|&j| r[j.index()].drive_force.unwrap_or(f64::NAN))
                .collect();
            let top = scene.world.positions()[machine.first_particle.index()..]
                .iter()
                .map(|p| p.z)
                .fold(f64::MIN, f64::max);
            println!(
                "t {:.3} {:?} contacts {} status {:?} coords {:.3?} forces {:?} top {top:.3} ({:.1} s)",
                st.time,
                s.phase_at(st.time),
                st.contacts,
                st.status,
                coords,
                f,
                t0.elapsed().as_secs_f64()
            );
            let r = &st.residuals;
            println!(
                "   max n {:.2e} f {:.2e} r {:.2e} b {:.2e}",
                r.normal.max, r.friction.max, r.rolling.max, r.bilateral.max
            );
        }
    }
}

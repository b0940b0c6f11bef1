//! Parallel force evaluation gives the serial trajectory, bit for bit.

use ndem_collide::Shape;
use ndem_math::{Material, Vec3};
use ndem_smooth::*;
use ndem_step::{BodyDesc, World};

/// 200 spheres of mixed radii falling into a box with rolling resistance.
fn bed() -> World {
    let m = Material {
        rolling_resistance: 0.1,
        ..Material::default()
    };
    let mut w = World::new(vec![m], Vec3::new(0.0, 0.0, -9.81)).unwrap();
    let h = 0.05;
    w.add_body(BodyDesc::fixed(
        Shape::half_space(Vec3::z()).unwrap(),
        0,
        Vec3::zeros(),
    ))
    .unwrap();
    for (n, p) in [
        (Vec3::x(), Vec3::new(-h, 0.0, 0.0)),
        (-Vec3::x(), Vec3::new(h, 0.0, 0.0)),
        (Vec3::y(), Vec3::new(0.0, -h, 0.0)),
        (-Vec3::y(), Vec3::new(0.0, h, 0.0)),
    ] {
        w.add_body(BodyDesc::fixed(Shape::half_space(n).unwrap(), 0, p))
            .unwrap();
    }
    for i in 0..200 {
        let (ix, iy, iz) = (i % 7, (i / 7) % 7, i / 49);
        let r = 0.005 + 0.001 * ((i * 37 % 11) as f64 / 11.0);
        let p = Vec3::new(
            -0.042 + 0.014 * ix as f64 + 0.0005 * (i % 3) as f64,
            -0.042 + 0.014 * iy as f64,
            0.008 + 0.013 * iz as f64,
        );
        w.add_body(BodyDesc::dynamic(Shape::sphere(r).unwrap(), 0, p))
            .unwrap();
    }
    w
}

fn run(threads: usize) -> World {
    let mut w = bed();
    let crit = stepper::critical_time_step(&w, &SmoothLaw::Hertz);
    let mut st = SmoothStepper::new(
        SmoothSettings {
            dt: 0.1 * crit,
            threads,
            ..SmoothSettings::default()
        },
        &w,
    )
    .unwrap();
    let mut touching = 0;
    for _ in 0..3000 {
        touching = st.step(&mut w).unwrap().contacts;
    }
    assert!(
        touching > 200,
        "{touching} contacts: the bed has not landed"
    );
    w
}

#[test]
fn any_thread_count_gives_the_serial_trajectory() {
    let serial = run(1);
    for threads in [2, 3] {
        let parallel = run(threads);
        assert_eq!(
            serial.positions(),
            parallel.positions(),
            "{threads} threads"
        );
        assert_eq!(
            serial.velocities(),
            parallel.velocities(),
            "{threads} threads"
        );
    }
}

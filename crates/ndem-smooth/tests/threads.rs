//! Parallel force evaluation gives the serial trajectory, bit for bit.

use ndem_collide::Shape;
use ndem_math::{Material, Vec3};
use ndem_smooth::*;
use ndem_step::{BodyDesc, MaterialId, World};

/// 200 spheres of mixed radii falling into a box with rolling resistance.
fn bed() -> World {
    let m = Material {
        rolling_resistance: 0.1,
        ..Material::default()
    };
    let mut w = World::new(vec![m], Vec3::new(0.0, 0.0, -9.81)).unwrap();
    let h = 0.05;
    w.add_body(BodyDesc::floor(MaterialId::from_index(0)))
        .unwrap();
    for (n, p) in [
        (Vec3::x(), Vec3::new(-h, 0.0, 0.0)),
        (-Vec3::x(), Vec3::new(h, 0.0, 0.0)),
        (Vec3::y(), Vec3::new(0.0, -h, 0.0)),
        (-Vec3::y(), Vec3::new(0.0, h, 0.0)),
    ] {
        w.add_body(BodyDesc::fixed(
            Shape::half_space(n).unwrap(),
            MaterialId::from_index(0),
            p,
        ))
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
        w.add_sphere(r, MaterialId::from_index(0), p).unwrap();
    }
    w
}

/// A Hertz stepper for `w` at 0.1 of its critical time step.
fn stepper_for(w: &World, threads: usize) -> SmoothStepper {
    let crit = stepper::critical_time_step(w, &SmoothLaw::Hertz);
    SmoothStepper::new(
        SmoothSettings {
            dt: 0.1 * crit,
            threads,
            ..SmoothSettings::default()
        },
        w,
    )
    .unwrap()
}

fn run(threads: usize) -> World {
    let mut w = bed();
    let mut st = stepper_for(&w, threads);
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

/// Boxes and convex hulls tumbling onto a floor and onto each other:
/// contacts from the generic narrow phase (parry's manifolds), whose
/// feature ids come in no particular order and several per pair.
fn tumbling_blocks() -> World {
    let m = Material {
        rolling_resistance: 0.05,
        ..Material::default()
    };
    let mut w = World::on_floor(m).unwrap();
    let hull = [
        Vec3::new(0.01, 0.0, 0.0),
        Vec3::new(-0.006, 0.008, 0.0),
        Vec3::new(-0.006, -0.008, 0.0),
        Vec3::new(0.0, 0.0, 0.012),
        Vec3::new(0.0, 0.0, -0.006),
    ];
    for i in 0..12 {
        let (ix, iz) = (i % 3, i / 3);
        let p = Vec3::new(
            0.016 * ix as f64,
            0.003 * (i % 2) as f64,
            0.012 + 0.016 * iz as f64,
        );
        let tilt = ndem_math::Quat::from_euler_angles(0.3 * i as f64, 0.2, 0.1 * i as f64);
        let shape = if i % 2 == 0 {
            Shape::cuboid(Vec3::new(0.007, 0.005, 0.004)).unwrap()
        } else {
            Shape::convex_hull(&hull).unwrap()
        };
        let v = ndem_math::Velocity6::new(Vec3::new(0.2, -0.1, 0.0), Vec3::new(0.0, 3.0, 1.0));
        let mut body = BodyDesc::dynamic(shape, MaterialId::from_index(0), p)
            .with_orientation(tilt)
            .with_velocity(v);
        if i % 2 == 1 {
            // a hull's mass is given: about that of a 1 cm stone
            let (m, r) = (3e-3, 0.008);
            body.mass =
                Some(ndem_math::MassProperties::new(m, Vec3::repeat(0.4 * m * r * r)).unwrap());
        }
        w.add_body(body).unwrap();
    }
    w
}

#[test]
fn generic_narrow_phase_contacts_give_the_serial_trajectory_on_threads() {
    // the serial pass merges histories as the narrow phase writes contacts;
    // the threaded one on the finished key-sorted set
    let run = |threads: usize| {
        let mut w = tumbling_blocks();
        let mut st = stepper_for(&w, threads);
        let mut multi = 0;
        for _ in 0..4000 {
            st.step(&mut w).unwrap();
            let set = st.contacts().expect("kept by default").as_slice();
            multi += set
                .windows(2)
                .filter(|p| p[0].gap < 0.0 && p[1].gap < 0.0)
                .filter(|p| {
                    (p[0].key.body_a, p[0].key.body_b) == (p[1].key.body_a, p[1].key.body_b)
                })
                .count();
        }
        (w, multi)
    };
    let (serial, multi) = run(1);
    assert!(
        multi > 1000,
        "{multi}: too few pairs touching at several points"
    );
    let (parallel, _) = run(2);
    assert_eq!(serial.positions(), parallel.positions());
    assert_eq!(serial.velocities(), parallel.velocities());
}

/// Without its contact set (`record_contacts` off) the stepper forms each
/// force from the contact as the narrow phase finds it: the same
/// trajectory, bit for bit, on closed-form and generic contacts, on one
/// thread and on two; and what needs the set says it was not kept.
#[test]
fn not_keeping_the_contacts_leaves_the_trajectory_as_it_was() {
    let run = |world: fn() -> World, steps: usize, threads: usize, record_contacts: bool| {
        let mut w = world();
        let crit = stepper::critical_time_step(&w, &SmoothLaw::Hertz);
        let settings = SmoothSettings {
            dt: 0.1 * crit,
            threads,
            record_contacts,
            ..SmoothSettings::default()
        };
        let mut st = SmoothStepper::new(settings, &w).unwrap();
        let mut touching = 0;
        for _ in 0..steps {
            touching += st.step(&mut w).unwrap().contacts;
        }
        assert_eq!(st.contacts().is_some(), record_contacts);
        if !record_contacts {
            let e = st.normal_forces(&w).unwrap_err();
            assert!(
                matches!(
                    e,
                    SmoothError::InvalidSettings {
                        field: "record_contacts",
                        ..
                    }
                ),
                "{e}"
            );
        }
        (w, touching)
    };
    for (world, steps) in [(bed as fn() -> World, 3000), (tumbling_blocks, 4000)] {
        let (kept, touching) = run(world, steps, 1, true);
        assert!(touching > 10_000, "{touching}: too few contacts stepped");
        for threads in [1, 2] {
            let (not_kept, same) = run(world, steps, threads, false);
            assert_eq!(same, touching, "{threads} threads");
            assert_eq!(kept.positions(), not_kept.positions(), "{threads} threads");
            assert_eq!(
                kept.velocities(),
                not_kept.velocities(),
                "{threads} threads"
            );
            assert_eq!(
                kept.orientations(),
                not_kept.orientations(),
                "{threads} threads"
            );
        }
    }
}

/// A thread count above `MAX_THREADS` is a typed error naming the field
/// (at 100 000 the system refused a thread and the process aborted); the
/// limit itself is accepted.
#[test]
fn too_many_threads_are_refused() {
    let w = bed();
    let crit = stepper::critical_time_step(&w, &SmoothLaw::Hertz);
    let with = |threads: usize| {
        let settings = SmoothSettings {
            dt: 0.1 * crit,
            threads,
            ..SmoothSettings::default()
        };
        SmoothStepper::new(settings, &w)
    };
    let max = ndem_par::blocks::MAX_THREADS;
    assert!(matches!(
        with(max + 1),
        Err(SmoothError::InvalidSettings {
            field: "threads",
            ..
        })
    ));
    assert!(matches!(
        with(100_000),
        Err(SmoothError::InvalidSettings {
            field: "threads",
            ..
        })
    ));
    assert!(with(max).is_ok());
}

//! A split sensor that moves with a body (`SensorSplit::following`): the
//! same step by step as a fixed sensor moved to the body's pose by hand.

mod common;

use common::{R, merged_block};
use ndem_collide::Shape;
use ndem_math::{Quat, Vec3, Velocity6};
use ndem_reduce::{ReduceError, Reducer, ReductionSettings, SensorSplit};
use ndem_step::{BodyDesc, BodyId, MaterialId, Motion, Stepper, World};

/// The sensor's shape and its place on the probe.
fn sensor_shape() -> Shape {
    Shape::sphere(1.8 * R).unwrap()
}
const OFFSET: Vec3 = Vec3::new(0.01, 0.0, -0.08);

/// The merged 5×5×3 block with a kinematic probe far above it, moving
/// along x and turning about z, so that the sensor hung below it (at
/// `OFFSET` in its frame) passes through the block's top layers.
fn block_with_probe() -> (World, Stepper, BodyId) {
    let (mut w, st) = merged_block(None);
    let probe = BodyDesc {
        motion: Motion::Kinematic,
        ..BodyDesc::dynamic(
            Shape::sphere(R).unwrap(),
            MaterialId::from_index(0),
            Vec3::new(-0.03, 0.03, 0.1),
        )
        .with_velocity(Velocity6::new(
            Vec3::new(0.4, 0.0, 0.0),
            Vec3::new(0.0, 0.0, 2.0),
        ))
    };
    let id = w.add_body(probe).unwrap();
    (w, st, id)
}

fn members(w: &World) -> Vec<bool> {
    (0..w.len()).map(|i| w.is_member(i)).collect()
}

/// The block swept by a sensor that moves with the probe, and by a fixed
/// one moved to `x_b + q_b r`, `q_b` before every step: the same members
/// freed and merged again and the same positions, bit for bit, over 60
/// steps, in which the sensor frees some members and leaves the block.
#[test]
fn a_sensor_that_follows_a_body_is_one_moved_to_it_by_hand() {
    let run = |follow: bool| {
        let (mut w, mut st, probe) = block_with_probe();
        let sensor = if follow {
            SensorSplit::following(sensor_shape(), probe, OFFSET)
        } else {
            SensorSplit::fixed(sensor_shape(), Vec3::new(9.0, 9.0, 9.0), Quat::identity())
        };
        // the block as merged, with the sensor added to the reducer's
        // settings: the aggregates of the block's state carry over
        let state = st.hooks_as::<Reducer>().unwrap().state();
        let settings = ReductionSettings {
            contact_split: None,
            sensors: vec![sensor],
            ..ReductionSettings::default()
        };
        st.set_hooks(Box::new(Reducer::restore(settings, state, &w).unwrap()));
        let mut trace = Vec::new();
        for _ in 0..60 {
            if !follow {
                let (x, q) = (w.position(probe), w.orientation(probe));
                st.hooks_as::<Reducer>()
                    .unwrap()
                    .move_sensor(0, x + q * OFFSET, q)
                    .unwrap();
            }
            st.step(&mut w).unwrap();
            let bits: Vec<u64> = w
                .positions()
                .iter()
                .flat_map(|p| p.iter().map(|c| c.to_bits()))
                .collect();
            trace.push((members(&w), bits));
        }
        trace
    };
    let followed = run(true);
    let moved = run(false);
    assert!(followed == moved, "the runs part");
    // bodies outside every aggregate after each step: the floor, the
    // probe and the aggregates' own bodies before the sensor arrives
    // (measured: 6), up to 14 more while it passes through the top
    // layers, and the same 6 once it has left and the freed members,
    // at rest, have merged again
    let outside: Vec<usize> = followed
        .iter()
        .map(|(m, _)| m.iter().filter(|&&x| !x).count())
        .collect();
    let base = outside[0];
    assert!(*outside.iter().max().unwrap() >= base + 10, "{outside:?}");
    assert_eq!(outside[59], base, "{outside:?}");
}

/// A sensor that follows a body takes no pose from `move_sensor`, and one
/// that names a body the world lacks stops the step with a typed error
/// naming the field.
#[test]
fn a_following_sensor_is_not_moved_by_hand_and_needs_its_body() {
    let (mut w, mut st, probe) = block_with_probe();
    let settings = ReductionSettings {
        sensors: vec![SensorSplit::following(sensor_shape(), probe, OFFSET)],
        ..ReductionSettings::default()
    };
    let mut reducer = Reducer::new(settings).unwrap();
    assert!(matches!(
        reducer.move_sensor(0, Vec3::zeros(), Quat::identity()),
        Err(ReduceError::InvalidSettings {
            field: "sensors.follows",
            ..
        })
    ));
    let missing = ReductionSettings {
        sensors: vec![SensorSplit::following(
            sensor_shape(),
            BodyId::from_index(w.len() + 3),
            OFFSET,
        )],
        ..ReductionSettings::default()
    };
    st.set_hooks(Box::new(Reducer::new(missing).unwrap()));
    let e = st.step(&mut w).unwrap_err().to_string();
    assert!(e.contains("sensors.follows"), "{e}");
}

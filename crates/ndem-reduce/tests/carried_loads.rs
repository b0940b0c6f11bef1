//! Machines carry their load merged (`ReductionSettings::carried_loads`):
//! particles resting on a jointed body alone merge into its aggregate; a
//! bed that also rests on the ground never does.

use ndem_collide::Shape;
use ndem_math::{MassProperties, Material, Vec3};
use ndem_reduce::{Reducer, ReductionSettings};
use ndem_step::{
    BodyDesc, BodyId, Drive, Joint, JointId, MaterialId, Motor, StepSettings, Stepper, World,
};

const R: f64 = 0.0065;
const PLATE: Vec3 = Vec3::new(0.05, 0.05, 0.01);

fn stepper() -> Stepper {
    Stepper::with_warm_pgs(StepSettings::papers(), 200).unwrap()
}

fn world() -> World {
    World::new(vec![Material::default()], Vec3::new(0.0, 0.0, -9.81)).unwrap()
}

/// A 10 kg plate centred at `centre` on a vertical prismatic joint to a
/// static base, its motor at `speed` with up to `max_force` (0: a free
/// slide).
fn plate_on_a_slide(
    w: &mut World,
    centre: Vec3,
    (speed, max_force): (f64, f64),
) -> (BodyId, JointId) {
    let m = MaterialId::from_index(0);
    let base = w
        .add_body(BodyDesc::fixed(
            Shape::sphere(0.01).unwrap(),
            m,
            Vec3::new(0.0, 0.0, -1.0),
        ))
        .unwrap();
    let mut desc = BodyDesc::dynamic(Shape::cuboid(PLATE).unwrap(), m, centre);
    desc.mass = Some(MassProperties::solid_box(10.0, PLATE).unwrap());
    let plate = w.add_body(desc).unwrap();
    let motor = Motor {
        target_speed: speed,
        max_force,
    };
    let joint = Joint::prismatic(w, base, plate, centre, Vec3::z(), Some(motor)).unwrap();
    (plate, w.add_joint(joint).unwrap())
}

/// Spheres resting on the plate's top face at the given (x, y), apart.
fn load_on(w: &mut World, plate_top: f64, at: &[(f64, f64)]) -> Vec<BodyId> {
    at.iter()
        .map(|&(x, y)| {
            let p = Vec3::new(x, y, plate_top + R);
            w.add_sphere(R, MaterialId::from_index(0), p).unwrap()
        })
        .collect()
}

fn reducer(carried_loads: bool) -> Reducer {
    Reducer::new(ReductionSettings {
        carried_loads,
        ..ReductionSettings::default()
    })
    .unwrap()
}

/// A plate lifted at 0.1 m/s by its motor with 4 spheres resting on it,
/// apart from each other: with `carried_loads` the spheres and the plate
/// become one aggregate, which the motor lifts at its speed carrying the
/// weight of plate and load; without it nothing merges (the spheres touch
/// nothing but the plate, and the plate has a joint).
#[test]
fn a_load_resting_on_a_lifted_plate_merges_into_it() {
    for carried in [true, false] {
        let mut w = world();
        let (plate, _) = plate_on_a_slide(&mut w, Vec3::new(0.0, 0.0, 0.5), (0.1, 1000.0));
        let at = [(-0.02, -0.02), (0.02, -0.02), (-0.02, 0.02), (0.02, 0.02)];
        let load = load_on(&mut w, 0.5 + PLATE.z, &at);
        let mut st = stepper();
        st.set_hooks(Box::new(reducer(carried)));
        for _ in 0..100 {
            st.step(&mut w).unwrap();
        }
        let host = w.host_of(plate.index());
        let stats = st.hooks_as::<Reducer>().unwrap().stats();
        println!("carried_loads {carried}: plate host {host:?}, {stats:?}");
        if !carried {
            assert_eq!(host, None);
            assert!(load.iter().all(|b| w.host_of(b.index()).is_none()));
            continue;
        }
        let agg = host.expect("the plate is a member");
        assert!(load.iter().all(|b| w.host_of(b.index()) == Some(agg)));
        assert_eq!(stats.aggregates, 1);
        let weight: f64 = std::iter::once(plate)
            .chain(load.iter().copied())
            .map(|b| w.mass_properties()[b.index()].unwrap().mass * 9.81)
            .sum();
        let v = w.velocities()[agg].linear;
        let force = st.joint_forces()[5].abs();
        println!(
            "speed error {:e}, force error {:e}",
            (v.z - 0.1).abs(),
            (force - weight).abs() / weight
        );
        // the explicit merge's figures (`jointed_body_merged_with_its_load_
        // is_driven_by_its_joint`, reduce.rs): speed to the joint's
        // compliance (1e-10), the force the weight to round-off
        assert!((v.z - 0.1).abs() < 1e-9, "{v:?}");
        assert!(
            (force - weight).abs() <= 1e-14 * weight,
            "{force} against {weight}"
        );
    }
}

/// A plate on a free slide resting with its weight on a 3 × 3 layer of
/// spheres on the floor, with 2 spheres on the plate: the 2 merge into the
/// plate, the layer (which also rests on the floor) does not; when the
/// motor then lifts the plate, the 2 go up with it and the layer stays
/// where it was.
#[test]
fn a_plate_resting_on_a_bed_does_not_drag_it() {
    let mut w = world();
    let m = MaterialId::from_index(0);
    w.add_body(BodyDesc::floor(m)).unwrap();
    let bed = w.add_sphere_stack(R, m, [3, 3, 1]).unwrap();
    let centre = Vec3::new(2.0 * R, 2.0 * R, 2.0 * R + PLATE.z);
    let (plate, joint) = plate_on_a_slide(&mut w, centre, (0.0, 0.0));
    let top = centre.z + PLATE.z;
    let load = load_on(&mut w, top, &[(0.0, 0.0), (4.0 * R, 4.0 * R)]);
    let mut st = stepper();
    st.set_hooks(Box::new(reducer(true)));
    for _ in 0..100 {
        st.step(&mut w).unwrap();
    }
    let agg = w
        .host_of(plate.index())
        .expect("the plate carries its load");
    assert!(load.iter().all(|b| w.host_of(b.index()) == Some(agg)));
    assert!(bed.iter().all(|b| w.host_of(b.index()) != Some(agg)));
    let load_before: Vec<Vec3> = load.iter().map(|&b| w.position(b)).collect();
    let lift = Motor {
        target_speed: 0.1,
        max_force: 1000.0,
    };
    w.set_joint_drive(joint, Some(Drive::Speed(lift))).unwrap();
    for _ in 0..100 {
        st.step(&mut w).unwrap();
    }
    // the layer still rests on the floor: each centre near z = R
    let bed_off_floor = bed
        .iter()
        .map(|b| (w.position(b).z - R).abs())
        .fold(0.0, f64::max);
    let load_rise: Vec<f64> = load
        .iter()
        .zip(&load_before)
        .map(|(&b, p)| w.position(b).z - p.z)
        .collect();
    println!("bed centres off z = R by {bed_off_floor:e} m, load rose {load_rise:?} m");
    // measured: the load rises 0.05 m (100 steps at 0.1 m/s) to 5e-11 m
    // (the joint's compliance); the layer's centres lie within 3.9e-5 m
    // of z = R (still springing back from the plate's weight, about 1 mm
    // of overlap under it), where a dragged layer would rise 0.05 m;
    // bounds 10x and 2.5x those
    assert!(
        load_rise.iter().all(|&dz| (dz - 0.05).abs() < 5e-10),
        "{load_rise:?}"
    );
    assert!(bed_off_floor < 1e-4, "{bed_off_floor}");
    assert!(bed.iter().all(|b| w.host_of(b.index()) != Some(agg)));
}

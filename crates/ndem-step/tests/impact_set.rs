//! The impact stage on an active set (`ImpactScope::ActiveSet`) against
//! the whole-network impact stage of the papers' stepper.

use ndem_math::{Material, Vec3, Velocity6};
use ndem_solve::{ColdStart, ProjectedGaussSeidel, Stopping};
use ndem_step::*;

/// A 5 × 5 × 4 stack of spheres (d = 13 mm) settled on the floor, and a
/// sphere above body `under` falling at `speed`, 0.1 mm above it: it
/// impacts on the next step.
fn bed_with_a_falling_sphere(under: usize, speed: f64) -> World {
    let mut w = World::on_floor(Material::default()).unwrap();
    let r = 0.0065;
    w.add_sphere_stack(r, MaterialId::from_index(0), [5, 5, 4])
        .unwrap();
    let mut st = stepper(ImpactScope::WholeNetwork, 20);
    for _ in 0..100 {
        st.step(&mut w).unwrap();
    }
    let top = w.positions()[under] + Vec3::new(0.0, 0.0, 2.0 * r + 1e-4);
    let falling = Velocity6::new(Vec3::new(0.0, 0.0, -speed), Vec3::zeros());
    let ball = BodyDesc::sphere(r, MaterialId::from_index(0), top).unwrap();
    w.add_body(ball.with_velocity(falling)).unwrap();
    w
}

fn stepper(scope: ImpactScope, impact_iterations: usize) -> Stepper {
    let settings = StepSettings {
        impact_scope: scope,
        impact_iterations,
        ..StepSettings::default()
    };
    let pgs = ProjectedGaussSeidel::with_stopping(Stopping::iterations(50)).unwrap();
    Stepper::new(settings, Box::new(pgs), Box::new(ColdStart)).unwrap()
}

/// A sphere dropped on a resting bed, both impact stages with 2000 sweeps
/// to 1e-10. At 0.5 and 1 m/s the impulse runs down one column: the set
/// is those 5 contacts of 241, and the step ends with the whole-network
/// stage's velocities to round-off (measured 1.4e-11 and 5.7e-11 m/s;
/// bound 10x the larger). At 2 m/s on a corner the set passes a quarter
/// of the network and becomes the whole network, whose solve stops at its
/// 2000 sweeps in both runs, from different iterates (measured 1.5e-4 m/s;
/// bound 10x).
#[test]
fn active_set_agrees_with_the_whole_network() {
    let join_velocity = 5e-4;
    for (under, speed, local, bound) in [
        (80, 1.0, true, 5.7e-10),
        (84, 0.5, true, 5.7e-10),
        (99, 2.0, false, 1.5e-3),
    ] {
        let world = bed_with_a_falling_sphere(under, speed);
        let mut whole = (world.clone(), stepper(ImpactScope::WholeNetwork, 2000));
        let mut active = (
            world,
            stepper(ImpactScope::ActiveSet { join_velocity }, 2000),
        );
        let s_whole = whole.1.step(&mut whole.0).unwrap();
        let s_active = active.1.step(&mut active.0).unwrap();
        assert!(s_whole.impacts >= 1 && s_active.impacts == s_whole.impacts);
        assert_eq!(s_whole.impact_contacts, s_whole.contacts);
        let diff = whole
            .0
            .velocities()
            .iter()
            .zip(active.0.velocities())
            .map(|(a, b)| {
                (a.linear - b.linear)
                    .norm()
                    .max((a.angular - b.angular).norm() * 0.0065)
            })
            .fold(0.0f64, f64::max);
        println!(
            "under {under}, {speed} m/s: set {} of {} contacts, {} sweeps (whole {}), largest velocity difference {diff:e} m/s",
            s_active.impact_contacts,
            s_active.contacts,
            s_active.impact_iterations,
            s_whole.impact_iterations
        );
        if local {
            assert_eq!(s_active.impact_contacts, 5);
        } else {
            assert_eq!(s_active.impact_contacts, s_active.contacts);
        }
        assert!(diff <= bound, "{diff:e}");
    }
}

/// A join velocity that is not positive is refused, naming the field.
#[test]
fn a_join_velocity_must_be_positive() {
    for bad in [0.0, -1.0, f64::NAN] {
        let settings = StepSettings {
            impact_scope: ImpactScope::ActiveSet { join_velocity: bad },
            ..StepSettings::default()
        };
        match settings.validate() {
            Err(StepError::InvalidSettings { field, .. }) => {
                assert_eq!(field, "impact_scope.join_velocity")
            }
            other => panic!("{bad}: {other:?}"),
        }
    }
}

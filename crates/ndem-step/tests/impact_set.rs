//! The impact stage on an active set (`ImpactScope::ActiveSet`) against
//! the whole-network impact stage of the papers' stepper.

use ndem_math::{Material, Vec3, Velocity6};
use ndem_solve::{ColdStart, ProjectedGaussSeidel, SolverStatus, Stopping};
use ndem_step::*;

/// The stack's sphere at the top layer's corner nearest the origin (the
/// floor is body 0, the stack's x index runs fastest): a row of five
/// spheres lies from it along x.
const TOP_CORNER: usize = 1 + 5 * 5 * 3;

/// A 5 × 5 × 4 stack of spheres (d = 13 mm) settled on the floor, and a
/// sphere above body `under` falling at `speed`, 0.1 mm above it: it
/// impacts on the next step.
fn bed_with_a_falling_sphere(under: usize, speed: f64) -> World {
    bed_with_a_sphere(under, speed, Motion::Dynamic, -Vec3::z())
}

/// [`bed_with_a_falling_sphere`] with the sphere's motion and its
/// direction of travel given: it starts 0.1 mm from body `target`, on the
/// side `-direction`.
fn bed_with_a_sphere(target: usize, speed: f64, motion: Motion, direction: Vec3) -> World {
    let mut w = World::on_floor(Material::default()).unwrap();
    let r = 0.0065;
    w.add_sphere_stack(r, MaterialId::from_index(0), [5, 5, 4])
        .unwrap();
    let mut st = stepper(ImpactScope::WholeNetwork, 20);
    for _ in 0..100 {
        st.step(&mut w).unwrap();
    }
    let top = w.positions()[target] - direction * (2.0 * r + 1e-4);
    let falling = Velocity6::new(direction * speed, Vec3::zeros());
    let mut ball = BodyDesc::sphere(r, MaterialId::from_index(0), top).unwrap();
    ball.motion = motion;
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

/// One step of `world` with each impact stage (2000 sweeps to 1e-10): the
/// whole network's world and statistics, then the active set's.
fn step_both(world: World, join_velocity: f64) -> (World, StepStats, World, StepStats) {
    let mut whole = world.clone();
    let s_whole = stepper(ImpactScope::WholeNetwork, 2000)
        .step(&mut whole)
        .unwrap();
    let mut active = world;
    let s_active = stepper(ImpactScope::ActiveSet { join_velocity }, 2000)
        .step(&mut active)
        .unwrap();
    (whole, s_whole, active, s_active)
}

/// The largest difference between two worlds' body velocities \[m/s\]:
/// linear, or angular times the spheres' radius (6.5 mm).
fn largest_velocity_difference(a: &World, b: &World) -> f64 {
    a.velocities()
        .iter()
        .zip(b.velocities())
        .map(|(a, b)| {
            (a.linear - b.linear)
                .norm()
                .max((a.angular - b.angular).norm() * 0.0065)
        })
        .fold(0.0f64, f64::max)
}

/// A sphere dropped on a resting bed, both impact stages with 2000 sweeps
/// to 1e-10. At 0.5 and 1 m/s the impulse runs down one column: the set
/// is those 5 contacts of 241, and the step ends with the whole-network
/// stage's velocities to round-off (measured 3.1e-11 and 3.5e-11 m/s;
/// bound 10x the larger). At 2 m/s on a corner the set passes a quarter
/// of the network and gives way to the whole-network stage from `λ = 0`:
/// the step is the whole-network step bit for bit, with the same status
/// (its solve stops at its 2000 sweeps) and the set's rounds' sweeps on
/// top.
#[test]
fn active_set_agrees_with_the_whole_network() {
    let join_velocity = 5e-4;
    for (under, speed, local, bound) in [
        (80, 1.0, true, 3.5e-10),
        (84, 0.5, true, 3.5e-10),
        (99, 2.0, false, 0.0),
    ] {
        let world = bed_with_a_falling_sphere(under, speed);
        let (whole, s_whole, active, s_active) = step_both(world, join_velocity);
        assert!(s_whole.impacts >= 1 && s_active.impacts == s_whole.impacts);
        assert_eq!(s_whole.impact_contacts, s_whole.contacts);
        let diff = largest_velocity_difference(&whole, &active);
        println!(
            "under {under}, {speed} m/s: set {} of {} contacts, {} sweeps (whole {}), largest velocity difference {diff:e} m/s, status {:?} (whole {:?})",
            s_active.impact_contacts,
            s_active.contacts,
            s_active.impact_iterations,
            s_whole.impact_iterations,
            s_active.impact_status,
            s_whole.impact_status
        );
        if local {
            assert_eq!(s_active.impact_contacts, 5);
        } else {
            assert_eq!(s_active.impact_contacts, s_active.contacts);
            assert_eq!(s_active.impact_status, s_whole.impact_status);
            assert!(s_active.impact_iterations > s_whole.impact_iterations);
            assert_eq!(whole.velocities(), active.velocities());
        }
        assert!(diff <= bound, "{diff:e}");
    }
}

/// A kinematic sphere driven at 1 m/s into the side of the bed's top
/// layer: on the set's problem, whose bodies are numbered apart from the
/// world's, the driven body keeps its prescribed velocity and its infinite
/// mass, the energy guard accepts both steps, both impact solves converge
/// to 1e-10, and the steps end with the same velocities to the solves'
/// tolerance (measured 6.2e-10 m/s, the set the 5 contacts of the pushed
/// row; bound 10x).
#[test]
fn a_driven_body_pushes_the_set_as_it_pushes_the_whole_network() {
    let world = bed_with_a_sphere(TOP_CORNER, 1.0, Motion::Kinematic, Vec3::x());
    let (whole, s_whole, active, s_active) = step_both(world, 5e-4);
    assert!(s_whole.impacts >= 1 && s_active.impacts == s_whole.impacts);
    assert!(
        s_active.impact_contacts < s_active.contacts / 4,
        "the set held"
    );
    let diff = largest_velocity_difference(&whole, &active);
    println!(
        "set {} of {} contacts, largest velocity difference {diff:e} m/s",
        s_active.impact_contacts, s_active.contacts
    );
    assert_eq!(s_whole.impact_status, Some(SolverStatus::Converged));
    assert_eq!(s_active.impact_status, Some(SolverStatus::Converged));
    assert!(diff <= 6.2e-9, "{diff:e}");
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

/// A settled `[nx, ny, nz]` stack with spheres falling on top bodies
/// `targets` at `speeds`, each shifted sideways by `offsets` (fractions of
/// the radius). The first is 0.1 mm from contact along the line of the
/// two centres (at offsets up to 0.85 r it approaches at 0.9 of its speed,
/// above `v_imp` from 0.1 m/s): it impacts on the next step; each further
/// one starts 2.1 r higher than the last.
fn stack_with_impacts(
    cells: [usize; 3],
    hits: &[(usize, f64, [f64; 2])],
    settled: &mut std::collections::HashMap<[usize; 3], World>,
) -> World {
    let r = 0.0065;
    let mut w = settled
        .entry(cells)
        .or_insert_with(|| {
            let mut w = World::on_floor(Material::default()).unwrap();
            w.add_sphere_stack(r, MaterialId::from_index(0), cells)
                .unwrap();
            let mut st = stepper(ImpactScope::WholeNetwork, 20);
            for _ in 0..100 {
                st.step(&mut w).unwrap();
            }
            w
        })
        .clone();
    let layer = cells[0] * cells[1];
    let first_top = 1 + layer * (cells[2] - 1);
    for (k, &(target, speed, [dx, dy])) in hits.iter().enumerate() {
        let under = first_top + target % layer;
        // each falling sphere a little higher than the last, so that two
        // on one target do not overlap
        let reach: f64 = 2.0 * r + 1e-4;
        let sideways = (dx * dx + dy * dy) * r * r;
        let lift = (reach * reach - sideways).sqrt() + 2.1 * r * k as f64;
        let top = w.positions()[under] + Vec3::new(dx * r, dy * r, lift);
        let falling = Velocity6::new(Vec3::new(0.0, 0.0, -speed), Vec3::zeros());
        let ball = BodyDesc::sphere(r, MaterialId::from_index(0), top).unwrap();
        w.add_body(ball.with_velocity(falling)).unwrap();
    }
    w
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
    /// Random stacks hit by one to three spheres at 0.1-2 m/s, off centre,
    /// both impact stages at 2000 sweeps to 1e-10 and a join velocity
    /// `v_j` = 5e-4 m/s: the set never holds more than the network, and
    /// the active set's step ends within `c v_j` of the whole-network
    /// step's velocities, `c = max(1 + μ, 2.5 (μ + μ_r))` = 3.075 for this
    /// material: a row left out (violated by at most `v_j`) changes a
    /// sphere by up to `c v_j` through the normal, friction and rolling
    /// impulses the whole network would give it (`docs/theory.md`,
    /// "Active set"). Measured over 12 seeds (the CI seed
    /// `PROPTEST_RNG_SEED=20261123` and 1-11): largest 6.3e-4 m/s (1.3
    /// `v_j`, 0.41 of the bound; a set of 5 of 189 contacts), under the
    /// CI seed 3.0e-4 m/s; most solves of either stage stop at their 2000
    /// sweeps short of 1e-10.
    #[test]
    fn active_set_agrees_with_the_whole_network_within_c_times_the_join_velocity(
        cells in (3usize..6, 3usize..6, 2usize..5),
        hits in proptest::collection::vec(
            (0usize..36, 0.1f64..2.0, (-0.6f64..0.6, -0.6f64..0.6)),
            1..4,
        ),
    ) {
        thread_local! {
            static SETTLED: std::cell::RefCell<std::collections::HashMap<[usize; 3], World>> =
                Default::default();
        }
        let hits: Vec<(usize, f64, [f64; 2])> =
            hits.into_iter().map(|(t, s, (x, y))| (t, s, [x, y])).collect();
        let world = SETTLED.with(|s| {
            stack_with_impacts([cells.0, cells.1, cells.2], &hits, &mut s.borrow_mut())
        });
        let join_velocity = 5e-4;
        let (whole, s_whole, active, s_active) = step_both(world, join_velocity);
        proptest::prop_assert!(s_whole.impacts >= 1);
        proptest::prop_assert_eq!(s_active.impacts, s_whole.impacts);
        proptest::prop_assert!(s_active.impact_contacts <= s_whole.impact_contacts);
        let diff = largest_velocity_difference(&whole, &active);
        println!(
            "{cells:?} {} hits: set {} of {} contacts, difference {diff:e} m/s, {:?} {:?}",
            hits.len(),
            s_active.impact_contacts,
            s_active.contacts,
            s_whole.impact_status,
            s_active.impact_status,
        );
        let m = Material::default();
        let c = (1.0 + m.friction).max(2.5 * (m.friction + m.rolling_resistance));
        proptest::prop_assert!(diff <= c * join_velocity, "{diff:e}");
    }
}

//! A merged block resting on the floor, solved to a tolerance.

use ndem_math::Material;
use ndem_reduce::{Reducer, ReductionSettings};
use ndem_solve::{HistoryWarmStart, ProjectedGaussSeidel, SolverStatus, Stopping};
use ndem_step::{MaterialId, StepSettings, Stepper, World};

fn stepper() -> Stepper {
    let pgs = ProjectedGaussSeidel::with_stopping(Stopping::to_tolerance(3000, 1e-6)).unwrap();
    Stepper::new(
        StepSettings::papers(),
        Box::new(pgs),
        Box::new(HistoryWarmStart::default()),
    )
    .unwrap()
}

/// A 10 × 10 × 8 block of spheres (d = 13 mm) settles, then merges into
/// one aggregate resting on the floor on 100 contacts. That contact set is
/// redundant: warm-started PGS shifts impulses among the floor contacts
/// with updates far above the tolerance while its residual is already
/// within it. Early stopping must still stop, because the residual is
/// checked on a geometric schedule and not only when the updates are
/// small. Without that schedule the reduced solves took 26, 213, 703 and
/// then 3000 sweeps (the cap) per step, each converged at the end; with it
/// they take 20. Bound: 100 sweeps (the full block needs 99).
#[test]
fn reduced_solve_to_tolerance_stops_early() {
    let r = 0.0065;
    let mut w = World::on_floor(Material::default()).unwrap();
    w.add_sphere_stack(r, MaterialId::from_index(0), [10, 10, 8])
        .unwrap();
    let mut full = stepper();
    for _ in 0..40 {
        full.step(&mut w).unwrap();
    }
    let mut reduced = stepper();
    assert!(reduced.set_history(full.history().cloned().unwrap_or_default()));
    reduced.set_clock(full.time(), full.step_count());
    reduced.set_hooks(Box::new(
        Reducer::new(ReductionSettings::default()).unwrap(),
    ));
    let mut sweeps = Vec::new();
    for _ in 0..8 {
        let s = reduced.step(&mut w).unwrap();
        assert_eq!(s.status, SolverStatus::Converged);
        sweeps.push(s.iterations);
    }
    let level = reduced.hooks_as::<Reducer>().unwrap().stats().level;
    println!("h = {level}, sweeps per step {sweeps:?}");
    assert!(level > 0.99, "{level}");
    assert!(sweeps[1..].iter().all(|&n| n <= 100), "{sweeps:?}");
}

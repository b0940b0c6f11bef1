//! An iterate that overflows is reported, never a panic: with `μ = 0` or
//! `μ_r = 0` the bounds `μ s_n λ_n` of the friction, rolling and twisting
//! rows are `0 · ∞ = NaN` once `λ_n` overflows, where `f64::clamp` panics
//! (it did in every PGS variant before session 40's `ClampTo`).

use ndem_math::{InverseMass, Velocity6};
use ndem_solve::testing::*;
use ndem_solve::*;

/// One contact between two bodies made 10¹² times heavier than the
/// generated packing's (`D` about 10⁻¹² of its value, so `ω / D` is
/// large) with `b_n = −10³⁰⁸`, `μ = μ_r = 0`: every number finite and
/// valid, and the first normal candidate overflows to `+∞`.
fn overflowing(set: FrictionSet) -> ContactProblem {
    let good = sphere_packing(&PackingSpec {
        cells: [2, 1, 1],
        ..PackingSpec::default()
    })
    .expect("a valid spec");
    let mut contact = good.contacts().get(0).expect("one contact");
    let heavy: Vec<InverseMass> = good
        .inverse_mass()
        .iter()
        .map(|m| InverseMass {
            inv_mass: m.inv_mass * 1e-12,
            inv_inertia: m.inv_inertia * 1e-12,
        })
        .collect();
    let bodies = heavy.len();
    let mut problem = ContactProblem::new(
        heavy,
        vec![Velocity6::ZERO; bodies],
        ContactRows::NormalFrictionRolling,
        set,
        5e-3,
    )
    .unwrap();
    contact.rhs[0] = -1e308;
    contact.friction = 0.0;
    contact.rolling_arm = 0.0;
    problem.push_contact(contact).unwrap();
    problem
}

fn solvers() -> Vec<Box<dyn Solver>> {
    let pgs = |order, variant| {
        let settings = PgsSettings {
            order,
            variant,
            ..PgsSettings::default()
        };
        Box::new(ProjectedGaussSeidel::new(settings).unwrap()) as Box<dyn Solver>
    };
    vec![
        pgs(ContactOrder::Given, PgsVariant::RowWise),
        pgs(ContactOrder::Coloured, PgsVariant::RowWise),
        pgs(ContactOrder::Given, PgsVariant::Blocked),
        pgs(ContactOrder::Coloured, PgsVariant::Blocked),
        Box::new(ProjectedJacobi::default()),
        Box::new(Apgd::default()),
    ]
}

#[test]
fn an_overflowing_iterate_is_a_divergence_not_a_panic() {
    for set in [FrictionSet::Box, FrictionSet::Disk] {
        for mut solver in solvers() {
            let problem = overflowing(set);
            let mut lambda = vec![0.0; problem.len()];
            let mut velocity = problem.free_velocity().to_vec();
            let outcome = solver.solve(&problem, &mut lambda, &mut velocity);
            assert!(
                matches!(outcome, Err(SolveError::Diverged { row: 0, .. })),
                "{set:?} {}: {outcome:?}",
                solver.name()
            );
        }
    }
    // the De Saxcé fixed point (disk only) says so in its status
    let problem = overflowing(FrictionSet::Disk);
    let mut lambda = vec![0.0; problem.len()];
    let mut velocity = problem.free_velocity().to_vec();
    let mut coulomb = CoulombApgd::new(CoulombApgdSettings::default()).unwrap();
    let report = coulomb.solve(&problem, &mut lambda, &mut velocity).unwrap();
    assert_eq!(report.status, SolverStatus::NumericalError);
}

#[test]
fn projecting_an_infinite_normal_multiplier_does_not_panic() {
    for set in [FrictionSet::Box, FrictionSet::Disk] {
        let problem = overflowing(set);
        let contact = problem.contacts().get(0).unwrap();
        let start = [f64::INFINITY, 1.0, -1.0, 0.5, 0.25, 2.0];
        let mut one = start;
        problem::project_contact(&contact, set, &mut one);
        let mut all = start;
        problem.project(&mut all).unwrap();
        for lambda in [one, all] {
            // the infinite λ_n is what the caller sees; the rows whose
            // bound is 0 · ∞ (all five: μ = μ_r = 0) are left as they are
            let bits = |l: [f64; 6]| l.map(f64::to_bits);
            assert_eq!(bits(lambda), bits(start), "{set:?}");
        }
    }
}

//! Compatible contact dynamics: the beam's analytic forces and properties
//! of the truss solution.

use ndem_math::Velocity6;
use ndem_solve::*;
use ndem_testkit::generate::beam_problem;
use ndem_testkit::strategies::*;
use proptest::prelude::*;

fn solve(p: &ContactProblem, order: ContactOrder, iterations: usize) -> (Vec<f64>, Vec<Velocity6>) {
    let (mut lam, mut vel) = p.cold_start();
    ProjectedGaussSeidel::new(PgsSettings {
        stopping: Stopping::iterations(iterations),
        order,
        ..Default::default()
    })
    .unwrap()
    .solve(p, &mut lam, &mut vel)
    .unwrap();
    (lam, vel)
}

#[test]
fn beam_forces_match_the_analytic_compatible_forces() {
    let p = beam_problem(10.0).expect("a valid spec");
    let (_, vel) = solve(&p, ContactOrder::Given, 2000);
    for (k, expected) in [
        ([1.0, 1.0, 1.0], [10.0 / 3.0; 3]),
        ([1.0, 3.0, 1.0], [2.0, 6.0, 2.0]),
    ] {
        let sol = compatible_forces(&p, &vel, &k, &TrussSettings::default()).unwrap();
        assert!(sol.converged, "{sol:?}");
        for i in 0..3 {
            assert!(
                (sol.forces[i] - expected[i]).abs() <= 1e-6 * expected[i],
                "k = {k:?}: {:?}",
                sol.forces
            );
        }
    }
    // Hertzian law, uniform stiffness: still symmetric thirds
    let sol = compatible_forces(
        &p,
        &vel,
        &[1.0; 3],
        &TrussSettings {
            exponent: 1.5,
            ..Default::default()
        },
    )
    .unwrap();
    for f in &sol.forces {
        assert!(
            (f - 10.0 / 3.0).abs() <= 1e-6 * 10.0 / 3.0,
            "{:?}",
            sol.forces
        );
    }
}

#[test]
fn pgs_beam_answer_depends_on_contact_order() {
    let p = beam_problem(10.0).expect("a valid spec");
    let dt = p.dt();
    let forces = |o| {
        solve(&p, o, 50)
            .0
            .iter()
            .map(|l| l / dt)
            .collect::<Vec<_>>()
    };
    let mut answers = vec![forces(ContactOrder::Given), forces(ContactOrder::Reversed)];
    for seed in 0..8 {
        answers.push(forces(ContactOrder::Shuffled { seed }));
    }
    for f in &answers {
        // every answer carries the weight
        assert!((f.iter().sum::<f64>() - 10.0).abs() < 1e-3, "{f:?}");
    }
    let spread = (0..3)
        .map(|i| {
            let (lo, hi) = answers
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), f| {
                    (lo.min(f[i]), hi.max(f[i]))
                });
            hi - lo
        })
        .fold(0.0f64, f64::max);
    assert!(
        spread > 0.1,
        "PGS answers do not depend on the order: {answers:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// On random frictionless packings the truss solution is non-negative
    /// and in equilibrium with the load.
    #[test]
    fn truss_solution_is_feasible(problem in arb_packing(ContactRows::Normal, FrictionSet::Box), hertz in any::<bool>(), seed in any::<u64>()) {
        prop_assume!(!problem.contacts().is_empty());
        let (_, vel) = solve(&problem, ContactOrder::Given, 5000);
        let mut s = seed | 1;
        let k: Vec<f64> = problem.contacts().iter().map(|_| { s ^= s << 13; s ^= s >> 7; s ^= s << 17; 0.5 + (s % 1000) as f64 / 500.0 }).collect();
        let settings = TrussSettings { exponent: if hertz { 1.5 } else { 1.0 }, tolerance: 1e-9, ..Default::default() };
        let sol = compatible_forces(&problem, &vel, &k, &settings).unwrap();
        prop_assert!(sol.forces.iter().all(|&f| f >= 0.0));
        prop_assert!(sol.residual <= 1e-8, "{sol:?}");
    }
}

/// A statically determinate packing (a column: each contact's force is fixed
/// by equilibrium) gives the CD forces whatever the stiffnesses.
#[test]
fn determinate_packing_equals_cd_solution() {
    let p = sphere_packing(&PackingSpec {
        cells: [1, 1, 6],
        rows: ContactRows::Normal,
        jitter: 0.0,
        ..PackingSpec::default()
    })
    .expect("a valid spec");
    let (lam, vel) = solve(&p, ContactOrder::Given, 20_000);
    let cd: Vec<f64> = p
        .contacts()
        .iter()
        .zip(&lam)
        .map(|(c, l)| c.jacobian.normal_scale * l / p.dt())
        .collect();
    for k in [
        vec![1.0; cd.len()],
        (0..cd.len()).map(|i| 1.0 + i as f64).collect(),
    ] {
        let sol = compatible_forces(&p, &vel, &k, &TrussSettings::default()).unwrap();
        for (a, b) in sol.forces.iter().zip(&cd) {
            assert!(
                (a - b).abs() <= 1e-6 * b.abs().max(1e-9),
                "{:?} vs {:?}",
                sol.forces,
                cd
            );
        }
    }
}

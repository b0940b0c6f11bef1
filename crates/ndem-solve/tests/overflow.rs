//! An iterate that overflows is reported, never a panic: with `μ = 0` or
//! `μ_r = 0` the bounds `μ s_n λ_n` of the friction, rolling and twisting
//! rows are `0 · ∞ = NaN` once `λ_n` overflows, where `f64::clamp` panics
//! (the sweeps clamp with `ClampTo`, which does not).

use ndem_math::{InverseMass, Velocity6};
use ndem_solve::*;
use ndem_testkit::strategies::*;

/// The generated packing of `cells` with its bodies made 10¹² times
/// heavier (`D` about 10⁻¹² of its value, so `ω / D` is large), its
/// contacts apart: the problem to push them into holds none.
fn heavy_packing(cells: [usize; 3], set: FrictionSet) -> (ContactProblem, Vec<Contact>) {
    let good = sphere_packing(&PackingSpec {
        cells,
        ..PackingSpec::default()
    })
    .expect("a valid spec");
    let contacts = (0..good.contacts().len())
        .map(|i| good.contacts().get(i).expect("in range"))
        .collect();
    let heavy: Vec<InverseMass> = good
        .inverse_mass()
        .iter()
        .map(|m| InverseMass {
            inv_mass: m.inv_mass * 1e-12,
            inv_inertia: m.inv_inertia * 1e-12,
        })
        .collect();
    let bodies = heavy.len();
    let problem = ContactProblem::new(
        heavy,
        vec![Velocity6::ZERO; bodies],
        ContactRows::NormalFrictionRolling,
        set,
        5e-3,
    )
    .unwrap();
    (problem, contacts)
}

/// `contact` with `b_n = −10³⁰⁸` and `μ = μ_r = 0`: between the heavy
/// bodies every number is finite and valid, and its first normal
/// candidate overflows to `+∞`.
fn made_to_overflow(mut contact: Contact) -> Contact {
    contact.rhs[0] = -1e308;
    contact.friction = 0.0;
    contact.rolling_arm = 0.0;
    contact
}

/// One contact between two heavy bodies, made to overflow.
fn overflowing(set: FrictionSet) -> ContactProblem {
    let (mut problem, contacts) = heavy_packing([2, 1, 1], set);
    problem.push_contact(made_to_overflow(contacts[0])).unwrap();
    problem
}

/// Two contacts between heavy bodies that name four different spheres:
/// the first ordinary, the second made to overflow. PGS visits two such
/// contacts together ([`PgsVariant::passes`] 1: the given order's pairs
/// along the order, a coloured lane's pairs within its block), so the
/// overflow is in the second lane of the pair.
fn overflowing_second_of_two(set: FrictionSet) -> ContactProblem {
    let (mut problem, contacts) = heavy_packing([4, 1, 1], set);
    let first = contacts[0];
    let second = *contacts
        .iter()
        .find(|c| c.bodies.iter().all(|b| !first.bodies.contains(b)))
        .expect("a contact of two other spheres");
    problem.push_contact(first).unwrap();
    problem.push_contact(made_to_overflow(second)).unwrap();
    problem
}

/// The four PGS variants: given and coloured order, row-wise and blocked.
fn pgs_solvers() -> Vec<Box<dyn Solver>> {
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
    ]
}

fn solvers() -> Vec<Box<dyn Solver>> {
    let mut all = pgs_solvers();
    all.push(Box::new(ProjectedJacobi::default()));
    all.push(Box::new(Apgd::default()));
    all
}

/// Asserts that every solver of `solvers`, on `problem` with each
/// friction set, returns `Diverged` at `row`.
fn assert_diverges_at(
    problem: fn(FrictionSet) -> ContactProblem,
    solvers: fn() -> Vec<Box<dyn Solver>>,
    row: usize,
) {
    for set in [FrictionSet::Box, FrictionSet::Disk] {
        for mut solver in solvers() {
            let problem = problem(set);
            let (mut lambda, mut velocity) = problem.cold_start();
            let outcome = solver.solve(&problem, &mut lambda, &mut velocity);
            assert!(
                matches!(outcome, Err(SolveError::Diverged { row: r, .. }) if r == row),
                "{set:?} {}: {outcome:?}",
                solver.name()
            );
        }
    }
}

#[test]
fn an_overflowing_iterate_is_a_divergence_not_a_panic() {
    assert_diverges_at(overflowing, solvers, 0);
    // the De Saxcé fixed point (disk only) says so in its status
    let problem = overflowing(FrictionSet::Disk);
    let (mut lambda, mut velocity) = problem.cold_start();
    let mut coulomb = CoulombApgd::new(CoulombApgdSettings::default()).unwrap();
    let report = coulomb.solve(&problem, &mut lambda, &mut velocity).unwrap();
    assert_eq!(report.status, SolverStatus::NumericalError);
}

/// The overflow is found in the second contact of a pair visited
/// together, not only in a contact visited alone: the first non-finite
/// row is the second contact's normal row (row 6).
#[test]
fn an_overflow_in_the_second_of_two_contacts_visited_together_is_a_divergence() {
    assert_diverges_at(overflowing_second_of_two, pgs_solvers, 6);
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

/// On several threads a solve without early stop sweeps without a
/// barrier between its sweeps, so a thread may be in the next sweep while
/// another's block overflows. The run still ends at the sweep that made
/// the value non-finite: every thread count returns `Diverged` for the
/// same sweep as one thread (the overflowing contact, three quarters
/// along the problem, is in the last thread's range), without waiting
/// forever on the thread that stopped, and the row it names is
/// non-finite in the caller's `λ`.
#[test]
fn a_divergence_ends_a_run_of_sweeps_on_any_thread_count() {
    let (mut problem, contacts) = heavy_packing([14, 14, 8], FrictionSet::Box);
    let bad = contacts.len() * 3 / 4;
    for (i, &c) in contacts.iter().enumerate() {
        let c = if i == bad { made_to_overflow(c) } else { c };
        problem.push_contact(c).unwrap();
    }
    assert!(problem.contacts().len() > 4096);
    let solve = move |threads: usize| {
        let mut pgs = ProjectedGaussSeidel::new(PgsSettings {
            parallel_min_contacts: 0,
            ..PgsSettings::coloured(Stopping::iterations(30), threads)
        })
        .unwrap();
        let (mut lambda, mut velocity) = problem.cold_start();
        let outcome = pgs.solve(&problem, &mut lambda, &mut velocity);
        match outcome {
            Err(SolveError::Diverged { iteration, row, .. }) => (iteration, row, lambda),
            other => panic!("{threads} threads: {other:?}"),
        }
    };
    let (iteration, row, lambda) = solve(1);
    assert_eq!(iteration, 1);
    assert!(!lambda[row].is_finite());
    // a thread left waiting on the one that stopped would hang the solve:
    // the solves run on a thread of their own, and the test fails when
    // they are not done within a minute (they take well under a second)
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for threads in [2, 3] {
            for _ in 0..20 {
                let _ = done.send((threads, solve(threads)));
            }
        }
    });
    for _ in 0..40 {
        let (threads, (it, r, lambda)) = finished
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("a diverging solve on several threads ends");
        assert_eq!(it, iteration, "{threads} threads");
        assert!(!lambda[r].is_finite(), "{threads} threads: row {r}");
    }
}

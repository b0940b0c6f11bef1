//! Property tests of projected Gauss-Seidel and the warm-start policies.

use ndem_math::Velocity6;
use ndem_solve::reference::solve_frictionless;
use ndem_solve::*;
use ndem_testkit::strategies::*;
use proptest::prelude::*;

fn solve_to(
    problem: &ContactProblem,
    settings: PgsSettings,
    lambda: &mut [f64],
    velocity: &mut [Velocity6],
) -> SolveReport {
    let mut pgs = ProjectedGaussSeidel::new(settings).unwrap();
    pgs.solve(problem, lambda, velocity).unwrap()
}

/// A packing of `nx × 2 × nz` cells compressed by 0.01 and its answer
/// after `sweeps` PGS sweeps from a cold start, and the same packing
/// compressed by `0.01 + dc` (at least 0.001): the problem a warm start
/// records, what it records, and the next step's problem.
fn solved_and_compressed(
    [nx, nz]: [usize; 2],
    seed: u64,
    dc: f64,
    sweeps: usize,
) -> (ContactProblem, Vec<f64>, ContactProblem) {
    let spec = PackingSpec {
        cells: [nx, 2, nz],
        compression: 0.01,
        seed,
        ..PackingSpec::default()
    };
    let first = sphere_packing(&spec).expect("a valid spec");
    let second = sphere_packing(&PackingSpec {
        compression: (0.01 + dc).max(0.001),
        ..spec
    })
    .expect("a valid spec");
    let (mut lam, mut vel) = first.cold_start();
    let settings = PgsSettings {
        stopping: Stopping::iterations(sweeps),
        ..PgsSettings::default()
    };
    solve_to(&first, settings, &mut lam, &mut vel);
    (first, lam, second)
}

fn tight(variant: PgsVariant) -> PgsSettings {
    PgsSettings {
        stopping: Stopping::to_tolerance(30_000, 1e-11),
        variant,
        ..PgsSettings::default()
    }
}

fn check_solution(
    problem: &ContactProblem,
    variant: PgsVariant,
    rep: &SolveReport,
    mut lam: Vec<f64>,
    mut vel: Vec<Velocity6>,
) -> Result<(), TestCaseError> {
    // bounds hold: exactly for the box, to round-off for the disk
    let mut projected = lam.clone();
    problem.project(&mut projected).unwrap();
    match problem.friction_set() {
        FrictionSet::Box => prop_assert_eq!(&projected, &lam),
        FrictionSet::Disk => {
            for (a, b) in projected.iter().zip(&lam) {
                prop_assert!((a - b).abs() <= 1e-14 * a.abs().max(b.abs()));
            }
        }
    }
    // complementarity / stationarity to tolerance (velocity units)
    prop_assert!(rep.residuals.max < 1e-8, "{:?}", rep.residuals);
    // the returned velocity is v* + M^-1 G^T lambda, as formed by
    // velocity_from (PGS forms it for its last check and returns it)
    let mut v2 = vec![Velocity6::ZERO; problem.body_count()];
    problem.velocity_from(&lam, &mut v2).unwrap();
    prop_assert!(vel == v2);
    // ten more sweeps from the solution leave it (almost) unchanged
    let before = lam.clone();
    let more = PgsSettings {
        stopping: Stopping::iterations(10),
        variant,
        ..PgsSettings::default()
    };
    solve_to(problem, more, &mut lam, &mut vel);
    let scale = before
        .iter()
        .fold(0.0f64, |a, &b| a.max(b.abs()))
        .max(1e-300);
    for (a, b) in before.iter().zip(&lam) {
        prop_assert!((a - b).abs() <= 1e-9 * scale);
    }
    Ok(())
}

fn variants() -> impl Strategy<Value = PgsVariant> {
    prop_oneof![Just(PgsVariant::RowWise), Just(PgsVariant::Blocked)]
}

fn sets() -> impl Strategy<Value = FrictionSet> {
    prop_oneof![Just(FrictionSet::Box), Just(FrictionSet::Disk)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// With friction off, PGS (to 1e-11) agrees with the dense
    /// principal-pivoting LCP solution within 6e-9 of its largest entry:
    /// 9× the largest difference measured over the CI seed and seeds 1, 42
    /// and 987654321 (6.7e-10).
    #[test]
    fn frictionless_pgs_matches_dense_lcp(problem in arb_packing(ContactRows::Normal, FrictionSet::Box), variant in variants()) {
        let exact = solve_frictionless(&problem).unwrap();
        let (mut lam, mut vel) = problem.cold_start();
        let rep = solve_to(&problem, tight(variant), &mut lam, &mut vel);
        prop_assert!(rep.converged());
        let scale = exact.iter().fold(0.0f64, |a, &b| a.max(b.abs())).max(1e-300);
        let error = exact.iter().zip(&lam).fold(0.0f64, |e, (a, b)| e.max((a - b).abs())) / scale;
        prop_assert!(error <= 6e-9, "off by {error:e}");
    }

    /// Random sparse mixed problems (unilateral and bilateral rows built
    /// from a CSR Jacobian) also match the dense reference: within 4.7e-11
    /// of its largest entry, 10× the largest difference measured over the
    /// same four seeds (4.7e-12).
    #[test]
    fn sparse_problems_match_dense_lcp(problem in arb_sparse_problem(0.05, 0.3).unwrap()) {
        let exact = solve_frictionless(&problem).unwrap();
        let (mut lam, mut vel) = problem.cold_start();
        let rep = solve_to(&problem, PgsSettings { stopping: Stopping::to_tolerance(200_000, 1e-12), ..PgsSettings::default() }, &mut lam, &mut vel);
        prop_assert!(rep.converged(), "{rep:?}");
        let scale = exact.iter().fold(0.0f64, |a, &b| a.max(b.abs())).max(1e-12);
        let error = exact.iter().zip(&lam).fold(0.0f64, |e, (a, b)| e.max((a - b).abs())) / scale;
        prop_assert!(error <= 4.7e-11, "off by {error:e}");
    }

    /// History warm starting on a slowly perturbed sequence of problems
    /// reaches the mean residual that cold starting reaches within 100 sweeps
    /// in fewer sweeps (the paper's setting: a fixed, small N_it).
    ///
    /// With β = 1 (pure history). With the paper's β = 0.85 the 15 % of the
    /// impulse that is dropped sits largely in the slow (rolling) modes and
    /// the lead can shrink to nothing by 100 sweeps on small packings; the
    /// β = 0.85 property below checks the lead in the first sweep instead.
    #[test]
    fn history_warm_start_beats_cold_on_perturbed_sequence(
        nx in 2usize..=4, nz in 2usize..=4, seed in any::<u64>(), dc in -2e-4f64..2e-4
    ) {
        let spec = PackingSpec { cells: [nx, 2, nz], compression: 0.01, seed, ..PackingSpec::default() };
        let first = sphere_packing(&spec).expect("a valid spec");
        let second = sphere_packing(&PackingSpec { compression: 0.01 + dc, ..spec }).expect("a valid spec");
        prop_assume!(first.contacts().len() == second.contacts().len());
        let settings = PgsSettings { stopping: Stopping::iterations(1000), ..PgsSettings::default() };
        let (mut lam, mut vel) = first.cold_start();
        solve_to(&first, settings, &mut lam, &mut vel);
        let mut history = ImpulseHistory::new();
        history.record(&first, &lam);

        let mut pgs = ProjectedGaussSeidel::new(PgsSettings { stopping: Stopping::iterations(100), ..PgsSettings::default() }).unwrap();
        let (mut lc, mut vc) = second.cold_start();
        let mut hc = ResidualHistory::new();
        pgs.solve_observed(&second, &mut lc, &mut vc, &mut hc).unwrap();
        let target = hc.entries.iter().map(|e| e.stats.mean).fold(f64::INFINITY, f64::min);
        prop_assume!(target > 1e-14);
        for beta in [1.0, 0.85] {
            let (mut lw, mut vw) = second.cold_start();
            let stats = HistoryWarmStart { beta, history: history.clone(), ..HistoryWarmStart::default() }.initialize(&second, &mut lw, &mut vw).unwrap();
            prop_assert_eq!(stats.cold, 0);
            let mut hw = ResidualHistory::new();
            pgs.solve_observed(&second, &mut lw, &mut vw, &mut hw).unwrap();
            if beta == 1.0 {
                let reached = hw.entries.iter().position(|e| e.stats.mean <= target).map(|i| i + 1);
                prop_assert!(reached.is_some_and(|k| k < 100), "warm reached {:?} (target {target:e})", reached);
            } else {
                let (w1, c1) = (hw.entries[0].stats.mean, hc.entries[0].stats.mean);
                prop_assert!(w1 < 0.5 * c1, "first sweep: warm {w1:e} vs cold {c1:e}");
            }
        }
    }

    /// The disk set bounds the tangential impulse magnitude; the box bounds
    /// each component.
    #[test]
    fn friction_sets_are_respected(problem in arb_packing(ContactRows::NormalFrictionRolling, FrictionSet::Disk)) {
        let (mut lam, mut vel) = problem.cold_start();
        solve_to(&problem, PgsSettings { stopping: Stopping::iterations(50), ..PgsSettings::default() }, &mut lam, &mut vel);
        for (c, l) in problem.contacts().iter().zip(lam.chunks_exact(6)) {
            let f = c.jacobian.normal_scale * l[0];
            prop_assert!(l[0] >= 0.0);
            prop_assert!((l[1] * l[1] + l[2] * l[2]).sqrt() <= c.friction * f * (1.0 + 1e-12) + 1e-300);
            prop_assert!((l[3] * l[3] + l[4] * l[4]).sqrt() <= c.rolling_arm * f * (1.0 + 1e-12) + 1e-300);
            prop_assert!(l[5].abs() <= c.rolling_arm * f * (1.0 + 1e-12) + 1e-300);
        }
    }

    /// Model-based warm start reproduces the static Hertz force for a
    /// resting contact and respects the bounds.
    #[test]
    fn model_warm_start_is_feasible(problem in arb_packing(ContactRows::NormalFrictionRolling, FrictionSet::Box)) {
        let (mut lam, mut vel) = problem.cold_start();
        ModelWarmStart.initialize(&problem, &mut lam, &mut vel).unwrap();
        let mut p = lam.clone();
        problem.project(&mut p).unwrap();
        prop_assert_eq!(&p, &lam);
        for (c, l) in problem.contacts().iter().zip(lam.chunks_exact(6)) {
            let expected = -problem.dt() * c.model.g / c.model.epsilon_n;
            prop_assert!((l[0] - expected).abs() <= 1e-12 * expected.abs());
        }
    }
}

#[test]
fn orders_give_permutations_and_change_indeterminate_answers() {
    let mut o = Vec::new();
    ContactOrder::Shuffled { seed: 7 }.fill(100, &mut o);
    let mut sorted = o.clone();
    sorted.sort();
    assert_eq!(sorted, (0..100).collect::<Vec<u32>>());
    let mut o2 = Vec::new();
    ContactOrder::Shuffled { seed: 7 }.fill(100, &mut o2);
    assert_eq!(o, o2);
    ContactOrder::Reversed.fill(4, &mut o);
    assert_eq!(o, vec![3, 2, 1, 0]);
}

#[test]
fn solves_are_bit_identical() {
    let problem = default_packing([6, 6, 4]);
    let run = || {
        let (mut lam, mut vel) = problem.cold_start();
        solve_to(
            &problem,
            PgsSettings {
                stopping: Stopping::iterations(30),
                order: ContactOrder::Shuffled { seed: 3 },
                ..PgsSettings::default()
            },
            &mut lam,
            &mut vel,
        );
        (lam, vel)
    };
    let (a, va) = run();
    let (b, vb) = run();
    assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
    assert_eq!(va, vb);
}

#[test]
fn observer_sees_every_iteration_and_residual_falls() {
    let problem = default_packing([3, 3, 5]);
    let (mut lam, mut vel) = problem.cold_start();
    let mut hist = ResidualHistory::new();
    let mut pgs = ProjectedGaussSeidel::with_stopping(Stopping::iterations(200)).unwrap();
    let rep = pgs
        .solve_observed(&problem, &mut lam, &mut vel, &mut hist)
        .unwrap();
    assert_eq!(hist.entries.len(), 200);
    assert_eq!(rep.iterations, 200);
    let first = hist.entries[0].stats.mean;
    let last = hist.entries[199].stats.mean;
    assert!(last < 0.1 * first, "mean residual {first} -> {last}");
    // the observer sees PGS's running velocity, the report evaluates
    // v* + M⁻¹Gᵀλ afresh: equal to round-off (measured 2.4e-14 relative;
    // tolerance 10x)
    let (h, r) = (hist.entries[199].stats, rep.residuals);
    let rel = ((h.mean - r.mean) / r.mean)
        .abs()
        .max(((h.max - r.max) / r.max).abs());
    println!("observer vs honest report: relative difference {rel:e}");
    assert!(rel <= 2.4e-13, "{h:?} vs {r:?}");
}

#[test]
fn bad_input_gives_typed_errors() {
    use ndem_math::{ContactKey, InverseMass, Vec3};
    let good = default_packing([2, 1, 1]);
    let c0 = good.contacts().get(0).expect("one contact");
    let mut p = ContactProblem::new(
        good.inverse_mass().to_vec(),
        good.free_velocity().to_vec(),
        ContactRows::NormalFrictionRolling,
        FrictionSet::Box,
        5e-3,
    )
    .unwrap();
    // negative Σ
    let mut c = c0;
    c.sigma[1] = -1.0;
    assert!(matches!(
        p.push_contact(c),
        Err(SolveError::OutOfRange {
            field: "contacts.sigma",
            ..
        })
    ));
    // μ < 0
    let mut c = c0;
    c.friction = -0.1;
    assert!(matches!(
        p.push_contact(c),
        Err(SolveError::OutOfRange {
            field: "contacts.friction",
            ..
        })
    ));
    // NaN in data
    let mut c = c0;
    c.rhs[0] = f64::NAN;
    assert!(matches!(
        p.push_contact(c),
        Err(SolveError::NonFinite {
            field: "contacts.rhs",
            ..
        })
    ));
    let mut c = c0;
    c.key = ContactKey::new(0, 99, 0);
    c.bodies = [0, 99];
    assert!(matches!(
        p.push_contact(c),
        Err(SolveError::UnknownBody { .. })
    ));
    // mismatched dimensions
    assert!(matches!(
        ContactProblem::new(
            vec![InverseMass::INFINITE_MASS; 3],
            vec![Velocity6::ZERO; 2],
            ContactRows::Normal,
            FrictionSet::Box,
            1e-3
        ),
        Err(SolveError::DimensionMismatch {
            field: "free_velocity",
            ..
        })
    ));
    let mut bad_v = vec![Velocity6::ZERO; 2];
    bad_v[1].linear = Vec3::new(f64::NAN, 0.0, 0.0);
    assert!(matches!(
        ContactProblem::new(
            vec![InverseMass::INFINITE_MASS; 2],
            bad_v,
            ContactRows::Normal,
            FrictionSet::Box,
            1e-3
        ),
        Err(SolveError::NonFinite {
            field: "free_velocity",
            index: 1,
            ..
        })
    ));
    assert!(
        ContactProblem::new(vec![], vec![], ContactRows::Normal, FrictionSet::Box, 0.0).is_err()
    );
    let mut pgs = ProjectedGaussSeidel::default();
    let mut lam = vec![0.0; good.len() + 1];
    let mut vel = good.free_velocity().to_vec();
    assert!(matches!(
        pgs.solve(&good, &mut lam, &mut vel),
        Err(SolveError::DimensionMismatch {
            field: "lambda",
            ..
        })
    ));
    assert!(
        ProjectedGaussSeidel::new(PgsSettings {
            relaxation: 2.5,
            ..PgsSettings::default()
        })
        .is_err()
    );
    assert!(ProjectedGaussSeidel::with_stopping(Stopping::to_tolerance(1, f64::NAN)).is_err());
}

#[test]
fn from_sparse_reproduces_the_contact_operator() {
    use ndem_solve::reference::dense_qp;
    let p = sphere_packing(&PackingSpec {
        cells: [2, 2, 2],
        rows: ContactRows::Normal,
        ..PackingSpec::default()
    })
    .expect("a valid spec");
    let contacts: Vec<_> = p
        .contacts()
        .iter()
        .map(|c| ([c.bodies[0] as usize, c.bodies[1] as usize], c.jacobian))
        .collect();
    let g = ndem_math::sparse::contacts_to_csr(&contacts, 1, p.body_count());
    let n = p.contacts().len();
    let sigma: Vec<f64> = p.contacts().iter().map(|c| c.sigma[0]).collect();
    let rhs: Vec<f64> = p.contacts().iter().map(|c| c.rhs[0]).collect();
    let bounds = vec![
        RowBounds::Fixed {
            lower: 0.0,
            upper: f64::INFINITY
        };
        n
    ];
    let kinds = vec![ndem_math::RowKind::Normal; n];
    let q = ContactProblem::from_sparse(
        &g,
        p.inverse_mass().to_vec(),
        p.free_velocity().to_vec(),
        &sigma,
        &rhs,
        &bounds,
        &kinds,
    )
    .unwrap();
    let (np, rp) = dense_qp(&p);
    let (nq, rq) = dense_qp(&q);
    assert!((np - nq).amax() < 1e-12 * (1.0 + rp.amax()));
    assert!((rp - rq).amax() < 1e-12);
    let a = solve_frictionless(&p).unwrap();
    let b = solve_frictionless(&q).unwrap();
    assert!(
        a.iter()
            .zip(&b)
            .all(|(x, y)| (x - y).abs() <= 1e-12 * (1.0 + x.abs()))
    );
}

/// Every generated frictional packing (the `arb_packing` strategy, 48
/// cases drawn by proptest's deterministic runner; box and disk, row-wise
/// and blocked, with and without rolling rows) is solved to 1e-11 within
/// 30 000 sweeps and *reported*: a converged case must satisfy the MCP
/// (bounds, residual, consistent velocity, a fixed point); a case that does
/// not converge must say so (`IterationLimit` or `Stalled`, never
/// `Converged`) with a reported residual equal to an independent
/// evaluation. The converged fraction is printed and asserted at its
/// measured value (44 of 48) minus a margin of 3 cases. Why the others are
/// hard: docs/solvers.md, "PGS on frictional packings".
#[test]
fn pgs_on_generated_frictional_packings_converges_or_says_so() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = (sets(), any::<bool>(), variants()).prop_flat_map(|(s, rolling, v)| {
        let rows = if rolling {
            ContactRows::NormalFrictionRolling
        } else {
            ContactRows::NormalFriction
        };
        (arb_packing(rows, s), Just(v))
    });
    let cases = 48;
    let mut converged = 0;
    let mut statuses = std::collections::BTreeMap::new();
    for _ in 0..cases {
        let (problem, variant) = strategy.new_tree(&mut runner).unwrap().current();
        let (mut lam, mut vel) = problem.cold_start();
        let rep = solve_to(&problem, tight(variant), &mut lam, &mut vel);
        *statuses.entry(rep.status.name()).or_insert(0) += 1;
        let honest = ResidualEvaluator::new().stats(&problem, &lam, None);
        assert_eq!(
            honest, rep.residuals,
            "reported residuals are not the honest ones"
        );
        if rep.converged() {
            converged += 1;
            check_solution(&problem, variant, &rep, lam, vel).unwrap();
        } else {
            assert!(
                matches!(
                    rep.status,
                    SolverStatus::IterationLimit | SolverStatus::Stalled
                ),
                "{rep:?}"
            );
            assert!(rep.residuals.max > 1e-11);
        }
    }
    println!(
        "PGS on generated frictional packings: {converged} of {cases} converged to 1e-11 in 30 000 sweeps; statuses {statuses:?}"
    );
    assert!(
        converged + 3 >= MEASURED_CONVERGED,
        "{converged} of {cases} converged"
    );
}

const MEASURED_CONVERGED: usize = 44;

/// PGS is not guaranteed to converge on frictional MCPs; on the seeded
/// packings below (3×3×2 spheres, Table 1 parameters, six rows, both friction
/// sets and both variants) at least 80 % reach a max row residual of 1e-11
/// m/s within 30 000 sweeps (measured: 27 of 32).
#[test]
fn pgs_converges_on_most_frictional_packings() {
    let mut total = 0;
    let mut converged = 0;
    for seed in 0..8u64 {
        for set in [FrictionSet::Box, FrictionSet::Disk] {
            for variant in [PgsVariant::RowWise, PgsVariant::Blocked] {
                let problem = sphere_packing(&PackingSpec {
                    cells: [3, 3, 2],
                    seed,
                    polydispersity: 0.1,
                    speed: 0.02,
                    friction_set: set,
                    ..PackingSpec::default()
                })
                .expect("a valid spec");
                let (mut lam, mut vel) = problem.cold_start();
                let rep = solve_to(&problem, tight(variant), &mut lam, &mut vel);
                total += 1;
                if rep.converged() {
                    converged += 1;
                    check_solution(&problem, variant, &rep, lam, vel).unwrap();
                }
            }
        }
    }
    println!("{converged} of {total} converged");
    assert!(
        converged * 100 >= 80 * total,
        "{converged} of {total} converged"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// The safeguarded policy on sequences of perturbed problems (the
    /// history of one packing applied to a compressed or relaxed copy, and
    /// the model start): the start it hands the solver never has a larger
    /// mean residual than the cold start, and it is the inner policy's
    /// start whenever that one is no worse.
    #[test]
    fn safeguarded_start_is_never_worse_than_cold(
        nx in 2usize..=4, nz in 2usize..=4, seed in any::<u64>(), dc in -5e-3f64..5e-3, model in any::<bool>()
    ) {
        let (first, lam, second) = solved_and_compressed([nx, nz], seed, dc, 200);
        let mut inner: Box<dyn WarmStart> = if model { Box::new(ModelWarmStart) } else { Box::new(HistoryWarmStart::default()) };
        let (mut li, mut vi) = second.cold_start();
        inner.record(&first, &lam);
        inner.initialize(&second, &mut li, &mut vi).unwrap();
        let (mut ls, mut vs) = second.cold_start();
        let mut guarded: Box<dyn WarmStart> = if model { Box::new(Safeguarded::new(ModelWarmStart)) } else { Box::new(Safeguarded::new(HistoryWarmStart::default())) };
        guarded.record(&first, &lam);
        guarded.initialize(&second, &mut ls, &mut vs).unwrap();
        let mut ev = ResidualEvaluator::new();
        let r_cold = ev.stats(&second, &vec![0.0; second.len()], None).mean;
        let r_inner = ev.stats(&second, &li, None).mean;
        let r_safe = ev.stats(&second, &ls, None).mean;
        prop_assert!(r_safe <= r_cold, "safeguarded {r_safe:e} > cold {r_cold:e}");
        if r_inner <= r_cold {
            prop_assert_eq!(&ls, &li);
        }
        let mut v2 = vec![Velocity6::ZERO; second.body_count()];
        second.velocity_from(&ls, &mut v2).unwrap();
        prop_assert_eq!(vs, v2);
    }
}

/// Where the safeguard's guarantee ends: after the solve. On 64 sequences
/// of perturbed packings (the history of one packing applied to a
/// compressed or relaxed copy, history and model starts, 20 PGS sweeps),
/// count how often the safeguarded solve ends with a mean residual no
/// larger than the cold solve's. Printed and asserted at the measured
/// count (MEASURED_SAFEGUARD_END = 64 of 64, deterministic runner, no
/// margin). It is measured, not a theorem: PGS is not monotone in the
/// residual, so a better start need not end better (docs/solvers.md).
#[test]
fn safeguarded_solve_ends_no_worse_than_cold_measured() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = (
        2usize..=4,
        2usize..=4,
        any::<u64>(),
        -5e-3f64..5e-3,
        any::<bool>(),
    );
    let cases = 64;
    let mut no_worse = 0;
    let mut worst_ratio = 0.0f64;
    for _ in 0..cases {
        let (nx, nz, seed, dc, model) = strategy.new_tree(&mut runner).unwrap().current();
        let (first, lam, second) = solved_and_compressed([nx, nz], seed, dc, 200);
        let mut guarded: Box<dyn WarmStart> = if model {
            Box::new(Safeguarded::new(ModelWarmStart))
        } else {
            Box::new(Safeguarded::new(HistoryWarmStart::default()))
        };
        let sweeps = PgsSettings {
            stopping: Stopping::iterations(20),
            ..PgsSettings::default()
        };
        let (mut ls, mut vs) = second.cold_start();
        guarded.record(&first, &lam);
        guarded.initialize(&second, &mut ls, &mut vs).unwrap();
        let end_safe = solve_to(&second, sweeps, &mut ls, &mut vs).residuals.mean;
        let (mut lc, mut vc) = second.cold_start();
        let end_cold = solve_to(&second, sweeps, &mut lc, &mut vc).residuals.mean;
        if end_safe <= end_cold {
            no_worse += 1;
        } else {
            worst_ratio = worst_ratio.max(end_safe / end_cold);
        }
    }
    println!(
        "safeguarded solve ends no worse than cold in {no_worse} of {cases}; worst ratio otherwise {worst_ratio:.3}"
    );
    assert!(no_worse >= MEASURED_SAFEGUARD_END, "{no_worse} of {cases}");
}

/// Measured: 64 of 64.
const MEASURED_SAFEGUARD_END: usize = 64;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Scratch handed from one solver to another (`Solver::take_scratch`,
    /// `adopt_scratch`: the stepper's continuous solver lends its scratch
    /// to the impact solver and takes it back) changes no answer: each
    /// solver solves its next problem exactly as a fresh one does, in every
    /// order, serial and coloured on two threads, with scratch sized for a
    /// larger or a smaller problem.
    #[test]
    fn handed_scratch_gives_the_fresh_solvers_answer(
        nx in 2usize..=4, nz in 2usize..=4, seed in any::<u64>(), order in 0usize..3
    ) {
        let spec = PackingSpec { cells: [nx, 2, nz], compression: 0.01, seed, ..PackingSpec::default() };
        let first = sphere_packing(&spec).expect("a valid spec");
        let second = sphere_packing(&PackingSpec { cells: [5 - nx + 1, 2, nz], seed: seed.wrapping_add(1), ..spec }).expect("a valid spec");
        let (order, threads) = [(ContactOrder::Given, 1), (ContactOrder::Reversed, 1), (ContactOrder::Coloured, 2)][order];
        let lender_settings = PgsSettings { stopping: Stopping::iterations(30), ..PgsSettings::default() };
        let settings = PgsSettings { stopping: Stopping::to_tolerance(40, 1e-10), order, threads, parallel_min_contacts: 0, ..PgsSettings::default() };
        let mut lender = ProjectedGaussSeidel::new(lender_settings).unwrap();
        let (mut l, mut v) = first.cold_start();
        lender.solve(&first, &mut l, &mut v).unwrap();
        let mut borrower = ProjectedGaussSeidel::new(settings).unwrap();
        let scratch = lender.take_scratch();
        prop_assert!(scratch.bytes() > 0);
        borrower.adopt_scratch(scratch);
        let (mut l_used, mut v_used) = second.cold_start();
        let rep_used = borrower.solve(&second, &mut l_used, &mut v_used).unwrap();
        let (mut l_fresh, mut v_fresh) = second.cold_start();
        let rep_fresh = solve_to(&second, settings, &mut l_fresh, &mut v_fresh);
        prop_assert_eq!(l_used, l_fresh);
        prop_assert_eq!(v_used, v_fresh);
        prop_assert_eq!(rep_used, rep_fresh);
        // and back: the lender solves the first problem again as before
        lender.adopt_scratch(borrower.take_scratch());
        let (mut l_back, mut v_back) = first.cold_start();
        lender.solve(&first, &mut l_back, &mut v_back).unwrap();
        prop_assert_eq!(l_back, l);
        prop_assert_eq!(v_back, v);
    }
}

/// The policies of this crate, each after recording `lam` of `first`.
fn recorded_policies(first: &ContactProblem, lam: &[f64]) -> Vec<Box<dyn WarmStart>> {
    let mut policies: Vec<Box<dyn WarmStart>> = vec![
        Box::new(ColdStart),
        Box::new(HistoryWarmStart::default()),
        Box::new(HistoryWarmStart {
            apply_velocity: false,
            ..HistoryWarmStart::default()
        }),
        Box::new(HistoryWarmStart {
            rows: WarmRows::NormalOnly,
            ..HistoryWarmStart::default()
        }),
        Box::new(ModelWarmStart),
        Box::new(Safeguarded::new(HistoryWarmStart::default())),
        Box::new(Safeguarded::new(ModelWarmStart)),
    ];
    for p in &mut policies {
        p.record(first, lam);
    }
    policies
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// `WarmStart::forms_velocity` tells the truth: every policy that
    /// says so leaves `v₀` equal to `v* + M⁻¹Gᵀλ₀` as `velocity_from`
    /// forms it, component by component; and a PGS solve told so
    /// (`StartVelocity::Formed`) gives the answer and the report of one
    /// that forms it again, bit for bit, serial and coloured on two
    /// threads. The history start without its velocity says it does not
    /// form it, and its `v₀ = v*` differs.
    #[test]
    fn a_formed_start_is_the_formed_velocity_and_changes_no_answer(
        nx in 2usize..=4, nz in 2usize..=4, seed in any::<u64>(), dc in -5e-3f64..5e-3, coloured in any::<bool>()
    ) {
        let (first, lam, second) = solved_and_compressed([nx, nz], seed, dc, 100);
        let (order, threads) = if coloured { (ContactOrder::Coloured, 2) } else { (ContactOrder::Given, 1) };
        let settings = PgsSettings { stopping: Stopping::to_tolerance(30, 1e-10), order, threads, parallel_min_contacts: 0, ..PgsSettings::default() };
        let mut formed_policies = 0;
        for mut policy in recorded_policies(&first, &lam) {
            let (mut l0, mut v0) = second.cold_start();
            policy.initialize(&second, &mut l0, &mut v0).unwrap();
            let mut formed = vec![Velocity6::ZERO; second.body_count()];
            second.velocity_from(&l0, &mut formed).unwrap();
            let warm = l0.iter().any(|&x| x != 0.0);
            if !policy.forms_velocity() {
                prop_assert_eq!(policy.name(), "history-no-velocity");
                prop_assert!(!warm || v0 != formed, "a start that is formed says it is not");
                continue;
            }
            formed_policies += 1;
            prop_assert_eq!(&v0, &formed, "{} says it forms v0", policy.name());
            let mut pgs = ProjectedGaussSeidel::new(settings).unwrap();
            let (mut l_given, mut v_given) = (l0.clone(), v0.clone());
            let given = pgs.solve(&second, &mut l_given, &mut v_given).unwrap();
            let (mut l_formed, mut v_formed) = (l0, v0);
            let told = pgs
                .solve_from(&second, &mut l_formed, &mut v_formed, StartVelocity::Formed, &mut NoObserver)
                .unwrap();
            prop_assert_eq!(l_formed, l_given);
            prop_assert_eq!(v_formed, v_given);
            prop_assert_eq!(told, given);
        }
        prop_assert_eq!(formed_policies, 6);
    }
}

/// Debug builds refuse a start said to be formed that is not (the claim
/// would put the report's start residuals at the wrong velocity).
#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "StartVelocity::Formed for a velocity that is not")]
fn a_false_formed_start_is_caught_in_debug_builds() {
    let problem = sphere_packing(&PackingSpec::default()).expect("a valid spec");
    let (mut lam, mut v) = problem.cold_start();
    lam[0] = 1e-3;
    let mut pgs = ProjectedGaussSeidel::default();
    let _ = pgs.solve_from(
        &problem,
        &mut lam,
        &mut v,
        StartVelocity::Formed,
        &mut NoObserver,
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// PGS with relaxation `ω` is the textbook projected SOR of the dense
    /// frictionless LCP, row after row in the given order:
    /// `λ_i ← max(0, λ_i − ω (N_i λ + r_i) / N_ii)`, with `N` and `r`
    /// assembled apart (`reference::dense_qp`), for `ω` below, at and
    /// above 1. A sweep that left `ω` out (or applied it twice) moves
    /// every row by a fraction of its step; PGS forms `N_i λ` through the
    /// body velocities, so the two agree to round-off.
    #[test]
    fn relaxed_sweeps_are_projected_sor(
        problem in arb_packing(ContactRows::Normal, FrictionSet::Box),
        omega in prop_oneof![Just(1.0), 0.3f64..1.9],
        sweeps in 1usize..4,
    ) {
        let (n, r) = ndem_solve::reference::dense_qp(&problem);
        let rows = problem.len();
        let mut expected = vec![0.0; rows];
        for _ in 0..sweeps {
            for i in 0..rows {
                let w: f64 = (0..rows).map(|j| n[(i, j)] * expected[j]).sum::<f64>() + r[i];
                expected[i] = (expected[i] - omega * w / n[(i, i)]).max(0.0);
            }
        }
        let settings = PgsSettings {
            order: ContactOrder::Given,
            relaxation: omega,
            stopping: Stopping {
                max_iterations: sweeps,
                tolerance: 1e-9,
                early_stop: false,
            },
            ..PgsSettings::default()
        };
        let mut lambda = vec![0.0; rows];
        let mut velocity = problem.free_velocity().to_vec();
        let mut pgs = ProjectedGaussSeidel::new(settings).unwrap();
        pgs.solve(&problem, &mut lambda, &mut velocity).unwrap();
        let scale = expected.iter().fold(0.0f64, |m, x| m.max(x.abs())).max(1e-300);
        let err = lambda.iter().zip(&expected).fold(0.0f64, |m, (a, b)| m.max((a - b).abs())) / scale;
        // largest seen 2.6e-15 of the largest multiplier over 144 cases
        prop_assert!(err <= 2e-14, "relative difference {err:e} (ω = {omega}, {sweeps} sweeps)");
    }
}

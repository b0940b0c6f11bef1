//! PGS in the coloured order: the same iterate on any number of threads.

use ndem_solve::*;
use ndem_testkit::generate::{PackingSpec, default_packing, sphere_packing};

/// PGS settings with `stopping`, `variant`, the contacts in `order` and
/// split across `threads` however few there are
/// (`parallel_min_contacts: 0`).
fn split_settings(
    stopping: Stopping,
    order: ContactOrder,
    threads: usize,
    variant: PgsVariant,
) -> PgsSettings {
    PgsSettings {
        stopping,
        order,
        threads,
        parallel_min_contacts: 0,
        variant,
        ..PgsSettings::default()
    }
}

/// PGS with [`split_settings`].
fn split_pgs(
    stopping: Stopping,
    order: ContactOrder,
    threads: usize,
    variant: PgsVariant,
) -> ProjectedGaussSeidel {
    ProjectedGaussSeidel::new(split_settings(stopping, order, threads, variant)).unwrap()
}

/// Row-wise PGS in the coloured order, `iterations` sweeps split across
/// `threads`.
fn coloured(threads: usize, iterations: usize) -> ProjectedGaussSeidel {
    split_pgs(
        Stopping::iterations(iterations),
        ContactOrder::Coloured,
        threads,
        PgsVariant::RowWise,
    )
}

/// The friction sets and PGS variants the parallel sweeps are checked in.
const SETS_AND_VARIANTS: [(FrictionSet, PgsVariant); 3] = [
    (FrictionSet::Box, PgsVariant::RowWise),
    (FrictionSet::Disk, PgsVariant::RowWise),
    (FrictionSet::Disk, PgsVariant::Blocked),
];

/// A packing large enough to be cut into several blocks (at least 512
/// contacts each), every problem split across the threads
/// (`parallel_min_contacts: 0`; by default the solver sweeps on one
/// thread below 12 288 contacts), in both friction sets and both
/// variants: λ and v bit-identical for 1, 2 and 3 threads.
#[test]
fn coloured_sweeps_do_not_depend_on_the_thread_count() {
    for (set, variant) in SETS_AND_VARIANTS {
        let problem = sphere_packing(&PackingSpec {
            cells: [14, 14, 8],
            friction_set: set,
            ..PackingSpec::default()
        })
        .expect("a valid spec");
        assert!(
            problem.contacts().len() > 4096,
            "{}",
            problem.contacts().len()
        );
        let run = |threads: usize| {
            let mut pgs = coloured(threads, 30);
            let mut s = *pgs.settings();
            s.variant = variant;
            pgs.set_settings(s).unwrap();
            let (mut lambda, mut v) = problem.cold_start();
            let report = pgs.solve(&problem, &mut lambda, &mut v).unwrap();
            (lambda, v, report)
        };
        let (l1, v1, r1) = run(1);
        for threads in [2, 3] {
            let (l, v, r) = run(threads);
            assert!(
                l == l1 && v == v1,
                "{set:?} {variant:?}: {threads} threads differ"
            );
            assert_eq!(r.residuals, r1.residuals);
            assert_eq!(r.last_update, r1.last_update);
        }
    }
}

/// A solve that checks its residual between sweeps (early stop on, the
/// checks failing until the iterate reaches the tolerance): the same
/// iterate, velocities, sweep count and residuals on 1, 2 and 3 threads.
/// Each check forms `v = v* + M⁻¹Gᵀλ` in the caller's copy of the
/// velocities and the iterate goes on from it: on several threads the next
/// sweep must reload the shared copy from it.
#[test]
fn residual_checks_do_not_depend_on_the_thread_count() {
    let problem = frictionless_packing();
    let run = |threads| solve_to(&problem, ContactOrder::Coloured, threads, (2000, 1e-8));
    let (l1, v1, r1) = run(1);
    eprintln!("{} sweeps, {:?}", r1.iterations, r1.status);
    // the checks failed at least once before the last one decided
    assert!(r1.iterations > 20 && r1.converged(), "{r1:?}");
    for threads in [2, 3] {
        let (l, v, r) = run(threads);
        assert!(l == l1 && v == v1, "{threads} threads differ");
        assert_eq!(r.residuals, r1.residuals);
        assert_eq!(r.iterations, r1.iterations);
        assert_eq!(r.status, r1.status);
    }
}

/// An observer that reads nothing but says it observes (the default): the
/// solver hands control back after every sweep.
struct Watching;

impl Observer for Watching {
    fn observe(&mut self, _record: &IterationRecord<'_>) {}
    fn wants_iterates(&self) -> bool {
        false
    }
    fn wants_updates(&self) -> bool {
        false
    }
}

/// On two and three threads, the sweeps between two residual checks run
/// in one scope when the observer observes nothing (`NoObserver`), and one
/// scope per sweep otherwise: the same iterate, velocities, sweep count,
/// status, residuals and last update either way, with checks that fail
/// and one that decides (the run's end where a check is due) and without
/// early stop (one run for every sweep).
#[test]
fn a_run_of_sweeps_is_the_sweeps_one_by_one() {
    let problem = frictionless_packing();
    for stopping in [Stopping::to_tolerance(2000, 1e-8), Stopping::iterations(37)] {
        for threads in [2, 3] {
            let settings = PgsSettings {
                parallel_min_contacts: 0,
                ..PgsSettings::coloured(stopping, threads)
            };
            let run = |observer: &mut dyn Observer| {
                let mut pgs = ProjectedGaussSeidel::new(settings).unwrap();
                let (mut lambda, mut v) = problem.cold_start();
                let report = pgs
                    .solve_observed(&problem, &mut lambda, &mut v, observer)
                    .unwrap();
                (lambda, v, report)
            };
            let (l1, v1, r1) = run(&mut Watching);
            let (l, v, r) = run(&mut NoObserver);
            assert!(l == l1 && v == v1, "{threads} threads, {stopping:?}");
            assert_eq!(r.iterations, r1.iterations);
            assert_eq!(r.status, r1.status);
            assert_eq!(r.residuals, r1.residuals);
            assert_eq!(r.last_update.to_bits(), r1.last_update.to_bits());
            if stopping.early_stop {
                assert!(r.iterations > 20 && r.converged(), "{r:?}");
            } else {
                assert_eq!(r.iterations, 37);
            }
        }
    }
}

/// A packing whose contacts have only normal rows: an LCP whose matrix
/// `G M⁻¹ Gᵀ + Σ` is positive definite, so that projected Gauss-Seidel
/// reaches any tolerance.
fn frictionless_packing() -> ContactProblem {
    sphere_packing(&PackingSpec {
        cells: [14, 14, 8],
        rows: ContactRows::Normal,
        ..PackingSpec::default()
    })
    .expect("a valid spec")
}

/// `λ`, `v` and the report of a PGS solve from `λ = 0` in `order` on
/// `threads` threads, stopped at `(sweeps, tolerance)`.
fn solve_to(
    problem: &ContactProblem,
    order: ContactOrder,
    threads: usize,
    (sweeps, tolerance): (usize, f64),
) -> (Vec<f64>, Vec<ndem_math::Velocity6>, SolveReport) {
    let stopping = Stopping::to_tolerance(sweeps, tolerance);
    let settings = split_settings(stopping, order, threads, PgsVariant::RowWise);
    solve_with(problem, settings)
}

/// `λ`, `v` and the report of a PGS solve with `settings` from `λ = 0`.
fn solve_with(
    problem: &ContactProblem,
    settings: PgsSettings,
) -> (Vec<f64>, Vec<ndem_math::Velocity6>, SolveReport) {
    let mut pgs = ProjectedGaussSeidel::new(settings).unwrap();
    let (mut lambda, mut v) = problem.cold_start();
    let report = pgs.solve(problem, &mut lambda, &mut v).unwrap();
    (lambda, v, report)
}

/// The largest `|a_i − b_i|` and the largest `|a_i|`.
fn largest_difference(a: &[f64], b: &[f64]) -> (f64, f64) {
    let scale = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let diff = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    (diff, scale)
}

/// The coloured order is a Gauss-Seidel order like any other: on a
/// frictionless packing (an LCP whose matrix `G M⁻¹ Gᵀ + Σ` is positive
/// definite, so projected Gauss-Seidel converges in every order to the one
/// solution) both orders reach the tolerance and agree.
#[test]
fn coloured_order_converges_like_the_given_one() {
    let problem = frictionless_packing();
    let solve = |order, threads| {
        let (lambda, _, report) = solve_to(&problem, order, threads, (5000, 1e-10));
        (lambda, report)
    };
    let (given, rg) = solve(ContactOrder::Given, 1);
    let (coloured, rc) = solve(ContactOrder::Coloured, 2);
    assert!(rg.converged() && rc.converged(), "{rg:?} {rc:?}");
    let (diff, scale) = largest_difference(&given, &coloured);
    eprintln!(
        "sweeps to 1e-10: given {}, coloured {}; largest difference {:.2e} of {scale:.2e}",
        rg.iterations, rc.iterations, diff
    );
    // measured 4.9e-11 of the largest multiplier (both within the 1e-10
    // residual tolerance of the one solution); bound about 4× that
    assert!(diff <= 1.9e-10 * scale, "{diff} of {scale}");
}

/// Several threads without the coloured order would make the answer
/// depend on the thread count: a typed error.
#[test]
fn threads_need_the_coloured_order() {
    let err = ProjectedGaussSeidel::new(PgsSettings {
        threads: 2,
        ..PgsSettings::default()
    })
    .unwrap_err();
    assert!(matches!(
        err,
        SolveError::InvalidSettings {
            field: "threads",
            ..
        }
    ));
}

/// More threads than `MAX_THREADS` are a typed error (each sweep would
/// spawn them; at 100 000 the system refused one and the process aborted);
/// the limit itself is accepted.
#[test]
fn too_many_threads_are_refused() {
    let coloured = |threads: usize| {
        ProjectedGaussSeidel::new(PgsSettings::coloured(Stopping::default(), threads))
    };
    let max = ndem_par::blocks::MAX_THREADS;
    for threads in [max + 1, 100_000, usize::MAX] {
        assert!(matches!(
            coloured(threads),
            Err(SolveError::InvalidSettings {
                field: "threads",
                ..
            })
        ));
    }
    assert!(coloured(max).is_ok());
}

/// The coloured sweeps' threads are started once when the solver is made:
/// under a memory limit that cannot hold 600 thread stacks (`ulimit -v`,
/// which binds root too) `new` says so with a typed error naming the field,
/// where a sweep would have panicked; two threads are given. The test runs
/// itself again as a child process under the limit, with one malloc arena
/// (`MALLOC_ARENA_MAX=1`): glibc gives each thread that allocates its own
/// arena, 64 MiB of address space, so under the limit a started thread
/// could fail to allocate (glibc then aborts the process) before a later
/// spawn is refused, as the release build's threads did.
#[cfg(unix)]
#[test]
fn coloured_threads_the_system_refuses_are_a_typed_error() {
    const NAME: &str = "coloured_threads_the_system_refuses_are_a_typed_error";
    let coloured = |threads: usize| {
        ProjectedGaussSeidel::new(PgsSettings::coloured(Stopping::default(), threads))
    };
    if std::env::var_os("NDEM_UNDER_ULIMIT").is_some() {
        match coloured(600) {
            Err(SolveError::ThreadsRefused(ndem_par::ThreadsRefused {
                field: "threads",
                requested: 600,
                ..
            })) => {}
            other => panic!("{other:?}"),
        }
        assert!(coloured(2).is_ok());
        return;
    }
    let child = std::process::Command::new("sh")
        .args(["-c", "ulimit -v 400000 && exec \"$0\" \"$@\""])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--test-threads", "1"])
        .env("NDEM_UNDER_ULIMIT", "1")
        .env("MALLOC_ARENA_MAX", "1")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&child.stderr)
    );
    assert!(said.contains("1 passed"), "{said}");
}

/// `colour_blocks` changes the blocks, so the visiting order, but never
/// makes the iterate depend on the thread count.
#[test]
fn every_block_count_gives_one_iterate_on_any_thread_count() {
    let problem = default_packing([14, 14, 8]);
    let run = |threads: usize, blocks: usize| {
        let mut pgs = ProjectedGaussSeidel::new(PgsSettings {
            parallel_min_contacts: 0,
            colour_blocks: blocks,
            ..PgsSettings::coloured(Stopping::iterations(20), threads)
        })
        .unwrap();
        let (mut lambda, mut v) = problem.cold_start();
        pgs.solve(&problem, &mut lambda, &mut v).unwrap();
        (lambda, v)
    };
    let mut results = Vec::new();
    for blocks in [1, 3, 64] {
        let one = run(1, blocks);
        assert!(run(2, blocks) == one, "{blocks} blocks: 2 threads differ");
        results.push(one);
    }
    // one block is the problem's own order; three blocks visit it otherwise
    assert!(results[0].0 != results[1].0);
}

/// More than 64 blocks (the sweep's block sets span several words): two
/// and three threads give the one-thread iterate and report, bit for bit,
/// in runs of sweeps without barriers (a fixed count) and with a barrier
/// after each sweep (to a tolerance).
#[test]
fn more_than_64_blocks_give_one_iterate_on_any_thread_count() {
    let problem = default_packing([36, 36, 24]);
    let run = |threads: usize, stopping: Stopping| {
        let settings = PgsSettings {
            parallel_min_contacts: 0,
            colour_blocks: 256,
            ..PgsSettings::coloured(stopping, threads)
        };
        let (lambda, v, report) = solve_with(&problem, settings);
        (lambda, v, format!("{report:?}"))
    };
    let blocks = ndem_solve::schedule::SweepSchedule::new(&problem, 256).blocks();
    assert!(blocks > 64, "{blocks} blocks");
    for stopping in [Stopping::iterations(6), Stopping::to_tolerance(6, 1e-12)] {
        let one = run(1, stopping);
        for threads in [2, 3] {
            assert!(
                run(threads, stopping) == one,
                "{threads} threads, {stopping:?}"
            );
        }
    }
}

/// `parallel_min_contacts` decides only where the sweep runs: split at
/// every size, at a size below the problem's, at the default (above this
/// problem's, so one thread) or never, two threads give the one-thread
/// iterate and report, bit for bit.
#[test]
fn the_size_for_splitting_never_changes_the_iterate() {
    let problem = default_packing([14, 14, 8]);
    let n = problem.contacts().len();
    assert!(
        n > 4096 && n < PgsSettings::default().parallel_min_contacts,
        "{n}"
    );
    let run = |threads: usize, parallel_min_contacts: usize| {
        let settings = PgsSettings {
            parallel_min_contacts,
            ..PgsSettings::coloured(Stopping::to_tolerance(60, 1e-9), threads)
        };
        let (lambda, v, report) = solve_with(&problem, settings);
        (lambda, v, format!("{report:?}"))
    };
    let one = run(1, 0);
    for split_from in [
        0,
        4096,
        PgsSettings::default().parallel_min_contacts,
        usize::MAX,
    ] {
        assert!(
            run(2, split_from) == one,
            "split from {split_from} contacts"
        );
    }
}

/// A block count outside `1..=256` is a typed error naming the field.
#[test]
fn colour_blocks_outside_the_range_are_refused() {
    for blocks in [0, 257] {
        let err = ProjectedGaussSeidel::new(PgsSettings {
            colour_blocks: blocks,
            ..PgsSettings::coloured(Stopping::default(), 1)
        })
        .unwrap_err();
        assert!(matches!(
            err,
            SolveError::InvalidSettings {
                field: "colour_blocks",
                ..
            }
        ));
    }
}

/// `count` contacts that share no body (contact `i` between bodies `2i` and
/// `2i + 1`), each with its own `Σ`, `μ_t` and rolling arm: spheres
/// (isotropic inertia, lever arms along the normal: the decoupled pass)
/// but for every seventh contact, whose body b has an anisotropic inertia
/// (the row-wise pass). Bodies approach along the normal; `b_n` drawn.
fn disjoint_contacts(count: usize, set: FrictionSet, seed: u64) -> ContactProblem {
    use ndem_math::{ContactFrame, ContactJacobian, InverseMass, Mat3, Vec3, Velocity6};
    let mut state = seed;
    let mut u = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut inverse = Vec::with_capacity(2 * count);
    let mut free = Vec::with_capacity(2 * count);
    let mut contacts = Vec::with_capacity(count);
    for i in 0..count {
        let normal = Vec3::new(u() - 0.5, u() - 0.5, u() + 0.2).normalize();
        let (ra, rb) = (0.01 + 0.01 * u(), 0.01 + 0.01 * u());
        let sphere = |r: f64, m: f64| InverseMass {
            inv_mass: 1.0 / m,
            inv_inertia: Mat3::identity() * (2.5 / (m * r * r)),
        };
        let a = sphere(ra, 0.01 + 0.02 * u());
        let mut b = sphere(rb, 0.01 + 0.02 * u());
        if i % 7 == 3 {
            b.inv_inertia = Mat3::from_diagonal(&Vec3::new(1.0, 2.0, 3.0)) * (1e3 + 1e3 * u());
        }
        let speed = 0.1 + u();
        // sliding for most contacts (μ bounds them), sticking for some
        let drift = Vec3::new(u() - 0.5, u() - 0.5, u() - 0.5) * (6.0 * u());
        let spin = Vec3::new(u() - 0.5, u() - 0.5, u() - 0.5) * 10.0;
        inverse.extend([a, b]);
        free.push(Velocity6::new(-normal * speed + drift, spin));
        free.push(Velocity6::new(normal * speed, -spin));
        let frame = ContactFrame::from_unit_normal(normal);
        let jacobian = ContactJacobian::new(frame, &(-normal * ra), &(normal * rb), 1.0 + u());
        let c = Contact::builder([2 * i as u32, 2 * i as u32 + 1], jacobian)
            .compliance([1e-8 * u(), 1e-7 * u(), 1e-7 * u()])
            .normal_rhs(-0.05 * u())
            .friction(0.1 + 0.8 * u())
            .rolling_arm(1e-3 * u())
            .build()
            .unwrap();
        contacts.push(c);
    }
    let mut problem =
        ContactProblem::new(inverse, free, ContactRows::NormalFrictionRolling, set, 1e-3).unwrap();
    for c in contacts {
        problem.push_contact(c).unwrap();
    }
    problem
}

/// Contact `i` of `problem` alone, between bodies 0 and 1 (its two bodies).
fn contact_alone(problem: &ContactProblem, i: usize) -> ContactProblem {
    let c = problem.contacts().get(i).unwrap();
    let [a, b] = c.bodies.map(|x| x as usize);
    let inv = problem.inverse_mass();
    let free = problem.free_velocity();
    let mut alone = ContactProblem::new(
        vec![inv.get(a).unwrap(), inv.get(b).unwrap()],
        vec![free[a], free[b]],
        problem.contact_rows(),
        problem.friction_set(),
        1e-3,
    )
    .unwrap();
    alone
        .push_contact(Contact {
            bodies: [0, 1],
            ..c
        })
        .unwrap();
    alone
}

/// Each contact is swept with its own `Σ_t`, `Σ_r`, `μ_t`, which the
/// problem keeps per contact when they differ (otherwise once): 4500
/// contacts that share no body, each with coefficients of its own, solved
/// in the given order on one thread and in the coloured order on one and
/// two threads (the paired decoupled pass, the row-wise pass), give each
/// contact the multipliers and velocities of its contact solved alone, bit
/// for bit; a sweep that read one contact's coefficients for all would
/// not.
#[test]
fn each_contact_is_swept_with_its_own_coefficients() {
    for (set, variant) in SETS_AND_VARIANTS {
        let problem = disjoint_contacts(4500, set, 7);
        let solve = |p: &ContactProblem, order: ContactOrder, threads: usize| {
            let mut pgs = split_pgs(Stopping::iterations(12), order, threads, variant);
            let (mut lambda, mut v) = p.cold_start();
            pgs.solve(p, &mut lambda, &mut v).unwrap();
            (lambda, v)
        };
        let alone: Vec<_> = (0..problem.contacts().len())
            .map(|i| solve(&contact_alone(&problem, i), ContactOrder::Given, 1))
            .collect();
        // the friction bounds matter: many contacts slide at their own μ
        let saturated = alone
            .iter()
            .enumerate()
            .filter(|(i, (la, _))| {
                let c = problem.contacts().get(*i).unwrap();
                let bound = c.friction * c.jacobian.normal_scale * la[0];
                let size = match set {
                    FrictionSet::Box => la[1].abs().max(la[2].abs()),
                    FrictionSet::Disk => la[1].hypot(la[2]),
                };
                bound > 0.0 && size >= (1.0 - 1e-12) * bound
            })
            .count();
        eprintln!("{set:?}: {saturated} of 4500 at their bound");
        assert!(
            saturated > 500,
            "{set:?}: {saturated} of 4500 at their bound"
        );
        for (order, threads) in [
            (ContactOrder::Given, 1),
            (ContactOrder::Coloured, 1),
            (ContactOrder::Coloured, 2),
        ] {
            let (lambda, v) = solve(&problem, order, threads);
            for (i, (la, va)) in alone.iter().enumerate() {
                let bits = |x: &[f64]| x.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(&lambda[6 * i..6 * i + 6]),
                    bits(la),
                    "{set:?} {variant:?} {order:?} {threads} threads: contact {i}"
                );
                assert!(
                    v[2 * i..2 * i + 2] == va[..],
                    "{set:?} {variant:?} {order:?} {threads} threads: bodies of contact {i}"
                );
            }
        }
    }
}

/// A PGS solve returns the velocity its report describes: `v = v* +
/// M⁻¹Gᵀλ` of the returned `λ`, bit for bit as `velocity_from` forms it
/// (not the sweeps' running velocity, which drifts from it by round-off),
/// and the report's residuals are the evaluator's at that `v`: in the given
/// and the coloured order, on one and two threads, row-wise and blocked,
/// with checks between sweeps (early stop) or at the end only, from a cold
/// start and from a start whose velocity does not match its `λ₀`.
#[test]
fn a_solve_returns_the_velocity_its_report_describes() {
    let packing = |set| {
        sphere_packing(&PackingSpec {
            cells: [14, 14, 8],
            friction_set: set,
            ..PackingSpec::default()
        })
        .expect("a valid spec")
    };
    let cases = [
        (
            FrictionSet::Box,
            ContactOrder::Given,
            1,
            PgsVariant::RowWise,
        ),
        (
            FrictionSet::Disk,
            ContactOrder::Coloured,
            1,
            PgsVariant::RowWise,
        ),
        (
            FrictionSet::Disk,
            ContactOrder::Coloured,
            2,
            PgsVariant::RowWise,
        ),
        (
            FrictionSet::Box,
            ContactOrder::Coloured,
            2,
            PgsVariant::Blocked,
        ),
    ];
    for (set, order, threads, variant) in cases {
        let problem = packing(set);
        for stopping in [Stopping::iterations(30), Stopping::to_tolerance(60, 1e-9)] {
            for warm in [false, true] {
                let mut pgs = split_pgs(stopping, order, threads, variant);
                // a warm λ₀ with v₀ = v*: a start that is not v(λ₀)
                let mut lambda: Vec<f64> = (0..problem.len())
                    .map(|k| if warm && k % 6 == 0 { 1e-4 } else { 0.0 })
                    .collect();
                let mut v = problem.free_velocity().to_vec();
                let report = pgs.solve(&problem, &mut lambda, &mut v).unwrap();
                let mut formed = v.clone();
                problem.velocity_from(&lambda, &mut formed).unwrap();
                let what = format!(
                    "{set:?} {order:?} {threads} threads {variant:?} {stopping:?} warm {warm}"
                );
                assert!(v == formed, "{what}: not v* + M⁻¹Gᵀλ");
                let stats = ResidualEvaluator::new().stats(&problem, &lambda, Some(&v));
                assert_eq!(report.residuals, stats, "{what}");
            }
        }
    }
}

/// The frictionless packing with `joints + 1` of its movable bodies (every
/// 50th: bodies that do not touch, as a machine's jointed parts do not
/// collide) chained by ball joints: three bilateral rows per joint (the relative linear
/// velocity along x, y and z, `Σ = 1e-9`), the row class
/// [`JointRows::Direct`] solves as one block after each sweep.
fn chained_packing(joints: usize) -> ContactProblem {
    let mut problem = frictionless_packing();
    let movable: Vec<u32> = (0..problem.body_count() as u32)
        .filter(|&b| {
            problem
                .inverse_mass()
                .get(b as usize)
                .is_some_and(|m| m.inv_mass > 0.0)
        })
        .step_by(50)
        .take(joints + 1)
        .collect();
    assert_eq!(movable.len(), joints + 1);
    for pair in movable.windows(2) {
        for axis in 0..3 {
            let e = ndem_math::Vec3::ith(axis, 1.0);
            problem
                .push_row(GenericRow {
                    bodies: [pair[0], pair[1]],
                    jacobian: ndem_math::JacobianRow {
                        linear_a: e,
                        angular_a: ndem_math::Vec3::zeros(),
                        linear_b: -e,
                        angular_b: ndem_math::Vec3::zeros(),
                    },
                    sigma: 1e-9,
                    rhs: 0.0,
                    bounds: RowBounds::Fixed {
                        lower: f64::NEG_INFINITY,
                        upper: f64::INFINITY,
                    },
                    kind: ndem_math::RowKind::Bilateral,
                    key: None,
                })
                .expect("a valid row");
        }
    }
    problem
}

/// The split solver (`JointRows::Direct`) with the contacts in the coloured
/// order (`pgs-direct-coloured`): the joint block's direct step runs on the
/// calling thread after each parallel sweep, so λ, v, the residuals and the
/// report's name are bit-identical on 1, 2 and 3 threads.
#[test]
fn coloured_sweeps_with_a_direct_joint_block_do_not_depend_on_the_thread_count() {
    let problem = chained_packing(8);
    let run = |threads| {
        solve_with(
            &problem,
            PgsSettings {
                joints: JointRows::Direct,
                ..split_settings(
                    Stopping::iterations(30),
                    ContactOrder::Coloured,
                    threads,
                    PgsVariant::RowWise,
                )
            },
        )
    };
    let (l1, v1, r1) = run(1);
    assert_eq!(r1.solver, "pgs-coloured+direct");
    for threads in [2, 3] {
        let (l, v, r) = run(threads);
        assert!(l == l1 && v == v1, "{threads} threads differ");
        assert_eq!(r.residuals, r1.residuals);
        assert_eq!(r.solver, r1.solver);
    }
}

/// The chained packing solved to 1e-10 by the split solver in the given
/// order and in the coloured one: both converge to the one solution (the
/// problem is an LCP with a positive definite matrix plus equality rows
/// with `Σ > 0`) and agree, multipliers of contacts and joints alike.
#[test]
fn coloured_order_with_a_direct_joint_block_converges_like_the_given_one() {
    let problem = chained_packing(8);
    let solve = |order, threads, sweeps| {
        solve_with(
            &problem,
            PgsSettings {
                joints: JointRows::Direct,
                ..split_settings(
                    Stopping::to_tolerance(sweeps, 1e-9),
                    order,
                    threads,
                    PgsVariant::RowWise,
                )
            },
        )
    };
    let (given, _, rg) = solve(ContactOrder::Given, 1, 5000);
    let (coloured, _, rc) = solve(ContactOrder::Coloured, 2, 5000);
    // two orders: after a few sweeps the iterates differ
    let early = |order| solve(order, 1, 5).0;
    assert_ne!(early(ContactOrder::Given), early(ContactOrder::Coloured));
    assert!(rg.converged() && rc.converged(), "{rg:?} {rc:?}");
    assert_eq!(
        (rg.solver, rc.solver),
        ("pgs+direct", "pgs-coloured+direct")
    );
    let (diff, scale) = largest_difference(&given, &coloured);
    eprintln!(
        "sweeps to 1e-9: given {}, coloured {}; largest difference {:.2e} of {scale:.2e}",
        rg.iterations, rc.iterations, diff
    );
    // measured 1.05e-9 of the largest multiplier (1785 and 1753 sweeps to
    // the 1e-9 tolerance); bound 10× that
    assert!(diff <= 1.1e-8 * scale, "{diff} of {scale}");
}

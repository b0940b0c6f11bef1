//! Criterion bench `pgs`: one PGS sweep on a dense resting packing of 10⁴
//! spheres (≈3·10⁴ six-row contacts). Throughput is reported per contact,
//! so criterion's "elem/s" inverts to ns per contact-iteration.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ndem_solve::{
    Apgd, ApgdSettings, FrictionSet, JacobiSettings, PgsSettings, PgsVariant, ProjectedGaussSeidel,
    ProjectedJacobi, Solver, Stopping,
};
use ndem_testkit::generate::{PackingSpec, sphere_packing};
use std::hint::black_box;

fn bench_pgs(c: &mut Criterion) {
    let mut group = c.benchmark_group("pgs");
    group.sample_size(20);
    const SWEEPS: usize = 40;
    for (label, variant, set, cells) in [
        (
            "rowwise-box",
            PgsVariant::RowWise,
            FrictionSet::Box,
            [25, 25, 16],
        ),
        // 10⁵ spheres: the problem (about 100 MB) is far out of cache, as
        // in `cargo xtask peers ndem` at 10⁵
        (
            "rowwise-box-large",
            PgsVariant::RowWise,
            FrictionSet::Box,
            [50, 50, 40],
        ),
        (
            "rowwise-box-small",
            PgsVariant::RowWise,
            FrictionSet::Box,
            [10, 10, 10],
        ),
        (
            "rowwise-disk",
            PgsVariant::RowWise,
            FrictionSet::Disk,
            [25, 25, 16],
        ),
        (
            "blocked-box",
            PgsVariant::Blocked,
            FrictionSet::Box,
            [25, 25, 16],
        ),
    ] {
        let problem = sphere_packing(&PackingSpec {
            cells,
            friction_set: set,
            ..PackingSpec::default()
        })
        .expect("a valid spec");
        let n = problem.contacts().len();
        group.throughput(Throughput::Elements((n * SWEEPS) as u64));
        let mut pgs = ProjectedGaussSeidel::new(PgsSettings {
            stopping: Stopping::iterations(SWEEPS),
            variant,
            ..PgsSettings::default()
        })
        .unwrap();
        let (mut lambda, mut velocity) = problem.cold_start();
        group.bench_with_input(BenchmarkId::new(label, n), &problem, |b, p| {
            b.iter(|| {
                lambda.fill(0.0);
                velocity.copy_from_slice(p.free_velocity());
                black_box(pgs.solve(p, &mut lambda, &mut velocity).unwrap());
            })
        });
    }
    group.finish();
}

/// Coloured PGS on one and on two threads (the same iterate, bit for bit):
/// the parallel speed-up of the sweep on a packing of 2.9·10⁴ contacts.
fn bench_threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("pgs-coloured");
    group.sample_size(20);
    const SWEEPS: usize = 40;
    let problem = sphere_packing(&PackingSpec {
        cells: [25, 25, 16],
        friction_set: FrictionSet::Box,
        ..PackingSpec::default()
    })
    .expect("a valid spec");
    let n = problem.contacts().len();
    group.throughput(Throughput::Elements((n * SWEEPS) as u64));
    for threads in [1, 2] {
        let mut pgs =
            ProjectedGaussSeidel::new(PgsSettings::coloured(Stopping::iterations(SWEEPS), threads))
                .unwrap();
        let (mut lambda, mut velocity) = problem.cold_start();
        group.bench_with_input(
            BenchmarkId::new(format!("threads-{threads}"), n),
            &problem,
            |b, p| {
                b.iter(|| {
                    lambda.fill(0.0);
                    velocity.copy_from_slice(p.free_velocity());
                    black_box(pgs.solve(p, &mut lambda, &mut velocity).unwrap());
                })
            },
        );
    }
    group.finish();
}

/// One APGD iteration and one Jacobi iteration per contact on the same
/// packing (box friction for Jacobi, the cone for APGD).
fn bench_others(c: &mut Criterion) {
    let mut group = c.benchmark_group("solvers");
    group.sample_size(10);
    const ITERS: usize = 40;
    for (label, set) in [
        ("apgd-cone", FrictionSet::Disk),
        ("jacobi-box", FrictionSet::Box),
        ("jacobi-box-rayon", FrictionSet::Box),
    ] {
        let problem = sphere_packing(&PackingSpec {
            cells: [25, 25, 16],
            friction_set: set,
            ..PackingSpec::default()
        })
        .expect("a valid spec");
        let n = problem.contacts().len();
        group.throughput(Throughput::Elements((n * ITERS) as u64));
        let mut solver: Box<dyn Solver> = if label.starts_with("apgd") {
            Box::new(
                Apgd::new(ApgdSettings {
                    stopping: Stopping::iterations(ITERS),
                    ..ApgdSettings::default()
                })
                .unwrap(),
            )
        } else {
            Box::new(
                ProjectedJacobi::new(JacobiSettings {
                    stopping: Stopping::iterations(ITERS),
                    // rayon on every core, or one thread
                    threads: if label.ends_with("rayon") { 0 } else { 1 },
                    ..JacobiSettings::default()
                })
                .unwrap(),
            )
        };
        let (mut lambda, mut velocity) = problem.cold_start();
        group.bench_with_input(BenchmarkId::new(label, n), &problem, |b, p| {
            b.iter(|| {
                lambda.fill(0.0);
                velocity.copy_from_slice(p.free_velocity());
                black_box(solver.solve(p, &mut lambda, &mut velocity).unwrap());
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_pgs, bench_threads, bench_others);
criterion_main!(benches);

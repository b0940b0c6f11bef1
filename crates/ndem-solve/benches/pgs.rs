//! Criterion bench `pgs`: one PGS sweep on a dense resting packing of 10⁴
//! spheres (≈3·10⁴ six-row contacts). Throughput is reported per contact,
//! so criterion's "elem/s" inverts to ns per contact-iteration.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ndem_solve::testing::{PackingSpec, sphere_packing};
use ndem_solve::{FrictionSet, PgsSettings, PgsVariant, ProjectedGaussSeidel, Solver, Stopping};
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
        });
        let n = problem.contacts().len();
        group.throughput(Throughput::Elements((n * SWEEPS) as u64));
        let mut pgs = ProjectedGaussSeidel::new(PgsSettings {
            stopping: Stopping::iterations(SWEEPS),
            variant,
            final_residuals: false,
            ..PgsSettings::default()
        })
        .unwrap();
        let mut lambda = vec![0.0; problem.len()];
        let mut velocity = problem.free_velocity().to_vec();
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

criterion_group!(benches, bench_pgs);
criterion_main!(benches);

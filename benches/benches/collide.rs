//! Criterion bench `collide`: one full detection pass over a dense random
//! packing (jittered cubic lattice, radii uniform in [r, 1.05 r], spacing
//! 1.96 r, so each sphere touches its six lattice neighbours) of 10⁴ and 10⁵
//! spheres on a floor. Throughput is per particle: criterion's elem/s
//! inverts to ns per particle.
//!
//! The spheres are numbered row by row, the grid's own order, which is the
//! most favourable for the pass: `morton` numbers the same 10⁵ spheres
//! along the Morton curve of their sites, as the built-in beds are
//! (`docs/performance.md`, "Collision detection").

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ndem_collide::{CollisionSettings, CollisionWorld, ContactSet};
use std::hint::black_box;

#[path = "common/lattice.rs"]
mod lattice;
use lattice::{morton_numbered, packing};

fn bench_collide(c: &mut Criterion) {
    let mut group = c.benchmark_group("collide");
    group.sample_size(10);
    for dims in [[25usize, 25, 16], [50, 50, 40]] {
        let bodies = packing(dims, 7);
        let n = bodies.shapes.len() - 1;
        group.throughput(Throughput::Elements(n as u64));
        let mut world = CollisionWorld::new(CollisionSettings {
            margin: 1e-4,
            ..Default::default()
        })
        .unwrap();
        let mut set = ContactSet::new();
        world.detect(&bodies.view(), &mut set).unwrap();
        eprintln!("{n} spheres: {} contacts", set.len());
        group.bench_with_input(BenchmarkId::new("serial", n), &bodies, |b, bodies| {
            b.iter(|| {
                world.detect(&bodies.view(), &mut set).unwrap();
                black_box(set.len())
            })
        });
        group.bench_with_input(BenchmarkId::new("parallel", n), &bodies, |b, bodies| {
            b.iter(|| {
                world.detect_parallel(&bodies.view(), &mut set).unwrap();
                black_box(set.len())
            })
        });
        if n >= 100_000 {
            let morton = morton_numbered(&bodies, 0.005);
            world.detect(&morton.view(), &mut set).unwrap();
            let id = BenchmarkId::new("serial-morton", n);
            group.bench_with_input(id, &morton, |b, bodies| {
                b.iter(|| {
                    world.detect(&bodies.view(), &mut set).unwrap();
                    black_box(set.len())
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_collide);
criterion_main!(benches);

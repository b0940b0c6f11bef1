//! Criterion bench `collide`: one full detection pass over a dense random
//! packing (jittered cubic lattice, radii uniform in [r, 1.05 r], spacing
//! 1.96 r, so each sphere touches its six lattice neighbours) of 10⁴ and 10⁵
//! spheres on a floor. Throughput is per particle: criterion's elem/s
//! inverts to ns per particle.
//!
//! The spheres are numbered row by row, the grid's own order, which is the
//! most favourable for the pass: `morton` numbers the same 10⁵ spheres
//! along the Morton curve of their sites, as the built-in beds are
//! (`docs/performance.md`, "Collision detection", session 26).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ndem_collide::proptest_support::Bodies;
use ndem_collide::{CollisionSettings, CollisionWorld, ContactSet, Shape};
use ndem_math::{Quat, Vec3};

/// The same bodies (the floor first) with the spheres numbered along the
/// Morton curve of their positions.
fn morton_numbered(bodies: &Bodies, r: f64) -> Bodies {
    let spheres = 1..bodies.shapes.len();
    let points: Vec<Vec3> = spheres.clone().map(|i| bodies.positions[i]).collect();
    let order = ndem_math::locality::morton_order(&points, 2.0 * r);
    let mut out = Bodies::new();
    out.push(
        bodies.shapes[0].clone(),
        bodies.positions[0],
        Quat::identity(),
        true,
    );
    for k in order {
        let i = k + 1;
        out.push(
            bodies.shapes[i].clone(),
            bodies.positions[i],
            Quat::identity(),
            false,
        );
    }
    out
}
use std::hint::black_box;

fn packing(n_side: [usize; 3], seed: u64) -> Bodies {
    let r = 0.005;
    let s = 1.96 * r;
    let mut state = seed;
    let mut rnd = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as f64 / u64::MAX as f64
    };
    let mut b = Bodies::new();
    b.push(
        Shape::HalfSpace { normal: Vec3::z() },
        Vec3::zeros(),
        Quat::identity(),
        true,
    );
    for k in 0..n_side[2] {
        for j in 0..n_side[1] {
            for i in 0..n_side[0] {
                let jitter = Vec3::new(rnd() - 0.5, rnd() - 0.5, rnd() - 0.5) * (0.04 * r);
                let p = Vec3::new(i as f64 * s, j as f64 * s, r + k as f64 * s) + jitter;
                b.push(
                    Shape::Sphere {
                        radius: r * (1.0 + 0.05 * rnd()),
                    },
                    p,
                    Quat::identity(),
                    false,
                );
            }
        }
    }
    b
}

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

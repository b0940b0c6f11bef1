//! Criterion bench `smooth`: one explicit Hertz-Mindlin step (detection,
//! forces with tangential and rolling history, integration) on a dense
//! packing of 10⁴ spheres (25×25×16 jittered lattice, every lattice
//! neighbour in contact). Throughput is per particle: elem/s inverts to ns
//! per particle-step.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ndem_collide::Shape;
use ndem_math::{Material, Vec3};
use ndem_smooth::{SmoothSettings, SmoothStepper};
use ndem_step::{BodyDesc, World};
use std::hint::black_box;

fn packing() -> World {
    let mut w = World::new(vec![Material::default()], Vec3::new(0.0, 0.0, -9.81)).unwrap();
    w.add_body(BodyDesc::fixed(
        Shape::half_space(Vec3::z()).unwrap(),
        0,
        Vec3::zeros(),
    ))
    .unwrap();
    let r = 0.0065;
    let s = 1.999 * r;
    let mut seed = 7u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed as f64 / u64::MAX as f64 - 0.5
    };
    for k in 0..16 {
        for j in 0..25 {
            for i in 0..25 {
                let p = Vec3::new(i as f64 * s, j as f64 * s, 0.9995 * r + k as f64 * s)
                    + Vec3::new(rnd(), rnd(), 0.0) * 0.005 * r;
                w.add_body(BodyDesc::dynamic(Shape::sphere(r).unwrap(), 0, p))
                    .unwrap();
            }
        }
    }
    w
}

fn bench_smooth(c: &mut Criterion) {
    let mut group = c.benchmark_group("smooth");
    group.sample_size(10);
    let mut world = packing();
    let n = world.dynamic_count();
    let crit = ndem_smooth::stepper::critical_time_step(&world, &ndem_smooth::SmoothLaw::Hertz);
    let mut st = SmoothStepper::new(
        SmoothSettings {
            dt: 0.3 * crit,
            ..SmoothSettings::default()
        },
        &world,
    )
    .unwrap();
    for _ in 0..20 {
        st.step(&mut world).unwrap();
    }
    let before = st.rebuilds();
    for _ in 0..200 {
        st.step(&mut world).unwrap();
    }
    eprintln!(
        "{n} particles, {} contacts, {} detection passes in 200 steps",
        st.step(&mut world).unwrap().contacts,
        st.rebuilds() - before
    );
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function(BenchmarkId::new("hertz-mindlin", n), |b| {
        b.iter(|| black_box(st.step(&mut world).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, bench_smooth);
criterion_main!(benches);

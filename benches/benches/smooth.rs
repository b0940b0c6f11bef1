//! Criterion bench `smooth`: one explicit Hertz-Mindlin step (Verlet-list
//! contact search, forces with tangential and rolling history,
//! integration) on a dense hexagonal close packing of 10⁴ spheres resting on
//! a floor. Throughput is per particle: elem/s inverts to ns
//! per particle-step.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ndem_math::{Material, Vec3};
use ndem_smooth::{SmoothSettings, SmoothStepper};
use ndem_step::{MaterialId, World};
use std::hint::black_box;

/// Hexagonal close packing (ABAB layers of triangular lattices) of
/// equal spheres touching with a 0.1 % overlap on a floor: a stable dense
/// packing, so the bench measures steady-state steps.
fn packing() -> World {
    let mut w = World::on_floor(Material::default()).unwrap();
    let r = 0.0065;
    let d = 1.999 * r;
    let (nx, ny, nz) = (25, 25, 16);
    let row = d * 3f64.sqrt() / 2.0;
    let layer = d * (2.0f64 / 3.0).sqrt();
    for k in 0..nz {
        let (ox, oy) = if k % 2 == 0 {
            (0.0, 0.0)
        } else {
            (0.5 * d, row / 3.0)
        };
        for j in 0..ny {
            for i in 0..nx {
                let x = ox + i as f64 * d + if j % 2 == 1 { 0.5 * d } else { 0.0 };
                let y = oy + j as f64 * row;
                let p = Vec3::new(x, y, 0.999 * r + k as f64 * layer);
                w.add_sphere(r, MaterialId::from_index(0), p).unwrap();
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
    let mut st = SmoothStepper::new(SmoothSettings::with_dt(0.1 * crit), &world).unwrap();
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

//! The bench `collide`'s packing, shared with the example `collide_passes`
//! (which runs the same passes under callgrind): a jittered cubic lattice
//! of spheres (radii uniform in [r, 1.05 r], spacing 1.96 r, so each
//! sphere touches its six lattice neighbours) on a floor.

use ndem_collide::Shape;
use ndem_collide::proptest_support::Bodies;
use ndem_math::{Quat, Vec3};

/// The same bodies (the floor first) with the spheres numbered along the
/// Morton curve of their positions.
pub fn morton_numbered(bodies: &Bodies, r: f64) -> Bodies {
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

/// `n_side` spheres along x, y and z, jittered from `seed`, on a floor
/// (body 0), numbered row by row.
pub fn packing(n_side: [usize; 3], seed: u64) -> Bodies {
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
    b.push_floor(0.0);
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

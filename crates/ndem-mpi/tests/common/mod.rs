//! Scenes shared by the distributed tests.
#![allow(dead_code)]

use ndem_collide::Shape;
use ndem_math::{Material, Vec3, Velocity6};
use ndem_step::{BodyDesc, World};

/// `n` spheres of mixed radii (5-6 mm) in a box 10 cm wide and `depth` long
/// in x, falling from a lattice onto the floor, with some sideways speed so
/// that they cross the subdomain cuts.
pub fn bed(n: usize, depth: f64) -> World {
    let m = Material {
        rolling_resistance: 0.1,
        ..Material::default()
    };
    let mut w = World::new(vec![m], Vec3::new(0.0, 0.0, -9.81)).unwrap();
    let h = 0.05;
    w.add_body(BodyDesc::fixed(
        Shape::half_space(Vec3::z()).unwrap(),
        0,
        Vec3::zeros(),
    ))
    .unwrap();
    for (nrm, p) in [
        (Vec3::x(), Vec3::new(-depth / 2.0, 0.0, 0.0)),
        (-Vec3::x(), Vec3::new(depth / 2.0, 0.0, 0.0)),
        (Vec3::y(), Vec3::new(0.0, -h, 0.0)),
        (-Vec3::y(), Vec3::new(0.0, h, 0.0)),
    ] {
        w.add_body(BodyDesc::fixed(Shape::half_space(nrm).unwrap(), 0, p))
            .unwrap();
    }
    let nx = ((depth - 0.014) / 0.014).floor() as usize;
    for i in 0..n {
        let (ix, iy, iz) = (i % nx, (i / nx) % 7, i / (7 * nx));
        let r = 0.005 + 0.001 * ((i * 37 % 11) as f64 / 11.0);
        let p = Vec3::new(
            -depth / 2.0 + 0.008 + 0.014 * ix as f64 + 0.0005 * (i % 3) as f64,
            -0.042 + 0.014 * iy as f64,
            0.008 + 0.013 * iz as f64,
        );
        let v = Vec3::new(0.3 * ((i * 13 % 7) as f64 / 7.0 - 0.5), 0.0, 0.0);
        w.add_body(
            BodyDesc::dynamic(Shape::sphere(r).unwrap(), 0, p)
                .with_velocity(Velocity6::new(v, Vec3::zeros())),
        )
        .unwrap();
    }
    w
}

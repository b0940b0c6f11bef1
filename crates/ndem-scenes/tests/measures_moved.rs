//! Measures that the suites use, against hand-computed values (moved from
//! xtask so that users can call them).

use ndem_collide::Shape;
use ndem_math::{Material, Vec3};
use ndem_scenes::measure::*;
use ndem_step::{BodyDesc, MaterialId, World};

fn world() -> World {
    let mut w = World::on_floor(Material::default()).unwrap();
    for (r, z) in [(0.5, 0.5), (0.25, 2.0)] {
        w.add_body(BodyDesc::dynamic(
            Shape::sphere(r).unwrap(),
            MaterialId::from_index(0),
            Vec3::new(0.0, 0.0, z),
        ))
        .unwrap();
    }
    w
}

#[test]
fn solid_fraction_and_heights() {
    let w = world();
    // spheres of radius 0.5 and 0.25 in a 1 × 1 × 2 box
    let expected = 4.0 / 3.0 * std::f64::consts::PI * (0.125 + 0.015625) / 2.0;
    assert!((solid_fraction(&w, [1.0, 1.0, 2.0]) - expected).abs() <= 1e-15);
    // masses scale with r³ (one density): (1 × 0.5 + 1/8 × 2) / (9/8)
    let zc = (0.5 + 0.125 * 2.0) / 1.125;
    assert!(
        (centre_of_mass_height(&w) - zc).abs() <= 1e-15,
        "{}",
        centre_of_mass_height(&w)
    );
    assert_eq!(sphere_top(&w, 2), 2.25);
}

#[test]
fn force_balance_measures() {
    let w = world();
    // floor (0) pushes sphere 1 up with 3 N; sphere 1 pushes sphere 2 up with 1 N
    let contacts = [(1, 0, Vec3::z(), 3.0), (2, 1, Vec3::z(), 1.0)];
    let per_body = vertical_force_per_body(3, contacts.into_iter());
    assert_eq!(per_body, vec![-3.0, 2.0, 1.0]);
    // the floor (the only non-dynamic body) carries 3 N
    assert_eq!(support_reactions(&w, |i| per_body[i]), vec![3.0]);
    assert_eq!(relative_l2_error(&[3.0, 4.0], &[3.0, 4.0]), 0.0);
    assert!((relative_l2_error(&[0.0, 0.0], &[3.0, 4.0]) - 1.0).abs() <= 1e-15);
}

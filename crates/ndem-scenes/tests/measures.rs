//! The measures of `ndem_scenes::measure` against hand-computed values and
//! heaps of known slope.

use ndem_math::{Material, Vec3};
use ndem_scenes::measure::*;
use ndem_step::{MaterialId, World};

fn world() -> World {
    let mut w = World::on_floor(Material::default()).unwrap();
    for (r, z) in [(0.5, 0.5), (0.25, 2.0)] {
        w.add_sphere(r, MaterialId::from_index(0), Vec3::new(0.0, 0.0, z))
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

/// Spheres of radius 5 mm on a square grid of 10 mm, each moved by up to
/// ±3 mm in x and y (a fixed pseudo-random sequence), the top sphere of
/// each column with its top on the cone `z = (R − ρ) tan θ` (R = 0.2 m).
fn cone(theta_deg: f64) -> World {
    let mut w = World::on_floor(Material::default()).unwrap();
    let (r, big) = (0.005, 0.2);
    let slope = theta_deg.to_radians().tan();
    let n = (big / (2.0 * r)) as i32;
    let mut state = 12345u64;
    let mut jitter = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        0.003 * (2.0 * (state >> 11) as f64 / (1u64 << 53) as f64 - 1.0)
    };
    for i in -n..=n {
        for j in -n..=n {
            let x = 2.0 * r * i as f64 + jitter();
            let y = 2.0 * r * j as f64 + jitter();
            let height = (big - x.hypot(y)) * slope;
            if height <= 0.0 {
                continue;
            }
            // the column's top sphere with its top on the cone
            let p = Vec3::new(x, y, height - r);
            w.add_sphere(r, MaterialId::from_index(0), p).unwrap();
        }
    }
    w
}

/// Cones of 20°, 30° and 40°: the measure returns the slope to within
/// 0.2° (measured: 0.018°, 0.033°, 0.035° below it, from where the rings'
/// highest tops fall inside their rings; the bound is 5.7× the largest).
#[test]
fn the_angle_of_a_cone_is_its_slope() {
    for theta in [20.0, 30.0, 40.0] {
        let measured = pile_angle(&cone(theta), Vec3::zeros(), 0.01);
        println!(
            "cone of {theta}°: measured {measured:.6}° (error {:.1e})",
            (measured - theta).abs()
        );
        assert!((measured - theta).abs() < 0.2, "{theta}: {measured}");
    }
}

/// No spheres, or no flank: NaN.
#[test]
fn an_empty_floor_has_no_angle() {
    let w = World::on_floor(Material::default()).unwrap();
    assert!(pile_angle(&w, Vec3::zeros(), 0.01).is_nan());
    assert!(pile_angle(&cone(30.0), Vec3::zeros(), 0.0).is_nan());
}

//! `box_packing` numbers its spheres along the Morton curve of their
//! lattice sites: the bed itself (positions and radii) is the one drawn
//! site by site, row by row, with the same seed; only the numbering
//! differs (`docs/performance.md`, "NDEM step").

use ndem_math::Vec3;
use ndem_math::locality::morton_code;
use ndem_scenes::builders::box_packing;
use ndem_scenes::rng::Rng;

/// The spheres as drawn, row by row (before the Morton numbering):
/// `(site, position, radius)`.
fn row_by_row(
    n: usize,
    r_min: f64,
    r_max: f64,
    side: f64,
    seed: u64,
) -> Vec<([u32; 3], Vec3, f64)> {
    let mut rng = Rng::new(seed);
    let h = 0.5 * side;
    let s = 2.2 * r_max;
    let per_side = ((side - s) / s).floor().max(1.0) as usize;
    (0..n)
        .map(|i| {
            let site = [
                i % per_side,
                (i / per_side) % per_side,
                i / (per_side * per_side),
            ];
            let p = Vec3::new(
                -h + s * (0.5 + site[0] as f64),
                -h + s * (0.5 + site[1] as f64),
                s * (0.5 + site[2] as f64),
            ) + Vec3::new(rng.range(-0.05, 0.05), rng.range(-0.05, 0.05), 0.0) * r_max;
            let r = rng.range(r_min, r_max);
            (site.map(|c| c as u32), p, r)
        })
        .collect()
}

#[test]
fn the_same_bed_numbered_along_the_morton_curve() {
    for (n, side, seed) in [
        (1, 0.12, 1),
        (37, 0.05, 2),
        (2000, 0.12, 1),
        (5000, 0.3, 11),
    ] {
        let (r_min, r_max) = (0.005, 0.0065);
        let scene = box_packing(n, r_min, r_max, side, seed).unwrap();
        let world = &scene.world;
        let walls = 5;
        assert_eq!(world.len(), walls + n);
        let drawn = row_by_row(n, r_min, r_max, side, seed);
        let mut expected: Vec<_> = drawn.iter().collect();
        expected.sort_by_key(|(site, _, _)| morton_code(*site));
        for (k, (_, p, r)) in expected.iter().enumerate() {
            let body = walls + k;
            // bit for bit: the same draws, only the numbering moved
            assert_eq!(
                world.positions()[body],
                *p,
                "position of sphere {k} (n = {n})"
            );
            assert_eq!(
                world.shapes()[body].sphere_radius(),
                Some(*r),
                "radius of sphere {k}"
            );
        }
        // and the numbering is along the curve: codes increase
        let codes: Vec<u64> = expected
            .iter()
            .map(|(site, _, _)| morton_code(*site))
            .collect();
        assert!(
            codes.windows(2).all(|w| w[0] < w[1]),
            "sites distinct, codes increasing"
        );
    }
}

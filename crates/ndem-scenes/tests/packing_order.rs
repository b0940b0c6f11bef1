//! `box_packing` numbers its spheres along the Morton curve of their
//! lattice sites: the bed itself (positions and radii) is the one
//! `box_packing_draws` draws site by site, row by row, with the same seed;
//! only the numbering differs (`docs/performance.md`, "NDEM step").

use ndem_math::locality::morton_code;
use ndem_scenes::builders::{box_packing, box_packing_draws};

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
        let drawn: Vec<_> = box_packing_draws(n, [r_min, r_max], side, seed).collect();
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

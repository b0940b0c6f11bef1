//! Numbering bodies along a space-filling curve, so that bodies close in
//! space are close in memory.
//!
//! The stepper's problems list their contacts in key order, i.e. by body
//! index (`docs/solvers.md`, "Coloured order on several threads"); PGS
//! then reads the two bodies' velocities of each contact in that order.
//! When the body numbering follows a Morton (Z-order) curve, a contact's
//! neighbours in the sweep touch bodies that were touched shortly before,
//! in all three directions, and the body data a sweep reads stays in the
//! caches (`docs/performance.md`, "NDEM step": a random numbering of a
//! settled bed of 10⁵ spheres makes the sweep 2.3× slower). A lattice
//! numbered row by row keeps that only along its rows: bodies one layer
//! apart are a layer's worth of bodies apart in memory.

use crate::Vec3;

/// Spreads the low 21 bits of `x` to every third bit of a `u64`.
fn spread_bits(x: u32) -> u64 {
    let mut v = u64::from(x) & 0x1f_ffff;
    v = (v | v << 32) & 0x001f_0000_0000_ffff;
    v = (v | v << 16) & 0x001f_0000_ff00_00ff;
    v = (v | v << 8) & 0x100f_00f0_0f00_f00f;
    v = (v | v << 4) & 0x10c3_0c30_c30c_30c3;
    v = (v | v << 2) & 0x1249_2492_4924_9249;
    v
}

/// Largest coordinate a [`morton_code`] keeps (21 bits per axis).
pub const MORTON_MAX: u32 = (1 << 21) - 1;

/// The Morton (Z-order) code of integer cell coordinates `[i, j, k]`: their
/// bits interleaved, `i` in the lowest. Coordinates above [`MORTON_MAX`]
/// are clamped to it.
pub fn morton_code(cell: [u32; 3]) -> u64 {
    let [i, j, k] = cell.map(|c| spread_bits(c.min(MORTON_MAX)));
    i | j << 1 | k << 2
}

/// The indices of `points` in Morton order of the cells of side `cell`
/// they fall in (cells counted from the points' lower corner); points in
/// one cell keep their given order, so the result depends only on the
/// input. A `cell` that is not positive and finite, or a non-finite
/// coordinate, puts the point(s) concerned in cell 0 along that axis: the
/// result is still a permutation of `0..points.len()`.
pub fn morton_order(points: &[Vec3], cell: f64) -> Vec<usize> {
    let mut lower = [f64::INFINITY; 3];
    for p in points {
        for (l, x) in lower.iter_mut().zip(p.iter()) {
            if x.is_finite() {
                *l = l.min(*x);
            }
        }
    }
    let quantise = |x: f64, l: f64| -> u32 {
        let q = (x - l) / cell;
        if q.is_finite() && q > 0.0 {
            // saturating float-to-int conversion, then the code's clamp
            q as u32
        } else {
            0
        }
    };
    let mut keyed: Vec<(u64, usize)> = points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let c = [0, 1, 2].map(|a| quantise(p[a], lower[a]));
            (morton_code(c), i)
        })
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Inverse of `spread_bits`, for the tests.
    fn compact_bits(mut v: u64) -> u32 {
        v &= 0x1249_2492_4924_9249;
        v = (v | v >> 2) & 0x10c3_0c30_c30c_30c3;
        v = (v | v >> 4) & 0x100f_00f0_0f00_f00f;
        v = (v | v >> 8) & 0x001f_0000_ff00_00ff;
        v = (v | v >> 16) & 0x001f_0000_0000_ffff;
        v = (v | v >> 32) & 0x1f_ffff;
        v as u32
    }

    /// The code written bit by bit, as the definition reads.
    fn code_by_bits(cell: [u32; 3]) -> u64 {
        let mut code = 0u64;
        for bit in 0..21 {
            for (axis, c) in cell.iter().enumerate() {
                code |= u64::from((c >> bit) & 1) << (3 * bit + axis);
            }
        }
        code
    }

    #[test]
    fn the_first_cells_follow_the_z_curve() {
        let order: Vec<u64> = [
            [0, 0, 0],
            [1, 0, 0],
            [0, 1, 0],
            [1, 1, 0],
            [0, 0, 1],
            [1, 0, 1],
            [0, 1, 1],
            [1, 1, 1],
            [2, 0, 0],
        ]
        .iter()
        .map(|&c| morton_code(c))
        .collect();
        assert_eq!(order, (0..9).collect::<Vec<u64>>());
        assert_eq!(morton_code([MORTON_MAX; 3]), (1u64 << 63) - 1);
    }

    proptest! {
        #[test]
        fn the_code_interleaves_the_bits(cell in prop::array::uniform3(0..=MORTON_MAX)) {
            let code = morton_code(cell);
            prop_assert_eq!(code, code_by_bits(cell));
            let back = [compact_bits(code), compact_bits(code >> 1), compact_bits(code >> 2)];
            prop_assert_eq!(back, cell);
        }

        #[test]
        fn the_order_is_a_permutation_sorted_by_cell(
            coords in prop::collection::vec(prop::array::uniform3(-2.0f64..2.0), 0..200),
            cell in 0.01f64..1.0,
        ) {
            let points: Vec<Vec3> = coords.iter().map(|c| Vec3::new(c[0], c[1], c[2])).collect();
            let order = morton_order(&points, cell);
            let mut seen = order.clone();
            seen.sort_unstable();
            prop_assert_eq!(seen, (0..points.len()).collect::<Vec<_>>());
            let lower = [0, 1, 2].map(|a| points.iter().map(|p| p[a]).fold(f64::INFINITY, f64::min));
            let code = |i: usize| morton_code([0, 1, 2].map(|a| ((points[i][a] - lower[a]) / cell) as u32));
            for w in order.windows(2) {
                // by code, ties in the given order
                prop_assert!((code(w[0]), w[0]) < (code(w[1]), w[1]));
            }
        }
    }

    #[test]
    fn bad_cells_and_coordinates_still_give_a_permutation() {
        let points = vec![
            Vec3::new(0.0, f64::NAN, 1.0),
            Vec3::new(f64::INFINITY, 0.0, 0.0),
            Vec3::new(1.0, 1.0, 1.0),
        ];
        for cell in [0.0, -1.0, f64::NAN, f64::INFINITY, 0.5] {
            let mut order = morton_order(&points, cell);
            order.sort_unstable();
            assert_eq!(order, vec![0, 1, 2]);
        }
    }
}

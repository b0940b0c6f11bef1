//! Exact local solves used inside Gauss-Seidel sweeps.

/// Minimises `½ xᵀ A x + bᵀ x` over the disk `‖x‖ ≤ radius`, with
/// `A = [[a11, a12], [a12, a22]]` symmetric positive semidefinite given as
/// `[a11, a12, a22]` and `b = w − A x0`, where `x0` is the current point
/// and `w = A x0 + b` the current residual of the two rows.
///
/// This is the exact solve of a contact's two friction rows (or two rolling
/// rows) with the normal multiplier held fixed. Its fixed point satisfies
/// Coulomb's maximal-dissipation law in the rows' own coordinates: either
/// `w = 0` inside the disk, or `w = −ν x` with `ν ≥ 0` on its boundary,
/// whatever the frame and the diagonals (projecting a per-row step
/// `x − D⁻¹ w` onto the disk does not have this property when
/// `D_11 ≠ D_22`).
///
/// Method: the unconstrained minimiser when it lies in the disk; otherwise
/// the KKT multiplier `ν` of `(A + ν 1) x = −b, ‖x‖ = radius` by Newton's
/// method on `1/‖x(ν)‖ − 1/radius` (Moré and Sorensen 1983), which is
/// concave in `ν`, started from a lower bound and kept in a bracket.
pub(crate) fn disk_qp(a: [f64; 3], x0: [f64; 2], w: [f64; 2], radius: f64) -> [f64; 2] {
    if radius <= 0.0 || radius.is_nan() {
        return [0.0, 0.0];
    }
    let [a11, a12, a22] = a;
    let b = [
        w[0] - a11 * x0[0] - a12 * x0[1],
        w[1] - a12 * x0[0] - a22 * x0[1],
    ];
    let det = a11 * a22 - a12 * a12;
    let scale = a11.abs() + a22.abs();
    if det > 1e-14 * scale * scale {
        let x = [
            -(a22 * b[0] - a12 * b[1]) / det,
            -(a11 * b[1] - a12 * b[0]) / det,
        ];
        if x[0] * x[0] + x[1] * x[1] <= radius * radius {
            return x;
        }
    }
    // Eigen-decomposition of the 2×2 block: A = l1 e1 e1ᵀ + l2 e2 e2ᵀ.
    let half_diff = 0.5 * (a11 - a22);
    let root = (half_diff * half_diff + a12 * a12).sqrt();
    let mean = 0.5 * (a11 + a22);
    let (l1, l2) = (mean + root, (mean - root).max(0.0));
    let e1 = if root > 0.0 {
        let (x, y) = if half_diff >= 0.0 {
            (half_diff + root, a12)
        } else {
            (a12, root - half_diff)
        };
        let n = (x * x + y * y).sqrt();
        [x / n, y / n]
    } else {
        [1.0, 0.0]
    };
    let e2 = [-e1[1], e1[0]];
    let c1 = e1[0] * b[0] + e1[1] * b[1];
    let c2 = e2[0] * b[0] + e2[1] * b[1];
    let c_norm = (c1 * c1 + c2 * c2).sqrt();
    if c_norm == 0.0 {
        return [0.0, 0.0];
    }
    let norm_at = |nu: f64| {
        let (y1, y2) = (c1 / (l1 + nu), c2 / (l2 + nu));
        let n2 = y1 * y1 + y2 * y2;
        let d = c1 * c1 / (l1 + nu).powi(3) + c2 * c2 / (l2 + nu).powi(3);
        (n2.sqrt(), d)
    };
    // ‖x(ν)‖ lies between |c|/(l1+ν) and |c|/(l2+ν).
    let mut lo = (c_norm / radius - l1).max(0.0);
    let mut hi = (c_norm / radius - l2).max(lo);
    let mut nu = lo;
    if l2 + nu <= 0.0 {
        nu = 1e-300_f64.max(1e-12 * hi);
    }
    for _ in 0..60 {
        let (norm, d) = norm_at(nu);
        let psi = 1.0 / norm - 1.0 / radius;
        if psi.abs() <= 1e-15 / radius {
            break;
        }
        if psi < 0.0 {
            lo = nu;
        } else {
            hi = nu;
        }
        let slope = d / (norm * norm * norm);
        let mut next = nu - psi / slope;
        if !(next > lo && next < hi && next.is_finite()) {
            next = 0.5 * (lo + hi);
        }
        if next == nu {
            break;
        }
        nu = next;
    }
    let x = [
        -(c1 / (l1 + nu) * e1[0] + c2 / (l2 + nu) * e2[0]),
        -(c1 / (l1 + nu) * e1[1] + c2 / (l2 + nu) * e2[1]),
    ];
    let n = (x[0] * x[0] + x[1] * x[1]).sqrt();
    if n > radius && n > 0.0 {
        [x[0] * radius / n, x[1] * radius / n]
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::disk_qp;

    /// Brute force over a fine polar grid of the disk.
    fn brute(a: [f64; 3], x0: [f64; 2], w: [f64; 2], r: f64) -> f64 {
        let b = [
            w[0] - a[0] * x0[0] - a[1] * x0[1],
            w[1] - a[1] * x0[0] - a[2] * x0[1],
        ];
        let f = |x: [f64; 2]| {
            0.5 * (a[0] * x[0] * x[0] + 2.0 * a[1] * x[0] * x[1] + a[2] * x[1] * x[1])
                + b[0] * x[0]
                + b[1] * x[1]
        };
        let mut best = f64::INFINITY;
        for i in 0..=400 {
            for k in 0..720 {
                let rho = r * i as f64 / 400.0;
                let t = k as f64 * std::f64::consts::PI / 360.0;
                best = best.min(f([rho * t.cos(), rho * t.sin()]));
            }
        }
        best
    }

    #[test]
    fn matches_brute_force_and_kkt() {
        let cases = [
            ([4.0, 1.5, 1.0], [0.0, 0.0], [3.0, -2.0], 0.5),
            ([1.0, 0.0, 9.0], [0.2, 0.1], [1.0, 1.0], 0.3),
            ([2.0, -1.9, 2.0], [0.0, 0.0], [0.1, 5.0], 1.0),
            ([1.0, 0.0, 1.0], [0.0, 0.0], [0.1, 0.1], 1.0),
        ];
        for (a, x0, w, r) in cases {
            let x = disk_qp(a, x0, w, r);
            let b = [
                w[0] - a[0] * x0[0] - a[1] * x0[1],
                w[1] - a[1] * x0[0] - a[2] * x0[1],
            ];
            let f = 0.5 * (a[0] * x[0] * x[0] + 2.0 * a[1] * x[0] * x[1] + a[2] * x[1] * x[1])
                + b[0] * x[0]
                + b[1] * x[1];
            assert!(x[0].hypot(x[1]) <= r * (1.0 + 1e-14));
            // the grid's resolution bounds how much lower it can go
            assert!(f <= brute(a, x0, w, r) + 1e-9, "{f} for {a:?}");
            // KKT: residual at x is -ν x with ν ≥ 0 on the boundary
            let g = [
                a[0] * x[0] + a[1] * x[1] + b[0],
                a[1] * x[0] + a[2] * x[1] + b[1],
            ];
            let cross = g[0] * x[1] - g[1] * x[0];
            assert!(
                cross.abs() <= 1e-12 * (1.0 + g[0].hypot(g[1])),
                "{g:?} {x:?}"
            );
            assert!(g[0] * x[0] + g[1] * x[1] <= 1e-12);
        }
    }
}

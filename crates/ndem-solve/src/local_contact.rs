//! One contact's Coulomb law: the natural-map error of a law summed over
//! the contacts, and the Alart-Curnier residual with its semismooth
//! Newton solve for a single contact (the exact local solve that
//! Gauss-Seidel falls back on).

use crate::FrictionSet;
use crate::problem::ClampTo;

/// `‖r − P(r − û)‖` summed in squares over the contacts of a law, the
/// numerator of the merits (shared with [`LocalProblem`]).
pub(crate) fn law_error2(friction: FrictionSet, mu: &[f64], r: &[f64], u: &[f64]) -> f64 {
    match friction {
        FrictionSet::Disk => coulomb_natural_map(mu, r, u),
        FrictionSet::Box => {
            let mut err2 = 0.0;
            for (c, &m) in mu.iter().enumerate() {
                let k = 3 * c;
                let rn = (r[k] - u[k]).max(0.0);
                err2 += (r[k] - rn).powi(2);
                let bound = m * r[k].max(0.0);
                for a in 1..3 {
                    let t = (r[k + a] - u[k + a]).clamp_to(-bound, bound);
                    err2 += (r[k + a] - t).powi(2);
                }
            }
            err2
        }
    }
}

/// `Σ_c ‖r_c − P_K(r_c − û_c)‖²`, the square of the numerator of the
/// Coulomb merit.
pub(crate) fn coulomb_natural_map(mu: &[f64], r: &[f64], u: &[f64]) -> f64 {
    let mut err2 = 0.0;
    for (c, &mu) in mu.iter().enumerate() {
        let k = 3 * c;
        let ut = (u[k + 1] * u[k + 1] + u[k + 2] * u[k + 2]).sqrt();
        let mut a = r[k] - (u[k] + mu * ut);
        let mut t = [r[k + 1] - u[k + 1], r[k + 2] - u[k + 2]];
        crate::cone::project_cone(mu, &mut a, &mut t);
        err2 += (r[k] - a).powi(2) + (r[k + 1] - t[0]).powi(2) + (r[k + 2] - t[1]).powi(2);
    }
    err2
}

/// One contact's Alart-Curnier residual `Φ_c` and its generalized
/// Jacobian blocks `A = ∂Φ_c/∂r_c`, `B = ∂Φ_c/∂u_c` (row-major 3×3), at
/// reactions `r`, velocity `u`, friction `mu` and `rho = 1/W_NN`.
pub(crate) fn contact_residual(
    r: [f64; 3],
    u: [f64; 3],
    mu: f64,
    rho: f64,
) -> ([f64; 3], [f64; 9], [f64; 9]) {
    let mut phi = [0.0; 3];
    let mut a = [0.0; 9];
    let mut b = [0.0; 9];
    let tau = r[0] - rho * u[0];
    if tau > 0.0 {
        phi[0] = rho * u[0];
        b[0] = rho;
    } else {
        phi[0] = r[0];
        a[0] = 1.0;
    }
    let radius = mu * tau.max(0.0);
    let z = [r[1] - rho * u[1], r[2] - rho * u[2]];
    let zn = z[0].hypot(z[1]);
    if zn <= radius {
        // sticking
        phi[1] = rho * u[1];
        phi[2] = rho * u[2];
        b[4] = rho;
        b[8] = rho;
    } else if zn > 0.0 {
        // sliding: Φ_T = r_T − radius z/|z|
        let zh = [z[0] / zn, z[1] / zn];
        phi[1] = r[1] - radius * zh[0];
        phi[2] = r[2] - radius * zh[1];
        let g = [
            (1.0 - zh[0] * zh[0]) / zn,
            -zh[0] * zh[1] / zn,
            -zh[1] * zh[0] / zn,
            (1.0 - zh[1] * zh[1]) / zn,
        ];
        for (i, row) in [1usize, 2].into_iter().enumerate() {
            for (j, col) in [1usize, 2].into_iter().enumerate() {
                let gij = g[2 * i + j];
                a[3 * row + col] = f64::from(u8::from(i == j)) - radius * gij;
                b[3 * row + col] = radius * rho * gij;
            }
            if tau > 0.0 {
                a[3 * row] = -mu * zh[i];
                b[3 * row] = mu * rho * zh[i];
            }
        }
    } else {
        phi[1] = r[1];
        phi[2] = r[2];
        a[4] = 1.0;
        a[8] = 1.0;
    }
    (phi, a, b)
}

/// Semismooth Newton on one contact's Coulomb problem `u = W_cc r + s`
/// (the other contacts held): the exact local solve that Gauss-Seidel
/// falls back on when alternating the normal row and the friction pair
/// does not settle (strong normal-tangent coupling in `W_cc`, where that
/// alternation can cycle). Starts from `r`, returns the iterate with the
/// smallest `½‖Φ_c‖²` after at most `iterations` damped Newton steps.
pub(crate) fn contact_newton(
    w: &[f64; 9],
    s: [f64; 3],
    mu: f64,
    r: [f64; 3],
    iterations: usize,
) -> [f64; 3] {
    use nalgebra::{Matrix3, Vector3};
    let wm = Matrix3::from_row_slice(w);
    let rho = if w[0] > 0.0 { 1.0 / w[0] } else { 1.0 };
    let eval = |r: [f64; 3]| {
        let u = wm * Vector3::from(r) + Vector3::from(s);
        contact_residual(r, [u[0], u[1], u[2]], mu, rho)
    };
    let theta = |phi: &[f64; 3]| 0.5 * (phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2]);
    let mut r = r;
    let (mut phi, mut a, mut b) = eval(r);
    for _ in 0..iterations {
        let t0 = theta(&phi);
        if t0 == 0.0 {
            break;
        }
        let jac = Matrix3::from_row_slice(&a) + Matrix3::from_row_slice(&b) * wm;
        let Some(d) = jac.lu().solve(&-Vector3::from(phi)) else {
            break;
        };
        let mut alpha = 1.0;
        let mut next = None;
        for _ in 0..40 {
            let trial = [
                r[0] + alpha * d[0],
                r[1] + alpha * d[1],
                r[2] + alpha * d[2],
            ];
            let e = eval(trial);
            if theta(&e.0) <= (1.0 - 2e-4 * alpha) * t0 {
                next = Some((trial, e));
                break;
            }
            alpha *= 0.5;
        }
        let Some((trial, e)) = next else { break };
        r = trial;
        (phi, a, b) = e;
    }
    r
}

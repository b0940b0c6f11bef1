//! Contact laws of the smooth DEM and the damping–restitution map.
//!
//! Normal force (Tsuji, Tanaka and Ishida, Powder Technol. 71, 1992):
//! `F_n = max(0, k_n δ^p + η δ^{(p−1)/2} δ̇)` with `p = 3/2` (Hertz,
//! `k_n = (4/3) E* √R*`) or `p = 1` (linear), `η = ζ √(m* k_n)`. In the
//! units `δ = L u`, `t = T s` with `T² = m*/(k_n L^{p−1})` the impact
//! equation becomes `u'' = −u^p − ζ u^{(p−1)/2} u'`, independent of the
//! impact speed: the restitution coefficient is a function `e(ζ)` of ζ alone
//! (for Hertz this is the result of Antypov and Elliott, EPL 94, 2011).
//! [`damping_for_restitution`] inverts it numerically (RK4 on the
//! dimensionless equation with the no-attraction clamp, then bisection), so
//! a chosen `e` is reproduced exactly rather than through a fitted formula.

/// Normal force law of the smooth DEM.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum SmoothLaw {
    /// Hertz-Mindlin (`p = 3/2`), stiffness from the materials.
    #[default]
    Hertz,
    /// Linear spring-dashpot with stiffness `k_n` [N/m]; tangential
    /// stiffness `2/7 k_n`.
    Linear {
        /// `k_n` [N/m].
        stiffness: f64,
    },
    /// Linear spring-dashpot whose stiffness follows the pair's effective
    /// modulus, `k_n = E* L` (so that species of different Young's modulus
    /// give different contact stiffnesses); tangential `2/7 k_n`.
    LinearModulus {
        /// The length `L` \[m\].
        length: f64,
    },
}

impl SmoothLaw {
    /// The exponent `p`.
    pub fn exponent(&self) -> f64 {
        match self {
            SmoothLaw::Hertz => 1.5,
            SmoothLaw::Linear { .. } | SmoothLaw::LinearModulus { .. } => 1.0,
        }
    }
}

/// Restitution `e(ζ)` of one normal impact with exponent `p` (see the
/// module docs), from the dimensionless equation integrated by RK4.
pub fn restitution_of_damping(zeta: f64, p: f64) -> f64 {
    let accel = |u: f64, v: f64| {
        if u <= 0.0 {
            return 0.0;
        }
        // force with the no-attraction clamp
        let f = u.powf(p) + zeta * u.powf(0.5 * (p - 1.0)) * v;
        -f.max(0.0)
    };
    let h = 2e-4;
    let (mut u, mut v) = (0.0f64, 1.0f64);
    for _ in 0..2_000_000 {
        let (k1u, k1v) = (v, accel(u, v));
        let (k2u, k2v) = (
            v + 0.5 * h * k1v,
            accel(u + 0.5 * h * k1u, v + 0.5 * h * k1v),
        );
        let (k3u, k3v) = (
            v + 0.5 * h * k2v,
            accel(u + 0.5 * h * k2u, v + 0.5 * h * k2v),
        );
        let (k4u, k4v) = (v + h * k3v, accel(u + h * k3u, v + h * k3v));
        let un = u + h / 6.0 * (k1u + 2.0 * k2u + 2.0 * k3u + k4u);
        let vn = v + h / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v);
        if un <= 0.0 && vn < 0.0 {
            return -vn;
        }
        // stuck (overdamped without rebound)
        if vn.abs() < 1e-12 && un > 0.0 && accel(un, vn) == 0.0 {
            return 0.0;
        }
        u = un;
        v = vn;
    }
    0.0
}

/// The damping ζ that gives restitution `e` (0 < e ≤ 1) for exponent `p`.
pub fn damping_for_restitution(e: f64, p: f64) -> f64 {
    if e >= 1.0 {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while restitution_of_damping(hi, p) > e && hi < 1e3 {
        hi *= 2.0;
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if restitution_of_damping(mid, p) > e {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

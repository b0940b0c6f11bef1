//! Compact Jacobian blocks of one contact (warm-starting paper, appendix A;
//! `docs/theory.md`, "Contact rows").
//!
//! One contact between bodies a and b has six rows, in this order:
//!
//! | row | kind | `G_a` | `G_b` |
//! |---|---|---|---|
//! | 0 | normal | `s_n [nᵀ, (d_a×n)ᵀ]` | `−s_n [nᵀ, (d_b×n)ᵀ]` |
//! | 1, 2 | friction | `[t_iᵀ, (d_a×t_i)ᵀ]` | `−[t_iᵀ, (d_b×t_i)ᵀ]` |
//! | 3, 4, 5 | rolling, twisting | `[0, t1ᵀ], [0, t2ᵀ], [0, nᵀ]` | negated |
//!
//! with the Hertz scaling `s_n = e_H δ^{e_H−1}` on the normal row. Instead of
//! two dense 6×6 blocks (72 numbers) a contact stores its frame, the six lever
//! arm cross products and `s_n` (28 numbers); products with `G`, `Gᵀ` and
//! `M⁻¹Gᵀ` are formed on the fly.

use crate::{
    ContactFrame, InverseMass, MathError, Vec3, Velocity6,
    error::{finite, finite_vec},
};

/// Number of constraint rows of a full contact (1 normal, 2 friction,
/// 3 rolling/twisting).
pub const ROWS_PER_CONTACT: usize = 6;

/// The kind of a constraint row, for residual statistics and warm starting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RowKind {
    /// Non-penetration (unilateral) row.
    Normal,
    /// Tangential friction row.
    Friction,
    /// Rolling or twisting resistance row.
    Rolling,
    /// Bilateral joint or motor row.
    Bilateral,
}

impl RowKind {
    /// All row kinds, in reporting order.
    pub const ALL: [RowKind; 4] = [
        RowKind::Normal,
        RowKind::Friction,
        RowKind::Rolling,
        RowKind::Bilateral,
    ];

    /// Kind of row `j` (0..6) of a contact.
    pub const fn of_contact_row(j: usize) -> RowKind {
        match j {
            0 => RowKind::Normal,
            1 | 2 => RowKind::Friction,
            _ => RowKind::Rolling,
        }
    }

    /// Lower-case name used in reports and CSV headers.
    pub const fn name(self) -> &'static str {
        match self {
            RowKind::Normal => "normal",
            RowKind::Friction => "friction",
            RowKind::Rolling => "rolling",
            RowKind::Bilateral => "bilateral",
        }
    }
}

/// The normal constraint function value and its Hertz scaling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NormalRow {
    /// Constraint value `g` (`−δ^{e_H}` when overlapping, `φ` when apart).
    pub g: f64,
    /// Row scaling `s_n = ∂g/∂φ`.
    pub scale: f64,
}

/// The regularized normal constraint for signed gap `φ` and Hertz exponent
/// `e_H` (`docs/theory.md`, "Contact rows").
///
/// * Overlapping (`φ < 0`, `δ = −φ`): `g = −δ^{e_H}`,
///   `s_n = e_H max(δ, δ₀)^{e_H−1}`. The floor `δ₀ = overlap_floor` only
///   keeps `s_n` away from exactly zero; it does not change `g`.
/// * Apart or touching (`φ ≥ 0`, pairs found inside the contact margin):
///   the linear form `g = φ`, `s_n = 1`, which stops approach at `φ = 0`
///   (`docs/theory.md`, "Zero overlap"). For `e_H = 1` both branches coincide.
pub fn normal_row(gap: f64, exponent: f64, overlap_floor: f64) -> NormalRow {
    if gap >= 0.0 || exponent == 1.0 {
        NormalRow { g: gap, scale: 1.0 }
    } else {
        let delta = -gap;
        NormalRow {
            g: -delta.powf(exponent),
            scale: exponent * delta.max(overlap_floor).powf(exponent - 1.0),
        }
    }
}

/// One general constraint row acting on two bodies:
/// `G_j = [lin_aᵀ, ang_aᵀ, lin_bᵀ, ang_bᵀ]`. Used for bilateral joint rows and
/// for problems built from sparse matrices.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct JacobianRow {
    /// Linear part on body a.
    pub linear_a: Vec3,
    /// Angular part on body a.
    pub angular_a: Vec3,
    /// Linear part on body b.
    pub linear_b: Vec3,
    /// Angular part on body b.
    pub angular_b: Vec3,
}

impl JacobianRow {
    /// `G_j v`.
    #[inline]
    pub fn dot(&self, va: &Velocity6, vb: &Velocity6) -> f64 {
        self.linear_a.dot(&va.linear)
            + self.angular_a.dot(&va.angular)
            + self.linear_b.dot(&vb.linear)
            + self.angular_b.dot(&vb.angular)
    }

    /// `G_jᵀ λ`, the generalized impulses on a and b.
    pub fn transpose_apply(&self, lambda: f64) -> (Velocity6, Velocity6) {
        (
            Velocity6::new(self.linear_a * lambda, self.angular_a * lambda),
            Velocity6::new(self.linear_b * lambda, self.angular_b * lambda),
        )
    }

    /// `G_j M⁻¹ G_jᵀ`.
    pub fn effective_inverse_mass(&self, inv_a: &InverseMass, inv_b: &InverseMass) -> f64 {
        inv_a.inv_mass * self.linear_a.norm_squared()
            + self.angular_a.dot(&(inv_a.inv_inertia * self.angular_a))
            + inv_b.inv_mass * self.linear_b.norm_squared()
            + self.angular_b.dot(&(inv_b.inv_inertia * self.angular_b))
    }

    /// The row as 12 numbers `[lin_a, ang_a, lin_b, ang_b]`.
    pub fn to_array(&self) -> [f64; 12] {
        let mut out = [0.0; 12];
        out[0..3].copy_from_slice(self.linear_a.as_slice());
        out[3..6].copy_from_slice(self.angular_a.as_slice());
        out[6..9].copy_from_slice(self.linear_b.as_slice());
        out[9..12].copy_from_slice(self.angular_b.as_slice());
        out
    }

    /// Checks that every entry is finite.
    pub fn validate(&self, field: &'static str) -> Result<(), MathError> {
        for &x in self.to_array().iter() {
            finite(field, x)?;
        }
        Ok(())
    }
}

/// The compact Jacobian of one contact: frame, lever arms and the Hertz
/// scaling `s_n` of the normal row (128 bytes). The blocks' angular parts
/// `d × u` are formed where they are used ([`Self::arm_cross_a`]): a
/// solver sweep over many contacts reads memory, not arithmetic, at scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContactJacobian {
    /// Contact frame `(n, t1, t2)`.
    pub frame: ContactFrame,
    /// Lever arm `d_a` from body a's centre to the contact point.
    pub arm_a: Vec3,
    /// Lever arm `d_b` from body b's centre to the contact point.
    pub arm_b: Vec3,
    /// Normal row scaling `s_n`.
    pub normal_scale: f64,
}

impl ContactJacobian {
    /// The Jacobian from the frame, the lever arms `d_a`, `d_b` and the
    /// normal scaling `s_n`.
    pub fn new(frame: ContactFrame, arm_a: &Vec3, arm_b: &Vec3, normal_scale: f64) -> Self {
        Self {
            frame,
            arm_a: *arm_a,
            arm_b: *arm_b,
            normal_scale,
        }
    }

    /// `d_a × u_j` for translational row `j ∈ {0,1,2}` (`u = n, t1, t2`).
    #[inline(always)]
    pub fn arm_cross_a(&self, j: usize) -> Vec3 {
        self.arm_a.cross(&self.direction(j))
    }

    /// `d_b × u_j` for translational row `j ∈ {0,1,2}`.
    #[inline(always)]
    pub fn arm_cross_b(&self, j: usize) -> Vec3 {
        self.arm_b.cross(&self.direction(j))
    }

    /// Checks that all stored numbers are finite and `s_n > 0`.
    pub fn validate(&self) -> Result<(), MathError> {
        finite_vec("jacobian.arm_a", &self.arm_a)?;
        finite_vec("jacobian.arm_b", &self.arm_b)?;
        for j in 0..ROWS_PER_CONTACT {
            self.row(j).validate("jacobian")?;
        }
        crate::error::positive("normal_scale", self.normal_scale)?;
        Ok(())
    }

    /// Direction (unit) of translational row `j ∈ {0,1,2}` or rotational row
    /// `j ∈ {3,4,5}`: `n, t1, t2, t1, t2, n`.
    #[inline]
    pub fn direction(&self, j: usize) -> Vec3 {
        match j {
            0 | 5 => self.frame.normal,
            1 | 3 => self.frame.tangent1,
            _ => self.frame.tangent2,
        }
    }

    /// Row `j` as a general [`JacobianRow`] (includes the scaling `s_n`).
    #[inline]
    pub fn row(&self, j: usize) -> JacobianRow {
        match j {
            0..=2 => {
                let s = if j == 0 { self.normal_scale } else { 1.0 };
                let u = self.direction(j);
                JacobianRow {
                    linear_a: u * s,
                    angular_a: self.arm_cross_a(j) * s,
                    linear_b: -u * s,
                    angular_b: -self.arm_cross_b(j) * s,
                }
            }
            _ => {
                let u = self.direction(j);
                JacobianRow {
                    linear_a: Vec3::zeros(),
                    angular_a: u,
                    linear_b: Vec3::zeros(),
                    angular_b: -u,
                }
            }
        }
    }

    /// `G v` for all six rows: `[s_n u_n, u_t1, u_t2, ω_t1, ω_t2, ω_n]` where
    /// `u = v_a + ω_a × d_a − v_b − ω_b × d_b` (computed through the cross
    /// products `d × u`) and `ω = ω_a − ω_b`.
    #[inline]
    pub fn velocity(&self, va: &Velocity6, vb: &Velocity6) -> [f64; 6] {
        let dv = va.linear - vb.linear;
        let dw = va.angular - vb.angular;
        let f = &self.frame;
        let tr = |j: usize, u: &Vec3| {
            u.dot(&dv) + self.arm_cross_a(j).dot(&va.angular) - self.arm_cross_b(j).dot(&vb.angular)
        };
        [
            self.normal_scale * tr(0, &f.normal),
            tr(1, &f.tangent1),
            tr(2, &f.tangent2),
            f.tangent1.dot(&dw),
            f.tangent2.dot(&dw),
            f.normal.dot(&dw),
        ]
    }

    /// `G_n v = s_n u_n`, the normal row of [`Self::velocity`] with its
    /// arithmetic (the same number bit for bit; [`Self::row_velocity`] of
    /// row 0), without the five other rows: what the stepper's assembly
    /// reads of a contact's velocity (the impact test `u_n < −v_imp` and
    /// SPOOK's `Υ G_n v_i`).
    #[inline]
    pub fn normal_velocity(&self, va: &Velocity6, vb: &Velocity6) -> f64 {
        self.row_velocity(0, va, vb)
    }

    /// `G_j v` for one row.
    #[inline]
    pub fn row_velocity(&self, j: usize, va: &Velocity6, vb: &Velocity6) -> f64 {
        match j {
            0..=2 => {
                let s = if j == 0 { self.normal_scale } else { 1.0 };
                let u = self.direction(j);
                s * (u.dot(&(va.linear - vb.linear)) + self.arm_cross_a(j).dot(&va.angular)
                    - self.arm_cross_b(j).dot(&vb.angular))
            }
            _ => self.direction(j).dot(&(va.angular - vb.angular)),
        }
    }

    /// World-frame contact impulse of the translational rows,
    /// `P = s_n λ_n n + λ_t1 t1 + λ_t2 t2`, and rolling/twisting impulse
    /// `T = λ_r1 t1 + λ_r2 t2 + λ_r3 n`, for a 6-row multiplier.
    #[inline]
    pub fn world_impulses(&self, lambda: &[f64]) -> (Vec3, Vec3) {
        let f = &self.frame;
        let mut p = f.normal * (self.normal_scale * lambda[0]);
        let mut t = Vec3::zeros();
        if lambda.len() > 1 {
            p += f.tangent1 * lambda[1] + f.tangent2 * lambda[2];
        }
        if lambda.len() > 3 {
            t = f.tangent1 * lambda[3] + f.tangent2 * lambda[4] + f.normal * lambda[5];
        }
        (p, t)
    }

    /// `Gᵀ λ` for the first `lambda.len()` rows (1, 3 or 6): the generalized
    /// impulses on body a and body b. With `P`, `T` from
    /// [`Self::world_impulses`]: on a `(P, d_a × P + T)`, on b `−(P, d_b × P + T)`.
    #[inline]
    pub fn transpose_apply(&self, lambda: &[f64]) -> (Velocity6, Velocity6) {
        let mut ang_a = self.arm_cross_a(0) * (self.normal_scale * lambda[0]);
        let mut ang_b = self.arm_cross_b(0) * (self.normal_scale * lambda[0]);
        if lambda.len() > 1 {
            ang_a += self.arm_cross_a(1) * lambda[1] + self.arm_cross_a(2) * lambda[2];
            ang_b += self.arm_cross_b(1) * lambda[1] + self.arm_cross_b(2) * lambda[2];
        }
        let (p, t) = self.world_impulses(lambda);
        (
            Velocity6::new(p, ang_a + t),
            Velocity6::new(-p, -(ang_b + t)),
        )
    }

    /// `M⁻¹ Gᵀ λ`: the velocity changes of a and b caused by `λ`.
    #[inline]
    pub fn velocity_change(
        &self,
        inv_a: &InverseMass,
        inv_b: &InverseMass,
        lambda: &[f64],
    ) -> (Velocity6, Velocity6) {
        let (ia, ib) = self.transpose_apply(lambda);
        (
            Velocity6::new(ia.linear * inv_a.inv_mass, inv_a.inv_inertia * ia.angular),
            Velocity6::new(ib.linear * inv_b.inv_mass, inv_b.inv_inertia * ib.angular),
        )
    }

    /// Diagonal of `G M⁻¹ Gᵀ` for the six rows.
    ///
    /// Row by row [`JacobianRow::effective_inverse_mass`], with the same
    /// arithmetic; a body with an isotropic inverse inertia (a sphere) is
    /// applied as a scalar ([`InverseMass::isotropic_inertia`]).
    pub fn diagonal(&self, inv_a: &InverseMass, inv_b: &InverseMass) -> [f64; 6] {
        let (ma, mb) = (inv_a.inv_mass, inv_b.inv_mass);
        match (inv_a.isotropic_inertia(), inv_b.isotropic_inertia()) {
            (Some(ka), Some(kb)) => self.diagonal_with(ma, &ka, mb, &kb),
            (Some(ka), None) => self.diagonal_with(ma, &ka, mb, &inv_b.inv_inertia),
            (None, Some(kb)) => self.diagonal_with(ma, &inv_a.inv_inertia, mb, &kb),
            (None, None) => self.diagonal_with(ma, &inv_a.inv_inertia, mb, &inv_b.inv_inertia),
        }
    }

    /// [`Self::diagonal`] of two bodies with isotropic inverse inertia (a
    /// sphere, a static body), given as `(1/m, k)` with `I⁻¹ = k 1`: the
    /// same arithmetic, from 16 bytes per body instead of a matrix.
    pub fn diagonal_isotropic(
        &self,
        (mass_a, inertia_a): (f64, f64),
        (mass_b, inertia_b): (f64, f64),
    ) -> [f64; 6] {
        self.diagonal_with(mass_a, &inertia_a, mass_b, &inertia_b)
    }

    /// [`Self::diagonal`] with the inverse inertias as scalars or matrices.
    /// The terms and their order are those of
    /// [`JacobianRow::effective_inverse_mass`] on [`Self::row`]; b's
    /// negated row entries are used unnegated (the same squares and
    /// products) and a rotational row's zero linear terms are added as
    /// zeros.
    #[inline(always)]
    fn diagonal_with(
        &self,
        mass_a: f64,
        inertia_a: &impl InertiaProduct,
        mass_b: f64,
        inertia_b: &impl InertiaProduct,
    ) -> [f64; 6] {
        let mut d = [0.0; 6];
        for (j, dj) in d.iter_mut().enumerate().take(3) {
            let s = if j == 0 { self.normal_scale } else { 1.0 };
            let linear = self.direction(j) * s;
            let (angular_a, angular_b) = (self.arm_cross_a(j) * s, self.arm_cross_b(j) * s);
            let linear_sq = linear.norm_squared();
            *dj = mass_a * linear_sq
                + angular_a.dot(&inertia_a.apply(&angular_a))
                + mass_b * linear_sq
                + angular_b.dot(&inertia_b.apply(&angular_b));
        }
        for (j, dj) in d.iter_mut().enumerate().skip(3) {
            let u = self.direction(j);
            *dj = 0.0 + u.dot(&inertia_a.apply(&u)) + 0.0 + u.dot(&inertia_b.apply(&u));
        }
        d
    }

    /// The 6×6 block `G_α M⁻¹ G_αᵀ` of this contact (for blocked PGS).
    pub fn block(&self, inv_a: &InverseMass, inv_b: &InverseMass) -> nalgebra::Matrix6<f64> {
        let rows: [JacobianRow; 6] = std::array::from_fn(|j| self.row(j));
        let mut m = nalgebra::Matrix6::zeros();
        for i in 0..6 {
            let ri = &rows[i];
            let (ma, mb) = (
                (
                    ri.linear_a * inv_a.inv_mass,
                    inv_a.inv_inertia * ri.angular_a,
                ),
                (
                    ri.linear_b * inv_b.inv_mass,
                    inv_b.inv_inertia * ri.angular_b,
                ),
            );
            for k in i..6 {
                let rk = &rows[k];
                let v = rk.linear_a.dot(&ma.0)
                    + rk.angular_a.dot(&ma.1)
                    + rk.linear_b.dot(&mb.0)
                    + rk.angular_b.dot(&mb.1);
                m[(i, k)] = v;
                m[(k, i)] = v;
            }
        }
        m
    }
}

/// `x ↦ I⁻¹ x` for one body: a scalar product when `I⁻¹ = k 1`.
trait InertiaProduct {
    fn apply(&self, x: &Vec3) -> Vec3;
}

impl InertiaProduct for f64 {
    #[inline(always)]
    fn apply(&self, x: &Vec3) -> Vec3 {
        x * *self
    }
}

impl InertiaProduct for crate::Mat3 {
    #[inline(always)]
    fn apply(&self, x: &Vec3) -> Vec3 {
        self * x
    }
}

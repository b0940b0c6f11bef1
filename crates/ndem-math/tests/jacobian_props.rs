//! Property tests of the contact Jacobian blocks against kinematics.

use ndem_math::proptest_support::*;
use ndem_math::{
    ContactFrame, ContactJacobian, InverseMass, Mat3, Quat, Vec3, Velocity6, integrate_orientation,
    jacobian::normal_row,
};
use proptest::prelude::*;

/// Two spheres a (centre xa, radius ra) and b; the contact point sits midway
/// in the overlap along the centre line.
#[derive(Debug)]
struct Pair {
    xa: Vec3,
    xb: Vec3,
    ra: f64,
    rb: f64,
}

impl Pair {
    fn gap(&self) -> f64 {
        (self.xa - self.xb).norm() - self.ra - self.rb
    }
    fn normal(&self) -> Vec3 {
        (self.xa - self.xb).normalize()
    }
    fn arms(&self) -> (Vec3, Vec3) {
        let n = self.normal();
        let phi = self.gap();
        // contact point: on b's surface shifted by half the gap
        let p = self.xb + n * (self.rb + 0.5 * phi);
        (p - self.xa, p - self.xb)
    }
    fn advanced(&self, va: &Velocity6, vb: &Velocity6, h: f64) -> Pair {
        Pair {
            xa: self.xa + va.linear * h,
            xb: self.xb + vb.linear * h,
            ra: self.ra,
            rb: self.rb,
        }
    }
}

fn overlapping_pair() -> impl Strategy<Value = Pair> {
    (
        vec3(1.0),
        unit_vector(),
        0.01f64..0.5,
        0.01f64..0.5,
        0.001f64..0.2,
    )
        .prop_map(|(xb, n, ra, rb, rel_overlap)| {
            let overlap = rel_overlap * ra.min(rb);
            Pair {
                xa: xb + n * (ra + rb - overlap),
                xb,
                ra,
                rb,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// `G_n v` equals dg/dt for g = −δ^{e_H} (central differences, rel. 1e-6).
    #[test]
    fn normal_row_is_time_derivative_of_g(pair in overlapping_pair(), va in velocity(1.0), vb in velocity(1.0), hertz in any::<bool>()) {
        let e_h = if hertz { 1.25 } else { 1.0 };
        let (da, db) = pair.arms();
        let frame = ContactFrame::from_normal(&pair.normal()).unwrap();
        let nr = normal_row(pair.gap(), e_h, 1e-300);
        let jac = ContactJacobian::new(frame, &da, &db, nr.scale);
        let gv = jac.velocity(&va, &vb)[0];
        // Spheres: only centre motion changes the gap; rotation does not.
        let delta = -pair.gap();
        let h = 1e-3 * delta / (va.linear - vb.linear).norm().max(1e-12);
        let gp = normal_row(pair.advanced(&va, &vb, h).gap(), e_h, 1e-300).g;
        let gm = normal_row(pair.advanced(&va, &vb, -h).gap(), e_h, 1e-300).g;
        let fd = (gp - gm) / (2.0 * h);
        let scale = gv.abs().max(nr.scale * (va.linear - vb.linear).norm()).max(1e-12);
        prop_assert!((gv - fd).abs() <= 1e-6 * scale, "G_n v = {gv}, fd = {fd}");
    }

    /// `G_t v` is the tangential relative velocity at the contact point and
    /// `G_r v` the relative angular velocity in the contact frame.
    #[test]
    fn friction_and_rolling_rows_are_relative_velocities(pair in overlapping_pair(), va in velocity(2.0), vb in velocity(2.0)) {
        let (da, db) = pair.arms();
        let frame = ContactFrame::from_normal(&pair.normal()).unwrap();
        let jac = ContactJacobian::new(frame, &da, &db, 1.0);
        let gv = jac.velocity(&va, &vb);
        let u = va.point_velocity(&da) - vb.point_velocity(&db);
        let w = va.angular - vb.angular;
        let tol = 1e-12 * (1.0 + u.norm() + w.norm());
        prop_assert!((gv[0] - frame.normal.dot(&u)).abs() < tol);
        prop_assert!((gv[1] - frame.tangent1.dot(&u)).abs() < tol);
        prop_assert!((gv[2] - frame.tangent2.dot(&u)).abs() < tol);
        prop_assert!((gv[3] - frame.tangent1.dot(&w)).abs() < tol);
        prop_assert!((gv[4] - frame.tangent2.dot(&w)).abs() < tol);
        prop_assert!((gv[5] - frame.normal.dot(&w)).abs() < tol);
        for j in 0..6 {
            prop_assert!((jac.row_velocity(j, &va, &vb) - gv[j]).abs() < tol);
            prop_assert!((jac.row(j).dot(&va, &vb) - gv[j]).abs() < tol);
        }
    }

    /// ⟨G v, λ⟩ = ⟨v, Gᵀ λ⟩ for arbitrary arms, scaling and multipliers.
    #[test]
    fn transpose_is_adjoint(n in unit_vector(), da in vec3(1.0), db in vec3(1.0), s in 0.01f64..3.0,
                            va in velocity(1.0), vb in velocity(1.0), lam in prop::array::uniform6(-5.0f64..5.0f64)) {
        let jac = ContactJacobian::new(ContactFrame::from_unit_normal(n), &da, &db, s);
        let gv = jac.velocity(&va, &vb);
        let lhs: f64 = gv.iter().zip(lam.iter()).map(|(a, b)| a * b).sum();
        let (ia, ib) = jac.transpose_apply(&lam);
        let rhs = va.dot(&ia) + vb.dot(&ib);
        prop_assert!((lhs - rhs).abs() <= 1e-12 * (1.0 + lhs.abs()), "{lhs} vs {rhs}");
        // Prefixes (1 or 3 rows) are the transposes of the leading rows.
        for m in [1usize, 3] {
            let (pa, pb) = jac.transpose_apply(&lam[..m]);
            let l: f64 = gv[..m].iter().zip(lam[..m].iter()).map(|(a, b)| a * b).sum();
            prop_assert!((l - (va.dot(&pa) + vb.dot(&pb))).abs() <= 1e-12 * (1.0 + l.abs()));
        }
    }

    /// The diagonal and the block of G M⁻¹ Gᵀ agree with explicit products.
    #[test]
    fn effective_mass_matches_products(n in unit_vector(), da in vec3(1.0), db in vec3(1.0), s in 0.01f64..3.0,
                                       ia in inverse_mass(), ib in inverse_mass(), lam in prop::array::uniform6(-5.0f64..5.0f64)) {
        let jac = ContactJacobian::new(ContactFrame::from_unit_normal(n), &da, &db, s);
        let block = jac.block(&ia, &ib);
        let diag = jac.diagonal(&ia, &ib);
        let (dva, dvb) = jac.velocity_change(&ia, &ib, &lam);
        let g_minv_gt_lam = jac.velocity(&dva, &dvb);
        let l = nalgebra::Vector6::from_row_slice(&lam);
        let prod = block * l;
        for j in 0..6 {
            prop_assert!((block[(j, j)] - diag[j]).abs() <= 1e-10 * (1.0 + diag[j].abs()));
            prop_assert!((prod[j] - g_minv_gt_lam[j]).abs() <= 1e-9 * (1.0 + prod[j].abs()));
        }
    }

    /// The diagonal is the rows' `G_j M⁻¹ G_jᵀ` with the same arithmetic
    /// (equal numbers, not only close ones: the stepper's trajectories rest
    /// on it), whether the inverse inertias are general, isotropic (applied
    /// as scalars, also from the scalars alone: `diagonal_isotropic`) or
    /// zero.
    #[test]
    fn diagonal_is_the_rows_effective_mass_exactly(n in unit_vector(), da in vec3(1.0), db in vec3(1.0), s in 0.01f64..3.0,
                                                   general in inverse_mass(), k in 0.0f64..1e4, m in 0.0f64..1e2, kinds in (0usize..3, 0usize..3)) {
        let jac = ContactJacobian::new(ContactFrame::from_unit_normal(n), &da, &db, s);
        let isotropic = InverseMass { inv_mass: m, inv_inertia: Mat3::identity() * k };
        let pick = |kind: usize| [general, isotropic, InverseMass::INFINITE_MASS][kind];
        let (ia, ib) = (pick(kinds.0), pick(kinds.1));
        let diag = jac.diagonal(&ia, &ib);
        for (j, d) in diag.iter().enumerate() {
            prop_assert_eq!(*d, jac.row(j).effective_inverse_mass(&ia, &ib), "row {}", j);
        }
        // from the scalars of two isotropic bodies: the same numbers
        if let (Some(ka), Some(kb)) = (ia.isotropic_inertia(), ib.isotropic_inertia()) {
            let scalar = jac.diagonal_isotropic((ia.inv_mass, ka), (ib.inv_mass, kb));
            prop_assert_eq!(scalar, diag);
        }
    }

    /// `normal_velocity` is the first of the six rows of `velocity`, the
    /// same number bit for bit (the assembly reads it alone; the
    /// trajectories rest on the equality), for any scaling `s_n`.
    #[test]
    fn normal_velocity_is_the_first_row_exactly(n in unit_vector(), da in vec3(1.0), db in vec3(1.0), s in 0.01f64..3.0,
                                                va in velocity(5.0), vb in velocity(5.0)) {
        let jac = ContactJacobian::new(ContactFrame::from_unit_normal(n), &da, &db, s);
        let all = jac.velocity(&va, &vb);
        prop_assert_eq!(jac.normal_velocity(&va, &vb).to_bits(), all[0].to_bits());
        prop_assert_eq!(jac.row_velocity(0, &va, &vb).to_bits(), all[0].to_bits());
    }

    /// The contact frame is orthonormal and right-handed.
    #[test]
    fn frame_is_orthonormal_right_handed(n in unit_vector()) {
        let f = ContactFrame::from_normal(&n).unwrap();
        for (u, name) in [(f.normal, "n"), (f.tangent1, "t1"), (f.tangent2, "t2")] {
            prop_assert!((u.norm() - 1.0).abs() < 1e-14, "{name} not unit");
        }
        prop_assert!(f.normal.dot(&f.tangent1).abs() < 1e-14);
        prop_assert!(f.normal.dot(&f.tangent2).abs() < 1e-14);
        prop_assert!(f.tangent1.dot(&f.tangent2).abs() < 1e-14);
        prop_assert!((f.tangent1.cross(&f.tangent2) - f.normal).norm() < 1e-14);
        // deterministic
        prop_assert_eq!(f, ContactFrame::from_normal(&n).unwrap());
        // round trip
        let x = Vec3::new(0.3, -1.2, 2.0);
        prop_assert!((f.to_world(&f.to_local(&x)) - x).norm() < 1e-13);
    }

    /// Quaternion updates stay unit length and agree with the rotation of
    /// angle |ω| Δt about ω.
    #[test]
    fn quaternion_update_stays_unit(q in rotation(), w in vec3(50.0), dt in 1e-5f64..0.1, steps in 1usize..200) {
        let mut qq = q;
        for _ in 0..steps {
            qq = integrate_orientation(&qq, &w, dt);
            prop_assert!((qq.quaternion().norm() - 1.0).abs() < 1e-14);
        }
        let exact = Quat::from_scaled_axis(w * (dt * steps as f64)) * q;
        prop_assert!(qq.angle_to(&exact) < 1e-9 * (1.0 + steps as f64));
    }
}

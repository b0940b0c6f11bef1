//! One contact's rows as a sweep updates them ([`Local`]): the decoupled pass through the contact point, the coupled rows one by one, rolling and twisting, and the largest correction.

use super::*;

impl<A: AngularResponse, B: AngularResponse> Local<'_, A, B> {
    /// Unprojected candidate `λ_j − ω w_j / D_jj` of row `J`. Written so
    /// that only `G_J v` sits on the dependency chain from the previous
    /// row's velocity update (Gauss-Seidel is latency bound).
    #[inline(always)]
    pub(super) fn candidate<const J: usize>(&self, lam: &[f64]) -> f64 {
        let gv = self.c.jacobian.row_velocity(J, &self.va, &self.vb);
        self.candidate_at::<J>(lam, gv)
    }

    /// The candidate of row `J` given its `G_J v`.
    #[inline(always)]
    pub(super) fn candidate_at<const J: usize>(&self, lam: &[f64], gv: f64) -> f64 {
        let c = self.c;
        let k = self.relaxed_inv_d[J];
        let base = lam[J] - k * (c.row_sigma(self.k, J) * lam[J] + c.rhs(self.rhs_t, J));
        base - k * gv
    }

    /// Sets `λ_J = new` and returns `Δλ_J` (tracking finiteness and the
    /// largest correction), without touching the velocities: the decoupled
    /// pass applies a group's impulse at once, [`Self::update`] a row's.
    #[inline(always)]
    pub(super) fn set<const J: usize>(&mut self, lam: &mut [f64], new: f64) -> f64 {
        let delta = new - lam[J];
        self.finite &= new.is_finite();
        lam[J] = new;
        if self.track {
            self.corrections[J] = self.corrections[J].max(delta.abs());
        }
        delta
    }

    /// Sets `λ_J = new` and applies `M⁻¹ G_Jᵀ Δλ_J`. The response vectors
    /// (`m⁻¹ u`, `I⁻¹ (d × u)`) do not depend on `Δλ`, so they are formed
    /// off the dependency chain; the update is applied unconditionally
    /// (a zero `Δλ` adds zeros) to avoid unpredictable branches.
    #[inline(always)]
    pub(super) fn update<const J: usize>(&mut self, lam: &mut [f64], new: f64) {
        let delta = self.set::<J>(lam, new);
        let jac = &self.c.jacobian;
        let u = jac.direction(J);
        if J < 3 {
            let lin_a = u * self.mass_a;
            let lin_b = u * self.mass_b;
            let ang_a = self.resp_a.apply(jac.arm_cross_a(J));
            let ang_b = self.resp_b.apply(jac.arm_cross_b(J));
            let s = if J == 0 {
                jac.normal_scale * delta
            } else {
                delta
            };
            self.va.linear += lin_a * s;
            self.vb.linear -= lin_b * s;
            self.va.angular += ang_a * s;
            self.vb.angular -= ang_b * s;
        } else {
            let ang_a = self.resp_a.apply(u);
            let ang_b = self.resp_b.apply(u);
            self.va.angular += ang_a * delta;
            self.vb.angular -= ang_b * delta;
        }
    }

    /// The largest correction `D_jj |Δλ_j|` over the rows set so far (0
    /// when not tracked): each row's largest `|Δλ_j|` times `D_jj`, the
    /// same number as the largest of the products formed per update
    /// (rounding is monotone and `D_jj ≥ 0`), with the six divisions
    /// side by side instead of one in each row update (with one division
    /// per update the impact stage, which tracks every sweep, sweeps 17 %
    /// slower than with the tracking switched off).
    #[inline(always)]
    pub(super) fn max_corr(&self) -> f64 {
        if !self.track {
            return 0.0;
        }
        if let Ok(inv_d) = <&[f64; 6]>::try_from(self.inv_d) {
            let terms: [f64; 6] = std::array::from_fn(|j| self.corrections[j] * diag_of(inv_d[j]));
            return terms.iter().fold(0.0, |m, &t| m.max(t));
        }
        let rows = self.inv_d.iter().zip(&self.corrections);
        rows.fold(0.0, |m, (&x, &c)| m.max(c * diag_of(x)))
    }

    /// Residual `w_J = G_J v + Σ_J λ_J + b_J` of row `J`.
    #[inline(always)]
    pub(super) fn residual<const J: usize>(&self, lam: &[f64]) -> f64 {
        let c = self.c;
        c.row_sigma(self.k, J) * lam[J]
            + c.rhs(self.rhs_t, J)
            + c.jacobian.row_velocity(J, &self.va, &self.vb)
    }

    /// The two friction rows (`J0 = 1`) or the two rolling rows (`J0 = 3`).
    /// Box: one clamped row after the other. Disk: when the pair's block
    /// is a multiple of the identity, the jointly projected step (exact);
    /// otherwise the exact local solve over the disk ([`disk_qp`]), relaxed
    /// by ω and projected. Either way the fixed point is Coulomb's law in
    /// the rows' coordinates.
    #[inline(always)]
    pub(super) fn pair<const J0: usize, const J1: usize>(
        &mut self,
        set: FrictionSet,
        bound: f64,
        lam: &mut [f64],
    ) {
        match set {
            FrictionSet::Box => {
                let c0 = self.candidate::<J0>(lam).clamp_to(-bound, bound);
                self.update::<J0>(lam, c0);
                let c1 = self.candidate::<J1>(lam).clamp_to(-bound, bound);
                self.update::<J1>(lam, c1);
            }
            FrictionSet::Disk => {
                let block = if J0 == 1 {
                    self.shape.friction
                } else {
                    self.shape.rolling
                };
                let mut p = match block {
                    None => [self.candidate::<J0>(lam), self.candidate::<J1>(lam)],
                    Some(a) => {
                        let x0 = [lam[J0], lam[J1]];
                        let w = [self.residual::<J0>(lam), self.residual::<J1>(lam)];
                        let x = disk_qp(a, x0, w, bound);
                        [
                            x0[0] + self.omega * (x[0] - x0[0]),
                            x0[1] + self.omega * (x[1] - x0[1]),
                        ]
                    }
                };
                crate::problem::project_pair(set, bound, &mut p);
                self.update::<J0>(lam, p[0]);
                self.update::<J1>(lam, p[1]);
            }
        }
    }

    /// The same pass for a contact whose rows are mutually decoupled within
    /// the groups {normal, friction} and {rolling, twisting}
    /// (`G_i M⁻¹ G_jᵀ = 0`: spheres and other isotropic bodies with lever
    /// arms along `n`). Candidates of a group are then independent of each
    /// other's updates, so computing them from the same velocity gives the
    /// row-wise Gauss-Seidel result (to round-off) with a dependency chain of
    /// two links instead of six.
    ///
    /// A group is handled through the contact point: its rows' `G_j v` are
    /// the components of the relative velocity `w = Δv + ω_a × d_a −
    /// ω_b × d_b` along `n, t1, t2` (`(d × u)·ω = u·(ω × d)`), and their
    /// update is one impulse `P = s_n Δλ_n n + Δλ_t1 t1 + Δλ_t2 t2`, applied
    /// as `Δv_a = m_a⁻¹ P`, `Δω_a = I_a⁻¹ (d_a × P)` (and the opposite on
    /// b): two cross products per body and group instead of six. The same
    /// multipliers in exact arithmetic; in floating point the sums are
    /// grouped otherwise (`docs/solvers.md`, "The decoupled pass").
    #[inline(always)]
    pub(super) fn sweep_decoupled(&mut self, set: FrictionSet, lam: &mut [f64]) {
        let translational = self.decoupled_translational_candidates(lam);
        let force = self.decoupled_translational_update(set, lam, translational);
        if lam.len() >= 6 {
            let rotational = self.decoupled_rotational_candidates(lam, force);
            self.decoupled_rotational_update(set, lam, force, rotational);
        }
    }

    /// The normal row's projected candidate and the friction rows'
    /// unprojected ones, from the relative velocity at the contact point.
    #[inline(always)]
    pub(super) fn decoupled_translational_candidates(&self, lam: &[f64]) -> (f64, [f64; 2]) {
        let jac = &self.c.jacobian;
        let f = &jac.frame;
        let w = (self.va.linear - self.vb.linear) + self.va.angular.cross(&jac.arm_a)
            - self.vb.angular.cross(&jac.arm_b);
        let n = self
            .candidate_at::<0>(lam, jac.normal_scale * f.normal.dot(&w))
            .max(0.0);
        if lam.len() == 1 {
            return (n, [0.0; 2]);
        }
        let t = [
            self.candidate_at::<1>(lam, f.tangent1.dot(&w)),
            self.candidate_at::<2>(lam, f.tangent2.dot(&w)),
        ];
        (n, t)
    }

    /// Projects the friction candidates, sets the normal and friction rows
    /// and applies their impulse; returns the normal force `s_n λ_n`.
    #[inline(always)]
    pub(super) fn decoupled_translational_update(
        &mut self,
        set: FrictionSet,
        lam: &mut [f64],
        (n, mut t): (f64, [f64; 2]),
    ) -> f64 {
        let jac = &self.c.jacobian;
        let f = &jac.frame;
        if lam.len() == 1 {
            let d0 = self.set::<0>(lam, n);
            self.apply_translational(f.normal * (jac.normal_scale * d0));
            return 0.0;
        }
        let force = jac.normal_scale * n;
        crate::problem::project_pair(set, self.k.friction * force, &mut t);
        let d0 = self.set::<0>(lam, n);
        let d1 = self.set::<1>(lam, t[0]);
        let d2 = self.set::<2>(lam, t[1]);
        self.apply_translational(
            f.normal * (jac.normal_scale * d0) + f.tangent1 * d1 + f.tangent2 * d2,
        );
        force
    }

    /// The rolling and twisting rows' unprojected candidates.
    #[inline(always)]
    pub(super) fn decoupled_rotational_candidates(
        &self,
        lam: &[f64],
        force: f64,
    ) -> ([f64; 2], f64) {
        let f = &self.c.jacobian.frame;
        let bound = self.c.rolling_arm * force;
        let dw = self.va.angular - self.vb.angular;
        let r = [
            self.candidate_at::<3>(lam, f.tangent1.dot(&dw)),
            self.candidate_at::<4>(lam, f.tangent2.dot(&dw)),
        ];
        let tw = self
            .candidate_at::<5>(lam, f.normal.dot(&dw))
            .clamp_to(-bound, bound);
        (r, tw)
    }

    /// Projects the rolling candidates, sets rows 3-5 and applies their
    /// torque.
    #[inline(always)]
    pub(super) fn decoupled_rotational_update(
        &mut self,
        set: FrictionSet,
        lam: &mut [f64],
        force: f64,
        (mut r, tw): ([f64; 2], f64),
    ) {
        let f = &self.c.jacobian.frame;
        let bound = self.c.rolling_arm * force;
        crate::problem::project_pair(set, bound, &mut r);
        let d3 = self.set::<3>(lam, r[0]);
        let d4 = self.set::<4>(lam, r[1]);
        let d5 = self.set::<5>(lam, tw);
        let torque = f.tangent1 * d3 + f.tangent2 * d4 + f.normal * d5;
        self.va.angular += self.resp_a.apply(torque);
        self.vb.angular -= self.resp_b.apply(torque);
    }

    /// Applies the impulse `P` at the contact point: `Δv_a = m_a⁻¹ P`,
    /// `Δω_a = I_a⁻¹ (d_a × P)`, the opposite on b.
    #[inline(always)]
    pub(super) fn apply_translational(&mut self, impulse: Vec3) {
        let jac = &self.c.jacobian;
        self.va.linear += impulse * self.mass_a;
        self.vb.linear -= impulse * self.mass_b;
        self.va.angular += self.resp_a.apply(jac.arm_a.cross(&impulse));
        self.vb.angular -= self.resp_b.apply(jac.arm_b.cross(&impulse));
    }

    /// One row-wise Gauss-Seidel pass over the rows of the contact.
    #[inline(always)]
    pub(super) fn sweep(&mut self, set: FrictionSet, lam: &mut [f64]) {
        let m = lam.len();
        let n = self.candidate::<0>(lam).max(0.0);
        self.update::<0>(lam, n);
        if m == 1 {
            return;
        }
        let force = self.c.jacobian.normal_scale * lam[0];
        self.pair::<1, 2>(set, self.k.friction * force, lam);
        if m >= 6 {
            let bound = self.c.rolling_arm * force;
            self.pair::<3, 4>(set, bound, lam);
            let t = self.candidate::<5>(lam).clamp_to(-bound, bound);
            self.update::<5>(lam, t);
        }
    }
}

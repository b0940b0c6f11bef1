//! What a [`ContactProblem`] is and does: its sizes and parts, `v(λ) = v* + M⁻¹Gᵀλ`, `Gv`, the residual `w = Gv + Σλ + b`, the diagonal, `N λ`, the linear term and the projection onto the rows' bounds.

use super::*;

impl ContactProblem {
    /// The same problem with a different number of rows per contact (e.g.
    /// its frictionless part with [`ContactRows::Normal`]); generic rows are
    /// kept.
    pub fn with_contact_rows(&self, rows: ContactRows) -> ContactProblem {
        ContactProblem {
            rows,
            ..self.clone()
        }
    }

    /// The start of a cold solve: zero multipliers and the free velocity
    /// `v*` (`λ₀ = 0`, `v₀ = v*`), sized for this problem.
    pub fn cold_start(&self) -> (Vec<f64>, Vec<Velocity6>) {
        (vec![0.0; self.len()], self.free_velocity().to_vec())
    }

    /// Number of bodies.
    pub fn body_count(&self) -> usize {
        self.inverse_mass.len()
    }
    /// The contacts (put together from the problem's parts as they are
    /// read; see [`Contacts`]).
    pub fn contacts(&self) -> Contacts<'_> {
        Contacts { problem: self }
    }
    /// The generic rows.
    pub fn generic_rows(&self) -> &[GenericRow] {
        &self.generic
    }
    /// `true` when no contact has a tangential right-hand side (`b` of
    /// rows 1-5 zero for every contact: no conveyor surface, no driven
    /// tangential row), as the problem stores it.
    pub fn tangential_rhs_is_zero(&self) -> bool {
        self.tangential_rhs.is_empty()
    }
    /// Rows per contact.
    pub fn contact_rows(&self) -> ContactRows {
        self.rows
    }
    /// Friction set.
    pub fn friction_set(&self) -> FrictionSet {
        self.friction_set
    }
    /// Sets the friction set (box or disk).
    pub fn set_friction_set(&mut self, set: FrictionSet) {
        self.friction_set = set;
    }
    /// The time step the problem was built for.
    pub fn dt(&self) -> f64 {
        self.dt
    }
    /// Per-body inverse mass blocks `M⁻¹` (16 bytes per body whose
    /// inverse inertia is a multiple of the identity; [`InverseMasses`]).
    pub fn inverse_mass(&self) -> &InverseMasses {
        &self.inverse_mass
    }
    /// Free velocity `v*`.
    pub fn free_velocity(&self) -> &[Velocity6] {
        &self.free_velocity
    }
    /// Offset of the first generic row in `λ`.
    pub fn generic_offset(&self) -> usize {
        self.records.len() * self.rows.count()
    }
    /// Total number of multipliers.
    pub fn len(&self) -> usize {
        self.generic_offset() + self.generic.len()
    }
    /// `true` when the problem has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Kind of multiplier `i`.
    pub fn row_kind(&self, i: usize) -> RowKind {
        let off = self.generic_offset();
        if i < off {
            RowKind::of_contact_row(i % self.rows.count())
        } else {
            self.generic[i - off].kind
        }
    }

    /// Checks that `lambda` and `velocity` have this problem's sizes.
    pub fn check_sizes(&self, lambda: &[f64], velocity: &[Velocity6]) -> Result<(), SolveError> {
        SolveError::require_len("lambda", self.len(), lambda.len())?;
        SolveError::require_len("velocity", self.body_count(), velocity.len())
    }

    /// `velocity += M⁻¹ Gᵀ λ`.
    ///
    /// Checks the slices' lengths (typed error naming the slice).
    pub fn apply_impulses(
        &self,
        lambda: &[f64],
        velocity: &mut [Velocity6],
    ) -> Result<(), SolveError> {
        self.check_sizes(lambda, velocity)?;
        self.apply_impulses_unchecked(lambda, velocity);
        Ok(())
    }

    /// [`Self::apply_impulses`] without the length checks.
    pub(crate) fn apply_impulses_unchecked(&self, lambda: &[f64], velocity: &mut [Velocity6]) {
        let m = self.rows.count();
        for (k, (c, lam)) in self.records.iter().zip(lambda.chunks_exact(m)).enumerate() {
            self.prefetch_bodies(k + PREFETCH_AHEAD, velocity);
            let [a, b] = c.bodies.map(|x| x as usize);
            let (dva, dvb) = self.inverse_mass.velocity_change(&c.jacobian, a, b, lam);
            velocity[a] += dva;
            velocity[b] += dvb;
        }
        let off = self.generic_offset();
        for (r, &lam) in self.generic.iter().zip(&lambda[off..]) {
            let [a, b] = r.bodies.map(|x| x as usize);
            let (ia, ib) = r.jacobian.transpose_apply(lam);
            velocity[a] += self.inverse_mass.response(a, &ia);
            velocity[b] += self.inverse_mass.response(b, &ib);
        }
    }

    /// `v(λ) = v* + M⁻¹ Gᵀ λ` written to `velocity`.
    ///
    /// Checks the slices' lengths (typed error naming the slice).
    pub fn velocity_from(
        &self,
        lambda: &[f64],
        velocity: &mut [Velocity6],
    ) -> Result<(), SolveError> {
        self.check_sizes(lambda, velocity)?;
        self.velocity_from_unchecked(lambda, velocity);
        Ok(())
    }

    /// [`Self::velocity_from`] without the length checks.
    pub(crate) fn velocity_from_unchecked(&self, lambda: &[f64], velocity: &mut [Velocity6]) {
        velocity.copy_from_slice(&self.free_velocity);
        self.apply_impulses_unchecked(lambda, velocity);
    }

    /// [`Self::velocity_from_unchecked`] on `threads` threads (0 or 1: this
    /// one). The bodies are cut into one range of consecutive indices per
    /// thread, and each thread walks every contact and then every generic
    /// row in order, adding the impulses that land in its range. Every body
    /// receives its impulses in the serial order, so the result is the
    /// serial one, bit for bit, on any thread count. Each thread reads all
    /// the contacts but forms only the changes of its bodies.
    pub(crate) fn velocity_from_on(
        &self,
        lambda: &[f64],
        velocity: &mut [Velocity6],
        threads: usize,
    ) {
        let threads = threads.clamp(1, velocity.len().max(1));
        if threads == 1 {
            self.velocity_from_unchecked(lambda, velocity);
            return;
        }
        let per = ndem_par::blocks::block_len(velocity.len(), threads);
        ndem_par::blocks::map_parts(velocity.chunks_mut(per).enumerate(), |(k, part)| {
            self.velocity_of_range(lambda, k * per, part)
        });
    }

    /// Asks for the velocities and inverse masses of contact `ci`'s bodies
    /// ([`ndem_par::prefetch`]), if there is such a contact: the loops
    /// over the contacts read them ahead, [`PREFETCH_AHEAD`] contacts on.
    #[inline(always)]
    pub(crate) fn prefetch_bodies(&self, ci: usize, velocity: &[Velocity6]) {
        if let Some(c) = self.records.get(ci) {
            for body in c.bodies {
                let body = body as usize;
                if let Some(v) = velocity.get(body) {
                    prefetch(v);
                }
                prefetch(&self.inverse_mass.responses()[body]);
            }
        }
    }

    /// `v(λ)` of bodies `first..first + part.len()`, written to `part`:
    /// the serial sums restricted to those bodies.
    ///
    /// The arithmetic repeats [`Self::apply_impulses_unchecked`]'s on
    /// purpose: with the serial pass written as this loop over the whole
    /// range, rustc 1.95 / LLVM 22.1 release builds computed
    /// wrong velocities (the built-in `drum` stopped at step 12 with an
    /// overlap error, while the opt-level 1 build replayed it bit for bit);
    /// see `docs/performance.md`, "A compiler defect".
    pub(super) fn velocity_of_range(&self, lambda: &[f64], first: usize, part: &mut [Velocity6]) {
        let len = part.len();
        part.copy_from_slice(&self.free_velocity[first..first + len]);
        let local = |b: usize| b.wrapping_sub(first);
        let m = self.rows.count();
        for (k, (c, lam)) in self.records.iter().zip(lambda.chunks_exact(m)).enumerate() {
            if let Some(ahead) = self.records.get(k + PREFETCH_AHEAD) {
                for body in ahead.bodies.map(|x| x as usize) {
                    if let Some(v) = part.get(local(body)) {
                        prefetch(v);
                        prefetch(&self.inverse_mass.responses()[body]);
                    }
                }
            }
            let [a, b] = c.bodies.map(|x| x as usize);
            let (la, lb) = (local(a), local(b));
            if la >= len && lb >= len {
                continue;
            }
            let (dva, dvb) = self.inverse_mass.velocity_change(&c.jacobian, a, b, lam);
            if la < len {
                part[la] += dva;
            }
            if lb < len {
                part[lb] += dvb;
            }
        }
        let off = self.generic_offset();
        for (r, &lam) in self.generic.iter().zip(&lambda[off..]) {
            let [a, b] = r.bodies.map(|x| x as usize);
            let (la, lb) = (local(a), local(b));
            if la >= len && lb >= len {
                continue;
            }
            let (ia, ib) = r.jacobian.transpose_apply(lam);
            if la < len {
                part[la] += self.inverse_mass.response(a, &ia);
            }
            if lb < len {
                part[lb] += self.inverse_mass.response(b, &ib);
            }
        }
    }

    /// `G v` for all rows, written to `out`.
    ///
    /// Checks the slices' lengths (typed error naming the slice).
    pub fn jacobian_times(
        &self,
        velocity: &[Velocity6],
        out: &mut [f64],
    ) -> Result<(), SolveError> {
        SolveError::require_len("velocity", self.body_count(), velocity.len())?;
        SolveError::require_len("out", self.len(), out.len())?;
        self.jacobian_times_unchecked(velocity, out);
        Ok(())
    }

    /// [`Self::jacobian_times`] without the length checks.
    pub(crate) fn jacobian_times_unchecked(&self, velocity: &[Velocity6], out: &mut [f64]) {
        let m = self.rows.count();
        for (c, o) in self.records.iter().zip(out.chunks_exact_mut(m)) {
            let [a, b] = c.bodies.map(|x| x as usize);
            let gv = c.jacobian.velocity(&velocity[a], &velocity[b]);
            o.copy_from_slice(&gv[..m]);
        }
        let off = self.generic_offset();
        for (r, o) in self.generic.iter().zip(&mut out[off..]) {
            let [a, b] = r.bodies.map(|x| x as usize);
            *o = r.jacobian.dot(&velocity[a], &velocity[b]);
        }
    }

    /// The residual `w = G v + Σ λ + b` (eq. 6, sign as in `docs/theory.md`, "SPOOK").
    ///
    /// Checks the slices' lengths (typed error naming the slice).
    pub fn residual(
        &self,
        lambda: &[f64],
        velocity: &[Velocity6],
        out: &mut [f64],
    ) -> Result<(), SolveError> {
        self.check_sizes(lambda, velocity)?;
        SolveError::require_len("out", self.len(), out.len())?;
        self.residual_unchecked(lambda, velocity, out);
        Ok(())
    }

    /// [`Self::residual`] without the length checks.
    pub(crate) fn residual_unchecked(
        &self,
        lambda: &[f64],
        velocity: &[Velocity6],
        out: &mut [f64],
    ) {
        self.jacobian_times_unchecked(velocity, out);
        let m = self.rows.count();
        for (ci, c) in self.records.iter().enumerate() {
            let (t, s) = (self.tangential_rhs(ci), self.coefficients(ci));
            for j in 0..m {
                let k = ci * m + j;
                out[k] += c.row_sigma(s, j) * lambda[k] + c.rhs(t, j);
            }
        }
        let off = self.generic_offset();
        for (i, r) in self.generic.iter().enumerate() {
            out[off + i] += r.sigma * lambda[off + i] + r.rhs;
        }
    }

    /// `w_k = G_k v + Σ_kk λ_k + b_k` of generic row `i` (`k` its index
    /// in `λ`).
    pub(crate) fn generic_row_residual(
        &self,
        i: usize,
        lambda: &[f64],
        velocity: &[Velocity6],
    ) -> f64 {
        let r = &self.generic[i];
        let k = self.generic_offset() + i;
        let [a, b] = r.bodies.map(|x| x as usize);
        let mut w = r.jacobian.dot(&velocity[a], &velocity[b]);
        w += r.sigma * lambda[k] + r.rhs;
        w
    }

    /// `N_kk = G_k M⁻¹ G_kᵀ + Σ_kk` of generic row `i`.
    pub(crate) fn generic_row_diagonal(&self, i: usize) -> f64 {
        let r = &self.generic[i];
        let [a, b] = r.bodies.map(|x| x as usize);
        r.jacobian
            .effective_inverse_mass(&self.inverse_mass.at(a), &self.inverse_mass.at(b))
            + r.sigma
    }

    /// The generic rows' part of [`Self::diagonal_unchecked`].
    pub(crate) fn generic_diagonal_unchecked(&self, out: &mut [f64]) {
        let off = self.generic_offset();
        for (i, o) in out[off..off + self.generic.len()].iter_mut().enumerate() {
            *o = self.generic_row_diagonal(i);
        }
    }

    /// Diagonal of `N = G M⁻¹ Gᵀ + Σ`, written to `out`.
    ///
    /// Checks the slices' lengths (typed error naming the slice).
    pub fn diagonal(&self, out: &mut [f64]) -> Result<(), SolveError> {
        SolveError::require_len("out", self.len(), out.len())?;
        self.diagonal_unchecked(out);
        Ok(())
    }

    /// [`Self::diagonal`] without the length checks.
    pub(crate) fn diagonal_unchecked(&self, out: &mut [f64]) {
        let m = self.rows.count();
        for (ci, (c, o)) in self.records.iter().zip(out.chunks_exact_mut(m)).enumerate() {
            let [a, b] = c.bodies.map(|x| x as usize);
            let d = self.inverse_mass.diagonal(&c.jacobian, a, b);
            let s = self.coefficients(ci);
            for j in 0..m {
                o[j] = d[j] + c.row_sigma(s, j);
            }
        }
        self.generic_diagonal_unchecked(out);
    }

    /// `N x = G M⁻¹ Gᵀ x + Σ x` (matrix-free), using `scratch` (one
    /// velocity per body) as workspace.
    ///
    /// Checks the slices' lengths (typed error naming the slice).
    pub fn apply_operator(
        &self,
        x: &[f64],
        scratch: &mut [Velocity6],
        out: &mut [f64],
    ) -> Result<(), SolveError> {
        SolveError::require_len("x", self.len(), x.len())?;
        SolveError::require_len("scratch", self.body_count(), scratch.len())?;
        SolveError::require_len("out", self.len(), out.len())?;
        self.apply_operator_unchecked(x, scratch, out);
        Ok(())
    }

    /// [`Self::apply_operator`] without the length checks.
    pub(crate) fn apply_operator_unchecked(
        &self,
        x: &[f64],
        scratch: &mut [Velocity6],
        out: &mut [f64],
    ) {
        scratch.fill(Velocity6::ZERO);
        self.apply_impulses_unchecked(x, scratch);
        self.jacobian_times_unchecked(scratch, out);
        let m = self.rows.count();
        for (ci, c) in self.records.iter().enumerate() {
            let s = self.coefficients(ci);
            for j in 0..m {
                out[ci * m + j] += c.row_sigma(s, j) * x[ci * m + j];
            }
        }
        let off = self.generic_offset();
        for (i, r) in self.generic.iter().enumerate() {
            out[off + i] += r.sigma * x[off + i];
        }
    }

    /// The linear term `r = G v* + b` of the QP form.
    ///
    /// Checks the slices' lengths (typed error naming the slice).
    pub fn linear_term(&self, out: &mut [f64]) -> Result<(), SolveError> {
        SolveError::require_len("out", self.len(), out.len())?;
        self.linear_term_unchecked(out);
        Ok(())
    }

    /// [`Self::linear_term`] without the length checks.
    pub(crate) fn linear_term_unchecked(&self, out: &mut [f64]) {
        self.jacobian_times_unchecked(&self.free_velocity, out);
        let m = self.rows.count();
        for (ci, c) in self.records.iter().enumerate() {
            let t = self.tangential_rhs(ci);
            for j in 0..m {
                out[ci * m + j] += c.rhs(t, j);
            }
        }
        let off = self.generic_offset();
        for (i, r) in self.generic.iter().enumerate() {
            out[off + i] += r.rhs;
        }
    }

    /// Projects `λ` onto the admissible set, in place: normal rows first,
    /// then friction and rolling rows against the (projected) normal
    /// multiplier of their contact, then generic rows.
    ///
    /// Checks the slices' lengths (typed error naming the slice).
    pub fn project(&self, lambda: &mut [f64]) -> Result<(), SolveError> {
        SolveError::require_len("lambda", self.len(), lambda.len())?;
        self.project_unchecked(lambda);
        Ok(())
    }

    /// [`Self::project`] without the length checks.
    pub(crate) fn project_unchecked(&self, lambda: &mut [f64]) {
        let m = self.rows.count();
        for (ci, (c, lam)) in self
            .records
            .iter()
            .zip(lambda.chunks_exact_mut(m))
            .enumerate()
        {
            project_record(c, self.coefficients(ci), self.friction_set, lam);
        }
        self.project_generic_unchecked(lambda);
    }

    /// The generic rows' part of [`Self::project_unchecked`] (their bounds
    /// depend on generic rows only).
    pub(crate) fn project_generic_unchecked(&self, lambda: &mut [f64]) {
        let off = self.generic_offset();
        for i in 0..self.generic.len() {
            let v = self.generic_bounds(i, lambda);
            lambda[off + i] = lambda[off + i].clamp_to(v.0, v.1);
        }
    }

    /// Bounds of generic row `i` given the current multipliers.
    #[inline]
    pub(crate) fn generic_bounds(&self, i: usize, lambda: &[f64]) -> (f64, f64) {
        match self.generic[i].bounds {
            RowBounds::Fixed { lower, upper } => (lower, upper),
            RowBounds::Friction {
                normal_row,
                coefficient,
            } => {
                let n = lambda[self.generic_offset() + normal_row].max(0.0);
                (-coefficient * n, coefficient * n)
            }
        }
    }
}

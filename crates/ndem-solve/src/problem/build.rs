//! Building a [`ContactProblem`]: from bodies, by contacts and generic rows, from sparse Jacobians, and in the storage of an earlier one.

use super::*;

impl ContactProblem {
    /// An empty problem over the given bodies. `dt` is only used by
    /// model-based warm starting (`docs/theory.md`, "Warm starting": `λ_n0 = −Δt g/ε_n`).
    pub fn new(
        inverse_mass: impl Into<InverseMasses>,
        free_velocity: Vec<Velocity6>,
        rows: ContactRows,
        friction_set: FrictionSet,
        dt: f64,
    ) -> Result<Self, SolveError> {
        let inverse_mass = inverse_mass.into();
        SolveError::require_len("free_velocity", inverse_mass.len(), free_velocity.len())?;
        if !(dt > 0.0 && dt.is_finite()) {
            return Err(SolveError::OutOfRange {
                field: "dt",
                index: 0,
                value: dt,
                range: "(0, inf)",
            });
        }
        check_bodies(&inverse_mass, &free_velocity, 0)?;
        Ok(Self {
            inverse_mass,
            free_velocity,
            rows,
            friction_set,
            dt,
            records: Vec::new(),
            keys: Vec::new(),
            models: Vec::new(),
            keeps_models: true,
            tangential_rhs: Vec::new(),
            coefficients: TangentialCoefficients::default(),
            varying_coefficients: Vec::new(),
            generic: Vec::new(),
            recycled: None,
        })
    }

    /// Appends bodies after the problem's own, one entry of each vector per
    /// new body, checked as [`Self::new`] checks its bodies (an error
    /// names the body by its index in the problem and appends nothing).
    /// Returns the first new body's index. A problem over the bodies its
    /// contacts reach grows with them (the stepper's active-set impact
    /// stage).
    pub fn push_bodies(
        &mut self,
        inverse_mass: &InverseMasses,
        free_velocity: &[Velocity6],
    ) -> Result<usize, SolveError> {
        SolveError::require_len("free_velocity", inverse_mass.len(), free_velocity.len())?;
        let first = self.inverse_mass.len();
        check_bodies(inverse_mass, free_velocity, first)?;
        self.inverse_mass.extend_from(inverse_mass);
        self.free_velocity.extend_from_slice(free_velocity);
        Ok(first)
    }

    /// This problem with the contact and row storage of a released one
    /// ([`Self::into_storage`]): a stepper that assembles a problem every
    /// step allocates nothing once the storage has grown to the largest
    /// problem. The problem's `inverse_mass` and `free_velocity` may be the
    /// storage's own vectors ([`ProblemStorage::take_bodies`]), refilled.
    pub fn reusing(mut self, storage: &mut ProblemStorage) -> Self {
        self.recycled = storage.contacts.take();
        self.generic = std::mem::take(&mut storage.generic);
        self.generic.clear();
        self
    }

    /// Releases the problem, keeping its vectors for the next
    /// ([`Self::reusing`]): the contact vectors with their contacts,
    /// which the next problem overwrites, the others emptied.
    pub fn into_storage(mut self) -> ProblemStorage {
        self.adopt_recycled(0);
        let mut contacts = self.recycled.take().unwrap_or_default();
        *contacts = ContactVectors {
            records: self.records,
            keys: self.keys,
            models: self.models,
            tangential_rhs: self.tangential_rhs,
            coefficients: self.varying_coefficients,
        };
        self.inverse_mass.clear();
        self.free_velocity.clear();
        self.generic.clear();
        ProblemStorage {
            inverse_mass: self.inverse_mass,
            free_velocity: self.free_velocity,
            contacts: Some(contacts),
            generic: self.generic,
        }
    }

    /// The recycled contact vectors ([`ContactVectors`]) while they are
    /// still to be adopted: the problem has no contacts of its own yet.
    pub(super) fn unadopted(&mut self) -> Option<&mut ContactVectors> {
        match &mut self.recycled {
            Some(r) if self.records.is_empty() && r.records.capacity() > 0 => Some(r),
            _ => None,
        }
    }

    /// Takes the recycled contact vectors as the problem's own once, when
    /// it has none yet: each cut to its first `keep` entries (their old
    /// contacts, to be overwritten), the tangential right-hand sides and
    /// the per-contact coefficients emptied (they are stored only once some
    /// contact needs them), the model data only when the problem keeps it.
    /// The emptied box stays, for [`Self::into_storage`].
    pub(super) fn adopt_recycled(&mut self, keep: usize) {
        let keeps_models = self.keeps_models;
        let Some(old) = self.unadopted().map(std::mem::take) else {
            return;
        };
        let ContactVectors {
            mut records,
            mut keys,
            mut models,
            mut tangential_rhs,
            coefficients: mut varying_coefficients,
        } = old;
        records.truncate(keep);
        keys.truncate(keep);
        models.truncate(keep);
        tangential_rhs.clear();
        varying_coefficients.clear();
        self.records = records;
        self.keys = keys;
        if keeps_models {
            self.models = models;
        }
        if self.tangential_rhs.is_empty() {
            self.tangential_rhs = tangential_rhs;
        }
        if self.varying_coefficients.is_empty() {
            self.varying_coefficients = varying_coefficients;
        }
    }

    /// Reserves room for exactly `additional` more contacts, so that a
    /// problem assembled from a known contact count holds no growth slack
    /// (a `Vec` grown by doubling holds up to twice the records; a large
    /// block grown exactly is remapped by the allocator, not copied).
    pub fn reserve_contacts(&mut self, additional: usize) {
        let keeps_models = self.keeps_models;
        if let Some(r) = self.unadopted() {
            // the recycled vectors are still to be adopted (with their old
            // contacts, by a fill): room for `additional` in all
            r.records
                .reserve_exact(additional.saturating_sub(r.records.len()));
            r.keys
                .reserve_exact(additional.saturating_sub(r.keys.len()));
            if keeps_models {
                r.models
                    .reserve_exact(additional.saturating_sub(r.models.len()));
            }
            return;
        }
        self.records.reserve_exact(additional);
        self.keys.reserve_exact(additional);
        if self.keeps_models {
            self.models.reserve_exact(additional);
        }
        if !self.tangential_rhs.is_empty() {
            self.tangential_rhs.reserve_exact(additional);
        }
        if !self.varying_coefficients.is_empty() {
            self.varying_coefficients.reserve_exact(additional);
        }
    }

    /// Adds a contact after checking it.
    pub fn push_contact(&mut self, contact: Contact) -> Result<usize, SolveError> {
        self.adopt_recycled(0);
        let i = self.records.len();
        self.check_bodies("contacts", i, contact.bodies)?;
        contact.validate(i)?;
        // stored from the first contact with a tangential `b` on (the
        // earlier ones' zeros written then)
        let tangential = tangential_rhs_of(&contact);
        if tangential != NO_TANGENTIAL_RHS || !self.tangential_rhs.is_empty() {
            self.tangential_rhs.resize(i, NO_TANGENTIAL_RHS);
            self.tangential_rhs.push(tangential);
        }
        // the first contact's are every contact's until one differs (the
        // earlier ones' written then)
        let coefficients = TangentialCoefficients::of(&contact);
        if i == 0 {
            self.coefficients = coefficients;
        } else if !coefficients.same_bits(&self.coefficients)
            || !self.varying_coefficients.is_empty()
        {
            self.varying_coefficients.resize(i, self.coefficients);
            self.varying_coefficients.push(coefficients);
        }
        self.records.push(ContactRecord::of(&contact));
        self.keys.push(contact.key);
        if self.keeps_models {
            self.models.push(contact.model);
        }
        Ok(i)
    }

    /// Contact `i` put together from its parts (`i` in range).
    pub(super) fn contact_at(&self, i: usize) -> Contact {
        let r = &self.records[i];
        let t = self.tangential_rhs(i);
        let k = self.coefficients(i);
        Contact {
            bodies: r.bodies,
            key: self.keys[i],
            jacobian: r.jacobian,
            sigma: [r.sigma_n, k.sigma_t, k.sigma_r],
            rhs: [r.normal_rhs, t[0], t[1], t[2], t[3], t[4]],
            friction: k.friction,
            rolling_arm: r.rolling_arm,
            model: self.models.get(i).copied().unwrap_or_default(),
        }
    }

    /// What the sweeps read of each contact.
    #[inline]
    pub(crate) fn records(&self) -> &[ContactRecord] {
        &self.records
    }

    /// The model data of each contact (empty without model data).
    pub(crate) fn models(&self) -> &[ContactModel] {
        &self.models
    }

    /// The problem without the contacts' [`ContactModel`]s (`g`, `ε_n`,
    /// `γ_t`, `γ_r`: 32 bytes per contact), which no solver reads: only
    /// [`crate::ModelWarmStart`] and [`Self::elastic_energy`] do. Contacts
    /// added from now on keep none, and those already added lose theirs.
    /// Their [`Contact::model`] then reads as zeros; [`Self::has_model_data`]
    /// tells. The stepper assembles its problems this way when its warm
    /// start does not read the data ([`crate::WarmStart::reads_model_data`]).
    pub fn without_model_data(mut self) -> Self {
        self.keeps_models = false;
        self.models = Vec::new();
        if let Some(r) = &mut self.recycled {
            r.models = Vec::new();
        }
        self
    }

    /// Whether the contacts' [`ContactModel`]s are kept (the default; see
    /// [`Self::without_model_data`]).
    pub fn has_model_data(&self) -> bool {
        self.keeps_models
    }

    /// `b` of rows 1-5 of contact `i` (zeros for most problems).
    #[inline(always)]
    pub(crate) fn tangential_rhs(&self, i: usize) -> &[f64; 5] {
        self.tangential_rhs.get(i).unwrap_or(&NO_TANGENTIAL_RHS)
    }

    /// `Σ_t`, `Σ_r`, `μ_t` of contact `i` (`i` in range).
    #[inline(always)]
    pub(crate) fn coefficients(&self, i: usize) -> &TangentialCoefficients {
        self.varying_coefficients
            .get(i)
            .unwrap_or(&self.coefficients)
    }

    /// What a sweep reads of contact `i` besides its record (`i` in range).
    #[inline(always)]
    pub(crate) fn side(&self, i: usize) -> ContactSide<'_> {
        (self.tangential_rhs(i), self.coefficients(i))
    }

    /// The [`ContactSide`] of every contact when the problem stores none
    /// per contact (no tangential `b`, shared coefficients: most problems),
    /// so that a sweep can be monomorphised without a lookup per contact;
    /// `None` otherwise ([`Self::side`] per contact).
    #[inline]
    pub(crate) fn shared_side(&self) -> Option<ContactSide<'_>> {
        let shared = self.tangential_rhs.is_empty() && self.varying_coefficients.is_empty();
        shared.then_some((&NO_TANGENTIAL_RHS, &self.coefficients))
    }

    /// Adds a generic row after checking it; returns its index among generic rows.
    pub fn push_row(&mut self, row: GenericRow) -> Result<usize, SolveError> {
        let i = self.generic.len();
        self.check_bodies("rows", i, row.bodies)?;
        for x in row.jacobian.to_array() {
            check_finite("rows.jacobian", i, x)?;
        }
        check_nonneg("rows.sigma", i, row.sigma)?;
        check_finite("rows.rhs", i, row.rhs)?;
        match row.bounds {
            RowBounds::Fixed { lower, upper } => {
                if lower.is_nan() || upper.is_nan() || lower > upper {
                    return Err(SolveError::OutOfRange {
                        field: "rows.bounds",
                        index: i,
                        value: lower,
                        range: "lower <= upper",
                    });
                }
            }
            RowBounds::Friction {
                normal_row,
                coefficient,
            } => {
                check_nonneg("rows.bounds.coefficient", i, coefficient)?;
                let ok = self.generic.get(normal_row).is_some_and(
                    |n| matches!(n.bounds, RowBounds::Fixed { lower, .. } if lower >= 0.0),
                );
                if !ok {
                    return Err(SolveError::BadFrictionReference { row: i, normal_row });
                }
            }
        }
        self.generic.push(row);
        Ok(i)
    }

    /// Builds a problem from an assembled sparse Jacobian `G` (rows ×
    /// 6·bodies, body `i` owning columns `6i..6i+6` as `[v; ω]`), per-row Σ,
    /// `b`, bounds and kinds. Every row becomes a [`GenericRow`]; a row may
    /// touch at most two bodies.
    pub fn from_sparse(
        jacobian: &CsrMatrix<f64>,
        inverse_mass: impl Into<InverseMasses>,
        free_velocity: Vec<Velocity6>,
        sigma: &[f64],
        rhs: &[f64],
        bounds: &[RowBounds],
        kinds: &[RowKind],
    ) -> Result<Self, SolveError> {
        let inverse_mass = inverse_mass.into();
        let nb = inverse_mass.len();
        let m = jacobian.nrows();
        SolveError::require_len("jacobian.ncols", 6 * nb, jacobian.ncols())?;
        for (field, len) in [
            ("sigma", sigma.len()),
            ("rhs", rhs.len()),
            ("bounds", bounds.len()),
            ("kinds", kinds.len()),
        ] {
            SolveError::require_len(field, m, len)?;
        }
        let mut p = Self::new(
            inverse_mass,
            free_velocity,
            ContactRows::Normal,
            FrictionSet::Box,
            1.0,
        )?;
        for (i, row) in jacobian.row_iter().enumerate() {
            let mut bodies: Vec<usize> = Vec::with_capacity(2);
            let mut entries = [0.0; 12];
            for (&col, &val) in row.col_indices().iter().zip(row.values()) {
                let body = col / 6;
                let slot = match bodies.iter().position(|&b| b == body) {
                    Some(s) => s,
                    None => {
                        bodies.push(body);
                        bodies.len() - 1
                    }
                };
                if slot > 1 {
                    return Err(SolveError::TooManyBodies {
                        row: i,
                        bodies: bodies.len(),
                    });
                }
                entries[6 * slot + col % 6] = val;
            }
            let a = bodies.first().copied().unwrap_or(0);
            let b = bodies.get(1).copied().unwrap_or(a);
            let v3 = |k: usize| Vec3::new(entries[k], entries[k + 1], entries[k + 2]);
            p.push_row(GenericRow {
                bodies: [a as u32, b as u32],
                jacobian: JacobianRow {
                    linear_a: v3(0),
                    angular_a: v3(3),
                    linear_b: v3(6),
                    angular_b: v3(9),
                },
                sigma: sigma[i],
                rhs: rhs[i],
                bounds: bounds[i],
                kind: kinds[i],
                key: None,
            })?;
        }
        Ok(p)
    }

    pub(super) fn check_bodies(
        &self,
        field: &'static str,
        i: usize,
        bodies: [u32; 2],
    ) -> Result<(), SolveError> {
        check_known_bodies(field, i, bodies, self.inverse_mass.len())
    }

    /// Appends `extra.len()` contacts, contact `i` (counted from the first
    /// appended) built by `build(i)`, which also gives `extra[i]`; each is
    /// checked as [`Self::push_contact`] checks it. The work is split into
    /// `threads` consecutive blocks (the first on this thread, the others
    /// on scoped threads): the problem is the same as that of serial pushes
    /// in index order, on any thread count. On failure the problem keeps
    /// only its earlier contacts, and the error is that of the lowest
    /// failing index, as a serial loop would report.
    ///
    /// `build` is called once per contact, with two exceptions. When these
    /// are the problem's first contacts, `build(0)` is called once before
    /// the others, for the coefficients `Σ_t`, `Σ_r`, `μ_t` every contact
    /// is compared with. And when these are the problem's first contacts
    /// with a non-zero `b` on a friction or rolling row, or the first whose
    /// coefficients differ from the first contact's, `build` is called a
    /// second time for every appended contact, in index order on this
    /// thread, and only those right-hand sides or coefficients are kept
    /// (the problem stores them per contact only once some contact needs
    /// it; the first call's `extra` stand).
    pub fn extend_contacts_with<X: Send, E: Send>(
        &mut self,
        extra: &mut [X],
        threads: usize,
        build: impl Fn(usize) -> Result<(Contact, X), E> + Sync,
    ) -> Result<(), ContactFillError<E>> {
        let start = self.records.len();
        let count = extra.len();
        let body_count = self.inverse_mass.len();
        if start == 0 && count > 0 {
            // a failure is the fill's to report, at contact 0
            if let Ok((first, _)) = build(0) {
                self.coefficients = TangentialCoefficients::of(&first);
            }
        }
        let shared = self.coefficients;
        // every slot is written below: a recycled problem's old contacts
        // stay where they are, and only slots beyond them get a placeholder
        self.adopt_recycled(count);
        let placeholder = Contact::placeholder();
        self.records
            .resize(start + count, ContactRecord::of(&placeholder));
        self.keys.resize(start + count, placeholder.key);
        if self.keeps_models {
            self.models.resize(start + count, placeholder.model);
        }
        let mut tangential = std::mem::take(&mut self.tangential_rhs);
        if !tangential.is_empty() {
            tangential.resize(start + count, NO_TANGENTIAL_RHS);
        }
        let had = [
            !tangential.is_empty(),
            !self.varying_coefficients.is_empty(),
        ];
        let mut coefficients = std::mem::take(&mut self.varying_coefficients);
        if had[1] {
            coefficients.resize(start + count, shared);
        }
        let block = block_len(count, threads);
        // per block: whether a contact had a tangential `b`, or
        // coefficients other than the shared ones, that there was no
        // storage for (written in a second pass below)
        let fill = |(k, slots): (usize, FillSlots<'_, X>)| {
            let mut unstored = [false; 2];
            for n in 0..slots.extra.len() {
                let i = k * block + n;
                let (contact, e) = build(i).map_err(ContactFillError::Build)?;
                check_known_bodies("contacts", start + i, contact.bodies, body_count)
                    .and_then(|()| contact.validate(start + i))
                    .map_err(ContactFillError::Invalid)?;
                slots.records[n] = ContactRecord::of(&contact);
                slots.keys[n] = contact.key;
                if let Some(slot) = slots.models.get_mut(n) {
                    *slot = contact.model;
                }
                let t = tangential_rhs_of(&contact);
                match slots.tangential.get_mut(n) {
                    Some(slot) => *slot = t,
                    None => unstored[0] |= t != NO_TANGENTIAL_RHS,
                }
                let c = TangentialCoefficients::of(&contact);
                match slots.coefficients.get_mut(n) {
                    Some(slot) => *slot = c,
                    None => unstored[1] |= !c.same_bits(&shared),
                }
                slots.extra[n] = e;
            }
            Ok(unstored)
        };
        let blocks = fill_blocks(
            (&mut self.records[start..], &mut self.keys[start..]),
            self.models.get_mut(start..).unwrap_or_default(),
            (
                tangential.get_mut(start..).unwrap_or_default(),
                coefficients.get_mut(start..).unwrap_or_default(),
            ),
            extra,
            block,
        );
        // each block stops at its first failure, so the first failing
        // block's error is the lowest failing index's
        let either = |any: [bool; 2], r: Result<[bool; 2], _>| {
            r.map(|u: [bool; 2]| [any[0] | u[0], any[1] | u[1]])
        };
        let result: Result<[bool; 2], ContactFillError<E>> = if threads <= 1 {
            blocks.map(fill).try_fold([false; 2], either)
        } else {
            map_parts(blocks, fill)
                .into_iter()
                .try_fold([false; 2], either)
        };
        self.tangential_rhs = tangential;
        self.varying_coefficients = coefficients;
        let result = match result {
            Ok([false, false]) => Ok(()),
            Ok(unstored) => self.store_per_contact(start, count, unstored, &build),
            Err(e) => Err(e),
        };
        if result.is_err() {
            self.records.truncate(start);
            self.keys.truncate(start);
            self.models.truncate(start);
            if had[0] {
                self.tangential_rhs.truncate(start);
            } else {
                self.tangential_rhs.clear();
            }
            if had[1] {
                self.varying_coefficients.truncate(start);
            } else {
                self.varying_coefficients.clear();
            }
            if start == 0 {
                self.coefficients = TangentialCoefficients::default();
            }
        }
        result
    }

    /// The second pass of [`Self::extend_contacts_with`]: some of the
    /// `count` contacts from `start` on have a tangential `b`, or
    /// coefficients other than the shared ones (`unstored`, in that
    /// order), and the problem kept none per contact so far: they are
    /// stored for all (built again, in order).
    pub(super) fn store_per_contact<X, E>(
        &mut self,
        start: usize,
        count: usize,
        unstored: [bool; 2],
        build: &impl Fn(usize) -> Result<(Contact, X), E>,
    ) -> Result<(), ContactFillError<E>> {
        if unstored[0] {
            self.tangential_rhs.resize(start, NO_TANGENTIAL_RHS);
        }
        if unstored[1] {
            self.varying_coefficients.resize(start, self.coefficients);
        }
        (0..count).try_for_each(|i| {
            let (contact, _) = build(i).map_err(ContactFillError::Build)?;
            if unstored[0] {
                self.tangential_rhs.push(tangential_rhs_of(&contact));
            }
            if unstored[1] {
                let c = TangentialCoefficients::of(&contact);
                self.varying_coefficients.push(c);
            }
            Ok(())
        })
    }
}

/// The checks of [`ContactProblem::new`] on bodies whose first stands at
/// `first` in the problem: inverse masses non-negative and finite, free
/// velocities finite.
fn check_bodies(
    inverse_mass: &InverseMasses,
    free_velocity: &[Velocity6],
    first: usize,
) -> Result<(), SolveError> {
    // from the 16-byte entries: `k 1` is finite when `k` is (the
    // first entry the matrix check would name)
    for (i, r) in inverse_mass.responses().iter().enumerate() {
        check_nonneg("inverse_mass", first + i, r.inv_mass)?;
        match r.isotropic() {
            Some(k) => check_finite("inverse_mass", first + i, k)?,
            None => {
                for &x in inverse_mass.inertia(i).iter() {
                    check_finite("inverse_mass", first + i, x)?;
                }
            }
        }
    }
    for (i, v) in free_velocity.iter().enumerate() {
        for x in v.to_array() {
            check_finite("free_velocity", first + i, x)?;
        }
    }
    Ok(())
}

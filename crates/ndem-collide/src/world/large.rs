//! Pairs with large bodies (floors, walls, drums, big spheres) and the pass that merges them with the particle pairs.

use super::*;

/// A large body as particles meet it: index, sweep, whether it is fixed or
/// a sphere, and a half-space's world normal (formed once for all
/// particles; the generic narrow phase forms it per pair, the same way).
struct LargeProbe {
    body: usize,
    sweep: f64,
    fixed: bool,
    sphere: bool,
    plane_normal: Option<Vec3>,
}

impl CollisionWorld {
    /// The contacts of the large bodies with the particles and with each
    /// other, and those of the particles out of the grid, in key order in
    /// `self.large_contacts`.
    ///
    /// A large body's box is grown by the margin, its sweep and the
    /// particles' largest sweep. The grid's particles are found in the
    /// cells under the box grown by the largest sweep among them (the
    /// grid's, which sizes its cells), not by that of the particles set
    /// apart for their sweep ([`Self::fast`]): those few are met apart, in
    /// the box grown by their own largest sweep. A settling bed's fastest
    /// sphere would otherwise widen a floor's slab of candidates to several
    /// cells (34 000 of 10⁵ particles for 6 500 contacts on a packing
    /// falling for 300 steps).
    pub(super) fn large_pairs(&mut self, bodies: &BodyView<'_>) -> Result<(), CollideError> {
        let margin = self.settings.margin;
        self.large_contacts.clear();
        let reach = self.cell_size + margin;
        for li in 0..self.large.len() {
            let l = self.large[li] as usize;
            let (lo, hi) = bodies.shapes[l].aabb(&bodies.positions[l], &bodies.orientations[l]);
            let probe = LargeProbe {
                body: l,
                sweep: bodies.sweep_of(l),
                fixed: bodies.fixed[l],
                sphere: bodies.shapes[l].sphere_radius().is_some(),
                plane_normal: match &bodies.shapes[l] {
                    Shape::HalfSpace { normal } => Some(bodies.orientations[l] * normal),
                    _ => None,
                },
            };
            // the box particles must reach, grown by `sweep` as well as
            // the margin and the large body's sweep: cut to the particles
            // for a half-space, where it can be
            let reach_of = |sweep: f64| {
                let grow = margin + probe.sweep + sweep;
                let (lo, hi) = (lo - Vec3::repeat(grow), hi + Vec3::repeat(grow));
                match probe.plane_normal {
                    Some(n) => self.half_space_reach(&n, &bodies.positions[l], (lo, hi), grow),
                    None => (lo, hi),
                }
            };
            let every = reach_of(self.max_particle_sweep);
            let (plo, phi) = reach_of(self.max_sweep);
            // the grid's particles against this large body: query the grid
            // cells under its box when that is cheaper than scanning all
            // particles
            let inv = self.inv_cell;
            let cmin = plo.map(|x| ((x - reach) * inv).floor());
            let cmax = phi.map(|x| ((x + reach) * inv).floor());
            let ncells = (cmax - cmin).map(|x| x + 1.0).product();
            let mut candidates = std::mem::take(&mut self.candidates);
            let mut out = std::mem::take(&mut self.large_contacts);
            let mut raw = std::mem::take(&mut self.raw);
            candidates.clear();
            let met = if ncells.is_finite() && ncells < self.particles.len() as f64 {
                let cells = |c: Vec3| [c.x as i64, c.y as i64, c.z as i64];
                self.cells_entries(cells(cmin), cells(cmax), &mut candidates);
                candidates.sort_unstable();
                // the particles out of the grid are in no cell
                self.meet(
                    bodies,
                    &probe,
                    (&candidates, (plo, phi)),
                    &mut raw,
                    &mut out,
                )
                .and_then(|()| self.meet(bodies, &probe, (&self.fast, every), &mut raw, &mut out))
            } else {
                self.meet(bodies, &probe, (&self.particles, every), &mut raw, &mut out)
            };
            (self.candidates, self.large_contacts, self.raw) = (candidates, out, raw);
            met?;
            // large against large (a = smaller index)
            let grow = margin + probe.sweep + self.max_particle_sweep;
            let grown = (lo - Vec3::repeat(grow), hi + Vec3::repeat(grow));
            self.large_large_pairs(bodies, li, grown, probe.sweep)?;
        }
        self.fast_pairs(bodies);
        // in key order already when the large bodies precede the particles
        // (each large body's contacts come in particle order) and no
        // particle is out of the grid; the stable sort allocates, so it
        // runs only when needed
        if !self.large_contacts.is_sorted_by_key(|c| c.key) {
            self.large_contacts.sort_by_key(|c| c.key);
        }
        self.large_contacts.dedup_by(|a, b| a.key == b.key);
        Ok(())
    }

    /// The contacts of large body `probe` with the particles `candidates`
    /// (in increasing order) whose spheres reach into the box `(lo, hi)`,
    /// appended to `out` in candidate order; `raw` is scratch. An
    /// unsupported pair is an error naming it.
    fn meet(
        &self,
        bodies: &BodyView<'_>,
        probe: &LargeProbe,
        (candidates, (lo, hi)): (&[u32], (Vec3, Vec3)),
        raw: &mut Vec<RawContact>,
        out: &mut Vec<ContactPoint>,
    ) -> Result<(), CollideError> {
        let margin = self.settings.margin;
        let l = probe.body;
        for p in candidates.iter().map(|&p| p as usize) {
            if (probe.fixed && bodies.fixed[p]) || bodies.same_group(p, l) {
                continue;
            }
            let x = bodies.positions[p];
            let r = bodies.shapes[p].sphere_radius().unwrap_or(0.0);
            if (0..3).any(|k| x[k] + r < lo[k] || x[k] - r > hi[k]) {
                continue;
            }
            raw.clear();
            let pair_margin = margin + probe.sweep + bodies.sweep_of(p);
            // two spheres pair in index order (a large sphere is a
            // sphere too); any other large body is b
            let (a, b) = if l < p && probe.sphere {
                (l, p)
            } else {
                (p, l)
            };
            if let (Some(n), Some(radius)) = (probe.plane_normal, bodies.shapes[p].sphere_radius())
            {
                // the generic narrow phase's sphere-half-space case
                let plane = &bodies.positions[l];
                raw.extend(narrow::sphere_plane(&x, radius, plane, &n, pair_margin));
            } else {
                narrow_into(bodies, (a, b), pair_margin, raw)?;
            }
            out.extend(raw.iter().map(|raw| make_point(a, b, raw)));
        }
        Ok(())
    }

    /// The pairs of large body `self.large[li]` (box `(lo, hi)` grown by
    /// the margin and its sweep `lsweep`) with the large bodies after it.
    fn large_large_pairs(
        &mut self,
        bodies: &BodyView<'_>,
        li: usize,
        (lo, hi): (Vec3, Vec3),
        lsweep: f64,
    ) -> Result<(), CollideError> {
        let margin = self.settings.margin;
        let l = self.large[li] as usize;
        let lfixed = bodies.fixed[l];
        for mi in li + 1..self.large.len() {
            let m = self.large[mi] as usize;
            if (lfixed && bodies.fixed[m]) || bodies.same_group(l, m) {
                continue;
            }
            // `lo..hi` holds the margin and l's sweep; m's box grows by
            // its own sweep, and the pair's reach is both sweeps (as
            // for every other pair)
            let msweep = bodies.sweep_of(m);
            let (mlo, mhi) = bodies.shapes[m].aabb(&bodies.positions[m], &bodies.orientations[m]);
            if (0..3).any(|k| mhi[k] + msweep < lo[k] || mlo[k] - msweep > hi[k]) {
                continue;
            }
            self.raw.clear();
            let pair_margin = margin + lsweep + msweep;
            // a sphere is body a against any other shape (the pair
            // rule of every pass), else the smaller index
            let sphere = |i: usize| bodies.shapes[i].sphere_radius().is_some();
            let (a, b) = if !sphere(l) && sphere(m) {
                (m, l)
            } else {
                (l, m)
            };
            narrow_into(bodies, (a, b), pair_margin, &mut self.raw)?;
            for raw in &self.raw {
                self.large_contacts.push(make_point(a, b, raw));
            }
        }
        Ok(())
    }

    /// The box in which particles can touch a half-space with world
    /// normal `normal` through `point`, whose box is `(lo, hi)` (unbounded)
    /// grown by `grow` (margin and sweeps): where the normal lies along an
    /// axis and the grid is dense, the slab within `grow` and one cell of
    /// the plane, cut to the occupied cells widened by one cell; otherwise
    /// `(lo, hi)`. A sphere in contact has `n·(x − p) − r ≤ grow`, so the
    /// slab holds it with a cell to spare for rounding, and the occupied
    /// cells hold every particle with its radius (less than a cell); the
    /// candidates are tested as before (`docs/performance.md`, "Collision
    /// detection").
    pub(super) fn half_space_reach(
        &self,
        normal: &Vec3,
        point: &Vec3,
        (lo, hi): (Vec3, Vec3),
        grow: f64,
    ) -> (Vec3, Vec3) {
        let Some((first, dims)) = &self.dense else {
            return (lo, hi);
        };
        let mut along = (0..3).filter(|&k| normal[k] != 0.0);
        let (Some(axis), None) = (along.next(), along.next()) else {
            return (lo, hi);
        };
        let h = self.cell_size;
        // the table's cells are the occupied ones widened by one
        let mut cut_lo = Vec3::from_fn(|k, _| first[k] as f64 * h);
        let mut cut_hi = Vec3::from_fn(|k, _| (first[k] + dims[k]) as f64 * h);
        if normal[axis] > 0.0 {
            cut_hi[axis] = cut_hi[axis].min(point[axis] + grow + h);
        } else {
            cut_lo[axis] = cut_lo[axis].max(point[axis] - grow - h);
        }
        let bounded = (0..3).all(|k| cut_lo[k].is_finite() && cut_hi[k].is_finite());
        if bounded { (cut_lo, cut_hi) } else { (lo, hi) }
    }

    pub(super) fn detect_impl(
        &mut self,
        bodies: &BodyView<'_>,
        out: &mut ContactSet,
        threads: usize,
        fast: FastSpheres,
    ) -> Result<(), CollideError> {
        bodies.validate()?;
        self.classify(bodies);
        let n = self.particles.len();
        let threads = ndem_par::blocks::resolve_threads(threads);
        let blocks = if n > 4096 && threads > 1 { threads } else { 1 };
        self.build_grid(bodies, fast, blocks);
        // large bodies first: an error leaves `out` as it was
        self.large_pairs(bodies)?;
        // the pairs are written into `out`'s own storage (no second
        // contact buffer kept between steps)
        let mut pairs = std::mem::take(&mut out.contacts);
        // block k takes particles [k·chunk, (k+1)·chunk) and the large-body
        // contacts whose keys fall between its first key and the next
        // block's (all pairs of a block have its particles as body a)
        let chunk = n.div_ceil(blocks).max(1);
        let extra = &self.large_contacts;
        let split = |k: usize| -> usize {
            if k == 0 {
                0
            } else if k * chunk >= n {
                extra.len()
            } else {
                let first = ContactKey::new(self.particles[k * chunk], 0, 0);
                extra.partition_point(|e| e.key < first)
            }
        };
        if blocks > 1 {
            // one block of particles per core on scoped threads (rayon's
            // pool, whose workers sleep between steps, was slower than the
            // serial pass; a block whose thread the system refuses runs on
            // this one, `map_parts`), each into its share of `pairs`' slots; then
            // the blocks' contacts are moved together in block order
            let mut slots = std::mem::take(&mut self.block_slots);
            slots.prepare(&mut pairs, blocks);
            let this = &*self;
            ndem_par::blocks::map_parts(
                slots.writers(&mut pairs).enumerate(),
                |(k, mut writer)| {
                    let range = (k * chunk).min(n)..((k + 1) * chunk).min(n);
                    let large = &extra[split(k)..split(k + 1)];
                    this.particle_pairs(bodies, range, large, &mut writer);
                },
            );
            slots.gather(&mut pairs);
            self.block_slots = slots;
        } else {
            // room for the last pass's count and a little more (a set grown
            // by doubling while a packing settles holds up to twice its pairs)
            clear_for_refill(&mut pairs);
            self.particle_pairs(bodies, 0..n, extra, &mut pairs);
        }
        out.contacts = pairs;
        Ok(())
    }
}

/// The generic narrow phase of bodies `a` and `b` within `margin`, appended
/// to `raw`; a pair of shapes it does not take is an error naming both.
fn narrow_into(
    bodies: &BodyView<'_>,
    (a, b): (usize, usize),
    margin: f64,
    raw: &mut Vec<RawContact>,
) -> Result<(), CollideError> {
    if narrow::collide(&bodies.placed(a), &bodies.placed(b), margin, raw) {
        Ok(())
    } else {
        Err(CollideError::UnsupportedPair {
            body_a: a,
            body_b: b,
        })
    }
}

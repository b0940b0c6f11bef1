//! The walks over the grid of [`CollisionWorld`]: visiting a particle's neighbours, the fast-moving spheres set apart.

use super::*;

impl CollisionWorld {
    /// Calls `visit` on the grid entries of the 27 cells around cell `c`
    /// (bucket `bucket` in the dense layout) that `near` does not rule out:
    /// the dense layout's 9 rows of three adjacent buckets, each cut to the
    /// cells in reach, or the hashed buckets with the cell to check (entries
    /// of other cells share them). The dense table has an empty cell on
    /// every side of the occupied ones, so every row is in it.
    #[inline]
    pub(super) fn visit_neighbours<'a, const NEAR: bool>(
        &'a self,
        (c, bucket): ([i64; 3], usize),
        near: &Near,
        mut visit: impl FnMut(&'a [Entry], Option<[i64; 3]>),
    ) {
        match &self.dense {
            Some((_, dims)) => {
                // Dense layout: the three cells of a row along x are
                // adjacent buckets, so each of the 9 rows is one range.
                let (row_step, layer_step) = (dims[0] as usize, (dims[0] * dims[1]) as usize);
                for dz in -1..=1i64 {
                    let layer = match dz {
                        -1 => bucket - layer_step,
                        0 => bucket,
                        _ => bucket + layer_step,
                    };
                    for dy in -1..=1i64 {
                        let mid = match dy {
                            -1 => layer - row_step,
                            0 => layer,
                            _ => layer + row_step,
                        };
                        let (mut x0, mut x1) = (mid - 1, mid + 1);
                        if NEAR {
                            let yz = near.square(1, dy) + near.square(2, dz);
                            if yz > near.reach_squared {
                                continue;
                            }
                            x0 = if near.within(0, -1, yz) { x0 } else { mid };
                            x1 = if near.within(0, 1, yz) { x1 } else { mid };
                        }
                        let s = self.bucket_start[x0] as usize;
                        let e = self.bucket_start[x1 + 1] as usize;
                        visit(&self.entries[s..e], None);
                    }
                }
            }
            None => {
                for off in NEIGHBOURS {
                    if NEAR {
                        let yz = near.square(1, off[1]) + near.square(2, off[2]);
                        if !near.within(0, off[0], yz) {
                            continue;
                        }
                    }
                    let nc = [c[0] + off[0], c[1] + off[1], c[2] + off[2]];
                    let h = hash(nc, self.mask);
                    let (s, e) = (
                        self.bucket_start[h] as usize,
                        self.bucket_start[h + 1] as usize,
                    );
                    visit(&self.entries[s..e], Some(nc));
                }
            }
        }
    }

    /// Calls `f` with particle `k` (an index into `self.particles`) and
    /// each grid entry around it that pairs with it: within the pair's
    /// reach ([`Probe::reaches`]), a larger body, not both fixed, not of
    /// one collision group. The reach is tested first: in a bed whose
    /// spheres are not on a lattice, whether an entry's body index is the
    /// larger is a coin toss the processor mispredicts, while an entry out
    /// of reach, the common case, is predicted well (`docs/performance.md`,
    /// "Collision detection").
    /// With `NEAR`, neighbour cells out of the probe's reach are passed
    /// over ([`Near`]). Returns the probe, which the caller's contacts
    /// are formed from.
    #[inline(always)]
    pub(super) fn walk_neighbours<'a, 'b, const NEAR: bool>(
        &'a self,
        bodies: &BodyView<'b>,
        k: usize,
        margin: f64,
        mut f: impl FnMut(&'a Entry),
    ) -> Probe<'b> {
        let p = Probe::of(bodies, self.particles[k], margin, self.inv_cell);
        // the cell the grid's build put it in (the same position and
        // factor), which the dense layout needs only to pass over cells
        let bucket = self.particle_bucket[k] as usize;
        let c = if NEAR || self.dense.is_none() {
            cell_index(&p.x, self.inv_cell)
        } else {
            [0; 3]
        };
        let near = if NEAR {
            Near::of(&p, c, (self.max_radius, self.max_sweep), self.cell_size)
        } else {
            Near::EVERYWHERE
        };
        self.visit_neighbours::<NEAR>((c, bucket), &near, |ents, check_cell| {
            for ent in ents {
                if p.reaches(ent) && !p.passes_over(ent, check_cell) {
                    f(ent);
                }
            }
        });
        p
    }

    /// Sphere-sphere contacts of particles `range` (indices into
    /// `self.particles`), each pair reported once from its smaller body
    /// index, merged with the large-body contacts `extra` (sorted by key,
    /// those that fall among this range's keys), all in increasing key
    /// order. Merging here, as the pairs are written, costs no copy; merging
    /// afterwards moved every pair behind the first floor contact (9 % of a
    /// pass on a packing on a floor).
    pub(super) fn particle_pairs(
        &self,
        bodies: &BodyView<'_>,
        range: std::ops::Range<usize>,
        extra: &[ContactPoint],
        out: &mut impl ContactSink,
    ) {
        if self.cells_outreach_pairs() {
            self.particle_pairs_with::<true>(bodies, range, extra, out)
        } else {
            self.particle_pairs_with::<false>(bodies, range, extra, out)
        }
    }

    /// Whether the cells are wider than most pairs reach: a fast
    /// particle's sweep widened them by more than [`WIDE_CELLS`] of the
    /// largest reach without sweeps. The walk then passes over the
    /// neighbour cells out of each probe's reach ([`Near`]); otherwise
    /// few are, and forming each probe's distances to its cell's faces
    /// costs more than it saves (`docs/performance.md`, "Collision
    /// detection").
    pub(super) fn cells_outreach_pairs(&self) -> bool {
        2.0 * self.max_sweep > WIDE_CELLS * (2.0 * self.max_radius + self.settings.margin)
    }

    /// Sets apart the particles whose sweep would widen the cells by more
    /// than a share of the largest reach without sweeps (the first of
    /// [`APART_SHARES`] for which they are at most [`FAST_SHARE`] of the
    /// particles; none when there are more for every share) in
    /// `self.fast`, and returns the largest sweep of those left in the
    /// grid, which sizes its cells. `max_sweep` is the largest of all.
    ///
    /// A settled bed in which a few spheres fall through voids had every
    /// cell widened by the fastest one's sweep: 13 to 17 mm on the 10⁵
    /// packing (`docs/performance.md`, "Collision detection").
    pub(super) fn set_apart_fast(&mut self, bodies: &BodyView<'_>, max_sweep: f64) -> f64 {
        self.fast.clear();
        let reach = 2.0 * self.max_radius + self.settings.margin;
        let cuts = APART_SHARES.map(|share| 0.5 * share * reach);
        if max_sweep <= cuts[0] {
            return max_sweep;
        }
        // per share, how many particles sweep beyond it and the largest
        // sweep of the others
        let (mut beyond, mut within) = ([0usize; 2], [0.0f64; 2]);
        for &i in &self.particles {
            let sweep = bodies.sweep_of(i as usize);
            for k in 0..2 {
                if sweep > cuts[k] {
                    beyond[k] += 1;
                } else {
                    within[k] = within[k].max(sweep);
                }
            }
        }
        let limit = self.particles.len() / FAST_SHARE;
        let Some(k) = (0..2).find(|&k| beyond[k] <= limit) else {
            return max_sweep;
        };
        let cut = cuts[k];
        let particles = self.particles.iter().copied();
        self.fast
            .extend(particles.filter(|&i| bodies.sweep_of(i as usize) > cut));
        within[k]
    }

    /// Appends the bodies of the grid entries in cells `cmin..=cmax` (per
    /// axis) to `out`: the candidates of a large body or of a particle out
    /// of the grid.
    pub(super) fn cells_entries(&self, cmin: [i64; 3], cmax: [i64; 3], out: &mut Vec<u32>) {
        for cz in cmin[2]..=cmax[2] {
            for cy in cmin[1]..=cmax[1] {
                for cx in cmin[0]..=cmax[0] {
                    let nc = [cx, cy, cz];
                    let Some(h) = self.bucket(nc) else { continue };
                    let (s, e) = (
                        self.bucket_start[h] as usize,
                        self.bucket_start[h + 1] as usize,
                    );
                    // a hashed bucket holds entries of other cells too
                    let inv = self.inv_cell;
                    out.extend(
                        self.entries[s..e]
                            .iter()
                            .filter(|ent| {
                                self.dense.is_some() || cell_index(&ent.position, inv) == nc
                            })
                            .map(|ent| ent.body),
                    );
                }
            }
        }
    }

    /// The sphere contacts of the particles out of the grid
    /// ([`Self::fast`]), added to the large bodies' contacts: each pair
    /// with a grid entry in the cells its reach covers, and with each later
    /// particle out of the grid. A pair is formed as the neighbour walk
    /// forms it from its smaller body index (the same test and the same
    /// sums in the same order, [`narrow::sphere_sphere`]), so the contacts
    /// are those of a pass with every particle in the grid, bit for bit.
    pub(super) fn fast_pairs(&mut self, bodies: &BodyView<'_>) {
        if self.fast.is_empty() {
            return;
        }
        let margin = self.settings.margin;
        let inv = self.inv_cell;
        let fast = std::mem::take(&mut self.fast);
        let mut candidates = std::mem::take(&mut self.candidates);
        for (n, &f) in fast.iter().enumerate() {
            let x = bodies.positions[f as usize];
            // every pair's reach, rounded up: the exact test follows
            let reach = (bodies.shapes[f as usize].sphere_radius().unwrap_or(0.0)
                + self.max_radius
                + margin
                + bodies.sweep_of(f as usize)
                + self.max_sweep)
                * (1.0 + 1e-9);
            let cmin = cell_index(&(x - Vec3::repeat(reach)), inv);
            let cmax = cell_index(&(x + Vec3::repeat(reach)), inv);
            candidates.clear();
            // a sweep of many cells: every entry rather than every cell
            let cells: f64 = (0..3).map(|k| (cmax[k] - cmin[k]) as f64 + 1.0).product();
            if cells > self.entries.len() as f64 {
                candidates.extend(self.entries.iter().map(|ent| ent.body));
            } else {
                self.cells_entries(cmin, cmax, &mut candidates);
            }
            candidates.extend_from_slice(&fast[n + 1..]);
            candidates.sort_unstable();
            for &c in &candidates {
                let (a, b) = if c < f { (c, f) } else { (f, c) };
                let (a, b) = (a as usize, b as usize);
                if (bodies.fixed[a] && bodies.fixed[b])
                    || (bodies.group_of(a) != 0 && bodies.group_of(a) == bodies.group_of(b))
                {
                    continue;
                }
                let (ra, rb) = [a, b]
                    .map(|k| bodies.shapes[k].sphere_radius().unwrap_or(0.0))
                    .into();
                let pair_margin = (margin + bodies.sweep_of(a)) + bodies.sweep_of(b);
                if let Some(raw) = narrow::sphere_sphere(
                    &bodies.positions[a],
                    ra,
                    &bodies.positions[b],
                    rb,
                    pair_margin,
                ) {
                    self.large_contacts.push(make_point(a, b, &raw));
                }
            }
        }
        self.candidates = candidates;
        self.fast = fast;
    }

    /// [`Self::particle_pairs`], passing over cells out of reach with
    /// `NEAR`.
    #[inline(always)]
    pub(super) fn particle_pairs_with<const NEAR: bool>(
        &self,
        bodies: &BodyView<'_>,
        range: std::ops::Range<usize>,
        extra: &[ContactPoint],
        out: &mut impl ContactSink,
    ) {
        // the large-body contacts not yet written
        let mut extra_next = 0;
        let margin = self.settings.margin;
        // the entries in reach, sorted by body before their contacts are
        // formed (16 bytes each to sort rather than a 64-byte contact)
        let mut local: Vec<(u32, &Entry)> = Vec::new();
        let any_apart = !self.fast.is_empty();
        for k in range {
            // a particle out of the grid has its pairs among `extra`
            if any_apart && self.particle_bucket[k] == OUT_OF_GRID {
                continue;
            }
            let i = self.particles[k];
            local.clear();
            let p =
                self.walk_neighbours::<NEAR>(bodies, k, margin, |ent| local.push((ent.body, ent)));
            local.sort_unstable_by_key(|(b, _)| *b);
            for &(b, ent) in &local {
                let Some(raw) =
                    narrow::sphere_sphere(&p.x, p.r, &ent.position, ent.radius, p.s + ent.sweep)
                else {
                    continue;
                };
                // normal from b (larger index) to a (smaller index)
                let point = make_point(i as usize, b as usize, &raw);
                while let Some(e) = extra.get(extra_next).filter(|e| e.key < point.key) {
                    out.push(*e);
                    extra_next += 1;
                }
                out.push(point);
            }
        }
        out.extend_from_slice(&extra[extra_next..]);
    }

    /// The body pairs of [`Self::particle_pairs`] for all particles, without
    /// their contact points: a sphere pair is in when its centres are
    /// within `r_a + r_b` plus the margin and the sweeps (the closed form's
    /// test, without the normal), merged with the pairs of the large-body
    /// contacts `extra`, in increasing key order, each pair once.
    pub(super) fn particle_pair_ids(
        &self,
        bodies: &BodyView<'_>,
        extra: &[ContactPoint],
        out: &mut Vec<(u32, u32)>,
    ) {
        let mut extra = extra
            .iter()
            .map(|e| (e.key.body_a, e.key.body_b))
            .peekable();
        let margin = self.settings.margin;
        let mut local: Vec<u32> = Vec::new();
        let push = |out: &mut Vec<(u32, u32)>, pair: (u32, u32)| {
            if out.last() != Some(&pair) {
                out.push(pair);
            }
        };
        for (k, &i) in self.particles.iter().enumerate() {
            local.clear();
            // the walk hands on the entries within the pair's reach, the
            // closed form's test (`Probe::reaches`)
            self.walk_neighbours::<false>(bodies, k, margin, |ent| local.push(ent.body));
            local.sort_unstable();
            for &b in &local {
                while let Some(e) = extra.next_if(|e| *e < (i, b)) {
                    push(out, e);
                }
                push(out, (i, b));
            }
        }
        for e in extra {
            push(out, e);
        }
    }
}

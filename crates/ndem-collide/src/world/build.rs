//! Building the grid of [`CollisionWorld`]: the particles' extent, the
//! cell size and layout, each particle's bucket, and the entries in bucket
//! order (a counting sort), on up to `threads` threads. Every part's result
//! is the serial pass's, bit for bit: the extent is a minimum and maximum
//! (exact in any order), and the buckets are cut into consecutive ranges,
//! each range counted and filled by one thread that reads the particles in
//! their order, so each bucket holds its particles in increasing order on
//! any thread count.

use super::*;
use ndem_par::blocks::{block_len, map_parts, parts_for};

/// Fewest particles per thread in a part of the build. Each of its four
/// passes in parts starts its threads afresh (25-30 µs each on the 2-core
/// reference host, `benches/examples/thread_starts.rs`), and a pass does a
/// few nanoseconds of work per particle: with fewer than this many
/// particles per part, the starts would cost about what the part saves.
pub(super) const MIN_PART: usize = 16_384;

/// The extent of some particles: largest radius and sweep, bounding box of
/// the centres.
#[derive(Debug, Clone, Copy)]
struct Extent {
    max_radius: f64,
    max_sweep: f64,
    low: Vec3,
    high: Vec3,
}

impl Extent {
    fn of(bodies: &BodyView<'_>, particles: &[u32]) -> Self {
        let mut e = Self {
            max_radius: 0.0,
            max_sweep: 0.0,
            low: Vec3::repeat(f64::INFINITY),
            high: Vec3::repeat(f64::NEG_INFINITY),
        };
        for &i in particles {
            let i = i as usize;
            e.max_radius = e
                .max_radius
                .max(bodies.shapes[i].sphere_radius().unwrap_or(0.0));
            e.max_sweep = e.max_sweep.max(bodies.sweep_of(i));
            e.low = e.low.inf(&bodies.positions[i]);
            e.high = e.high.sup(&bodies.positions[i]);
        }
        e
    }

    /// The extent of both parts (minima and maxima: exact, so the parts'
    /// order does not matter).
    fn join(self, other: Self) -> Self {
        Self {
            max_radius: self.max_radius.max(other.max_radius),
            max_sweep: self.max_sweep.max(other.max_sweep),
            low: self.low.inf(&other.low),
            high: self.high.sup(&other.high),
        }
    }
}

impl CollisionWorld {
    /// Builds the grid of `self.particles` on up to `threads` threads.
    pub(super) fn build_grid(&mut self, bodies: &BodyView<'_>, fast: FastSpheres, threads: usize) {
        let parts = parts_for(self.particles.len(), threads, MIN_PART);
        let per = block_len(self.particles.len(), parts);
        let extent = map_parts(self.particles.chunks(per), |p| Extent::of(bodies, p))
            .into_iter()
            .reduce(Extent::join);
        let e = extent.unwrap_or_else(|| Extent::of(bodies, &[]));
        self.max_radius = e.max_radius;
        self.max_particle_sweep = e.max_sweep;
        self.max_sweep = match fast {
            FastSpheres::Apart => self.set_apart_fast(bodies, e.max_sweep),
            FastSpheres::InGrid => {
                self.fast.clear();
                e.max_sweep
            }
        };
        self.cell_size = (2.0 * e.max_radius + self.settings.margin + 2.0 * self.max_sweep)
            .max(f64::MIN_POSITIVE);
        self.inv_cell = 1.0 / self.cell_size;
        // the box's cells bound the particles' cells, since
        // `floor_clamped(x · inv)` does not decrease with `x` (`inv > 0`;
        // rounding and the floor are monotone) and positions are finite
        // (`BodyView::validate`)
        let cells = (!self.particles.is_empty()).then(|| {
            (
                cell_index(&e.low, self.inv_cell),
                cell_index(&e.high, self.inv_cell),
            )
        });
        let table = self.choose_layout(cells);
        self.assign_buckets(bodies, per);
        self.fill_buckets(bodies, table, parts);
    }

    /// The bucket table for the particles' cells `cells` (lowest and
    /// highest per axis; `None` without particles) and its size: the dense
    /// layout (neighbouring cells adjacent in memory) unless the box of the
    /// cells is much larger than the particles' number. A bucket index is
    /// kept as a `u32`: the dense table stays below 2^32 buckets, the hashed
    /// one holds at most 2^32 for the `u32` body indices.
    fn choose_layout(&mut self, cells: Option<([i64; 3], [i64; 3])>) -> usize {
        let n = self.particles.len() - self.fast.len();
        let (lo, hi) = cells.unwrap_or(([i64::MAX; 3], [i64::MIN; 3]));
        let dims = [0, 1, 2].map(|k| hi[k].saturating_sub(lo[k]).saturating_add(1));
        let volume = dims.iter().fold(1.0f64, |v, &d| v * d as f64);
        // the occupied cells and an empty layer around them: a particle's
        // neighbour rows are then found from its bucket alone, with no test
        // of the table's bounds (the cells are clamped to ±2^52, so the
        // layer's bounds do not overflow)
        let padded = [0, 1, 2].map(|k| dims[k].saturating_add(2));
        let padded_volume = padded.iter().fold(1.0f64, |v, &d| v * d as f64);
        let table = if n > 0 && volume <= (8 * n + 4096) as f64 && padded_volume < u32::MAX as f64 {
            self.dense = Some((lo.map(|c| c - 1), padded));
            padded_volume as usize
        } else {
            self.dense = None;
            (2 * n).next_power_of_two().max(16)
        };
        self.mask = table as u64 - 1;
        table
    }

    /// Each particle's bucket ([`OUT_OF_GRID`] for those set apart), in
    /// parts of `per` particles. A particle's cell is formed from its
    /// position where it is needed (three products and floors) rather
    /// than kept (24 bytes each).
    fn assign_buckets(&mut self, bodies: &BodyView<'_>, per: usize) {
        let mut buckets = std::mem::take(&mut self.particle_bucket);
        // one allocation of the exact size (grown by doubling, the 10⁵ bed's
        // peak RSS was 0.4 MB higher; `docs/performance.md`, "Memory")
        if buckets.capacity() < self.particles.len() {
            buckets.clear();
            buckets.reserve_exact(self.particles.len());
        }
        buckets.resize(self.particles.len(), 0);
        let this = &*self;
        let parts = this.particles.chunks(per).zip(buckets.chunks_mut(per));
        map_parts(parts, |(particles, out)| {
            let inv = this.inv_cell;
            let bucket = |i: u32| {
                let b = this.bucket(cell_index(&bodies.positions[i as usize], inv));
                b.unwrap_or(0) as u32
            };
            // the common pass, with no particle set apart, tests none
            if this.fast.is_empty() {
                for (o, &i) in out.iter_mut().zip(particles) {
                    *o = bucket(i);
                }
                return;
            }
            let first = particles.first().copied().unwrap_or(0);
            let skip = this.fast.partition_point(|&f| f < first);
            let mut apart = this.fast[skip..].iter().peekable();
            for (o, &i) in out.iter_mut().zip(particles) {
                let set_apart = apart.next_if_eq(&&i).is_some();
                *o = if set_apart { OUT_OF_GRID } else { bucket(i) };
            }
        });
        self.particle_bucket = buckets;
    }

    /// The buckets' starts and entries: a counting sort of the particles by
    /// bucket, the table cut into `parts` consecutive ranges of buckets,
    /// each counted and filled on its own thread. A range's entries are a
    /// slice of their own (its buckets are consecutive), written in
    /// particle order.
    fn fill_buckets(&mut self, bodies: &BodyView<'_>, table: usize, parts: usize) {
        let per = block_len(table, parts);
        let mut starts = std::mem::take(&mut self.bucket_start);
        let mut fill = std::mem::take(&mut self.fill);
        let mut entries = std::mem::take(&mut self.entries);
        starts.clear();
        starts.resize(table + 1, 0);
        fill.clear();
        fill.resize(table, 0);
        let this = &*self;
        let buckets = &this.particle_bucket;
        // each range's counts, summed within the range: `starts[b + 1]` is
        // the count of the range's buckets up to `b`
        let totals = map_parts(starts[1..].chunks_mut(per).enumerate(), |(k, own)| {
            let first = k * per;
            for &b in buckets {
                if let Some(c) = (b as usize).checked_sub(first).and_then(|j| own.get_mut(j)) {
                    *c += 1;
                }
            }
            for j in 1..own.len() {
                own[j] += own[j - 1];
            }
            own.last().copied().unwrap_or(0)
        });
        // every slot is written below (the buckets' slots are a
        // permutation of 0..n), so the last pass's entries are not cleared
        let n = totals.iter().map(|&t| t as usize).sum();
        entries.resize(n, EMPTY_ENTRY);
        let mut rest = entries.as_mut_slice();
        let mut ranges = Vec::with_capacity(totals.len());
        let mut offset = 0u32;
        for ((own, cursor), &total) in starts[1..]
            .chunks_mut(per)
            .zip(fill.chunks_mut(per))
            .zip(&totals)
        {
            let (slots, tail) = rest.split_at_mut(total as usize);
            rest = tail;
            ranges.push((offset, own, cursor, slots));
            offset += total;
        }
        map_parts(
            ranges.into_iter().enumerate(),
            |(k, (offset, own, cursor, slots))| {
                for c in own.iter_mut() {
                    *c += offset;
                }
                cursor[0] = offset;
                cursor[1..].copy_from_slice(&own[..own.len() - 1]);
                let first = k * per;
                for (&i, &b) in this.particles.iter().zip(buckets) {
                    let Some(c) = (b as usize)
                        .checked_sub(first)
                        .and_then(|j| cursor.get_mut(j))
                    else {
                        continue;
                    };
                    let i = i as usize;
                    slots[(*c - offset) as usize] = Entry {
                        position: bodies.positions[i],
                        radius: bodies.shapes[i].sphere_radius().unwrap_or(0.0),
                        sweep: bodies.sweep_of(i),
                        body: i as u32,
                        group: bodies.group_of(i),
                    };
                    *c += 1;
                }
            },
        );
        self.bucket_start = starts;
        self.fill = fill;
        self.entries = entries;
    }
}

/// The value the entries are resized with; every slot is written before it
/// is read.
const EMPTY_ENTRY: Entry = Entry {
    position: Vec3::new(0.0, 0.0, 0.0),
    radius: 0.0,
    sweep: 0.0,
    body: 0,
    group: 0,
};

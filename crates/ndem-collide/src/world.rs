//! Broad phase (hashed uniform grid for spheres, bounding-box queries for
//! the few large bodies) and the detection pass.

use crate::CollideError;
use crate::contact::{ContactPoint, ContactSet};
use crate::narrow::{self, Placed, RawContact};
use crate::shape::Shape;
use crate::slots::{BlockSlots, ContactSink};
use ndem_math::capacity::clear_for_refill;
use ndem_math::{ContactKey, Quat, Vec3};

/// The bodies seen by collision detection (one shape per body).
#[derive(Debug, Clone, Copy)]
pub struct BodyView<'a> {
    /// Shape of each body, body frame.
    pub shapes: &'a [Shape],
    /// Centre positions.
    pub positions: &'a [Vec3],
    /// Orientations.
    pub orientations: &'a [Quat],
    /// `true` for bodies that no contact can move (static or kinematic);
    /// pairs of two such bodies are not reported.
    pub fixed: &'a [bool],
    /// Per-body speculative distance \[m\] (e.g. `Δt |v|`), added to the
    /// margin of every pair the body is in, so that contacts that would
    /// close within a step are found before they overlap. Empty for none.
    pub sweep: &'a [f64],
    /// Per-body collision group: two bodies of the same non-zero group are
    /// never paired (the walls of a triaxial cell that overlap at their
    /// edges, the parts of a machine). Empty: no groups.
    pub groups: &'a [u32],
}

impl BodyView<'_> {
    /// Number of bodies.
    pub fn len(&self) -> usize {
        self.shapes.len()
    }

    /// `true` when there are no bodies.
    pub fn is_empty(&self) -> bool {
        self.shapes.is_empty()
    }

    /// Checks lengths, shapes and finiteness.
    pub fn validate(&self) -> Result<(), CollideError> {
        let n = self.shapes.len();
        if !self.sweep.is_empty() && self.sweep.len() != n {
            return Err(CollideError::DimensionMismatch {
                field: "sweep",
                expected: n,
                got: self.sweep.len(),
            });
        }
        if !self.groups.is_empty() && self.groups.len() != n {
            return Err(CollideError::DimensionMismatch {
                field: "groups",
                expected: n,
                got: self.groups.len(),
            });
        }
        if let Some(i) = self
            .sweep
            .iter()
            .position(|s| !(s.is_finite() && *s >= 0.0))
        {
            return Err(CollideError::NonFinite {
                field: "sweep",
                body: i,
            });
        }
        for (field, len) in [
            ("positions", self.positions.len()),
            ("orientations", self.orientations.len()),
            ("fixed", self.fixed.len()),
        ] {
            if len != n {
                return Err(CollideError::DimensionMismatch {
                    field,
                    expected: n,
                    got: len,
                });
            }
        }
        if self.all_bodies_valid() {
            return Ok(());
        }
        // the first invalid body's error, in the order of the checks
        for i in 0..n {
            self.shapes[i].validate()?;
            if !self.positions[i].iter().all(|x| x.is_finite()) {
                return Err(CollideError::NonFinite {
                    field: "position",
                    body: i,
                });
            }
            if !self.orientations[i].coords.iter().all(|x| x.is_finite()) {
                return Err(CollideError::NonFinite {
                    field: "orientation",
                    body: i,
                });
            }
        }
        Ok(())
    }

    /// `true` only when every body's shape, position and orientation
    /// passes [`Self::validate`]'s checks (lengths checked before): one
    /// pass without a branch per check, where the checks with their errors
    /// cost a detection pass 4 % of its time (`docs/performance.md`,
    /// "Collision detection"). It may say `false` for valid
    /// bodies (a sum of finite coordinates that overflows), after which
    /// the checks run one by one; never `true` for an invalid one. A
    /// sphere's radius is checked here with [`Shape::validate`]'s rule,
    /// without the call; other shapes are checked by it.
    fn all_bodies_valid(&self) -> bool {
        let mut valid = true;
        for ((shape, x), q) in self
            .shapes
            .iter()
            .zip(self.positions)
            .zip(self.orientations)
        {
            let shape_valid = match shape {
                Shape::Sphere { radius } => crate::shape::is_positive_length(*radius),
                other => other.validate().is_ok(),
            };
            // a NaN or an infinity among the seven makes the sum NaN or
            // infinite, and `sum · 0` NaN
            let sum = (x.x + x.y + x.z) + (q.w + q.i + q.j + q.k);
            valid &= shape_valid & (sum * 0.0 == 0.0);
        }
        valid
    }

    /// Speculative distance of body `i`.
    #[inline]
    pub fn sweep_of(&self, i: usize) -> f64 {
        self.sweep.get(i).copied().unwrap_or(0.0)
    }

    /// Collision group of body `i` (0: none).
    #[inline]
    pub fn group_of(&self, i: usize) -> u32 {
        self.groups.get(i).copied().unwrap_or(0)
    }

    /// `true` when bodies `i` and `j` share a non-zero collision group and
    /// are therefore never paired.
    #[inline]
    pub fn same_group(&self, i: usize, j: usize) -> bool {
        let g = self.group_of(i);
        g != 0 && g == self.group_of(j)
    }

    fn placed(&self, i: usize) -> Placed<'_> {
        Placed {
            shape: &self.shapes[i],
            position: self.positions[i],
            orientation: self.orientations[i],
        }
    }
}

/// Settings of [`CollisionWorld`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CollisionSettings {
    /// Contact margin \[m\]: pairs with gap up to this value are reported
    /// (with a positive gap), so that approaching contacts enter the solve
    /// before they overlap.
    pub margin: f64,
    /// Spheres larger than this multiple of the median sphere radius are
    /// treated as large bodies instead of grid particles (keeps the grid
    /// cells small in polydisperse scenes).
    pub large_sphere_factor: f64,
}

impl Default for CollisionSettings {
    fn default() -> Self {
        Self {
            margin: 0.0,
            large_sphere_factor: 4.0,
        }
    }
}

impl CollisionSettings {
    /// Checks the fields.
    pub fn validate(&self) -> Result<(), CollideError> {
        if !(self.margin.is_finite() && self.margin >= 0.0) {
            return Err(CollideError::InvalidMargin(self.margin));
        }
        if !(self.large_sphere_factor.is_finite() && self.large_sphere_factor >= 1.0) {
            return Err(CollideError::InvalidShape {
                field: "large_sphere_factor",
                value: self.large_sphere_factor,
            });
        }
        Ok(())
    }
}

/// One grid entry, stored in bucket order for locality (48 bytes; its
/// cell is formed from its position where the hashed layout must check
/// it, and whether its body is fixed is read from the bodies by a probe
/// of a fixed body, the rare case: neither is stored).
#[derive(Debug, Clone, Copy)]
struct Entry {
    position: Vec3,
    radius: f64,
    sweep: f64,
    body: u32,
    group: u32,
}

/// Collision detection with owned scratch (no allocation after warm-up
/// for a scene of stable size).
#[derive(Debug, Clone, Default)]
pub struct CollisionWorld {
    settings: CollisionSettings,
    particles: Vec<u32>,
    large: Vec<u32>,
    bucket_start: Vec<u32>,
    entries: Vec<Entry>,
    cell_size: f64,
    /// `1 / cell_size`, from which every cell index is formed.
    inv_cell: f64,
    /// Largest grid particle radius and sweep: with them a probe's reach
    /// bounds every pair's ([`Self::walk_neighbours`]).
    max_radius: f64,
    max_sweep: f64,
    /// Largest sweep of any particle, those out of the grid included
    /// ([`Self::fast`]): the large bodies' boxes grow by it.
    max_particle_sweep: f64,
    /// The particles out of the grid, in increasing body order: spheres
    /// whose sweep would widen every cell, when they are few
    /// ([`FAST_SHARE`]). Their pairs are formed apart
    /// ([`Self::fast_pairs`]) and merged with the large bodies' contacts.
    fast: Vec<u32>,
    mask: u64,
    /// Dense layout: lowest cell and cell counts per axis of the
    /// particles' cells widened by one empty cell on every side, so that
    /// each particle's 27 neighbour cells are buckets of the table
    /// ([`Self::visit_neighbours`]); `None` when the particles' bounding box
    /// is too sparse and the hashed layout is used.
    dense: Option<([i64; 3], [i64; 3])>,
    /// The median sphere radius of the last pass ([`Self::classify`]).
    median_radius: Option<f64>,
    fill: Vec<u32>,
    /// Each particle's bucket, formed once per pass by the grid's count
    /// and read again by its fill (4 bytes per particle).
    particle_bucket: Vec<u32>,
    candidates: Vec<u32>,
    /// Each block's share of the contact set in a parallel pass.
    block_slots: BlockSlots,
    large_contacts: Vec<ContactPoint>,
    raw: Vec<RawContact>,
}

/// The bucket of a particle out of the grid ([`CollisionWorld::fast`]).
const OUT_OF_GRID: u32 = u32::MAX;

/// At most one particle in this many is set apart from the grid for its
/// sweep ([`CollisionWorld::set_apart_fast`]): each costs a walk over the
/// cells its reach covers (some 125), against 27 for a particle in the
/// grid.
const FAST_SHARE: usize = 64;

/// The shares of the largest reach without sweeps (`2 r_max + margin`) by
/// which the sweeps of the particles left in the grid may widen its cells
/// ([`CollisionWorld::set_apart_fast`]), tried in order: a sixteenth (on
/// the settled 10⁵ packing, the 1.7·10² spheres faster than about 8 cm/s),
/// then [`WIDE_CELLS`].
const APART_SHARES: [f64; 2] = [1.0 / 16.0, WIDE_CELLS];

/// Whether a pass sets fast particles apart from the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FastSpheres {
    /// Set apart when few ([`CollisionWorld::set_apart_fast`]).
    Apart,
    /// Every particle in the grid (the candidate pairs of
    /// [`CollisionWorld::detect_pairs`]).
    InGrid,
}

const NEIGHBOURS: [[i64; 3]; 27] = {
    let mut out = [[0i64; 3]; 27];
    let mut k = 0;
    let mut dz = -1;
    while dz <= 1 {
        let mut dy = -1;
        while dy <= 1 {
            let mut dx = -1;
            while dx <= 1 {
                out[k] = [dx, dy, dz];
                k += 1;
                dx += 1;
            }
            dy += 1;
        }
        dz += 1;
    }
    out
};

/// Largest grid cell coordinate (in cells) of a particle; see
/// `CollisionWorld::build_grid`.
const CELL_LIMIT: f64 = 4_503_599_627_370_496.0; // 2^52

/// The grid cell of a particle at `x` for cells of size `1 / inv`. Cells
/// are clamped to ±2^52 so that neighbour offsets and grid differences
/// cannot overflow for bodies far away (a body at 1e308 m, found by
/// fuzzing); clamped bodies share a cell, which costs time, not
/// correctness (the narrow phase is exact).
#[inline(always)]
fn cell_index(x: &Vec3, inv: f64) -> [i64; 3] {
    [x.x, x.y, x.z].map(|v| floor_clamped(v * inv))
}

/// Whether `ent` lies in another cell than `cell` (hashed layout: entries
/// of several cells share a bucket). Not inlined: it would make the
/// neighbour walk too large to be inlined into the pair pass, which costs
/// the dense layout (the common one) more than the call costs the hashed.
#[inline(never)]
fn in_other_cell(ent: &Entry, inv_cell: f64, cell: [i64; 3]) -> bool {
    cell_index(&ent.position, inv_cell) != cell
}

/// `y.floor().clamp(−2^52, 2^52) as i64`, bit for bit (NaN gives 0, as the
/// cast does), without `floor`, which the baseline x86-64 build calls in
/// the C library: clamped first (every double beyond 2^52 is an integer,
/// so the order does not matter), then truncated toward zero and moved
/// down one where that rounded a negative fraction up.
#[inline(always)]
fn floor_clamped(y: f64) -> i64 {
    let y = y.clamp(-CELL_LIMIT, CELL_LIMIT);
    let t = y as i64;
    t - i64::from((t as f64) > y)
}

#[inline]
fn hash(c: [i64; 3], mask: u64) -> usize {
    let h = (c[0] as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (c[1] as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
        ^ (c[2] as u64).wrapping_mul(0x1656_67B1_9E37_79F9);
    ((h ^ (h >> 29)) & mask) as usize
}

impl CollisionWorld {
    /// Bucket of a cell: its linear index in the dense layout (`None` outside
    /// the grid), or its hash.
    #[inline]
    fn bucket(&self, c: [i64; 3]) -> Option<usize> {
        match &self.dense {
            Some((lo, dims)) => {
                let (x, y, z) = (c[0] - lo[0], c[1] - lo[1], c[2] - lo[2]);
                if x < 0 || y < 0 || z < 0 || x >= dims[0] || y >= dims[1] || z >= dims[2] {
                    None
                } else {
                    Some((x + dims[0] * (y + dims[1] * z)) as usize)
                }
            }
            None => Some(hash(c, self.mask)),
        }
    }
}

/// Particle `i` as the neighbour walk sees it: centre, radius, whether it
/// is fixed, its collision group, its margin plus sweep, and the grid's
/// inverse cell size (to tell the cell of an entry in a hashed bucket).
struct Probe<'a> {
    i: u32,
    x: Vec3,
    r: f64,
    /// The bodies' fixed flags when the probe's body is fixed (a pair of
    /// two fixed bodies is passed over), `None` otherwise.
    fixed: Option<&'a [bool]>,
    group: u32,
    s: f64,
    inv_cell: f64,
}

impl<'a> Probe<'a> {
    #[inline]
    fn of(bodies: &BodyView<'a>, i: u32, margin: f64, inv_cell: f64) -> Self {
        let b = i as usize;
        Self {
            i,
            x: bodies.positions[b],
            r: bodies.shapes[b].sphere_radius().unwrap_or(0.0),
            fixed: bodies.fixed[b].then_some(bodies.fixed),
            group: bodies.group_of(b),
            s: margin + bodies.sweep_of(b),
            inv_cell,
        }
    }

    /// Whether `ent` is within the pair's reach: the test of
    /// [`narrow::sphere_sphere`], the same sums in the same order.
    #[inline(always)]
    fn reaches(&self, ent: &Entry) -> bool {
        let reach = self.r + ent.radius + (self.s + ent.sweep);
        (self.x - ent.position).norm_squared() <= reach * reach
    }

    /// Whether the walk passes over `ent`: a pair reported from the other
    /// body, two fixed bodies, one collision group, or (hashed layout) an
    /// entry of another cell sharing the bucket.
    #[inline(always)]
    fn passes_over(&self, ent: &Entry, check_cell: Option<[i64; 3]>) -> bool {
        ent.body <= self.i
            || self.fixed.is_some_and(|fixed| fixed[ent.body as usize])
            || (self.group != 0 && self.group == ent.group)
            || check_cell.is_some_and(|nc| in_other_cell(ent, self.inv_cell, nc))
    }
}

/// How far a probe is from the faces of its cell, and the most its pairs
/// can reach: a neighbour cell farther than that holds no pair of it, and
/// the walk passes over it. A bed whose cells are widened by one fast
/// particle's sweep has many such cells; skipping them changes no
/// contact.
struct Near {
    /// Per axis, the distance to the lower and to the upper face \[m\],
    /// rounded down (0 where it cannot be bounded).
    faces: [[f64; 2]; 3],
    /// The square of the probe's largest reach, rounded up.
    reach_squared: f64,
}

/// Cell coordinates beyond which the probe's place in its cell is not
/// formed (its rounding would approach a cell).
const NEAR_LIMIT: f64 = 1_099_511_627_776.0; // 2^40

/// The share of the largest reach by which sweeps must widen the cells
/// before the walk passes over cells out of reach
/// ([`CollisionWorld::cells_outreach_pairs`]).
const WIDE_CELLS: f64 = 0.25;

impl Near {
    /// Every neighbour cell in reach (the walk without [`Near`]).
    const EVERYWHERE: Self = Self {
        faces: [[0.0; 2]; 3],
        reach_squared: f64::INFINITY,
    };

    /// For probe `p` in cell `c`, with the grid's largest particle radius
    /// and sweep, and cell size `cell`.
    ///
    /// A pair's test is `|x_a − x_b|² ≤ (r_a + r_b + (s_a + s_b))²`
    /// (`narrow::sphere_sphere`), whose sums round monotonically, so the
    /// same sums with the grid's largest radius and sweep bound every
    /// pair's reach. An entry of the cell below along an axis has
    /// `fl(x_e / h) < c`, the probe `fl(x_p / h) = c + f` (`h` the cell
    /// size, `1/h` rounded as the grid forms it), so the two are more than
    /// `(f − δ) h` apart, `δ` covering the two products' rounding; the
    /// reach is widened by 10⁻⁹ relative for the rest.
    #[inline(always)]
    fn of(p: &Probe<'_>, c: [i64; 3], (max_radius, max_sweep): (f64, f64), cell: f64) -> Self {
        let reach = (p.r + max_radius) + (p.s + max_sweep);
        let reach = reach * (1.0 + 1e-9);
        let mut faces = [[0.0; 2]; 3];
        for (k, face) in faces.iter_mut().enumerate() {
            let u = p.x[k] * p.inv_cell;
            if u.abs() < NEAR_LIMIT {
                let f = u - c[k] as f64;
                let delta = (u.abs() + 2.0) * (8.0 * f64::EPSILON);
                *face = [
                    (f - delta).max(0.0) * cell,
                    (1.0 - f - delta).max(0.0) * cell,
                ];
            }
        }
        Self {
            faces,
            reach_squared: reach * reach,
        }
    }

    /// Square of the distance along `axis` to the neighbour cell at
    /// offset `off` (0 for the probe's own cell).
    #[inline(always)]
    fn square(&self, axis: usize, off: i64) -> f64 {
        let d = match off {
            -1 => self.faces[axis][0],
            1 => self.faces[axis][1],
            _ => 0.0,
        };
        d * d
    }

    /// Whether the neighbour at offset `off` along `axis`, whose other two
    /// axes add `rest` to the squared distance, may hold a pair.
    #[inline(always)]
    fn within(&self, axis: usize, off: i64, rest: f64) -> bool {
        self.square(axis, off) + rest <= self.reach_squared
    }
}

fn make_point(a: usize, b: usize, raw: &RawContact) -> ContactPoint {
    ContactPoint {
        key: ContactKey::new(a as u32, b as u32, raw.feature),
        point: raw.point,
        normal: raw.normal,
        gap: raw.gap,
    }
}

impl CollisionWorld {
    /// A world with the given settings.
    pub fn new(settings: CollisionSettings) -> Result<Self, CollideError> {
        settings.validate()?;
        Ok(Self {
            settings,
            ..Self::default()
        })
    }

    /// The settings.
    pub fn settings(&self) -> &CollisionSettings {
        &self.settings
    }

    /// Finds all contacts (gap ≤ margin) between bodies, serially.
    pub fn detect(
        &mut self,
        bodies: &BodyView<'_>,
        out: &mut ContactSet,
    ) -> Result<(), CollideError> {
        self.detect_impl(bodies, out, false, FastSpheres::Apart)
    }

    /// As [`Self::detect`], with the sphere-pair pass split over the cores
    /// (one block of particles per core, on scoped threads, above 4096
    /// particles). The result is identical, bit for bit, to the serial pass.
    pub fn detect_parallel(
        &mut self,
        bodies: &BodyView<'_>,
        out: &mut ContactSet,
    ) -> Result<(), CollideError> {
        self.detect_impl(bodies, out, true, FastSpheres::Apart)
    }

    /// The pairs of bodies that [`Self::detect`] finds a contact between,
    /// each once and in the same (key) order, without forming the contacts:
    /// a Verlet candidate list. A sphere pair is in when its centres are
    /// within `r_a + r_b` plus the margin and sweeps, the test
    /// [`crate::narrow::sphere_sphere`] makes before it forms the normal;
    /// pairs with a large body go through the narrow phase as in `detect`.
    pub fn detect_pairs(
        &mut self,
        bodies: &BodyView<'_>,
        out: &mut Vec<(u32, u32)>,
    ) -> Result<(), CollideError> {
        bodies.validate()?;
        self.classify(bodies);
        self.build_grid(bodies, FastSpheres::InGrid);
        self.large_pairs(bodies)?;
        out.clear();
        self.particle_pair_ids(bodies, &self.large_contacts, out);
        Ok(())
    }

    fn classify(&mut self, bodies: &BodyView<'_>) {
        self.particles.clear();
        self.large.clear();
        let cutoff = match self.median_radius(bodies.shapes) {
            Some(median) => median * self.settings.large_sphere_factor,
            None => 0.0,
        };
        for (i, s) in bodies.shapes.iter().enumerate() {
            match s.sphere_radius() {
                Some(r) if r <= cutoff => self.particles.push(i as u32),
                _ if matches!(s, Shape::Empty) => {}
                _ => self.large.push(i as u32),
            }
        }
    }

    /// The median sphere radius (the `⌊n/2⌋`-th smallest of the `n`
    /// spheres'; `None` without spheres). The last pass's median is kept
    /// and checked in one counting pass: it is still the median when fewer
    /// than `⌊n/2⌋ + 1` radii lie below it and more than `⌊n/2⌋` lie at or
    /// below it. Only when the shapes changed so that it is not (the first
    /// pass, bodies added or removed) are the radii copied and the median
    /// selected afresh, in a vector released after. The radii are positive
    /// and finite ([`BodyView::validate`]), so `<` and `==` order them as
    /// the selection does.
    fn median_radius(&mut self, shapes: &[Shape]) -> Option<f64> {
        if let Some(last) = self.median_radius {
            let (mut spheres, mut below, mut at_most) = (0usize, 0usize, 0usize);
            for r in shapes.iter().filter_map(Shape::sphere_radius) {
                spheres += 1;
                below += usize::from(r < last);
                at_most += usize::from(r <= last);
            }
            let mid = spheres / 2;
            if spheres > 0 && below <= mid && mid < at_most {
                return Some(last);
            }
        }
        let mut radii: Vec<f64> = shapes.iter().filter_map(Shape::sphere_radius).collect();
        self.median_radius = (!radii.is_empty()).then(|| {
            let mid = radii.len() / 2;
            *radii.select_nth_unstable_by(mid, f64::total_cmp).1
        });
        self.median_radius
    }

    fn build_grid(&mut self, bodies: &BodyView<'_>, fast: FastSpheres) {
        // one pass for the largest radius and sweep and the particles'
        // bounding box; the box's cells are the bounds of the particles'
        // cells, since `floor_clamped(x · inv)` does not decrease with `x`
        // (`inv > 0`; rounding and the floor are monotone) and positions are
        // finite (`BodyView::validate`)
        let (mut max_r, mut max_sweep) = (0.0f64, 0.0f64);
        let (mut low, mut high) = (Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY));
        for &i in &self.particles {
            let i = i as usize;
            max_r = max_r.max(bodies.shapes[i].sphere_radius().unwrap_or(0.0));
            max_sweep = max_sweep.max(bodies.sweep_of(i));
            low = low.inf(&bodies.positions[i]);
            high = high.sup(&bodies.positions[i]);
        }
        self.max_radius = max_r;
        self.max_particle_sweep = max_sweep;
        self.max_sweep = match fast {
            FastSpheres::Apart => self.set_apart_fast(bodies, max_sweep),
            FastSpheres::InGrid => {
                self.fast.clear();
                max_sweep
            }
        };
        self.cell_size =
            (2.0 * max_r + self.settings.margin + 2.0 * self.max_sweep).max(f64::MIN_POSITIVE);
        // the grid's entries: the particles not set apart
        let n = self.particles.len() - self.fast.len();
        let inv = 1.0 / self.cell_size;
        self.inv_cell = inv;
        // a particle's cell is formed from its position where it is needed
        // (three products and floors) rather than kept (24 bytes each)
        let cell_of = |i: u32| cell_index(&bodies.positions[i as usize], inv);
        let (lo, hi) = if self.particles.is_empty() {
            ([i64::MAX; 3], [i64::MIN; 3])
        } else {
            (cell_index(&low, inv), cell_index(&high, inv))
        };
        // Dense layout (neighbouring cells adjacent in memory) unless the
        // bounding box of the particles is much larger than their number.
        // A bucket index is kept as a `u32`: the dense table stays below
        // 2^32 buckets, the hashed one holds at most 2^32 for the `u32`
        // body indices.
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
        self.bucket_start.clear();
        self.bucket_start.resize(table + 1, 0);
        let mut particle_bucket = std::mem::take(&mut self.particle_bucket);
        particle_bucket.clear();
        // one allocation of the exact size (grown by doubling, the 10⁵ bed's
        // peak RSS was 0.4 MB higher; `docs/performance.md`, "Memory")
        particle_bucket.reserve_exact(self.particles.len());
        let mut starts = std::mem::take(&mut self.bucket_start);
        let mut count = |i: u32| {
            let b = self.bucket(cell_of(i)).unwrap_or(0);
            starts[b + 1] += 1;
            b as u32
        };
        // the common pass, with no particle set apart, tests none
        if self.fast.is_empty() {
            particle_bucket.extend(self.particles.iter().map(|&i| count(i)));
        } else {
            let mut apart = self.fast.iter().peekable();
            for &i in &self.particles {
                let out = apart.next_if_eq(&&i).is_some();
                particle_bucket.push(if out { OUT_OF_GRID } else { count(i) });
            }
        }
        self.bucket_start = starts;
        for k in 0..table {
            self.bucket_start[k + 1] += self.bucket_start[k];
        }
        let mut fill = std::mem::take(&mut self.fill);
        fill.clear();
        fill.extend_from_slice(&self.bucket_start[..table]);
        // every slot is written below (the buckets' slots are a
        // permutation of 0..n), so the last pass's entries are not cleared
        self.entries.resize(
            n,
            Entry {
                position: Vec3::zeros(),
                radius: 0.0,
                sweep: 0.0,
                body: 0,
                group: 0,
            },
        );
        for (&i, &h) in self.particles.iter().zip(&particle_bucket) {
            if h == OUT_OF_GRID {
                continue;
            }
            let h = h as usize;
            let slot = fill[h] as usize;
            fill[h] += 1;
            let i = i as usize;
            self.entries[slot] = Entry {
                position: bodies.positions[i],
                radius: bodies.shapes[i].sphere_radius().unwrap_or(0.0),
                sweep: bodies.sweep_of(i),
                body: i as u32,
                group: bodies.group_of(i),
            };
        }
        self.fill = fill;
        self.particle_bucket = particle_bucket;
    }

    /// Calls `visit` on the grid entries of the 27 cells around cell `c`
    /// (bucket `bucket` in the dense layout) that `near` does not rule out:
    /// the dense layout's 9 rows of three adjacent buckets, each cut to the
    /// cells in reach, or the hashed buckets with the cell to check (entries
    /// of other cells share them). The dense table has an empty cell on
    /// every side of the occupied ones, so every row is in it.
    #[inline]
    fn visit_neighbours<'a, const NEAR: bool>(
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
    fn walk_neighbours<'a, 'b, const NEAR: bool>(
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
    fn particle_pairs(
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
    fn cells_outreach_pairs(&self) -> bool {
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
    fn set_apart_fast(&mut self, bodies: &BodyView<'_>, max_sweep: f64) -> f64 {
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
    fn cells_entries(&self, cmin: [i64; 3], cmax: [i64; 3], out: &mut Vec<u32>) {
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
    fn fast_pairs(&mut self, bodies: &BodyView<'_>) {
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
    fn particle_pairs_with<const NEAR: bool>(
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
    fn particle_pair_ids(
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

    fn large_pairs(&mut self, bodies: &BodyView<'_>) -> Result<(), CollideError> {
        let margin = self.settings.margin;
        self.large_contacts.clear();
        let reach = self.cell_size + margin;
        for li in 0..self.large.len() {
            let l = self.large[li] as usize;
            let (lo, hi) = bodies.shapes[l].aabb(&bodies.positions[l], &bodies.orientations[l]);
            let lsweep = bodies.sweep_of(l);
            let grow = margin + lsweep + self.max_particle_sweep;
            let (lo, hi) = (lo - Vec3::repeat(grow), hi + Vec3::repeat(grow));
            let lfixed = bodies.fixed[l];
            let lsphere = bodies.shapes[l].sphere_radius().is_some();
            // a half-space's world normal, formed once for all particles
            // (the generic narrow phase forms it per pair, the same way)
            let plane_normal = match &bodies.shapes[l] {
                Shape::HalfSpace { normal } => Some(bodies.orientations[l] * normal),
                _ => None,
            };
            // particles against this large body: query the grid cells under
            // its box (a half-space's cut to the particles, where it can
            // be) when that is cheaper than scanning all particles
            let (plo, phi) = match plane_normal {
                Some(n) => self.half_space_reach(&n, &bodies.positions[l], (lo, hi), grow),
                None => (lo, hi),
            };
            let inv = self.inv_cell;
            let cmin = plo.map(|x| ((x - reach) * inv).floor());
            let cmax = phi.map(|x| ((x + reach) * inv).floor());
            let ncells = (cmax - cmin).map(|x| x + 1.0).product();
            let mut candidates = std::mem::take(&mut self.candidates);
            candidates.clear();
            if ncells.is_finite() && ncells < self.particles.len() as f64 {
                let cells = |c: Vec3| [c.x as i64, c.y as i64, c.z as i64];
                self.cells_entries(cells(cmin), cells(cmax), &mut candidates);
                // the particles out of the grid are in no cell
                candidates.extend_from_slice(&self.fast);
                candidates.sort_unstable();
            } else {
                candidates.extend_from_slice(&self.particles);
            }
            for p in candidates.iter().map(|&p| p as usize) {
                if (lfixed && bodies.fixed[p]) || bodies.same_group(p, l) {
                    continue;
                }
                let x = bodies.positions[p];
                let r = bodies.shapes[p].sphere_radius().unwrap_or(0.0);
                if (0..3).any(|k| x[k] + r < plo[k] || x[k] - r > phi[k]) {
                    continue;
                }
                self.raw.clear();
                let pair_margin = margin + lsweep + bodies.sweep_of(p);
                // two spheres pair in index order (a large sphere is a
                // sphere too); any other large body is b
                let (a, b) = if l < p && lsphere { (l, p) } else { (p, l) };
                if let (Some(n), Some(radius)) = (plane_normal, bodies.shapes[p].sphere_radius()) {
                    // the generic narrow phase's sphere-half-space case
                    let plane = &bodies.positions[l];
                    self.raw
                        .extend(narrow::sphere_plane(&x, radius, plane, &n, pair_margin));
                } else if !narrow::collide(
                    &bodies.placed(a),
                    &bodies.placed(b),
                    pair_margin,
                    &mut self.raw,
                ) {
                    return Err(CollideError::UnsupportedPair {
                        body_a: a,
                        body_b: b,
                    });
                }
                for raw in &self.raw {
                    self.large_contacts.push(make_point(a, b, raw));
                }
            }
            self.candidates = candidates;
            // large against large (a = smaller index)
            for &m in &self.large[li + 1..] {
                let m = m as usize;
                if (lfixed && bodies.fixed[m]) || bodies.same_group(l, m) {
                    continue;
                }
                // `lo..hi` holds the margin and l's sweep; m's box grows by
                // its own sweep, and the pair's reach is both sweeps (as
                // for every other pair)
                let msweep = bodies.sweep_of(m);
                let (mlo, mhi) =
                    bodies.shapes[m].aabb(&bodies.positions[m], &bodies.orientations[m]);
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
                if !narrow::collide(
                    &bodies.placed(a),
                    &bodies.placed(b),
                    pair_margin,
                    &mut self.raw,
                ) {
                    return Err(CollideError::UnsupportedPair {
                        body_a: a,
                        body_b: b,
                    });
                }
                for raw in &self.raw {
                    self.large_contacts.push(make_point(a, b, raw));
                }
            }
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
    fn half_space_reach(
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

    fn detect_impl(
        &mut self,
        bodies: &BodyView<'_>,
        out: &mut ContactSet,
        parallel: bool,
        fast: FastSpheres,
    ) -> Result<(), CollideError> {
        bodies.validate()?;
        self.classify(bodies);
        self.build_grid(bodies, fast);
        // large bodies first: an error leaves `out` as it was
        self.large_pairs(bodies)?;
        // the pairs are written into `out`'s own storage (no second
        // contact buffer kept between steps)
        let mut pairs = std::mem::take(&mut out.contacts);
        let n = self.particles.len();
        let threads = ndem_math::blocks::resolve_threads(0);
        let blocks = if parallel && n > 4096 && threads > 1 {
            threads
        } else {
            1
        };
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
            ndem_math::blocks::map_parts(
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

#[cfg(test)]
mod tests;

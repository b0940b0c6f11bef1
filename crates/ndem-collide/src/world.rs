//! Broad phase (hashed uniform grid for spheres, bounding-box queries for
//! the few large bodies) and the detection pass.

use crate::CollideError;
use crate::contact::{ContactPoint, ContactSet};
use crate::narrow::{self, Placed, RawContact};
use crate::shape::Shape;
use crate::slots::{BlockSlots, ContactSink};
use ndem_math::{ContactKey, Quat, Vec3};
use ndem_par::capacity::clear_for_refill;

mod build;
mod detect;
mod grid;
mod large;

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

#[cfg(test)]
mod tests;

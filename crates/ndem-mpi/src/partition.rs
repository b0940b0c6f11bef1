//! Recursive coordinate bisection of space into one box per rank, balanced
//! by particle count (Berger and Bokhari 1987; the decomposition LIGGGHTS
//! calls `balance rcb`).

use crate::comm::Communicator;
use crate::error::MpiError;
use ndem_math::Vec3;

/// Bisection steps of each cut's search (a cut lands between two adjacent
/// particle coordinates long before).
const BISECTION_STEPS: usize = 64;

/// An axis-aligned box `[lo, hi)`; the outer faces of the decomposition are
/// infinite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Subdomain {
    /// Lower corner \[m\] (may be −∞).
    pub lo: [f64; 3],
    /// Upper corner \[m\] (may be +∞).
    pub hi: [f64; 3],
}

impl Subdomain {
    /// All of space.
    pub const EVERYWHERE: Subdomain = Subdomain {
        lo: [f64::NEG_INFINITY; 3],
        hi: [f64::INFINITY; 3],
    };

    /// Whether `p` lies in `[lo, hi)`.
    pub fn contains(&self, p: &Vec3) -> bool {
        (0..3).all(|k| p[k] >= self.lo[k] && p[k] < self.hi[k])
    }

    /// Euclidean distance from `p` to the box (0 inside).
    pub fn distance(&self, p: &Vec3) -> f64 {
        let mut d2 = 0.0;
        for k in 0..3 {
            let d = (self.lo[k] - p[k]).max(p[k] - self.hi[k]).max(0.0);
            d2 += d * d;
        }
        d2.sqrt()
    }
}

/// One box per rank, tiling space.
#[derive(Debug, Clone, PartialEq)]
pub struct Decomposition {
    boxes: Vec<Subdomain>,
    /// Axes along which some cut was made (the widths checked).
    cut_axes: [bool; 3],
}

/// A group of ranks `first..end` sharing box `bounds` while it is cut.
#[derive(Debug, Clone, Copy)]
struct Group {
    first: usize,
    end: usize,
    bounds: Subdomain,
}

impl Decomposition {
    /// One rank owning everything.
    pub fn single() -> Self {
        Self {
            boxes: vec![Subdomain::EVERYWHERE],
            cut_axes: [false; 3],
        }
    }

    /// `size` boxes of which rank 0's is all of space and the others are
    /// empty: the layout of a scene with fewer dynamic bodies than ranks
    /// (an emitter's first steps), kept until a bisection succeeds.
    pub fn on_first_rank(size: usize) -> Self {
        let empty = Subdomain {
            lo: [f64::INFINITY; 3],
            hi: [f64::INFINITY; 3],
        };
        let mut boxes = vec![empty; size.max(1)];
        boxes[0] = Subdomain::EVERYWHERE;
        Self {
            boxes,
            cut_axes: [false; 3],
        }
    }

    /// Recursive coordinate bisection of the particles at `positions` (this
    /// rank's owned ones) into `comm.size()` boxes: each group of ranks is
    /// cut across the longest extent of its particles, at the coordinate
    /// that gives each half particles in proportion to its ranks. Collective;
    /// every rank gets the same boxes.
    pub fn bisect(comm: &dyn Communicator, positions: &[Vec3]) -> Self {
        let mut groups = vec![Group {
            first: 0,
            end: comm.size(),
            bounds: Subdomain::EVERYWHERE,
        }];
        let mut cut_axes = [false; 3];
        while groups.iter().any(|g| g.end - g.first > 1) {
            let splitting: Vec<usize> = (0..groups.len())
                .filter(|&i| groups[i].end - groups[i].first > 1)
                .collect();
            let cuts = cut_groups(
                comm,
                positions,
                &splitting.iter().map(|&i| groups[i]).collect::<Vec<_>>(),
            );
            let mut next = Vec::with_capacity(groups.len() * 2);
            let mut c = cuts.into_iter();
            for (i, g) in groups.iter().enumerate() {
                if !splitting.contains(&i) {
                    next.push(*g);
                    continue;
                }
                let (axis, at) = c.next().unwrap_or((0, 0.0));
                cut_axes[axis] = true;
                let mid = g.first + (g.end - g.first) / 2;
                let mut left = g.bounds;
                left.hi[axis] = at;
                let mut right = g.bounds;
                right.lo[axis] = at;
                next.push(Group {
                    first: g.first,
                    end: mid,
                    bounds: left,
                });
                next.push(Group {
                    first: mid,
                    end: g.end,
                    bounds: right,
                });
            }
            groups = next;
        }
        Self {
            boxes: groups.iter().map(|g| g.bounds).collect(),
            cut_axes,
        }
    }

    /// Whether this is [`Self::on_first_rank`]'s layout on several ranks.
    pub fn is_on_first_rank(&self) -> bool {
        self.boxes.len() > 1 && self.boxes[1..].iter().all(|b| b.lo[0] == f64::INFINITY)
    }

    /// The boxes, by rank.
    pub fn boxes(&self) -> &[Subdomain] {
        &self.boxes
    }

    /// The ranks but `except` whose box lies within `width` of `p`: those
    /// that hold a body of rank `except` at `p` as a ghost.
    pub fn ranks_near(&self, p: &Vec3, width: f64, except: usize) -> impl Iterator<Item = usize> {
        let p = *p;
        self.boxes
            .iter()
            .enumerate()
            .filter(move |(s, b)| *s != except && b.distance(&p) <= width)
            .map(|(s, _)| s)
    }

    /// The rank whose box contains `p` (the last rank for a non-finite
    /// point, which the world's checks rule out).
    pub fn owner(&self, p: &Vec3) -> usize {
        self.boxes
            .iter()
            .position(|b| b.contains(p))
            .unwrap_or(self.boxes.len() - 1)
    }

    /// Checks that every box is at least `diameter` wide along the cut axes.
    pub fn check_widths(&self, diameter: f64) -> Result<(), MpiError> {
        for (rank, b) in self.boxes.iter().enumerate() {
            for axis in (0..3).filter(|&k| self.cut_axes[k]) {
                let width = b.hi[axis] - b.lo[axis];
                if width < diameter {
                    return Err(MpiError::SubdomainTooSmall {
                        rank,
                        axis,
                        width,
                        diameter,
                    });
                }
            }
        }
        Ok(())
    }
}

/// The cut `(axis, coordinate)` of each group: the axis of the longest
/// extent of its particles, the coordinate found by bisection on the
/// global count left of it (all groups at once, one vector reduction per
/// bisection step).
fn cut_groups(comm: &dyn Communicator, positions: &[Vec3], groups: &[Group]) -> Vec<(usize, f64)> {
    let n = groups.len();
    // per group: count, then −min and max per axis (one max-reduction)
    let mut bounds = vec![f64::NEG_INFINITY; 6 * n];
    let mut counts = vec![0.0; n];
    for p in positions {
        for (gi, g) in groups.iter().enumerate() {
            if g.bounds.contains(p) {
                counts[gi] += 1.0;
                for k in 0..3 {
                    bounds[6 * gi + k] = bounds[6 * gi + k].max(-p[k]);
                    bounds[6 * gi + 3 + k] = bounds[6 * gi + 3 + k].max(p[k]);
                }
            }
        }
    }
    let bounds = comm.max(&bounds);
    let counts = comm.sum(&counts);
    let mut axis = vec![0usize; n];
    let mut lo = vec![0.0; n];
    let mut hi = vec![0.0; n];
    let mut target = vec![0.0; n];
    for (gi, g) in groups.iter().enumerate() {
        let extent = |k: usize| bounds[6 * gi + 3 + k] + bounds[6 * gi + k];
        // the longest finite extent (none: a group without particles)
        let mut k = 0;
        for j in 1..3 {
            if extent(j).is_finite() && (!extent(k).is_finite() || extent(j) > extent(k)) {
                k = j;
            }
        }
        axis[gi] = k;
        lo[gi] = -bounds[6 * gi + k];
        hi[gi] = bounds[6 * gi + 3 + k];
        if !(lo[gi].is_finite() && hi[gi].is_finite()) {
            // no particles in this group: cut its box inside its faces
            let at = empty_cut(&g.bounds, k);
            (lo[gi], hi[gi]) = (at, at);
        }
        let ranks = (g.end - g.first) as f64;
        let left = ((g.end - g.first) / 2) as f64;
        target[gi] = (counts[gi] * left / ranks).round();
    }
    for _ in 0..BISECTION_STEPS {
        let mid: Vec<f64> = (0..n).map(|gi| 0.5 * (lo[gi] + hi[gi])).collect();
        let mut left = vec![0.0; n];
        for p in positions {
            for (gi, g) in groups.iter().enumerate() {
                if g.bounds.contains(p) && p[axis[gi]] < mid[gi] {
                    left[gi] += 1.0;
                }
            }
        }
        let left = comm.sum(&left);
        let mut done = true;
        for gi in 0..n {
            if left[gi] < target[gi] {
                lo[gi] = mid[gi];
                done = false;
            } else if left[gi] > target[gi] {
                hi[gi] = mid[gi];
                done = false;
            } else {
                (lo[gi], hi[gi]) = (mid[gi], mid[gi]);
            }
        }
        if done {
            break;
        }
    }
    (0..n).map(|gi| (axis[gi], hi[gi])).collect()
}

/// Where to cut a box along `axis` when no particle is in it: between its
/// faces if both are finite, one metre inside a finite face, else at 0.
fn empty_cut(b: &Subdomain, axis: usize) -> f64 {
    match (b.lo[axis].is_finite(), b.hi[axis].is_finite()) {
        (true, true) => 0.5 * (b.lo[axis] + b.hi[axis]),
        (true, false) => b.lo[axis] + 1.0,
        (false, true) => b.hi[axis] - 1.0,
        (false, false) => 0.0,
    }
}

//! Reusable proptest strategies for collision tests (feature
//! `proptest-support`).

use crate::{BodyView, Shape};
use ndem_math::proptest_support::{rotation, unit_vector};
use ndem_math::{Quat, Vec3};
use proptest::prelude::*;

/// An owned set of bodies that can be viewed as a [`BodyView`].
#[derive(Debug, Clone)]
pub struct Bodies {
    /// Shapes.
    pub shapes: Vec<Shape>,
    /// Positions.
    pub positions: Vec<Vec3>,
    /// Orientations.
    pub orientations: Vec<Quat>,
    /// Fixed flags.
    pub fixed: Vec<bool>,
    /// Speculative distances (empty: none).
    pub sweep: Vec<f64>,
    /// Collision groups (empty: none).
    pub groups: Vec<u32>,
}

impl Bodies {
    /// An empty set.
    pub fn new() -> Self {
        Self {
            shapes: Vec::new(),
            positions: Vec::new(),
            orientations: Vec::new(),
            fixed: Vec::new(),
            sweep: Vec::new(),
            groups: Vec::new(),
        }
    }

    /// Adds a body; returns its index.
    pub fn push(&mut self, shape: Shape, position: Vec3, orientation: Quat, fixed: bool) -> usize {
        self.shapes.push(shape);
        self.positions.push(position);
        self.orientations.push(orientation);
        self.fixed.push(fixed);
        self.shapes.len() - 1
    }

    /// Adds a fixed floor `z = height` (a half-space with normal +z);
    /// returns its index.
    pub fn push_floor(&mut self, height: f64) -> usize {
        self.push(
            Shape::HalfSpace { normal: Vec3::z() },
            Vec3::new(0.0, 0.0, height),
            Quat::identity(),
            true,
        )
    }

    /// Borrowed view.
    pub fn view(&self) -> BodyView<'_> {
        BodyView {
            shapes: &self.shapes,
            positions: &self.positions,
            orientations: &self.orientations,
            fixed: &self.fixed,
            sweep: &self.sweep,
            groups: &self.groups,
        }
    }
}

impl Default for Bodies {
    fn default() -> Self {
        Self::new()
    }
}

/// A cloud of `1..max_spheres` polydisperse spheres (radii in
/// `[r_min, r_max]`, `r_max < 4 r_min`) with random orientations in a cube
/// of side `size`, about a tenth of them fixed.
pub fn sphere_cloud(
    max_spheres: usize,
    size: f64,
    r_min: f64,
    r_max: f64,
) -> impl Strategy<Value = Bodies> {
    prop::collection::vec(
        (
            [0.0..size, 0.0..size, 0.0..size],
            r_min..=r_max,
            rotation(),
            prop::bool::weighted(0.1),
        ),
        1..max_spheres,
    )
    .prop_map(|v| {
        let mut b = Bodies::new();
        for ([x, y, z], r, q, fixed) in v {
            b.push(Shape::Sphere { radius: r }, Vec3::new(x, y, z), q, fixed);
        }
        b
    })
}

/// A sphere cloud plus fixed walls: a floor half-space, a tilted box, a
/// solid cylinder and (sometimes) a drum around everything.
pub fn sphere_cloud_with_walls(
    max_spheres: usize,
    size: f64,
    r_min: f64,
    r_max: f64,
) -> impl Strategy<Value = Bodies> {
    (
        sphere_cloud(max_spheres, size, r_min, r_max),
        rotation(),
        rotation(),
        any::<bool>(),
    )
        .prop_map(move |(mut b, qbox, qcyl, drum)| {
            b.push_floor(0.2 * size);
            b.push(
                Shape::Box {
                    half_extents: Vec3::new(0.2, 0.1, 0.15) * size,
                },
                Vec3::repeat(0.5 * size),
                qbox,
                true,
            );
            b.push(
                Shape::Cylinder {
                    radius: 0.1 * size,
                    half_height: 0.2 * size,
                },
                Vec3::new(0.8, 0.3, 0.6) * size,
                qcyl,
                true,
            );
            if drum {
                b.push(
                    Shape::Drum {
                        radius: 0.6 * size,
                        half_height: 0.45 * size,
                    },
                    Vec3::repeat(0.5 * size),
                    Quat::identity(),
                    true,
                );
            }
            b
        })
}

/// A triangle soup of 1 to `max_triangles` triangles in the cube
/// `[-1, 1]³` (edges at least 0.05 long and not nearly collinear), as a
/// [`Shape::TriMesh`].
pub fn arb_trimesh(max_triangles: usize) -> impl Strategy<Value = Shape> {
    let corner = || [-1.0..1.0f64, -1.0..1.0f64, -1.0..1.0f64];
    prop::collection::vec((corner(), corner(), corner()), 1..max_triangles.max(2)).prop_map(
        |tris| {
            let mut vertices = Vec::new();
            let mut indices = Vec::new();
            for (a, b, c) in tris {
                let [a, b, c] = [a, b, c].map(|p| Vec3::new(p[0], p[1], p[2]));
                let area = (b - a).cross(&(c - a)).norm();
                if area < 0.05 || (b - a).norm() < 0.05 || (c - a).norm() < 0.05 {
                    continue;
                }
                let base = vertices.len() as u32;
                vertices.extend([a, b, c]);
                indices.push([base, base + 1, base + 2]);
            }
            if indices.is_empty() {
                vertices = vec![Vec3::zeros(), Vec3::x(), Vec3::y()];
                indices.push([0, 1, 2]);
            }
            Shape::trimesh(&vertices, indices).expect("non-degenerate triangles")
        },
    )
}

/// A polydisperse mixture with every size class the detection treats
/// apart: 20 to `max_small` small spheres (radii in `[r, 2r]`, `r = 1 mm`)
/// in a cube of 4 cm, and 1 to `max_large` chains of large spheres (radius
/// ratio to the small ones drawn up to 100, so that they count as large
/// bodies, over four times the median radius) whose neighbours are placed
/// at gaps of `-0.05..0.05` of a radius, each chain either inside the
/// small ones' cube or far away (up to 1 km). Every sphere gets a sweep
/// of up to two small radii; about a tenth are fixed. The margin of the
/// pass is the caller's (0 exercises the sweeps alone).
pub fn polydisperse_mixture(max_small: usize, max_large: usize) -> impl Strategy<Value = Bodies> {
    let small = prop::collection::vec(
        (
            [0.0..0.04f64, 0.0..0.04, 0.0..0.04],
            0.001..=0.002f64,
            0.0..0.004f64,
            prop::bool::weighted(0.1),
        ),
        20..max_small.max(21),
    );
    let chain = (
        [-0.05..0.09f64, -0.05..0.09, -0.05..0.09],
        prop_oneof![4.5..10.0f64, 10.0..100.0],
        unit_vector(),
        prop::collection::vec(
            (-0.05..0.05f64, 0.0..0.004f64, prop::bool::weighted(0.1)),
            1..6,
        ),
        prop_oneof![Just(0.0), 1.0..1000.0f64],
    );
    (small, prop::collection::vec(chain, 1..max_large.max(2))).prop_map(|(small, chains)| {
        let mut b = Bodies::new();
        for ([x, y, z], r, sweep, fixed) in small {
            b.push(
                Shape::Sphere { radius: r },
                Vec3::new(x, y, z),
                Quat::identity(),
                fixed,
            );
            b.sweep.push(sweep);
        }
        for ([x, y, z], ratio, dir, links, far) in chains {
            let radius = 0.001 * ratio;
            let mut at = Vec3::new(x, y, z) + Vec3::new(far, 0.5 * far, 0.0);
            for (gap, sweep, fixed) in links {
                b.push(Shape::Sphere { radius }, at, Quat::identity(), fixed);
                b.sweep.push(sweep);
                at += dir * (2.0 * radius + gap * radius);
            }
        }
        b
    })
}

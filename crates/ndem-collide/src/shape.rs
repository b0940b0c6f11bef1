//! Shapes of the papers' scenes. Triangle meshes and convex polyhedra are
//! backed by parry3d-f64; nothing of parry is visible outside this crate.

use crate::{CollideError, convert};
use ndem_math::{Quat, Vec3};
use parry3d_f64::shape as ps;
use std::sync::Arc;

/// The collision shape of one body, in the body frame.
#[derive(Debug, Clone)]
pub enum Shape {
    /// A sphere of the given radius centred at the body origin.
    Sphere {
        /// Radius \[m\].
        radius: f64,
    },
    /// The half-space below a plane through the body origin with the given
    /// outward unit normal (body frame). Its surface is flat (infinite
    /// curvature radius).
    HalfSpace {
        /// Outward unit normal, body frame.
        normal: Vec3,
    },
    /// A solid box centred at the origin.
    Box {
        /// Half extents along the body axes \[m\].
        half_extents: Vec3,
    },
    /// A solid cylinder with its axis along body z, centred at the origin.
    Cylinder {
        /// Radius \[m\].
        radius: f64,
        /// Half height \[m\].
        half_height: f64,
    },
    /// The inside of a hollow cylinder with end caps (a drum): bodies inside
    /// touch its curved wall (feature 0) and its caps at `z = ±h`
    /// (features 1 and 2). Axis along body z.
    Drum {
        /// Inner radius \[m\].
        radius: f64,
        /// Half of the inner width \[m\].
        half_height: f64,
    },
    /// A static triangle mesh (conveyors, buckets, arbitrary geometry).
    TriMesh(TriMeshShape),
    /// A convex polyhedron.
    Convex(ConvexShape),
    /// No collision geometry: the body never touches anything (a rigid
    /// aggregate, which collides through its member bodies).
    Empty,
}

/// A triangle mesh (parry3d-f64 inside).
#[derive(Clone)]
pub struct TriMeshShape {
    pub(crate) mesh: Arc<ps::TriMesh>,
}

impl TriMeshShape {
    /// Vertices (body frame).
    pub fn vertices(&self) -> Vec<Vec3> {
        self.mesh
            .vertices()
            .iter()
            .map(convert::from_parry)
            .collect()
    }
    /// Triangles as vertex index triples.
    pub fn indices(&self) -> Vec<[u32; 3]> {
        self.mesh.indices().to_vec()
    }
}

impl ConvexShape {
    /// Vertices of the hull (body frame).
    pub fn points(&self) -> Vec<Vec3> {
        self.hull.points().iter().map(convert::from_parry).collect()
    }
}

impl std::fmt::Debug for TriMeshShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TriMesh({} triangles)", self.mesh.num_triangles())
    }
}

/// A convex polyhedron (parry3d-f64 inside).
#[derive(Clone)]
pub struct ConvexShape {
    pub(crate) hull: Arc<ps::ConvexPolyhedron>,
    pub(crate) bounding_radius: f64,
}

impl std::fmt::Debug for ConvexShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Convex({} vertices)", self.hull.points().len())
    }
}

/// Whether a length (radius, half extent) is valid: finite and positive.
pub(crate) fn is_positive_length(value: f64) -> bool {
    value.is_finite() && value > 0.0
}

fn positive(field: &'static str, value: f64) -> Result<f64, CollideError> {
    if is_positive_length(value) {
        Ok(value)
    } else {
        Err(CollideError::InvalidShape { field, value })
    }
}

impl Shape {
    /// A sphere; errors on a non-positive or non-finite radius.
    pub fn sphere(radius: f64) -> Result<Self, CollideError> {
        Ok(Shape::Sphere {
            radius: positive("radius", radius)?,
        })
    }

    /// A half-space with the given outward normal (normalised here).
    pub fn half_space(normal: Vec3) -> Result<Self, CollideError> {
        let n = normal.norm();
        positive("normal", n)?;
        Ok(Shape::HalfSpace { normal: normal / n })
    }

    /// A box with the given half extents.
    pub fn cuboid(half_extents: Vec3) -> Result<Self, CollideError> {
        for &h in half_extents.iter() {
            positive("half_extents", h)?;
        }
        Ok(Shape::Box { half_extents })
    }

    /// A solid cylinder along body z.
    pub fn cylinder(radius: f64, half_height: f64) -> Result<Self, CollideError> {
        Ok(Shape::Cylinder {
            radius: positive("radius", radius)?,
            half_height: positive("half_height", half_height)?,
        })
    }

    /// The inside of a capped hollow cylinder along body z.
    pub fn drum(radius: f64, half_height: f64) -> Result<Self, CollideError> {
        Ok(Shape::Drum {
            radius: positive("radius", radius)?,
            half_height: positive("half_height", half_height)?,
        })
    }

    /// A triangle mesh from vertices and index triples.
    pub fn trimesh(vertices: &[Vec3], indices: Vec<[u32; 3]>) -> Result<Self, CollideError> {
        for v in vertices {
            if !v.iter().all(|x| x.is_finite()) {
                return Err(CollideError::InvalidGeometry {
                    what: "triangle mesh",
                    reason: "non-finite vertex".into(),
                });
            }
        }
        if indices.is_empty() {
            return Err(CollideError::InvalidGeometry {
                what: "triangle mesh",
                reason: "no triangles".into(),
            });
        }
        if let Some(bad) = indices
            .iter()
            .flatten()
            .find(|&&i| i as usize >= vertices.len())
        {
            return Err(CollideError::InvalidGeometry {
                what: "triangle mesh",
                reason: format!("index {bad} out of range for {} vertices", vertices.len()),
            });
        }
        let scale = vertices
            .iter()
            .map(|v| v.norm())
            .fold(0.0, f64::max)
            .max(f64::MIN_POSITIVE);
        for (k, t) in indices.iter().enumerate() {
            let [a, b, c] = t.map(|i| vertices[i as usize]);
            // zero area (repeated or collinear vertices) relative to the
            // mesh's size: no normal, and parry's projections misbehave
            if (b - a).cross(&(c - a)).norm() <= 1e-12 * scale * scale {
                return Err(CollideError::InvalidGeometry {
                    what: "triangle mesh",
                    reason: format!("triangle {k} ({t:?}) is degenerate (zero area)"),
                });
            }
        }
        let verts = vertices.iter().map(convert::to_parry).collect();
        let mesh = ps::TriMesh::new(verts, indices).map_err(|e| CollideError::InvalidGeometry {
            what: "triangle mesh",
            reason: format!("{e:?}"),
        })?;
        Ok(Shape::TriMesh(TriMeshShape {
            mesh: Arc::new(mesh),
        }))
    }

    /// The convex hull of a point cloud.
    pub fn convex_hull(points: &[Vec3]) -> Result<Self, CollideError> {
        if points.iter().any(|p| !p.iter().all(|x| x.is_finite())) {
            return Err(CollideError::InvalidGeometry {
                what: "convex hull",
                reason: "non-finite point".into(),
            });
        }
        let pts: Vec<_> = points.iter().map(convert::to_parry).collect();
        let hull = ps::ConvexPolyhedron::from_convex_hull(&pts).ok_or_else(|| {
            CollideError::InvalidGeometry {
                what: "convex hull",
                reason: "degenerate point set".into(),
            }
        })?;
        let bounding_radius = points.iter().map(|p| p.norm()).fold(0.0, f64::max);
        Ok(Shape::Convex(ConvexShape {
            hull: Arc::new(hull),
            bounding_radius,
        }))
    }

    /// Checks the parameters of a shape built by hand.
    pub fn validate(&self) -> Result<(), CollideError> {
        match self {
            Shape::Sphere { radius } => positive("radius", *radius).map(|_| ()),
            Shape::HalfSpace { normal } => {
                if (normal.norm() - 1.0).abs() > 1e-9 || !normal.iter().all(|x| x.is_finite()) {
                    Err(CollideError::InvalidShape {
                        field: "normal",
                        value: normal.norm(),
                    })
                } else {
                    Ok(())
                }
            }
            Shape::Box { half_extents } => {
                for &h in half_extents.iter() {
                    positive("half_extents", h)?;
                }
                Ok(())
            }
            Shape::Cylinder {
                radius,
                half_height,
            }
            | Shape::Drum {
                radius,
                half_height,
            } => {
                positive("radius", *radius)?;
                positive("half_height", *half_height).map(|_| ())
            }
            Shape::TriMesh(_) | Shape::Convex(_) | Shape::Empty => Ok(()),
        }
    }

    /// Sphere radius, if this is a sphere.
    pub fn sphere_radius(&self) -> Option<f64> {
        match self {
            Shape::Sphere { radius } => Some(*radius),
            _ => None,
        }
    }

    /// The surface as triangles in the body frame, for output (boxes,
    /// cylinders as 24-sided prisms, triangle meshes, convex hulls);
    /// `None` for spheres (drawn as points), half-spaces, drums and empty
    /// shapes.
    pub fn surface_triangles(&self) -> Option<(Vec<Vec3>, Vec<[u32; 3]>)> {
        match self {
            Shape::Box { half_extents: h } => {
                let vertices = (0..8)
                    .map(|k| {
                        Vec3::new(
                            if k & 1 == 0 { -h.x } else { h.x },
                            if k & 2 == 0 { -h.y } else { h.y },
                            if k & 4 == 0 { -h.z } else { h.z },
                        )
                    })
                    .collect();
                let quads = [
                    [0, 2, 3, 1],
                    [4, 5, 7, 6],
                    [0, 1, 5, 4],
                    [2, 6, 7, 3],
                    [0, 4, 6, 2],
                    [1, 3, 7, 5],
                ];
                let indices = quads
                    .iter()
                    .flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]])
                    .collect();
                Some((vertices, indices))
            }
            Shape::Cylinder {
                radius,
                half_height,
            } => {
                const SIDES: u32 = 24;
                let mut vertices = Vec::new();
                for k in 0..SIDES {
                    let a = std::f64::consts::TAU * f64::from(k) / f64::from(SIDES);
                    for z in [-half_height, *half_height] {
                        vertices.push(Vec3::new(radius * a.cos(), radius * a.sin(), z));
                    }
                }
                vertices.push(Vec3::new(0.0, 0.0, -half_height));
                vertices.push(Vec3::new(0.0, 0.0, *half_height));
                let (bottom, top) = (2 * SIDES, 2 * SIDES + 1);
                let mut indices = Vec::new();
                for k in 0..SIDES {
                    let (a, b) = (2 * k, 2 * ((k + 1) % SIDES));
                    indices.extend([
                        [a, b, b + 1],
                        [a, b + 1, a + 1],
                        [bottom, b, a],
                        [top, a + 1, b + 1],
                    ]);
                }
                Some((vertices, indices))
            }
            Shape::TriMesh(m) => Some((m.vertices(), m.indices())),
            Shape::Convex(c) => {
                let (points, indices) = c.hull.to_trimesh();
                Some((points.iter().map(convert::from_parry).collect(), indices))
            }
            Shape::Sphere { .. } | Shape::HalfSpace { .. } | Shape::Drum { .. } | Shape::Empty => {
                None
            }
        }
    }

    /// World-frame axis-aligned bounding box `(min, max)` of the solid;
    /// infinite for half-spaces and drums.
    pub fn aabb(&self, position: &Vec3, orientation: &Quat) -> (Vec3, Vec3) {
        let r = orientation.to_rotation_matrix();
        let extent = |h: Vec3| -> Vec3 {
            let m = r.matrix().abs();
            m * h
        };
        match self {
            Shape::Sphere { radius } => {
                let e = Vec3::repeat(*radius);
                (position - e, position + e)
            }
            // A drum's solid is everything outside its cavity.
            Shape::HalfSpace { .. } | Shape::Drum { .. } => {
                (Vec3::repeat(f64::NEG_INFINITY), Vec3::repeat(f64::INFINITY))
            }
            Shape::Box { half_extents } => {
                let e = extent(*half_extents);
                (position - e, position + e)
            }
            Shape::Cylinder {
                radius,
                half_height,
            } => {
                let e = extent(Vec3::new(*radius, *radius, *half_height));
                (position - e, position + e)
            }
            Shape::TriMesh(m) => {
                let aabb = m.mesh.aabb(&convert::pose(position, orientation));
                (
                    convert::from_parry(&aabb.mins),
                    convert::from_parry(&aabb.maxs),
                )
            }
            Shape::Convex(c) => {
                let e = Vec3::repeat(c.bounding_radius);
                (position - e, position + e)
            }
            Shape::Empty => (*position, *position),
        }
    }

    /// Distance from the body origin to the farthest point of the solid
    /// (0 for unbounded shapes and meshes, whose motion is not swept).
    pub fn bounding_radius(&self) -> f64 {
        match self {
            Shape::Sphere { radius } => *radius,
            Shape::Box { half_extents } => half_extents.norm(),
            Shape::Cylinder {
                radius,
                half_height,
            } => radius.hypot(*half_height),
            Shape::Convex(c) => c.bounding_radius,
            Shape::HalfSpace { .. } | Shape::Drum { .. } | Shape::TriMesh(_) | Shape::Empty => 0.0,
        }
    }

    /// Radius of curvature used for the Hertz effective radius: the sphere
    /// radius; for boxes the smallest half extent and for cylinders the
    /// radius (a proxy: edges and corners have no Hertz radius, and two flat
    /// surfaces would give an infinite stiffness); infinity for half-spaces,
    /// drum walls and meshes (the drum's concave wall, radius −R, is treated
    /// as flat: for D = 40 d this changes R* by 2.5 %); the bounding radius
    /// for convex polyhedra.
    pub fn curvature_radius(&self) -> f64 {
        match self {
            Shape::Sphere { radius } => *radius,
            Shape::Box { half_extents } => half_extents.min(),
            Shape::Cylinder { radius, .. } => *radius,
            Shape::Convex(c) => c.bounding_radius,
            Shape::HalfSpace { .. } | Shape::Drum { .. } | Shape::TriMesh(_) | Shape::Empty => {
                f64::INFINITY
            }
        }
    }
}

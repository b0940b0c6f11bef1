//! A body's shape as a scene file writes it.

use crate::error::SceneError;
use ndem_collide::Shape;
use ndem_math::Vec3;
use serde::{Deserialize, Serialize};

pub(crate) fn v3(a: [f64; 3]) -> Vec3 {
    Vec3::new(a[0], a[1], a[2])
}

pub(crate) fn a3(v: &Vec3) -> [f64; 3] {
    [v.x, v.y, v.z]
}

/// A body's shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ShapeSpec {
    /// Sphere.
    Sphere {
        /// Radius \[m\].
        radius: f64,
    },
    /// Half-space with outward normal (body frame) through the body origin.
    HalfSpace {
        /// Normal.
        normal: [f64; 3],
    },
    /// Box.
    Box {
        /// Half extents \[m\].
        half_extents: [f64; 3],
    },
    /// Solid cylinder along body z.
    Cylinder {
        /// Radius \[m\].
        radius: f64,
        /// Half height \[m\].
        half_height: f64,
    },
    /// Inside of a capped hollow cylinder along body z.
    Drum {
        /// Radius \[m\].
        radius: f64,
        /// Half height \[m\].
        half_height: f64,
    },
    /// Triangle mesh.
    TriMesh {
        /// Vertices.
        vertices: Vec<[f64; 3]>,
        /// Triangles.
        indices: Vec<[u32; 3]>,
    },
    /// Convex hull of points.
    Convex {
        /// Points.
        points: Vec<[f64; 3]>,
    },
    /// No collision geometry (a rigid aggregate, which collides through
    /// its members).
    Empty,
}

impl ShapeSpec {
    /// The collision shape (checked).
    pub fn to_shape(&self) -> Result<Shape, SceneError> {
        Ok(match self {
            ShapeSpec::Sphere { radius } => Shape::sphere(*radius)?,
            ShapeSpec::HalfSpace { normal } => Shape::half_space(v3(*normal))?,
            ShapeSpec::Box { half_extents } => Shape::cuboid(v3(*half_extents))?,
            ShapeSpec::Cylinder {
                radius,
                half_height,
            } => Shape::cylinder(*radius, *half_height)?,
            ShapeSpec::Drum {
                radius,
                half_height,
            } => Shape::drum(*radius, *half_height)?,
            ShapeSpec::TriMesh { vertices, indices } => Shape::trimesh(
                &vertices.iter().map(|v| v3(*v)).collect::<Vec<_>>(),
                indices.clone(),
            )?,
            ShapeSpec::Convex { points } => {
                Shape::convex_hull(&points.iter().map(|v| v3(*v)).collect::<Vec<_>>())?
            }
            ShapeSpec::Empty => Shape::Empty,
        })
    }

    /// The spec of a shape.
    pub fn of_shape(shape: &Shape) -> Self {
        match shape {
            Shape::Sphere { radius } => ShapeSpec::Sphere { radius: *radius },
            Shape::HalfSpace { normal } => ShapeSpec::HalfSpace { normal: a3(normal) },
            Shape::Box { half_extents } => ShapeSpec::Box {
                half_extents: a3(half_extents),
            },
            Shape::Cylinder {
                radius,
                half_height,
            } => ShapeSpec::Cylinder {
                radius: *radius,
                half_height: *half_height,
            },
            Shape::Drum {
                radius,
                half_height,
            } => ShapeSpec::Drum {
                radius: *radius,
                half_height: *half_height,
            },
            Shape::TriMesh(m) => ShapeSpec::TriMesh {
                vertices: m.vertices().iter().map(a3).collect(),
                indices: m.indices(),
            },
            Shape::Convex(c) => ShapeSpec::Convex {
                points: c.points().iter().map(a3).collect(),
            },
            Shape::Empty => ShapeSpec::Empty,
        }
    }
}

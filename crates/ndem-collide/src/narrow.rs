//! Narrow phase: closed forms for the pairs the papers' scenes need and
//! parry3d-f64 for every other pair.
//!
//! Every routine returns contacts with the normal pointing from the second
//! shape (b) to the first (a) and the point midway between the two surfaces.

use crate::convert;
use crate::shape::{ConvexShape, Shape, TriMeshShape};
use ndem_math::{Quat, Vec3};
use parry3d_f64::query::{self as pq, PersistentQueryDispatcher};
use parry3d_f64::shape as ps;

/// A contact before it is turned into a `ContactPoint`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawContact {
    /// Feature id within the pair.
    pub feature: u32,
    /// Midpoint between the surfaces.
    pub point: Vec3,
    /// Unit normal from b to a.
    pub normal: Vec3,
    /// Signed gap.
    pub gap: f64,
}

/// Pose of one body for the narrow phase.
#[derive(Debug, Clone, Copy)]
pub struct Placed<'a> {
    /// The shape.
    pub shape: &'a Shape,
    /// Centre position.
    pub position: Vec3,
    /// Orientation.
    pub orientation: Quat,
}

#[inline]
fn unit_or(v: Vec3, fallback: Vec3) -> (Vec3, f64) {
    let n = v.norm();
    if n > 0.0 { (v / n, n) } else { (fallback, 0.0) }
}

/// Sphere (a) against sphere (b).
#[inline]
pub fn sphere_sphere(xa: &Vec3, ra: f64, xb: &Vec3, rb: f64, margin: f64) -> Option<RawContact> {
    let d = xa - xb;
    let dist2 = d.norm_squared();
    let reach = ra + rb + margin;
    if dist2 > reach * reach {
        return None;
    }
    let (n, dist) = unit_or(d, Vec3::z());
    let gap = dist - ra - rb;
    Some(RawContact {
        feature: 0,
        point: xb + n * (rb + 0.5 * gap),
        normal: n,
        gap,
    })
}

/// Sphere (a) against a plane through `p0` with outward normal `n` (b).
pub fn sphere_plane(x: &Vec3, r: f64, p0: &Vec3, n: &Vec3, margin: f64) -> Option<RawContact> {
    let gap = (x - p0).dot(n) - r;
    (gap <= margin).then(|| RawContact {
        feature: 0,
        point: x - n * (r + 0.5 * gap),
        normal: *n,
        gap,
    })
}

/// Midpoint contact from the sphere centre `p`, radius `r`, the closest
/// surface point `q` of the other body and the normal `n` (into the sphere),
/// all in the other body's frame.
fn local_contact(
    p: &Vec3,
    r: f64,
    q: &Vec3,
    n: &Vec3,
    gap: f64,
    feature: u32,
) -> (Vec3, Vec3, f64, u32) {
    let s = p - n * r;
    ((q + s) * 0.5, *n, gap, feature)
}

fn to_world(b: &Placed<'_>, local: (Vec3, Vec3, f64, u32)) -> RawContact {
    RawContact {
        feature: local.3,
        point: b.position + b.orientation * local.0,
        normal: b.orientation * local.1,
        gap: local.2,
    }
}

/// Sphere (centre `x`, radius `r`) against a solid box (b).
pub fn sphere_box(x: &Vec3, r: f64, b: &Placed<'_>, h: &Vec3, margin: f64) -> Option<RawContact> {
    let p = b.orientation.inverse() * (x - b.position);
    let q = Vec3::new(
        p.x.clamp(-h.x, h.x),
        p.y.clamp(-h.y, h.y),
        p.z.clamp(-h.z, h.z),
    );
    let local = if q != p {
        let (n, dist) = unit_or(p - q, Vec3::z());
        let gap = dist - r;
        if gap > margin {
            return None;
        }
        local_contact(&p, r, &q, &n, gap, 0)
    } else {
        let depth = h - p.abs();
        let k = if depth.x <= depth.y && depth.x <= depth.z {
            0
        } else if depth.y <= depth.z {
            1
        } else {
            2
        };
        let s = if p[k] >= 0.0 { 1.0 } else { -1.0 };
        let mut n = Vec3::zeros();
        n[k] = s;
        let mut q = p;
        q[k] = s * h[k];
        local_contact(&p, r, &q, &n, -depth[k] - r, 0)
    };
    Some(to_world(b, local))
}

/// Sphere against a solid cylinder (axis body z) (b).
pub fn sphere_cylinder(
    x: &Vec3,
    r: f64,
    b: &Placed<'_>,
    radius: f64,
    hh: f64,
    margin: f64,
) -> Option<RawContact> {
    let p = b.orientation.inverse() * (x - b.position);
    let rho = (p.x * p.x + p.y * p.y).sqrt();
    let e = if rho > 0.0 {
        Vec3::new(p.x / rho, p.y / rho, 0.0)
    } else {
        Vec3::x()
    };
    let local = if rho > radius || p.z.abs() > hh {
        let q = e * rho.min(radius) + Vec3::z() * p.z.clamp(-hh, hh);
        let (n, dist) = unit_or(p - q, e);
        let gap = dist - r;
        if gap > margin {
            return None;
        }
        local_contact(&p, r, &q, &n, gap, 0)
    } else {
        let (dr, dz) = (radius - rho, hh - p.z.abs());
        if dr <= dz {
            let q = e * radius + Vec3::z() * p.z;
            local_contact(&p, r, &q, &e, -dr - r, 0)
        } else {
            let s = p.z.signum();
            let q = Vec3::new(p.x, p.y, s * hh);
            local_contact(&p, r, &q, &Vec3::new(0.0, 0.0, s), -dz - r, 0)
        }
    };
    Some(to_world(b, local))
}

/// Sphere inside a capped hollow cylinder (b): wall (feature 0), cap at
/// `+h` (1) and cap at `−h` (2).
pub fn sphere_drum(
    x: &Vec3,
    r: f64,
    b: &Placed<'_>,
    radius: f64,
    hh: f64,
    margin: f64,
    out: &mut Vec<RawContact>,
) {
    let p = b.orientation.inverse() * (x - b.position);
    let rho = (p.x * p.x + p.y * p.y).sqrt();
    let e = if rho > 0.0 {
        Vec3::new(p.x / rho, p.y / rho, 0.0)
    } else {
        Vec3::x()
    };
    let gap = radius - rho - r;
    if gap <= margin {
        let q = e * radius + Vec3::z() * p.z;
        out.push(to_world(b, local_contact(&p, r, &q, &-e, gap, 0)));
    }
    let top = hh - p.z - r;
    if top <= margin {
        let q = Vec3::new(p.x, p.y, hh);
        out.push(to_world(b, local_contact(&p, r, &q, &-Vec3::z(), top, 1)));
    }
    let bottom = p.z + hh - r;
    if bottom <= margin {
        let q = Vec3::new(p.x, p.y, -hh);
        out.push(to_world(b, local_contact(&p, r, &q, &Vec3::z(), bottom, 2)));
    }
}

/// Sphere against a triangle mesh (b): one contact per touched triangle
/// (feature = triangle index), dropping duplicates at shared edges and
/// vertices.
pub fn sphere_trimesh(
    x: &Vec3,
    r: f64,
    b: &Placed<'_>,
    mesh: &TriMeshShape,
    margin: f64,
    out: &mut Vec<RawContact>,
) {
    use parry3d_f64::query::PointQuery;
    let mesh = &*mesh.mesh;
    let p = b.orientation.inverse() * (x - b.position);
    let reach = r + margin;
    let aabb = parry3d_f64::bounding_volume::Aabb::new(
        convert::to_parry(&(p - Vec3::repeat(reach))),
        convert::to_parry(&(p + Vec3::repeat(reach))),
    );
    let mut found: Vec<(u32, Vec3, Vec3, f64)> = Vec::new();
    let pp = convert::to_parry(&p);
    for tri_index in mesh.bvh().intersect_aabb(&aabb) {
        let tri = mesh.triangle(tri_index);
        let proj = tri.project_local_point(pp, false);
        let q = convert::from_parry(&proj.point);
        let tri_n = tri
            .normal()
            .map(|n| convert::from_parry(&n))
            .unwrap_or(Vec3::z());
        let (n, dist) = unit_or(p - q, tri_n);
        let gap = dist - r;
        if gap > margin {
            continue;
        }
        if found.iter().any(|f| (f.1 - q).norm() <= 1e-9 * r) {
            continue;
        }
        found.push((tri_index, q, n, gap));
    }
    found.sort_by_key(|f| f.0);
    for (tri_index, q, n, gap) in found {
        out.push(to_world(b, local_contact(&p, r, &q, &n, gap, tri_index)));
    }
}

/// Box (a) against a plane (b): one contact per corner within the margin
/// (feature = corner index 0..8).
pub fn box_plane(
    a: &Placed<'_>,
    h: &Vec3,
    p0: &Vec3,
    n: &Vec3,
    margin: f64,
    out: &mut Vec<RawContact>,
) {
    for k in 0..8u32 {
        let s = Vec3::new(
            if k & 1 == 0 { -1.0 } else { 1.0 },
            if k & 2 == 0 { -1.0 } else { 1.0 },
            if k & 4 == 0 { -1.0 } else { 1.0 },
        );
        let corner = a.position + a.orientation * s.component_mul(h);
        let gap = (corner - p0).dot(n);
        if gap <= margin {
            out.push(RawContact {
                feature: k,
                point: corner - n * (0.5 * gap),
                normal: *n,
                gap,
            });
        }
    }
}

/// Solid cylinder (a) against a plane (b): per cap the lowest rim point
/// (features 0, 1), or four rim points per cap when the axis is within
/// 2.6° of the plane normal (features 2..10), so that a standing cylinder
/// rests on a stable support polygon.
pub fn cylinder_plane(
    a: &Placed<'_>,
    radius: f64,
    hh: f64,
    p0: &Vec3,
    n: &Vec3,
    margin: f64,
    out: &mut Vec<RawContact>,
) {
    let axis = a.orientation * Vec3::z();
    let mut push = |feature: u32, pt: Vec3| {
        let gap = (pt - p0).dot(n);
        if gap <= margin {
            out.push(RawContact {
                feature,
                point: pt - n * (0.5 * gap),
                normal: *n,
                gap,
            });
        }
    };
    let standing = axis.dot(n).abs() > 0.999;
    for (ci, cap) in [-1.0, 1.0].into_iter().enumerate() {
        let centre = a.position + axis * (cap * hh);
        if standing {
            for k in 0..4u32 {
                let t = std::f64::consts::FRAC_PI_2 * k as f64;
                let local = Vec3::new(radius * t.cos(), radius * t.sin(), 0.0);
                push(2 + ci as u32 * 4 + k, centre + a.orientation * local);
            }
        } else {
            let (dir, _) = unit_or(n - axis * n.dot(&axis), Vec3::x());
            push(ci as u32, centre - dir * radius);
        }
    }
}

/// A parry shape and the pose offset that maps it onto ours (parry's
/// cylinder axis is y, ours z).
fn parry_shape(shape: &Shape) -> Option<(Box<dyn ps::Shape>, Quat)> {
    let id = Quat::identity();
    Some(match shape {
        Shape::Sphere { radius } => (Box::new(ps::Ball::new(*radius)), id),
        Shape::Box { half_extents } => (
            Box::new(ps::Cuboid::new(convert::to_parry(half_extents))),
            id,
        ),
        Shape::Cylinder {
            radius,
            half_height,
        } => (
            Box::new(ps::Cylinder::new(*half_height, *radius)),
            Quat::from_axis_angle(&Vec3::x_axis(), std::f64::consts::FRAC_PI_2),
        ),
        Shape::TriMesh(m) => (Box::new((*m.mesh).clone()), id),
        Shape::Convex(c) => (Box::new((*c.hull).clone()), id),
        Shape::HalfSpace { normal } => {
            (Box::new(ps::HalfSpace::new(convert::to_parry(normal))), id)
        }
        Shape::Drum { .. } | Shape::Empty => return None,
    })
}

/// Any pair parry3d-f64 supports, through its contact manifolds. The
/// feature id combines parry's feature ids and sub-shape indices, which are
/// stable while the contact persists. Returns `false` when parry does not
/// support the pair.
pub fn general_pair(
    a: &Placed<'_>,
    b: &Placed<'_>,
    margin: f64,
    out: &mut Vec<RawContact>,
) -> bool {
    let (Some((ga, qa)), Some((gb, qb))) = (parry_shape(a.shape), parry_shape(b.shape)) else {
        return false;
    };
    let pose_a = convert::pose(&a.position, &(a.orientation * qa));
    let pose_b = convert::pose(&b.position, &(b.orientation * qb));
    let pos12 = pose_a.inv_mul(&pose_b);
    let mut manifolds: Vec<pq::ContactManifold<(), ()>> = Vec::new();
    let mut workspace = None;
    if pq::DefaultQueryDispatcher
        .contact_manifolds(
            &pos12,
            ga.as_ref(),
            gb.as_ref(),
            margin,
            &mut manifolds,
            &mut workspace,
        )
        .is_err()
    {
        return false;
    }
    for m in &manifolds {
        let n1 = convert::from_parry(&(pose_a.rotation * m.local_n1));
        for pt in &m.points {
            let p1 = convert::from_parry(&(pose_a * pt.local_p1));
            let p2 = convert::from_parry(&(pose_b * pt.local_p2));
            let feature = (pt.fid1.0.wrapping_mul(0x9E37_79B1))
                ^ pt.fid2.0.rotate_left(16)
                ^ m.subshape1.wrapping_mul(0x85EB_CA6B)
                ^ m.subshape2.wrapping_mul(0xC2B2_AE35);
            out.push(RawContact {
                feature,
                point: (p1 + p2) * 0.5,
                normal: -n1,
                gap: pt.dist,
            });
        }
    }
    true
}

/// Sphere (a) against a convex polyhedron (b) through parry's single-point
/// contact.
pub fn sphere_convex(
    x: &Vec3,
    r: f64,
    b: &Placed<'_>,
    hull: &ConvexShape,
    margin: f64,
) -> Option<RawContact> {
    let hull = &*hull.hull;
    let pa = convert::pose(x, &Quat::identity());
    let pb = convert::pose(&b.position, &b.orientation);
    let c = pq::contact(&pa, &ps::Ball::new(r), &pb, hull, margin)
        .ok()
        .flatten()?;
    let p1 = convert::from_parry(&c.point1);
    let p2 = convert::from_parry(&c.point2);
    Some(RawContact {
        feature: 0,
        point: (p1 + p2) * 0.5,
        normal: -convert::from_parry(&c.normal1),
        gap: c.dist,
    })
}

/// Narrow phase for any pair: contacts with normals from b to a. Returns
/// `false` when no routine handles the pair.
pub fn collide(a: &Placed<'_>, b: &Placed<'_>, margin: f64, out: &mut Vec<RawContact>) -> bool {
    use Shape as S;
    let start = out.len();
    let flip = |out: &mut Vec<RawContact>, start: usize| {
        for c in &mut out[start..] {
            c.normal = -c.normal;
        }
    };
    match (a.shape, b.shape) {
        (S::Sphere { radius: ra }, S::Sphere { radius: rb }) => {
            out.extend(sphere_sphere(&a.position, *ra, &b.position, *rb, margin));
        }
        (S::Sphere { radius }, S::HalfSpace { normal }) => {
            out.extend(sphere_plane(
                &a.position,
                *radius,
                &b.position,
                &(b.orientation * normal),
                margin,
            ));
        }
        (S::Sphere { radius }, S::Box { half_extents }) => {
            out.extend(sphere_box(&a.position, *radius, b, half_extents, margin));
        }
        (
            S::Sphere { radius },
            S::Cylinder {
                radius: rc,
                half_height,
            },
        ) => {
            out.extend(sphere_cylinder(
                &a.position,
                *radius,
                b,
                *rc,
                *half_height,
                margin,
            ));
        }
        (
            S::Sphere { radius },
            S::Drum {
                radius: rd,
                half_height,
            },
        ) => {
            sphere_drum(&a.position, *radius, b, *rd, *half_height, margin, out);
        }
        (S::Sphere { radius }, S::TriMesh(m)) => {
            sphere_trimesh(&a.position, *radius, b, m, margin, out);
        }
        (S::Sphere { radius }, S::Convex(c)) => {
            out.extend(sphere_convex(&a.position, *radius, b, c, margin));
        }
        (S::Box { half_extents }, S::HalfSpace { normal }) => {
            box_plane(
                a,
                half_extents,
                &b.position,
                &(b.orientation * normal),
                margin,
                out,
            );
        }
        (
            S::Cylinder {
                radius,
                half_height,
            },
            S::HalfSpace { normal },
        ) => {
            cylinder_plane(
                a,
                *radius,
                *half_height,
                &b.position,
                &(b.orientation * normal),
                margin,
                out,
            );
        }
        (
            S::HalfSpace { .. }
            | S::Box { .. }
            | S::Cylinder { .. }
            | S::Drum { .. }
            | S::TriMesh(_)
            | S::Convex(_),
            S::Sphere { .. },
        )
        | (S::HalfSpace { .. }, S::Box { .. } | S::Cylinder { .. }) => {
            if !collide(b, a, margin, out) {
                return false;
            }
            flip(out, start);
        }
        _ => return general_pair(a, b, margin, out),
    }
    true
}

//! Sphere against triangle mesh (the excavator's bucket) against a
//! brute-force reference: every triangle's closest point by Ericson's
//! Voronoi-region method (*Real-Time Collision Detection*, 2005, section
//! 5.1.5), written here independently of parry's projection.

use ndem_collide::narrow::{self, Placed, RawContact};
use ndem_collide::proptest_support::arb_trimesh;
use ndem_collide::{CollideError, Shape};
use ndem_math::proptest_support::rotation;
use ndem_math::{Quat, Vec3};
use proptest::prelude::*;

/// Closest point of triangle `abc` to `p`.
fn closest_on_triangle(p: Vec3, a: Vec3, b: Vec3, c: Vec3) -> Vec3 {
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(&ap), ac.dot(&ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return a;
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(&bp), ac.dot(&bp));
    if d3 >= 0.0 && d4 <= d3 {
        return b;
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return a + ab * (d1 / (d1 - d3));
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(&cp), ac.dot(&cp));
    if d6 >= 0.0 && d5 <= d6 {
        return c;
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return a + ac * (d2 / (d2 - d6));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)));
    }
    let denom = 1.0 / (va + vb + vc);
    a + ab * (vb * denom) + ac * (vc * denom)
}

/// `(closest point, gap)` of every triangle within the margin, world frame.
fn brute_force(
    mesh: &Shape,
    pose: (Vec3, Quat),
    centre: Vec3,
    radius: f64,
    margin: f64,
) -> Vec<(Vec3, f64)> {
    let Shape::TriMesh(m) = mesh else {
        panic!("a mesh")
    };
    let (vertices, indices) = (m.vertices(), m.indices());
    let mut out: Vec<(Vec3, f64)> = Vec::new();
    for t in indices {
        let [a, b, c] = t.map(|i| pose.0 + pose.1 * vertices[i as usize]);
        let q = closest_on_triangle(centre, a, b, c);
        let gap = (centre - q).norm() - radius;
        if gap <= margin {
            out.push((q, gap));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every triangle the reference finds within the margin has a contact
    /// with the same gap, at the same closest point (the contact point
    /// lies half the gap along the normal from it), with the normal from
    /// that point to the centre; and no other contact exists. Triangles
    /// sharing a closest point (an edge or vertex) give one contact.
    /// Largest differences over 20 000 random cases (12 194 contacts):
    /// 2.0e-15 m in the gap (bound 1e-14); the point's and the normal's
    /// errors grow on slender triangles and, for the normal, as the centre
    /// nears the triangle, so their bounds scale with the mesh's aspect
    /// ratio and with ε (1 + |p|)/|p − q| (below). Random testing found the
    /// case that showed it (now in the regressions file): a slender
    /// triangle where the point was 1.1e-14 m and the normal 32 ε(1+|p|)/|p−q|
    /// off, beyond the absolute bounds that 256 cases had suggested.
    #[test]
    fn sphere_mesh_contacts_equal_the_brute_force_reference(
        mesh in arb_trimesh(12),
        position in [-0.5..0.5f64, -0.5..0.5f64, -0.5..0.5f64],
        orientation in rotation(),
        centre in [-1.2..1.2f64, -1.2..1.2f64, -1.2..1.2f64],
        radius in 0.05..0.6f64,
        margin in prop::sample::select(vec![0.0, 0.02]),
    ) {
        let pose = (Vec3::new(position[0], position[1], position[2]), orientation);
        let centre = pose.0 + Vec3::new(centre[0], centre[1], centre[2]);
        let sphere = Shape::sphere(radius).unwrap();
        let a = Placed { shape: &sphere, position: centre, orientation: Quat::identity() };
        let b = Placed { shape: &mesh, position: pose.0, orientation: pose.1 };
        let mut found: Vec<RawContact> = Vec::new();
        prop_assert!(narrow::collide(&a, &b, margin, &mut found));
        let mut expected = brute_force(&mesh, pose, centre, radius, margin);
        // one contact per distinct closest point
        let mut distinct: Vec<(Vec3, f64)> = Vec::new();
        for e in expected.drain(..) {
            if !distinct.iter().any(|d| (d.0 - e.0).norm() <= 1e-9 * radius) {
                distinct.push(e);
            }
        }
        prop_assert_eq!(found.len(), distinct.len(), "found {:?}, expected {:?}", found, distinct);
        // the closest point loses digits on slender triangles: its error is
        // about ε (1 + |p|) times the mesh's worst aspect ratio (longest
        // edge² / twice the area); measured at most 1.64 times that over
        // 20 000 random cases (12 194 contacts, largest 2.2e-15 m), and
        // 1.1e-14 m on a slender triangle random testing found later (an
        // absolute bound of 1e-14, ten times the first 256 cases' largest,
        // failed there); bound 10x
        let Shape::TriMesh(m) = &mesh else { panic!("a mesh") };
        let (vs, is) = (m.vertices(), m.indices());
        let aspect = is
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| vs[i as usize]);
                let l = (b - a).norm_squared().max((c - b).norm_squared()).max((a - c).norm_squared());
                l / (b - a).cross(&(c - a)).norm()
            })
            .fold(0.0f64, f64::max);
        // On well-shaped meshes (worst aspect ≤ 6) the first bounds stand
        // unchanged: 1e-14 m for the point and 8 ε(1+|p|)/|p−q| for the
        // normal (3 × 20 000 random cases pass them). Slender triangles are
        // the known limit of parry's projection (docs/theory.md, "Contact
        // geometry"): there the bounds scale with the aspect ratio.
        let slender = aspect > 6.0;
        let point_tolerance = if slender {
            16.4 * f64::EPSILON * (1.0 + centre.norm()) * aspect
        } else {
            1e-14
        };
        for (q, gap) in &distinct {
            let hit = found.iter().find(|c| {
                let on_mesh = c.point - c.normal * (0.5 * c.gap);
                (on_mesh - q).norm() <= point_tolerance
            });
            let nearest = found
                .iter()
                .map(|c| (c.point - c.normal * (0.5 * c.gap) - q).norm())
                .fold(f64::INFINITY, f64::min);
            prop_assert!(hit.is_some(), "no contact at {:?}: nearest contact point {:e} m away ({:e} of the bound, slender {}); found {:?}", q, nearest, nearest / point_tolerance, slender, found);
            let c = hit.unwrap();
            prop_assert!((c.gap - gap).abs() <= 1e-14, "gap {} vs {}", c.gap, gap);
            let d = centre - q;
            if d.norm() > 1e-9 {
                // the normal (p − q)/|p − q| loses digits as the centre
                // nears the triangle and on slender triangles: its error is
                // about ε (1 + |p|) aspect/|p − q|, measured at most 1.27
                // times that over 20 000 random cases (without the aspect
                // ratio up to 14 times, beyond the earlier bound of 8 that
                // 256 cases had suggested); bound 10x
                let e = (c.normal - d.normalize()).norm();
                let scale = f64::EPSILON * (1.0 + centre.norm()) / d.norm();
                if slender {
                    prop_assert!(e <= 12.7 * aspect * scale, "normal error {e:e}, {:e} of ε(1+|p|) aspect/|p−q|", e / (aspect * scale));
                } else {
                    prop_assert!(e <= 8.0 * scale, "normal error {e:e}, {:e} of ε(1+|p|)/|p−q|", e / scale);
                }
            }
        }
    }
}

#[test]
fn degenerate_triangles_are_typed_errors() {
    let v = [
        Vec3::zeros(),
        Vec3::x(),
        Vec3::new(2.0, 0.0, 0.0),
        Vec3::y(),
    ];
    for bad in [[0u32, 1, 2], [0, 0, 3]] {
        match Shape::trimesh(&v, vec![[0, 1, 3], bad]) {
            Err(CollideError::InvalidGeometry { what, reason }) => {
                assert_eq!(what, "triangle mesh");
                assert!(reason.contains("triangle 1"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(Shape::trimesh(&v, vec![[0, 1, 3]]).is_ok());
}

//! Property tests of collision detection: the grid and its special paths (large bodies, fast spheres, hashed cells, walls) against the O(N²) brute force.

use ndem_collide::narrow::{self, Placed};
use ndem_collide::proptest_support::*;
use ndem_collide::*;
use ndem_math::proptest_support::{rotation, unit_vector, vec3};
use ndem_math::rng::Rng;
use ndem_math::{ContactKey, Quat, Vec3};
use proptest::prelude::*;

/// O(N²) reference with the same pair-ordering rules as the world.
fn brute_force(bodies: &Bodies, margin: f64) -> ContactSet {
    let v = bodies.view();
    let n = v.len();
    let is_particle = |i: usize| v.shapes[i].sphere_radius().is_some();
    let mut out = Vec::new();
    let mut raw = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            if (v.fixed[i] && v.fixed[j]) || v.same_group(i, j) {
                continue;
            }
            let (a, b) = if !is_particle(i) && is_particle(j) {
                (j, i)
            } else {
                (i, j)
            };
            let pa = Placed {
                shape: &v.shapes[a],
                position: v.positions[a],
                orientation: v.orientations[a],
            };
            let pb = Placed {
                shape: &v.shapes[b],
                position: v.positions[b],
                orientation: v.orientations[b],
            };
            raw.clear();
            assert!(narrow::collide(
                &pa,
                &pb,
                margin + v.sweep_of(a) + v.sweep_of(b),
                &mut raw
            ));
            for r in &raw {
                out.push(ContactPoint {
                    key: ContactKey::new(a as u32, b as u32, r.feature),
                    point: r.point,
                    normal: r.normal,
                    gap: r.gap,
                });
            }
        }
    }
    ContactSet::from_contacts(out)
}

/// The contacts of `found` and `expected` that differ, for a failure's
/// message.
fn difference(found: &ContactSet, expected: &ContactSet) -> String {
    let mut out = String::new();
    for c in found.iter() {
        if !expected.iter().any(|e| e == c) {
            out.push_str(&format!("found, not expected: {c:?}\n"));
        }
    }
    for e in expected.iter() {
        if !found.iter().any(|c| c == e) {
            out.push_str(&format!("expected, not found: {e:?}\n"));
        }
    }
    out
}

/// A collision world with `margin` and the default settings otherwise.
fn world_with_margin(margin: f64) -> CollisionWorld {
    CollisionWorld::new(CollisionSettings {
        margin,
        ..Default::default()
    })
    .unwrap()
}

fn detect(bodies: &Bodies, margin: f64, parallel: bool) -> ContactSet {
    let mut world = world_with_margin(margin);
    let mut set = ContactSet::new();
    if parallel {
        world.detect_parallel(&bodies.view(), &mut set).unwrap();
    } else {
        world.detect(&bodies.view(), &mut set).unwrap();
    }
    set
}

/// Speculative distances of 0 to 0.02 in steps of 2e-5, one per body.
fn random_sweeps(bodies: &mut Bodies, rng: &mut Rng) {
    bodies.sweep = bodies
        .shapes
        .iter()
        .map(|_| rng.below(1000) as f64 * 2e-5)
        .collect();
}

/// Collision groups 0 (none), 1 or 2, one per body.
fn random_groups(bodies: &mut Bodies, rng: &mut Rng) {
    bodies.groups = bodies.shapes.iter().map(|_| rng.below(3) as u32).collect();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Broad plus narrow phase equals the O(N²) brute force: sphere
    /// clouds, and sphere clouds with walls (floor, box, cylinder, drum).
    #[test]
    fn grid_equals_brute_force(
        cloud in sphere_cloud(200, 1.0, 0.02, 0.07),
        walled in sphere_cloud_with_walls(150, 1.0, 0.02, 0.07),
        margin in 0.0f64..0.01,
    ) {
        for bodies in [&cloud, &walled] {
            prop_assert_eq!(detect(bodies, margin, false), brute_force(bodies, margin));
        }
    }

    /// The same with per-body speculative distances.
    #[test]
    fn grid_with_sweeps_equals_brute_force(mut bodies in sphere_cloud_with_walls(150, 1.0, 0.02, 0.07), seed in any::<u64>()) {
        random_sweeps(&mut bodies, &mut Rng::new(seed));
        prop_assert_eq!(detect(&bodies, 0.001, false), brute_force(&bodies, 0.001));
    }

    /// Half-spaces facing along each axis both ways and one oblique,
    /// cutting through the cloud, with sweeps (the planes' larger than a
    /// cell): the grid queries the cells of an axis-aligned half-space's
    /// slab only (`docs/performance.md`, "Collision detection")
    /// and must lose no contact the brute force finds, serially and
    /// in parallel.
    #[test]
    fn half_spaces_facing_every_way_equal_brute_force(
        mut bodies in sphere_cloud(800, 1.0, 0.01, 0.02),
        cuts in proptest::collection::vec(0.05f64..0.95, 6),
        oblique in rotation(),
        margin in 0.0f64..0.01,
        seed in any::<u64>(),
    ) {
        for (j, cut) in cuts.iter().enumerate() {
            let (axis, sign) = (j / 2, if j % 2 == 0 { 1.0 } else { -1.0 });
            let mut normal = Vec3::zeros();
            normal[axis] = sign;
            let mut point = Vec3::repeat(0.5);
            point[axis] = *cut;
            bodies.push(Shape::HalfSpace { normal }, point, Quat::identity(), true);
        }
        bodies.push(Shape::HalfSpace { normal: Vec3::z() }, Vec3::repeat(0.1), oblique, true);
        // the planes sweep up to 0.1 (a piston), more than a cell
        let mut rng = Rng::new(seed);
        bodies.sweep = bodies.shapes.iter().map(|shape| {
            let most = if matches!(shape, Shape::HalfSpace { .. }) { 1e-4 } else { 2e-5 };
            rng.below(1000) as f64 * most
        }).collect();
        let expected = brute_force(&bodies, margin);
        prop_assert_eq!(&detect(&bodies, margin, false), &expected);
        prop_assert_eq!(&detect(&bodies, margin, true), &expected);
    }

    /// Pairs placed at their reach (`r_a + r_b` plus the margin and both
    /// sweeps, give or take a few ulps) in every direction, polydisperse,
    /// beside one fast sphere whose sweep widens every cell: the walk then
    /// passes over neighbour cells out of each probe's reach
    /// (`CollisionWorld::cells_outreach_pairs`), and must lose no pair the
    /// brute force finds, in the dense and (`far`) the hashed layout. Half
    /// the partners have the largest radius and sweep, so that a probe's
    /// bound on its reach is reached by its pairs.
    #[test]
    fn cells_passed_over_hold_no_pair(
        pairs in prop::collection::vec(
            (
                vec3(0.3),
                0.01f64..0.05,
                prop_oneof![Just(0.05), 0.01f64..0.05],
                unit_vector(),
                0.0f64..0.02,
                prop_oneof![Just(0.02), 0.0f64..0.02],
                -4i32..=4,
            ),
            20..60,
        ),
        far in any::<bool>(),
    ) {
        let margin = 0.001;
        let mut bodies = Bodies::new();
        for (k, (a, ra, rb, dir, sa, sb, ulps)) in pairs.into_iter().enumerate() {
            let a = if far { a + Vec3::new(40.0, 0.0, -25.0) * f64::from(k as u32 % 3) } else { a };
            let reach = (ra + rb) + ((margin + sa) + sb);
            let reach = reach * (1.0 + f64::from(ulps) * f64::EPSILON);
            for (x, r, s) in [(a, ra, sa), (a + dir * reach, rb, sb)] {
                bodies.push(Shape::Sphere { radius: r }, x, Quat::identity(), false);
                bodies.sweep.push(s);
            }
        }
        // the fast sphere: 2 x 0.02 m of sweep against 0.25 x 0.101 m
        bodies.push(Shape::Sphere { radius: 0.05 }, Vec3::new(0.0, 0.0, 0.8), Quat::identity(), false);
        bodies.sweep.push(0.02);
        prop_assert_eq!(detect(&bodies, margin, false), brute_force(&bodies, margin));
        prop_assert_eq!(detect(&bodies, margin, true), brute_force(&bodies, margin));
    }

    /// A few fast spheres (at most one particle in 64) among a cloud of
    /// slow ones on a floor, each placed at its reach (`r_a + r_b` plus the
    /// margin and both sweeps, summed from the smaller body index as the
    /// walk sums them, give or take a few ulps) from a partner that comes
    /// before or after it in body order and is slow or fast itself: the
    /// pass sets the fast spheres apart from the grid
    /// (`CollisionWorld::set_apart_fast`) and forms their pairs on its own,
    /// and must lose no pair and add none, bit for bit against the brute
    /// force, in the dense and (`far`) the hashed layout.
    #[test]
    fn fast_spheres_set_apart_lose_no_pair(
        pairs in prop::collection::vec(
            (
                vec3(0.2),
                0.01f64..0.02,
                0.01f64..0.02,
                unit_vector(),
                // fast: small sweeps leave the floor's pairs to the cells
                // of a slab, larger ones to a scan of every particle; the
                // largest reach over more cells than the grid has entries
                prop_oneof![0.006f64..0.01, 0.01f64..0.1, 0.3f64..1.0],
                prop_oneof![Just(0.0), 0.0f64..0.1],
                any::<bool>(),
                -4i32..=4,
            ),
            1..6,
        ),
        far in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let margin = 0.001;
        let mut bodies = Bodies::new();
        bodies.push(Shape::HalfSpace { normal: Vec3::z() }, Vec3::new(0.0, 0.0, -0.15), Quat::identity(), true);
        bodies.sweep.push(0.0);
        let mut rng = Rng::new(seed);
        let mut u = move || rng.uniform();
        let side = 9;
        let place = |k: usize, x: Vec3| if far { x + Vec3::new(40.0, 0.0, -25.0) * f64::from(k as u32 % 3) } else { x };
        for k in 0..side * side * side {
            let cell = Vec3::new((k % side) as f64, ((k / side) % side) as f64, (k / (side * side)) as f64);
            let x = (cell - Vec3::repeat(4.0)) * 0.038 + Vec3::new(u(), u(), u()) * 0.004;
            bodies.push(Shape::Sphere { radius: 0.01 + 0.01 * u() }, place(k, x), Quat::identity(), false);
            bodies.sweep.push(0.001 * u());
        }
        for (k, (a, ra, rb, dir, sa, sb, partner_first, ulps)) in pairs.into_iter().enumerate() {
            let a = place(k, a);
            let (first, second) = if partner_first { ((rb, sb), (ra, sa)) } else { ((ra, sa), (rb, sb)) };
            let reach = (first.0 + second.0) + ((margin + first.1) + second.1);
            let b = a + dir * (reach * (1.0 + f64::from(ulps) * f64::EPSILON));
            let (x_first, x_second) = if partner_first { (b, a) } else { (a, b) };
            for (x, (r, sweep)) in [(x_first, first), (x_second, second)] {
                bodies.push(Shape::Sphere { radius: r }, x, Quat::identity(), false);
                bodies.sweep.push(sweep);
            }
        }
        let expected = brute_force(&bodies, margin);
        prop_assert_eq!(&detect(&bodies, margin, false), &expected);
        prop_assert_eq!(&detect(&bodies, margin, true), &expected);
    }

    /// Polydisperse mixtures (radius ratios up to 100, a few chains of
    /// large spheres among many small ones, chains far away, sweeps, margin
    /// 0): every pair the brute force finds, serially and in parallel,
    /// whatever the size class of the two bodies.
    #[test]
    fn polydisperse_mixtures_equal_brute_force(bodies in polydisperse_mixture(120, 4), margin in prop_oneof![Just(0.0), 0.0f64..0.001]) {
        let expected = brute_force(&bodies, margin);
        for parallel in [false, true] {
            let found = detect(&bodies, margin, parallel);
            prop_assert!(found == expected, "{}", difference(&found, &expected));
        }
    }

    /// The same when the particles form three clouds far apart: the grid
    /// then hashes its cells (the bounding box holds far more cells than
    /// particles), and entries of other cells share a bucket.
    #[test]
    fn hashed_grid_equals_brute_force(mut bodies in sphere_cloud_with_walls(150, 1.0, 0.02, 0.07), margin in 0.0f64..0.01) {
        let mut cloud = 0;
        for (x, shape) in bodies.positions.iter_mut().zip(&bodies.shapes) {
            if matches!(shape, Shape::Sphere { .. }) {
                x.x += 40.0 * f64::from(cloud % 3);
                x.z -= 25.0 * f64::from(cloud % 3);
                cloud += 1;
            }
        }
        prop_assert_eq!(detect(&bodies, margin, false), brute_force(&bodies, margin));
        prop_assert_eq!(detect(&bodies, margin, true), brute_force(&bodies, margin));
    }

    /// Collision groups remove exactly the pairs of one non-zero group:
    /// grid equals brute force with groups, and equals the ungrouped set
    /// filtered by group.
    #[test]
    fn collision_groups_remove_exactly_same_group_pairs(mut bodies in sphere_cloud_with_walls(150, 1.0, 0.02, 0.07), seed in any::<u64>()) {
        random_groups(&mut bodies, &mut Rng::new(seed));
        let grouped = detect(&bodies, 0.002, false);
        prop_assert_eq!(&grouped, &brute_force(&bodies, 0.002));
        let view = bodies.view();
        let mut ungrouped_bodies = bodies.clone();
        ungrouped_bodies.groups.clear();
        let filtered: Vec<ContactPoint> = detect(&ungrouped_bodies, 0.002, false)
            .iter()
            .filter(|c| !view.same_group(c.body_a(), c.body_b()))
            .copied()
            .collect();
        prop_assert_eq!(grouped, ContactSet::from_contacts(filtered));
    }

    /// Keys in a set are unique and sorted; arms end at the contact point.
    #[test]
    fn sets_are_sorted_and_consistent(bodies in sphere_cloud_with_walls(100, 1.0, 0.02, 0.07)) {
        let set = detect(&bodies, 0.005, false);
        for w in set.as_slice().windows(2) {
            prop_assert!(w[0].key < w[1].key);
        }
        for c in set.iter() {
            prop_assert!((c.normal.norm() - 1.0).abs() < 1e-12);
            let (xa, xb) = (bodies.positions[c.body_a()], bodies.positions[c.body_b()]);
            prop_assert!((xa + c.arm(&xa) - c.point).norm() < 1e-12);
            prop_assert!((xb + c.arm(&xb) - c.point).norm() < 1e-12);
            prop_assert!(c.gap <= 0.005 + 1e-15);
        }
    }

    /// Swapping a and b flips the normal and keeps gap and point.
    #[test]
    fn narrow_phase_is_symmetric(
        xa in vec3(0.3), xb in vec3(0.3), ra in 0.05f64..0.3, qa in rotation(), qb in rotation(),
        kind in 0usize..5, h in [0.05f64..0.3, 0.05f64..0.3, 0.05f64..0.3],
    ) {
        let other = match kind {
            0 => Shape::Sphere { radius: h[0] },
            1 => Shape::Box { half_extents: Vec3::new(h[0], h[1], h[2]) },
            2 => Shape::Cylinder { radius: h[0], half_height: h[1] },
            3 => Shape::HalfSpace { normal: Vec3::z() },
            _ => Shape::convex_hull(&[
                Vec3::new(h[0], 0.0, 0.0), Vec3::new(-h[0], 0.0, 0.0), Vec3::new(0.0, h[1], 0.0),
                Vec3::new(0.0, -h[1], 0.0), Vec3::new(0.0, 0.0, h[2]), Vec3::new(0.0, 0.0, -h[2]),
            ]).unwrap(),
        };
        let sphere = Shape::Sphere { radius: ra };
        let a = Placed { shape: &sphere, position: xa, orientation: qa };
        let b = Placed { shape: &other, position: xb, orientation: qb };
        let (mut ab, mut ba) = (Vec::new(), Vec::new());
        prop_assert!(narrow::collide(&a, &b, 0.1, &mut ab));
        prop_assert!(narrow::collide(&b, &a, 0.1, &mut ba));
        prop_assert_eq!(ab.len(), ba.len());
        for (p, q) in ab.iter().zip(&ba) {
            prop_assert_eq!(p.feature, q.feature);
            prop_assert!((p.gap - q.gap).abs() < 1e-12);
            prop_assert!((p.normal + q.normal).norm() < 1e-12);
            prop_assert!((p.point - q.point).norm() < 1e-12);
        }
    }

    /// Analytic gaps of the closed forms.
    #[test]
    fn analytic_gaps(x in vec3(1.0), n in unit_vector(), ra in 0.01f64..0.5, rb in 0.01f64..0.5, d_rel in -0.9f64..0.9, q in rotation()) {
        let d = d_rel * ra.min(rb);
        // sphere-sphere along n at centre distance ra + rb + d
        let c = narrow::sphere_sphere(&(x + n * (ra + rb + d)), ra, &x, rb, 1.0).unwrap();
        prop_assert!((c.gap - d).abs() < 1e-12);
        prop_assert!((c.normal - n).norm() < 1e-9);
        // sphere-plane
        let c = narrow::sphere_plane(&(x + n * (ra + d)), ra, &x, &n, 1.0).unwrap();
        prop_assert!((c.gap - d).abs() < 1e-12);
        // sphere over the +z face of a rotated box: gap = distance to face − r
        let h = Vec3::new(0.3, 0.4, 0.5);
        let shape = Shape::Box { half_extents: h };
        let placed = Placed { shape: &shape, position: x, orientation: q };
        let centre = x + q * Vec3::new(0.1, -0.2, h.z + ra + d.abs());
        let c = narrow::sphere_box(&centre, ra, &placed, &h, 1.0).unwrap();
        prop_assert!((c.gap - d.abs()).abs() < 1e-12);
        prop_assert!((c.normal - q * Vec3::z()).norm() < 1e-12);
        // sphere beside a cylinder (radial) and inside a drum (wall)
        let cyl = Shape::Cylinder { radius: 0.4, half_height: 0.5 };
        let placed = Placed { shape: &cyl, position: x, orientation: q };
        let centre = x + q * Vec3::new(0.0, 0.4 + ra + d.abs(), 0.1);
        let c = narrow::sphere_cylinder(&centre, ra, &placed, 0.4, 0.5, 1.0).unwrap();
        prop_assert!((c.gap - d.abs()).abs() < 1e-12);
        let drum = Shape::Drum { radius: 2.0, half_height: 1.0 };
        let placed = Placed { shape: &drum, position: x, orientation: q };
        let centre = x + q * Vec3::new(2.0 - ra - d.abs(), 0.0, 0.0);
        let mut out = Vec::new();
        narrow::sphere_drum(&centre, ra, &placed, 2.0, 1.0, 0.49, &mut out);
        prop_assert_eq!(out.len(), 1);
        prop_assert!((out[0].gap - d.abs()).abs() < 1e-12);
        prop_assert!((out[0].normal - q * -Vec3::x()).norm() < 1e-12);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// A world and a contact set reused from pass to pass (as the stepper
    /// does; the pairs are written into the set's own storage) give what a
    /// fresh world and set give, whatever the previous pass found.
    #[test]
    fn reused_world_and_set_equal_fresh_ones(
        first in sphere_cloud_with_walls(150, 1.0, 0.02, 0.07),
        second in sphere_cloud_with_walls(120, 1.0, 0.02, 0.07),
        margin in 0.0f64..0.01,
    ) {
        let mut world = world_with_margin(margin);
        let mut set = ContactSet::new();
        world.detect(&first.view(), &mut set).unwrap();
        prop_assert_eq!(&set, &detect(&first, margin, false));
        world.detect(&second.view(), &mut set).unwrap();
        prop_assert_eq!(&set, &detect(&second, margin, false));
    }
}

/// A pass that fails on bad input leaves the set of the last good pass.
#[test]
fn failed_pass_keeps_the_last_set() {
    let bodies = dense_packing(6, 0.01);
    let mut world = CollisionWorld::new(CollisionSettings::default()).unwrap();
    let mut set = ContactSet::new();
    world.detect(&bodies.view(), &mut set).unwrap();
    let good = set.clone();
    assert!(!good.is_empty());
    let mut bad = bodies.clone();
    bad.positions[3].x = f64::NAN;
    assert!(world.detect(&bad.view(), &mut set).is_err());
    assert_eq!(set, good);
}

/// The parallel path gives the same set, bit for bit.
#[test]
fn parallel_equals_serial() {
    let bodies = dense_packing(22, 0.01);
    let serial = detect(&bodies, 1e-4, false);
    let parallel = detect(&bodies, 1e-4, true);
    assert!(serial.len() > 20_000);
    assert_eq!(serial, parallel);
}

/// One world and set through parallel passes whose contacts grow, shrink
/// and grow again (each block writes into a share of the set sized from its
/// count in the last pass, and spills what does not fit): each pass gives
/// the fresh serial pass's set, bit for bit.
#[test]
fn reused_parallel_passes_equal_serial_ones() {
    let mut world = world_with_margin(1e-4);
    let mut set = ContactSet::new();
    for (n, overlap) in [
        (18, 0.01),
        (22, 0.01),
        (22, 0.0),
        (17, 0.02),
        (24, 0.01),
        (24, 0.01),
    ] {
        let bodies = dense_packing(n, overlap);
        world.detect_parallel(&bodies.view(), &mut set).unwrap();
        let serial = detect(&bodies, 1e-4, false);
        assert!(serial.len() > 10_000, "{n}: {}", serial.len());
        assert_eq!(set, serial, "{n} {overlap}");
    }
}

/// The same with walls touching every layer, so that every block of the
/// parallel pass has large-body contacts to merge (the floor's contacts all
/// fall in the first block), against the brute force as well.
#[test]
fn parallel_equals_serial_with_walls() {
    let n = 22;
    let mut bodies = dense_packing(n, 0.01);
    let r = 0.005;
    let far = (n - 1) as f64 * 2.0 * r * 0.99;
    for (normal, x) in [(Vec3::x(), -r * 0.99), (-Vec3::x(), far + r * 0.99)] {
        bodies.push(
            Shape::HalfSpace { normal },
            Vec3::new(x, 0.0, 0.0),
            Quat::identity(),
            true,
        );
    }
    let serial = detect(&bodies, 1e-4, false);
    let parallel = detect(&bodies, 1e-4, true);
    let walls = serial
        .as_slice()
        .iter()
        .filter(|c| c.key.body_b as usize > n * n * n)
        .count();
    assert_eq!(walls, 2 * n * n, "each wall touches a face of the cube");
    assert_eq!(serial, parallel);
    assert_eq!(serial, brute_force(&bodies, 1e-4));
}

/// A cubic packing of `n³` spheres on a floor, compressed by `overlap`.
fn dense_packing(n: usize, overlap: f64) -> Bodies {
    let r = 0.005;
    let s = 2.0 * r * (1.0 - overlap);
    let mut b = Bodies::new();
    b.push_floor(0.0);
    for k in 0..n {
        for j in 0..n {
            for i in 0..n {
                b.push(
                    Shape::Sphere { radius: r },
                    Vec3::new(
                        i as f64 * s,
                        j as f64 * s,
                        r * (1.0 - overlap) + k as f64 * s,
                    ),
                    Quat::identity(),
                    false,
                );
            }
        }
    }
    b
}

/// Keys persist in a resting packing over 100 steps of small jitter, and a
/// separating pair loses its key.
#[test]
fn keys_persist_while_contacts_persist() {
    let mut bodies = dense_packing(6, 0.02);
    let first = detect(&bodies, 0.0, false);
    let mut seed = 12345u64;
    let mut rnd = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed as f64 / u64::MAX as f64) - 0.5
    };
    for _ in 0..100 {
        for p in bodies.positions.iter_mut().skip(1) {
            *p += Vec3::new(rnd(), rnd(), rnd()) * 1e-6;
        }
        let now = detect(&bodies, 0.0, false);
        let keys: Vec<_> = now.iter().map(|c| c.key).collect();
        let first_keys: Vec<_> = first.iter().map(|c| c.key).collect();
        assert_eq!(keys, first_keys);
        assert!(now.map_from(&first).iter().all(|m| m.is_some()));
    }
    // pull the top-corner sphere away: its contacts disappear
    let last = bodies.positions.len() - 1;
    let before = detect(&bodies, 0.0, false);
    bodies.positions[last].z += 0.01;
    let after = detect(&bodies, 0.0, false);
    let lost: Vec<_> = before.map_from(&after);
    assert_eq!(lost.len(), after.len());
    let had = before
        .iter()
        .filter(|c| c.body_b() == last || c.body_a() == last)
        .count();
    assert!(had > 0);
    assert_eq!(
        after
            .iter()
            .filter(|c| c.body_b() == last || c.body_a() == last)
            .count(),
        0
    );
    assert_eq!(before.len() - after.len(), had);
}

/// Particles far outside the bulk are still found.
#[test]
fn far_away_particles_are_not_lost() {
    let mut bodies = dense_packing(3, 0.02);
    let a = bodies.push(
        Shape::Sphere { radius: 0.005 },
        Vec3::new(1e6, -3e5, 7e4),
        Quat::identity(),
        false,
    );
    let b = bodies.push(
        Shape::Sphere { radius: 0.005 },
        Vec3::new(1e6 + 0.0099, -3e5, 7e4),
        Quat::identity(),
        false,
    );
    let set = detect(&bodies, 0.0, false);
    assert!(set.find(&ContactKey::new(a as u32, b as u32, 0)).is_some());
    assert_eq!(set, brute_force(&bodies, 0.0));
}

/// Triangle mesh: a sphere resting on a two-triangle square touching the
/// shared diagonal gets one contact, not two.
#[test]
fn trimesh_contacts_are_deduplicated() {
    let mesh = Shape::trimesh(
        &[
            Vec3::new(-1.0, -1.0, 0.0),
            Vec3::new(1.0, -1.0, 0.0),
            Vec3::new(1.0, 1.0, 0.0),
            Vec3::new(-1.0, 1.0, 0.0),
        ],
        vec![[0, 1, 2], [0, 2, 3]],
    )
    .unwrap();
    let mut bodies = Bodies::new();
    bodies.push(mesh, Vec3::zeros(), Quat::identity(), true);
    bodies.push(
        Shape::Sphere { radius: 0.1 },
        Vec3::new(0.3, 0.3, 0.099),
        Quat::identity(),
        false,
    );
    bodies.push(
        Shape::Sphere { radius: 0.1 },
        Vec3::new(0.5, -0.2, 0.098),
        Quat::identity(),
        false,
    );
    let set = detect(&bodies, 0.0, false);
    assert_eq!(set.len(), 2);
    for c in set.iter() {
        assert!((c.normal - Vec3::z()).norm() < 1e-12);
        assert!(c.gap < 0.0);
    }
    assert!((set.as_slice()[0].gap + 0.001).abs() < 1e-12);
}

/// A dynamic box against a dynamic cylinder goes through parry.
#[test]
fn parry_handles_box_cylinder() {
    let mut bodies = Bodies::new();
    bodies.push(
        Shape::cuboid(Vec3::new(0.5, 0.5, 0.5)).unwrap(),
        Vec3::zeros(),
        Quat::identity(),
        false,
    );
    bodies.push(
        Shape::cylinder(0.2, 0.3).unwrap(),
        Vec3::new(0.0, 0.0, 0.79),
        Quat::identity(),
        false,
    );
    let set = detect(&bodies, 0.0, false);
    assert!(!set.is_empty());
    for c in set.iter() {
        assert!((c.gap + 0.01).abs() < 1e-9, "{}", c.gap);
        assert!((c.normal + Vec3::z()).norm() < 1e-9);
    }
}

/// A box resting on a plane touches at its four lower corners; a box on a
/// box through parry gives a manifold with several points.
#[test]
fn box_contacts() {
    let mut bodies = Bodies::new();
    bodies.push_floor(0.0);
    bodies.push(
        Shape::cuboid(Vec3::new(0.5, 0.3, 0.2)).unwrap(),
        Vec3::new(0.0, 0.0, 0.199),
        Quat::identity(),
        false,
    );
    bodies.push(
        Shape::cuboid(Vec3::new(0.2, 0.2, 0.2)).unwrap(),
        Vec3::new(0.0, 0.0, 0.597),
        Quat::identity(),
        false,
    );
    let set = detect(&bodies, 0.0, false);
    let floor: Vec<_> = set
        .iter()
        .filter(|c| c.body_a() == 0 || c.body_b() == 0)
        .collect();
    assert_eq!(floor.len(), 4);
    for c in &floor {
        // a = plane (index 0), b = box: normal from the box to the plane
        assert!((c.normal + Vec3::z()).norm() < 1e-12);
        assert!((c.gap + 0.001).abs() < 1e-12);
    }
    let stack: Vec<_> = set
        .iter()
        .filter(|c| c.body_a() == 1 && c.body_b() == 2)
        .collect();
    assert!(
        stack.len() >= 3,
        "box-box manifold has {} points",
        stack.len()
    );
    for c in &stack {
        assert!((c.normal + Vec3::z()).norm() < 1e-9, "{:?}", c.normal);
        assert!((c.gap + 0.002).abs() < 1e-9, "{}", c.gap);
    }
}

#[test]
fn bad_input_is_a_typed_error() {
    let mut bodies = dense_packing(2, 0.0);
    bodies.positions[3].y = f64::NAN;
    let mut world = CollisionWorld::default();
    let mut set = ContactSet::new();
    assert!(matches!(
        world.detect(&bodies.view(), &mut set),
        Err(CollideError::NonFinite {
            field: "position",
            body: 3
        })
    ));
    let mut bodies = dense_packing(2, 0.0);
    bodies.shapes[2] = Shape::Sphere { radius: 0.0 };
    assert!(matches!(
        world.detect(&bodies.view(), &mut set),
        Err(CollideError::InvalidShape {
            field: "radius",
            ..
        })
    ));
    assert!(Shape::sphere(-1.0).is_err());
    assert!(Shape::cuboid(Vec3::new(1.0, f64::INFINITY, 1.0)).is_err());
    assert!(
        CollisionWorld::new(CollisionSettings {
            margin: -1.0,
            ..Default::default()
        })
        .is_err()
    );
    bodies.fixed.pop();
    assert!(matches!(
        world.detect(&bodies.view(), &mut set),
        Err(CollideError::DimensionMismatch { field: "fixed", .. })
    ));
    assert!(Shape::trimesh(&[Vec3::zeros()], vec![[0, 1, 2]]).is_err());
}

proptest! {
    /// `ContactSet::push_in_order` keeps exactly the contacts whose key
    /// follows the last kept one, so the set stays sorted with unique keys
    /// and equals the set built from the kept contacts.
    #[test]
    fn push_in_order_keeps_the_set_sorted(
        keys in proptest::collection::vec((0u32..6, 0u32..6, 0u32..3), 0..40),
    ) {
        let contact = |(a, b, f): (u32, u32, u32)| ContactPoint {
            key: ContactKey::new(a, b, f),
            point: Vec3::zeros(),
            normal: Vec3::z(),
            gap: -1e-4,
        };
        let mut set = ContactSet::new();
        let mut kept = Vec::new();
        for &k in &keys {
            let c = contact(k);
            let follows = kept.last().is_none_or(|l: &ContactPoint| l.key < c.key);
            let before = set.len();
            if set.push_in_order(c) {
                prop_assert!(follows);
                kept.push(c);
            } else {
                prop_assert!(!follows);
                prop_assert_eq!(set.len(), before);
            }
        }
        prop_assert!(set.as_slice().windows(2).all(|w| w[0].key < w[1].key));
        prop_assert_eq!(set, ContactSet::from_contacts(kept));
    }
}

/// The body pairs of a contact set, in its order, each once.
fn pairs_of(set: &ContactSet) -> Vec<(u32, u32)> {
    let mut pairs: Vec<(u32, u32)> = set.iter().map(|c| (c.key.body_a, c.key.body_b)).collect();
    pairs.dedup();
    pairs
}

fn detect_pairs(bodies: &Bodies, margin: f64) -> Vec<(u32, u32)> {
    let mut world = world_with_margin(margin);
    let mut pairs = vec![(7, 7)];
    world.detect_pairs(&bodies.view(), &mut pairs).unwrap();
    pairs
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// `detect_pairs` is the pairs of `detect`, in the same order: sphere
    /// clouds with walls (floor, box, cylinder, drum), sweeps and groups.
    #[test]
    fn pairs_are_those_of_the_contacts(
        mut bodies in sphere_cloud_with_walls(150, 1.0, 0.02, 0.07),
        margin in 0.0f64..0.01,
        seed in any::<u64>(),
    ) {
        let mut rng = Rng::new(seed);
        random_sweeps(&mut bodies, &mut rng);
        random_groups(&mut bodies, &mut rng);
        prop_assert_eq!(detect_pairs(&bodies, margin), pairs_of(&detect(&bodies, margin, false)));
    }
}

/// One way to spoil a body's input: `(body, what)`.
fn spoil(bodies: &mut Bodies, (body, what): (usize, u8)) {
    let n = bodies.shapes.len();
    let i = body % n;
    match what % 6 {
        0 => bodies.positions[i].x = f64::NAN,
        1 => {
            bodies.orientations[i] =
                Quat::new_unchecked(nalgebra::Quaternion::new(f64::INFINITY, 0.0, 0.0, 0.0))
        }
        2 => bodies.shapes[i] = Shape::Sphere { radius: 0.0 },
        3 => bodies.shapes[i] = Shape::Sphere { radius: f64::NAN },
        4 => {
            bodies.sweep.resize(n, 0.0);
            bodies.sweep[i] = f64::NAN;
        }
        _ => {
            bodies.shapes[i] = Shape::HalfSpace {
                normal: Vec3::new(0.0, 0.0, 2.0),
            }
        }
    }
}

proptest! {
    /// A detection pass (and a pass for the candidate pairs) refuses what
    /// `BodyView::validate` refuses, with the same error (field and body),
    /// in a world that kept the last good pass's median radius and scratch;
    /// and after the refused pass the same world, given the bodies mended,
    /// finds what a fresh world finds. (A pass that checks the bodies in
    /// the same loop that classifies them must keep this.)
    #[test]
    fn a_pass_refuses_what_validate_refuses(
        n in 2usize..5,
        // now and then a sphere more than 4 medians large: a large body
        radii in proptest::collection::vec(prop_oneof![9 => 0.004f64..0.02, 1 => 0.1f64..0.2], 125),
        spoils in proptest::collection::vec((0usize..200, 0u8..6), 1..3),
    ) {
        let good = {
            let mut b = dense_packing(n, 0.01);
            for (i, shape) in b.shapes.iter_mut().enumerate().skip(1) {
                *shape = Shape::Sphere { radius: radii[i % radii.len()] };
            }
            b
        };
        let mut bad = good.clone();
        for &s in &spoils {
            spoil(&mut bad, s);
        }
        let mut world = world_with_margin(1e-4);
        let mut set = ContactSet::new();
        world.detect(&good.view(), &mut set).unwrap();
        let want = format!("{:?}", bad.view().validate().err());
        prop_assert!(want != "None", "the bodies were spoiled");
        let mut refused = set.clone();
        let got = format!("{:?}", world.detect(&bad.view(), &mut refused).err());
        prop_assert_eq!(&got, &want);
        let mut pairs = Vec::new();
        let got = format!("{:?}", world.detect_pairs(&bad.view(), &mut pairs).err());
        prop_assert_eq!(&got, &want);
        world.detect(&good.view(), &mut set).unwrap();
        let mut fresh = ContactSet::new();
        CollisionWorld::new(*world.settings())
            .unwrap()
            .detect(&good.view(), &mut fresh)
            .unwrap();
        prop_assert_eq!(set.as_slice(), fresh.as_slice());
    }
}

/// A column of 40 spheres of 6.5 mm radius standing on a floor, 1 µm
/// apart, each with a sweep of 10 µm, and 41 spheres of 1 mm a metre away
/// (the column's spheres are then over four times the median radius:
/// large bodies), margin 0: the 39 sphere pairs and the floor contact are
/// found, as the brute force finds them.
#[test]
fn a_column_of_large_spheres_keeps_its_swept_contacts() {
    let mut bodies = Bodies::new();
    bodies.push_floor(0.0);
    bodies.sweep.push(0.0);
    let r = 0.0065;
    for k in 0..40 {
        let z = r + 1e-6 + f64::from(k) * (2.0 * r + 1e-6);
        bodies.push(
            Shape::Sphere { radius: r },
            Vec3::new(0.0, 0.0, z),
            Quat::identity(),
            false,
        );
        bodies.sweep.push(1e-5);
    }
    for k in 0..41 {
        let x = Vec3::new(1.0 + 0.003 * f64::from(k), 0.0, 0.01);
        bodies.push(Shape::Sphere { radius: 0.001 }, x, Quat::identity(), false);
        bodies.sweep.push(1e-5);
    }
    let expected = brute_force(&bodies, 0.0);
    assert_eq!(expected.len(), 40);
    assert_eq!(detect(&bodies, 0.0, false), expected);
    assert_eq!(detect(&bodies, 0.0, true), expected);
}

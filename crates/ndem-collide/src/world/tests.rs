use super::{BodyView, CELL_LIMIT, Quat, Shape, Vec3, floor_clamped};

/// Bodies without sweeps or collision groups.
fn free_bodies<'a>(
    shapes: &'a [Shape],
    positions: &'a [Vec3],
    orientations: &'a [Quat],
    fixed: &'a [bool],
) -> BodyView<'a> {
    BodyView {
        shapes,
        positions,
        orientations,
        fixed,
        sweep: &[],
        groups: &[],
    }
}

/// The formula the grid used before, with `floor`.
fn reference(y: f64) -> i64 {
    y.floor().clamp(-CELL_LIMIT, CELL_LIMIT) as i64
}

#[test]
fn floor_clamped_is_floor_then_clamp() {
    let edges = [
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.0,
        -1.0,
        -1.0 - f64::EPSILON,
        1e-300,
        -1e-300,
        2.5e15,
        -2.5e15,
        CELL_LIMIT - 0.5,
        -CELL_LIMIT + 0.5,
        CELL_LIMIT,
        -CELL_LIMIT,
        2.0 * CELL_LIMIT,
        -2.0 * CELL_LIMIT,
        1e308,
        -1e308,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    for y in edges {
        assert_eq!(floor_clamped(y), reference(y), "{y}");
    }
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..100_000 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        // random bits: every exponent and sign, NaNs included
        let y = f64::from_bits(s);
        assert_eq!(floor_clamped(y), reference(y), "{y:e}");
        let z = (s >> 11) as f64 * 2f64.powi(-40) - 4096.0;
        assert_eq!(floor_clamped(z), reference(z), "{z}");
    }
}

/// The kept median radius is the median selected afresh, pass after
/// pass, while spheres are added, removed, resized or made empty (ties
/// among them), and the world classifies the spheres as a fresh world
/// does: a sphere more than `large_sphere_factor` medians large is a
/// large body.
#[test]
fn the_kept_median_radius_is_the_median() {
    use super::{CollisionSettings, CollisionWorld};
    let mut state = 3u64;
    let mut u = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut shapes: Vec<Shape> = Vec::new();
    let mut reused = CollisionWorld::new(CollisionSettings::default()).unwrap();
    let (mut kept, mut changed, mut with_large) = (0, 0, 0);
    for pass in 0..300 {
        // most passes change nothing, as in a run
        match (u() * 10.0) as usize {
            0 => shapes.push(Shape::Sphere {
                // a few radii, so that ties are common, and now and
                // then a sphere far larger than the median
                radius: [0.01, 0.02, 0.02, 0.03, 0.5][(u() * 5.0) as usize],
            }),
            1 if !shapes.is_empty() => {
                let k = (u() * shapes.len() as f64) as usize;
                shapes.remove(k);
            }
            2 if !shapes.is_empty() => {
                let k = (u() * shapes.len() as f64) as usize;
                shapes[k] = if u() < 0.3 {
                    Shape::Empty
                } else {
                    Shape::Sphere {
                        radius: 0.01 + 0.05 * u(),
                    }
                };
            }
            _ => {}
        }
        let n = shapes.len();
        let positions: Vec<Vec3> = (0..n).map(|i| Vec3::new(i as f64, 0.0, 0.0)).collect();
        let orientations = vec![Quat::identity(); n];
        let fixed = vec![false; n];
        let view = free_bodies(&shapes, &positions, &orientations, &fixed);
        let before = reused.median_radius;
        reused.classify(&view);
        let mut fresh = CollisionWorld::new(CollisionSettings::default()).unwrap();
        fresh.classify(&view);
        let mut radii: Vec<f64> = shapes.iter().filter_map(Shape::sphere_radius).collect();
        radii.sort_by(f64::total_cmp);
        let median = radii.get(radii.len() / 2).copied();
        assert_eq!(reused.median_radius, median, "pass {pass}");
        assert_eq!(fresh.median_radius, median, "pass {pass}");
        assert_eq!(reused.particles, fresh.particles, "pass {pass}");
        assert_eq!(reused.large, fresh.large, "pass {pass}");
        with_large += usize::from(!fresh.large.is_empty());
        if before.is_some() && before == median {
            kept += 1;
        } else {
            changed += 1;
        }
    }
    // both paths were taken, and large spheres were found
    assert!(
        kept > 100 && changed > 10 && with_large > 10,
        "{kept} kept, {changed} changed, {with_large} with large spheres"
    );
}

/// The one-pass validity scan ([`BodyView::all_bodies_valid`]) never
/// says `true` for bodies one of whose checks fails, and says `true`
/// whenever all pass and the seven coordinates of each body are below
/// 10³⁰⁰ (no sum can overflow). Its conservative `false` (all valid,
/// a sum overflowing) still ends in `Ok` from `validate`.
#[test]
fn the_validity_scan_passes_exactly_the_valid_bodies() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let coordinate = prop_oneof![
        6 => -10.0f64..10.0,
        1 => prop_oneof![Just(1e308), Just(-1e308), Just(f64::MAX)],
        1 => prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY)],
    ];
    let shape = prop_oneof![
        6 => (0.001f64..1.0).prop_map(|radius| Shape::Sphere { radius }),
        1 => prop_oneof![Just(0.0), Just(-1.0), Just(f64::NAN), Just(f64::INFINITY)]
            .prop_map(|radius| Shape::Sphere { radius }),
        1 => prop_oneof![Just(1.0), Just(2.0), Just(f64::NAN)]
            .prop_map(|z| Shape::HalfSpace { normal: Vec3::new(0.0, 0.0, z) }),
        1 => Just(Shape::Empty),
    ];
    let body = (shape, proptest::collection::vec(coordinate, 7));
    let mut runner = TestRunner::new(Config::with_cases(2000));
    let (fast_true, fast_false_valid) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    runner
        .run(&proptest::collection::vec(body, 1..6), |bodies| {
            let shapes: Vec<Shape> = bodies.iter().map(|(s, _)| s.clone()).collect();
            let positions: Vec<Vec3> = bodies
                .iter()
                .map(|(_, c)| Vec3::new(c[0], c[1], c[2]))
                .collect();
            let orientations: Vec<Quat> = bodies
                .iter()
                .map(|(_, c)| {
                    Quat::new_unchecked(nalgebra::Quaternion::new(c[3], c[4], c[5], c[6]))
                })
                .collect();
            let fixed = vec![false; shapes.len()];
            let view = free_bodies(&shapes, &positions, &orientations, &fixed);
            let each_valid = bodies
                .iter()
                .all(|(shape, c)| shape.validate().is_ok() && c.iter().all(|x| x.is_finite()));
            let small = bodies
                .iter()
                .all(|(_, c)| c.iter().all(|x| x.abs() < 1e300));
            let fast = view.all_bodies_valid();
            prop_assert!(!fast || each_valid);
            prop_assert_eq!(fast, each_valid && (small || fast));
            prop_assert_eq!(view.validate().is_ok(), each_valid);
            fast_true.set(fast_true.get() + usize::from(fast));
            fast_false_valid.set(fast_false_valid.get() + usize::from(!fast && each_valid));
            Ok(())
        })
        .unwrap();
    // both outcomes of a valid set were seen
    let (fast_true, fast_false_valid) = (fast_true.get(), fast_false_valid.get());
    assert!(
        fast_true > 100 && fast_false_valid > 10,
        "{fast_true} scanned valid, {fast_false_valid} valid after the checks"
    );
}

/// A packed lattice of `side³` spheres (radii 10-13 mm, 25 mm apart,
/// jittered; some fixed, some in collision groups) on a floor, every
/// `fast_every`-th sphere with a sweep of 4-10 mm and, beside each, its
/// next neighbour one of 4 mm (pairs of fast spheres), the others at
/// most 1 mm (small enough that the floor's pairs are found from the
/// cells of a slab, which holds no fast sphere); `far` puts every third
/// layer of spheres 40 m away (the hashed layout).
fn lattice_with_fast_spheres(
    side: usize,
    fast_every: usize,
    far: bool,
) -> crate::proptest_support::Bodies {
    let mut bodies = crate::proptest_support::Bodies::new();
    let mut state = 7u64;
    let mut u = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    bodies.push_floor(0.0);
    bodies.sweep.push(0.0);
    bodies.groups.push(0);
    for k in 0..side * side * side {
        let (i, j, l) = (k % side, (k / side) % side, k / (side * side));
        let jitter = Vec3::new(u() - 0.5, u() - 0.5, u() - 0.5) * 0.004;
        let shift = if far && l % 3 == 2 { 40.0 } else { 0.0 };
        let x =
            Vec3::new(i as f64, j as f64, l as f64) * 0.025 + Vec3::new(shift, 0.0, 0.011) + jitter;
        let r = 0.010 + 0.003 * u();
        let fixed = u() < 0.05;
        bodies.push(Shape::Sphere { radius: r }, x, Quat::identity(), fixed);
        let sweep = match k % fast_every {
            0 => 0.004 + 0.006 * u(),
            1 => 0.004,
            _ => 0.001 * u(),
        };
        bodies.sweep.push(sweep);
        bodies
            .groups
            .push(if u() < 0.1 { 1 + (k % 2) as u32 } else { 0 });
    }
    bodies
}

/// A fresh world's pass over `view` with a margin of 1 mm: the world and
/// its contacts.
fn detected(
    view: &BodyView<'_>,
    threads: usize,
    fast: super::FastSpheres,
) -> (super::CollisionWorld, crate::ContactSet) {
    let settings = super::CollisionSettings {
        margin: 1e-3,
        ..Default::default()
    };
    let mut world = super::CollisionWorld::new(settings).unwrap();
    let mut set = crate::ContactSet::new();
    world.detect_impl(view, &mut set, threads, fast).unwrap();
    (world, set)
}

/// A pass that sets the fast spheres apart from the grid finds the
/// contacts of a pass with every sphere in it, bit for bit and in the
/// same order, on one thread and on three (above 4096 particles, so that
/// the blocks split the fast spheres' contacts), in the dense and the
/// hashed layout; the grid's cells are then sized by the slow spheres'
/// sweeps. With more fast spheres than one in 64 none is set apart.
#[test]
fn fast_spheres_apart_give_the_contacts_of_the_full_grid() {
    use super::FastSpheres;
    for (side, fast_every, far) in [
        (12, 100, false),
        (12, 100, true),
        (18, 200, false),
        (18, 200, true),
        (12, 20, false),
    ] {
        let bodies = lattice_with_fast_spheres(side, fast_every, far);
        let view = bodies.view();
        let (full, expected) = detected(&view, 1, FastSpheres::InGrid);
        assert!(full.fast.is_empty());
        for threads in [1, 3] {
            let (apart, set) = detected(&view, threads, FastSpheres::Apart);
            let label = format!("{side} {fast_every} far {far} threads {threads}");
            let particles = side * side * side;
            if 2 * particles / fast_every <= particles / super::FAST_SHARE {
                assert!(apart.fast.len() >= particles / fast_every, "{label}");
                assert!(apart.max_sweep <= 1e-3, "{label}");
                assert!(apart.cell_size < 0.7 * full.cell_size, "{label}");
            } else {
                assert!(apart.fast.is_empty(), "{label}");
            }
            assert!(set.len() > particles, "{label}: {}", set.len());
            assert_eq!(set, expected, "{label}");
        }
    }
}

/// The cells a fast sphere's pairs are looked for in reach as far as a
/// pair with the slowest grid partner can: a partner whose own sweep
/// (the grid's largest) takes it into the next cell is found. The fast
/// sphere sits so that its reach without the partner's sweep ends half
/// a sweep before a cell face and the partner half a sweep after it,
/// at the pair's reach.
#[test]
fn a_fast_sphere_reaches_the_cell_of_a_partner_that_sweeps() {
    use super::{CollisionSettings, CollisionWorld, FastSpheres};
    use crate::ContactSet;
    let (r, margin, slow, fast_sweep) = (0.01, 1e-3, 2e-3, 0.01);
    let h = 2.0 * r + margin + 2.0 * slow;
    let reach_without = (r + r) + (margin + fast_sweep);
    let mut bodies = crate::proptest_support::Bodies::new();
    let mut sphere = |x: f64, y: f64, sweep: f64| {
        let at = Vec3::new(x, y, 0.0);
        bodies.push(Shape::Sphere { radius: r }, at, Quat::identity(), false);
        bodies.sweep.push(sweep);
    };
    let x_fast = 3.0 * h - reach_without - 0.5 * slow;
    sphere(x_fast, 0.0, fast_sweep);
    let partner = x_fast + (reach_without + slow) * (1.0 - 1e-12);
    assert!(partner > 3.0 * h + 0.4 * slow);
    sphere(partner, 0.0, slow);
    // slow spheres apart, so that one particle in 64 may be set apart
    for k in 0..100 {
        sphere(0.0, 0.1 + 0.05 * f64::from(k), 0.5 * slow);
    }
    let view = bodies.view();
    let settings = CollisionSettings {
        margin,
        ..Default::default()
    };
    let mut world = CollisionWorld::new(settings).unwrap();
    let mut set = ContactSet::new();
    world
        .detect_impl(&view, &mut set, 1, FastSpheres::Apart)
        .unwrap();
    assert_eq!(world.fast, [0]);
    assert_eq!(world.cell_size, h);
    let keys: Vec<_> = set.iter().map(|c| (c.key.body_a, c.key.body_b)).collect();
    assert_eq!(keys, [(0, 1)]);
}

/// The grid built in parts on 2 and 3 threads is the grid built on one,
/// bucket for bucket and entry for entry (each bucket's particles in
/// increasing order), in the dense and the hashed layout, with fast
/// spheres set apart.
#[test]
fn the_grid_built_in_parts_is_the_serial_grid() {
    use super::{CollisionSettings, CollisionWorld, FastSpheres};
    for far in [false, true] {
        // 50 653 particles: three parts of at least `MIN_PART`
        let bodies = lattice_with_fast_spheres(37, 200, far);
        let view = bodies.view();
        let settings = CollisionSettings {
            margin: 1e-3,
            ..Default::default()
        };
        let grid = |threads: usize| {
            let mut world = CollisionWorld::new(settings).unwrap();
            world.classify(&view);
            world.build_grid(&view, FastSpheres::Apart, threads);
            world
        };
        let serial = grid(1);
        let parts =
            |t| ndem_par::blocks::parts_for(serial.particles.len(), t, super::build::MIN_PART);
        assert_eq!((parts(2), parts(3)), (2, 3));
        assert!(!serial.fast.is_empty());
        assert_eq!(serial.dense.is_some(), !far);
        for threads in [2, 3] {
            let parts = grid(threads);
            assert_eq!(parts.cell_size, serial.cell_size, "{threads} far {far}");
            assert_eq!(parts.dense, serial.dense);
            assert_eq!(parts.particle_bucket, serial.particle_bucket);
            assert_eq!(parts.bucket_start, serial.bucket_start);
            let bodies_of =
                |w: &CollisionWorld| w.entries.iter().map(|e| e.body).collect::<Vec<_>>();
            assert_eq!(bodies_of(&parts), bodies_of(&serial), "{threads} far {far}");
        }
        // each bucket's particles in increasing order
        for b in 0..serial.bucket_start.len() - 1 {
            let (s, e) = (
                serial.bucket_start[b] as usize,
                serial.bucket_start[b + 1] as usize,
            );
            assert!(serial.entries[s..e].is_sorted_by_key(|x| x.body));
        }
    }
}

/// A sphere set apart for its sweep meets a floor through its own sweep
/// where it lies beyond the cells of the floor's slab that the grid's slow
/// spheres are looked for in (a bed dense enough that the slab's cells are
/// fewer than the particles, so that they are queried): the contact of
/// the pass with every sphere in the grid.
#[test]
fn a_fast_sphere_meets_a_floor_beyond_the_slow_spheres_slab() {
    use super::FastSpheres;
    let r = 0.01;
    let mut bodies = crate::proptest_support::Bodies::new();
    bodies.push_floor(0.0);
    bodies.sweep.push(0.0);
    // a bed of 20 × 20 × 12 slow spheres, 4800 of them (the floor's slab
    // is about 24 × 24 × 5 cells), so that one particle in 64 may be set
    // apart
    for k in 0..4800 {
        let (i, j, l) = (k % 20, (k / 20) % 20, k / 400);
        let at = Vec3::new(f64::from(i), f64::from(j), f64::from(l)) * 0.0205 + Vec3::repeat(r);
        bodies.push(Shape::Sphere { radius: r }, at, Quat::identity(), false);
        bodies.sweep.push(1e-4);
    }
    // 49 cm above the floor, 55 cm of sweep: a speculative contact
    let at = Vec3::new(0.2, 0.2, 0.5);
    bodies.push(Shape::Sphere { radius: r }, at, Quat::identity(), false);
    bodies.sweep.push(0.55);
    let view = bodies.view();
    let (_, expected) = detected(&view, 1, FastSpheres::InGrid);
    let (apart, set) = detected(&view, 1, FastSpheres::Apart);
    assert_eq!(apart.fast, [4801]);
    assert!(apart.cell_size < 0.03, "{}", apart.cell_size);
    assert!(
        set.iter()
            .any(|c| (c.key.body_a, c.key.body_b) == (4801, 0))
    );
    assert_eq!(set, expected);
}

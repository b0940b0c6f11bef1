//! Per-body ghost reach ([`GhostReach::PerBody`]): whatever the particles'
//! speeds, the rank that owns a contact that can form before the next
//! rebuild holds both of its bodies. Property tests on random scenes,
//! velocities and moves within the budgets, on 1-4 ranks.

mod common;

use ndem_math::{Vec3, Velocity6};
use ndem_mpi::*;
use ndem_smooth::ContactHistory;
use ndem_step::{BodyId, Motion, World};
use proptest::prelude::*;

/// Step of the sweeps \[s\].
const DT: f64 = 0.005;

/// What one rank reports: per owned particle `(gid, position, sweep)`,
/// per pair of particles it holds that can meet `(gid, gid, the rank its
/// contact's owner is)`, and whether the skin test fired after the moves.
type RankView = (Vec<(u64, Vec3, f64)>, Vec<(u64, u64, usize)>, bool);

/// Whether particles at `a` and `b` with radii `r` and sweeps `s` can
/// form a speculative contact this step.
fn can_meet(a: &Vec3, b: &Vec3, r: [f64; 2], s: [f64; 2]) -> bool {
    (a - b).norm() <= r[0] + r[1] + s[0] + s[1]
}

/// The scene with particle `k` given the velocity `speeds[k] · dirs[k]`
/// (unit directions; the list repeats).
fn moving(scene: &World, speeds: &[f64], dirs: &[Vec3]) -> World {
    let mut world = scene.clone();
    for k in 0..world.len() {
        if world.motions()[k] == Motion::Dynamic {
            let v = dirs[k % dirs.len()] * speeds[k % speeds.len()];
            let velocity = Velocity6::new(v, Vec3::zeros());
            world.set_velocity(BodyId::from_index(k), velocity).unwrap();
        }
    }
    world
}

fn unit(v: (f64, f64, f64)) -> Vec3 {
    let v = Vec3::new(v.0, v.1, v.2);
    if v.norm() > 1e-6 {
        v.normalize()
    } else {
        Vec3::x()
    }
}

/// The unit direction from `p` to the nearest point of the nearest box
/// of a rank other than `rank` (`None` on one rank).
fn toward_nearest_other_box(d: &Decomposition, rank: usize, p: &Vec3) -> Option<Vec3> {
    d.boxes()
        .iter()
        .enumerate()
        .filter(|(s, _)| *s != rank)
        .map(|(_, b)| {
            let q = Vec3::new(
                p.x.clamp(b.lo[0], b.hi[0]),
                p.y.clamp(b.lo[1], b.hi[1]),
                p.z.clamp(b.lo[2], b.hi[2]),
            );
            q - p
        })
        .filter(|v| v.norm() > 0.0)
        .min_by(|a, b| a.norm().total_cmp(&b.norm()))
        .map(|v| v.normalize())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Rebuilt with each particle's budget from its sweep, then every
    /// particle moved by up to its budget less its sweep: the skin test
    /// does not fire, and every pair whose speculative contact can form
    /// (`|x_i − x_j| ≤ r_i + r_j + σ_i + σ_j`) is held, both bodies, by
    /// the rank that owns its contact (that of the particle with the
    /// smaller budget, the lower index on a tie).
    #[test]
    fn the_rank_owning_a_contact_holds_both_bodies(
        ranks in 1usize..=4,
        n in 40usize..160,
        speeds in prop::collection::vec(prop_oneof![Just(0.0), 0.0f64..0.2, 0.0f64..3.0], 160),
        dirs in prop::collection::vec((-1.0f64..1.0, -1.0f64..1.0, -1.0f64..1.0), 160),
        moves in prop::collection::vec(((-1.0f64..1.0, -1.0f64..1.0, -1.0f64..1.0), 0.0f64..1.0), 160),
    ) {
        let dirs: Vec<Vec3> = dirs.into_iter().map(unit).collect();
        let scene = moving(&common::bed(n, 0.3), &speeds, &dirs);
        let views: Vec<RankView> = run_on_threads(ranks, |comm| {
            let settings = DomainSettings { ghost_reach: GhostReach::PerBody, ..DomainSettings::default() };
            let mut domain = Domain::new(comm, &scene, settings).unwrap();
            let mut sweep = Vec::new();
            domain.world().sweep_distances(DT, &mut sweep);
            let _ = domain.needs_rebuild(&sweep);
            domain.rebuild::<ContactHistory>(&[]).unwrap();
            domain.world().sweep_distances(DT, &mut sweep);
            let budgets = domain.ownership_budgets().to_vec();
            let mut owned = Vec::new();
            for i in 0..domain.world().len() {
                let particle = domain.world().motions()[i] == Motion::Dynamic;
                if domain.roles()[i] != Role::Owned || !particle {
                    continue;
                }
                let g = domain.global_indices()[i];
                let (dir, share) = moves[g as usize % moves.len()];
                let here = domain.world().positions()[i];
                // every other particle heads for the nearest other box by
                // all its room, the worst case for the ghost layer
                let dir = if g % 2 == 0 {
                    toward_nearest_other_box(domain.decomposition(), domain.comm().rank(), &here)
                        .unwrap_or(unit(dir))
                } else {
                    unit(dir)
                };
                let share = if g % 2 == 0 { 1.0 } else { share };
                // strictly inside the budget: `d + σ < b`
                let room = (budgets[i] - sweep[i]).max(0.0) * share * 0.999;
                let p = here + dir * room;
                domain.world_mut().set_position(BodyId::from_index(i), p).unwrap();
                owned.push((g, p, sweep[i]));
            }
            domain.update_ghosts();
            domain.world().sweep_distances(DT, &mut sweep);
            let fired = domain.needs_rebuild(&sweep);
            let w = domain.world();
            let particles: Vec<usize> =
                (0..w.len()).filter(|&i| w.motions()[i] == Motion::Dynamic).collect();
            let mut met = Vec::new();
            for (k, &i) in particles.iter().enumerate() {
                for &j in &particles[k + 1..] {
                    let r = [w.shapes()[i].bounding_radius(), w.shapes()[j].bounding_radius()];
                    if can_meet(&w.positions()[i], &w.positions()[j], r, [sweep[i], sweep[j]]) {
                        let g = domain.global_indices();
                        met.push((g[i], g[j], domain.contact_owner(i, j)));
                    }
                }
            }
            (owned, met, fired)
        });
        let mut particles: Vec<(usize, u64, Vec3, f64)> = Vec::new();
        for (rank, (owned, _, fired)) in views.iter().enumerate() {
            prop_assert!(!fired, "rank {}: the skin test fired after moves within the budgets", rank);
            particles.extend(owned.iter().map(|&(g, p, s)| (rank, g, p, s)));
        }
        particles.sort_by_key(|x| x.1);
        let radius = |g: u64| scene.shapes()[g as usize].bounding_radius();
        for (k, a) in particles.iter().enumerate() {
            for b in &particles[k + 1..] {
                if !can_meet(&a.2, &b.2, [radius(a.1), radius(b.1)], [a.3, b.3]) {
                    continue;
                }
                // every rank that holds both names one owner, and the
                // owner holds both
                let seen: Vec<(usize, usize)> = views
                    .iter()
                    .enumerate()
                    .filter_map(|(rank, v)| {
                        v.1.iter().find(|m| (m.0, m.1) == (a.1, b.1)).map(|m| (rank, m.2))
                    })
                    .collect();
                let owner = seen.first().map(|s| s.1);
                prop_assert!(
                    owner.is_some_and(|o| seen.iter().all(|s| s.1 == o) && seen.iter().any(|s| s.0 == o)),
                    "bodies {} and {} (owned by ranks {} and {}) can meet; the ranks holding both and the owner each names: {:?}",
                    a.1, b.1, a.0, b.0, seen
                );
            }
        }
    }
}

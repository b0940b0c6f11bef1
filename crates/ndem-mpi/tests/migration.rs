//! Migration and rebalancing lose and duplicate no body: property tests on
//! random scenes, random displacements and 1-4 ranks.

mod common;

use ndem_math::Vec3;
use ndem_mpi::*;
use ndem_smooth::ContactHistory;
use ndem_step::BodyId;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Every body ends on exactly one rank, in the box that contains it,
    /// with its state bit for bit: the gathered scene after moving bodies
    /// across the cuts and rebuilding equals the moved scene.
    #[test]
    fn rebuilds_keep_every_body_once_with_its_state(
        ranks in 1usize..=4,
        n in 40usize..160,
        shift in prop::collection::vec((-0.08f64..0.08, -0.02f64..0.02), 160),
    ) {
        let scene = common::bed(n, 0.3);
        let out = run_on_threads(ranks, |comm| {
            let settings = DomainSettings { rebalance_every: 2, ..DomainSettings::default() };
            let mut domain = Domain::new(comm, &scene, settings).unwrap();
            let mut expected = scene.clone();
            for round in 0..3 {
                // move the owned bodies (and the same bodies of the whole scene)
                let moved: Vec<(usize, Vec3)> = (0..domain.world().len())
                    .filter(|&i| domain.roles()[i] == Role::Owned)
                    .map(|i| {
                        let g = domain.global_indices()[i] as usize;
                        let (dx, dy) = shift[(g + round) % shift.len()];
                        (i, domain.world().positions()[i] + Vec3::new(dx, dy, 0.0))
                    })
                    .collect();
                for &(i, p) in &moved {
                    domain.world_mut().set_position(BodyId::from_index(i), p).unwrap();
                }
                for g in 0..scene.len() {
                    if scene.motions()[g] == ndem_step::Motion::Dynamic {
                        let (dx, dy) = shift[(g + round) % shift.len()];
                        let p = expected.positions()[g] + Vec3::new(dx, dy, 0.0);
                        expected.set_position(BodyId::from_index(g), p).unwrap();
                    }
                }
                domain.rebuild::<ContactHistory>(&[]).unwrap();
                for i in 0..domain.world().len() {
                    if domain.roles()[i] == Role::Owned {
                        let p = domain.world().positions()[i];
                        assert_eq!(domain.decomposition().owner(&p), domain.comm().rank());
                    }
                }
            }
            let owned = domain.comm().sum(&[domain.owned_count() as f64])[0];
            (domain.gather().unwrap(), owned, expected)
        });
        let (gathered, owned, expected) = &out[0];
        let gathered = gathered.as_ref().unwrap();
        let dynamic = expected.dynamic_count();
        prop_assert_eq!(*owned as usize, dynamic);
        prop_assert_eq!(gathered.len(), expected.len());
        for i in 0..expected.len() {
            prop_assert_eq!(gathered.positions()[i], expected.positions()[i]);
            prop_assert_eq!(gathered.velocities()[i], expected.velocities()[i]);
        }
        prop_assert_eq!(gathered.momentum(), expected.momentum());
    }

    /// A layout [`Domain::keep_layout`] keeps is the one a rebuild makes:
    /// the same bodies on each rank in the same roles, sent to the same
    /// ranks, with the same state, round after round of random moves
    /// (some rounds move nothing, and those layouts must be kept).
    #[test]
    fn a_kept_layout_is_the_rebuilt_one(
        ranks in 1usize..=4,
        n in 40usize..160,
        shift in prop::collection::vec((-0.03f64..0.03, -0.01f64..0.01), 160),
        still in prop::collection::vec(any::<bool>(), 4),
    ) {
        let scene = common::bed(n, 0.3);
        let out = run_on_threads(ranks, |comm| {
            let settings = DomainSettings { rebalance_every: 0, ..DomainSettings::default() };
            let mut kept = Domain::new(comm.clone(), &scene, settings).unwrap();
            let mut rebuilt = Domain::new(comm, &scene, settings).unwrap();
            let mut failures = Vec::new();
            for (round, &still) in still.iter().enumerate() {
                for domain in [&mut kept, &mut rebuilt] {
                    for i in 0..domain.world().len() {
                        if domain.roles()[i] != Role::Owned || still {
                            continue;
                        }
                        let g = domain.global_indices()[i] as usize;
                        let (dx, dy) = shift[(g + round) % shift.len()];
                        let p = domain.world().positions()[i] + Vec3::new(dx, dy, 0.0);
                        domain.world_mut().set_position(BodyId::from_index(i), p).unwrap();
                    }
                    domain.update_ghosts();
                }
                // the skin test is not asked: both relayout every round
                let was_kept = kept.keep_layout();
                if !was_kept {
                    kept.rebuild::<ContactHistory>(&[]).unwrap();
                }
                rebuilt.rebuild::<ContactHistory>(&[]).unwrap();
                if still && !was_kept {
                    failures.push(format!("round {round}: nothing moved and the layout was rebuilt"));
                }
                if kept.global_indices() != rebuilt.global_indices()
                    || kept.roles() != rebuilt.roles()
                    || kept.ghosts_sent() != rebuilt.ghosts_sent()
                    || kept.world().positions() != rebuilt.world().positions()
                {
                    failures.push(format!("round {round}: layouts differ (kept: {was_kept})"));
                }
            }
            failures
        });
        for (rank, failures) in out.iter().enumerate() {
            prop_assert!(failures.is_empty(), "rank {}: {:?}", rank, failures);
        }
    }
}

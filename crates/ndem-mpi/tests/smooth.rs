//! The distributed smooth DEM reproduces one rank bit for bit, and loses
//! no body when bodies migrate.

mod common;

use ndem_mpi::*;
use ndem_smooth::{SmoothLaw, SmoothSettings, SmoothStepper, stepper::critical_time_step};
use ndem_step::World;

fn settings(w: &World) -> SmoothSettings {
    SmoothSettings::with_dt(0.1 * critical_time_step(w, &SmoothLaw::Hertz))
}

/// The serial reference: the plain stepper on the whole scene.
fn serial(steps: usize) -> World {
    let mut w = common::bed(300, 0.2);
    let mut st = SmoothStepper::new(settings(&w), &w).unwrap();
    for _ in 0..steps {
        st.step(&mut w).unwrap();
    }
    w
}

fn distributed(ranks: usize, steps: usize) -> (World, u64, Vec<(f64, ndem_math::Vec3)>) {
    let out = run_on_threads(ranks, |comm| {
        let scene = common::bed(300, 0.2);
        let mut run =
            DistributedSmooth::new(comm, &scene, settings(&scene), DomainSettings::default())
                .unwrap();
        let mut trace = Vec::new();
        for _ in 0..steps {
            let s = run.step().unwrap();
            trace.push((s.kinetic_energy, s.momentum));
        }
        let rebuilds = run.domain().rebuilds();
        (run.gather().unwrap(), rebuilds, trace)
    });
    let (first, rest) = out.split_first().unwrap();
    assert!(rest.iter().all(|r| r.0.is_none()));
    (first.0.clone().unwrap(), first.1, first.2.clone())
}

#[test]
fn two_and_three_ranks_give_the_one_rank_trajectory_bit_for_bit() {
    let steps = 1500;
    let reference = serial(steps);
    for ranks in [1, 2, 3] {
        let (world, rebuilds, _) = distributed(ranks, steps);
        assert!(
            rebuilds > 1,
            "{ranks} ranks: the layout was rebuilt ({rebuilds})"
        );
        common::assert_same_state(&world, &reference, &format!("{ranks} ranks"));
    }
}

/// A run's statistics count each step's owned touching contacts, so a
/// stepper that does not keep them is refused, naming the setting.
#[test]
fn a_stepper_that_does_not_keep_its_contacts_is_refused() {
    let out = run_on_threads(1, |comm| {
        let scene = common::bed(30, 0.2);
        let settings = SmoothSettings {
            record_contacts: false,
            ..settings(&scene)
        };
        DistributedSmooth::new(comm, &scene, settings, DomainSettings::default()).err()
    });
    assert!(
        matches!(
            out[0],
            Some(MpiError::InvalidSettings {
                field: "record_contacts",
                ..
            })
        ),
        "{:?}",
        out[0]
    );
}

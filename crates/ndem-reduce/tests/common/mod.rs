//! The stepper and the merged block the reduction tests share (each test
//! crate uses part of it).
#![allow(dead_code)]

use ndem_math::Material;
use ndem_math::Vec3;
use ndem_reduce::{Reducer, ReductionSettings, TrialSplit};
use ndem_step::{BodyId, MaterialId, StepSettings, Stepper, World};

/// The spheres' radius \[m\].
pub const R: f64 = 0.0065;

/// The papers' stepper settings with `iterations` PGS sweeps and the
/// history warm start.
pub fn papers_stepper(iterations: usize) -> Stepper {
    Stepper::new(
        StepSettings::papers(),
        Box::new(
            ndem_solve::ProjectedGaussSeidel::new(ndem_solve::PgsSettings {
                stopping: ndem_solve::Stopping::iterations(iterations),
                ..Default::default()
            })
            .unwrap(),
        ),
        Box::new(ndem_solve::HistoryWarmStart::default()),
    )
    .unwrap()
}

/// A 5×5×3 simple-cubic block on a floor after 200 steps of settling and
/// 20 with the reducer (the contact split off, the trial split `trial`),
/// merged as it rests into one aggregate.
pub fn merged_block(trial: Option<TrialSplit>) -> (World, Stepper) {
    let mut w = World::on_floor(Material::default()).unwrap();
    w.add_sphere_stack(R, MaterialId::from_index(0), [5, 5, 3])
        .unwrap();
    let mut st = papers_stepper(100);
    for _ in 0..200 {
        st.step(&mut w).unwrap();
    }
    let settings = ReductionSettings {
        contact_split: None,
        trial_split: trial,
        ..ReductionSettings::default()
    };
    st.set_hooks(Box::new(Reducer::new(settings).unwrap()));
    for _ in 0..20 {
        st.step(&mut w).unwrap();
    }
    assert_eq!(st.hooks_as::<Reducer>().unwrap().stats().aggregates, 1);
    (w, st)
}

/// What [`drop_on_top`] saw on the step that split an aggregate.
pub struct SplitByDrop {
    /// Steps before it.
    pub step: usize,
    /// Members freed.
    pub freed: usize,
    /// Impacting contacts in its impact stage.
    pub impacts: usize,
    /// The ball's vertical velocity before and after it \[m/s\].
    pub ball_vz: (f64, f64),
    /// The ball.
    pub ball: BodyId,
}

/// Drops a sphere of radius [`R`] from 50 mm above the top of body `top`
/// and steps until a step splits an aggregate (at most 40 steps).
pub fn drop_on_top(w: &mut World, st: &mut Stepper, top: usize) -> Option<SplitByDrop> {
    let z = w.positions()[top].z + 2.0 * R + 0.05;
    let ball = w
        .add_sphere(R, MaterialId::from_index(0), Vec3::new(0.0, 0.0, z))
        .unwrap();
    for step in 0..40 {
        let before = w.velocity(ball).linear.z;
        let stats = st.step(w).unwrap();
        let freed = st.hooks_as::<Reducer>().unwrap().stats().split_members;
        if freed > 0 {
            return Some(SplitByDrop {
                step,
                freed,
                impacts: stats.impacts,
                ball_vz: (before, w.velocity(ball).linear.z),
                ball,
            });
        }
    }
    None
}

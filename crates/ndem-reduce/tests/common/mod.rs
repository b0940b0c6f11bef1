//! The merged block the trial-split tests share.

use ndem_math::Material;
use ndem_reduce::{Reducer, ReductionSettings, TrialSplit};
use ndem_step::{MaterialId, StepSettings, Stepper, World};

/// The spheres' radius \[m\].
pub const R: f64 = 0.0065;

/// A 5×5×3 simple-cubic block on a floor after 200 steps of settling and
/// 20 with the reducer (the contact split off, the trial split `trial`),
/// merged as it rests into one aggregate.
pub fn merged_block(trial: Option<TrialSplit>) -> (World, Stepper) {
    let mut w = World::on_floor(Material::default()).unwrap();
    w.add_sphere_stack(R, MaterialId::from_index(0), [5, 5, 3])
        .unwrap();
    let mut st = Stepper::new(
        StepSettings::papers(),
        Box::new(
            ndem_solve::ProjectedGaussSeidel::new(ndem_solve::PgsSettings {
                stopping: ndem_solve::Stopping::iterations(100),
                ..Default::default()
            })
            .unwrap(),
        ),
        Box::new(ndem_solve::HistoryWarmStart::default()),
    )
    .unwrap();
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

//! `run.impact_join_velocity`: the active-set impact stage in scene files.

use ndem_scenes::builders::builtin;
use ndem_scenes::{SceneError, SceneFile};
use ndem_step::ImpactScope;

#[test]
fn the_join_velocity_round_trips_and_is_checked() {
    let mut scene = builtin("column").unwrap();
    assert_eq!(scene.settings.impact_scope, ImpactScope::WholeNetwork);
    let text = SceneFile::from_scene(&scene).to_toml().unwrap();
    assert!(
        !text.contains("impact_join_velocity"),
        "the default is not written"
    );
    scene.settings.impact_scope = ImpactScope::active_set();
    let text = SceneFile::from_scene(&scene).to_toml().unwrap();
    assert!(text.contains("impact_join_velocity = 0.005"), "{text}");
    let back = SceneFile::from_toml(&text).unwrap().to_scene().unwrap();
    assert_eq!(back.settings.impact_scope, ImpactScope::active_set());
    for bad in ["0.0", "-1.0", "nan"] {
        let text = text.replace(
            "impact_join_velocity = 0.005",
            &format!("impact_join_velocity = {bad}"),
        );
        match SceneFile::from_toml(&text).unwrap().to_scene() {
            Err(SceneError::Invalid { field, .. }) => assert_eq!(field, "run.impact_join_velocity"),
            other => panic!("{bad}: {:?}", other.map(|_| ())),
        }
    }
}

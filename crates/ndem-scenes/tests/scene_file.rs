//! A scene file written by hand: the fields with a default may be left
//! out, and what they default to.

use ndem_scenes::file::SceneFile;
use ndem_step::Motion;

/// A sphere on a floor, with only the fields that have no default.
const MINIMAL: &str = r#"
name = "minimal"
gravity = [0.0, 0.0, -9.81]

[run]
dt = 0.001
duration = 0.01
iterations = 50

[[materials]]
density = 2500.0
youngs_modulus = 1e7
poisson_ratio = 0.3
restitution = 0.3
friction = 0.5

[[bodies]]
motion = "static"
position = [0.0, 0.0, 0.0]
[bodies.shape]
type = "half-space"
normal = [0.0, 0.0, 1.0]

[[bodies]]
position = [0.0, 0.0, 0.05]
[bodies.shape]
type = "sphere"
radius = 0.05
"#;

#[test]
fn a_body_without_motion_is_dynamic_and_a_material_without_mu_r_rolls_freely() {
    let scene = SceneFile::from_toml(MINIMAL).unwrap().to_scene().unwrap();
    assert_eq!(scene.world.motions(), &[Motion::Static, Motion::Dynamic]);
    assert_eq!(scene.world.materials[0].rolling_resistance, 0.0);
    assert_eq!(scene.world.materials[0].damping, 0.0);
    // the defaults are written out when the scene is saved again
    let text = SceneFile::from_scene(&scene).to_toml().unwrap();
    assert!(text.contains("motion = \"dynamic\""), "{text}");
    assert!(text.contains("rolling_resistance = 0.0"), "{text}");
}

#[test]
fn a_misspelt_motion_is_refused_naming_the_field() {
    let text = MINIMAL.replace(
        "position = [0.0, 0.0, 0.05]",
        "motion = \"dynamc\"\nposition = [0.0, 0.0, 0.05]",
    );
    let err = SceneFile::from_toml(&text).unwrap().to_scene().unwrap_err();
    assert!(err.to_string().contains("bodies.motion"), "{err}");
}

/// `run.reach_growth` is off unless given, and a scene saved again keeps
/// it (written only when on).
#[test]
fn reach_growth_is_off_unless_given_and_survives_a_save() {
    let scene = SceneFile::from_toml(MINIMAL).unwrap().to_scene().unwrap();
    assert!(!scene.settings.reach_growth);
    let text = SceneFile::from_scene(&scene).to_toml().unwrap();
    assert!(!text.contains("reach_growth"), "{text}");
    let on = MINIMAL.replace("iterations = 50", "iterations = 50\nreach_growth = true");
    let scene = SceneFile::from_toml(&on).unwrap().to_scene().unwrap();
    assert!(scene.settings.reach_growth);
    let again = SceneFile::from_toml(&SceneFile::from_scene(&scene).to_toml().unwrap())
        .unwrap()
        .to_scene()
        .unwrap();
    assert!(again.settings.reach_growth);
}

//! The contact law in scene files: Hertz by default, linear with a
//! stiffness, rigid with `rigid_contacts = true`, never both.

use ndem_math::ContactLaw;
use ndem_scenes::builders::{self, CannonballSpec};
use ndem_scenes::{SceneError, file::SceneFile};

fn cannonball() -> ndem_scenes::builders::Scene {
    builders::cannonball(CannonballSpec {
        base: 3,
        two_species: false,
        seed: 1,
    })
    .unwrap()
}

#[test]
fn rigid_contacts_round_trip_through_a_scene_file() {
    let mut scene = cannonball();
    scene.settings.contact_law = ContactLaw::Rigid;
    let text = SceneFile::from_scene(&scene).to_toml().unwrap();
    assert!(text.contains("rigid_contacts = true"), "{text}");
    let back = SceneFile::from_toml(&text).unwrap().to_scene().unwrap();
    assert_eq!(back.settings.contact_law, ContactLaw::Rigid);
    // the default law writes no such line
    let hertz = SceneFile::from_scene(&cannonball()).to_toml().unwrap();
    assert!(!hertz.contains("rigid_contacts"));
}

#[test]
fn rigid_and_linear_together_name_the_field() {
    let mut scene = cannonball();
    scene.settings.contact_law = ContactLaw::Linear { stiffness: 3000.0 };
    let text = SceneFile::from_scene(&scene).to_toml().unwrap();
    let text = text.replace(
        "linear_stiffness = 3000.0",
        "linear_stiffness = 3000.0\nrigid_contacts = true",
    );
    assert!(text.contains("rigid_contacts = true"), "{text}");
    match SceneFile::from_toml(&text).unwrap().to_scene() {
        Err(SceneError::Invalid { field, .. }) => assert_eq!(field, "run.rigid_contacts"),
        other => panic!("expected an invalid-field error, got {other:?}"),
    }
}

/// `run.impact_iterations` sets the impact stage's sweeps; a file without it
/// gets the stepper's default (20), and zero with the stage on is refused
/// with the field's name.
#[test]
fn impact_iterations_round_trip_and_zero_is_refused() {
    let mut scene = cannonball();
    assert_eq!(scene.settings.impact_iterations, 20);
    scene.settings.impact_iterations = 150;
    let text = SceneFile::from_scene(&scene).to_toml().unwrap();
    assert!(text.contains("impact_iterations = 150"), "{text}");
    let back = SceneFile::from_toml(&text).unwrap().to_scene().unwrap();
    assert_eq!(back.settings.impact_iterations, 150);
    let without = text.replace("impact_iterations = 150\n", "");
    let back = SceneFile::from_toml(&without).unwrap().to_scene().unwrap();
    assert_eq!(back.settings.impact_iterations, 20);
    let zero = text.replace("impact_iterations = 150", "impact_iterations = 0");
    let err = SceneFile::from_toml(&zero).unwrap().to_scene().unwrap_err();
    assert!(err.to_string().contains("impact_iterations"), "{err}");
}

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

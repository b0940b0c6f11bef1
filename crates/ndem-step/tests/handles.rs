//! The world's typed handles and bulk insertion.

use ndem_math::{Material, Vec3};
use ndem_step::{BodyDesc, BodyId, MaterialId, StepError, World};

fn world() -> (World, MaterialId) {
    let mut w = World::new(Vec::new(), Vec3::new(0.0, 0.0, -9.81)).unwrap();
    let m = w.add_material(Material::default()).unwrap();
    (w, m)
}

#[test]
fn handles_name_what_the_world_added() {
    let (mut w, m) = world();
    assert_eq!(m, MaterialId::from_index(0));
    let floor = w.add_body(BodyDesc::floor(m)).unwrap();
    let at = |k: usize| Vec3::new(0.02 * k as f64, 0.0, 0.01);
    let balls = w.add_spheres(0.005, m, (0..5).map(at)).unwrap();
    assert_eq!((floor.index(), balls.len()), (0, 5));
    assert_eq!(balls.first(), Some(BodyId::from_index(1)));
    assert!(!balls.contains(floor));
    for (k, b) in balls.iter().enumerate() {
        assert_eq!(w.position(b), at(k));
        assert_eq!(w.position(b), w.positions()[b.index()]);
    }
    assert_eq!(w.body_ids().collect::<Vec<_>>().len(), 6);
    assert_eq!(w.material_ids().collect::<Vec<_>>(), vec![m]);
}

/// A bulk insertion with one bad body adds none, and the error names the
/// index the bad body would have had.
#[test]
fn a_bulk_insertion_is_all_or_none() {
    let (mut w, m) = world();
    let sites = [Vec3::zeros(), Vec3::new(f64::NAN, 0.0, 0.0), Vec3::x()];
    let err = w.add_spheres(0.005, m, sites).unwrap_err();
    assert_eq!(
        err,
        StepError::NonFiniteState {
            field: "position",
            body: 1
        }
    );
    assert_eq!(w.len(), 0);
    let unknown = MaterialId::from_index(3);
    let err = w.add_spheres(0.005, unknown, [Vec3::zeros()]).unwrap_err();
    assert!(
        matches!(err, StepError::UnknownMaterial { material: 3, .. }),
        "{err:?}"
    );
    assert_eq!(w.len(), 0);
}

/// A handle the world does not hold is a typed error where a setter takes
/// it, and a bad material is refused when added.
#[test]
fn foreign_handles_and_bad_materials_are_typed_errors() {
    let (mut w, m) = world();
    w.add_spheres(0.005, m, [Vec3::zeros()]).unwrap();
    let err = w
        .set_position(BodyId::from_index(1), Vec3::zeros())
        .unwrap_err();
    assert!(
        matches!(err, StepError::UnknownBody { body: 1, .. }),
        "{err:?}"
    );
    let bad = Material {
        density: -1.0,
        ..Material::default()
    };
    assert!(w.add_material(bad).is_err());
    assert_eq!(w.material_ids().count(), 1);
}

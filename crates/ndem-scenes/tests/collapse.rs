//! The collapse scene and its surface-angle measurement.

use ndem_collide::Shape;
use ndem_math::{Material, Vec3};
use ndem_scenes::builders::D;
use ndem_scenes::collapse::{CollapseSpec, collapse_cube, surface_angle};
use ndem_scenes::{SceneError, SceneFile};
use ndem_step::{BodyDesc, MaterialId, World};

#[test]
fn collapse_cube_holds_the_papers_particles_behind_a_gate() {
    let (scene, cube) = collapse_cube(CollapseSpec::default()).unwrap();
    let n = scene.world.len() - cube.first_particle.index();
    assert_eq!(n, 4000);
    for p in &scene.world.positions()[cube.first_particle.index()..] {
        assert!(p.x > 0.0 && p.x < cube.side && p.y > 0.0 && p.y < cube.side);
    }
    match collapse_cube(CollapseSpec {
        stiffness: -1.0,
        ..CollapseSpec::default()
    }) {
        Err(SceneError::Invalid { field, .. }) => assert_eq!(field, "collapse.stiffness"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// Spheres stacked into a staircase of a known slope: the fitted angle
/// equals it. The bins are one diameter wide and the surface is read from
/// the highest top per bin, so a staircase of exact slope tan θ gives θ
/// back to round-off (measured error up to 1.4e-14°; bound 1e-13°).
#[test]
fn surface_angle_of_a_known_slope() {
    for degrees in [20.0f64, 30.0, 36.0, 45.0] {
        let mut w = World::new(vec![Material::default()], Vec3::new(0.0, 0.0, -9.81)).unwrap();
        let first = w.len();
        let slope = degrees.to_radians().tan();
        for i in 0..30 {
            let x = (i as f64 + 0.5) * D;
            let top = (30.0 - i as f64) * D * slope;
            // a column of spheres up to the surface
            let mut z = 0.5 * D;
            while z + 0.5 * D <= top {
                w.add_body(BodyDesc::dynamic(
                    Shape::sphere(0.5 * D).unwrap(),
                    MaterialId::from_index(0),
                    Vec3::new(x, 0.0, z),
                ))
                .unwrap();
                z += D;
            }
            w.add_body(BodyDesc::dynamic(
                Shape::sphere(0.5 * D).unwrap(),
                MaterialId::from_index(0),
                Vec3::new(x, 0.0, top - 0.5 * D),
            ))
            .unwrap();
        }
        let detached = vec![false; w.len()];
        let theta = surface_angle(&w, first, &detached);
        println!("{degrees}: error {:e}", theta - degrees);
        assert!((theta - degrees).abs() < 1e-13, "{degrees}: {theta}");
    }
}

/// The per-material stiffness survives the scene file.
#[test]
fn per_material_stiffness_round_trips_through_the_scene_file() {
    let (scene, _) = collapse_cube(CollapseSpec {
        particles: 20,
        ..CollapseSpec::default()
    })
    .unwrap();
    let file = SceneFile::from_scene(&scene);
    let text = file.to_toml().unwrap();
    assert!(text.contains("per_material_stiffness = true"), "{text}");
    assert!(text.contains("linear_stiffness = 3000.0"));
    let back = SceneFile::from_toml(&text).unwrap().to_scene().unwrap();
    assert_eq!(back.settings.contact_law, scene.settings.contact_law);
    assert_eq!(back.world.materials, scene.world.materials);
    let clash = text.replace(
        "per_material_stiffness = true",
        "per_material_stiffness = true\nrigid_contacts = true",
    );
    match SceneFile::from_toml(&clash).unwrap().to_scene() {
        Err(SceneError::Invalid { field, .. }) => assert_eq!(field, "run.per_material_stiffness"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

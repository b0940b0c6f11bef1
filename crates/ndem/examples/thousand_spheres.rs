//! A thousand spheres dropped on a floor, built by hand: a material and
//! bodies added through their typed handles (`MaterialId`, `BodyRange`),
//! the spheres in one bulk insertion, a scene with the papers' settings
//! (`Scene::new`) stepped for half a second, one error type (`ndem::Error`)
//! for every crate's errors.
//!
//! `cargo run --release -p ndem --example thousand_spheres`

use ndem::prelude::*;

fn main() -> Result<(), Error> {
    let mut world = World::new(Vec::new(), Vec3::new(0.0, 0.0, -9.81))?;
    let glass = world.add_material(Material::default())?;
    world.add_body(BodyDesc::floor(glass))?;
    let grid = |i: usize| Vec3::new((i % 10) as f64, (i / 10 % 10) as f64, (i / 100) as f64);
    let sites = (0..1000).map(|i| (grid(i) + Vec3::repeat(0.5)) * 0.0105);
    let balls = world.add_spheres(0.005, glass, sites)?;
    let mut scene = Scene {
        duration: 0.5,
        ..Scene::new("drop", world)
    };
    let mut stepper = scene.stepper()?;
    while stepper.time() < scene.duration {
        scene.step(&mut stepper)?;
    }
    let top = balls
        .iter()
        .map(|b| scene.world.position(b).z)
        .fold(0.0, f64::max);
    println!(
        "{} steps to t = {:.3} s; {} spheres, the highest at z = {top:.4} m",
        stepper.step_count(),
        stepper.time(),
        balls.len()
    );
    Ok(())
}

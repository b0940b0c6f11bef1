//! A thousand spheres dropped on a floor, built by hand: a scene with the
//! papers' settings (`Scene::new`) stepped for half a second, one error
//! type (`ndem::Error`) for every crate's errors.
//!
//! `cargo run --release -p ndem --example thousand_spheres`

use ndem::prelude::*;

fn main() -> Result<(), Error> {
    let (floor, ball) = (Shape::half_space(Vec3::z())?, Shape::sphere(0.005)?);
    let mut world = World::new(vec![Material::default()], Vec3::new(0.0, 0.0, -9.81))?;
    world.add_body(BodyDesc::fixed(floor, 0, Vec3::zeros()))?;
    for i in 0..1000 {
        let at = Vec3::new((i % 10) as f64, (i / 10 % 10) as f64, (i / 100) as f64);
        world.add_body(BodyDesc::dynamic(
            ball.clone(),
            0,
            (at + Vec3::repeat(0.5)) * 0.0105,
        ))?;
    }
    let mut scene = Scene {
        duration: 0.5,
        ..Scene::new("drop", world)
    };
    let mut stepper = scene.stepper()?;
    while stepper.time() < scene.duration {
        scene.step(&mut stepper)?;
    }
    let last = stepper.step_count();
    println!(
        "{last} steps to t = {:.3} s; {} bodies",
        stepper.time(),
        scene.world.len()
    );
    Ok(())
}

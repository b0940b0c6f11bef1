//! A downstream program against the facade only: a two-sphere stack built
//! by hand, solver and warm start swapped (one line each), a built-in scene.
use ndem::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut world = World::new(Vec::new(), -9.81 * Vec3::z())?;
    let glass = world.add_material(Material::default())?;
    world.add_body(BodyDesc::floor(glass))?;
    world.add_spheres(0.005, glass, [0.005, 0.015].map(|z| Vec3::new(0.0, 0.0, z)))?;
    let mut stepper = Stepper::with_pgs(StepSettings::default(), 50)?;
    for _ in 0..100 {
        stepper.step(&mut world)?;
    }
    stepper.set_solver(Box::new(Apgd::new(ApgdSettings::default())?));
    stepper.set_warm_start(Box::new(HistoryWarmStart::default()));
    let stats = stepper.step(&mut world)?;
    println!(
        "top at z = {:.6} m: {}",
        world.positions()[2].z,
        stats.status.name()
    );
    let mut scene = builders::builtin("column")?;
    let mut stepper = scene.stepper()?;
    for _ in 0..20 {
        scene.step(&mut stepper)?;
    }
    println!("column: t = {:.3} s", stepper.time());
    Ok(())
}

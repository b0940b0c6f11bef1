//! Static walls of the built-in scenes.

use crate::error::SceneError;
use ndem_collide::Shape;
use ndem_math::Vec3;
use ndem_step::{BodyDesc, MaterialId, World};

/// Static half-spaces of `material`, each `(normal, point)` (the normal
/// pointing into the space the bodies may occupy).
pub(crate) fn add_planes(
    world: &mut World,
    material: MaterialId,
    planes: &[(Vec3, Vec3)],
) -> Result<(), SceneError> {
    for &(n, p) in planes {
        world.add_body(BodyDesc::fixed(Shape::half_space(n)?, material, p))?;
    }
    Ok(())
}

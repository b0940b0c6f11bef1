//! Prescribed velocities of kinematic bodies over time (`[[motions]]` in
//! scene files): a gate raised once the bed has settled, a wall that
//! starts to move. The velocity is piecewise constant: from `times[k]` on
//! the body moves at `velocities[k]`; before the first time it keeps the
//! velocity it was given.

use crate::error::SceneError;
use ndem_math::{Vec3, Velocity6};
use ndem_step::{BodyId, Motion, World};
use serde::{Deserialize, Serialize};

/// The velocity table of one kinematic body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KinematicMotion {
    /// The body (an index into the scene's bodies; it must be kinematic).
    pub body: usize,
    /// Times at which a new velocity starts \[s\], strictly increasing.
    pub times: Vec<f64>,
    /// One velocity per time: `[v_x, v_y, v_z, ω_x, ω_y, ω_z]` \[m/s,
    /// rad/s\].
    pub velocities: Vec<[f64; 6]>,
}

fn invalid(field: &'static str, reason: impl Into<String>) -> SceneError {
    SceneError::Invalid {
        field,
        reason: reason.into(),
    }
}

impl KinematicMotion {
    /// From `time` on, `body` moves at `velocity`.
    pub fn starting_at(body: BodyId, time: f64, velocity: Velocity6) -> Self {
        let (v, w) = (velocity.linear, velocity.angular);
        Self {
            body: body.index(),
            times: vec![time],
            velocities: vec![[v.x, v.y, v.z, w.x, w.y, w.z]],
        }
    }

    /// Checks the table against `world`: a kinematic body, one velocity
    /// per time, finite times ≥ 0 in strictly increasing order, finite
    /// velocities.
    pub fn validate(&self, world: &World) -> Result<(), SceneError> {
        match world.motions().get(self.body) {
            Some(Motion::Kinematic) => {}
            Some(_) => {
                return Err(invalid(
                    "motions.body",
                    format!("body {} is not kinematic", self.body),
                ));
            }
            None => {
                let reason = format!("body {} does not exist ({} bodies)", self.body, world.len());
                return Err(invalid("motions.body", reason));
            }
        }
        if self.times.is_empty() || self.times.len() != self.velocities.len() {
            let reason = format!(
                "{} times and {} velocities: one velocity per time, at least one",
                self.times.len(),
                self.velocities.len()
            );
            return Err(invalid("motions.velocities", reason));
        }
        let ordered = self.times.windows(2).all(|w| w[0] < w[1]);
        let finite = self.times.iter().all(|t| t.is_finite() && *t >= 0.0);
        if !(ordered && finite) {
            return Err(invalid(
                "motions.times",
                "finite, >= 0 and strictly increasing",
            ));
        }
        if self.velocities.iter().flatten().any(|v| !v.is_finite()) {
            return Err(invalid("motions.velocities", "not finite"));
        }
        Ok(())
    }

    /// Sets the body's velocity for the step that starts at `time` (the
    /// row of the last table time not after the step's midpoint); before
    /// the first table time the body is left as it is.
    pub fn apply(&self, world: &mut World, time: f64, dt: f64) -> Result<(), SceneError> {
        self.apply_to(world, BodyId::from_index(self.body), time, dt)
    }

    /// [`Self::apply`] to `body` of `world`, the table's body under
    /// another index (a rank's local world in a distributed run).
    pub fn apply_to(
        &self,
        world: &mut World,
        body: BodyId,
        time: f64,
        dt: f64,
    ) -> Result<(), SceneError> {
        let mid = time + 0.5 * dt;
        let Some(k) = self.times.iter().rposition(|t| *t <= mid) else {
            return Ok(());
        };
        let v = self.velocities[k];
        let velocity = Velocity6::new(Vec3::new(v[0], v[1], v[2]), Vec3::new(v[3], v[4], v[5]));
        world.set_velocity(body, velocity)?;
        Ok(())
    }
}

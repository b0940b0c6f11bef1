//! Position targets of driven joints over time: a machine's pre-programmed
//! control signal (warm-starting paper, section 5: "the machine perform an
//! excavation cycle by a pre-programmed control signal to the actuators").
//!
//! A table of times and, per driven joint, target coordinates (actuator
//! lengths in m, hinge angles in rad); between rows the targets follow
//! the smoothstep `3τ² − 2τ³` (τ the fraction of the segment), so that
//! each segment starts and ends at rest and the drives never face a jump
//! in target speed (a linear ramp's corners ask a servo for unbounded
//! force); after the last row they hold. Before every step
//! [`DriveSchedule::apply`] sets each joint's position drive.

use crate::error::SceneError;
use ndem_step::{Drive, JointId, World};
use serde::{Deserialize, Serialize};

/// A table of position targets for driven joints (`[schedule]` in scene
/// files).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriveSchedule {
    /// Driven joints (indices into the world's joints).
    pub joints: Vec<usize>,
    /// Force (or torque) bound of each joint's drive [N or N m].
    pub max_force: Vec<f64>,
    /// Names of the rows' phases (for reports), one per row.
    pub phases: Vec<String>,
    /// Row times \[s\], strictly increasing.
    pub times: Vec<f64>,
    /// Targets per row, one per joint.
    pub targets: Vec<Vec<f64>>,
}

fn invalid(field: &'static str, reason: String) -> SceneError {
    SceneError::Invalid { field, reason }
}

impl DriveSchedule {
    /// Checks the table against `world`: sizes, strictly increasing finite
    /// times, finite targets, drive bounds ≥ 0, existing joints that take a
    /// position drive.
    pub fn validate(&self, world: &World) -> Result<(), SceneError> {
        let n = self.joints.len();
        if self.max_force.len() != n {
            return Err(invalid(
                "schedule.max_force",
                format!("{} bounds for {n} joints", self.max_force.len()),
            ));
        }
        if let Some(f) = self
            .max_force
            .iter()
            .find(|f| !(f.is_finite() && **f >= 0.0))
        {
            return Err(invalid(
                "schedule.max_force",
                format!("{f} is not finite and >= 0"),
            ));
        }
        if self.times.is_empty() {
            return Err(invalid("schedule.times", "no rows".into()));
        }
        if self.phases.len() != self.times.len() || self.targets.len() != self.times.len() {
            return Err(invalid(
                "schedule.targets",
                format!(
                    "{} times, {} phases and {} target rows must agree",
                    self.times.len(),
                    self.phases.len(),
                    self.targets.len()
                ),
            ));
        }
        for (k, w) in self.times.windows(2).enumerate() {
            if !(w[0].is_finite() && w[1].is_finite() && w[1] > w[0]) {
                return Err(invalid(
                    "schedule.times",
                    format!(
                        "row {}: time {} does not follow {} (must increase)",
                        k + 1,
                        w[1],
                        w[0]
                    ),
                ));
            }
        }
        for (k, row) in self.targets.iter().enumerate() {
            if row.len() != n || row.iter().any(|x| !x.is_finite()) {
                return Err(invalid(
                    "schedule.targets",
                    format!("row {k}: needs {n} finite targets, got {row:?}"),
                ));
            }
        }
        for &j in &self.joints {
            let joint = world
                .joints()
                .get(j)
                .ok_or_else(|| invalid("schedule.joints", format!("joint {j} does not exist")))?;
            let mut probe = *joint;
            probe
                .set_drive(Some(Drive::Position {
                    target: 0.0,
                    max_force: 0.0,
                }))
                .map_err(|e| invalid("schedule.joints", format!("joint {j}: {e}")))?;
        }
        Ok(())
    }

    /// Targets at `time` (smoothstep between rows, held outside).
    pub fn targets_at(&self, time: f64) -> Vec<f64> {
        let t = &self.times;
        let k = t.partition_point(|&x| x <= time);
        if k == 0 {
            return self.targets[0].clone();
        }
        if k == t.len() {
            return self.targets[k - 1].clone();
        }
        let tau = (time - t[k - 1]) / (t[k] - t[k - 1]);
        let s = tau * tau * (3.0 - 2.0 * tau);
        self.targets[k - 1]
            .iter()
            .zip(&self.targets[k])
            .map(|(a, b)| a + s * (b - a))
            .collect()
    }

    /// The phase running at `time`: a row's phase runs from the previous
    /// row's time to its own (its targets are being approached); after the
    /// last row, the last phase.
    pub fn phase_at(&self, time: f64) -> &str {
        let k = self.times.partition_point(|&x| x <= time);
        &self.phases[k.min(self.phases.len() - 1)]
    }

    /// Sets the drives for the step that ends at `time`.
    pub fn apply(&self, world: &mut World, time: f64) -> Result<(), SceneError> {
        for ((&j, target), &max_force) in self
            .joints
            .iter()
            .zip(self.targets_at(time))
            .zip(&self.max_force)
        {
            world.set_joint_drive(
                JointId::from_index(j),
                Some(Drive::Position { target, max_force }),
            )?;
        }
        Ok(())
    }
}

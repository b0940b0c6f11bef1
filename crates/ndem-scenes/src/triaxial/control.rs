//! The triaxial cell's servo: the state machine that sets the walls'
//! motor targets and force bounds before every step.

use crate::error::SceneError;
use ndem_step::{JointKind, Motor, Stepper, World};
use serde::{Deserialize, Serialize};

/// The state machine and servo of a triaxial cell. It only sets motor
/// targets and force bounds; the stepper does the rest.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriaxialControl {
    /// Wall bodies in the order −x, +x, −y, +y, −z, +z.
    pub walls: [usize; 6],
    /// Their prismatic joints (anchor → wall, axis pointing into the
    /// sample), same order.
    pub joints: [usize; 6],
    /// Half thickness of every wall \[m\].
    pub wall_half_thickness: f64,
    /// Hydrostatic (confining) stress σ_h \[Pa\] (paper: 100 Pa).
    pub confining_pressure: f64,
    /// Inward speed of each end wall during shear [m/s] (paper: 0.01).
    pub axial_speed: f64,
    /// Force bound of the end-wall motors during shear \[N\].
    pub axial_force_limit: f64,
    /// Inward target speed of force-controlled motors [m/s]; never reached,
    /// so their force saturates at σ_h A (force control).
    pub servo_speed: f64,
    /// Simulated time at which shear starts \[s\].
    pub shear_start_time: f64,
    /// Sample lengths [L_x, L_y, L_z] when shear started; set by
    /// [`TriaxialControl::apply`].
    pub shear_start_lengths: Option<[f64; 3]>,
}

/// One measurement of a triaxial cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TriaxialState {
    /// Inner sample lengths [L_x, L_y, L_z] \[m\].
    pub lengths: [f64; 3],
    /// Wall stresses [σ_x, σ_y, σ_z] \[Pa\]: mean inward motor force of the
    /// two walls of an axis over the current cross-section.
    pub stress: [f64; 3],
    /// Wall stresses from the contact forces on the walls (mean outward
    /// normal force of the two walls of an axis over the cross-section)
    /// \[Pa\]: equals [`TriaxialState::stress`] in equilibrium; the
    /// difference is the walls' inertia.
    pub contact_stress: [f64; 3],
    /// Deviator σ_z − σ_h \[Pa\].
    pub deviator: f64,
    /// Axial strain 1 − L_z / L_z0 (0 before shear).
    pub axial_strain: f64,
    /// Lateral strain (L_x + L_y)/(L_x0 + L_y0) − 1 (0 before shear;
    /// positive when the sample bulges).
    pub lateral_strain: f64,
    /// Volumetric strain 1 − V / V0 (0 before shear).
    pub volumetric_strain: f64,
    /// `true` once shear has started.
    pub shearing: bool,
}

impl TriaxialControl {
    /// Inner sample lengths [L_x, L_y, L_z] between opposite wall faces.
    pub fn lengths(&self, world: &World) -> [f64; 3] {
        let p = world.positions();
        [0, 1, 2].map(|k| {
            p[self.walls[2 * k + 1]][k] - p[self.walls[2 * k]][k] - 2.0 * self.wall_half_thickness
        })
    }

    /// `true` once shear has started at `time`.
    pub fn shearing(&self, time: f64) -> bool {
        time >= self.shear_start_time
    }

    /// Sets the motors for the next step at simulated time `time`: σ_h A on
    /// all walls while consolidating; then the end walls at the axial speed.
    pub fn apply(&mut self, world: &mut World, time: f64) -> Result<(), SceneError> {
        let l = self.lengths(world);
        if !l.iter().all(|x| x.is_finite() && *x > 0.0) {
            return Err(SceneError::Invalid {
                field: "triaxial",
                reason: format!("the walls crossed (sample lengths {l:?})"),
            });
        }
        let area = [l[1] * l[2], l[0] * l[2], l[0] * l[1]];
        let shearing = self.shearing(time);
        if shearing && self.shear_start_lengths.is_none() {
            self.shear_start_lengths = Some(l);
        }
        let joints = self.joints;
        let n_joints = world.joints().len();
        for (w, &j) in joints.iter().enumerate() {
            if j >= n_joints {
                return Err(SceneError::Invalid {
                    field: "triaxial.joints",
                    reason: format!("joint {j} does not exist"),
                });
            }
            let k = w / 2;
            let motor = if shearing && k == 2 {
                Motor {
                    target_speed: self.axial_speed,
                    max_force: self.axial_force_limit,
                }
            } else {
                Motor {
                    target_speed: self.servo_speed,
                    max_force: self.confining_pressure * area[k],
                }
            };
            let joint = &mut world.joints_mut()[j];
            match &mut joint.kind {
                JointKind::Prismatic { motor: m, .. } => *m = Some(motor),
                JointKind::Lock
                | JointKind::Ball
                | JointKind::Hinge { .. }
                | JointKind::Actuator { .. } => {
                    return Err(SceneError::Invalid {
                        field: "triaxial.joints",
                        reason: format!("joint {j} is not prismatic"),
                    });
                }
            }
        }
        Ok(())
    }

    /// Measures stresses and strains after a step of `stepper`.
    pub fn measure(&self, world: &World, stepper: &Stepper) -> TriaxialState {
        let l = self.lengths(world);
        let area = [l[1] * l[2], l[0] * l[2], l[0] * l[1]];
        let reactions = stepper.joint_reactions(world);
        let inward = |w: usize| -> f64 {
            // the drive force pushes the wall (body b) along +axis, inward
            reactions
                .get(self.joints[w])
                .and_then(|r| r.drive_force)
                .unwrap_or(f64::NAN)
        };
        let stress = [0, 1, 2].map(|k| 0.5 * (inward(2 * k) + inward(2 * k + 1)) / area[k]);
        let contacts = stepper.contact_forces();
        let pushed = |w: usize| {
            let k = w / 2;
            let outward = if w.is_multiple_of(2) { -1.0 } else { 1.0 };
            outward * crate::measure::force_on_body(&contacts, self.walls[w])[k]
        };
        let contact_stress = [0, 1, 2].map(|k| 0.5 * (pushed(2 * k) + pushed(2 * k + 1)) / area[k]);
        let (axial, lateral, volumetric) = match self.shear_start_lengths {
            Some(l0) => (
                1.0 - l[2] / l0[2],
                (l[0] + l[1]) / (l0[0] + l0[1]) - 1.0,
                1.0 - (l[0] * l[1] * l[2]) / (l0[0] * l0[1] * l0[2]),
            ),
            None => (0.0, 0.0, 0.0),
        };
        TriaxialState {
            lengths: l,
            stress,
            contact_stress,
            deviator: stress[2] - self.confining_pressure,
            axial_strain: axial,
            lateral_strain: lateral,
            volumetric_strain: volumetric,
            shearing: self.shear_start_lengths.is_some(),
        }
    }
}

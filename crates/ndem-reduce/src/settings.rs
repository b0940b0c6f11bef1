//! Reduction settings: the thresholds of the adaptive-model-reduction
//! paper's Table 2, named, with the paper's values as defaults.

use crate::ReduceError;
use ndem_collide::Shape;
use ndem_math::{Quat, SettingError, Vec3};
use ndem_step::BodyId;

/// Merge conditions (paper, eqs. 26-28, and Table 2's acceleration
/// thresholds). A contact passes when its relative velocity after the
/// continuous solve, `G v_{i+1}`, lies within the velocity bounds and its
/// relative acceleration `G (v_{i+1} − v_i)/Δt` within the acceleration
/// bounds (Table 2 lists the latter without defining them; this is the
/// natural reading, `docs/reduction.md`, "Merge").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MergeThresholds {
    /// `ξ_nv^{i-mrg}`: largest approach speed [m/s] (paper 2.5 mm/s).
    pub normal_incident: f64,
    /// `ξ_nv^{s-mrg}`: largest separation speed [m/s] (paper 2.5 mm/s).
    pub normal_separating: f64,
    /// `ξ_tv^{mrg}`: largest sliding speed [m/s] (paper 2.5 mm/s).
    pub tangential: f64,
    /// `ξ_rv^{mrg}`: largest relative angular speed [rad/s] (paper 0.5).
    pub rolling: f64,
    /// `ξ_na^{i-mrg}`: largest approach acceleration [m/s²] (paper 5).
    pub normal_incident_acceleration: f64,
    /// `ξ_na^{s-mrg}`: largest separating acceleration [m/s²] (paper 5).
    pub normal_separating_acceleration: f64,
    /// `ξ_ta^{mrg}`: largest tangential acceleration [m/s²] (paper 5).
    pub tangential_acceleration: f64,
    /// `ξ_ra^{mrg}`: largest relative angular acceleration [rad/s²]
    /// (paper ∞).
    pub rolling_acceleration: f64,
}

impl Default for MergeThresholds {
    fn default() -> Self {
        Self {
            normal_incident: 2.5e-3,
            normal_separating: 2.5e-3,
            tangential: 2.5e-3,
            rolling: 0.5,
            normal_incident_acceleration: 5.0,
            normal_separating_acceleration: 5.0,
            tangential_acceleration: 5.0,
            rolling_acceleration: f64::INFINITY,
        }
    }
}

/// Contact split (paper, eqs. 29-31): a contact of an aggregate member
/// whose relative velocity at the start of the step leaves these bounds
/// splits the member and its neighbours up to `depth` contacts away.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContactSplit {
    /// `ξ_nv^{i-c}`: approach speed that splits [m/s] (paper 0.15).
    pub impact: f64,
    /// `ξ_nv^{s-c}`: separation speed that splits [m/s] (paper ∞: off, as
    /// too sensitive).
    pub separation: f64,
    /// `ξ_tv^c`: sliding speed that splits [m/s] (paper 0.15).
    pub tangential: f64,
    /// `ξ_rv^c`: relative angular speed that splits [rad/s] (paper ∞).
    pub rolling: f64,
    /// `N_c-spl`: split depth along the contact network (paper 2: the
    /// member hit and its contact neighbours). At least 1.
    pub depth: usize,
    /// `ξ_δ^c`: overlap of a member's contact, as a fraction of the
    /// smaller radius of curvature of its two bodies (a sphere's radius;
    /// `Shape::curvature_radius`), that splits it
    /// (ours, not the paper's; default 0.2, ∞: off). A member pressed
    /// slowly into a body the rigid aggregate cannot give way to overlaps
    /// more on every step while no speed threshold fires; 0.2 of the radius is several times the
    /// overlap of a resting bed's most loaded contacts and a fifth of the
    /// overlap at which a step stops (`docs/reduction.md`, "Split").
    pub overlap: f64,
}

impl Default for ContactSplit {
    fn default() -> Self {
        Self {
            impact: 0.15,
            separation: f64::INFINITY,
            tangential: 0.15,
            rolling: f64::INFINITY,
            depth: 2,
            overlap: 0.2,
        }
    }
}

/// Trial-solve split (paper, section 3.2.2, eqs. 32-36): a background PGS
/// solve of the unfolded (full) model with `iterations` sweeps, warm
/// started from the impulse history; members whose contacts leave the
/// velocity bounds (if `velocity_test`) or whose force balance
/// `|f_e + f_c| / (|f_e| + |f_c|)` reaches `force_balance` are split
/// (the paper writes eqs. 35-36 as the condition to keep a member; λ is an
/// impulse, so `f_c = (Gᵀλ)/Δt`). A member none of whose contacts carries
/// a normal impulse in the trial is *unloaded* (a freely falling aggregate,
/// whose members all score 1): the force test does not split it, since
/// rigid co-motion is exact without internal forces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrialSplit {
    /// `N_it^tr`: PGS sweeps of the trial solve (paper 50 or 100).
    pub iterations: usize,
    /// `ξ_nv^{i-tr}` [m/s] (paper 2.6, possibly 0.26).
    pub normal_incident: f64,
    /// `ξ_nv^{s-tr}` [m/s] (paper 0.26).
    pub normal_separating: f64,
    /// `ξ_tv^{tr}` [m/s] (paper 0.26).
    pub tangential: f64,
    /// `ξ_rv^{tr}` [rad/s] (paper ∞).
    pub rolling: f64,
    /// `ξ_f^{tr}` (paper 0.15 or 0.25).
    pub force_balance: f64,
    /// `ξ_τ^{tr}` (paper ∞).
    pub torque_balance: f64,
    /// Apply the velocity tests (runs "fv"), or only force balance ("f").
    pub velocity_test: bool,
    /// Steps from one trial solve to the next (at least 1; the paper's
    /// runs: 1, a trial every step). With `k > 1` the trial runs on the
    /// steps whose count ([`ndem_step::Stepper::step_count`] before the
    /// step) is a multiple of `k`, and its cost is spread over `k` steps
    /// (the paper's eq. 40: the overhead `δ` divided by `k`); a split it
    /// calls for comes up to `k − 1` steps later.
    pub every: usize,
    /// The partial background solve (paper eq. 40, a fraction `β < 1` of
    /// the system): with `Some(d)` only the members within `d` contact
    /// layers of their aggregate's boundary move in the trial solve (layer
    /// 1: members touching a body that is not a member of their aggregate,
    /// or on its free surface; [`crate::trial::held_members`]); deeper
    /// members move as one rigid body with their mass, their mutual
    /// contacts leave the solve, and the trial splits none of them. `None`
    /// (the default, the paper's runs): the whole unfolded model.
    pub depth: Option<usize>,
    /// Restricts each trial solve to the members whose load may have
    /// changed since the last step: layer 1 are then the *disturbed*
    /// members ([`crate::trial::disturbed_members`]: those with an outer
    /// contact that is new to the stepper's impulse history or whose
    /// relative velocity lies outside the merge velocity thresholds of
    /// eqs. 26-27) instead of the aggregate's boundary, and [`Self::depth`]
    /// counts layers from them (absent: every member their aggregate
    /// connects them to). The other members move in the trial as one rigid
    /// body per aggregate and are not split; with no member disturbed the
    /// trial does not run. A change of the external load alone (gravity,
    /// a user force) is seen one step later, through the motion it causes.
    /// `false` (the default, the paper's runs): every aggregate on every
    /// trial.
    pub disturbed_only: bool,
}

impl TrialSplit {
    /// Whether the trial solve runs on the step that follows `step`
    /// completed steps ([`Self::every`]).
    pub fn runs_at(&self, step: u64) -> bool {
        step.is_multiple_of(self.every.max(1) as u64)
    }

    /// Whether the trial solves only part of the unfolded model
    /// ([`Self::depth`] or [`Self::disturbed_only`]), which needs the
    /// contacts of one process.
    pub fn is_partial(&self) -> bool {
        self.depth.is_some() || self.disturbed_only
    }

    /// The same trial over the whole unfolded model (the paper's): no
    /// depth, every aggregate.
    pub fn whole(self) -> Self {
        Self {
            depth: None,
            disturbed_only: false,
            ..self
        }
    }
}

impl Default for TrialSplit {
    /// The paper's tr-150-50-fv run with ξ_f = 0.15.
    fn default() -> Self {
        Self {
            iterations: 50,
            normal_incident: 2.6,
            normal_separating: 0.26,
            tangential: 0.26,
            rolling: f64::INFINITY,
            force_balance: 0.15,
            torque_balance: f64::INFINITY,
            velocity_test: true,
            every: 1,
            depth: None,
            disturbed_only: false,
        }
    }
}

/// A split sensor (paper, section 3.2.3): a transparent shape that frees
/// every aggregate member whose centre lies inside it, grown by the
/// member's bounding radius.
#[derive(Debug, Clone)]
pub struct SensorSplit {
    /// Sensor geometry (a sphere, box or cylinder).
    pub shape: Shape,
    /// Centre \[m\].
    pub position: Vec3,
    /// Orientation.
    pub orientation: Quat,
    /// The body the sensor moves with (a machine part whose surroundings
    /// must stay resolved, such as an excavator's bucket), or `None` for a
    /// sensor that stays where it is put.
    pub follows: Option<SensorMount>,
}

/// Where a sensor sits on the body it moves with: before every step's
/// split its pose is the body's pose composed with this one, `x_s = x_b +
/// q_b r` and `q_s = q_b q_r` ([`ReductionSettings::follow_bodies`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SensorMount {
    /// The body.
    pub body: BodyId,
    /// The sensor's centre in the body's frame, `r` \[m\].
    pub offset: Vec3,
    /// The sensor's orientation relative to the body's, `q_r`.
    pub rotation: Quat,
}

impl SensorSplit {
    /// A sensor at `position` with `orientation`, staying there (unless
    /// moved by [`ReductionSettings::move_sensor`]).
    pub fn fixed(shape: Shape, position: Vec3, orientation: Quat) -> Self {
        Self {
            shape,
            position,
            orientation,
            follows: None,
        }
    }

    /// A sensor carried by `body` at `offset` in its frame, centred on
    /// the body's centre for a zero offset; its pose is set from the
    /// body's before each step.
    pub fn following(shape: Shape, body: BodyId, offset: Vec3) -> Self {
        Self {
            shape,
            position: Vec3::zeros(),
            orientation: Quat::identity(),
            follows: Some(SensorMount {
                body,
                offset,
                rotation: Quat::identity(),
            }),
        }
    }
}

/// Everything the reducer needs.
#[derive(Debug, Clone)]
pub struct ReductionSettings {
    /// Merge conditions.
    pub merge: MergeThresholds,
    /// Contact split, or `None` for off.
    pub contact_split: Option<ContactSplit>,
    /// Trial-solve split, or `None` for off.
    pub trial_split: Option<TrialSplit>,
    /// Split sensors.
    pub sensors: Vec<SensorSplit>,
    /// Fewest bodies in an aggregate (at least 2).
    pub min_aggregate_size: usize,
    /// Simulated time \[s\] before which nothing merges (the paper's
    /// collapse: "the particles are left to come to rest before model
    /// reduction is applied"); 0 merges from the first step.
    pub start_time: f64,
    /// Machines carry their load merged: a merge group (free particles
    /// and aggregates) whose only touching contacts outside the group
    /// are merge-passing contacts with one jointed body (an excavator's
    /// bucket, or the aggregate that already holds it) joins that body's
    /// aggregate. A group that also touches anything else (the bed, the
    /// ground, a wall, another group, a second machine part) stays apart,
    /// so a bucket resting in a bed never drags the bed along. Off by
    /// default (the paper leaves merge conditions for articulated bodies
    /// open).
    pub carried_loads: bool,
    /// Aggregates merge with static geometry (the paper's section 2: "particles
    /// and rigid aggregates may also merge with rigid bodies or kinematic
    /// geometries"): a merge group with a merge-passing touching contact
    /// with a static body (a floor, a wall; not one whose surface moves)
    /// becomes an *anchored* aggregate, held at rest on a static host. Its
    /// contacts with static bodies leave the solve, and bodies resting on
    /// it meet an immovable body. It splits as any other (contact, trial,
    /// sensor); the part of it that still touches static geometry stays
    /// anchored, the rest becomes a dynamic aggregate starting at rest.
    /// Merging with static geometry gives the group's momentum (within
    /// the merge thresholds) to the ground: mass and momentum are
    /// conserved only by merges with no static contact. Off by default.
    pub merge_with_static: bool,
}

impl Default for ReductionSettings {
    /// The paper's Table 2 with contact split on and no sensors.
    fn default() -> Self {
        Self {
            merge: MergeThresholds::default(),
            contact_split: Some(ContactSplit::default()),
            trial_split: None,
            sensors: Vec::new(),
            min_aggregate_size: 2,
            start_time: 0.0,
            carried_loads: false,
            merge_with_static: false,
        }
    }
}

fn threshold(field: &'static str, x: f64) -> Result<(), ReduceError> {
    if x.is_nan() || x < 0.0 {
        Err(ReduceError::InvalidSettings {
            field,
            reason: "must be >= 0 (infinity switches the test off)",
        })
    } else {
        Ok(())
    }
}

impl ReductionSettings {
    /// Sets the pose of every sensor that moves with a body from that
    /// body's pose, `pose(body)` (position, orientation); `None` for a
    /// body that is not there is a typed error naming the field.
    pub fn follow_bodies(
        &mut self,
        pose: impl Fn(BodyId) -> Option<(Vec3, Quat)>,
    ) -> Result<(), ReduceError> {
        for s in &mut self.sensors {
            let Some(mount) = s.follows else { continue };
            let (x, q) = pose(mount.body).ok_or(ReduceError::InvalidSettings {
                field: "sensors.follows",
                reason: "the body the sensor moves with is not in the world",
            })?;
            s.position = x + q * mount.offset;
            s.orientation = q * mount.rotation;
        }
        Ok(())
    }

    /// Moves sensor `index` to `position` and `orientation` (a sensor that
    /// follows a machine part the caller moves it with). Errors on a
    /// missing sensor, on one that moves with a body by itself
    /// ([`SensorSplit::follows`]), or on a non-finite pose.
    pub fn move_sensor(
        &mut self,
        index: usize,
        position: Vec3,
        orientation: Quat,
    ) -> Result<(), ReduceError> {
        if !(position.iter().all(|x| x.is_finite())
            && orientation.coords.iter().all(|x| x.is_finite()))
        {
            return Err(ReduceError::InvalidSettings {
                field: "sensors.position",
                reason: "must be finite",
            });
        }
        let sensor = self
            .sensors
            .get_mut(index)
            .ok_or(ReduceError::InvalidSettings {
                field: "sensors",
                reason: "no sensor with this index",
            })?;
        if sensor.follows.is_some() {
            return Err(ReduceError::InvalidSettings {
                field: "sensors.follows",
                reason: "this sensor moves with its body; it takes no pose from outside",
            });
        }
        sensor.position = position;
        sensor.orientation = orientation;
        Ok(())
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), ReduceError> {
        let m = &self.merge;
        for (field, x) in [
            ("merge.normal_incident", m.normal_incident),
            ("merge.normal_separating", m.normal_separating),
            ("merge.tangential", m.tangential),
            ("merge.rolling", m.rolling),
            (
                "merge.normal_incident_acceleration",
                m.normal_incident_acceleration,
            ),
            (
                "merge.normal_separating_acceleration",
                m.normal_separating_acceleration,
            ),
            ("merge.tangential_acceleration", m.tangential_acceleration),
            ("merge.rolling_acceleration", m.rolling_acceleration),
        ] {
            threshold(field, x)?;
        }
        if let Some(c) = &self.contact_split {
            for (field, x) in [
                ("contact_split.impact", c.impact),
                ("contact_split.separation", c.separation),
                ("contact_split.tangential", c.tangential),
                ("contact_split.rolling", c.rolling),
                ("contact_split.overlap", c.overlap),
            ] {
                threshold(field, x)?;
            }
            ReduceError::require(
                c.depth != 0,
                "contact_split.depth",
                "must be at least 1 when contact split is on",
            )?;
        }
        if let Some(t) = &self.trial_split {
            for (field, x) in [
                ("trial_split.normal_incident", t.normal_incident),
                ("trial_split.normal_separating", t.normal_separating),
                ("trial_split.tangential", t.tangential),
                ("trial_split.rolling", t.rolling),
                ("trial_split.force_balance", t.force_balance),
                ("trial_split.torque_balance", t.torque_balance),
            ] {
                threshold(field, x)?;
            }
            ReduceError::require(
                t.iterations != 0,
                "trial_split.iterations",
                "must be at least 1 when trial split is on",
            )?;
            ReduceError::require(
                t.every != 0,
                "trial_split.every",
                "must be at least 1 when trial split is on",
            )?;
            ReduceError::require(
                t.depth != Some(0),
                "trial_split.depth",
                "must be at least 1 (the members touching the aggregate's outside) or absent",
            )?;
        }
        ReduceError::require(
            self.start_time.is_finite() && self.start_time >= 0.0,
            "start_time",
            "must be finite and >= 0",
        )?;
        for s in &self.sensors {
            s.shape
                .validate()
                .map_err(|_| ReduceError::InvalidSettings {
                    field: "sensors.shape",
                    reason: "degenerate shape (radius and extents must be finite and > 0)",
                })?;
            if !matches!(
                s.shape,
                Shape::Sphere { .. } | Shape::Box { .. } | Shape::Cylinder { .. }
            ) {
                return Err(ReduceError::InvalidSettings {
                    field: "sensors.shape",
                    reason: "a sensor is a sphere, box or cylinder",
                });
            }
            if !(s.position.iter().all(|x| x.is_finite())
                && s.orientation.coords.iter().all(|x| x.is_finite()))
            {
                return Err(ReduceError::InvalidSettings {
                    field: "sensors.position",
                    reason: "must be finite",
                });
            }
            if let Some(m) = &s.follows
                && !(m.offset.iter().all(|x| x.is_finite())
                    && m.rotation.coords.iter().all(|x| x.is_finite()))
            {
                return Err(ReduceError::InvalidSettings {
                    field: "sensors.follows.offset",
                    reason: "must be finite",
                });
            }
        }
        ReduceError::require(
            self.min_aggregate_size >= 2,
            "min_aggregate_size",
            "an aggregate has at least 2 bodies",
        )?;
        Ok(())
    }
}

impl SensorSplit {
    /// Whether a body centred at `x` with bounding radius `r` overlaps the
    /// sensor (centre inside the sensor grown by `r`).
    pub fn overlaps(&self, x: &Vec3, r: f64) -> bool {
        let local = self.orientation.inverse() * (x - self.position);
        match self.shape {
            Shape::Sphere { radius } => local.norm() <= radius + r,
            Shape::Box { half_extents } => {
                let d = local.abs() - half_extents;
                let outside = d.map(|c| c.max(0.0));
                outside.norm() <= r
            }
            Shape::Cylinder {
                radius,
                half_height,
            } => {
                let radial = (local.x.hypot(local.y) - radius).max(0.0);
                let axial = (local.z.abs() - half_height).max(0.0);
                radial.hypot(axial) <= r
            }
            _ => false,
        }
    }
}

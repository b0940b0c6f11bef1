//! The `[reduction]` table of scene files: adaptive model reduction
//! settings (adaptive-model-reduction paper, Table 2). Every field has the
//! paper's value as default, so `[reduction]` alone switches reduction on
//! with the paper's thresholds and contact split.

use crate::error::SceneError;
use crate::shape_spec::ShapeSpec;
use ndem_math::{Quat, Vec3};
use ndem_reduce::{
    ContactSplit, MergeThresholds, ReductionSettings, SensorMount, SensorSplit, TrialSplit,
};
use ndem_step::BodyId;
use serde::{Deserialize, Serialize};

/// Declares a scene-file table that mirrors a settings struct of
/// `ndem-reduce`: the same fields, listed once here, and the conversions.
/// `plain` tables convert both ways with `From`; `toggled` ones add an
/// `enabled` switch and convert from and to `Option<settings>`.
macro_rules! mirror {
    (@table $(#[$m:meta])* $spec:ident { $($extra:tt)* } { $($(#[$fm:meta])* $f:ident: $t:ty,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct $spec {
            $($extra)*
            $($(#[$fm])* pub $f: $t,)*
        }
    };
    (plain $(#[$m:meta])* $spec:ident mirrors $settings:ident { $($(#[$fm:meta])* $f:ident: $t:ty,)* }) => {
        mirror!(@table $(#[$m])* $spec {} { $($(#[$fm])* $f: $t,)* });
        impl From<$settings> for $spec {
            fn from(s: $settings) -> Self {
                Self { $($f: s.$f,)* }
            }
        }
        impl From<$spec> for $settings {
            fn from(s: $spec) -> Self {
                Self { $($f: s.$f,)* }
            }
        }
    };
    (toggled $(#[$m:meta])* $spec:ident mirrors $settings:ident { $($(#[$fm:meta])* $f:ident: $t:ty,)* }) => {
        mirror!(@table $(#[$m])* $spec {
            /// On or off.
            pub enabled: bool,
        } { $($(#[$fm])* $f: $t,)* });
        impl $spec {
            fn of(s: Option<$settings>) -> Self {
                let enabled = s.is_some();
                let s = s.unwrap_or_default();
                Self { enabled, $($f: s.$f,)* }
            }

            fn to_settings(self) -> Option<$settings> {
                self.enabled.then_some($settings { $($f: self.$f,)* })
            }
        }
    };
}

mirror!(plain
    /// `[reduction.merge]`: eqs. 26-28 and Table 2's acceleration thresholds.
    MergeSpec mirrors MergeThresholds {
        /// `ξ_nv^{i-mrg}` [m/s].
        #[serde(with = "threshold")]
        normal_incident: f64,
        /// `ξ_nv^{s-mrg}` [m/s].
        #[serde(with = "threshold")]
        normal_separating: f64,
        /// `ξ_tv^{mrg}` [m/s].
        #[serde(with = "threshold")]
        tangential: f64,
        /// `ξ_rv^{mrg}` [rad/s].
        #[serde(with = "threshold")]
        rolling: f64,
        /// `ξ_na^{i-mrg}` [m/s²].
        #[serde(with = "threshold")]
        normal_incident_acceleration: f64,
        /// `ξ_na^{s-mrg}` [m/s²].
        #[serde(with = "threshold")]
        normal_separating_acceleration: f64,
        /// `ξ_ta^{mrg}` [m/s²].
        #[serde(with = "threshold")]
        tangential_acceleration: f64,
        /// `ξ_ra^{mrg}` [rad/s²].
        #[serde(with = "threshold")]
        rolling_acceleration: f64,
    }
);

impl Default for MergeSpec {
    fn default() -> Self {
        MergeThresholds::default().into()
    }
}

mirror!(toggled
    /// `[reduction.contact_split]`: eqs. 29-31.
    ContactSplitSpec mirrors ContactSplit {
        /// `ξ_nv^{i-c}` [m/s].
        #[serde(with = "threshold")]
        impact: f64,
        /// `ξ_nv^{s-c}` [m/s] (`inf`: off).
        #[serde(with = "threshold")]
        separation: f64,
        /// `ξ_tv^c` [m/s].
        #[serde(with = "threshold")]
        tangential: f64,
        /// `ξ_rv^c` [rad/s].
        #[serde(with = "threshold")]
        rolling: f64,
        /// `N_c-spl`.
        depth: usize,
        /// `ξ_δ^c`: overlap that splits, relative to the radius (`inf`: off).
        #[serde(with = "threshold")]
        overlap: f64,
    }
);

impl Default for ContactSplitSpec {
    fn default() -> Self {
        Self::of(Some(ContactSplit::default()))
    }
}

mirror!(toggled
    /// `[reduction.trial_split]`: eqs. 32-36 (off unless `enabled`).
    TrialSplitSpec mirrors TrialSplit {
        /// `N_it^tr`.
        iterations: usize,
        /// `ξ_nv^{i-tr}` [m/s].
        #[serde(with = "threshold")]
        normal_incident: f64,
        /// `ξ_nv^{s-tr}` [m/s].
        #[serde(with = "threshold")]
        normal_separating: f64,
        /// `ξ_tv^{tr}` [m/s].
        #[serde(with = "threshold")]
        tangential: f64,
        /// `ξ_rv^{tr}` [rad/s].
        #[serde(with = "threshold")]
        rolling: f64,
        /// `ξ_f^{tr}`.
        #[serde(with = "threshold")]
        force_balance: f64,
        /// `ξ_τ^{tr}`.
        #[serde(with = "threshold")]
        torque_balance: f64,
        /// Velocity tests on ("fv") or off ("f").
        velocity_test: bool,
        /// Steps from one trial solve to the next.
        every: usize,
        /// Contact layers of each aggregate the trial solve moves (absent:
        /// every member, the paper's runs).
        #[serde(skip_serializing_if = "Option::is_none")]
        depth: Option<usize>,
        /// Only the members near disturbed contacts take part: `depth`
        /// counts layers from the members whose load may have changed
        /// (`false`: every aggregate, the paper's runs).
        disturbed_only: bool,
    }
);

impl Default for TrialSplitSpec {
    fn default() -> Self {
        Self::of(None)
    }
}

/// `[[reduction.sensors]]`: a split sensor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SensorSpec {
    /// Sphere, box or cylinder.
    pub shape: ShapeSpec,
    /// Centre \[m\] (in the frame of `body` when it has one).
    pub position: [f64; 3],
    /// Orientation quaternion `[w, x, y, z]` (relative to `body`'s).
    #[serde(default = "identity")]
    pub orientation: [f64; 4],
    /// The body the sensor moves with (its index among `[[bodies]]`),
    /// absent for a sensor that stays where it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<usize>,
}

fn identity() -> [f64; 4] {
    [1.0, 0.0, 0.0, 0.0]
}

/// `[reduction]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReductionSpec {
    /// Merge thresholds.
    pub merge: MergeSpec,
    /// Contact split.
    pub contact_split: ContactSplitSpec,
    /// Trial-solve split.
    pub trial_split: TrialSplitSpec,
    /// Split sensors.
    pub sensors: Vec<SensorSpec>,
    /// Fewest bodies in an aggregate.
    pub min_aggregate_size: usize,
    /// Simulated time before which nothing merges \[s\].
    pub start_time: f64,
    /// Jointed bodies take the load that rests on them alone.
    pub carried_loads: bool,
    /// Aggregates resting on static geometry merge with it.
    pub merge_with_static: bool,
}

impl Default for ReductionSpec {
    fn default() -> Self {
        Self {
            merge: MergeSpec::default(),
            contact_split: ContactSplitSpec::default(),
            trial_split: TrialSplitSpec::default(),
            sensors: Vec::new(),
            min_aggregate_size: 2,
            start_time: 0.0,
            carried_loads: false,
            merge_with_static: false,
        }
    }
}

impl ReductionSpec {
    /// The settings (validated: bad values are errors naming the field).
    pub fn to_settings(&self) -> Result<ReductionSettings, SceneError> {
        let mut sensors = Vec::new();
        for s in &self.sensors {
            let [w, x, y, z] = s.orientation;
            let shape = s.shape.to_shape().map_err(|_| SceneError::Invalid {
                field: "reduction.sensors.shape",
                reason: "degenerate sensor shape".into(),
            })?;
            let (position, orientation) = (
                Vec3::from(s.position),
                Quat::from_quaternion(nalgebra::Quaternion::new(w, x, y, z)),
            );
            sensors.push(match s.body {
                None => SensorSplit::fixed(shape, position, orientation),
                Some(body) => SensorSplit {
                    follows: Some(SensorMount {
                        body: BodyId::from_index(body),
                        offset: position,
                        rotation: orientation,
                    }),
                    ..SensorSplit::fixed(shape, Vec3::zeros(), Quat::identity())
                },
            });
        }
        let settings = ReductionSettings {
            merge: self.merge.into(),
            contact_split: self.contact_split.to_settings(),
            trial_split: self.trial_split.to_settings(),
            sensors,
            min_aggregate_size: self.min_aggregate_size,
            start_time: self.start_time,
            carried_loads: self.carried_loads,
            merge_with_static: self.merge_with_static,
        };
        settings.validate().map_err(|e| match e {
            ndem_reduce::ReduceError::InvalidSettings { field, reason } => SceneError::Invalid {
                field: reduction_field(field),
                reason: reason.into(),
            },
            other => SceneError::Invalid {
                field: "reduction",
                reason: other.to_string(),
            },
        })?;
        Ok(settings)
    }

    /// The spec of `settings` (sensor shapes must be spheres, boxes or
    /// cylinders).
    pub fn from_settings(settings: &ReductionSettings) -> Self {
        Self {
            merge: settings.merge.into(),
            contact_split: ContactSplitSpec::of(settings.contact_split),
            trial_split: TrialSplitSpec::of(settings.trial_split),
            sensors: settings
                .sensors
                .iter()
                .map(|s| {
                    // a sensor that moves with a body is written by its
                    // mount, not by the pose it has now
                    let (x, q) = match s.follows {
                        Some(m) => (m.offset, m.rotation),
                        None => (s.position, s.orientation),
                    };
                    SensorSpec {
                        shape: ShapeSpec::of_shape(&s.shape),
                        position: [x.x, x.y, x.z],
                        orientation: [q.w, q.i, q.j, q.k],
                        body: s.follows.map(|m| m.body.index()),
                    }
                })
                .collect(),
            min_aggregate_size: settings.min_aggregate_size,
            start_time: settings.start_time,
            carried_loads: settings.carried_loads,
            merge_with_static: settings.merge_with_static,
        }
    }
}

/// Checks that every sensor that moves with a body names a body of
/// `world`.
pub(crate) fn check_sensor_bodies(
    settings: &ReductionSettings,
    world: &ndem_step::World,
) -> Result<(), SceneError> {
    for s in &settings.sensors {
        if let Some(m) = s.follows
            && m.body.index() >= world.len()
        {
            return Err(SceneError::Invalid {
                field: "reduction.sensors.body",
                reason: format!(
                    "body {} does not exist (the scene has {} bodies)",
                    m.body.index(),
                    world.len()
                ),
            });
        }
    }
    Ok(())
}

/// `merge.tangential` → `reduction.merge.tangential` (the file's names).
fn reduction_field(field: &'static str) -> &'static str {
    match field {
        "merge.normal_incident" => "reduction.merge.normal_incident",
        "merge.normal_separating" => "reduction.merge.normal_separating",
        "merge.tangential" => "reduction.merge.tangential",
        "merge.rolling" => "reduction.merge.rolling",
        "merge.normal_incident_acceleration" => "reduction.merge.normal_incident_acceleration",
        "merge.normal_separating_acceleration" => "reduction.merge.normal_separating_acceleration",
        "merge.tangential_acceleration" => "reduction.merge.tangential_acceleration",
        "merge.rolling_acceleration" => "reduction.merge.rolling_acceleration",
        "contact_split.impact" => "reduction.contact_split.impact",
        "contact_split.separation" => "reduction.contact_split.separation",
        "contact_split.tangential" => "reduction.contact_split.tangential",
        "contact_split.rolling" => "reduction.contact_split.rolling",
        "contact_split.depth" => "reduction.contact_split.depth",
        "contact_split.overlap" => "reduction.contact_split.overlap",
        "trial_split.iterations" => "reduction.trial_split.iterations",
        "trial_split.normal_incident" => "reduction.trial_split.normal_incident",
        "trial_split.normal_separating" => "reduction.trial_split.normal_separating",
        "trial_split.tangential" => "reduction.trial_split.tangential",
        "trial_split.rolling" => "reduction.trial_split.rolling",
        "trial_split.force_balance" => "reduction.trial_split.force_balance",
        "trial_split.torque_balance" => "reduction.trial_split.torque_balance",
        "trial_split.every" => "reduction.trial_split.every",
        "trial_split.depth" => "reduction.trial_split.depth",
        "sensors.shape" => "reduction.sensors.shape",
        "sensors.position" | "sensors.follows.offset" => "reduction.sensors.position",
        "sensors.follows" => "reduction.sensors.body",
        "min_aggregate_size" => "reduction.min_aggregate_size",
        "start_time" => "reduction.start_time",
        _ => "reduction",
    }
}

/// A threshold: a number, or `"inf"` for a test switched off (JSON, used
/// by checkpoints, has no infinity; TOML's `inf` is also accepted).
mod threshold {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        if x.is_infinite() && *x > 0.0 {
            s.serialize_str("inf")
        } else {
            s.serialize_f64(*x)
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Value {
        Number(f64),
        Text(String),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match Value::deserialize(d)? {
            Value::Number(x) => Ok(x),
            Value::Text(t) if t == "inf" || t == "infinity" => Ok(f64::INFINITY),
            Value::Text(t) => Err(serde::de::Error::custom(format!(
                "`{t}` is not a number or \"inf\""
            ))),
        }
    }
}

/// The model-reduction paper's drum sensor "around the estimated lift
/// height" (section 4): a horizontal band at the height where the
/// material carried up by the drum wall reaches its highest point, across
/// the whole lifting half of the drum. The wall lifts on the side where
/// `Ω × r` points up (x < 0 for Ω > 0 about +y, the drum of
/// [`crate::builders::drum`]); the band is a box 8d high, from the drum's
/// axis to its wall along x and across its full width, centred in height
/// on the highest dynamic body on that side of `world` (call it once the
/// flow is established). Every member that the wall lifts to that height
/// passes through the band, whatever its distance from the axis, so a
/// rigid aggregate co-rotating with the wall is freed where it rises past
/// the lift height instead of being carried over it. `None` when no
/// dynamic body is on that side.
pub fn drum_lift_sensor(
    world: &ndem_step::World,
    spec: &crate::builders::DrumSpec,
) -> Option<SensorSplit> {
    use crate::builders::D;
    let side = -spec.omega.signum();
    let top = (0..world.len())
        .filter(|&i| {
            world.motions()[i] == ndem_step::Motion::Dynamic && world.positions()[i].x * side > 0.0
        })
        .map(|i| world.positions()[i])
        .max_by(|a, b| a.z.total_cmp(&b.z))?;
    let quarter = 0.25 * spec.diameter_d * D;
    Some(SensorSplit::fixed(
        ndem_collide::Shape::Box {
            half_extents: Vec3::new(quarter, 0.5 * spec.width_d * D + D, 4.0 * D),
        },
        Vec3::new(side * quarter, 0.0, top.z),
        Quat::identity(),
    ))
}

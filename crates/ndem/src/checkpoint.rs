//! Checkpoints: the full state needed to continue a run bit-identically —
//! the scene as data in its current state (bodies, joints, emitters with
//! their random state), the warm-start multipliers and the clock.

use ndem_math::{ContactKey, Vec3};
use ndem_scenes::{Scene, SceneFile};
use ndem_solve::{ImpulseHistory, StoredImpulse};
use ndem_step::Stepper;
use serde::{Deserialize, Serialize};

/// One stored contact impulse: `(a, b, feature, normal, friction, rolling)`.
pub type StoredContact = (u32, u32, u32, f64, [f64; 3], [f64; 3]);

/// A checkpoint (JSON on disk; floats round-trip exactly).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Format version.
    pub version: u32,
    /// The scene in its current state.
    pub scene: SceneFile,
    /// Simulated time [s].
    pub time: f64,
    /// Steps taken.
    pub step: u64,
    /// Contact impulses: `(a, b, feature, normal, friction, rolling)`.
    pub contacts: Vec<StoredContact>,
    /// Keyed generic rows: `(a, b, feature, λ)`.
    pub rows: Vec<(u32, u32, u32, f64)>,
}

impl Checkpoint {
    /// Captures a scene and its stepper.
    pub fn capture(scene: &Scene, stepper: &Stepper) -> Self {
        let h = stepper.history();
        Self {
            version: 1,
            scene: SceneFile::from_scene(scene),
            time: stepper.time(),
            step: stepper.step_count(),
            contacts: h
                .sorted_contacts()
                .into_iter()
                .map(|(k, s)| {
                    (
                        k.body_a,
                        k.body_b,
                        k.feature,
                        s.normal,
                        [s.friction.x, s.friction.y, s.friction.z],
                        [s.rolling.x, s.rolling.y, s.rolling.z],
                    )
                })
                .collect(),
            rows: h
                .sorted_rows()
                .into_iter()
                .map(|(k, l)| (k.body_a, k.body_b, k.feature, l))
                .collect(),
        }
    }

    /// Rebuilds the scene and a stepper ready to continue.
    pub fn restore(&self) -> Result<(Scene, Stepper), ndem_scenes::SceneError> {
        let scene = self.scene.to_scene()?;
        let mut stepper = scene.stepper()?;
        let mut h = ImpulseHistory::new();
        for &(a, b, f, n, t, r) in &self.contacts {
            h.insert(
                ContactKey::new(a, b, f),
                StoredImpulse {
                    normal: n,
                    friction: Vec3::new(t[0], t[1], t[2]),
                    rolling: Vec3::new(r[0], r[1], r[2]),
                },
            );
        }
        for &(a, b, f, l) in &self.rows {
            h.insert_row(ContactKey::new(a, b, f), l);
        }
        stepper.set_history(h);
        stepper.set_clock(self.time, self.step);
        Ok((scene, stepper))
    }

    /// JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses JSON text.
    pub fn from_json(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}

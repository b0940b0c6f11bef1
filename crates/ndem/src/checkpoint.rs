//! Checkpoints: the full state needed to continue a run bit-identically —
//! the scene as data in its current state (bodies, joints, emitters with
//! their random state), the warm-start multipliers and the clock.

use ndem_math::{ContactKey, Vec3};
use ndem_scenes::file::BodySpec;
use ndem_scenes::{Scene, SceneFile};
use ndem_solve::{ImpulseHistory, StoredImpulse};
use ndem_step::Stepper;
use serde::{Deserialize, Serialize};
use std::io::BufRead;
use std::path::Path;

/// One stored contact impulse: `(a, b, feature, normal, friction, rolling)`.
pub type StoredContact = (u32, u32, u32, f64, [f64; 3], [f64; 3]);

pub mod binary;

pub use binary::MAGIC;

/// How a checkpoint file is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CheckpointFormat {
    /// JSON text (`.json`): readable, for small scenes and tests.
    #[default]
    Json,
    /// Fixed-size binary records (`.ckpt`, layout in [`binary`]): for
    /// large scenes.
    Binary,
}

impl CheckpointFormat {
    /// The file extension: `json` or `ckpt`.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Binary => "ckpt",
        }
    }

    /// The format by its name (`json`, `binary`).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "json" => Some(Self::Json),
            "binary" => Some(Self::Binary),
            _ => None,
        }
    }
}

/// The checkpoint format this version writes; [`Checkpoint::restore`]
/// reads versions 1 (no aggregates) to this one.
pub const CHECKPOINT_VERSION: u32 = 2;

/// A checkpoint (JSON on disk; floats round-trip exactly).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Format version.
    pub version: u32,
    /// The scene in its current state.
    pub scene: SceneFile,
    /// Simulated time \[s\].
    pub time: f64,
    /// Steps taken.
    pub step: u64,
    /// Contact impulses: `(a, b, feature, normal, friction, rolling)`.
    pub contacts: Vec<StoredContact>,
    /// Keyed generic rows: `(a, b, feature, λ)`.
    pub rows: Vec<(u32, u32, u32, f64)>,
    /// Members of rigid aggregates: `(member, host, offset, relative
    /// orientation [w, x, y, z])`.
    #[serde(default)]
    pub members: Vec<(usize, usize, [f64; 3], [f64; 4])>,
    /// Live aggregates: `(id, body, members)`.
    #[serde(default)]
    pub aggregates: Vec<(usize, usize, Vec<usize>)>,
    /// Retired aggregate bodies kept for reuse.
    #[serde(default)]
    pub retired_aggregates: Vec<usize>,
}

/// A stored contact impulse as a checkpoint lists it.
fn stored_contact((k, s): (ContactKey, StoredImpulse)) -> StoredContact {
    (
        k.body_a,
        k.body_b,
        k.feature,
        s.normal,
        [s.friction.x, s.friction.y, s.friction.z],
        [s.rolling.x, s.rolling.y, s.rolling.z],
    )
}

impl Checkpoint {
    /// Captures a scene and its stepper.
    pub fn capture(scene: &Scene, stepper: &mut Stepper) -> Self {
        let mut cp = Self::capture_state(scene, stepper);
        let w = &scene.world;
        cp.scene.bodies = (0..w.len()).map(|i| BodySpec::of_body(w, i)).collect();
        if let Some(h) = stepper.history() {
            cp.contacts = Vec::with_capacity(h.contact_count());
            cp.contacts.extend(h.contacts_by_key().map(stored_contact));
        }
        cp
    }

    /// [`Checkpoint::capture`] without the body list and the stored
    /// contacts (a writer streams them from the world and the history).
    fn capture_state(scene: &Scene, stepper: &mut Stepper) -> Self {
        let w = &scene.world;
        let members = (0..w.len())
            .filter_map(|i| {
                w.membership(i).map(|m| {
                    let q = m.relative_orientation;
                    (
                        i,
                        m.host,
                        [m.offset.x, m.offset.y, m.offset.z],
                        [q.w, q.i, q.j, q.k],
                    )
                })
            })
            .collect();
        let reducer = stepper
            .hooks_as::<ndem_reduce::Reducer>()
            .map(|r| r.state())
            .unwrap_or_default();
        let empty = ImpulseHistory::new();
        let h = stepper.history().unwrap_or(&empty);
        Self {
            version: CHECKPOINT_VERSION,
            members,
            aggregates: reducer
                .aggregates
                .into_iter()
                .map(|(id, a)| (id, a.body, a.members))
                .collect(),
            retired_aggregates: reducer.retired,
            scene: SceneFile::from_scene_without_bodies(scene),
            time: stepper.time(),
            step: stepper.step_count(),
            contacts: Vec::new(),
            rows: h
                .sorted_rows()
                .into_iter()
                .map(|(k, l)| (k.body_a, k.body_b, k.feature, l))
                .collect(),
        }
    }

    /// Checks what the scene file's own validation cannot: the format
    /// version, the clock, and that the stored multipliers and memberships
    /// refer to bodies of this scene with finite values (a checkpoint
    /// edited or paired with another scene's history is refused).
    pub fn validate(&self, bodies: usize) -> Result<(), ndem_scenes::SceneError> {
        let invalid = |field: &'static str, reason: String| {
            Err(ndem_scenes::SceneError::Invalid { field, reason })
        };
        if self.version == 0 || self.version > CHECKPOINT_VERSION {
            return invalid(
                "checkpoint.version",
                format!(
                    "{} is not a checkpoint format this ndem reads (1 to {CHECKPOINT_VERSION})",
                    self.version
                ),
            );
        }
        if !(self.time.is_finite() && self.time >= 0.0) {
            return invalid(
                "checkpoint.time",
                format!("{} must be finite and >= 0", self.time),
            );
        }
        let body = |i: u32| (i as usize) < bodies;
        for (k, &(a, b, _, n, t, r)) in self.contacts.iter().enumerate() {
            if !(body(a) && body(b)) {
                return invalid(
                    "checkpoint.contacts",
                    format!("entry {k} refers to body {a} or {b}; the scene has {bodies} bodies"),
                );
            }
            if !(n.is_finite() && t.iter().chain(&r).all(|x| x.is_finite())) {
                return invalid("checkpoint.contacts", format!("entry {k} is not finite"));
            }
        }
        for (k, &(a, b, _, l)) in self.rows.iter().enumerate() {
            if !(body(a) && body(b) && l.is_finite()) {
                return invalid(
                    "checkpoint.rows",
                    format!("entry {k} refers to a body outside the scene or is not finite"),
                );
            }
        }
        for (k, &(member, host, o, q)) in self.members.iter().enumerate() {
            if member >= bodies || host >= bodies {
                return invalid(
                    "checkpoint.members",
                    format!(
                        "entry {k} refers to body {member} or {host}; the scene has {bodies} bodies"
                    ),
                );
            }
            if !o.iter().chain(&q).all(|x| x.is_finite()) {
                return invalid("checkpoint.members", format!("entry {k} is not finite"));
            }
        }
        Ok(())
    }

    /// Rebuilds the scene and a stepper ready to continue, after
    /// [`Self::validate`].
    pub fn restore(&self) -> Result<(Scene, Stepper), ndem_scenes::SceneError> {
        let mut scene = self.scene.to_scene()?;
        self.validate(scene.world.len())?;
        for &(member, host, o, q) in &self.members {
            let membership = ndem_step::Membership {
                host,
                offset: Vec3::new(o[0], o[1], o[2]),
                relative_orientation: ndem_math::Quat::new_unchecked(nalgebra::Quaternion::new(
                    q[0], q[1], q[2], q[3],
                )),
            };
            scene
                .world
                .restore_membership(member, membership)
                .map_err(ndem_scenes::SceneError::from)?;
        }
        let mut stepper = scene.stepper()?;
        if let Some(settings) = &scene.reduction {
            let state = ndem_reduce::ReducerState {
                aggregates: self
                    .aggregates
                    .iter()
                    .map(|(id, body, members)| {
                        (
                            *id,
                            ndem_reduce::Aggregate {
                                body: *body,
                                members: members.clone(),
                            },
                        )
                    })
                    .collect(),
                retired: self.retired_aggregates.clone(),
            };
            let reducer = ndem_reduce::Reducer::restore(settings.clone(), state, &scene.world)
                .map_err(|e| ndem_scenes::SceneError::Invalid {
                    field: "checkpoint.aggregates",
                    reason: e.to_string(),
                })?;
            stepper.set_hooks(Box::new(reducer));
        }
        let mut h = ImpulseHistory::new();
        h.extend(self.contacts.iter().map(|&(a, b, f, n, t, r)| {
            (
                ContactKey::new(a, b, f),
                StoredImpulse {
                    normal: n,
                    friction: Vec3::new(t[0], t[1], t[2]),
                    rolling: Vec3::new(r[0], r[1], r[2]),
                },
            )
        }));
        for &(a, b, f, l) in &self.rows {
            h.insert_row(ContactKey::new(a, b, f), l);
        }
        let carried = self.contacts.len() + self.rows.len();
        if !stepper.set_history(h) && carried > 0 {
            return Err(ndem_scenes::SceneError::Invalid {
                field: "checkpoint.contacts",
                reason: "the checkpoint carries warm-start impulses but the scene's warm-start \
                         policy keeps no history"
                    .into(),
            });
        }
        stepper.set_clock(self.time, self.step);
        Ok((scene, stepper))
    }

    /// Writes the checkpoint to `path` in `format`, atomically (a
    /// temporary file and a rename) and streamed.
    pub fn write_file(&mut self, path: &Path, format: CheckpointFormat) -> std::io::Result<()> {
        crate::output::write_atomic_stream(path, |out| match format {
            CheckpointFormat::Json => {
                serde_json::to_writer(out, self).map_err(std::io::Error::from)
            }
            CheckpointFormat::Binary => self.write_binary(out),
        })
    }

    /// Writes the binary format (`binary` module docs) to `out`, buffered
    /// by the caller. The bodies, contacts and rows are taken out for the
    /// header and put back.
    pub fn write_binary(&mut self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        let bodies = std::mem::take(&mut self.scene.bodies);
        let contacts = std::mem::take(&mut self.contacts);
        let rows = std::mem::take(&mut self.rows);
        let shapes = binary::shape_table(bodies.iter().map(|b| &b.shape));
        let streamed = (bodies.len(), bodies.iter().cloned());
        let listed = (contacts.len(), contacts.iter().copied());
        let result = binary::write(out, &*self, shapes, streamed, listed, &rows);
        self.scene.bodies = bodies;
        self.contacts = contacts;
        self.rows = rows;
        result
    }

    /// Reads the binary format; errors name the block and record.
    pub fn read_binary(input: &mut impl std::io::Read) -> std::io::Result<Self> {
        let (mut cp, bodies, contacts, rows): binary::Parts<Self> = binary::read(input)?;
        cp.scene.bodies = bodies;
        cp.contacts = contacts;
        cp.rows = rows;
        Ok(cp)
    }

    /// Writes a checkpoint of `scene` and `stepper` to `path` in `format`,
    /// atomically. The binary format streams the bodies from the world and
    /// the stored impulses from the warm-start history, one record at a
    /// time: the write holds no copy of either.
    pub fn write_scene(
        scene: &Scene,
        stepper: &mut Stepper,
        path: &Path,
        format: CheckpointFormat,
    ) -> std::io::Result<()> {
        if format == CheckpointFormat::Json {
            return Self::capture(scene, stepper).write_file(path, format);
        }
        let mut header = Self::capture_state(scene, stepper);
        let rows = std::mem::take(&mut header.rows);
        let empty = ImpulseHistory::new();
        let h = stepper.history().unwrap_or(&empty);
        let contacts = (h.contact_count(), h.contacts_by_key().map(stored_contact));
        let w = &scene.world;
        let shapes: Vec<_> = (0..w.len())
            .filter(|&i| w.shapes()[i].sphere_radius().is_none())
            .map(|i| BodySpec::of_body(w, i).shape)
            .collect();
        let bodies = (w.len(), (0..w.len()).map(|i| BodySpec::of_body(w, i)));
        crate::output::write_atomic_stream(path, |out| {
            binary::write(out, &header, shapes, bodies, contacts, &rows)
        })
    }

    /// Reads a checkpoint file of either format (binary when it starts
    /// with [`MAGIC`]); the error names the file's problem.
    pub fn read_file(path: &Path) -> Result<Self, String> {
        let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
        let mut input = std::io::BufReader::with_capacity(1 << 20, file);
        let starts_binary = input
            .fill_buf()
            .map_err(|e| e.to_string())?
            .starts_with(MAGIC);
        if starts_binary {
            Self::read_binary(&mut input).map_err(|e| e.to_string())
        } else {
            serde_json::from_reader(input).map_err(|e| e.to_string())
        }
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

//! Particle emitters: the pile formation of the warm-starting paper (a
//! source 3d wide, 20d above the ground) and any other inflow.

use crate::rng::Rng;
use ndem_collide::Shape;
use ndem_math::{Vec3, Velocity6};
use ndem_step::{BodyDesc, MaterialId, StepError, World};

/// Emits spheres at random points of a horizontal disk or rectangle, at a fixed rate,
/// until `total` have been emitted. A candidate that would overlap a body
/// already near the source is skipped (retried next step), so emission
/// never creates overlaps.
#[derive(Debug, Clone, PartialEq)]
pub struct Emitter {
    /// Centre of the source disk.
    pub centre: Vec3,
    /// Radius of the source disk \[m\] (unused with `rectangle`).
    pub radius: f64,
    /// Half extents `(along x, along y)` \[m\] of a rectangular source
    /// centred on `centre` (the model-reduction paper's conveyor feeds from
    /// a 15d × 4d area); `None`: the disk of `radius`.
    pub rectangle: Option<(f64, f64)>,
    /// Particle radii: uniform in `[r_min, r_max]`; or, with
    /// `bidisperse_fraction > 0`, `r_min` with that probability and `r_max`
    /// otherwise.
    pub particle_radius: (f64, f64),
    /// Probability of the smaller radius for bi-disperse emission (0:
    /// uniform distribution).
    pub bidisperse_fraction: f64,
    /// Material index of the emitted particles.
    pub material: usize,
    /// Emission rate [particles/s].
    pub rate: f64,
    /// Initial velocity.
    pub velocity: Vec3,
    /// How many to emit in total.
    pub total: usize,
    /// Emitted so far.
    pub emitted: usize,
    /// Fractional particles owed (rate × time not yet emitted).
    pub pending: f64,
    /// Random state.
    pub rng: Rng,
}

impl Emitter {
    /// Emits the particles due in a step of length `dt`; returns how many
    /// were added.
    pub fn emit(&mut self, world: &mut World, dt: f64) -> Result<usize, StepError> {
        if self.emitted >= self.total {
            return Ok(0);
        }
        self.pending += self.rate * dt;
        let mut added = 0;
        let mut attempts = 0;
        while self.pending >= 1.0 && self.emitted < self.total && attempts < 20 {
            attempts += 1;
            let r = if self.bidisperse_fraction > 0.0 {
                if self.rng.uniform() < self.bidisperse_fraction {
                    self.particle_radius.0
                } else {
                    self.particle_radius.1
                }
            } else {
                self.rng
                    .range(self.particle_radius.0, self.particle_radius.1)
            };
            let offset = match self.rectangle {
                Some((hx, hy)) => {
                    let (ax, ay) = ((hx - r).max(0.0), (hy - r).max(0.0));
                    Vec3::new(self.rng.range(-ax, ax), self.rng.range(-ay, ay), 0.0)
                }
                None => {
                    let rho = (self.radius - r).max(0.0) * self.rng.uniform().sqrt();
                    let phi = self.rng.range(0.0, std::f64::consts::TAU);
                    Vec3::new(rho * phi.cos(), rho * phi.sin(), 0.0)
                }
            };
            let p = self.centre + offset;
            let clear = (0..world.len()).all(|i| match world.shapes()[i].sphere_radius() {
                Some(ri) => (world.positions()[i] - p).norm() > ri + r,
                None => true,
            });
            if !clear {
                continue;
            }
            world.add_body(
                BodyDesc::dynamic(Shape::sphere(r)?, MaterialId::from_index(self.material), p)
                    .with_velocity(Velocity6::new(self.velocity, Vec3::zeros())),
            )?;
            self.emitted += 1;
            self.pending -= 1.0;
            added += 1;
        }
        // never accumulate a backlog beyond one step's worth when blocked
        self.pending = self.pending.min(1.0 + self.rate * dt);
        Ok(added)
    }

    /// `true` when all particles have been emitted.
    pub fn done(&self) -> bool {
        self.emitted >= self.total
    }
}

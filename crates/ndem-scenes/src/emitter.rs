//! Particle emitters: the pile formation of the warm-starting paper (a
//! source 3d wide, 20d above the ground) and any other inflow.

use crate::rng::Rng;
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
        let mut near = self.spheres_near_source(
            (0..world.len())
                .filter_map(|i| Some((world.positions()[i], world.shapes()[i].sphere_radius()?))),
        );
        let bodies = self.emit_among(&mut near, dt)?;
        let added = bodies.len();
        for b in bodies {
            world.add_body(b)?;
        }
        Ok(added)
    }

    /// The particles due in a step of length `dt`, in emission order,
    /// given the spheres `(centre, radius)` that may block the source
    /// (at least those [`Self::may_block`] keeps; the emitted ones are
    /// appended). The same spheres in the same order give the same
    /// particles: a distributed run gathers them from every rank and emits
    /// alike on each.
    pub fn emit_among(
        &mut self,
        near: &mut Vec<(Vec3, f64)>,
        dt: f64,
    ) -> Result<Vec<BodyDesc>, StepError> {
        let mut out = Vec::new();
        if self.emitted >= self.total {
            return Ok(out);
        }
        self.pending += self.rate * dt;
        let mut attempts = 0;
        while self.pending >= 1.0 && self.emitted < self.total && attempts < 20 {
            attempts += 1;
            let r = self.draw_radius();
            let p = self.centre + self.draw_offset(r);
            if !near.iter().all(|(c, ri)| (c - p).norm() > ri + r) {
                continue;
            }
            out.push(
                BodyDesc::sphere(r, MaterialId::from_index(self.material), p)?
                    .with_velocity(Velocity6::new(self.velocity, Vec3::zeros())),
            );
            near.push((p, r));
            self.emitted += 1;
            self.pending -= 1.0;
        }
        // never accumulate a backlog beyond one step's worth when blocked
        self.pending = self.pending.min(1.0 + self.rate * dt);
        Ok(out)
    }

    /// Whether a sphere of radius `r` at `c` can touch a particle emitted
    /// anywhere on the source (the source's bounding box widened by
    /// `r` and the largest particle radius).
    pub fn may_block(&self, c: &Vec3, r: f64) -> bool {
        let (hx, hy) = self.rectangle.unwrap_or((self.radius, self.radius));
        let reach = r + self.particle_radius.0.max(self.particle_radius.1);
        let d = c - self.centre;
        d.x.abs() <= hx + reach && d.y.abs() <= hy + reach && d.z.abs() <= reach
    }

    /// The spheres of `spheres` that [`Self::may_block`] the source, in
    /// their order.
    pub fn spheres_near_source(
        &self,
        spheres: impl Iterator<Item = (Vec3, f64)>,
    ) -> Vec<(Vec3, f64)> {
        spheres.filter(|(c, r)| self.may_block(c, *r)).collect()
    }

    fn draw_radius(&mut self) -> f64 {
        if self.bidisperse_fraction > 0.0 {
            if self.rng.uniform() < self.bidisperse_fraction {
                self.particle_radius.0
            } else {
                self.particle_radius.1
            }
        } else {
            self.rng
                .range(self.particle_radius.0, self.particle_radius.1)
        }
    }

    /// A random point of the source, `r` inside its rim.
    fn draw_offset(&mut self, r: f64) -> Vec3 {
        match self.rectangle {
            Some((hx, hy)) => {
                let (ax, ay) = ((hx - r).max(0.0), (hy - r).max(0.0));
                Vec3::new(self.rng.range(-ax, ax), self.rng.range(-ay, ay), 0.0)
            }
            None => {
                let rho = (self.radius - r).max(0.0) * self.rng.uniform().sqrt();
                let phi = self.rng.range(0.0, std::f64::consts::TAU);
                Vec3::new(rho * phi.cos(), rho * phi.sin(), 0.0)
            }
        }
    }

    /// `true` when all particles have been emitted.
    pub fn done(&self) -> bool {
        self.emitted >= self.total
    }
}

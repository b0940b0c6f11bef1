//! What a model reduction did in a step.

use std::time::Duration;

/// What reduction did in the last step.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ReductionStats {
    /// Particles `N_p`: bodies that may take part in aggregates (dynamic,
    /// with collision geometry, without joints), free or merged.
    pub particles: usize,
    /// Free particles.
    pub free: usize,
    /// Aggregates.
    pub aggregates: usize,
    /// Reduction level `h = 1 − Ñ_p/N_p` with `Ñ_p` = free particles plus
    /// aggregates (paper, section 4).
    pub level: f64,
    /// Aggregates formed by merges this step.
    pub merges: usize,
    /// Members freed by splits this step.
    pub split_members: usize,
    /// Members of anchored aggregates freed by the pressed split this step
    /// (`merge_with_static`); the rest of their aggregates went dynamic
    /// for the step.
    pub pressed_members: usize,
    /// Time spent in split (after detection).
    pub split_time: Duration,
    /// Time spent in merge (after the solve).
    pub merge_time: Duration,
    /// PGS sweeps of the trial solve this step (0: none).
    pub trial_iterations: usize,
}

impl ReductionStats {
    /// Clears the counts of one step (merges, split and pressed members,
    /// trial sweeps) at its start.
    pub fn start_step(&mut self) {
        self.split_members = 0;
        self.pressed_members = 0;
        self.merges = 0;
        self.trial_iterations = 0;
    }

    /// Sets the counts of particles, free particles and aggregates and the
    /// reduction level `1 − (free + aggregates) / particles` (paper,
    /// section 4; 0 without particles).
    pub fn set_counts(&mut self, particles: usize, free: usize, aggregates: usize) {
        self.particles = particles;
        self.free = free;
        self.aggregates = aggregates;
        self.level = if particles > 0 {
            1.0 - (free + aggregates) as f64 / particles as f64
        } else {
            0.0
        };
    }
}

//! A detection pass of [`CollisionWorld`]: classifying the bodies, the grid, the particle pairs and the pairs with large bodies.

use super::*;

impl CollisionWorld {
    /// A world with the given settings.
    pub fn new(settings: CollisionSettings) -> Result<Self, CollideError> {
        settings.validate()?;
        Ok(Self {
            settings,
            ..Self::default()
        })
    }

    /// The settings.
    pub fn settings(&self) -> &CollisionSettings {
        &self.settings
    }

    /// Finds all contacts (gap ≤ margin) between bodies, serially.
    pub fn detect(
        &mut self,
        bodies: &BodyView<'_>,
        out: &mut ContactSet,
    ) -> Result<(), CollideError> {
        self.detect_on(bodies, out, 1)
    }

    /// As [`Self::detect`] on every core ([`Self::detect_on`] with 0).
    pub fn detect_parallel(
        &mut self,
        bodies: &BodyView<'_>,
        out: &mut ContactSet,
    ) -> Result<(), CollideError> {
        self.detect_on(bodies, out, 0)
    }

    /// As [`Self::detect`] on `threads` threads (0: every core; at most
    /// [`ndem_par::blocks::MAX_THREADS`]): above 4096 particles the grid is
    /// built in parts and the sphere pairs are found in one block of
    /// particles per thread, on scoped threads. The result is identical,
    /// bit for bit, to the serial pass.
    pub fn detect_on(
        &mut self,
        bodies: &BodyView<'_>,
        out: &mut ContactSet,
        threads: usize,
    ) -> Result<(), CollideError> {
        self.detect_impl(bodies, out, threads, FastSpheres::Apart)
    }

    /// The pairs of bodies that [`Self::detect`] finds a contact between,
    /// each once and in the same (key) order, without forming the contacts:
    /// a Verlet candidate list. A sphere pair is in when its centres are
    /// within `r_a + r_b` plus the margin and sweeps, the test
    /// [`crate::narrow::sphere_sphere`] makes before it forms the normal;
    /// pairs with a large body go through the narrow phase as in `detect`.
    pub fn detect_pairs(
        &mut self,
        bodies: &BodyView<'_>,
        out: &mut Vec<(u32, u32)>,
    ) -> Result<(), CollideError> {
        bodies.validate()?;
        self.classify(bodies);
        self.build_grid(bodies, FastSpheres::InGrid, 1);
        self.large_pairs(bodies)?;
        out.clear();
        self.particle_pair_ids(bodies, &self.large_contacts, out);
        Ok(())
    }

    pub(super) fn classify(&mut self, bodies: &BodyView<'_>) {
        self.particles.clear();
        self.large.clear();
        let cutoff = match self.median_radius(bodies.shapes) {
            Some(median) => median * self.settings.large_sphere_factor,
            None => 0.0,
        };
        for (i, s) in bodies.shapes.iter().enumerate() {
            match s.sphere_radius() {
                Some(r) if r <= cutoff => self.particles.push(i as u32),
                _ if matches!(s, Shape::Empty) => {}
                _ => self.large.push(i as u32),
            }
        }
    }

    /// The median sphere radius (the `⌊n/2⌋`-th smallest of the `n`
    /// spheres'; `None` without spheres). The last pass's median is kept
    /// and checked in one counting pass: it is still the median when fewer
    /// than `⌊n/2⌋ + 1` radii lie below it and more than `⌊n/2⌋` lie at or
    /// below it. Only when the shapes changed so that it is not (the first
    /// pass, bodies added or removed) are the radii copied and the median
    /// selected afresh, in a vector released after. The radii are positive
    /// and finite ([`BodyView::validate`]), so `<` and `==` order them as
    /// the selection does.
    pub(super) fn median_radius(&mut self, shapes: &[Shape]) -> Option<f64> {
        if let Some(last) = self.median_radius {
            let (mut spheres, mut below, mut at_most) = (0usize, 0usize, 0usize);
            for r in shapes.iter().filter_map(Shape::sphere_radius) {
                spheres += 1;
                below += usize::from(r < last);
                at_most += usize::from(r <= last);
            }
            let mid = spheres / 2;
            if spheres > 0 && below <= mid && mid < at_most {
                return Some(last);
            }
        }
        let mut radii: Vec<f64> = shapes.iter().filter_map(Shape::sphere_radius).collect();
        self.median_radius = (!radii.is_empty()).then(|| {
            let mid = radii.len() / 2;
            *radii.select_nth_unstable_by(mid, f64::total_cmp).1
        });
        self.median_radius
    }
}

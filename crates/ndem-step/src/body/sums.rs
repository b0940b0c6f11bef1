//! The world's sums over its bodies: energies and momenta (members
//! counted through their host, or, on a static host, which has no mass, by
//! themselves: at rest, they add their potential energy only).

use super::{BodySums, World, empty_sum};
use crate::state::Motion;
use ndem_math::{MassProperties, Vec3};

impl World {
    /// Kinetic energy `Σ ½ m v² + ½ ωᵀ I ω` of the dynamic bodies \[J\]
    /// (members counted through their host).
    pub fn kinetic_energy(&self) -> f64 {
        (0..self.len())
            .filter_map(|i| Some(self.kinetic_term(i, self.own_mass(i)?).0))
            .sum()
    }

    /// Body `i`'s term `½ m v² + ½ ωᵀ I ω` of [`Self::kinetic_energy`], and
    /// its `I ω` (world frame).
    #[inline(always)]
    fn kinetic_term(&self, i: usize, m: &MassProperties) -> (f64, Vec3) {
        let v = &self.velocities()[i];
        let inertia_omega = m.world_inertia(&self.orientations()[i]) * v.angular;
        let term = 0.5 * m.mass * v.linear.norm_squared() + 0.5 * v.angular.dot(&inertia_omega);
        (term, inertia_omega)
    }

    /// Gravitational potential energy `−Σ m g·x` of the dynamic bodies \[J\]
    /// (members counted through their host).
    pub fn potential_energy(&self) -> f64 {
        (0..self.len())
            .filter_map(|i| Some(-self.own_mass(i)?.mass * self.gravity.dot(&self.positions()[i])))
            .sum()
    }

    /// [`Self::kinetic_energy`], [`Self::potential_energy`] and
    /// [`Self::momentum`] in one pass over the bodies (three passes read the
    /// same masses and velocities: at 10⁵ bodies each pass is memory-bound).
    /// Each is the number its method returns, bit for bit: the same terms,
    /// summed in body order from the same start.
    pub fn energies_and_momentum(&self) -> BodySums {
        self.body_sums::<true>(|_| true)
    }

    /// Kinetic and potential energy ([`Self::energies_and_momentum`] without
    /// the momenta).
    pub(crate) fn energies(&self) -> (f64, f64) {
        self.energies_where(|_| true)
    }

    /// [`Self::energies`] of the bodies `counted` keeps.
    pub(crate) fn energies_where(&self, counted: impl Fn(usize) -> bool) -> (f64, f64) {
        let sums = self.body_sums::<false>(counted);
        (sums.kinetic_energy, sums.potential_energy)
    }

    /// The energy guard's energy after a step: [`Self::kinetic_energy`] plus
    /// the potential energy after the position update `x + Δt v` of the
    /// bodies that carry their own degrees of freedom and are not static,
    /// in one pass, each sum the one of its own pass bit for bit.
    pub(crate) fn energy_after_positions(&self, dt: f64) -> f64 {
        self.energy_after_positions_where(dt, |_| true)
    }

    /// [`Self::energy_after_positions`] of the bodies `counted` keeps.
    pub(crate) fn energy_after_positions_where(
        &self,
        dt: f64,
        counted: impl Fn(usize) -> bool,
    ) -> f64 {
        let (mut kinetic, mut potential) = (empty_sum(), empty_sum());
        for i in 0..self.len() {
            if !counted(i) {
                continue;
            }
            let Some(m) = self.own_mass(i) else { continue };
            kinetic += self.kinetic_term(i, m).0;
            if self.motions()[i] != Motion::Static {
                let x = self.positions()[i] + self.velocities()[i].linear * dt;
                potential += -m.mass * self.gravity.dot(&x);
            }
        }
        kinetic + potential
    }

    fn body_sums<const MOMENTUM: bool>(&self, counted: impl Fn(usize) -> bool) -> BodySums {
        let mut sums = BodySums::empty();
        for i in 0..self.len() {
            if !counted(i) {
                continue;
            }
            let Some(m) = self.own_mass(i) else { continue };
            let (term, inertia_omega) = self.kinetic_term(i, m);
            sums.kinetic_energy += term;
            sums.potential_energy += -m.mass * self.gravity.dot(&self.positions()[i]);
            if MOMENTUM {
                let pi = self.velocities()[i].linear * m.mass;
                sums.momentum += pi;
                sums.angular_momentum += self.positions()[i].cross(&pi) + inertia_omega;
            }
        }
        sums
    }

    /// Mass properties of a body the sums count: one that carries its own
    /// degrees of freedom, or a member of a static host (an aggregate
    /// merged with static geometry; the host has no mass).
    fn own_mass(&self, i: usize) -> Option<&MassProperties> {
        match self.kinds.membership()[i].as_deref() {
            Some(m) if self.mass_properties()[m.host].is_some() => None,
            _ => self.mass_properties()[i].as_ref(),
        }
    }

    /// Total linear momentum and angular momentum about the origin of the
    /// dynamic bodies.
    pub fn momentum(&self) -> (Vec3, Vec3) {
        let mut p = Vec3::zeros();
        let mut l = Vec3::zeros();
        for i in 0..self.len() {
            if let Some(m) = self.own_mass(i) {
                let pi = self.velocities()[i].linear * m.mass;
                p += pi;
                l += self.positions()[i].cross(&pi)
                    + m.world_inertia(&self.orientations()[i]) * self.velocities()[i].angular;
            }
        }
        (p, l)
    }
}

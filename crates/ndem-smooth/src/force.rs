//! The contact force of the smooth DEM: Hertz-Mindlin (or linear) normal
//! spring-dashpot, Mindlin tangential spring with history and Coulomb cap,
//! and Ai et al.'s rolling model C (see `docs/theory.md`, "Smooth DEM
//! baseline").

use crate::law::SmoothLaw;
use crate::stepper::SmoothSettings;
use ndem_collide::ContactPoint;
use ndem_math::Vec3;
use ndem_step::World;

/// What a contact's force needs from its two materials (pair overrides
/// applied): everything of [`ndem_math::PairProperties`] but the effective radius,
/// which depends on the contact's curvatures, plus the shear modulus and
/// the damping ratio ζ of the pair's restitution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PairConstants {
    /// `E*` \[Pa\].
    pub(crate) effective_modulus: f64,
    /// `1/G* = 2(2−ν_a)(1+ν_a)/E_a + 2(2−ν_b)(1+ν_b)/E_b`.
    pub(crate) shear_compliance: f64,
    pub(crate) friction: f64,
    pub(crate) rolling_resistance: f64,
    /// ζ of the pair's restitution for the law's exponent.
    pub(crate) zeta: f64,
}

/// What a touching contact carries from step to step: its tangential
/// spring and its rolling moment (see `docs/theory.md`, "Smooth DEM
/// baseline"). Public so that a distributed run can send it along with the
/// bodies that migrate.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ContactHistory {
    /// Tangential spring elongation `ξ` \[m\], world frame.
    pub xi: Vec3,
    /// Rolling moment `M_r` of model C \[N m\], world frame.
    pub rolling: Vec3,
}

/// The force law of one step: the settings and the material-pair table.
/// Each contact's force depends only on the world and the contact's own
/// history, so contacts can be evaluated in any order or in parallel.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ForceLaw<'a> {
    pub(crate) settings: &'a SmoothSettings,
    /// `[ia * n + ib]` for materials `ia`, `ib` of `n`.
    pub(crate) pairs: &'a [PairConstants],
}

impl ForceLaw<'_> {
    /// Per-contact force on body a and moment on a about the contact
    /// (rolling), and the contact's new history.
    pub(crate) fn force(
        &self,
        world: &World,
        c: &ContactPoint,
        old: ContactHistory,
    ) -> (Vec3, Vec3, ContactHistory) {
        let (a, b) = (c.body_a(), c.body_b());
        let dt = self.settings.dt;
        let (ia, ib) = (world.body_materials()[a], world.body_materials()[b]);
        let pair = &self.pairs[ia * world.materials.len() + ib];
        // R*, as PairProperties::combine forms it
        let effective_radius = 1.0 / (1.0 / c.curvature[0] + 1.0 / c.curvature[1]);
        let mass = |i: usize| world.mass_properties()[i].map_or(f64::INFINITY, |m| m.mass);
        let (m1, m2) = (mass(a), mass(b));
        let m_eff = if m1.is_infinite() {
            m2
        } else if m2.is_infinite() {
            m1
        } else {
            m1 * m2 / (m1 + m2)
        };
        let delta = -c.gap;
        let v = world.velocities();
        let u = v[a].point_velocity(&c.arm_a) - v[b].point_velocity(&c.arm_b);
        let n = c.normal;
        let un = n.dot(&u);
        let ut = u - n * un;
        let zeta = pair.zeta;
        let (kn, p) = match self.settings.law {
            SmoothLaw::Hertz => (
                4.0 / 3.0 * pair.effective_modulus * effective_radius.sqrt(),
                1.5,
            ),
            SmoothLaw::Linear { stiffness } => (stiffness, 1.0),
            SmoothLaw::LinearModulus { length } => (pair.effective_modulus * length, 1.0),
        };
        let eta = zeta * (m_eff * kn).sqrt();
        // δ^p and δ^{(p−1)/2} without powf for the two laws
        let (dp, dd) = if p == 1.5 {
            let sq = delta.sqrt();
            (delta * sq, sq.sqrt())
        } else {
            (delta, 1.0)
        };
        let fn_ = (kn * dp - eta * dd * un).max(0.0);
        // normal stiffness dF/dδ for the tangential and rolling springs
        let k_lin = match self.settings.law {
            SmoothLaw::Hertz => 1.5 * kn * delta.sqrt(),
            SmoothLaw::Linear { .. } | SmoothLaw::LinearModulus { .. } => kn,
        };
        let kt = match self.settings.law {
            SmoothLaw::Hertz => {
                let g_star = 1.0 / pair.shear_compliance;
                8.0 * g_star * (effective_radius * delta).sqrt()
            }
            SmoothLaw::Linear { .. } | SmoothLaw::LinearModulus { .. } => 2.0 / 7.0 * kn,
        };
        // Cundall-Strack: keep the spring in the current tangent plane
        let mut xi = old.xi - n * n.dot(&old.xi);
        let old_len = old.xi.norm();
        let new_len = xi.norm();
        if new_len > 0.0 {
            xi *= old_len / new_len;
        }
        xi += ut * dt;
        let eta_t = zeta * (m_eff * kt).sqrt();
        let mut ft = -xi * kt - ut * eta_t;
        let cap = pair.friction * fn_;
        let ft_norm = ft.norm();
        if ft_norm > cap {
            ft *= if ft_norm > 0.0 { cap / ft_norm } else { 0.0 };
            xi = if kt > 0.0 {
                -(ft + ut * eta_t) / kt
            } else {
                Vec3::zeros()
            };
        }
        // rolling and twisting: elastic-plastic spring-dashpot, Ai et al.
        // (2011) model C; the dashpot acts while the spring is below its limit
        let mut rolling = old.rolling;
        let mut moment = Vec3::zeros();
        if self.settings.rolling && pair.rolling_resistance > 0.0 {
            let kr = 2.25 * k_lin * (pair.rolling_resistance * effective_radius).powi(2);
            let w_rel = v[a].angular - v[b].angular;
            rolling -= w_rel * (kr * dt);
            let rcap = pair.rolling_resistance * effective_radius * fn_;
            let rn = rolling.norm();
            if rn > rcap {
                rolling *= if rn > 0.0 { rcap / rn } else { 0.0 };
                moment = rolling;
            } else {
                let i_r = rolling_inertia(world, a, &c.arm_a, b, &c.arm_b);
                let c_r = self.settings.rolling_damping * 2.0 * (i_r * kr).sqrt();
                moment = rolling - w_rel * c_r;
            }
        } else {
            rolling = Vec3::zeros();
        }
        (n * fn_ + ft, moment, ContactHistory { xi, rolling })
    }
}

/// Equivalent moment of inertia of a contact for relative rotation (Ai et
/// al. 2011, eq. 16): `I_r = 1/(1/I_a + 1/I_b)` with each body's inertia
/// about the contact point, `I + m |d|²` (`I` the mean principal moment, `d`
/// the arm). A body without mass properties (static, kinematic) counts as
/// infinite.
fn rolling_inertia(world: &World, a: usize, arm_a: &Vec3, b: usize, arm_b: &Vec3) -> f64 {
    let about_contact = |i: usize, arm: &Vec3| {
        world.mass_properties()[i].map_or(0.0, |m| {
            1.0 / (m.principal_inertia.sum() / 3.0 + m.mass * arm.norm_squared())
        })
    };
    let inverse = about_contact(a, arm_a) + about_contact(b, arm_b);
    if inverse > 0.0 { 1.0 / inverse } else { 0.0 }
}

//! The contact force of the smooth DEM: Hertz-Mindlin (or linear) normal
//! spring-dashpot, Mindlin tangential spring with history and Coulomb cap,
//! and Ai et al.'s rolling model C (see `docs/theory.md`, "Smooth DEM
//! baseline").

use crate::law::SmoothLaw;
use crate::settings::SmoothSettings;
use ndem_collide::ContactPoint;
use ndem_math::Vec3;
use ndem_step::World;

/// What a contact's force needs from its two materials (pair overrides
/// applied) and the law: the parts of the stiffnesses and dashpots that do
/// not depend on the contact's radii, masses or overlap, the friction and
/// rolling coefficients, and the damping ratio ζ of the pair's
/// restitution. Tabulated once per step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PairConstants {
    /// `k_n / √R*` for Hertz (`(4/3) E*`), `k_n` for the linear laws
    /// (the given stiffness, or `E* L`).
    pub(crate) stiffness_factor: f64,
    /// `ζ √(stiffness_factor)`: the normal dashpot `η = ζ √(m* k_n)` is
    /// this times `√m*` (and `R*^{1/4}` for Hertz).
    pub(crate) damping_factor: f64,
    /// `k_t / k_n`, over `√δ` for Hertz: `6 G*/E*` with
    /// `1/G* = 2(2−ν_a)(1+ν_a)/E_a + 2(2−ν_b)(1+ν_b)/E_b` (Mindlin's
    /// `k_t = 8 G* √(R* δ)`), `2/7` for the linear laws.
    pub(crate) tangential_ratio: f64,
    /// `√(tangential_ratio)`: the tangential dashpot `ζ √(m* k_t)` is `η`
    /// times this (times `δ^{1/4}` for Hertz).
    pub(crate) tangential_damping_ratio: f64,
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

/// What a contact's force needs from its two bodies' radii of curvature
/// and masses: `R* = 1/(1/r_a + 1/r_b)` (as
/// [`ndem_math::PairProperties`] forms it), `√R*`, `R*^{1/4}` and `√m*`
/// (`m* = m_a m_b/(m_a + m_b)`, the finite mass alone against a body
/// without mass properties). Formed per contact, or once per Verlet
/// rebuild for a sphere pair (whose radii and masses do not change between
/// rebuilds), which takes three square roots and three divisions off each
/// contact's force.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PairInvariants {
    pub(crate) effective_radius: f64,
    pub(crate) root_radius: f64,
    pub(crate) quarter_radius: f64,
    pub(crate) root_mass: f64,
}

impl PairInvariants {
    /// Of bodies `a`, `b` touching with radii of curvature `curvature`.
    pub(crate) fn new(world: &World, a: usize, b: usize, curvature: [f64; 2]) -> Self {
        let effective_radius = 1.0 / (1.0 / curvature[0] + 1.0 / curvature[1]);
        let mass = |i: usize| world.mass_properties()[i].map_or(f64::INFINITY, |m| m.mass);
        let (m1, m2) = (mass(a), mass(b));
        let m_eff = if m1.is_infinite() {
            m2
        } else if m2.is_infinite() {
            m1
        } else {
            m1 * m2 / (m1 + m2)
        };
        let root_radius = effective_radius.sqrt();
        Self {
            effective_radius,
            root_radius,
            quarter_radius: root_radius.sqrt(),
            root_mass: m_eff.sqrt(),
        }
    }
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
    /// (rolling), and the contact's new history; `bodies` are the
    /// invariants of the contact's two bodies
    /// ([`PairInvariants::new`] of the contact's curvatures).
    #[inline(always)]
    pub(crate) fn force(
        &self,
        world: &World,
        c: &ContactPoint,
        bodies: &PairInvariants,
        old: ContactHistory,
    ) -> (Vec3, Vec3, ContactHistory) {
        let (a, b) = (c.body_a(), c.body_b());
        let dt = self.settings.dt;
        let [ia, ib] = [a, b].map(|i| world.body_materials()[i] as usize);
        let pair = &self.pairs[ia * world.materials.len() + ib];
        let effective_radius = bodies.effective_radius;
        let delta = -c.gap;
        let v = world.velocities();
        // the arms from the positions the contact was found at
        let x = world.positions();
        let (arm_a, arm_b) = (c.arm(&x[a]), c.arm(&x[b]));
        let u = v[a].point_velocity(&arm_a) - v[b].point_velocity(&arm_b);
        let n = c.normal;
        let un = n.dot(&u);
        let ut = u - n * un;
        let s = self.stiffness(pair, bodies, delta);
        let fn_ = (s.normal * s.overlap_power - s.normal_damping * un).max(0.0);
        // Cundall-Strack: keep the spring in the current tangent plane
        // (rotated, not shortened: scaled by |ξ_old| / |ξ_proj|)
        let mut xi = old.xi - n * n.dot(&old.xi);
        let new_sq = xi.norm_squared();
        if new_sq > 0.0 {
            let ratio = (old.xi.norm_squared() / new_sq).sqrt();
            xi *= if ratio.is_finite() {
                ratio
            } else {
                // |ξ_proj|² underflowed against |ξ_old|²
                old.xi.norm() / new_sq.sqrt()
            };
        }
        xi += ut * dt;
        let mut ft = -xi * s.tangential - ut * s.tangential_damping;
        let cap = pair.friction * fn_;
        // Coulomb: compared squared, so that a sticking contact (a resting
        // bed's) takes no square root on the way to its force
        let ft_sq = ft.norm_squared();
        if ft_sq > cap * cap {
            ft *= cap / ft_sq.sqrt();
            xi = if s.tangential > 0.0 {
                -(ft + ut * s.tangential_damping) / s.tangential
            } else {
                Vec3::zeros()
            };
        }
        let k_lin = s.normal_slope;
        // rolling and twisting: elastic-plastic spring-dashpot, Ai et al.
        // (2011) model C; the dashpot acts while the spring is below its limit
        let mut rolling = old.rolling;
        let mut moment = Vec3::zeros();
        if self.settings.rolling && pair.rolling_resistance > 0.0 {
            let kr = 2.25 * k_lin * (pair.rolling_resistance * effective_radius).powi(2);
            let w_rel = v[a].angular - v[b].angular;
            rolling -= w_rel * (kr * dt);
            let rcap = pair.rolling_resistance * effective_radius * fn_;
            let rolling_sq = rolling.norm_squared();
            if rolling_sq > rcap * rcap {
                rolling *= rcap / rolling_sq.sqrt();
                moment = rolling;
            } else {
                let i_r = rolling_inertia(world, a, &arm_a, b, &arm_b);
                let c_r = self.settings.rolling_damping * 2.0 * (i_r * kr).sqrt();
                moment = rolling - w_rel * c_r;
            }
        } else {
            rolling = Vec3::zeros();
        }
        (n * fn_ + ft, moment, ContactHistory { xi, rolling })
    }

    /// The contact's stiffnesses and dashpots at overlap `δ`: Hertz
    /// `k_n = (4/3) E* √R*`, `η = ζ √(m* k_n)`, `k_t = 8 G* √(R* δ)`,
    /// `ζ √(m* k_t)`, formed from the pair table, the bodies' invariants and
    /// two square roots (`√δ`, `δ^{1/4}`); the linear laws `k_t = (2/7) k_n`.
    /// The same values as the textbook forms to round-off (`tests` below;
    /// `docs/theory.md`, "Smooth DEM baseline").
    #[inline(always)]
    fn stiffness(&self, pair: &PairConstants, bodies: &PairInvariants, delta: f64) -> Stiffness {
        match self.settings.law {
            SmoothLaw::Hertz => {
                let root = delta.sqrt();
                let quarter = root.sqrt();
                let kn = pair.stiffness_factor * bodies.root_radius;
                let eta = pair.damping_factor * bodies.quarter_radius * bodies.root_mass;
                Stiffness {
                    normal: kn,
                    overlap_power: delta * root,
                    normal_damping: eta * quarter,
                    normal_slope: 1.5 * kn * root,
                    tangential: kn * pair.tangential_ratio * root,
                    tangential_damping: eta * pair.tangential_damping_ratio * quarter,
                }
            }
            SmoothLaw::Linear { .. } | SmoothLaw::LinearModulus { .. } => {
                let kn = pair.stiffness_factor;
                let eta = pair.damping_factor * bodies.root_mass;
                Stiffness {
                    normal: kn,
                    overlap_power: delta,
                    normal_damping: eta,
                    normal_slope: kn,
                    tangential: kn * pair.tangential_ratio,
                    tangential_damping: eta * pair.tangential_damping_ratio,
                }
            }
        }
    }
}

/// What [`ForceLaw::stiffness`] gives: `F_n = k_n δ^p − η_δ δ̇` before the
/// no-attraction clamp, and the tangential spring and dashpot.
#[derive(Debug, Clone, Copy)]
struct Stiffness {
    /// `k_n`.
    normal: f64,
    /// `δ^p`.
    overlap_power: f64,
    /// `η δ^{(p−1)/2}`.
    normal_damping: f64,
    /// `dF_n/dδ` of the spring, `p k_n δ^{p−1}` (the rolling spring's scale).
    normal_slope: f64,
    /// `k_t`.
    tangential: f64,
    /// `ζ √(m* k_t)`.
    tangential_damping: f64,
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

//! Material data and the SPOOK parameter mapping (warm-starting paper,
//! appendix A and eqs. for Σ, Υ; `docs/theory.md`, "SPOOK").

use crate::{
    MathError,
    error::{finite, non_negative, positive},
};

/// Bulk and surface properties of one material (SI units).
///
/// Defaults are the warm-starting paper's Table 1 (ρ = 3700 kg/m³,
/// E = 6 MPa, e = 0.18, μ_t = 0.91, μ_r = 0.32) with ν = 0.3, which the
/// papers do not give, and no dashpot (c = 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Material {
    /// Mass density `ρ` [kg/m³].
    pub density: f64,
    /// Young's modulus `E` \[Pa\].
    pub youngs_modulus: f64,
    /// Poisson ratio `ν`, in (−1, 0.5).
    pub poisson_ratio: f64,
    /// Newton restitution coefficient `e` in [0, 1] (impact stage).
    pub restitution: f64,
    /// Surface (Coulomb) friction coefficient `μ_t` ≥ 0.
    pub friction: f64,
    /// Rolling resistance coefficient `μ_r` ≥ 0 (dimensionless; the torque
    /// bound is `μ_r R* f_n`).
    pub rolling_resistance: f64,
    /// Hertz dashpot time `c` \[s\] in `f = k_n (δ^{3/2} + c δ^{1/2} δ̇)`.
    pub damping: f64,
    /// Linear normal stiffness `k_n` [N/m] of a contact between two bodies
    /// of this material, used by [`ContactLaw::LinearPerMaterial`] (the
    /// model-reduction paper's Table 1 gives k_n = 3 kN/m). `None`: the
    /// material has no linear stiffness.
    pub linear_stiffness: Option<f64>,
}

impl Default for Material {
    fn default() -> Self {
        Self {
            density: 3700.0,
            youngs_modulus: 6.0e6,
            poisson_ratio: 0.3,
            restitution: 0.18,
            friction: 0.91,
            rolling_resistance: 0.32,
            damping: 0.0,
            linear_stiffness: None,
        }
    }
}

impl Material {
    /// Checks every field; the error names the first offending one.
    pub fn validate(&self) -> Result<(), MathError> {
        positive("density", self.density)?;
        positive("youngs_modulus", self.youngs_modulus)?;
        finite("poisson_ratio", self.poisson_ratio)?;
        if !(self.poisson_ratio > -1.0 && self.poisson_ratio < 0.5) {
            return Err(MathError::OutOfRange {
                field: "poisson_ratio",
                value: self.poisson_ratio,
                range: "(-1, 0.5)",
            });
        }
        finite("restitution", self.restitution)?;
        if !(0.0..=1.0).contains(&self.restitution) {
            return Err(MathError::OutOfRange {
                field: "restitution",
                value: self.restitution,
                range: "[0, 1]",
            });
        }
        non_negative("friction", self.friction)?;
        non_negative("rolling_resistance", self.rolling_resistance)?;
        non_negative("damping", self.damping)?;
        if let Some(k) = self.linear_stiffness {
            positive("linear_stiffness", k)?;
        }
        Ok(())
    }

    /// `(1 − ν²)/E`, the compliance entering the effective modulus.
    pub fn plane_strain_compliance(&self) -> f64 {
        (1.0 - self.poisson_ratio * self.poisson_ratio) / self.youngs_modulus
    }
}

/// The normal force law of a contact.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum ContactLaw {
    /// Hertz, `f = k_n δ^{3/2}` with `k_n = (4/3) E* √R*`; regularized with
    /// `e_H = 5/4`.
    #[default]
    Hertz,
    /// Linear spring `f = k_n δ` with the given stiffness [N/m]; `e_H = 1`.
    Linear {
        /// Stiffness `k_n` [N/m].
        stiffness: f64,
    },
    /// Linear spring `f = k_n δ` with `k_n` from the two materials'
    /// [`Material::linear_stiffness`]: two half-contacts of stiffness
    /// `2k_a` and `2k_b` in series, `k_n = 2 k_a k_b / (k_a + k_b)` (so a
    /// contact within one material has that material's `k_n`); `e_H = 1`.
    LinearPerMaterial,
    /// Rigid contact: no compliance (`ε_n = 0`, `Σ_n = 0`), the normal
    /// constraint is the gap itself (`g = φ`, `e_H = 1`). This is the
    /// "classic" contact dynamics of the compatible-contact-dynamics paper
    /// (its eqs. 13-21, perfectly rigid bodies), kept on SPOOK's velocity
    /// level: at rest the gap relaxes to zero with `Υ_n`, and the forces of
    /// an over-coordinated packing are not unique.
    Rigid,
}

impl ContactLaw {
    /// The exponent `e_H` of the regularized normal constraint `g = −δ^{e_H}`.
    pub fn exponent(&self) -> f64 {
        match self {
            ContactLaw::Hertz => 1.25,
            ContactLaw::Linear { .. } | ContactLaw::LinearPerMaterial | ContactLaw::Rigid => 1.0,
        }
    }
}

/// Contact parameters given for one pair of materials, replacing what
/// [`PairProperties::combine`] derives from the two materials (a scene
/// file's `[[pairs]]`): friction, rolling resistance, restitution and
/// damping of the pair, its effective Hertz modulus `E*`, and its linear
/// stiffness (used under [`ContactLaw::LinearPerMaterial`]). `None` keeps
/// the combined value.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PairOverride {
    /// Friction coefficient `μ_t`.
    pub friction: Option<f64>,
    /// Rolling resistance `μ_r`.
    pub rolling_resistance: Option<f64>,
    /// Restitution coefficient `e` in [0, 1].
    pub restitution: Option<f64>,
    /// Dashpot time `c` \[s\].
    pub damping: Option<f64>,
    /// Effective Hertz modulus `E*` \[Pa\].
    pub effective_modulus: Option<f64>,
    /// Linear stiffness `k_n` \[N/m\].
    pub linear_stiffness: Option<f64>,
}

impl PairOverride {
    /// Checks the given values (typed errors naming the field).
    pub fn validate(&self) -> Result<(), MathError> {
        for (field, v) in [
            ("friction", self.friction),
            ("rolling_resistance", self.rolling_resistance),
            ("damping", self.damping),
        ] {
            if let Some(v) = v {
                non_negative(field, v)?;
            }
        }
        if let Some(e) = self.restitution {
            finite("restitution", e)?;
            if !(0.0..=1.0).contains(&e) {
                return Err(MathError::OutOfRange {
                    field: "restitution",
                    value: e,
                    range: "[0, 1]",
                });
            }
        }
        if let Some(e) = self.effective_modulus {
            positive("effective_modulus", e)?;
        }
        if let Some(k) = self.linear_stiffness {
            positive("linear_stiffness", k)?;
        }
        Ok(())
    }

    /// `pair` with the given values replacing the combined ones.
    pub fn apply(&self, pair: &PairProperties) -> PairProperties {
        PairProperties {
            effective_radius: pair.effective_radius,
            effective_modulus: self.effective_modulus.unwrap_or(pair.effective_modulus),
            restitution: self.restitution.unwrap_or(pair.restitution),
            friction: self.friction.unwrap_or(pair.friction),
            rolling_resistance: self.rolling_resistance.unwrap_or(pair.rolling_resistance),
            damping: self.damping.unwrap_or(pair.damping),
            linear_stiffness: self.linear_stiffness.or(pair.linear_stiffness),
        }
    }
}

/// Properties of a contacting pair: effective radius and modulus and the
/// combined surface coefficients.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairProperties {
    /// Effective radius `R*`, `1/R* = 1/r_a + 1/r_b` \[m\] (a flat body has
    /// infinite radius, so `R* = r` against a plane).
    pub effective_radius: f64,
    /// Effective modulus `E*`, `1/E* = (1−ν_a²)/E_a + (1−ν_b²)/E_b` \[Pa\].
    pub effective_modulus: f64,
    /// Restitution: the smaller of the two.
    pub restitution: f64,
    /// Friction: the smaller of the two.
    pub friction: f64,
    /// Rolling resistance: the smaller of the two.
    pub rolling_resistance: f64,
    /// Dashpot time: the larger of the two.
    pub damping: f64,
    /// Linear stiffness `2 k_a k_b / (k_a + k_b)` when both materials have
    /// one ([`ContactLaw::LinearPerMaterial`]).
    pub linear_stiffness: Option<f64>,
}

impl PairProperties {
    /// Combines two materials and two curvature radii (`f64::INFINITY` for a
    /// flat surface). Surface coefficients take the smaller value (the
    /// slipperier, less elastic surface governs) and damping the larger;
    /// see `docs/theory.md`.
    pub fn combine(
        material_a: &Material,
        radius_a: f64,
        material_b: &Material,
        radius_b: f64,
    ) -> Result<Self, MathError> {
        material_a.validate()?;
        material_b.validate()?;
        Ok(Self {
            effective_radius: Self::effective_radius(radius_a, radius_b)?,
            effective_modulus: 1.0
                / (material_a.plane_strain_compliance() + material_b.plane_strain_compliance()),
            restitution: material_a.restitution.min(material_b.restitution),
            friction: material_a.friction.min(material_b.friction),
            rolling_resistance: material_a
                .rolling_resistance
                .min(material_b.rolling_resistance),
            damping: material_a.damping.max(material_b.damping),
            linear_stiffness: match (material_a.linear_stiffness, material_b.linear_stiffness) {
                (Some(a), Some(b)) => Some(2.0 * a * b / (a + b)),
                _ => None,
            },
        })
    }

    /// The effective radius `R*`, `1/R* = 1/r_a + 1/r_b`, of two curvature
    /// radii (`f64::INFINITY` for a flat surface), as [`Self::combine`]
    /// forms it: a table of combined materials ([`Self::with_radii`])
    /// gives the same properties bit for bit.
    pub fn effective_radius(radius_a: f64, radius_b: f64) -> Result<f64, MathError> {
        for (field, r) in [("radius_a", radius_a), ("radius_b", radius_b)] {
            if r.is_nan() || r <= 0.0 {
                return Err(MathError::NonPositive { field, value: r });
            }
        }
        let inv_r = 1.0 / radius_a + 1.0 / radius_b;
        positive("effective_radius", 1.0 / inv_r)?;
        Ok(1.0 / inv_r)
    }

    /// These properties with the effective radius of curvature radii
    /// `radius_a`, `radius_b` ([`Self::effective_radius`]): the rest does
    /// not depend on them, so a pair of materials combined once (with any
    /// radii) serves every contact between them.
    pub fn with_radii(&self, radius_a: f64, radius_b: f64) -> Result<Self, MathError> {
        Ok(Self {
            effective_radius: Self::effective_radius(radius_a, radius_b)?,
            ..*self
        })
    }

    /// Hertz stiffness `k_n = (4/3) E* √R*` [N/m^{3/2}].
    pub fn hertz_stiffness(&self) -> f64 {
        4.0 / 3.0 * self.effective_modulus * self.effective_radius.sqrt()
    }
}

/// Solver-independent settings of the SPOOK regularization.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpookSettings {
    /// Friction compliance `γ_t`, `Σ_t = γ_t/Δt` (paper: 1e-6).
    pub friction_compliance: f64,
    /// Rolling/twisting compliance `γ_r`, `Σ_r = γ_r/Δt` (paper: 1e-6).
    pub rolling_compliance: f64,
    /// Relaxation steps `n_s` in `τ_n = max(n_s Δt, ε_n/γ_n)` (paper: 2).
    pub relaxation_steps: f64,
    /// Overlap floor `δ₀` \[m\] for the Hertz row scaling `s_n` (`docs/theory.md`,
    /// "Pitfall"); only keeps `s_n > 0` at `δ → 0`.
    pub overlap_floor: f64,
}

impl Default for SpookSettings {
    fn default() -> Self {
        Self {
            friction_compliance: 1e-6,
            rolling_compliance: 1e-6,
            relaxation_steps: 2.0,
            overlap_floor: 1e-12,
        }
    }
}

impl SpookSettings {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), MathError> {
        non_negative("friction_compliance", self.friction_compliance)?;
        non_negative("rolling_compliance", self.rolling_compliance)?;
        positive("relaxation_steps", self.relaxation_steps)?;
        positive("overlap_floor", self.overlap_floor)?;
        Ok(())
    }
}

/// The SPOOK parameters of one contact for one time step (appendix A of the
/// warm-starting paper; `docs/theory.md`, "SPOOK").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContactParameters {
    /// Exponent `e_H` of the normal constraint.
    pub exponent: f64,
    /// Normal stiffness `k_n` (N/m^{3/2} for Hertz, N/m for linear,
    /// infinite for rigid).
    pub stiffness: f64,
    /// Normal compliance `ε_n = e_H / k_n` (0 for rigid).
    pub epsilon_n: f64,
    /// Normal relaxation time `τ_n = max(n_s Δt, ε_n/γ_n)` \[s\].
    pub tau_n: f64,
    /// `Σ_n = (4/Δt²) ε_n / (1 + 4 τ_n/Δt)`.
    pub sigma_n: f64,
    /// `Υ_n = 1 / (1 + 4 τ_n/Δt)`.
    pub upsilon_n: f64,
    /// `Σ_t = γ_t / Δt`.
    pub sigma_t: f64,
    /// `Σ_r = γ_r / Δt`.
    pub sigma_r: f64,
    /// Friction compliance `γ_t` (for model-based warm starting).
    pub gamma_t: f64,
    /// Rolling compliance `γ_r` (for model-based warm starting).
    pub gamma_r: f64,
    /// Friction coefficient `μ_t`.
    pub friction: f64,
    /// Rolling torque arm `μ_r R*` \[m\].
    pub rolling_arm: f64,
    /// Restitution `e`.
    pub restitution: f64,
}

impl ContactParameters {
    /// Maps pair properties and a contact law to SPOOK parameters for step `Δt`.
    ///
    /// `ε_n = e_H/k_n`, `1/γ_n = k_n c/e_H²` (so `ε_n/γ_n = c/e_H`),
    /// `τ_n = max(n_s Δt, c/e_H)`.
    pub fn new(
        law: ContactLaw,
        pair: &PairProperties,
        dt: f64,
        settings: &SpookSettings,
    ) -> Result<Self, MathError> {
        positive("dt", dt)?;
        settings.validate()?;
        let exponent = law.exponent();
        let tau_n = (settings.relaxation_steps * dt).max(pair.damping / exponent);
        let of_materials = Self {
            exponent,
            stiffness: 0.0,
            epsilon_n: 0.0,
            tau_n,
            sigma_n: 0.0,
            upsilon_n: 1.0 / (1.0 + 4.0 * tau_n / dt),
            sigma_t: settings.friction_compliance / dt,
            sigma_r: settings.rolling_compliance / dt,
            gamma_t: settings.friction_compliance,
            gamma_r: settings.rolling_compliance,
            friction: pair.friction,
            rolling_arm: 0.0,
            restitution: pair.restitution,
        };
        of_materials.with_radius_of(law, pair, dt)
    }

    /// The parameters of `pair` given those of another contact between
    /// the same two materials under the same law, `Δt` and settings
    /// (`self`, from [`Self::new`]; [`PairProperties::with_radii`]): only
    /// `k_n`, `ε_n`, `Σ_n` and the rolling arm `μ_r R*` depend on the
    /// effective radius, and they are formed as [`Self::new`] forms them,
    /// so the result is `new`'s bit for bit. A stepper forms `new` once
    /// per pair of materials and this per contact.
    pub fn with_radius_of(
        &self,
        law: ContactLaw,
        pair: &PairProperties,
        dt: f64,
    ) -> Result<Self, MathError> {
        let exponent = self.exponent;
        let (stiffness, epsilon_n) = match law {
            ContactLaw::Hertz => {
                let k = positive("stiffness", pair.hertz_stiffness())?;
                (k, exponent / k)
            }
            ContactLaw::Linear { stiffness } => {
                let k = positive("stiffness", stiffness)?;
                (k, exponent / k)
            }
            ContactLaw::LinearPerMaterial => {
                let k = pair.linear_stiffness.ok_or(MathError::Missing {
                    field: "linear_stiffness",
                    by: "the per-material linear contact law (both materials need it)",
                })?;
                let k = positive("linear_stiffness", k)?;
                (k, exponent / k)
            }
            ContactLaw::Rigid => (f64::INFINITY, 0.0),
        };
        Ok(Self {
            stiffness,
            epsilon_n,
            sigma_n: 4.0 / (dt * dt) * epsilon_n * self.upsilon_n,
            rolling_arm: pair.rolling_resistance * pair.effective_radius,
            ..*self
        })
    }

    /// The static normal force the regularized row produces at overlap `δ`
    /// (`docs/theory.md`, "Static check"): `s_n δ^{e_H}/ε_n = (e_H/ε_n) δ^{2e_H−1}`,
    /// which equals `k_n δ^{3/2}` for Hertz. A rigid contact has no static
    /// overlap: any `δ > 0` gives an infinite force.
    pub fn static_force(&self, overlap: f64) -> f64 {
        if self.epsilon_n == 0.0 {
            return if overlap > 0.0 { f64::INFINITY } else { 0.0 };
        }
        let s_n = self.exponent * overlap.powf(self.exponent - 1.0);
        s_n * overlap.powf(self.exponent) / self.epsilon_n
    }
}

//! Settings of the smooth stepper.

use crate::law::SmoothLaw;

/// Settings of the smooth stepper.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SmoothSettings {
    /// Time step \[s\].
    pub dt: f64,
    /// Normal law.
    pub law: SmoothLaw,
    /// Largest allowed `Δt / Δt_c` (default 0.2: with tangential and rolling
    /// springs a dense close packing was measured unstable at 0.3 Δt_R and
    /// stable at 0.1).
    pub safety: f64,
    /// Apply rolling resistance (elastic-plastic spring-dashpot, Ai et al.
    /// 2011, model C).
    pub rolling: bool,
    /// Damping ratio `η_r` of the rolling dashpot (model C: the dashpot
    /// `C_r = η_r 2 √(I_r k_r)` acts while the spring is below its limit;
    /// Ai et al. use 0.3). 0 leaves the rolling spring undamped, and a bed
    /// then keeps rotational oscillations that never die out.
    pub rolling_damping: f64,
    /// Verlet skin as a fraction of the smallest sphere radius: detection
    /// runs with this extra margin and only when some body has moved (or
    /// turned, times its bounding radius) more than half the skin since;
    /// in between, the narrow phase runs on the stored candidate pairs.
    /// 0 detects every step.
    pub skin: f64,
    /// Integrate the orientations of spheres. A sphere's geometry, inertia
    /// and contacts do not depend on its orientation, so by default only
    /// its angular velocity is integrated and its quaternion stays as it
    /// was (saving a `sin`/`cos` per sphere and step); set this to track
    /// it, e.g. for output that draws rotation markers. Other shapes are
    /// always integrated.
    pub sphere_orientations: bool,
    /// Threads that evaluate contact forces: 1 (default) runs on the
    /// calling thread, 0 uses every core. Each contact's force is computed
    /// on its own and the sums are taken serially in contact order, so the
    /// trajectory is bit-identical for every thread count. At most
    /// [`ndem_par::blocks::MAX_THREADS`]; [`SmoothStepper::new`](crate::SmoothStepper::new) refuses a
    /// count the system does not give at once.
    pub threads: usize,
    /// Keep each step's contacts for [`SmoothStepper::contacts`](crate::SmoothStepper::contacts) and
    /// [`SmoothStepper::normal_forces`](crate::SmoothStepper::normal_forces) (default `true`). Off, one thread
    /// writes no contact set: on the settling bed of `cargo xtask peers
    /// smooth` at 10⁴ spheres that saved 2 % of the run
    /// (`docs/performance.md`). The trajectory is the same
    /// either way.
    pub record_contacts: bool,
}

impl SmoothSettings {
    /// The default settings at the time step `dt` \[s\].
    pub fn with_dt(dt: f64) -> Self {
        Self {
            dt,
            ..Self::default()
        }
    }
}

impl Default for SmoothSettings {
    fn default() -> Self {
        Self {
            dt: 1e-5,
            law: SmoothLaw::Hertz,
            safety: 0.2,
            rolling: true,
            rolling_damping: 0.3,
            skin: 0.2,
            sphere_orientations: false,
            threads: 1,
            record_contacts: true,
        }
    }
}

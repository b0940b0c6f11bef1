//! Mass properties and motion of a rigid aggregate (adaptive-model-reduction
//! paper, eqs. 6-10, with each body's own inertia: `docs/reduction.md`, "Aggregate mass properties").

use crate::ReduceError;
use ndem_math::{MassProperties, Mat3, Quat, Vec3, Velocity6};
use ndem_step::World;

/// The rigid body that replaces a set of bodies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AggregateState {
    /// Mass and principal moments.
    pub mass: MassProperties,
    /// Centre of mass `x_A = Σ m_a x_a / m_A` (eq. 7).
    pub position: Vec3,
    /// Principal frame of `I_A`.
    pub orientation: Quat,
    /// `(v_A, ω_A)`: `v_A = Σ m_a v_a / m_A` (eq. 8),
    /// `ω_A = I_A⁻¹ Σ (m_a r_a × v_a + I_a ω_a)` (eq. 10 with the bodies'
    /// own inertia).
    pub velocity: Velocity6,
    /// World-frame inertia about the centre of mass,
    /// `I_A = Σ [I_a + m_a (|r_a|² 1 − r_a r_aᵀ)]` (eq. 9 with `I_a`).
    pub inertia: Mat3,
}

/// The aggregate of `bodies` (at least one, each with mass properties),
/// from their current positions, orientations and velocities. Mass, linear
/// momentum and angular momentum are those of the bodies, exactly up to
/// round-off, so merging conserves them; the kinetic energy of the bodies'
/// motion relative to the aggregate is what merging removes.
pub fn aggregate_state(world: &World, bodies: &[usize]) -> Result<AggregateState, ReduceError> {
    let masses = world.mass_properties();
    let (x, q, v) = (world.positions(), world.orientations(), world.velocities());
    let mut m = 0.0;
    let mut mx = Vec3::zeros();
    let mut mv = Vec3::zeros();
    for &a in bodies {
        let ma = masses
            .get(a)
            .and_then(|p| p.as_ref())
            .ok_or(ReduceError::NotMergeable {
                body: a,
                reason: "no mass properties",
            })?
            .mass;
        m += ma;
        mx += x[a] * ma;
        mv += v[a].linear * ma;
    }
    if m.is_nan() || m <= 0.0 {
        return Err(ReduceError::NotMergeable {
            body: bodies.first().copied().unwrap_or(0),
            reason: "an aggregate needs bodies with mass",
        });
    }
    let xa = mx / m;
    let va = mv / m;
    let mut inertia = Mat3::zeros();
    let mut momentum = Vec3::zeros();
    for &a in bodies {
        let p = masses[a].as_ref().expect("checked above");
        let r = x[a] - xa;
        let ia = p.world_inertia(&q[a]);
        inertia += ia + (Mat3::identity() * r.norm_squared() - r * r.transpose()) * p.mass;
        momentum += r.cross(&(v[a].linear * p.mass)) + ia * v[a].angular;
    }
    let inertia = 0.5 * (inertia + inertia.transpose());
    let omega = inertia.try_inverse().ok_or(ReduceError::NotMergeable {
        body: bodies[0],
        reason: "singular aggregate inertia",
    })? * momentum;
    let (orientation, principal) = principal_frame(&inertia);
    Ok(AggregateState {
        mass: MassProperties::new(m, principal)?,
        position: xa,
        orientation,
        velocity: Velocity6::new(va, omega),
        inertia,
    })
}

/// Principal moments and the rotation to the principal frame of a
/// symmetric positive definite inertia (right-handed, deterministic).
fn principal_frame(inertia: &Mat3) -> (Quat, Vec3) {
    let eig = nalgebra::SymmetricEigen::new(*inertia);
    let mut r = eig.eigenvectors;
    if r.determinant() < 0.0 {
        r.set_column(2, &(-r.column(2)));
    }
    let rot = nalgebra::Rotation3::from_matrix_unchecked(r);
    (Quat::from_rotation_matrix(&rot), eig.eigenvalues)
}

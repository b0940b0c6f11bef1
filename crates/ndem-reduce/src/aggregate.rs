//! Mass properties and motion of a rigid aggregate (adaptive-model-reduction
//! paper, eqs. 6-10, with each body's own inertia: `docs/reduction.md`, "Aggregate mass properties").

use crate::ReduceError;
use ndem_collide::Shape;
use ndem_math::{MassProperties, Mat3, Quat, Vec3, Velocity6};
use ndem_step::{BodyDesc, BodyId, MaterialId, World};

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
    let first = first_moments(world, bodies)?;
    let (xa, _) = first.centre(bodies.first().copied().unwrap_or(0))?;
    let masses = world.mass_properties();
    let (x, q, v) = (world.positions(), world.orientations(), world.velocities());
    let mut second = SecondMoments::default();
    for &a in bodies {
        let p = masses[a].as_ref().expect("checked by first_moments");
        second.add(p, &xa, (&x[a], &q[a], &v[a]));
    }
    first.finish(&second, bodies[0])
}

/// The sums of eqs. 6-8 over `bodies`; a body without mass properties is
/// an error naming it.
fn first_moments(world: &World, bodies: &[usize]) -> Result<FirstMoments, ReduceError> {
    let masses = world.mass_properties();
    let mut first = FirstMoments::default();
    for &a in bodies {
        let p = masses
            .get(a)
            .and_then(|p| p.as_ref())
            .ok_or(ReduceError::NotMergeable {
                body: a,
                reason: "no mass properties",
            })?;
        first.add(p.mass, &world.positions()[a], &world.velocities()[a]);
    }
    Ok(first)
}

/// Places an aggregate's body with `state` (mass, pose, velocity): `reuse`,
/// a retired aggregate body, is made active again; without one a body of
/// no shape is added. Returns the body's index.
pub fn place_aggregate_body(
    world: &mut World,
    reuse: Option<usize>,
    state: &AggregateState,
) -> Result<usize, ReduceError> {
    match reuse {
        Some(b) => {
            world.set_active(b, Some(state.mass))?;
            world.set_mass_properties(b, state.mass, state.orientation)?;
            world.set_position(BodyId::from_index(b), state.position)?;
            world.set_velocity(BodyId::from_index(b), state.velocity)?;
            Ok(b)
        }
        None => {
            let mut desc =
                BodyDesc::dynamic(Shape::Empty, MaterialId::from_index(0), state.position);
            desc.mass = Some(state.mass);
            desc.orientation = state.orientation;
            desc.velocity = state.velocity;
            Ok(world.add_body(desc)?.index())
        }
    }
}

/// Places the static host of an aggregate anchored to static geometry at
/// the centre of mass of `members` (eq. 7): `reuse`, a retired aggregate
/// body (already static, without mass, at rest), is moved there; without
/// one a static body of no shape is added. Returns the body's index.
pub fn place_anchor_body(
    world: &mut World,
    reuse: Option<usize>,
    members: &[usize],
) -> Result<usize, ReduceError> {
    let first = first_moments(world, members)?;
    let (centre, _) = first.centre(members.first().copied().unwrap_or(0))?;
    match reuse {
        Some(b) => {
            world.set_position(BodyId::from_index(b), centre)?;
            Ok(b)
        }
        None => {
            let desc = BodyDesc::fixed(Shape::Empty, MaterialId::from_index(0), centre);
            Ok(world.add_body(desc)?.index())
        }
    }
}

/// Attaches `members` to the aggregate body `host` and moves them with it.
pub fn attach_members(
    world: &mut World,
    members: &[usize],
    host: usize,
) -> Result<(), ReduceError> {
    for &m in members {
        world.attach(BodyId::from_index(m), BodyId::from_index(host))?;
    }
    world.co_move_bodies(members);
    Ok(())
}

/// The sums of eqs. 6-8 over some bodies: `m`, `Σ m_a x_a`, `Σ m_a v_a`.
/// Partial sums over parts of an aggregate (one rank's members) add up
/// ([`Self::as_array`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FirstMoments {
    /// `Σ m_a` \[kg\].
    pub mass: f64,
    /// `Σ m_a x_a` \[kg m\].
    pub mass_position: Vec3,
    /// `Σ m_a v_a` \[kg m/s\].
    pub momentum: Vec3,
}

impl FirstMoments {
    /// Adds a body of mass `m` at `x` with velocity `v`.
    pub fn add(&mut self, m: f64, x: &Vec3, v: &Velocity6) {
        self.mass += m;
        self.mass_position += x * m;
        self.momentum += v.linear * m;
    }

    /// The seven sums as one array (to add over ranks).
    pub fn as_array(&self) -> [f64; 7] {
        let (x, p) = (&self.mass_position, &self.momentum);
        [self.mass, x.x, x.y, x.z, p.x, p.y, p.z]
    }

    /// The sums from [`Self::as_array`]'s layout.
    pub fn from_slice(v: &[f64]) -> Self {
        Self {
            mass: v[0],
            mass_position: Vec3::new(v[1], v[2], v[3]),
            momentum: Vec3::new(v[4], v[5], v[6]),
        }
    }

    /// `x_A` and `v_A` (eqs. 7-8); a massless sum is an error naming
    /// `body`.
    pub fn centre(&self, body: usize) -> Result<(Vec3, Vec3), ReduceError> {
        let m = self.mass;
        if m.is_nan() || m <= 0.0 {
            return Err(ReduceError::NotMergeable {
                body,
                reason: "an aggregate needs bodies with mass",
            });
        }
        Ok((self.mass_position / m, self.momentum / m))
    }

    /// The aggregate from these sums and the second moments about
    /// [`Self::centre`]; errors name `body`.
    pub fn finish(
        &self,
        second: &SecondMoments,
        body: usize,
    ) -> Result<AggregateState, ReduceError> {
        let (xa, va) = self.centre(body)?;
        let inertia = 0.5 * (second.inertia + second.inertia.transpose());
        let omega = inertia.try_inverse().ok_or(ReduceError::NotMergeable {
            body,
            reason: "singular aggregate inertia",
        })? * second.angular_momentum;
        let (orientation, principal) = principal_frame(&inertia);
        Ok(AggregateState {
            mass: MassProperties::new(self.mass, principal)?,
            position: xa,
            orientation,
            velocity: Velocity6::new(va, omega),
            inertia,
        })
    }
}

/// The sums of eqs. 9-10 about the centre of mass `x_A`:
/// `Σ [I_a + m_a (|r_a|² 1 − r_a r_aᵀ)]` and `Σ (r_a × m_a v_a + I_a ω_a)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SecondMoments {
    /// World-frame inertia about `x_A` \[kg m²\].
    pub inertia: Mat3,
    /// Angular momentum about `x_A` \[kg m²/s\].
    pub angular_momentum: Vec3,
}

impl Default for SecondMoments {
    fn default() -> Self {
        Self {
            inertia: Mat3::zeros(),
            angular_momentum: Vec3::zeros(),
        }
    }
}

impl SecondMoments {
    /// Adds a body with mass properties `p` at `x`, orientation `q`,
    /// velocity `v`, about `centre`.
    pub fn add(
        &mut self,
        p: &MassProperties,
        centre: &Vec3,
        (x, q, v): (&Vec3, &Quat, &Velocity6),
    ) {
        let r = x - centre;
        let ia = p.world_inertia(q);
        self.inertia += ia + (Mat3::identity() * r.norm_squared() - r * r.transpose()) * p.mass;
        self.angular_momentum += r.cross(&(v.linear * p.mass)) + ia * v.angular;
    }

    /// The twelve sums as one array (to add over ranks).
    pub fn as_array(&self) -> [f64; 12] {
        let mut out = [0.0; 12];
        out[..9].copy_from_slice(self.inertia.as_slice());
        out[9..].copy_from_slice(self.angular_momentum.as_slice());
        out
    }

    /// The sums from [`Self::as_array`]'s layout.
    pub fn from_slice(v: &[f64]) -> Self {
        Self {
            inertia: Mat3::from_column_slice(&v[..9]),
            angular_momentum: Vec3::new(v[9], v[10], v[11]),
        }
    }
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

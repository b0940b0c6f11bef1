//! Deterministic, seeded problem generators for tests, benches and solver
//! comparisons.
//!
//! * [`sphere_packing`]: a packing of Hertz spheres on a jittered cubic
//!   lattice resting on a ground plane under gravity, with the SPOOK
//!   parameters of the warm-starting paper's Table 1. Sizes from a handful
//!   of spheres (property tests) to 10⁵ (benches).
//! * [`random_sparse_problem`]: random bodies and random two-body rows
//!   assembled through [`ContactProblem::from_sparse`].

mod manufactured;

pub use manufactured::{ManufacturedSpec, manufactured_local_problem};

use nalgebra_sparse::{CooMatrix, CsrMatrix};
use ndem_math::jacobian::normal_row;
use ndem_math::rng::Rng;
use ndem_math::{
    ContactFrame, ContactJacobian, ContactKey, ContactLaw, ContactParameters, InverseMass,
    MassProperties, Material, MathError, PairProperties, RowKind, SpookSettings, Vec3, Velocity6,
};
use ndem_solve::SolveError;
use ndem_solve::{Contact, ContactProblem, ContactRows, FrictionSet, RowBounds};

/// Why a generator built no problem: a field of its spec out of range
/// (named), or a problem, material or body the spec describes that the
/// solver's or the math crate's checks refuse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GenerateError {
    /// A field of the spec is out of its range.
    #[error("invalid generator field `{field}`: {reason}")]
    Spec {
        /// The field, as the spec names it.
        field: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// The problem the spec describes is refused ([`ContactProblem`]'s checks).
    #[error(transparent)]
    Problem(#[from] SolveError),
    /// A material, body or contact law of the spec is refused.
    #[error(transparent)]
    Math(#[from] MathError),
}

/// `Ok` when `ok`, else the spec error naming `field` with `reason`.
fn require(ok: bool, field: &'static str, reason: &'static str) -> Result<(), GenerateError> {
    if ok {
        Ok(())
    } else {
        Err(GenerateError::Spec { field, reason })
    }
}

fn positive(field: &'static str, x: f64) -> Result<(), GenerateError> {
    require(
        x.is_finite() && x > 0.0,
        field,
        "must be finite and positive",
    )
}

fn not_negative(field: &'static str, x: f64) -> Result<(), GenerateError> {
    require(
        x.is_finite() && x >= 0.0,
        field,
        "must be finite and not negative",
    )
}

/// `x` in `[0, 1]`.
fn fraction(field: &'static str, x: f64) -> Result<(), GenerateError> {
    require((0.0..=1.0).contains(&x), field, "must be in [0, 1]")
}

/// `x` in `[0, 1)`.
fn below_one(field: &'static str, x: f64) -> Result<(), GenerateError> {
    require((0.0..1.0).contains(&x), field, "must be in [0, 1)")
}

/// Most of anything a generated problem indexes: indices are `u32`.
const MAX_INDEX: usize = u32::MAX as usize - 1;

/// `Ok` when the product of `factors` is at most [`MAX_INDEX`].
fn indexable(field: &'static str, factors: &[usize]) -> Result<(), GenerateError> {
    let n = factors.iter().try_fold(1usize, |n, &f| n.checked_mul(f));
    require(
        n.is_some_and(|n| n <= MAX_INDEX),
        field,
        "is too large: a problem's indices are u32",
    )
}

/// Parameters of [`sphere_packing`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PackingSpec {
    /// Lattice size in x, y (horizontal) and z (layers).
    pub cells: [usize; 3],
    /// Nominal radius \[m\].
    pub radius: f64,
    /// Radii are drawn uniformly in `[r, (1 + polydispersity) r]`.
    pub polydispersity: f64,
    /// Lattice spacing is `2 r (1 − compression)`, so that lattice
    /// neighbours overlap by at least `2 r compression`.
    pub compression: f64,
    /// Random displacement of each centre, as a fraction of `r · compression`
    /// (values below 0.5 keep every lattice neighbour in contact).
    pub jitter: f64,
    /// SPOOK settings (compliances γ_t, γ_r).
    pub spook: SpookSettings,
    /// Rows per contact.
    pub rows: ContactRows,
    /// Friction set.
    pub friction_set: FrictionSet,
    /// Time step \[s\].
    pub dt: f64,
    /// Particle material.
    pub material: Material,
    /// Random initial speeds up to this value [m/s].
    pub speed: f64,
    /// Seed.
    pub seed: u64,
    /// The bottom `merged_layers` layers are one rigid body (body 1, a
    /// model-reduction aggregate: the spheres' summed mass and inertia
    /// about their centre of mass, at rest), their mutual contacts left
    /// out; 0 (default): every sphere is a body.
    pub merged_layers: usize,
}

impl Default for PackingSpec {
    fn default() -> Self {
        Self {
            cells: [4, 4, 4],
            radius: 0.0065,
            polydispersity: 0.05,
            compression: 0.02,
            jitter: 0.25,
            spook: SpookSettings::default(),
            rows: ContactRows::NormalFrictionRolling,
            friction_set: FrictionSet::Box,
            dt: 5e-3,
            material: Material::default(),
            speed: 0.0,
            seed: 1,
            merged_layers: 0,
        }
    }
}

/// A box of mass `m` with half extents in `[floor, floor + 1)`, a random
/// orientation and a random free velocity (components in `[−1, 1)`): its
/// world inverse mass and velocity, drawn in that order.
fn random_box_body(
    rng: &mut Rng,
    m: f64,
    floor: f64,
) -> Result<(InverseMass, Velocity6), MathError> {
    let he = Vec3::new(rng.uniform(), rng.uniform(), rng.uniform()).map(|x| floor + x);
    let axis = Vec3::new(rng.uniform(), rng.uniform(), rng.uniform()).map(|x| 2.0 * x - 1.0);
    let q = ndem_math::Quat::from_scaled_axis(axis);
    let inverse = MassProperties::solid_box(m, he)?.inverse(&q);
    let mut v = [0.0; 6];
    for x in &mut v {
        *x = 2.0 * rng.uniform() - 1.0;
    }
    Ok((inverse, Velocity6::from_slice(&v)))
}

impl PackingSpec {
    /// `radius` and `dt` finite and positive; `polydispersity`, `jitter`
    /// and `speed` finite and not negative; `compression` in `[0, 1)`;
    /// `cells` indexable. Each failure names its field
    /// ([`GenerateError::Spec`]); the material and SPOOK settings are
    /// checked where they are combined.
    pub fn validate(&self) -> Result<(), GenerateError> {
        indexable("cells", &self.cells)?;
        positive("radius", self.radius)?;
        not_negative("polydispersity", self.polydispersity)?;
        not_negative("jitter", self.jitter)?;
        not_negative("speed", self.speed)?;
        positive("dt", self.dt)?;
        below_one("compression", self.compression)?;
        Ok(())
    }
}

/// [`sphere_packing`] of the default spec with `cells` spheres per side.
///
/// # Panics
/// When `cells` makes the spec invalid (a zero count or a packing too
/// large to index): for tests, which pick their sizes.
pub fn default_packing(cells: [usize; 3]) -> ContactProblem {
    sphere_packing(&PackingSpec {
        cells,
        ..PackingSpec::default()
    })
    .expect("a valid packing spec")
}

/// Builds the contact problem of a sphere packing on a ground plane (body 0,
/// infinite mass, the plane `z = 0`). Contacts are generated in lattice
/// order, which is cache friendly.
/// A spec that fails [`PackingSpec::validate`] is refused; the material,
/// SPOOK settings and contacts are checked as the stepper checks them.
pub fn sphere_packing(spec: &PackingSpec) -> Result<ContactProblem, GenerateError> {
    let [nx, ny, nz] = spec.cells;
    spec.validate()?;
    let mut rng = Rng::new(spec.seed);
    let (pos, rad) = lattice(spec, &mut rng);
    let gravity = Vec3::new(0.0, 0.0, -9.81);
    let merged = spec.merged_layers.min(nz) * nx * ny;
    let mut inv = vec![InverseMass::INFINITE_MASS];
    let mut vstar = vec![Velocity6::ZERO];
    let mut vold = vec![Velocity6::ZERO];
    let mut centre = None;
    if merged > 0 {
        let (inverse, c) = merged_body(&pos[..merged], &rad[..merged], spec)?;
        inv.push(inverse);
        vold.push(Velocity6::ZERO);
        vstar.push(Velocity6::new(gravity * spec.dt, Vec3::zeros()));
        centre = Some(c);
    }
    // body of sphere `s`, and its centre's offset from that body's centre
    let body_of = |s: usize| match merged {
        0 => s + 1,
        _ if s < merged => 1,
        _ => s + 2 - merged,
    };
    let offset = |s: usize| match centre {
        Some(c) if s < merged => pos[s] - c,
        _ => Vec3::zeros(),
    };
    for &r in &rad[merged..] {
        let mp = MassProperties::solid_sphere(spec.material.density, r)?;
        inv.push(mp.inverse(&ndem_math::Quat::identity()));
        let v = Velocity6::new(
            Vec3::new(rng.uniform(), rng.uniform(), rng.uniform())
                .map(|x| (2.0 * x - 1.0) * spec.speed),
            Vec3::zeros(),
        );
        vold.push(v);
        vstar.push(Velocity6::new(v.linear + gravity * spec.dt, v.angular));
    }
    let mut p = ContactProblem::new(inv, vstar, spec.rows, spec.friction_set, spec.dt)?;
    let settings = spec.spook;
    let idx = |i: usize, j: usize, k: usize| i + nx * (j + ny * k);
    let add = |p: &mut ContactProblem, a: usize, b: Option<usize>| -> Result<(), GenerateError> {
        let (xa, ra) = (pos[a], rad[a]);
        let (normal, gap, arm_b, rb) = match b {
            Some(b) => {
                let d = xa - pos[b];
                let dist = d.norm();
                let n = d / dist;
                (n, dist - ra - rad[b], n * rad[b], rad[b])
            }
            None => {
                let n = Vec3::z();
                (n, xa.z - ra, Vec3::new(xa.x, xa.y, 0.0), f64::INFINITY)
            }
        };
        if gap >= 0.0 || (a < merged && b.is_some_and(|b| b < merged)) {
            return Ok(());
        }
        let arm_a = offset(a) - normal * (ra + 0.5 * gap);
        let arm_b = b.map_or(Vec3::zeros(), offset) + arm_b + normal * (0.5 * gap);
        let pair = PairProperties::combine(&spec.material, ra, &spec.material, rb)?;
        let params = ContactParameters::new(ContactLaw::Hertz, &pair, spec.dt, &settings)?;
        let nr = normal_row(gap, params.exponent, settings.overlap_floor);
        let jac = ContactJacobian::new(
            ContactFrame::from_unit_normal(normal),
            &arm_a,
            &arm_b,
            nr.scale,
        );
        let (ba, bb) = (body_of(a), b.map_or(0, body_of));
        let gv_old = jac.normal_velocity(&vold[ba], &vold[bb]);
        let key = ContactKey::new(ba as u32, bb as u32, 0);
        let c = Contact::spook(
            [ba as u32, bb as u32],
            key,
            jac,
            nr.g,
            gv_old,
            &params,
            spec.dt,
        );
        p.push_contact(c)?;
        Ok(())
    };
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                let a = idx(i, j, k);
                if k == 0 {
                    add(&mut p, a, None)?;
                }
                if i > 0 {
                    add(&mut p, a, Some(idx(i - 1, j, k)))?;
                }
                if j > 0 {
                    add(&mut p, a, Some(idx(i, j - 1, k)))?;
                }
                if k > 0 {
                    add(&mut p, a, Some(idx(i, j, k - 1)))?;
                }
            }
        }
    }
    Ok(p)
}

/// The centres and radii of [`sphere_packing`]'s spheres in lattice order
/// (x fastest), drawn from `rng`.
fn lattice(spec: &PackingSpec, rng: &mut Rng) -> (Vec<Vec3>, Vec<f64>) {
    let [nx, ny, nz] = spec.cells;
    let r0 = spec.radius;
    let spacing = 2.0 * r0 * (1.0 - spec.compression);
    let n = nx * ny * nz;
    let mut pos = Vec::with_capacity(n);
    let mut rad = Vec::with_capacity(n);
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                let r = r0 * (1.0 + spec.polydispersity * rng.uniform());
                let jit = Vec3::new(rng.uniform(), rng.uniform(), rng.uniform())
                    .map(|x| (2.0 * x - 1.0) * spec.jitter * spec.compression * r0);
                let z = r0 * (1.0 - spec.compression) + k as f64 * spacing;
                pos.push(Vec3::new(i as f64 * spacing, j as f64 * spacing, z) + jit);
                rad.push(r);
            }
        }
    }
    (pos, rad)
}

/// The inverse mass and centre of the rigid body the spheres at `pos`
/// with radii `rad` make ([`PackingSpec::merged_layers`]): summed mass,
/// inertia about the centre of mass by the parallel-axis theorem.
fn merged_body(
    pos: &[Vec3],
    rad: &[f64],
    spec: &PackingSpec,
) -> Result<(InverseMass, Vec3), GenerateError> {
    let mut mass = 0.0;
    let mut moment = Vec3::zeros();
    let mut parts = Vec::with_capacity(pos.len());
    for (&x, &r) in pos.iter().zip(rad) {
        let mp = MassProperties::solid_sphere(spec.material.density, r)?;
        mass += mp.mass;
        moment += x * mp.mass;
        parts.push((x, mp));
    }
    let centre = moment / mass;
    let mut inertia = ndem_math::Mat3::zeros();
    for (x, mp) in parts {
        let d = x - centre;
        inertia += ndem_math::Mat3::from_diagonal(&mp.principal_inertia)
            + (ndem_math::Mat3::identity() * d.norm_squared() - d * d.transpose()) * mp.mass;
    }
    let inv_inertia = inertia.try_inverse().ok_or(GenerateError::Spec {
        field: "merged_layers",
        reason: "the merged spheres' inertia is singular",
    })?;
    let inverse = InverseMass {
        inv_mass: 1.0 / mass,
        inv_inertia,
    };
    Ok((inverse, centre))
}

/// Parameters of [`random_sparse_problem`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SparseSpec {
    /// Number of bodies (the first is static).
    pub bodies: usize,
    /// Number of rows.
    pub rows: usize,
    /// Fraction of rows that are bilateral (free) rather than `λ ≥ 0`.
    pub bilateral_fraction: f64,
    /// Smallest regularization Σ (keeps N positive definite when > 0).
    pub min_sigma: f64,
    /// Seed.
    pub seed: u64,
}

impl SparseSpec {
    /// `bilateral_fraction` in `[0, 1]`, `min_sigma` finite and not
    /// negative, `bodies` and `rows` indexable; each failure names its
    /// field ([`GenerateError::Spec`]).
    pub fn validate(&self) -> Result<(), GenerateError> {
        fraction("bilateral_fraction", self.bilateral_fraction)?;
        not_negative("min_sigma", self.min_sigma)?;
        indexable("bodies", &[self.bodies, 6])?;
        indexable("rows", &[self.rows, 2])?;
        Ok(())
    }
}

/// A random problem of unilateral and bilateral rows, each acting on two
/// random bodies, built from a sparse `G` with
/// [`ContactProblem::from_sparse`]. A spec that fails
/// [`SparseSpec::validate`] is refused.
pub fn random_sparse_problem(spec: &SparseSpec) -> Result<ContactProblem, GenerateError> {
    spec.validate()?;
    let mut rng = Rng::new(spec.seed);
    let nb = spec.bodies.max(2);
    let mut inv = vec![InverseMass::INFINITE_MASS];
    let mut vstar = vec![Velocity6::ZERO];
    for _ in 1..nb {
        let m = 0.5 + 2.0 * rng.uniform();
        let (i, v) = random_box_body(&mut rng, m, 0.1)?;
        inv.push(i);
        vstar.push(v);
    }
    let mut coo = CooMatrix::new(spec.rows, 6 * nb);
    let mut sigma = Vec::new();
    let mut rhs = Vec::new();
    let mut bounds = Vec::new();
    let mut kinds = Vec::new();
    for i in 0..spec.rows {
        let a = 1 + (rng.next_u64() as usize) % (nb - 1);
        let mut b = (rng.next_u64() as usize) % nb;
        if b == a {
            b = 0;
        }
        for body in [a, b] {
            for k in 0..6 {
                let v = 2.0 * rng.uniform() - 1.0;
                coo.push(i, 6 * body + k, v);
            }
        }
        sigma.push(spec.min_sigma + 0.1 * rng.uniform());
        rhs.push(2.0 * rng.uniform() - 1.0);
        if rng.uniform() < spec.bilateral_fraction {
            bounds.push(RowBounds::Fixed {
                lower: f64::NEG_INFINITY,
                upper: f64::INFINITY,
            });
            kinds.push(RowKind::Bilateral);
        } else {
            bounds.push(RowBounds::Fixed {
                lower: 0.0,
                upper: f64::INFINITY,
            });
            kinds.push(RowKind::Normal);
        }
    }
    let g = CsrMatrix::from(&coo);
    Ok(ContactProblem::from_sparse(
        &g, inv, vstar, &sigma, &rhs, &bounds, &kinds,
    )?)
}

/// The compatible-contact-dynamics paper's beam: a rigid platform (a box
/// 2 m × 0.2 m × 0.1 m) of weight `weight` \[N\] resting on three supports at
/// x = −0.8, 0, 0.8 m (static body 0, features 0, 1, 2), frictionless, with
/// unit-scaled normal rows, tiny regularization and zero gap. Body 1 is the
/// platform; `dt` = 10 ms. A `weight` that is not finite and positive is
/// named in [`GenerateError::Spec`].
pub fn beam_problem(weight: f64) -> Result<ContactProblem, GenerateError> {
    positive("weight", weight)?;
    let g = 9.81;
    let dt = 0.01;
    let he = Vec3::new(1.0, 0.1, 0.05);
    let mp = MassProperties::solid_box(weight / g, he)?;
    let inv = vec![
        InverseMass::INFINITE_MASS,
        mp.inverse(&ndem_math::Quat::identity()),
    ];
    let vstar = vec![
        Velocity6::ZERO,
        Velocity6::new(Vec3::new(0.0, 0.0, -g * dt), Vec3::zeros()),
    ];
    let mut p = ContactProblem::new(inv, vstar, ContactRows::Normal, FrictionSet::Box, dt)?;
    for (k, x) in [-0.8, 0.0, 0.8].into_iter().enumerate() {
        let point = Vec3::new(x, 0.0, -he.z);
        let jac = ContactJacobian::new(
            ContactFrame::from_unit_normal(Vec3::z()),
            &point,
            &point,
            1.0,
        );
        p.push_contact(Contact {
            bodies: [1, 0],
            key: ContactKey::new(1, 0, k as u32),
            jacobian: jac,
            sigma: [1e-12, 1e-12, 1e-12],
            rhs: [0.0; 6],
            friction: 0.0,
            rolling_arm: 0.0,
            model: Default::default(),
        })?;
    }
    Ok(p)
}

/// Parameters of [`skewed_contacts`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SkewedSpec {
    /// Dynamic bodies (boxes with anisotropic, rotated inertia); body 0 is
    /// a static ground.
    pub bodies: usize,
    /// Number of contacts (each dynamic body gets one ground contact first,
    /// the rest join random pairs of bodies).
    pub contacts: usize,
    /// How far the tangent vectors are from an orthonormal frame: each
    /// tangent is scaled by a factor in `[1 − skew, 1 + skew]` and tilted
    /// towards the other tangent and the normal by up to `skew / 2`.
    pub skew: f64,
    /// Tangential free speed relative to the normal approach speed (values
    /// above `μ` make contacts slide).
    pub sliding: f64,
    /// Rows per contact.
    pub rows: ContactRows,
    /// Seed.
    pub seed: u64,
}

impl SkewedSpec {
    /// `skew` in `[0, 1)`, `sliding` finite and not negative, `bodies` and
    /// `contacts` indexable; each failure names its field
    /// ([`GenerateError::Spec`]).
    pub fn validate(&self) -> Result<(), GenerateError> {
        below_one("skew", self.skew)?;
        not_negative("sliding", self.sliding)?;
        indexable("bodies", &[self.bodies, 6])?;
        indexable("contacts", &[self.contacts, 6])?;
        Ok(())
    }
}

/// Frictional contacts whose two tangent rows have different diagonals
/// `D_t1 ≠ D_t2` and are coupled (`G_t1 M⁻¹ G_t2ᵀ ≠ 0`): rotated box-shaped
/// bodies with lever arms off the normal and contact frames that are not
/// orthonormal (as in problems given by matrices, e.g. FCLIB's). Bodies
/// are pressed together (`G_n v* < 0`) and slide when `sliding > μ`.
/// Disk friction set, `μ ∈ [0.3, 0.9]`, `Σ = 1e-3`..`1e-2` of the row
/// diagonal order. A spec that fails [`SkewedSpec::validate`] is refused.
pub fn skewed_contacts(spec: &SkewedSpec) -> Result<ContactProblem, GenerateError> {
    spec.validate()?;
    let mut rng = Rng::new(spec.seed);
    let mut u = || rng.uniform();
    let nb = spec.bodies.max(1) + 1;
    let mut inv = vec![InverseMass::INFINITE_MASS];
    let mut vstar = vec![Velocity6::ZERO];
    for _ in 1..nb {
        let m = 0.5 + 2.0 * u();
        let he = Vec3::new(0.05 + 0.3 * u(), 0.05 + 0.3 * u(), 0.05 + 0.3 * u());
        let axis = Vec3::new(2.0 * u() - 1.0, 2.0 * u() - 1.0, 2.0 * u() - 1.0);
        let q = ndem_math::Quat::from_scaled_axis(axis);
        inv.push(MassProperties::solid_box(m, he)?.inverse(&q));
        vstar.push(Velocity6::ZERO);
    }
    let n_contacts = spec.contacts.max(nb - 1);
    let mut free = vstar;
    let mut contacts = Vec::with_capacity(n_contacts);
    for k in 0..n_contacts {
        let (a, b) = if k < nb - 1 {
            (k + 1, 0)
        } else {
            let a = 1 + (rng_index(&mut u, nb - 1));
            let mut b = rng_index(&mut u, nb);
            if b == a {
                b = 0;
            }
            (a, b)
        };
        let normal = Vec3::new(0.4 * u() - 0.2, 0.4 * u() - 0.2, 1.0).normalize();
        let base = ContactFrame::from_unit_normal(normal);
        let s = spec.skew;
        let mut scale = || 1.0 + s * (2.0 * u() - 1.0);
        let (s1, s2) = (scale(), scale());
        let mut tilt = || 0.5 * s * (2.0 * u() - 1.0);
        let t1 = (base.tangent1 + base.tangent2 * tilt() + base.normal * tilt()) * s1;
        let t2 = (base.tangent2 + base.tangent1 * tilt() + base.normal * tilt()) * s2;
        let frame = ContactFrame {
            normal,
            tangent1: t1,
            tangent2: t2,
        };
        let arm = |u: &mut dyn FnMut() -> f64| {
            Vec3::new(0.3 * u() - 0.15, 0.3 * u() - 0.15, -0.1 - 0.1 * u())
        };
        let arm_a = arm(&mut u);
        let arm_b = -arm(&mut u);
        let jac = ContactJacobian::new(frame, &arm_a, &arm_b, 0.8 + 0.4 * u());
        // press a towards b along the normal, push it sideways
        let approach = 0.5 + u();
        let side = spec.sliding * approach;
        let angle = 2.0 * std::f64::consts::PI * u();
        free[a].linear +=
            -normal * approach + (base.tangent1 * angle.cos() + base.tangent2 * angle.sin()) * side;
        let d = jac.diagonal(&inv[a], &inv[b]);
        let sig = |dj: f64, u: &mut dyn FnMut() -> f64| dj * (1e-3 + 9e-3 * u());
        let sigma = [
            sig(d[0], &mut u),
            sig(d[1].min(d[2]), &mut u),
            sig(d[3].min(d[4]), &mut u),
        ];
        contacts.push(Contact {
            bodies: [a as u32, b as u32],
            key: ContactKey::new(a as u32, b as u32, k as u32),
            jacobian: jac,
            sigma,
            rhs: [0.0; 6],
            friction: 0.3 + 0.6 * u(),
            rolling_arm: 0.01 + 0.05 * u(),
            model: Default::default(),
        });
    }
    let mut p = ContactProblem::new(inv, free, spec.rows, FrictionSet::Disk, 1e-2)?;
    for c in contacts {
        p.push_contact(c)?;
    }
    Ok(p)
}

fn rng_index(u: &mut dyn FnMut() -> f64, n: usize) -> usize {
    ((u() * n as f64) as usize).min(n - 1)
}

/// Parameters of [`joint_tree`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeSpec {
    /// Number of moving bodies (body 0 is the static ground).
    pub bodies: usize,
    /// Masses are drawn log-uniformly in `[1, mass_ratio]` kg.
    pub mass_ratio: f64,
    /// Bilateral rows between each body and its parent (1 to 6).
    pub rows_per_joint: usize,
    /// Fraction of rows with finite bounds `±bound` (force-limited drives).
    pub bounded_fraction: f64,
    /// Bound of the bounded rows.
    pub bound: f64,
    /// Regularization Σ of every row (> 0 keeps the block positive definite).
    pub sigma: f64,
    /// Seed.
    pub seed: u64,
}

impl Default for TreeSpec {
    fn default() -> Self {
        Self {
            bodies: 6,
            mass_ratio: 1e3,
            rows_per_joint: 5,
            bounded_fraction: 0.0,
            bound: 0.5,
            sigma: 1e-6,
            seed: 1,
        }
    }
}

impl TreeSpec {
    /// `mass_ratio` finite and at least 1, `bounded_fraction` in `[0, 1]`,
    /// `bound` not negative (infinite: unbounded), `sigma` finite and not
    /// negative, `bodies` indexable; each failure names its field
    /// ([`GenerateError::Spec`]).
    pub fn validate(&self) -> Result<(), GenerateError> {
        let ratio = self.mass_ratio;
        require(
            ratio.is_finite() && ratio >= 1.0,
            "mass_ratio",
            "must be finite and at least 1",
        )?;
        fraction("bounded_fraction", self.bounded_fraction)?;
        // an infinite bound is an unbounded row
        require(self.bound >= 0.0, "bound", "must not be negative or NaN")?;
        not_negative("sigma", self.sigma)?;
        indexable("bodies", &[self.bodies, 6])?;
        Ok(())
    }
}

/// A random tree of rigid bodies (each body's parent is a random earlier
/// body or the static ground) joined by random bilateral rows (kind
/// [`RowKind::Bilateral`], as joint rows are), some force-limited: the
/// problem class of the split solver's direct block. A spec that fails
/// [`TreeSpec::validate`] is refused; the rows are checked as
/// [`ContactProblem::push_row`] checks them.
pub fn joint_tree(spec: &TreeSpec) -> Result<ContactProblem, GenerateError> {
    spec.validate()?;
    let mut rng = Rng::new(spec.seed);
    let nb = spec.bodies.max(1) + 1;
    let mut inv = vec![InverseMass::INFINITE_MASS];
    let mut vstar = vec![Velocity6::ZERO];
    for _ in 1..nb {
        let m = spec.mass_ratio.powf(rng.uniform());
        let (i, v) = random_box_body(&mut rng, m, 0.2)?;
        inv.push(i);
        vstar.push(v);
    }
    let mut problem = ContactProblem::new(
        inv,
        vstar,
        ContactRows::NormalFrictionRolling,
        FrictionSet::Box,
        2.5e-3,
    )?;
    let random_vec = |rng: &mut Rng| Vec3::from_fn(|_, _| 2.0 * rng.uniform() - 1.0);
    for child in 1..nb {
        let parent = (rng.next_u64() as usize) % child;
        for _ in 0..spec.rows_per_joint.clamp(1, 6) {
            let linear = random_vec(&mut rng);
            let arm_a = random_vec(&mut rng);
            let arm_b = random_vec(&mut rng);
            let jacobian = ndem_math::JacobianRow {
                linear_a: linear,
                angular_a: arm_a.cross(&linear) + 0.3 * random_vec(&mut rng),
                linear_b: -linear,
                angular_b: -arm_b.cross(&linear),
            };
            let bound = if rng.uniform() < spec.bounded_fraction {
                spec.bound
            } else {
                f64::INFINITY
            };
            problem.push_row(ndem_solve::GenericRow {
                bodies: [child as u32, parent as u32],
                jacobian,
                sigma: spec.sigma,
                rhs: 2.0 * rng.uniform() - 1.0,
                bounds: RowBounds::Fixed {
                    lower: -bound,
                    upper: bound,
                },
                kind: RowKind::Bilateral,
                key: None,
            })?;
        }
    }
    Ok(problem)
}

/// A random [`ndem_solve::GlobalProblem`] ([`random_global_problem`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GlobalSpec {
    /// Degrees of freedom per body (6 for rigid bodies).
    pub block: usize,
    /// Bodies.
    pub bodies: usize,
    /// Contacts, at most `bodies`: contact `c` touches body `c` (so `H`
    /// has full column rank and `W` is positive definite) and, with
    /// probability ½, one other body.
    pub contacts: usize,
    /// Couple neighbouring bodies' first degrees of freedom in `M` (a
    /// general sparse, not block-diagonal, mass matrix: a chain of springs
    /// in the mass, as in a finite-element lumping that is not diagonal).
    pub coupled: bool,
    /// Largest friction coefficient.
    pub max_friction: f64,
    /// Seed.
    pub seed: u64,
}

impl GlobalSpec {
    /// `max_friction` finite and not negative, `block · bodies` degrees of
    /// freedom indexable; each failure names its field
    /// ([`GenerateError::Spec`]).
    pub fn validate(&self) -> Result<(), GenerateError> {
        not_negative("max_friction", self.max_friction)?;
        indexable("block", &[self.block, self.bodies, 3])?;
        Ok(())
    }
}

/// A random global problem `(M, H, f, w, μ)`: symmetric positive definite
/// mass blocks (`A Aᵀ + I`), contact columns with random entries over the
/// degrees of freedom of their bodies, `f` pushing bodies together and `w`
/// random. A spec that fails [`GlobalSpec::validate`] is refused.
pub fn random_global_problem(
    spec: &GlobalSpec,
) -> Result<ndem_solve::GlobalProblem, GenerateError> {
    use nalgebra::DMatrix;
    spec.validate()?;
    let mut rng = Rng::new(spec.seed);
    let mut u = || 2.0 * rng.uniform() - 1.0;
    let (b, nb) = (spec.block.max(1), spec.bodies.max(1));
    let nd = b * nb;
    let nc = spec.contacts.clamp(1, nb);
    let mut m = CooMatrix::new(nd, nd);
    for body in 0..nb {
        let a = DMatrix::<f64>::from_fn(b, b, |_, _| u());
        let block = &a * a.transpose() + DMatrix::<f64>::identity(b, b);
        for i in 0..b {
            for j in 0..b {
                m.push(body * b + i, body * b + j, block[(i, j)]);
            }
        }
        if spec.coupled && body + 1 < nb {
            // a symmetric off-diagonal term small enough to keep M
            // diagonally dominant on those rows
            let c = 0.25 * u();
            m.push(body * b, (body + 1) * b, c);
            m.push((body + 1) * b, body * b, c);
        }
    }
    let mut h = CooMatrix::new(nd, 3 * nc);
    for c in 0..nc {
        let mut touched = vec![c];
        if nb > 1 && u() > 0.0 {
            let step = ((0.5 * (1.0 + u()) * (nb - 1) as f64) as usize).min(nb - 2);
            let other = (c + 1 + step) % nb;
            touched.push(other);
        }
        for &body in &touched {
            for col in 0..3 {
                for i in 0..b {
                    h.push(body * b + i, 3 * c + col, u());
                }
            }
        }
    }
    let f = (0..nd).map(|_| u()).collect();
    let w = (0..3 * nc).map(|_| u()).collect();
    let mu = (0..nc)
        .map(|_| spec.max_friction * 0.5 * (1.0 + u()))
        .collect();
    Ok(ndem_solve::GlobalProblem {
        m: CsrMatrix::from(&m),
        h: CsrMatrix::from(&h),
        f,
        w,
        mu,
    })
}

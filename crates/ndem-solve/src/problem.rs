//! The contact problem: one mixed complementarity problem (MCP) of a SPOOK
//! step in Schur-complement form (warm-starting paper, eqs. 1-2 and 6).
//!
//! For multipliers `λ` (impulses) and body velocities
//! `v(λ) = v* + M⁻¹ Gᵀ λ`, row `j` has the residual
//! `w_j = G_j v + Σ_jj λ_j + b_j` and the problem is
//!
//! * normal rows: `λ_n ≥ 0 ⊥ w_n ≥ 0`;
//! * friction rows: `w_t = 0` while `λ_t` is inside its bound, which scales
//!   with the normal impulse (`|λ_t| ≤ μ_t s_n λ_n`, box or disk);
//! * rolling/twisting rows: likewise with `μ_r R* s_n λ_n`;
//! * generic rows: fixed bounds `[lo, hi]` (bilateral joints, bounded motors,
//!   plain unilateral rows) or a friction bound tied to another row.
//!
//! Equivalently, with `N = G M⁻¹ Gᵀ + Σ` and `r = G v* + b`, `w = N λ + r`
//! is the gradient of `½ λᵀ N λ + rᵀ λ`; for frictionless problems the MCP
//! is the optimality condition of that QP over `λ ≥ 0`.
//!
//! Invariant: the problem knows bodies only as inverse-mass blocks and free
//! velocities; it knows nothing about shapes, positions or collision.

use crate::{InverseMasses, PREFETCH_AHEAD, SolveError};
use nalgebra_sparse::CsrMatrix;
use ndem_math::{
    ContactFrame, ContactJacobian, ContactKey, ContactParameters, JacobianRow, RowKind, Vec3,
    Velocity6,
};
use ndem_par::blocks::{block_len, map_parts};
use ndem_par::prefetch::prefetch;

mod build;
mod operators;

/// Which rows each contact of a problem has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContactRows {
    /// Normal row only (frictionless contact dynamics).
    Normal,
    /// Normal and two friction rows.
    NormalFriction,
    /// Normal, two friction and three rolling/twisting rows (the papers' model).
    NormalFrictionRolling,
}

impl ContactRows {
    /// Number of rows per contact: 1, 3 or 6.
    pub const fn count(self) -> usize {
        match self {
            ContactRows::Normal => 1,
            ContactRows::NormalFriction => 3,
            ContactRows::NormalFrictionRolling => 6,
        }
    }
}

/// The admissible set of the friction (and rolling) multipliers of a contact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FrictionSet {
    /// Each component clamped separately, `|λ_ti| ≤ μ s_n λ_n` (the papers' box).
    #[default]
    Box,
    /// The disk `‖(λ_t1, λ_t2)‖ ≤ μ s_n λ_n` (true Coulomb cone); rolling
    /// rows use a disk for `(λ_r1, λ_r2)` and a clamp for twisting.
    Disk,
}

/// Per-contact data that warm-start policies may use (not needed to solve).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ContactModel {
    /// Normal constraint value `g` (`−δ^{e_H}` or the gap).
    pub g: f64,
    /// Normal compliance `ε_n`.
    pub epsilon_n: f64,
    /// Friction compliance `γ_t`.
    pub gamma_t: f64,
    /// Rolling compliance `γ_r`.
    pub gamma_r: f64,
}

impl ContactModel {
    /// The elastic energy stored in the overlap of a compliant contact,
    /// `g²/(2 ε_n)` when `g < 0` and `ε_n > 0`, else zero: the integral of
    /// the static force `s_n δ^{e_H}/ε_n` over the overlap
    /// (`(2/5) k_n δ^{5/2}` for Hertz, `½ k_n δ²` for the linear law).
    #[inline]
    pub fn elastic_energy(&self) -> f64 {
        if self.epsilon_n > 0.0 && self.g < 0.0 {
            0.5 * self.g * self.g / self.epsilon_n
        } else {
            0.0
        }
    }
}

/// What failed in [`ContactProblem::extend_contacts_with`].
#[derive(Debug, Clone, PartialEq)]
pub enum ContactFillError<E> {
    /// The caller's builder failed.
    Build(E),
    /// A built contact did not pass the problem's checks.
    Invalid(SolveError),
}

fn check_known_bodies(
    field: &'static str,
    i: usize,
    bodies: [u32; 2],
    body_count: usize,
) -> Result<(), SolveError> {
    for b in bodies {
        if b as usize >= body_count {
            return Err(SolveError::UnknownBody {
                field,
                index: i,
                body: b as usize,
                body_count,
            });
        }
    }
    Ok(())
}

/// One frictional contact: compact Jacobian, regularization, right-hand side
/// and bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contact {
    /// Body indices `[a, b]` (normal points from b to a).
    pub bodies: [u32; 2],
    /// Persistent identity, for warm starting.
    pub key: ContactKey,
    /// The compact Jacobian (includes `s_n`).
    pub jacobian: ContactJacobian,
    /// `[Σ_n, Σ_t, Σ_r]`.
    pub sigma: [f64; 3],
    /// `b` for the six rows (unused rows ignored).
    pub rhs: [f64; 6],
    /// Friction coefficient `μ_t`.
    pub friction: f64,
    /// Rolling torque arm `μ_r R*` \[m\].
    pub rolling_arm: f64,
    /// Data for model-based warm starting (zeros when read from a problem
    /// without model data, [`ContactProblem::has_model_data`]).
    pub model: ContactModel,
}

impl Contact {
    /// A contact of the SPOOK continuous stage (`docs/theory.md`, "SPOOK"):
    /// `b_n = (4/Δt) Υ_n g − Υ_n G_n v_i`, `b_t = b_r = 0`, with Σ, μ and
    /// the rolling arm taken from `params`. `normal_velocity_old` is
    /// `G_n v_i`, the normal row applied to the velocities at the start of
    /// the step.
    pub fn spook(
        bodies: [u32; 2],
        key: ContactKey,
        jacobian: ContactJacobian,
        g: f64,
        normal_velocity_old: f64,
        params: &ContactParameters,
        dt: f64,
    ) -> Self {
        let b_n = 4.0 / dt * params.upsilon_n * g - params.upsilon_n * normal_velocity_old;
        Self {
            bodies,
            key,
            jacobian,
            sigma: [params.sigma_n, params.sigma_t, params.sigma_r],
            rhs: [b_n, 0.0, 0.0, 0.0, 0.0, 0.0],
            friction: params.friction,
            rolling_arm: params.rolling_arm,
            model: ContactModel {
                g,
                epsilon_n: params.epsilon_n,
                gamma_t: params.gamma_t,
                gamma_r: params.gamma_r,
            },
        }
    }

    /// A slot's value before [`ContactProblem::extend_contacts_with`]
    /// writes it (never left in a problem).
    fn placeholder() -> Self {
        let frame = ContactFrame::from_unit_normal(Vec3::z());
        Self::builder(
            [0, 0],
            ContactJacobian::new(frame, &Vec3::zeros(), &Vec3::zeros(), 1.0),
        )
        .contact
    }

    /// A builder for a contact posed by hand: between bodies `[a, b]`
    /// (the normal points from b to a) with the given Jacobian; Σ, `b`, μ
    /// and the rolling arm default to zero and the key to `(a, b, 0)`.
    /// Safer than a struct literal: [`ContactBuilder::build`] checks every
    /// value.
    pub fn builder(bodies: [u32; 2], jacobian: ContactJacobian) -> ContactBuilder {
        ContactBuilder {
            contact: Self {
                bodies,
                key: ContactKey::new(bodies[0], bodies[1], 0),
                jacobian,
                sigma: [0.0; 3],
                rhs: [0.0; 6],
                friction: 0.0,
                rolling_arm: 0.0,
                model: ContactModel::default(),
            },
        }
    }

    /// Checks the values of contact `index` (finite Jacobian, `s_n`, Σ,
    /// μ and rolling arm ≥ 0, finite `b`); body indices are checked
    /// against a problem by [`ContactProblem::push_contact`].
    pub fn validate(&self, index: usize) -> Result<(), SolveError> {
        // one branch-free pass over the arms and the six rows (every
        // contact of every step is checked); the failing entry is looked
        // for only when it finds one
        if !self.jacobian_finite() {
            let arms = [&self.jacobian.arm_a, &self.jacobian.arm_b];
            for x in arms.iter().flat_map(|v| v.iter()) {
                check_finite("contacts.jacobian.arm", index, *x)?;
            }
            for j in 0..6 {
                for x in self.jacobian.row(j).to_array() {
                    check_finite("contacts.jacobian", index, x)?;
                }
            }
        }
        check_nonneg(
            "contacts.jacobian.normal_scale",
            index,
            self.jacobian.normal_scale,
        )?;
        for &s in &self.sigma {
            check_nonneg("contacts.sigma", index, s)?;
        }
        for &b in &self.rhs {
            check_finite("contacts.rhs", index, b)?;
        }
        check_nonneg("contacts.friction", index, self.friction)?;
        check_nonneg("contacts.rolling_arm", index, self.rolling_arm)?;
        if self.bodies[0] == self.bodies[1] {
            return Err(SolveError::OutOfRange {
                field: "contacts.bodies",
                index,
                value: f64::from(self.bodies[0]),
                range: "two different bodies",
            });
        }
        Ok(())
    }

    /// Whether the lever arms and every entry of the six Jacobian rows are
    /// finite. The rows are products of the 16 stored numbers (frame, arms,
    /// `s_n`): an entry is `±u_k s`, `±(d × u)_k s` or `±u_k`, so when every
    /// stored number is at most [`STORED_BOUND`] in magnitude each entry
    /// is at most `2·STORED_BOUND³ < f64::MAX` and finite. Only a contact
    /// outside that bound (or with a NaN, which fails the comparison) has
    /// its rows formed and checked one by one (a branch-free `and` over all
    /// of them): the same verdict, without six cross products per contact
    /// of every step.
    fn jacobian_finite(&self) -> bool {
        let j = &self.jacobian;
        let f = &j.frame;
        let stored = [&f.normal, &f.tangent1, &f.tangent2, &j.arm_a, &j.arm_b];
        // a NaN fails the comparison
        let mut bounded = j.normal_scale.abs() <= STORED_BOUND;
        for x in stored.iter().flat_map(|v| v.iter()) {
            bounded &= x.abs() <= STORED_BOUND;
        }
        if bounded {
            return true;
        }
        self.rows_finite()
    }

    /// Whether the lever arms and every entry of the six rows, formed, are
    /// finite.
    fn rows_finite(&self) -> bool {
        let j = &self.jacobian;
        let mut finite = true;
        for x in j.arm_a.iter().chain(j.arm_b.iter()) {
            finite &= x.is_finite();
        }
        for r in 0..6 {
            let row = j.row(r);
            let parts = [row.linear_a, row.angular_a, row.linear_b, row.angular_b];
            for x in parts.iter().flat_map(|v| v.iter()) {
                finite &= x.is_finite();
            }
        }
        finite
    }

    /// Σ of row `j`.
    #[inline]
    pub fn row_sigma(&self, j: usize) -> f64 {
        sigma_of_row(&self.sigma, j)
    }
}

/// A bound on the stored Jacobian numbers (frame, lever arms, `s_n`)
/// under which every row entry is finite: at most `2·10³⁰⁰`
/// ([`Contact::validate`]).
const STORED_BOUND: f64 = 1e100;

/// Σ of row `j` from `[Σ_n, Σ_t, Σ_r]`.
#[inline]
fn sigma_of_row(sigma: &[f64; 3], j: usize) -> f64 {
    match j {
        0 => sigma[0],
        1 | 2 => sigma[1],
        _ => sigma[2],
    }
}

/// What the solvers read of a contact in every sweep (160 bytes): a
/// [`Contact`] without its key, its model data, the right-hand sides of
/// its friction and rolling rows and its [`TangentialCoefficients`], which
/// the problem keeps apart (the key and model data are read once per
/// solve, the tangential `b` is zero in the stepper's problems but on
/// moving surfaces, and `Σ_t`, `Σ_r`, `μ_t` are the same for every contact
/// of one material pair in one step).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ContactRecord {
    /// The compact Jacobian (includes `s_n`).
    pub(crate) jacobian: ContactJacobian,
    /// `Σ_n`.
    pub(crate) sigma_n: f64,
    /// `b_n`.
    pub(crate) normal_rhs: f64,
    /// Rolling torque arm `μ_r R*` \[m\].
    pub(crate) rolling_arm: f64,
    /// Body indices `[a, b]`.
    pub(crate) bodies: [u32; 2],
}

impl ContactRecord {
    fn of(c: &Contact) -> Self {
        Self {
            jacobian: c.jacobian,
            sigma_n: c.sigma[0],
            normal_rhs: c.rhs[0],
            rolling_arm: c.rolling_arm,
            bodies: c.bodies,
        }
    }

    /// Σ of row `j`, given the contact's tangential coefficients.
    #[inline(always)]
    pub(crate) fn row_sigma(&self, k: &TangentialCoefficients, j: usize) -> f64 {
        match j {
            0 => self.sigma_n,
            1 | 2 => k.sigma_t,
            _ => k.sigma_r,
        }
    }

    /// `b_j` of row `j`, given the contact's tangential right-hand sides.
    #[inline(always)]
    pub(crate) fn rhs(&self, tangential: &[f64; 5], j: usize) -> f64 {
        if j == 0 {
            self.normal_rhs
        } else {
            tangential[j - 1]
        }
    }
}

/// `b` of rows 1-5 of a contact.
fn tangential_rhs_of(c: &Contact) -> [f64; 5] {
    [c.rhs[1], c.rhs[2], c.rhs[3], c.rhs[4], c.rhs[5]]
}

/// The compliances `Σ_t`, `Σ_r` of a contact's friction and rolling rows
/// and its friction coefficient `μ_t`. In a SPOOK step they come from the
/// step's settings (`Σ_t = ε_t/Δt`, `Σ_r = ε_r/Δt`, warm-starting paper,
/// appendix A) and the material pair, so that a problem's contacts share
/// them in most scenes: the problem keeps them once
/// ([`ContactProblem::coefficients`]) and per contact only when they vary,
/// and a sweep reads 24 bytes less per contact.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct TangentialCoefficients {
    /// `Σ_t`.
    pub(crate) sigma_t: f64,
    /// `Σ_r`.
    pub(crate) sigma_r: f64,
    /// Friction coefficient `μ_t`.
    pub(crate) friction: f64,
}

impl TangentialCoefficients {
    fn of(c: &Contact) -> Self {
        Self {
            sigma_t: c.sigma[1],
            sigma_r: c.sigma[2],
            friction: c.friction,
        }
    }

    /// The same numbers, bit for bit (`0.0` and `−0.0` differ; a NaN never
    /// reaches a problem).
    fn same_bits(&self, other: &Self) -> bool {
        let bits = |k: &Self| [k.sigma_t, k.sigma_r, k.friction].map(f64::to_bits);
        bits(self) == bits(other)
    }
}

/// One block's slots in [`ContactProblem::extend_contacts_with`].
struct FillSlots<'a, X> {
    records: &'a mut [ContactRecord],
    keys: &'a mut [ContactKey],
    /// Empty when the problem keeps no model data.
    models: &'a mut [ContactModel],
    /// Empty when the problem stores no tangential `b`.
    tangential: &'a mut [[f64; 5]],
    /// Empty when the problem stores no coefficients per contact.
    coefficients: &'a mut [TangentialCoefficients],
    extra: &'a mut [X],
}

/// The slots of [`ContactProblem::extend_contacts_with`] in blocks of
/// `block` contacts; an empty optional part (model data, tangential `b`,
/// coefficients per contact) gives every block an empty slice.
fn fill_blocks<'a, X>(
    (records, keys): (&'a mut [ContactRecord], &'a mut [ContactKey]),
    models: &'a mut [ContactModel],
    (tangential, coefficients): (&'a mut [[f64; 5]], &'a mut [TangentialCoefficients]),
    extra: &'a mut [X],
    block: usize,
) -> impl Iterator<Item = (usize, FillSlots<'a, X>)> {
    fn optional<T>(part: &mut [T], block: usize) -> impl Iterator<Item = &mut [T]> {
        part.chunks_mut(block)
            .chain(std::iter::repeat_with(|| &mut [][..]))
    }
    let mut models = optional(models, block);
    let mut tangential = optional(tangential, block);
    let mut coefficients = optional(coefficients, block);
    records
        .chunks_mut(block)
        .zip(keys.chunks_mut(block))
        .zip(extra.chunks_mut(block))
        .map(move |((records, keys), extra)| FillSlots {
            records,
            keys,
            models: models.next().unwrap_or_default(),
            tangential: tangential.next().unwrap_or_default(),
            coefficients: coefficients.next().unwrap_or_default(),
            extra,
        })
        .enumerate()
}

/// What a sweep reads of a contact besides its record: `b` of rows 1-5
/// and `Σ_t`, `Σ_r`, `μ_t` ([`ContactProblem::side`]).
pub(crate) type ContactSide<'a> = (&'a [f64; 5], &'a TangentialCoefficients);

/// The tangential right-hand sides of a contact without any.
pub(crate) const NO_TANGENTIAL_RHS: [f64; 5] = [0.0; 5];

/// The contacts of a [`ContactProblem`] ([`ContactProblem::contacts`]):
/// each is put together from the problem's parts when it is read, so
/// they are handed out by value.
#[derive(Clone, Copy)]
pub struct Contacts<'a> {
    problem: &'a ContactProblem,
}

impl std::fmt::Debug for Contacts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Contacts<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<'a> Contacts<'a> {
    /// Number of contacts.
    pub fn len(&self) -> usize {
        self.problem.records.len()
    }
    /// `true` when there are none.
    pub fn is_empty(&self) -> bool {
        self.problem.records.is_empty()
    }
    /// Contact `i`, or `None` past the end.
    pub fn get(&self, i: usize) -> Option<Contact> {
        (i < self.len()).then(|| self.problem.contact_at(i))
    }
    /// The contacts in order.
    pub fn iter(&self) -> ContactIter<'a> {
        ContactIter {
            problem: self.problem,
            range: 0..self.len(),
        }
    }
    /// The contacts' keys, in order.
    pub fn keys(&self) -> &'a [ContactKey] {
        &self.problem.keys
    }
}

impl<'a> IntoIterator for Contacts<'a> {
    type Item = Contact;
    type IntoIter = ContactIter<'a>;
    fn into_iter(self) -> ContactIter<'a> {
        self.iter()
    }
}

/// Iterator over the contacts of a [`ContactProblem`] ([`Contacts::iter`]).
#[derive(Debug, Clone)]
pub struct ContactIter<'a> {
    problem: &'a ContactProblem,
    range: std::ops::Range<usize>,
}

impl Iterator for ContactIter<'_> {
    type Item = Contact;
    fn next(&mut self) -> Option<Contact> {
        self.range.next().map(|i| self.problem.contact_at(i))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.range.size_hint()
    }
}

impl DoubleEndedIterator for ContactIter<'_> {
    fn next_back(&mut self) -> Option<Contact> {
        self.range.next_back().map(|i| self.problem.contact_at(i))
    }
}

impl ExactSizeIterator for ContactIter<'_> {}

/// Builds a [`Contact`] ([`Contact::builder`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContactBuilder {
    contact: Contact,
}

impl ContactBuilder {
    /// Persistent identity, for warm starting.
    pub fn key(mut self, key: ContactKey) -> Self {
        self.contact.key = key;
        self
    }
    /// Compliances `[Σ_n, Σ_t, Σ_r]` (warm-starting paper, appendix A).
    pub fn compliance(mut self, sigma: [f64; 3]) -> Self {
        self.contact.sigma = sigma;
        self
    }
    /// Right-hand side `b` of the normal row (the others stay 0).
    pub fn normal_rhs(mut self, b_n: f64) -> Self {
        self.contact.rhs[0] = b_n;
        self
    }
    /// Right-hand side `b` of all six rows.
    pub fn rhs(mut self, rhs: [f64; 6]) -> Self {
        self.contact.rhs = rhs;
        self
    }
    /// Friction coefficient `μ_t`.
    pub fn friction(mut self, mu: f64) -> Self {
        self.contact.friction = mu;
        self
    }
    /// Rolling torque arm `μ_r R*` \[m\].
    pub fn rolling_arm(mut self, arm: f64) -> Self {
        self.contact.rolling_arm = arm;
        self
    }
    /// Data for model-based warm starting.
    pub fn model(mut self, model: ContactModel) -> Self {
        self.contact.model = model;
        self
    }
    /// The contact, with its values checked ([`Contact::validate`]).
    pub fn build(self) -> Result<Contact, SolveError> {
        self.contact.validate(0)?;
        Ok(self.contact)
    }
}

/// Bounds of a generic row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RowBounds {
    /// `lo ≤ λ ≤ hi` (use `0, ∞` for a unilateral row, `−∞, ∞` for an
    /// equality, finite values for a motor with bounded force·Δt).
    Fixed {
        /// Lower bound.
        lower: f64,
        /// Upper bound.
        upper: f64,
    },
    /// `|λ| ≤ coefficient · λ_{normal_row}` (box friction tied to another
    /// generic row of the same problem).
    Friction {
        /// Index (among generic rows) of the normal row.
        normal_row: usize,
        /// Friction coefficient.
        coefficient: f64,
    },
}

/// A general constraint row on (at most) two bodies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GenericRow {
    /// Body indices `[a, b]`; `a == b` is allowed for single-body rows when
    /// the `b` part of the Jacobian is zero.
    pub bodies: [u32; 2],
    /// The 12-entry Jacobian row.
    pub jacobian: JacobianRow,
    /// Regularization `Σ_jj ≥ 0`.
    pub sigma: f64,
    /// Right-hand side `b_j`.
    pub rhs: f64,
    /// Bounds of `λ_j`.
    pub bounds: RowBounds,
    /// Row kind (statistics).
    pub kind: RowKind,
    /// Identity for warm starting (joints keep their key across steps).
    pub key: Option<ContactKey>,
}

/// One MCP in Schur-complement form. See the module docs.
///
/// The contacts are kept in parts (a record of what the sweeps read, then
/// keys, model data, the coefficients `Σ_t`, `Σ_r`, `μ_t` once for all
/// contacts and per contact only when they vary, and, only when some
/// contact has them, the tangential right-hand sides), so that a sweep
/// reads 160 bytes per contact instead of a whole [`Contact`]'s 272;
/// [`Self::contacts`] puts them together.
#[derive(Debug, Clone, PartialEq)]
pub struct ContactProblem {
    pub(crate) inverse_mass: InverseMasses,
    pub(crate) free_velocity: Vec<Velocity6>,
    pub(crate) rows: ContactRows,
    pub(crate) friction_set: FrictionSet,
    pub(crate) dt: f64,
    pub(crate) records: Vec<ContactRecord>,
    keys: Vec<ContactKey>,
    /// Empty when the problem keeps no model data
    /// ([`Self::without_model_data`]).
    models: Vec<ContactModel>,
    keeps_models: bool,
    /// `b` of rows 1-5 per contact; empty when every contact's are zero.
    tangential_rhs: Vec<[f64; 5]>,
    /// The first contact's `Σ_t`, `Σ_r`, `μ_t` (zeros without contacts):
    /// every contact's while [`Self::varying_coefficients`] is empty.
    coefficients: TangentialCoefficients,
    /// `Σ_t`, `Σ_r`, `μ_t` per contact; empty while every contact's are
    /// the first one's (bit for bit).
    varying_coefficients: Vec<TangentialCoefficients>,
    pub(crate) generic: Vec<GenericRow>,
    /// The contact vectors of a released problem ([`Self::reusing`]),
    /// adopted when the first contacts are added; boxed, so that the
    /// problem's own fields stay where the solvers' code reads them (96
    /// bytes more in the struct changed the sweeps' code and slowed the
    /// two-thread sweep by 2 %), and passed on from problem to storage to
    /// problem without allocating.
    recycled: Option<Box<ContactVectors>>,
}

/// The contact vectors of a released problem, still holding its contacts:
/// [`ContactProblem::extend_contacts_with`] overwrites them in place
/// instead of first writing a placeholder into every slot (a serial pass
/// over as many bytes as the parallel fill writes, 46 MB per assembly at
/// 2.5·10⁵ contacts). Not part of the problem's value: a clone starts
/// without them, and equality ignores them.
#[derive(Default)]
struct ContactVectors {
    records: Vec<ContactRecord>,
    keys: Vec<ContactKey>,
    models: Vec<ContactModel>,
    tangential_rhs: Vec<[f64; 5]>,
    coefficients: Vec<TangentialCoefficients>,
}

impl Clone for ContactVectors {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for ContactVectors {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for ContactVectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContactVectors")
            .field("records", &self.records.len())
            .finish_non_exhaustive()
    }
}

/// The vectors of a released [`ContactProblem`], kept to assemble the next
/// one without allocating ([`ContactProblem::reusing`]). The contact
/// vectors keep the released contacts, to be overwritten in place.
#[derive(Debug, Clone, Default)]
pub struct ProblemStorage {
    inverse_mass: InverseMasses,
    free_velocity: Vec<Velocity6>,
    contacts: Option<Box<ContactVectors>>,
    generic: Vec<GenericRow>,
}

impl ProblemStorage {
    /// Empty storage.
    pub fn new() -> Self {
        Self::default()
    }

    /// The empty inverse-mass column and free-velocity vector (with their
    /// capacity), to be filled for [`ContactProblem::new`]; the rest goes to
    /// [`ContactProblem::reusing`].
    pub fn take_bodies(&mut self) -> (InverseMasses, Vec<Velocity6>) {
        let mut inv = std::mem::take(&mut self.inverse_mass);
        let mut free = std::mem::take(&mut self.free_velocity);
        inv.clear();
        free.clear();
        (inv, free)
    }
}

/// Projects the multipliers of one contact (1, 3 or 6 entries) onto its set.
#[inline]
pub fn project_contact(c: &Contact, set: FrictionSet, lam: &mut [f64]) {
    project_record(
        &ContactRecord::of(c),
        &TangentialCoefficients::of(c),
        set,
        lam,
    );
}

/// [`project_contact`] for a problem's record.
#[inline]
pub(crate) fn project_record(
    c: &ContactRecord,
    k: &TangentialCoefficients,
    set: FrictionSet,
    lam: &mut [f64],
) {
    lam[0] = lam[0].max(0.0);
    let force = c.jacobian.normal_scale * lam[0];
    if lam.len() >= 3 {
        let bound = k.friction * force;
        project_pair(set, bound, &mut lam[1..3]);
    }
    if lam.len() >= 6 {
        let bound = c.rolling_arm * force;
        project_pair(set, bound, &mut lam[3..5]);
        lam[5] = lam[5].clamp_to(-bound, bound);
    }
}

/// `f64::clamp` without its assertion, for bounds formed from the
/// iterate: `x.clamp(lo, hi)` (the same value) wherever that does not
/// panic, and no panic where it does. A bound such as `μ s_n λ_n` is NaN
/// once `λ_n` overflows to infinity with `μ = 0` (`0 · ∞`), where
/// `f64::clamp` panics; here a NaN bound compares false and is not
/// applied (with both bounds NaN the value is left as it is). The infinite `λ_n` that made the bound NaN is itself
/// in the iterate, and the solvers' finiteness checks report it
/// ([`crate::SolveError::Diverged`]): no check is added to the sweeps'
/// rows, which lose the assertion's.
pub(crate) trait ClampTo {
    /// `self` clamped to `[lo, hi]`; a NaN bound is not applied.
    fn clamp_to(self, lo: f64, hi: f64) -> f64;
}

impl ClampTo for f64 {
    #[inline(always)]
    fn clamp_to(self, lo: f64, hi: f64) -> f64 {
        // `f64::clamp`'s own steps, after its assertion
        let mut x = self;
        if x < lo {
            x = lo;
        }
        if x > hi {
            x = hi;
        }
        x
    }
}

/// Projects two tangential components onto a box or disk of radius `bound`.
#[inline]
pub(crate) fn project_pair(set: FrictionSet, bound: f64, pair: &mut [f64]) {
    match set {
        FrictionSet::Box => {
            pair[0] = pair[0].clamp_to(-bound, bound);
            pair[1] = pair[1].clamp_to(-bound, bound);
        }
        FrictionSet::Disk => {
            let n2 = pair[0] * pair[0] + pair[1] * pair[1];
            if n2 > bound * bound {
                let s = if n2 > 0.0 { bound / n2.sqrt() } else { 0.0 };
                pair[0] *= s;
                pair[1] *= s;
            } else if n2 < f64::MIN_POSITIVE && (pair[0] != 0.0 || pair[1] != 0.0) {
                // the squared norm underflowed (|pair| below 1e-154, e.g. a
                // candidate of a contact at rest with the bound μλ_n = 0):
                // compare the norm itself
                let norm = pair[0].hypot(pair[1]);
                if norm > bound {
                    let s = bound / norm;
                    pair[0] *= s;
                    pair[1] *= s;
                }
            }
        }
    }
}

fn check_finite(field: &'static str, index: usize, value: f64) -> Result<(), SolveError> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(SolveError::NonFinite {
            field,
            index,
            value,
        })
    }
}

fn check_nonneg(field: &'static str, index: usize, value: f64) -> Result<(), SolveError> {
    check_finite(field, index, value)?;
    if value >= 0.0 {
        Ok(())
    } else {
        Err(SolveError::OutOfRange {
            field,
            index,
            value,
            range: "[0, inf)",
        })
    }
}

impl ContactProblem {
    /// An upper estimate of the kinetic energy the rows can add to the
    /// bodies, each row acting alone: `Σ_j ½ (|G_j v*| + |b_j|)² / (G_j M⁻¹ G_jᵀ)`.
    /// A row alone drives its relative velocity from `G_j v*` to at most
    /// `|b_j|` (its stabilisation, restitution, surface or motor target), so
    /// it changes the kinetic energy of its effective mass
    /// `1/(G_j M⁻¹ G_jᵀ)` by at most this much. Used by the stepper to
    /// recognise a step that created energy no row could have supplied.
    /// Rows on which no impulse acts (zero effective mass) count nothing.
    /// The elastic energy of compliant contacts is accounted separately
    /// ([`Self::elastic_energy`]).
    ///
    /// The contacts' terms are summed in blocks of
    /// [`SUM_BLOCK`] contacts and the block sums in order,
    /// so the figure is the same from [`Self::row_energy_bound_on`] on any
    /// thread count.
    pub fn row_energy_bound(&self) -> f64 {
        self.row_energy_bound_on(1)
    }

    /// [`Self::row_energy_bound`] with the contacts' blocks shared among
    /// `threads` threads (0 or 1: this one); the same number on any count.
    pub fn row_energy_bound_on(&self, threads: usize) -> f64 {
        self.row_energy_bound_in(threads, &mut Vec::new())
    }

    /// [`Self::row_energy_bound_on`] with the sums of the contacts' blocks
    /// formed in `block_sums`, which a caller keeps from step to step
    /// (no allocation once it holds as many blocks as the problem).
    pub fn row_energy_bound_in(&self, threads: usize, block_sums: &mut Vec<f64>) -> f64 {
        let contacts = self.records.len();
        let blocks = contacts.div_ceil(SUM_BLOCK);
        ndem_par::capacity::refill(block_sums, blocks, 0.0);
        let threads = threads.clamp(1, blocks.max(1));
        ndem_par::blocks::for_each_block(block_sums, 1, threads, |first, out| {
            for (k, sum) in out.iter_mut().enumerate() {
                let b = first + k;
                *sum =
                    self.contact_energy_bound(b * SUM_BLOCK..((b + 1) * SUM_BLOCK).min(contacts));
            }
        });
        let mut total = 0.0;
        for s in block_sums.iter() {
            total += s;
        }
        let v = &self.free_velocity;
        for (i, r) in self.generic.iter().enumerate() {
            let [a, b] = r.bodies.map(|x| x as usize);
            let gv = r.jacobian.dot(&v[a], &v[b]);
            let d = self.generic_row_diagonal(i) - r.sigma;
            if d > 0.0 {
                total += 0.5 * (gv.abs() + r.rhs.abs()).powi(2) / d;
            }
        }
        total
    }

    /// The contacts' part of [`Self::row_energy_bound`] over `range`,
    /// formed contact by contact (no row-sized scratch: the stepper calls
    /// this at its memory peak), with the arithmetic of
    /// `jacobian_times_unchecked` and `diagonal_unchecked`.
    fn contact_energy_bound(&self, range: std::ops::Range<usize>) -> f64 {
        let m = self.rows.count();
        let inv = &self.inverse_mass;
        let v = &self.free_velocity;
        let mut total = 0.0;
        for ci in range.clone() {
            if ci + PREFETCH_AHEAD < range.end {
                self.prefetch_bodies(ci + PREFETCH_AHEAD, v);
            }
            let c = &self.records[ci];
            let (t, s) = (self.tangential_rhs(ci), self.coefficients(ci));
            let [a, b] = c.bodies.map(|x| x as usize);
            let gv = c.jacobian.velocity(&v[a], &v[b]);
            let diag = inv.diagonal(&c.jacobian, a, b);
            for j in 0..m {
                // (D_jj + Σ_j) − Σ_j, as the diagonal of N less Σ
                let d = (diag[j] + c.row_sigma(s, j)) - c.row_sigma(s, j);
                if d > 0.0 {
                    total += 0.5 * (gv[j].abs() + c.rhs(t, j).abs()).powi(2) / d;
                }
            }
        }
        total
    }

    /// Elastic energy stored in the overlaps of compliant contacts,
    /// `Σ g²/(2 ε_n)` over contacts with `g < 0`
    /// ([`ContactModel::elastic_energy`] summed in contact order); `None`
    /// for a problem without model data ([`Self::without_model_data`]).
    pub fn elastic_energy(&self) -> Option<f64> {
        if !self.keeps_models {
            return None;
        }
        let mut total = 0.0;
        for model in &self.models {
            total += model.elastic_energy();
        }
        Some(total)
    }
}

/// Contacts whose row residuals are summed together before the sums of
/// the blocks are added in order (also the fewest contacts per thread).
pub const SUM_BLOCK: usize = 2048;

#[cfg(test)]
mod tests;

//! The bodies' inverse masses `M⁻¹ = diag(m⁻¹ 1, I⁻¹)` of a problem
//! (warm-starting paper, eq. 1), 16 bytes per body where `I⁻¹ = k 1`.
//!
//! A granular problem's bodies are nearly all spheres and static walls,
//! whose inverse inertia is a multiple of the identity in every frame. An
//! [`InverseMass`] holds the full 3×3 matrix (80 bytes); this column keeps
//! `m⁻¹` and `k` of such a body (16 bytes, what a PGS sweep reads of it)
//! and the full matrix only of the others, apart. At 10⁵ spheres that is
//! 6.4 MB less, and the sweeps and the passes that form `v* + M⁻¹Gᵀλ`
//! read one 16-byte entry per body (`docs/performance.md`, "Memory").

use ndem_math::{ContactJacobian, InverseMass, Mat3, Velocity6};

/// What a sweep reads of a body besides its velocity: `m⁻¹` and, for a
/// body with `I⁻¹ = k 1` (spheres, static bodies), `k`; a negative value
/// `−(1 + i)` marks a full inverse inertia, the `i`-th of
/// [`InverseMasses`]' others.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct BodyResponse {
    pub(crate) inv_mass: f64,
    /// `k ≥ 0` of `I⁻¹ = k 1`, or `−(1 + i)` for the `i`-th full matrix.
    pub(crate) isotropic: f64,
}

impl BodyResponse {
    /// `Some(k)` when `I⁻¹ = k 1`.
    #[inline(always)]
    pub(crate) fn isotropic(&self) -> Option<f64> {
        (self.isotropic >= 0.0).then_some(self.isotropic)
    }
}

/// The inverse masses of a problem's bodies, one per body, in body order.
///
/// A body whose inverse inertia equals `k 1` with `k ≥ 0`
/// ([`InverseMass::isotropic_inertia`]: compared with `==`, so off-diagonal
/// zeros of either sign) is kept as `(m⁻¹, k)` and read back as
/// `InverseMass { inv_mass, inv_inertia: k 1 }` with `+0` off the
/// diagonal; every other body keeps its matrix as given. Built from a
/// `Vec<InverseMass>` (`From`, `collect`) or entry by entry
/// ([`Self::push`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InverseMasses {
    responses: Vec<BodyResponse>,
    /// The full inverse inertias, in body order.
    others: Vec<Mat3>,
}

impl InverseMasses {
    /// No bodies.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the next body's inverse mass.
    pub fn push(&mut self, m: InverseMass) {
        let isotropic = match m.isotropic_inertia() {
            Some(k) if k >= 0.0 => k,
            _ => {
                self.others.push(m.inv_inertia);
                -(self.others.len() as f64)
            }
        };
        self.responses.push(BodyResponse {
            inv_mass: m.inv_mass,
            isotropic,
        });
    }

    /// Appends a body with `I⁻¹ = k 1` (a sphere: `k = 1/I`; a static
    /// body: `inv_mass = k = 0`) without forming its matrix: the same
    /// entry as [`Self::push`] of `InverseMass { inv_mass, inv_inertia:
    /// k 1 }`. A negative or NaN `k` is kept as a full matrix, as `push`
    /// keeps it.
    pub fn push_isotropic(&mut self, inv_mass: f64, k: f64) {
        if k >= 0.0 {
            self.responses.push(BodyResponse {
                inv_mass,
                isotropic: k,
            });
        } else {
            self.push(InverseMass {
                inv_mass,
                inv_inertia: Mat3::from_diagonal_element(k),
            });
        }
    }

    /// Appends `other`'s bodies after these, each entry as `other` keeps
    /// it (a `k 1` body stays one; a full matrix is copied).
    pub fn extend_from(&mut self, other: &InverseMasses) {
        self.responses.reserve(other.len());
        for r in &other.responses {
            match r.isotropic() {
                Some(_) => self.responses.push(*r),
                None => {
                    self.others.push(other.inertia_of(*r));
                    self.responses.push(BodyResponse {
                        inv_mass: r.inv_mass,
                        isotropic: -(self.others.len() as f64),
                    });
                }
            }
        }
    }

    /// The number of bodies.
    pub fn len(&self) -> usize {
        self.responses.len()
    }

    /// `true` without bodies.
    pub fn is_empty(&self) -> bool {
        self.responses.is_empty()
    }

    /// Body `i`'s inverse mass, or `None` past the last body.
    pub fn get(&self, i: usize) -> Option<InverseMass> {
        self.responses.get(i).map(|r| self.of(*r))
    }

    /// The inverse masses in body order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = InverseMass> + '_ {
        self.responses.iter().map(|r| self.of(*r))
    }

    /// The inverse masses as a vector of full [`InverseMass`]es.
    pub fn to_vec(&self) -> Vec<InverseMass> {
        self.iter().collect()
    }

    /// Removes every body, keeping the room.
    pub fn clear(&mut self) {
        self.responses.clear();
        self.others.clear();
    }

    /// Room for `additional` more bodies (the full matrices grow as
    /// needed).
    pub fn reserve(&mut self, additional: usize) {
        self.responses.reserve(additional);
    }

    /// Bytes of the vectors' room.
    pub fn bytes(&self) -> usize {
        self.responses.capacity() * size_of::<BodyResponse>()
            + self.others.capacity() * size_of::<Mat3>()
    }

    /// Per body, whether an impulse can move it (not
    /// [`InverseMass::is_infinite`]), without forming the matrices.
    pub(crate) fn movable(&self) -> impl Iterator<Item = bool> + '_ {
        self.responses.iter().map(|r| match r.isotropic() {
            Some(k) => !(r.inv_mass == 0.0 && k == 0.0),
            None => !self.of(*r).is_infinite(),
        })
    }

    /// `ContactJacobian::diagonal` of a contact between bodies `a` and
    /// `b`: from the two 16-byte entries when both are `k 1`
    /// (`diagonal_isotropic`, the same numbers), else from the matrices.
    #[inline(always)]
    pub(crate) fn diagonal(&self, jacobian: &ContactJacobian, a: usize, b: usize) -> [f64; 6] {
        let (ra, rb) = (self.responses[a], self.responses[b]);
        match (ra.isotropic(), rb.isotropic()) {
            (Some(ka), Some(kb)) => {
                jacobian.diagonal_isotropic((ra.inv_mass, ka), (rb.inv_mass, kb))
            }
            _ => jacobian.diagonal(&self.of(ra), &self.of(rb)),
        }
    }

    /// What a sweep reads of each body.
    #[inline(always)]
    pub(crate) fn responses(&self) -> &[BodyResponse] {
        &self.responses
    }

    /// Body `i`'s inverse mass (panics past the last body, as indexing
    /// does: for the crate's loops over checked bodies).
    #[inline(always)]
    pub(crate) fn at(&self, i: usize) -> InverseMass {
        self.of(self.responses[i])
    }

    /// `M_i⁻¹ p` of a generalized impulse `p` on body `i`
    /// ([`InverseMass::apply`], the same arithmetic).
    #[inline(always)]
    pub(crate) fn response(&self, i: usize, impulse: &Velocity6) -> Velocity6 {
        let (linear, angular) = self.at(i).apply(&impulse.linear, &impulse.angular);
        Velocity6::new(linear, angular)
    }

    /// `M⁻¹ Gᵀ λ` of a contact between bodies `a` and `b`
    /// ([`ContactJacobian::velocity_change`]): when both bodies are `k 1`,
    /// `I⁻¹` applied as the scalar `k` (three products per body instead of
    /// a 3×3 matrix with zeros off its diagonal formed and applied). The
    /// same numbers but for the sign of a zero: the matrix adds the zero
    /// off-diagonal products `0 · x_j`, and `−0 + (+0) = +0`, where the
    /// scalar keeps `k x_i = −0`. A sum that starts at `+0` or at a
    /// non-zero value, as a velocity does, ends the same either way
    /// (`x + (±0) = x` for `x ≠ 0`, `+0 + (±0) = +0`).
    #[inline(always)]
    pub(crate) fn velocity_change(
        &self,
        jacobian: &ContactJacobian,
        a: usize,
        b: usize,
        lambda: &[f64],
    ) -> (Velocity6, Velocity6) {
        let (ra, rb) = (self.responses[a], self.responses[b]);
        match (ra.isotropic(), rb.isotropic()) {
            (Some(ka), Some(kb)) => {
                let (ia, ib) = jacobian.transpose_apply(lambda);
                (
                    Velocity6::new(ia.linear * ra.inv_mass, ia.angular * ka),
                    Velocity6::new(ib.linear * rb.inv_mass, ib.angular * kb),
                )
            }
            _ => jacobian.velocity_change(&self.of(ra), &self.of(rb), lambda),
        }
    }

    /// Body `i`'s inverse inertia `I⁻¹`.
    #[inline(always)]
    pub(crate) fn inertia(&self, i: usize) -> Mat3 {
        self.inertia_of(self.responses[i])
    }

    #[inline(always)]
    fn inertia_of(&self, r: BodyResponse) -> Mat3 {
        match r.isotropic() {
            Some(k) => Mat3::from_diagonal_element(k),
            None => self.others[(-r.isotropic) as usize - 1],
        }
    }

    #[inline(always)]
    fn of(&self, r: BodyResponse) -> InverseMass {
        InverseMass {
            inv_mass: r.inv_mass,
            inv_inertia: self.inertia_of(r),
        }
    }
}

impl From<Vec<InverseMass>> for InverseMasses {
    fn from(masses: Vec<InverseMass>) -> Self {
        masses.into_iter().collect()
    }
}

impl FromIterator<InverseMass> for InverseMasses {
    fn from_iter<T: IntoIterator<Item = InverseMass>>(iter: T) -> Self {
        let mut out = Self::new();
        out.extend(iter);
        out
    }
}

impl Extend<InverseMass> for InverseMasses {
    fn extend<T: IntoIterator<Item = InverseMass>>(&mut self, iter: T) {
        let iter = iter.into_iter();
        self.reserve(iter.size_hint().0);
        for m in iter {
            self.push(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndem_math::{MassProperties, Quat, Vec3};

    fn bits(m: &InverseMass) -> Vec<u64> {
        std::iter::once(m.inv_mass)
            .chain(m.inv_inertia.iter().copied())
            .map(f64::to_bits)
            .collect()
    }

    /// Spheres, static bodies and rotated boxes come back as they went in,
    /// bit for bit; the spheres and static bodies take 16 bytes, the boxes
    /// 16 and their matrix.
    #[test]
    fn masses_come_back_bit_for_bit() {
        let sphere = MassProperties::solid_sphere(2500.0, 0.01).unwrap();
        let cuboid = MassProperties::solid_box(0.4, Vec3::new(0.01, 0.02, 0.03)).unwrap();
        let q = Quat::from_euler_angles(0.3, -1.1, 0.7);
        let given = vec![
            sphere.inverse(&q),
            InverseMass::INFINITE_MASS,
            cuboid.inverse(&q),
            sphere.inverse(&Quat::identity()),
            cuboid.inverse(&Quat::identity()),
        ];
        let masses = InverseMasses::from(given.clone());
        assert_eq!(masses.len(), 5);
        for (i, m) in given.iter().enumerate() {
            assert_eq!(bits(&masses.get(i).unwrap()), bits(m), "body {i}");
            assert_eq!(bits(&masses.at(i)), bits(m), "body {i}");
            assert_eq!(masses.inertia(i), m.inv_inertia);
        }
        assert_eq!(masses.get(5), None);
        assert_eq!(masses.to_vec(), given);
        assert_eq!(masses.others.len(), 2, "only the cuboids keep a matrix");
        let iso: Vec<_> = masses.responses().iter().map(|r| r.isotropic()).collect();
        assert_eq!(iso[0], Some(1.0 / sphere.principal_inertia.x));
        assert_eq!(iso[1], Some(0.0));
        assert_eq!(iso[2], None);
        let movable: Vec<_> = masses.movable().collect();
        let expected: Vec<_> = given.iter().map(|m| !m.is_infinite()).collect();
        assert_eq!(movable, expected);
        assert_eq!(movable, [true, false, true, true, true]);
    }

    /// Bodies appended from another column keep their entries: the
    /// spheres and static bodies their 16 bytes, the boxes their matrix,
    /// re-indexed after the column's own.
    #[test]
    fn an_extended_column_is_the_column_of_all_its_bodies() {
        let sphere = MassProperties::solid_sphere(2500.0, 0.01).unwrap();
        let cuboid = MassProperties::solid_box(0.4, Vec3::new(0.01, 0.02, 0.03)).unwrap();
        let q = Quat::from_euler_angles(0.3, -1.1, 0.7);
        let first = vec![cuboid.inverse(&q), sphere.inverse(&Quat::identity())];
        let second = vec![
            InverseMass::INFINITE_MASS,
            cuboid.inverse(&Quat::identity()),
            cuboid.inverse(&q.inverse()),
        ];
        let mut extended = InverseMasses::from(first.clone());
        extended.extend_from(&InverseMasses::from(second.clone()));
        let all: Vec<InverseMass> = first.into_iter().chain(second).collect();
        assert_eq!(extended, InverseMasses::from(all.clone()));
        for (i, m) in all.iter().enumerate() {
            assert_eq!(bits(&extended.at(i)), bits(m), "body {i}");
        }
        assert_eq!(extended.others.len(), 3);
    }

    proptest::proptest! {
        /// Any mix of boxes at any orientation, spheres and infinite
        /// masses comes back bit for bit, in order, and only the bodies
        /// whose inverse inertia is not `k 1` keep a matrix.
        #[test]
        fn any_masses_come_back_bit_for_bit(
            boxes in proptest::collection::vec(ndem_math::proptest_support::inverse_mass(), 0..12),
            spheres in proptest::collection::vec((0.01f64..10.0, 0.001f64..0.1), 0..12),
            order in proptest::collection::vec(proptest::bool::ANY, 0..24),
        ) {
            let mut given = Vec::new();
            let (mut b, mut s) = (boxes.iter(), spheres.iter());
            for &take_box in &order {
                let next = if take_box { b.next().copied() } else {
                    s.next().map(|&(m, r)| MassProperties::sphere_with_mass(m, r).unwrap().inverse(&Quat::identity()))
                };
                given.extend(next);
            }
            let masses: InverseMasses = given.iter().copied().collect();
            proptest::prop_assert_eq!(masses.len(), given.len());
            for (i, m) in given.iter().enumerate() {
                proptest::prop_assert_eq!(bits(&masses.at(i)), bits(m));
            }
            let full = given.iter().filter(|m| m.isotropic_inertia().is_none()).count();
            proptest::prop_assert_eq!(masses.others.len(), full);
        }
    }

    /// `M⁻¹ Gᵀ λ` with `I⁻¹ = k 1` applied as a scalar is the matrix's
    /// `M⁻¹ Gᵀ λ` up to the sign of a zero, and added to a velocity that
    /// starts at `+0` or away from zero, as the passes that form
    /// `v* + M⁻¹Gᵀλ` add it, the same bits. Zero multipliers (a cold
    /// contact) and zero components of the velocity are drawn often, a
    /// static body (`k = 0`) and a box (the matrix path) too.
    #[test]
    fn a_scalar_inertia_changes_velocities_as_its_matrix() {
        use ndem_math::proptest_support::{inverse_mass, unit_vector, vec3, velocity};
        use proptest::prelude::*;
        let sphere = (0.01f64..10.0, 0.001f64..0.1).prop_map(|(m, r)| {
            MassProperties::sphere_with_mass(m, r)
                .unwrap()
                .inverse(&Quat::identity())
        });
        let body = prop_oneof![
            4 => sphere,
            1 => Just(InverseMass::INFINITE_MASS),
            1 => inverse_mass(),
        ];
        let row = prop_oneof![2 => Just(0.0), 3 => -5.0f64..5.0];
        let start = prop_oneof![
            1 => Just(Velocity6::ZERO),
            2 => velocity(3.0),
            1 => velocity(3.0).prop_map(|mut v| {
                v.angular.x = 0.0;
                v.linear.y = 0.0;
                v
            }),
        ];
        let case = (
            (unit_vector(), vec3(0.02), vec3(0.02), 0.1f64..3.0),
            (body.clone(), body),
            proptest::collection::vec(row, 6),
            (start.clone(), start),
        );
        proptest::proptest!(|(((n, da, db, scale), (ia, ib), lambda, (va, vb)) in case)| {
            let frame = ndem_math::ContactFrame::from_unit_normal(n);
            let jac = ContactJacobian::new(frame, &da, &db, scale);
            let masses: InverseMasses = [ia, ib].into_iter().collect();
            for m in [1, 3, 6] {
                let lam = &lambda[..m];
                let (sa, sb) = masses.velocity_change(&jac, 0, 1, lam);
                let (fa, fb) = jac.velocity_change(&ia, &ib, lam);
                for (s, f, v) in [(sa, fa, va), (sb, fb, vb)] {
                    prop_assert_eq!(s.to_array(), f.to_array(), "up to the sign of a zero");
                    let bits = |x: Velocity6| x.to_array().map(f64::to_bits);
                    prop_assert_eq!(bits(v + s), bits(v + f), "rows {}", m);
                }
            }
        });
    }

    /// `push_isotropic` stores what `push` stores for `k 1`, for any `k`
    /// (infinite, zero of either sign, negative, NaN).
    #[test]
    fn an_isotropic_push_is_the_push_of_its_matrix() {
        for k in [2.5, 0.0, -0.0, f64::INFINITY, -1.0, f64::NAN] {
            let m = InverseMass {
                inv_mass: 0.5,
                inv_inertia: Mat3::from_diagonal_element(k),
            };
            let mut pushed = InverseMasses::new();
            pushed.push(m);
            let mut direct = InverseMasses::new();
            direct.push_isotropic(0.5, k);
            assert_eq!(bits(&direct.at(0)), bits(&pushed.at(0)), "k = {k}");
            assert_eq!(direct.others.len(), pushed.others.len(), "k = {k}");
            assert_eq!(
                direct.responses()[0].isotropic.to_bits(),
                pushed.responses()[0].isotropic.to_bits(),
                "k = {k}"
            );
        }
    }

    /// A matrix equal to `k 1` with zeros of the other sign is read back
    /// with `+0` off the diagonal (documented); a negative `k` keeps its
    /// matrix.
    #[test]
    fn signed_zeros_and_negative_multiples() {
        let mut m = InverseMass {
            inv_mass: 0.5,
            inv_inertia: Mat3::from_diagonal_element(2.0),
        };
        m.inv_inertia[(0, 1)] = -0.0;
        let negative = InverseMass {
            inv_mass: 0.5,
            inv_inertia: Mat3::from_diagonal_element(-2.0),
        };
        let masses: InverseMasses = [m, negative].into_iter().collect();
        let back = masses.at(0);
        assert_eq!(back.inv_inertia, m.inv_inertia);
        assert_eq!(back.inv_inertia[(0, 1)].to_bits(), 0.0f64.to_bits());
        assert_eq!(bits(&masses.at(1)), bits(&negative));
        assert_eq!(masses.responses()[1].isotropic(), None);
    }
}

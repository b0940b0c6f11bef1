//! Contact points and the per-step contact set.

use crate::Shape;
use ndem_math::{ContactKey, Vec3};

/// One contact point between bodies `a` and `b` (`docs/theory.md`, "Conventions").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContactPoint {
    /// Persistent identity: body pair plus feature id.
    pub key: ContactKey,
    /// Contact point (midway between the two surfaces) \[m\].
    pub point: Vec3,
    /// Unit normal from b to a.
    pub normal: Vec3,
    /// Signed gap `φ` \[m\], negative when overlapping.
    pub gap: f64,
}

impl ContactPoint {
    /// Index of body a.
    pub fn body_a(&self) -> usize {
        self.key.body_a as usize
    }
    /// Index of body b.
    pub fn body_b(&self) -> usize {
        self.key.body_b as usize
    }

    /// Lever arm `d = p − x` from a body centre `x` to the contact point
    /// `p`. With the positions the contact was detected at, `arm(&x_a)`
    /// and `arm(&x_b)` are the arms `d_a`, `d_b` of the contact Jacobian
    /// (warm-starting paper, eq. 2), bit for bit as detection formed them:
    /// the point does not store them (48 bytes per contact), since every
    /// user of a contact has the positions beside it.
    #[inline(always)]
    pub fn arm(&self, centre: &Vec3) -> Vec3 {
        self.point - centre
    }

    /// Curvature radii `[r_a, r_b]` of the two bodies for the Hertz
    /// effective radius (`f64::INFINITY` for flat surfaces), from the
    /// bodies' `shapes` ([`Shape::curvature_radius`]): a shape's radius
    /// does not depend on where it is touched, so the point does not store
    /// them (16 bytes per contact).
    #[inline]
    pub fn curvature(&self, shapes: &[Shape]) -> [f64; 2] {
        [
            shapes[self.body_a()].curvature_radius(),
            shapes[self.body_b()].curvature_radius(),
        ]
    }

    /// The same contact seen from the other body: a and b swapped, the
    /// normal flipped, the gap unchanged.
    pub fn swapped(&self) -> ContactPoint {
        ContactPoint {
            key: ContactKey::new(self.key.body_b, self.key.body_a, self.key.feature),
            point: self.point,
            normal: -self.normal,
            gap: self.gap,
        }
    }
}

/// The contacts of one detection pass, sorted by key (deterministic order,
/// independent of threads). Keys are unique.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContactSet {
    pub(crate) contacts: Vec<ContactPoint>,
}

impl ContactSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The contacts, sorted by key.
    pub fn as_slice(&self) -> &[ContactPoint] {
        &self.contacts
    }

    /// Number of contacts.
    pub fn len(&self) -> usize {
        self.contacts.len()
    }

    /// `true` when there are no contacts.
    pub fn is_empty(&self) -> bool {
        self.contacts.is_empty()
    }

    /// Index of the contact with this key (binary search).
    pub fn find(&self, key: &ContactKey) -> Option<usize> {
        self.contacts.binary_search_by(|c| c.key.cmp(key)).ok()
    }

    /// For each contact of `previous`, its index in `self` if it persists
    /// (old index → new index), for carrying warm-start data.
    pub fn map_from(&self, previous: &ContactSet) -> Vec<Option<usize>> {
        previous
            .contacts
            .iter()
            .map(|c| self.find(&c.key))
            .collect()
    }

    /// Removes all contacts (keeps the allocation).
    pub fn clear(&mut self) {
        self.contacts.clear();
    }

    /// Appends `contact` when its key follows the last contact's, so that
    /// the set stays sorted with unique keys, and returns `true`; returns
    /// `false` and leaves the set as it was otherwise. For a pass that
    /// writes contacts in key order: the order is checked as they come,
    /// with no second pass ([`Self::from_sorted`]).
    #[inline]
    #[must_use]
    pub fn push_in_order(&mut self, contact: ContactPoint) -> bool {
        match self.contacts.last() {
            Some(last) if last.key >= contact.key => false,
            _ => {
                self.contacts.push(contact);
                true
            }
        }
    }

    /// Builds a set from arbitrary contacts (sorts them; later duplicates of
    /// a key are dropped).
    pub fn from_contacts(mut contacts: Vec<ContactPoint>) -> Self {
        contacts.sort_by_key(|c| c.key);
        contacts.dedup_by(|a, b| a.key == b.key);
        Self { contacts }
    }

    /// Builds a set from contacts already sorted by key with unique keys
    /// (checked; falls back to sorting otherwise).
    pub fn from_sorted(contacts: Vec<ContactPoint>) -> Self {
        if contacts.windows(2).all(|w| w[0].key < w[1].key) {
            Self { contacts }
        } else {
            Self::from_contacts(contacts)
        }
    }

    /// The contacts as a vector (key order), e.g. to reuse its storage.
    pub fn into_vec(self) -> Vec<ContactPoint> {
        self.contacts
    }

    /// Iterates the contacts in key order.
    pub fn iter(&self) -> std::slice::Iter<'_, ContactPoint> {
        self.contacts.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A detected contact holds 72 bytes (`docs/performance.md`,
    /// "Memory"): no lever arms and no curvature radii, which its bodies'
    /// shapes give.
    #[test]
    fn a_contact_point_is_72_bytes() {
        assert_eq!(std::mem::size_of::<ContactPoint>(), 72);
    }

    /// The radii come from the shapes of the key's bodies, in key order,
    /// and swap with the contact.
    #[test]
    fn curvature_is_the_key_bodies_shapes() {
        let shapes = [
            Shape::HalfSpace { normal: Vec3::z() },
            Shape::Sphere { radius: 0.004 },
            Shape::Sphere { radius: 0.006 },
        ];
        let c = ContactPoint {
            key: ContactKey::new(2, 0, 0),
            point: Vec3::zeros(),
            normal: Vec3::z(),
            gap: -1e-5,
        };
        assert_eq!(c.curvature(&shapes), [0.006, f64::INFINITY]);
        assert_eq!(c.swapped().curvature(&shapes), [f64::INFINITY, 0.006]);
        let pair = ContactPoint {
            key: ContactKey::new(1, 2, 0),
            ..c
        };
        assert_eq!(pair.curvature(&shapes), [0.004, 0.006]);
    }
}

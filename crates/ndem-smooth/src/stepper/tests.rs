use super::*;

fn contact(a: u32, b: u32, feature: u32) -> ContactPoint {
    ContactPoint {
        key: ContactKey::new(a, b, feature),
        point: Vec3::zeros(),
        normal: Vec3::z(),
        gap: -1e-6,
    }
}

/// Kept or not, a contact whose key does not follow the last one's is
/// refused (the histories are merged in key order).
#[test]
fn both_ways_of_writing_contacts_check_the_key_order() {
    let mut set = ContactSet::new();
    for mut out in [ContactOut::Set(&mut set), ContactOut::Checked(None)] {
        assert!(out.write(&contact(0, 1, 0)).is_ok());
        assert!(out.write(&contact(0, 1, 2)).is_ok());
        assert!(out.write(&contact(1, 2, 0)).is_ok());
        for refused in [contact(1, 2, 0), contact(0, 5, 0)] {
            let e = out.write(&refused).unwrap_err();
            assert!(matches!(e, SmoothError::ContactOrder { .. }), "{e}");
        }
    }
    assert_eq!(set.len(), 3);
}

//! Growth of the vectors a stepper reuses from step to step.
//!
//! A `Vec` grown by `push` or `resize` doubles its capacity, so a reused
//! vector can hold up to twice its largest length; one grown to the exact
//! length reallocates at every step while a packing settles and its
//! contact count rises, leaving freed blocks of every size behind in the
//! allocator. [`reserve_for`] grows to the length plus one eighth: a
//! realloc every 12.5 % of growth, at most 12.5 % unused.

/// Ensures `v` can hold `len` elements without reallocating. When it must
/// grow, its capacity becomes `len + len/8`; an empty vector is replaced
/// rather than reallocated (nothing to copy).
pub fn reserve_for<T>(v: &mut Vec<T>, len: usize) {
    if v.capacity() >= len {
        return;
    }
    let target = len + len / 8;
    if v.is_empty() {
        *v = Vec::new();
        *v = Vec::with_capacity(target);
    } else {
        v.reserve_exact(target - v.len());
    }
}

/// Makes `v` hold `len` copies of `value`, growing it as [`reserve_for`]
/// does (a reused scratch vector refilled each solve or step).
pub fn refill<T: Clone>(v: &mut Vec<T>, len: usize, value: T) {
    v.clear();
    reserve_for(v, len);
    v.resize(len, value);
}

/// [`refill`] with the entries `v` already holds overwritten in parts on
/// up to `threads` threads, at least `min_part` per part
/// ([`crate::blocks::fill_in_parts`]); a vector that must grow is refilled
/// as [`refill`] does it (emptied first, so that nothing is copied).
pub fn refill_in_parts<T: Clone + Send + Sync>(
    v: &mut Vec<T>,
    len: usize,
    value: T,
    threads: usize,
    min_part: usize,
) {
    if v.capacity() < len {
        refill(v, len, value);
        return;
    }
    v.truncate(len);
    let kept = v.len();
    v.resize(len, value.clone());
    crate::blocks::fill_in_parts(&mut v[..kept], threads, min_part, value);
}

/// Makes `v` `len` long for a caller that writes every entry before it
/// reads one: the entries `v` already holds are kept as they are (not
/// overwritten), new ones are `value`, and a vector that must grow is
/// refilled as [`refill`] does it (emptied first, so that nothing is
/// copied). Saves the pass that [`refill`] makes over the kept entries
/// (a stepper's multipliers and `D⁻¹`: 48 bytes per contact each).
pub fn resize_for_overwrite<T: Clone>(v: &mut Vec<T>, len: usize, value: T) {
    if v.capacity() < len {
        refill(v, len, value);
        return;
    }
    v.truncate(len);
    v.resize(len, value);
}

/// Empties `v` for a refill of unknown length, keeping room for its last
/// length and one sixteenth more (the contacts of the next collision pass).
pub fn clear_for_refill<T>(v: &mut Vec<T>) {
    let last = v.len();
    v.clear();
    reserve_for(v, last + last / 16);
}

/// `v.push(x)`, growing a full vector by one eighth (and at least 16)
/// rather than doubling it: for a vector filled by pushes whose final
/// length is not known in advance (the contacts of a collision pass).
#[inline]
pub fn push_with_headroom<T>(v: &mut Vec<T>, x: T) {
    if v.len() == v.capacity() {
        v.reserve_exact(v.len() / 8 + 16);
    }
    v.push(x);
}

#[cfg(test)]
mod tests {
    use super::{
        clear_for_refill, push_with_headroom, refill, refill_in_parts, reserve_for,
        resize_for_overwrite,
    };

    #[test]
    fn a_refill_in_parts_is_the_refill() {
        for (start, cap, len) in [
            (800, 800, 700),
            (700, 800, 800),
            (300, 800, 800),
            (800, 800, 1600),
            (0, 0, 5),
        ] {
            for threads in 1..4 {
                let mut serial = Vec::with_capacity(cap);
                serial.resize(start, 1u16);
                let mut parts = serial.clone();
                parts.reserve_exact(cap - parts.capacity().min(cap));
                refill(&mut serial, len, 9);
                refill_in_parts(&mut parts, len, 9, threads, 64);
                assert_eq!(parts, serial);
                assert_eq!(parts.capacity(), serial.capacity(), "{start} {cap} {len}");
            }
        }
    }

    #[test]
    fn a_resize_for_overwrite_keeps_what_it_holds_and_grows_as_a_refill() {
        let mut v = vec![1.0, 2.0, 3.0];
        resize_for_overwrite(&mut v, 2, 0.0);
        assert_eq!(v, [1.0, 2.0]);
        resize_for_overwrite(&mut v, 3, 0.0);
        assert_eq!(
            v,
            [1.0, 2.0, 0.0],
            "the entry past the kept ones is `value`"
        );
        // beyond the capacity: emptied first, grown by an eighth
        let cap = v.capacity();
        resize_for_overwrite(&mut v, cap + 8, 5.0);
        assert!(v.iter().all(|&x| x == 5.0));
        assert_eq!(v.capacity(), (cap + 8) + (cap + 8) / 8);
    }

    #[test]
    fn refills_keep_their_room() {
        let mut v = vec![1u8; 800];
        refill(&mut v, 700, 0);
        assert_eq!((v.len(), v.capacity()), (700, 800));
        assert!(v.iter().all(|&x| x == 0));
        refill(&mut v, 1600, 2);
        assert_eq!((v.len(), v.capacity()), (1600, 1800));
        clear_for_refill(&mut v);
        assert_eq!((v.len(), v.capacity()), (0, 1800));
        v.resize(1800, 0);
        clear_for_refill(&mut v);
        let want = 1800 + 1800 / 16;
        assert_eq!((v.len(), v.capacity()), (0, want + want / 8));
    }

    #[test]
    fn pushes_grow_by_an_eighth() {
        let mut v: Vec<u32> = Vec::new();
        for i in 0..1000 {
            push_with_headroom(&mut v, i);
            assert!(v.capacity() <= v.len() + v.len() / 8 + 16);
        }
        assert!(v.iter().copied().eq(0..1000));
    }

    #[test]
    fn grows_by_an_eighth_and_only_when_needed() {
        let mut v: Vec<u8> = Vec::new();
        reserve_for(&mut v, 800);
        assert_eq!(v.capacity(), 900);
        v.resize(850, 1);
        reserve_for(&mut v, 880);
        assert_eq!(v.capacity(), 900);
        reserve_for(&mut v, 1600);
        assert_eq!(v.capacity(), 1800);
        assert!(v.iter().all(|&x| x == 1) && v.len() == 850);
    }
}

//! The binary checkpoint format, for large scenes: the same [`Checkpoint`](super::Checkpoint)
//! as the JSON one, with the bodies and the stored impulses as fixed-size
//! little-endian records, streamed through a buffer (no text of the whole
//! file is held in memory).
//!
//! Layout: the magic `NDEMCKPT`, the format number (u32), the length (u64)
//! and JSON text of a header (the checkpoint without its bodies, contacts
//! and rows, and the table of non-sphere shapes), then three blocks, each
//! a count (u64) and its records:
//! - bodies, 180 bytes each: shape (u8 0: a sphere, radius f64; 1: index
//!   u64 into the header's shape table), material (u32), motion (u8: 0
//!   dynamic, 1 kinematic, 2 static), collision group (u32), position
//!   (3 f64), orientation `[w, x, y, z]` (4 f64), velocity, angular
//!   velocity, surface velocity (3 f64 each), mass (u8 flag, f64), inertia
//!   (u8 flag, 3 f64);
//! - contacts, 68 bytes each: `a`, `b`, feature (u32 each), normal (f64),
//!   friction and rolling impulses (3 f64 each);
//! - rows, 20 bytes each: `a`, `b`, feature (u32 each), `λ` (f64).
//!
//! Floats are stored as their bits: a binary checkpoint resumes
//! bit-identically, as a JSON one does.

use std::io::{Read, Write};

use ndem_scenes::file::{BodySpec, ShapeSpec};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A stored contact impulse: `(a, b, feature, normal, friction, rolling)`.
type Contact = (u32, u32, u32, f64, [f64; 3], [f64; 3]);
/// A keyed generic row: `(a, b, feature, λ)`.
type Row = (u32, u32, u32, f64);

/// The first bytes of a binary checkpoint.
pub const MAGIC: &[u8; 8] = b"NDEMCKPT";
/// The binary layout this version writes and reads.
const FORMAT: u32 = 1;
/// Bytes of one body record.
const BODY_BYTES: usize = 180;
/// Bytes of one contact record.
const CONTACT_BYTES: usize = 68;
/// Bytes of one row record.
const ROW_BYTES: usize = 20;
const MOTIONS: [&str; 3] = ["dynamic", "kinematic", "static"];

/// The checkpoint without its bulk, and the shapes the body records name.
#[derive(Serialize, Deserialize)]
struct Header<H> {
    checkpoint: H,
    shapes: Vec<ShapeSpec>,
}

/// What a binary file holds: the header's checkpoint (without its bulk),
/// the bodies, the stored contact impulses and the keyed rows.
pub(crate) type Parts<H> = (H, Vec<BodySpec>, Vec<Contact>, Vec<Row>);

/// Why a binary checkpoint could not be read or written.
fn invalid(what: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string())
}

fn put_f64s(out: &mut Vec<u8>, xs: &[f64]) {
    for x in xs {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// Appends the record of `b` to `out`; a shape other than a sphere is
/// entry `next_shape` of the header's table, and `next_shape` advances.
fn put_body(out: &mut Vec<u8>, b: &BodySpec, next_shape: &mut u64) -> std::io::Result<()> {
    match &b.shape {
        ShapeSpec::Sphere { radius } => {
            out.push(0);
            put_f64s(out, &[*radius]);
        }
        _ => {
            out.push(1);
            out.extend_from_slice(&next_shape.to_le_bytes());
            *next_shape += 1;
        }
    }
    out.extend_from_slice(&(b.material as u32).to_le_bytes());
    let motion = MOTIONS
        .iter()
        .position(|m| *m == b.motion)
        .ok_or_else(|| invalid(format!("body motion `{}`", b.motion)))?;
    out.push(motion as u8);
    out.extend_from_slice(&b.collision_group.to_le_bytes());
    put_f64s(out, &b.position);
    put_f64s(out, &b.orientation);
    put_f64s(out, &b.velocity);
    put_f64s(out, &b.angular_velocity);
    put_f64s(out, &b.surface_velocity);
    out.push(u8::from(b.mass.is_some()));
    put_f64s(out, &[b.mass.unwrap_or(0.0)]);
    out.push(u8::from(b.inertia.is_some()));
    put_f64s(out, &b.inertia.unwrap_or([0.0; 3]));
    Ok(())
}

/// Reads fixed-size fields from a record.
struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        a.copy_from_slice(&self.bytes[self.at..self.at + N]);
        self.at += N;
        a
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn f64(&mut self) -> f64 {
        f64::from_le_bytes(self.take())
    }
    fn f64s<const N: usize>(&mut self) -> [f64; N] {
        std::array::from_fn(|_| self.f64())
    }
}

/// The body of record `k` (its bytes), its shape from `shapes`.
fn get_body(k: usize, bytes: &[u8], shapes: &[ShapeSpec]) -> std::io::Result<BodySpec> {
    let mut f = Fields { bytes, at: 0 };
    let shape = match f.u8() {
        0 => ShapeSpec::Sphere { radius: f.f64() },
        1 => {
            let i = f.u64();
            usize::try_from(i)
                .ok()
                .and_then(|i| shapes.get(i))
                .cloned()
                .ok_or_else(|| invalid(format!("body {k}: shape {i} is not in the table")))?
        }
        t => return Err(invalid(format!("body {k}: shape tag {t}"))),
    };
    let material = f.u32() as usize;
    let motion = MOTIONS
        .get(f.u8() as usize)
        .ok_or_else(|| invalid(format!("body {k}: motion tag")))?;
    let collision_group = f.u32();
    let (position, orientation) = (f.f64s::<3>(), f.f64s::<4>());
    let (velocity, angular_velocity, surface_velocity) =
        (f.f64s::<3>(), f.f64s::<3>(), f.f64s::<3>());
    let (has_mass, mass) = (f.u8(), f.f64());
    let (has_inertia, inertia) = (f.u8(), f.f64s::<3>());
    Ok(BodySpec {
        shape,
        material,
        motion: (*motion).to_string(),
        position,
        orientation,
        velocity,
        angular_velocity,
        surface_velocity,
        collision_group,
        mass: (has_mass != 0).then_some(mass),
        inertia: (has_inertia != 0).then_some(inertia),
    })
}

/// Writes `count` records of `size` bytes that `put` appends, given one
/// at a time and written in chunks; an error when the iterator gives
/// another number of them.
fn write_stream<T>(
    out: &mut impl Write,
    (count, items): (usize, impl Iterator<Item = T>),
    size: usize,
    what: &str,
    mut put: impl FnMut(&mut Vec<u8>, &T) -> std::io::Result<()>,
) -> std::io::Result<()> {
    out.write_all(&(count as u64).to_le_bytes())?;
    let mut buf = Vec::with_capacity(size * 4096);
    let mut written = 0;
    for item in items {
        put(&mut buf, &item)?;
        written += 1;
        if buf.len() >= size * 4096 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    if written != count {
        return Err(invalid(format!(
            "{what}: {written} written, {count} counted"
        )));
    }
    Ok(())
}

/// Reads a block of records of `size` bytes, each turned into a value by
/// `get` (record index and bytes), in chunks.
fn read_block<T>(
    input: &mut impl Read,
    size: usize,
    what: &str,
    mut get: impl FnMut(usize, &[u8]) -> std::io::Result<T>,
) -> std::io::Result<Vec<T>> {
    let count = read_u64(input)?;
    let count = usize::try_from(count).map_err(|_| invalid(format!("{what}: count {count}")))?;
    // grown as records arrive, so that a corrupt count cannot reserve
    // memory, by doubling but never past `count`: the block ends with the
    // capacity it needs
    let mut out = Vec::with_capacity(count.min(1 << 16));
    let mut buf = vec![0u8; size * 4096];
    let mut k = 0;
    while k < count {
        let n = (count - k).min(4096);
        input
            .read_exact(&mut buf[..n * size])
            .map_err(|e| invalid(format!("{what}: record {k} of {count}: {e}")))?;
        if out.capacity() < k + n {
            out.reserve_exact(k.max(n).min(count - k));
        }
        for r in buf[..n * size].chunks_exact(size) {
            out.push(get(k, r)?);
            k += 1;
        }
    }
    Ok(out)
}

fn read_u64(input: &mut impl Read) -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    input.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// The shapes of `bodies` other than spheres, in order: the header's
/// table that the body records index.
pub(crate) fn shape_table<'a>(bodies: impl Iterator<Item = &'a ShapeSpec>) -> Vec<ShapeSpec> {
    bodies
        .filter(|s| !matches!(s, ShapeSpec::Sphere { .. }))
        .cloned()
        .collect()
}

/// Writes `header` (a checkpoint without its bodies, contacts and rows),
/// the shape table of the bodies, and the three blocks in the binary
/// layout (module docs); the `count` bodies are formed one at a time by
/// `bodies`, so no list of them need exist.
pub(crate) fn write<H: Serialize>(
    out: &mut impl Write,
    header: &H,
    shapes: Vec<ShapeSpec>,
    (count, bodies): (usize, impl Iterator<Item = BodySpec>),
    contacts: (usize, impl Iterator<Item = Contact>),
    rows: &[Row],
) -> std::io::Result<()> {
    let header = Header {
        checkpoint: header,
        shapes,
    };
    let text = serde_json::to_vec(&header).map_err(invalid)?;
    out.write_all(MAGIC)?;
    out.write_all(&FORMAT.to_le_bytes())?;
    out.write_all(&(text.len() as u64).to_le_bytes())?;
    out.write_all(&text)?;
    out.write_all(&(count as u64).to_le_bytes())?;
    let mut next_shape = 0;
    let mut buf = Vec::with_capacity(BODY_BYTES * 4096);
    let mut written = 0;
    for b in bodies {
        put_body(&mut buf, &b, &mut next_shape)?;
        written += 1;
        if buf.len() >= BODY_BYTES * 4096 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    if written != count || next_shape as usize != header.shapes.len() {
        return Err(invalid("the bodies written are not the bodies counted"));
    }
    write_stream(out, contacts, CONTACT_BYTES, "contacts", |buf, c| {
        for x in [c.0, c.1, c.2] {
            buf.extend_from_slice(&x.to_le_bytes());
        }
        put_f64s(buf, &[c.3]);
        put_f64s(buf, &c.4);
        put_f64s(buf, &c.5);
        Ok(())
    })?;
    let rows = (rows.len(), rows.iter().copied());
    write_stream(out, rows, ROW_BYTES, "rows", |buf, r| {
        for x in [r.0, r.1, r.2] {
            buf.extend_from_slice(&x.to_le_bytes());
        }
        put_f64s(buf, &[r.3]);
        Ok(())
    })
}

/// Reads the binary layout; errors name the block and record.
pub(crate) fn read<H: DeserializeOwned>(input: &mut impl Read) -> std::io::Result<Parts<H>> {
    let mut magic = [0u8; 8];
    input.read_exact(&mut magic)?;
    if &magic != MAGIC {
        return Err(invalid("not a binary ndem checkpoint (no NDEMCKPT magic)"));
    }
    let mut format = [0u8; 4];
    input.read_exact(&mut format)?;
    let format = u32::from_le_bytes(format);
    if format != FORMAT {
        return Err(invalid(format!(
            "binary checkpoint format {format}, this version reads {FORMAT}"
        )));
    }
    let len = read_u64(input)?;
    let mut text = Vec::new();
    input.take(len).read_to_end(&mut text)?;
    if text.len() as u64 != len {
        return Err(invalid("header: the file ends inside it"));
    }
    let Header { checkpoint, shapes } =
        serde_json::from_slice(&text).map_err(|e| invalid(format!("header: {e}")))?;
    let bodies = read_block(input, BODY_BYTES, "bodies", |k, r| get_body(k, r, &shapes))?;
    let contacts = read_block(input, CONTACT_BYTES, "contacts", |_, r| {
        let mut f = Fields { bytes: r, at: 0 };
        Ok((
            f.u32(),
            f.u32(),
            f.u32(),
            f.f64(),
            f.f64s::<3>(),
            f.f64s::<3>(),
        ))
    })?;
    let rows = read_block(input, ROW_BYTES, "rows", |_, r| {
        let mut f = Fields { bytes: r, at: 0 };
        Ok((f.u32(), f.u32(), f.u32(), f.f64()))
    })?;
    Ok((checkpoint, bodies, contacts, rows))
}

//! Bodies and contact entries in transit between ranks, as flat `f64`
//! records.

use ndem_collide::Shape;
use ndem_math::{MassProperties, Quat, Vec3, Velocity6};
use ndem_step::{BodyDesc, MaterialId, Motion};

/// A contact's identity in the whole scene: global indices of its bodies
/// (the lower first) and the feature.
pub type GlobalKey = (u64, u64, u32);

/// State a contact carries from step to step (tangential springs, warm
/// start impulses), sent along when its bodies migrate.
pub trait Carried: Copy {
    /// Number of `f64` values.
    const WIDTH: usize;
    /// Appends the values.
    fn pack(&self, out: &mut Vec<f64>);
    /// Reads them back.
    fn unpack(values: &[f64]) -> Self;
}

/// Values of one body record (see [`pack_body`]).
pub(super) const BODY_WIDTH: usize = 39;
/// Values of one ghost update: position, orientation, velocity.
pub(super) const STATE_WIDTH: usize = 13;

/// A body in transit: global index, description, user force and torque,
/// its membership of a rigid aggregate, and its reach budget
/// ([`super::GhostReach`]).
#[derive(Debug, Clone)]
pub(super) struct Record {
    pub gid: u64,
    pub budget: f64,
    pub desc: BodyDesc,
    pub force: (Vec3, Vec3),
    pub membership: Option<GlobalMembership>,
}

/// A member's host by global index, and its pose on the host
/// ([`ndem_step::Membership`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct GlobalMembership {
    pub host: u64,
    pub offset: Vec3,
    pub relative_orientation: Quat,
}

pub(super) fn pack_state(p: &Vec3, q: &Quat, v: &Velocity6, out: &mut Vec<f64>) {
    out.extend_from_slice(p.as_slice());
    out.extend_from_slice(q.coords.as_slice());
    out.extend_from_slice(v.linear.as_slice());
    out.extend_from_slice(v.angular.as_slice());
}

pub(super) fn unpack_state(v: &[f64]) -> (Vec3, Quat, Velocity6) {
    let p = Vec3::new(v[0], v[1], v[2]);
    // the coordinates as they were: no renormalisation, so that a ghost
    // holds its owner's bits
    let q = Quat::new_unchecked(nalgebra::Quaternion::new(v[6], v[3], v[4], v[5]));
    let vel = Velocity6::new(Vec3::new(v[7], v[8], v[9]), Vec3::new(v[10], v[11], v[12]));
    (p, q, vel)
}

/// `[gid, radius, material, mass, I(3), state(13), surface velocity(3),
/// collision group, force(3), torque(3), host (−1: none), offset(3),
/// relative orientation(4), budget]`.
pub(super) fn pack_body(r: &Record, out: &mut Vec<f64>) {
    let d = &r.desc;
    let radius = match d.shape {
        Shape::Sphere { radius } => radius,
        _ => f64::NAN,
    };
    let mass = d.mass.unwrap_or(MassProperties {
        mass: f64::NAN,
        principal_inertia: Vec3::repeat(f64::NAN),
    });
    out.extend_from_slice(&[r.gid as f64, radius, d.material.index() as f64, mass.mass]);
    out.extend_from_slice(mass.principal_inertia.as_slice());
    pack_state(&d.position, &d.orientation, &d.velocity, out);
    out.extend_from_slice(d.surface_velocity.as_slice());
    out.push(d.collision_group as f64);
    out.extend_from_slice(r.force.0.as_slice());
    out.extend_from_slice(r.force.1.as_slice());
    match &r.membership {
        Some(m) => {
            out.push(m.host as f64);
            out.extend_from_slice(m.offset.as_slice());
            out.extend_from_slice(m.relative_orientation.coords.as_slice());
        }
        None => out.extend_from_slice(&[-1.0; 8]),
    }
    out.push(r.budget);
}

pub(super) fn unpack_body(v: &[f64]) -> Record {
    let (position, orientation, velocity) = unpack_state(&v[7..20]);
    let mass = MassProperties {
        mass: v[3],
        principal_inertia: Vec3::new(v[4], v[5], v[6]),
    };
    Record {
        gid: v[0] as u64,
        budget: v[38],
        desc: BodyDesc {
            shape: Shape::Sphere { radius: v[1] },
            material: MaterialId::from_index(v[2] as usize),
            motion: Motion::Dynamic,
            mass: Some(mass),
            position,
            orientation,
            velocity,
            surface_velocity: Vec3::new(v[20], v[21], v[22]),
            collision_group: v[23] as u32,
        },
        force: (
            Vec3::new(v[24], v[25], v[26]),
            Vec3::new(v[27], v[28], v[29]),
        ),
        membership: (v[30] >= 0.0).then(|| GlobalMembership {
            host: v[30] as u64,
            offset: Vec3::new(v[31], v[32], v[33]),
            relative_orientation: Quat::new_unchecked(nalgebra::Quaternion::new(
                v[37], v[34], v[35], v[36],
            )),
        }),
    }
}

pub(super) fn pack_entry<T: Carried>(key: &GlobalKey, value: &T, out: &mut Vec<f64>) {
    out.extend_from_slice(&[key.0 as f64, key.1 as f64, key.2 as f64]);
    value.pack(out);
}

pub(super) fn unpack_entry<T: Carried>(v: &[f64]) -> (GlobalKey, T) {
    ((v[0] as u64, v[1] as u64, v[2] as u32), T::unpack(&v[3..]))
}

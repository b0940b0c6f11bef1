//! Emitters on a decomposed scene. Every rank runs each emitter alike on
//! the spheres that may block its source, gathered from all ranks in
//! global order, so every rank draws the same particles and gives them the
//! same global indices: those a one-rank run draws from the same blocking
//! spheres. Each new particle is then owned by the rank whose box holds
//! it ([`Domain::insert`]).
//!
//! What depends on the rank count: a candidate is skipped when it overlaps
//! a sphere near the source, and those spheres' positions agree with a
//! one-rank run's only to the solver tolerance (`docs/distributed.md`), so
//! a candidate on the edge of a blocking sphere can be taken on one rank
//! count and skipped on another. A source that is clear when the emitter
//! draws (the usual inflow) gives the same particles on any rank count.

use crate::comm::Communicator;
use crate::domain::{Domain, Role};
use crate::error::MpiError;
use ndem::scenes::Emitter;
use ndem_math::Vec3;
use ndem_step::BodyDesc;

/// Values of one gathered sphere: global index, centre, radius.
const SPHERE_WIDTH: usize = 5;

/// Runs `emitters` for a step of length `dt` on every rank and inserts
/// what they emit; returns the particles added, in global order (the same
/// on every rank; the first has global index [`Domain::scene_len`] before
/// the call). Collective.
pub fn emit<C: Communicator>(
    domain: &mut Domain<C>,
    emitters: &mut [Emitter],
    dt: f64,
) -> Result<Vec<BodyDesc>, MpiError> {
    if emitters.iter().all(Emitter::done) {
        return Ok(Vec::new());
    }
    let mut near = blocking_spheres(domain, emitters);
    let mut bodies = Vec::new();
    for e in emitters.iter_mut() {
        // the spheres this emitter sees, those of the emitters before it
        // included, in global order
        let mut own = e.spheres_near_source(near.iter().copied());
        let new = e.emit_among(&mut own, dt).map_err(|err| MpiError::Step {
            rank: domain.comm().rank(),
            message: err.to_string(),
        })?;
        for b in &new {
            if let Some(r) = b.shape.sphere_radius() {
                near.push((b.position, r));
            }
        }
        bodies.extend(new);
    }
    domain.insert(bodies.clone(), dt)?;
    Ok(bodies)
}

/// The owned spheres of every rank that may block some emitter's source,
/// in global order, on every rank. Collective.
fn blocking_spheres<C: Communicator>(domain: &Domain<C>, emitters: &[Emitter]) -> Vec<(Vec3, f64)> {
    let world = domain.world();
    let first = domain.comm().rank() == 0;
    let mut mine = Vec::new();
    for (i, role) in domain.roles().iter().enumerate() {
        // owned spheres, and the static and kinematic ones every rank
        // holds, sent by rank 0
        let sends = match role {
            Role::Owned => true,
            Role::Replicated => first,
            Role::Ghost(_) => false,
        };
        let Some(r) = world.shapes()[i].sphere_radius().filter(|_| sends) else {
            continue;
        };
        let c = world.positions()[i];
        if emitters.iter().any(|e| !e.done() && e.may_block(&c, r)) {
            mine.extend_from_slice(&[domain.global_indices()[i] as f64, c.x, c.y, c.z, r]);
        }
    }
    let received = domain.comm().exchange(vec![mine; domain.comm().size()]);
    let mut all: Vec<(u64, Vec3, f64)> = received
        .iter()
        .flat_map(|b| {
            b.chunks_exact(SPHERE_WIDTH)
                .map(|v| (v[0] as u64, Vec3::new(v[1], v[2], v[3]), v[4]))
        })
        .collect();
    all.sort_by_key(|s| s.0);
    all.into_iter().map(|(_, c, r)| (c, r)).collect()
}

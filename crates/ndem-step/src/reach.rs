//! How far a body can travel within a step once the step's impulses have
//! passed its partners' speed on to it: the reach by which stage 1 grows
//! each pair's box with [`StepSettings::reach_growth`](crate::StepSettings::reach_growth).
//!
//! A pair's box is grown by the two bodies' sweeps `Δt (|v| + |ω| r)` at
//! `v_i`, so that a contact that would close within the step is found
//! before it overlaps. The solve changes the velocities: a sphere at rest
//! a fraction of a millimetre above the floor, struck from above, is
//! driven into the floor within the step, and with its own sweep (near
//! zero) the floor is not within its reach. The next step would meet that
//! contact already overlapping, by up to the striker's travel in one step.
//!
//! In a collision of restitution `e ≤ 1` between bodies `i` and `j` whose
//! velocities along the normal are `a` and `b`, `i` leaves with
//! `a' = a + (1 + e) μ (b − a)`, `μ = m_j/(m_i + m_j)` (`μ = 1` for a
//! body that no contact moves), so `|a'| ≤ |a| + 2 μ |b|`: a partner
//! adds at most `2 μ |b|` to `i`'s speed, nothing when it is at rest (a
//! bounce off the floor keeps the speed). Stage 1 grows each dynamic
//! body's reach to its own sweep plus the largest such share over its
//! closing contacts, over `Δt`, with `|b|` grown by what `j` itself was
//! passed (its reach beyond its own sweep, over `Δt`), where that grows it
//! by more than [`REACH_TOLERANCE`] of the smallest dynamic body's bounding
//! radius; stage 1 detects again while some reach grows, [`REACH_ROUNDS`]
//! times at most. Pairs that touch at rest or separate pass nothing on, so
//! a resting bed keeps one pass. Friction impulses, which can pass a
//! partner's tangential speed on, are not counted.

use crate::body::World;
use crate::state::Motion;
use ndem_collide::ContactSet;
use ndem_math::Vec3;

/// Growth of a body's reach, relative to the smallest dynamic body's
/// bounding radius, that is worth another detection pass: a contact missed
/// by less overlaps by less than this share of a radius.
pub const REACH_TOLERANCE: f64 = 0.01;

/// Detection passes after the first, at most: one per hop an impulse
/// travels (a sphere struck onto another one resting above the floor is
/// two hops from the striker).
pub const REACH_ROUNDS: usize = 2;

/// Grows `reach` (per body, at least `own`, the bodies' own sweeps over
/// `dt`) by the shares of the partners' speeds that the `contacts` can
/// pass on (module docs), for the bodies whose reach that grows by more
/// than [`REACH_TOLERANCE`] of the smallest dynamic bounding radius;
/// `partner` is scratch. Returns whether some reach grew, that is,
/// whether another detection pass is due.
pub(crate) fn grow_reach(
    world: &World,
    (own, reach, partner): (&[f64], &mut [f64], &mut Vec<f64>),
    contacts: &ContactSet,
    dt: f64,
) -> bool {
    let n = world.len();
    debug_assert!(own.len() == n && reach.len() == n);
    partner.clear();
    partner.resize(n, 0.0);
    partner_shares(world, contacts, (own, reach, dt), partner);
    let smallest = (0..n)
        .filter(|&i| world.motions()[i] == Motion::Dynamic)
        .map(|i| world.shapes()[i].bounding_radius())
        .filter(|&r| r > 0.0)
        .fold(f64::INFINITY, f64::min);
    let tolerance = REACH_TOLERANCE * smallest;
    let mut due = false;
    for i in 0..n {
        let grown = own[i] + partner[i];
        if grown - reach[i] > tolerance {
            reach[i] = grown;
            due = true;
        }
    }
    due
}

/// `partner[i]`: the largest distance over `dt` that a contact of dynamic
/// body `i` can add to its travel: `2 m_j/(m_i + m_j)` of partner `j`'s
/// normal speed at `v_i` in a closing pair (over `dt`) plus what `j` was
/// passed (`reach_j − own_j`) (module docs).
fn partner_shares(
    world: &World,
    contacts: &ContactSet,
    (own, reach, dt): (&[f64], &[f64], f64),
    partner: &mut [f64],
) {
    // the mass that moves with a body: its host's for a member; infinite
    // for a body no contact moves
    let mass = |i: usize| {
        let carrier = world.carrier(i);
        match (world.motions()[carrier], world.mass_properties()[carrier]) {
            (Motion::Dynamic, Some(m)) => m.mass,
            _ => f64::INFINITY,
        }
    };
    let (x, v) = (world.positions(), world.velocities());
    let point_velocity = |i: usize, p: &Vec3| v[i].linear + v[i].angular.cross(&(p - x[i]));
    for c in contacts.as_slice() {
        let (a, b) = (c.body_a(), c.body_b());
        let (va, vb) = (point_velocity(a, &c.point), point_velocity(b, &c.point));
        // only a closing pair collides (a moving against the normal from
        // b to a, relative to b)
        let closing = c.normal.dot(&(va - vb)) < 0.0;
        for (i, j, vj) in [(a, b, vb), (b, a, va)] {
            if world.motions()[i] != Motion::Dynamic {
                continue;
            }
            let pushed = if closing {
                c.normal.dot(&vj).abs()
            } else {
                0.0
            };
            let passed = dt * pushed + (reach[j] - own[j]);
            if passed <= 0.0 {
                continue;
            }
            let (mi, mj) = (mass(i), mass(j));
            let share = if mj.is_infinite() {
                2.0
            } else {
                2.0 * mj / (mi + mj)
            };
            partner[i] = partner[i].max(share * passed);
        }
    }
}

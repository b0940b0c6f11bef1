//! What every trial-solve split ([`crate::TrialSplit`], paper section 3.2)
//! needs around its solver, whichever solver and process layout runs it:
//! the starting point, the members a partial solve holds and the external
//! load of a member.

use crate::aggregate::{aggregate_state, attach_members, place_aggregate_body, place_anchor_body};
use crate::criteria::relative_motion;
use crate::{MergeThresholds, ReduceError};
use ndem_collide::ContactSet;
use ndem_math::{Vec3, Velocity6};
use ndem_solve::{ColdStart, ContactProblem, HistoryWarmStart, ImpulseHistory, WarmStart};
use ndem_step::{BodyId, Motion, StepError, StepSettings, World};

/// The trial solve's start `(λ₀, v₀)` for `problem`: eqs. 7-8 from the
/// stepper's impulse history, a cold start where its warm-start policy
/// keeps none.
pub fn trial_start(
    problem: &ContactProblem,
    history: Option<&ImpulseHistory>,
) -> Result<(Vec<f64>, Vec<Velocity6>), StepError> {
    let mut lambda = vec![0.0; problem.len()];
    let mut v = vec![Velocity6::ZERO; problem.body_count()];
    match history {
        Some(history) => HistoryWarmStart::default()
            .start_from(history, problem, &mut lambda, &mut v)
            .map(drop),
        None => ColdStart.initialize(problem, &mut lambda, &mut v).map(drop),
    }?;
    Ok((lambda, v))
}

/// The external load on body `i` that the balance test of eqs. 34-36
/// weighs the contact force against: gravity plus the user force, and the
/// user torque.
pub fn external_load(world: &World, i: usize) -> (Vec3, Vec3) {
    let mass = world.mass_properties()[i].map_or(0.0, |p| p.mass);
    let (force, torque) = world.user_force(BodyId::from_index(i));
    (world.gravity * mass + force, torque)
}

/// The members whose load may have changed since the last step, for a
/// trial restricted to them ([`crate::TrialSplit::disturbed_only`]): per
/// body, `true` for a member with a *disturbed* outer contact (a contact
/// with a body that is not a member of its aggregate). A contact is
/// disturbed when `history` (the stepper's impulses of the last step)
/// holds no impulse for it, a contact the last solve did not see, or when
/// its relative velocity at `world`'s state lies outside the merge
/// velocity thresholds of eqs. 26-27 (`merge`): an approach, a
/// separation, sliding or rolling that a resting contact would not have.
/// A speculative contact (gap wider than `ξ_nv^{i-mrg} Δt`, the merge's
/// test of touching) counts only by its velocity. Without a history every
/// member with an outer contact is disturbed.
pub fn disturbed_members(
    world: &World,
    contacts: &ContactSet,
    history: Option<&ImpulseHistory>,
    merge: &MergeThresholds,
    dt: f64,
) -> Vec<bool> {
    let mut disturbed = vec![false; world.len()];
    let (x, v) = (world.positions(), world.velocities());
    for c in contacts.iter() {
        let (a, b) = (c.body_a(), c.body_b());
        let (ha, hb) = (world.host_of(a), world.host_of(b));
        if ha == hb {
            continue;
        }
        let touching = c.gap <= merge.normal_incident * dt;
        let new = history.is_none_or(|h| touching && h.get(&c.key).is_none());
        let u = relative_motion(c, x, v);
        let moving = u.normal < -merge.normal_incident
            || u.normal > merge.normal_separating
            || u.tangential > merge.tangential
            || u.angular > merge.rolling;
        if new || moving {
            disturbed[a] |= ha.is_some();
            disturbed[b] |= hb.is_some();
        }
    }
    disturbed
}

/// Cosine of the half-angle of the empty cone that puts a member on its
/// aggregate's free surface ([`held_members`]): 60°.
const OPEN_CONE_COS: f64 = 0.5;

/// The members a partial trial solve ([`crate::TrialSplit::depth`]) holds
/// on their aggregate's motion: those more than `depth` contact layers
/// inside their aggregate. Layer 1 are the members on the aggregate's
/// boundary: those with a contact (any detected pair) to a body that is
/// not a member of the same aggregate (a free particle, a static,
/// kinematic or machine body, a member of another aggregate), and those on
/// its free surface, whose neighbours in the aggregate all lie more than
/// 60° away from the direction opposite their mean (an open side; a member
/// without neighbours in it too). Layer `k + 1` are the members touching
/// layer `k` inside the aggregate. One flag per body (`false` for every
/// body that is not a member).
pub fn held_members(world: &World, contacts: &ContactSet, depth: usize) -> Vec<bool> {
    held_beyond(world, contacts, None, Some(depth))
}

/// The members more than `depth` contact layers (`None`: any number)
/// inside their aggregate from layer 1: the members `seeds` marks, or
/// without seeds the aggregate's boundary and free surface
/// ([`held_members`]). One flag per body.
pub fn held_beyond(
    world: &World,
    contacts: &ContactSet,
    seeds: Option<&[bool]>,
    depth: Option<usize>,
) -> Vec<bool> {
    let n = world.len();
    let depth = depth.unwrap_or(usize::MAX);
    let mut layer = vec![usize::MAX; n];
    // the member-member contacts inside one aggregate, both ways, by body
    let mut inner: Vec<(u32, u32)> = Vec::new();
    for c in contacts.as_slice() {
        let (a, b) = (c.body_a(), c.body_b());
        let (ha, hb) = (world.host_of(a), world.host_of(b));
        if ha.is_some() && ha == hb {
            inner.push((a as u32, b as u32));
            inner.push((b as u32, a as u32));
            continue;
        }
        for (x, hx) in [(a, ha), (b, hb)] {
            if hx.is_some() && seeds.is_none() {
                layer[x] = 1;
            }
        }
    }
    if let Some(seeds) = seeds {
        for (x, l) in layer.iter_mut().enumerate() {
            if seeds[x] && world.host_of(x).is_some() {
                *l = 1;
            }
        }
    }
    inner.sort_unstable();
    let start = {
        let mut start = vec![0usize; n + 1];
        for &(a, _) in &inner {
            start[a as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        start
    };
    let x = world.positions();
    for a in (0..n).filter(|_| seeds.is_none()) {
        if world.host_of(a).is_some() && layer[a] != 1 {
            let neighbours = inner[start[a]..start[a + 1]].iter();
            if open_side(neighbours.map(|&(_, b)| (x[b as usize] - x[a]).normalize())) {
                layer[a] = 1;
            }
        }
    }
    let mut front: Vec<usize> = (0..n).filter(|&i| layer[i] == 1).collect();
    for k in 2..=depth {
        let mut next = Vec::new();
        for &a in &front {
            for &(_, b) in &inner[start[a]..start[a + 1]] {
                let b = b as usize;
                if layer[b] == usize::MAX {
                    layer[b] = k;
                    next.push(b);
                }
            }
        }
        if next.is_empty() {
            break;
        }
        front = next;
    }
    (0..n)
        .map(|i| world.host_of(i).is_some() && (layer[i] > depth || layer[i] == usize::MAX))
        .collect()
}

/// Whether unit directions `toward` a member's neighbours leave it an open
/// side: none of them, or none within the cone of half-angle 60° around
/// the direction opposite their mean (neighbours spread evenly around it,
/// summing to nothing, leave none).
fn open_side(toward: impl ExactSizeIterator<Item = Vec3> + Clone) -> bool {
    let count = toward.len();
    if count == 0 {
        return true;
    }
    let sum: Vec3 = toward.clone().sum();
    if sum.norm() <= 1e-9 * count as f64 {
        return false;
    }
    let open = -sum.normalize();
    toward.into_iter().all(|u| u.dot(&open) <= OPEN_CONE_COS)
}

/// The problem of a trial solve and the contact-set index of each of its
/// contacts, over the world the trial runs on (`world` itself, or its
/// partial copy).
pub struct TrialProblem {
    /// The problem.
    pub problem: ContactProblem,
    /// The contact-set index of each of its contacts.
    pub index: Vec<usize>,
    /// The bodies of the caller's world (a partial copy appends its
    /// carriers after them).
    pub bodies: usize,
    /// The world of a partial trial ([`partial_problem`]); `None` for the
    /// whole unfolded model, whose world is the caller's.
    pub partial_world: Option<World>,
}

/// The problem of the whole trial solve: every aggregate unfolded
/// ([`ndem_step::unfolded_problem`]).
pub fn whole_problem(
    world: &World,
    contacts: &ContactSet,
    settings: &StepSettings,
) -> Result<TrialProblem, StepError> {
    let (problem, index) = ndem_step::unfolded_problem(world, contacts, settings)?;
    Ok(TrialProblem {
        problem,
        index,
        bodies: world.len(),
        partial_world: None,
    })
}

/// The problem of a partial trial solve ([`crate::TrialSplit::depth`]):
/// in a copy of `world`, the members of each aggregate (`aggregates`: host
/// body and members) that `held` marks ([`held_members`]) are carried by a
/// new body, one rigid body with their mass properties and motion (eqs.
/// 6-10), gravity and contacts, while the other members move on their own
/// ([`ndem_step::partly_unfolded_problem`]). The held members' mutual
/// contacts leave the solve; their weight and the contacts to the resolved
/// layers stay in it. The held members of an aggregate anchored to static
/// geometry stay at rest on a static carrier, their contacts with static
/// bodies out of the solve, as in the reduced model.
pub fn partial_problem<'a>(
    world: &World,
    contacts: &ContactSet,
    settings: &StepSettings,
    aggregates: impl Iterator<Item = (usize, &'a [usize])>,
    held: &[bool],
) -> Result<TrialProblem, ReduceError> {
    let mut partial = world.clone();
    let mut unfolded = vec![false; world.len()];
    for (host, members) in aggregates {
        unfolded[host] = true;
        let interior: Vec<usize> = members.iter().copied().filter(|&m| held[m]).collect();
        if interior.is_empty() {
            continue;
        }
        let anchored = world.motions()[host] == Motion::Static;
        let state = (!anchored)
            .then(|| aggregate_state(&partial, &interior))
            .transpose()?;
        for &m in &interior {
            partial.detach(BodyId::from_index(m))?;
        }
        let carrier = match &state {
            Some(state) => place_aggregate_body(&mut partial, None, state)?,
            None => place_anchor_body(&mut partial, None, &interior)?,
        };
        attach_members(&mut partial, &interior, carrier)?;
        unfolded.push(false);
    }
    let (problem, index) =
        ndem_step::partly_unfolded_problem(&partial, contacts, settings, &unfolded)?;
    Ok(TrialProblem {
        bodies: world.len(),
        problem,
        index,
        partial_world: Some(partial),
    })
}

impl TrialProblem {
    /// The positions the trial's contacts are evaluated at: the partial
    /// copy's, or the caller's `world`'s.
    pub fn positions<'w>(&'w self, world: &'w World) -> &'w [Vec3] {
        self.partial_world.as_ref().unwrap_or(world).positions()
    }

    /// Sets, in the trial's velocities `v`, each held member's velocity to
    /// the rigid motion of the body that carries it in a partial trial
    /// (`v_a = v_C + ω_C × (x_a − x_C)`, `ω_a = ω_C`, eq. 13): the solver
    /// leaves a carried member's own entry at its start. Nothing for the
    /// whole unfolded model.
    pub fn carry_velocities(&self, v: &mut [Velocity6]) {
        let Some(partial) = &self.partial_world else {
            return;
        };
        let x = partial.positions();
        for a in 0..self.bodies {
            match partial.host_of(a) {
                Some(c) if c >= self.bodies => {
                    let carrier = v[c];
                    v[a] = Velocity6::new(
                        carrier.linear + carrier.angular.cross(&(x[a] - x[c])),
                        carrier.angular,
                    );
                }
                _ => {}
            }
        }
    }
}

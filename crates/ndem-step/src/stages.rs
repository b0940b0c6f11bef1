//! The stages of one SPOOK step as functions of problem data: contact data
//! (with member contacts mapped to their hosts), the impact-stage problem
//! and the continuous-stage problem (warm-starting paper, Algorithm 1;
//! adaptive-model-reduction paper, Algorithm 1 lines 5-10).

use crate::guard::OverlapScale;
use crate::settings::StepSettings;
use crate::{StepError, World};
use ndem_collide::{ContactPoint, ContactSet};
use ndem_math::jacobian::normal_row;
use ndem_math::{
    ContactFrame, ContactJacobian, ContactParameters, PairProperties, Vec3, Velocity6,
};
use ndem_par::blocks::{block_len, map_parts};
use ndem_par::capacity::refill;
use ndem_solve::{Contact, ContactFillError, ContactProblem, ProblemStorage};

/// Which bodies carry degrees of freedom in a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolution<'a> {
    /// Members move with their hosts (the reduced model).
    Reduced,
    /// The members of the hosts marked in `unfolded` move on their own with
    /// their own mass (the full model behind a reduced one: model
    /// reduction's trial solve) and those hosts are out of the problem;
    /// every other host carries its members as in the reduced model.
    Unfolded {
        /// Whether each body is a host whose members are unfolded.
        unfolded: &'a [bool],
    },
}

impl Resolution<'_> {
    fn carrier(self, world: &World, body: usize) -> usize {
        match self {
            Resolution::Reduced => world.carrier(body),
            Resolution::Unfolded { unfolded } => match world.host_of(body) {
                Some(h) if !unfolded[h] => h,
                _ => body,
            },
        }
    }

    /// Whether `body` carries its own degrees of freedom.
    fn moves(self, world: &World, body: usize) -> bool {
        match self {
            Resolution::Reduced => !world.is_member(body),
            Resolution::Unfolded { unfolded } => {
                !unfolded[body] && world.host_of(body).is_none_or(|h| unfolded[h])
            }
        }
    }
}

/// One contact as the solver sees it: between the bodies that carry the
/// contacting bodies' degrees of freedom (a member's host). The stepper
/// keeps only its index in the contact set (4 bytes; after the solve, the
/// problem's contact index, [`crate::SolvedView::contact_index`]); this
/// view, its carriers, frame, lever arms and material parameters are
/// formed from the contact point where a stage needs them
/// ([`SolverContact::at`], [`SolverContact::geometry`],
/// [`contact_parameters`]), so that the stepper does not keep a second
/// record per contact through the solve.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SolverContact {
    /// Index in the contact set.
    pub set_index: u32,
    /// Carrier bodies `[a, b]`.
    pub bodies: [u32; 2],
}

/// The slot of a detected contact that leaves the solve, while
/// [`contact_data`] runs (no contact set holds `u32::MAX` contacts).
const LEFT_OUT: u32 = u32::MAX;

impl SolverContact {
    /// Contact `set_index` of `set` between the bodies that carry its
    /// bodies at `resolution` ([`contact_data`] kept it in the solve).
    #[inline]
    pub fn at(
        world: &World,
        resolution: Resolution<'_>,
        set: &[ContactPoint],
        set_index: u32,
    ) -> Self {
        let c = &set[set_index as usize];
        let carrier = |b: usize| resolution.carrier(world, b) as u32;
        Self {
            set_index,
            bodies: [carrier(c.body_a()), carrier(c.body_b())],
        }
    }
}

/// Frame and lever arms of a solver contact.
pub(crate) struct SolverGeometry {
    pub frame: ContactFrame,
    /// Lever arm from carrier a's centre to the contact point.
    pub arm_a: Vec3,
    /// Lever arm from carrier b's centre to the contact point.
    pub arm_b: Vec3,
}

impl SolverContact {
    /// Carrier indices.
    pub fn carriers(&self) -> [usize; 2] {
        self.bodies.map(|x| x as usize)
    }

    /// The contact point of the set.
    pub fn point<'a>(&self, set: &'a [ContactPoint]) -> &'a ContactPoint {
        &set[self.set_index as usize]
    }

    /// Frame and lever arms from the carriers' centres.
    pub fn geometry(&self, world: &World, c: &ContactPoint) -> Result<SolverGeometry, StepError> {
        let [ca, cb] = self.carriers();
        let (a, b) = (c.body_a(), c.body_b());
        Ok(SolverGeometry {
            frame: ContactFrame::from_normal(&c.normal)?,
            arm_a: c.arm(&world.positions()[a]) + (world.positions()[a] - world.positions()[ca]),
            arm_b: c.arm(&world.positions()[b]) + (world.positions()[b] - world.positions()[cb]),
        })
    }
}

/// Contact data of the detected contacts (Algorithm 1, line 5). Contacts
/// between two members of one host leave the solve (they stay in the
/// contact set). Refuses overlaps beyond the contact's radius and contacts
/// between two bodies no impulse can move. Returns the largest overlap
/// relative to its contact's radius over the detected contacts
/// ([`crate::StepStats::overlap_max`]; the guard stops at 1), `+0` when no
/// contact overlaps. The contacts are taken in parts of at least
/// [`CONTACTS_PER_DATA_THREAD`] on up to `threads` threads: the same
/// contacts, error and figure as in one pass on any count. On error `out`
/// is left empty.
pub(crate) fn contact_data(
    world: &World,
    contacts: &ContactSet,
    resolution: Resolution<'_>,
    at: (u64, f64),
    out: &mut Vec<u32>,
    threads: usize,
) -> Result<f64, StepError> {
    let parts = (threads, CONTACTS_PER_DATA_THREAD);
    contact_data_in_parts(world, contacts, resolution, at, out, parts)
}

/// [`contact_data`] on up to `threads` threads, at least `min_part`
/// contacts per thread.
fn contact_data_in_parts(
    world: &World,
    contacts: &ContactSet,
    resolution: Resolution<'_>,
    (step, time): (u64, f64),
    out: &mut Vec<u32>,
    (threads, min_part): (usize, usize),
) -> Result<f64, StepError> {
    let n = contacts.len();
    // reused from step to step; when it must grow, it is replaced by one of
    // exactly the contact count (no doubling slack, and no copy of records
    // that are about to be overwritten); every slot is written below, so
    // what the slots held stays until then
    if out.capacity() < n {
        *out = Vec::with_capacity(n);
    }
    if out.len() > n {
        out.truncate(n);
    } else {
        out.resize(n, LEFT_OUT);
    }
    let points = contacts.as_slice();
    let parts = ndem_par::blocks::parts_for(n, threads, min_part);
    let per = block_len(n, parts);
    let pass = |(k, slots): (usize, &mut [u32])| {
        let first = k * per;
        contact_data_part(
            world,
            &points[first..first + slots.len()],
            first,
            resolution,
            (step, time),
            slots,
        )
    };
    let results = map_parts(out.chunks_mut(per).enumerate(), pass);
    // parts in order: the first error is the lowest failing contact's
    let (mut overlap_max, mut left_out) = (0.0f64, 0);
    for r in results {
        let (part_max, part_left_out) = r.inspect_err(|_| out.clear())?;
        overlap_max = overlap_max.max(part_max);
        left_out += part_left_out;
    }
    if left_out > 0 {
        out.retain(|&c| c != LEFT_OUT);
    }
    // one zero: a zero overlap's sign depends on which pass saw it last
    Ok(if overlap_max == 0.0 { 0.0 } else { overlap_max })
}

/// Fewest contacts per thread in [`contact_data`].
const CONTACTS_PER_DATA_THREAD: usize = 8192;

/// [`contact_data`] of `points`, the contacts from index `first` on, into
/// `slots` (one per contact: its index, or [`LEFT_OUT`] for a contact
/// that leaves the solve): their largest relative overlap (`−∞` for
/// none) and how many left, or the first contact's error.
fn contact_data_part(
    world: &World,
    points: &[ContactPoint],
    first: usize,
    resolution: Resolution<'_>,
    (step, time): (u64, f64),
    slots: &mut [u32],
) -> Result<(f64, usize), StepError> {
    let mut overlap_max = f64::NEG_INFINITY;
    let mut left_out = 0;
    for (k, (c, slot)) in points.iter().zip(slots).enumerate() {
        let (a, b) = (c.body_a(), c.body_b());
        let [r_a, r_b] = c.curvature(world.shapes());
        let radius = r_a.min(r_b);
        overlap_max = overlap_max.max(-c.gap / radius);
        if -c.gap > radius {
            return Err(StepError::OverlapBeyondRadius {
                step,
                time,
                body_a: a,
                body_b: b,
                overlap: -c.gap,
                radius,
            });
        }
        let (ca, cb) = (resolution.carrier(world, a), resolution.carrier(world, b));
        if ca == cb {
            *slot = LEFT_OUT;
            left_out += 1;
            continue;
        }
        if world.kinds.fixed()[ca] && world.kinds.fixed()[cb] {
            // a member held at rest by a static host against static
            // geometry: no degree of freedom on either side
            if ca != a || cb != b {
                *slot = LEFT_OUT;
                left_out += 1;
                continue;
            }
            return Err(StepError::InfiniteMassPair {
                body_a: ca,
                body_b: cb,
            });
        }
        *slot = (first + k) as u32;
    }
    Ok((overlap_max, left_out))
}

/// The world's materials combined pair by pair
/// ([`World::pair_properties`], the pair's override applied) and their
/// SPOOK parameters ([`ContactParameters::new`]), once per assembly: a
/// contact then only forms its effective radius
/// ([`PairProperties::with_radii`]) and what depends on it
/// ([`ContactParameters::with_radius_of`]), the same parameters bit for
/// bit. `None` for a pair that does not combine (a material or override a
/// user made invalid, a law the materials cannot serve): its contacts form
/// their parameters themselves, which names the field. A world of more
/// than [`MaterialPairs::MOST_MATERIALS`] materials is not tabled.
#[derive(Debug, Clone, Default)]
pub(crate) struct MaterialPairs {
    materials: usize,
    pairs: Vec<Option<(PairProperties, ContactParameters)>>,
}

impl MaterialPairs {
    /// Most materials tabled (`64²` pairs of some 170 bytes).
    const MOST_MATERIALS: usize = 64;

    /// The table of `world`'s materials under `settings`.
    pub(crate) fn of(world: &World, settings: &StepSettings) -> Self {
        let mut table = Self::default();
        table.fill(world, settings);
        table
    }

    /// Tables `world`'s materials under `settings` in place (its vector
    /// reused).
    pub(crate) fn fill(&mut self, world: &World, settings: &StepSettings) {
        let m = world.materials.len();
        self.pairs.clear();
        self.materials = if m <= Self::MOST_MATERIALS { m } else { 0 };
        for a in 0..self.materials {
            for b in 0..self.materials {
                // radii of 1: only what `with_radii` and `with_radius_of`
                // form depends on them
                self.pairs
                    .push(Self::formed((world, settings), (a, 1.0), (b, 1.0)).ok());
            }
        }
    }

    /// The SPOOK parameters of a contact between materials `a`, `b` at
    /// curvature radii `r_a`, `r_b`: those of [`World::pair_properties`]
    /// under `settings`.
    fn parameters(
        &self,
        (world, settings): (&World, &StepSettings),
        (a, r_a): (usize, f64),
        (b, r_b): (usize, f64),
    ) -> Result<ContactParameters, StepError> {
        let law = settings.contact_law;
        if a < self.materials
            && b < self.materials
            && let Some((pair, params)) = &self.pairs[a * self.materials + b]
        {
            let pair = pair.with_radii(r_a, r_b)?;
            return Ok(params.with_radius_of(law, &pair, settings.dt)?);
        }
        Ok(Self::formed((world, settings), (a, r_a), (b, r_b))?.1)
    }

    /// The pair's properties and parameters formed in full
    /// ([`World::pair_properties`], [`ContactParameters::new`]).
    fn formed(
        (world, settings): (&World, &StepSettings),
        (a, r_a): (usize, f64),
        (b, r_b): (usize, f64),
    ) -> Result<(PairProperties, ContactParameters), StepError> {
        let pair = world.pair_properties(a, r_a, b, r_b)?;
        let (law, dt) = (settings.contact_law, settings.dt);
        Ok((
            pair,
            ContactParameters::new(law, &pair, dt, &settings.spook)?,
        ))
    }
}

/// The SPOOK parameters of contact `c` of `world` (its materials' pair
/// from the table `pairs`, its curvature radii).
pub(crate) fn contact_parameters(
    world: &World,
    (settings, pairs): (&StepSettings, &MaterialPairs),
    c: &ContactPoint,
) -> Result<ContactParameters, StepError> {
    let (a, b) = (c.body_a(), c.body_b());
    let [r_a, r_b] = c.curvature(world.shapes());
    let [ma, mb] = [a, b].map(|i| world.material[i] as usize);
    pairs.parameters((world, settings), (ma, r_a), (mb, r_b))
}

/// Tangential right-hand side from conveyor surface velocities:
/// `b_t = t·s_a − t·s_b`.
fn surface_rhs(world: &World, c: &ContactPoint, frame: &ContactFrame) -> [f64; 2] {
    let s = world.surface_velocity.get(c.body_a()) - world.surface_velocity.get(c.body_b());
    [frame.tangent1.dot(&s), frame.tangent2.dot(&s)]
}

/// An empty problem over the world's bodies with free velocity `free`,
/// assembled in `storage` (the released previous problem's vectors).
pub(crate) fn new_problem(
    world: &World,
    settings: &StepSettings,
    resolution: Resolution<'_>,
    storage: &mut ProblemStorage,
    free: impl FnOnce(&mut Vec<Velocity6>),
) -> Result<ContactProblem, StepError> {
    let (mut inv, mut free_velocity) = storage.take_bodies();
    inv.reserve(world.len());
    for i in 0..world.len() {
        match resolution {
            Resolution::Reduced => world.push_inverse_mass(i, &mut inv),
            Resolution::Unfolded { .. } if !resolution.moves(world, i) => {
                inv.push(ndem_math::InverseMass::INFINITE_MASS)
            }
            Resolution::Unfolded { .. } => inv.push(world.own_inverse_mass(i)),
        }
    }
    free(&mut free_velocity);
    let problem = ContactProblem::new(
        inv,
        free_velocity,
        settings.contact_rows,
        settings.friction_set,
        settings.dt,
    )?;
    Ok(problem.reusing(storage))
}

/// Contacts per assembly thread below which a thread is not worth its
/// start (a few tens of microseconds).
const CONTACTS_PER_ASSEMBLY_THREAD: usize = 4096;

/// The assembly's thread count for `contacts` contacts:
/// [`StepSettings::assembly_threads`] (0: every core), at most one per
/// [`CONTACTS_PER_ASSEMBLY_THREAD`] contacts.
pub(crate) fn assembly_threads(settings: &StepSettings, contacts: usize) -> usize {
    let wanted = ndem_par::blocks::resolve_threads(settings.assembly_threads);
    wanted.min(contacts / CONTACTS_PER_ASSEMBLY_THREAD).max(1)
}

/// How many of `items` satisfy `test`, counted in `threads` consecutive
/// blocks (an integer sum: the same on any thread count); the error is
/// that of the first failing item, as a serial loop would report.
fn count_in_blocks<T: Sync>(
    items: &[T],
    threads: usize,
    test: impl Fn(&T) -> Result<bool, StepError> + Sync,
) -> Result<usize, StepError> {
    let count = |block: &[T]| -> Result<usize, StepError> {
        let mut n = 0;
        for item in block {
            n += usize::from(test(item)?);
        }
        Ok(n)
    };
    if threads <= 1 {
        return count(items);
    }
    // blocks in order: the first error is the lowest failing item's
    map_parts(items.chunks(block_len(items.len(), threads)), count)
        .into_iter()
        .sum()
}

/// A failed parallel assembly as the serial loop reported it.
pub(crate) fn fill_error(e: ContactFillError<StepError>) -> StepError {
    match e {
        ContactFillError::Build(e) => e,
        ContactFillError::Invalid(e) => e.into(),
    }
}

/// An impact: approaching faster than `v_imp` and closing the gap within
/// this step.
pub(crate) fn is_impact(settings: &StepSettings, gap: f64, un: f64) -> bool {
    un < -settings.impact_velocity && gap + un * settings.dt <= 0.0
}

/// The impact-stage problem (Algorithm 1, lines 8-9), or `None` when no
/// contact impacts (most steps of a resting or slowly flowing packing):
/// `G_n v⁺ ≥ −e G_n v⁻` for impacting contacts, `G_n v⁺ ≥ 0` (or
/// `≥ −φ/Δt` for pairs still apart) and `G v⁺ = 0` within the friction
/// bounds for the rest; unit normal scaling, no warm start. Returns the
/// number of impacting contacts.
///
/// With `expect_impacts` (the last step had some, as nearly every step of
/// a settling packing does) the problem is built at once and its impacts
/// counted from the build (`impacting`, one flag per contact); otherwise
/// the impacts are counted first and the problem is built only when there
/// are some. Either way the problem and the count are the same; the hint
/// saves the counting pass's frames and `G_n v⁻` where they would be formed
/// twice, and costs a build that is dropped where it was wrong.
#[allow(clippy::too_many_arguments)]
pub(crate) fn impact_problem(
    world: &World,
    (settings, pairs): (&StepSettings, &MaterialPairs),
    contacts: &ContactSet,
    solver_contacts: &[u32],
    velocity: &[Velocity6],
    storage: &mut ProblemStorage,
    (impacting, expect_impacts): (&mut Vec<bool>, bool),
    any_subdomain: impl FnOnce(bool) -> bool,
) -> Result<(usize, Option<ContactProblem>), StepError> {
    let set = contacts.as_slice();
    let threads = assembly_threads(settings, solver_contacts.len());
    let build = |storage: &mut ProblemStorage, impacting: &mut Vec<bool>| {
        let parts = (set, solver_contacts);
        build_impact_problem(
            world,
            (settings, pairs),
            parts,
            velocity,
            storage,
            impacting,
        )
    };
    if !expect_impacts {
        let impacts = count_in_blocks(solver_contacts, threads, |&k| {
            let s = SolverContact::at(world, Resolution::Reduced, set, k);
            let (_, un) = impact_jacobian(world, set, velocity, &s)?;
            Ok(is_impact(settings, s.point(set).gap, un))
        })?;
        // a decomposed solve runs the stage on every subdomain or on none
        if !any_subdomain(impacts > 0) {
            return Ok((0, None));
        }
        let problem = build(storage, impacting)?;
        return Ok((impacts, Some(problem)));
    }
    let problem = build(storage, impacting)?;
    let impacts = impacting.iter().filter(|&&x| x).count();
    if !any_subdomain(impacts > 0) {
        *storage = problem.into_storage();
        return Ok((0, None));
    }
    Ok((impacts, Some(problem)))
}

/// The impact stage's Jacobian of a solver contact (unit normal scaling)
/// and its `G_n v⁻`.
fn impact_jacobian(
    world: &World,
    set: &[ContactPoint],
    velocity: &[Velocity6],
    s: &SolverContact,
) -> Result<(ContactJacobian, f64), StepError> {
    let g = s.geometry(world, s.point(set))?;
    let jac = ContactJacobian::new(g.frame, &g.arm_a, &g.arm_b, 1.0);
    let [a, b] = s.carriers();
    let un = jac.normal_velocity(&velocity[a], &velocity[b]);
    Ok((jac, un))
}

/// The seeds of an active-set impact stage ([`crate::ImpactScope`]): the
/// number of solver contacts that impact at `velocity` (`v⁻`), and the
/// positions in `solver_contacts` of those and of the contacts whose
/// impact-stage row `G_n v⁻ ≥ −max(φ, 0)/Δt` is violated by more than
/// `join_velocity`, in increasing order. Formed in consecutive blocks on
/// up to `threads` threads (the same answer on any count; the error is
/// the lowest failing contact's).
pub(crate) fn impact_seeds(
    world: &World,
    settings: &StepSettings,
    (set, solver_contacts): (&[ContactPoint], &[u32]),
    velocity: &[Velocity6],
    join_velocity: f64,
) -> Result<(usize, Vec<u32>), StepError> {
    let threads = assembly_threads(settings, solver_contacts.len());
    let seeds = |(first, block): (usize, &[u32])| -> Result<(usize, Vec<u32>), StepError> {
        let (mut impacts, mut seeds) = (0, Vec::new());
        for (i, &k) in block.iter().enumerate() {
            let s = SolverContact::at(world, Resolution::Reduced, set, k);
            let gap = s.point(set).gap;
            let (_, un) = impact_jacobian(world, set, velocity, &s)?;
            let impact = is_impact(settings, gap, un);
            impacts += usize::from(impact);
            if impact || row_violation(settings, gap, un) > join_velocity {
                seeds.push((first + i) as u32);
            }
        }
        Ok((impacts, seeds))
    };
    let len = block_len(solver_contacts.len(), threads.max(1));
    let parts = solver_contacts
        .chunks(len.max(1))
        .enumerate()
        .map(|(b, block)| (b * len, block));
    let (mut impacts, mut all) = (0, Vec::new());
    for part in map_parts(parts, seeds) {
        let (n, s) = part?;
        impacts += n;
        all.extend(s);
    }
    Ok((impacts, all))
}

/// How far `G_n v` lies below the impact-stage bound of a contact that
/// does not impact, `G_n v ≥ −max(φ, 0)/Δt` \[m/s\] (negative: satisfied).
pub(crate) fn row_violation(settings: &StepSettings, gap: f64, un: f64) -> f64 {
    -(un + gap.max(0.0) / settings.dt)
}

/// The gap and `G_n v` of solver contact `k` at `velocity`.
pub(crate) fn normal_approach(
    world: &World,
    set: &[ContactPoint],
    velocity: &[Velocity6],
    k: u32,
) -> Result<(f64, f64), StepError> {
    let s = SolverContact::at(world, Resolution::Reduced, set, k);
    let (_, un) = impact_jacobian(world, set, velocity, &s)?;
    Ok((s.point(set).gap, un))
}

/// The carriers of solver contact `k`.
pub(crate) fn carriers(world: &World, set: &[ContactPoint], k: u32) -> [usize; 2] {
    SolverContact::at(world, Resolution::Reduced, set, k).carriers()
}

/// The impact problem over the listed solver contacts ([`impact_problem`]
/// lists every one), with each contact's impact flag in `impacting`.
pub(crate) fn build_impact_problem(
    world: &World,
    (settings, pairs): (&StepSettings, &MaterialPairs),
    (set, solver_contacts): (&[ContactPoint], &[u32]),
    velocity: &[Velocity6],
    storage: &mut ProblemStorage,
    impacting: &mut Vec<bool>,
) -> Result<ContactProblem, StepError> {
    // its contacts' model data would be zeros
    let mut problem = new_problem(world, settings, Resolution::Reduced, storage, |free| {
        free.extend_from_slice(velocity)
    })?
    .without_model_data();
    problem.reserve_contacts(solver_contacts.len());
    let contact =
        |i: usize| impact_contact(world, (settings, pairs), set, solver_contacts[i], velocity);
    let threads = assembly_threads(settings, solver_contacts.len());
    refill(impacting, solver_contacts.len(), false);
    problem
        .extend_contacts_with(impacting, threads, contact)
        .map_err(fill_error)?;
    Ok(problem)
}

/// The impact-stage rows of solver contact `k` at `velocity` (`v⁻`), over
/// the world's bodies, and whether it impacts: `b_n = e G_n v⁻` for an
/// impacting contact, `max(φ, 0)/Δt` for the others (Algorithm 1,
/// lines 8-9).
pub(crate) fn impact_contact(
    world: &World,
    (settings, pairs): (&StepSettings, &MaterialPairs),
    set: &[ContactPoint],
    k: u32,
    velocity: &[Velocity6],
) -> Result<(Contact, bool), StepError> {
    let s = SolverContact::at(world, Resolution::Reduced, set, k);
    let c = s.point(set);
    let (jac, un) = impact_jacobian(world, set, velocity, &s)?;
    let p = contact_parameters(world, (settings, pairs), c)?;
    let impact = is_impact(settings, c.gap, un);
    let b_n = if impact {
        p.restitution * un
    } else {
        c.gap.max(0.0) / settings.dt
    };
    let [st1, st2] = surface_rhs(world, c, &jac.frame);
    let contact = Contact {
        bodies: s.bodies,
        key: c.key,
        jacobian: jac,
        sigma: [p.sigma_t, p.sigma_t, p.sigma_r],
        rhs: [b_n, st1, st2, 0.0, 0.0, 0.0],
        friction: p.friction,
        rolling_arm: p.rolling_arm,
        model: Default::default(),
    };
    Ok((contact, impact))
}

/// The continuous-stage SPOOK problem (Algorithm 1, line 10) with free
/// velocity `v* = v⁺ + Δt M⁻¹ f_ext`, contacts, and joint rows; and the
/// contact-law scale of its residual check and its elastic energy. The
/// contacts' terms of these two sums are formed in `idle`, the stepper's
/// vector of `λ`, which holds nothing between the impact stage and the
/// warm start (its first `2 n` entries are overwritten; it grows to them
/// when shorter).
pub(crate) fn continuous_problem(
    world: &World,
    (settings, pairs): (&StepSettings, &MaterialPairs),
    resolution: Resolution<'_>,
    contacts: &ContactSet,
    solver_contacts: &[u32],
    velocity: &[Velocity6],
    storage: &mut ProblemStorage,
    (idle, model_data): (&mut Vec<f64>, ModelData),
) -> Result<ContinuousProblem, StepError> {
    let dt = settings.dt;
    let free = |free: &mut Vec<Velocity6>| {
        free.extend_from_slice(velocity);
        for (i, f) in free.iter_mut().enumerate() {
            if !resolution.moves(world, i) {
                continue;
            }
            if let Some(m) = world.mass_properties()[i] {
                let inv = m.inverse(&world.orientations()[i]);
                f.linear += (world.gravity + world.force.get(i) * inv.inv_mass) * dt;
                f.angular += inv.inv_inertia * world.torque.get(i) * dt;
            }
        }
    };
    let mut problem = new_problem(world, settings, resolution, storage, free)?;
    if model_data == ModelData::Drop {
        problem = problem.without_model_data();
    }
    problem.reserve_contacts(solver_contacts.len());
    let e_h = settings.contact_law.exponent();
    let set = contacts.as_slice();
    let terms = terms_in(idle, solver_contacts.len());
    let threads = assembly_threads(settings, solver_contacts.len());
    let contact = |i: usize| -> Result<(Contact, ContactTerms), StepError> {
        let s = SolverContact::at(world, resolution, set, solver_contacts[i]);
        let c = s.point(set);
        let g = s.geometry(world, c)?;
        let params = contact_parameters(world, (settings, pairs), c)?;
        let nr = normal_row(c.gap, e_h, settings.spook.overlap_floor);
        let jac = ContactJacobian::new(g.frame, &g.arm_a, &g.arm_b, nr.scale);
        let [a, b] = s.carriers();
        let gv_old = jac.normal_velocity(&velocity[a], &velocity[b]);
        let mut contact = Contact::spook(s.bodies, c.key, jac, nr.g, gv_old, &params, dt);
        if c.gap > 0.0 {
            // Speculative contact (found through the margin or sweep):
            // G_n v ≥ −φ/Δt lets the gap close within the step but not
            // overlap. SPOOK's b_n = (4/Δt)Υφ − Υ G_n v_i would instead
            // brake an approaching pair while it is still apart.
            contact.rhs[0] = c.gap / dt;
        }
        let [st1, st2] = surface_rhs(world, c, &g.frame);
        contact.rhs[1] = st1;
        contact.rhs[2] = st2;
        let terms = [
            OverlapScale::term(settings.contact_law, nr.g, params.upsilon_n, dt),
            contact.model.elastic_energy(),
        ];
        Ok((contact, terms))
    };
    problem
        .extend_contacts_with(terms, threads, contact)
        .map_err(fill_error)?;
    // summed in contact order: the same on any thread count
    let mut overlap_scale = OverlapScale::default();
    let mut elastic_energy = 0.0;
    for &[overlap, elastic] in terms.iter() {
        overlap_scale.add_term(overlap);
        elastic_energy += elastic;
    }
    let mut rows = Vec::new();
    for (j, joint) in world.joints.iter().enumerate() {
        joint.rows(world, velocity, j, dt, &mut rows);
    }
    for mut r in rows {
        if resolution == Resolution::Reduced && !carry_row(world, &mut r) {
            continue;
        }
        problem.push_row(r)?;
    }
    Ok(ContinuousProblem {
        problem,
        overlap_scale,
        elastic_energy,
    })
}

/// Whether a problem keeps its contacts' model data
/// ([`ContactProblem::without_model_data`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModelData {
    /// Kept (a warm start reads it, or the problem is handed out).
    Keep,
    /// Left out (32 bytes per contact).
    Drop,
}

/// Two figures of each contact of the continuous problem, formed while it
/// is assembled and summed in contact order after:
/// `[OverlapScale::term, ContactModel::elastic_energy]`.
type ContactTerms = [f64; 2];

/// The first `contacts` pairs of `idle` (grown to them when shorter) as
/// the contacts' [`ContactTerms`]; every pair is overwritten by the
/// assembly, so what the vector held stays until then.
fn terms_in(idle: &mut Vec<f64>, contacts: usize) -> &mut [ContactTerms] {
    let len = 2 * contacts;
    if idle.len() < len {
        refill(idle, len, 0.0);
    }
    idle[..len].as_chunks_mut::<2>().0
}

/// The continuous-stage problem and what its assembly summed.
pub(crate) struct ContinuousProblem {
    pub problem: ContactProblem,
    /// The scale of the step's residual tolerance.
    pub overlap_scale: OverlapScale,
    /// `Σ g²/(2 ε_n)` over the contacts, in contact order: what
    /// [`ContactProblem::elastic_energy`] gives with the model data kept.
    pub elastic_energy: f64,
}

/// The continuous-stage problem of the unfolded model: every member moves
/// on its own with its own mass (from its co-moving velocity), hosts that
/// carry members are held fixed and out of the problem, contacts between
/// members of one host are in it (adaptive-model-reduction paper, section
/// 3.2.2: "projecting the reduced sub-space system back to the full
/// resolution space", eqs. 11-13). Returns the problem and the contact-set
/// index of each of its contacts. The impact stage is not run.
pub fn unfolded_problem(
    world: &World,
    contacts: &ContactSet,
    settings: &StepSettings,
) -> Result<(ContactProblem, Vec<usize>), StepError> {
    let mut unfolded = vec![false; world.len()];
    for i in 0..world.len() {
        if let Some(h) = world.host_of(i) {
            unfolded[h] = true;
        }
    }
    partly_unfolded_problem(world, contacts, settings, &unfolded)
}

/// [`unfolded_problem`] with only the hosts marked in `unfolded` (one flag
/// per body) unfolded: every other host carries its members as in the
/// reduced model, a rigid body with its own mass properties, gravity and
/// contacts, and the contacts between members of one carried host leave
/// the solve. The partial background solve of the adaptive-model-reduction
/// paper's eq. 40 (a fraction `β < 1` of the system): the interior of an
/// aggregate as one rigid body, its outer layers resolved.
pub fn partly_unfolded_problem(
    world: &World,
    contacts: &ContactSet,
    settings: &StepSettings,
    unfolded: &[bool],
) -> Result<(ContactProblem, Vec<usize>), StepError> {
    if unfolded.len() != world.len() {
        return Err(StepError::UnknownBody {
            field: "unfolded",
            body: unfolded.len().min(world.len()),
            count: world.len(),
        });
    }
    let resolution = Resolution::Unfolded { unfolded };
    let mut solver_contacts = Vec::new();
    let threads = ndem_par::blocks::resolve_threads(settings.assembly_threads);
    contact_data(
        world,
        contacts,
        resolution,
        (0, 0.0),
        &mut solver_contacts,
        threads,
    )?;
    let assembled = continuous_problem(
        world,
        (settings, &MaterialPairs::of(world, settings)),
        resolution,
        contacts,
        &solver_contacts,
        world.velocities(),
        &mut ProblemStorage::new(),
        (&mut Vec::new(), ModelData::Keep),
    )?;
    Ok((
        assembled.problem,
        solver_contacts.iter().map(|&k| k as usize).collect(),
    ))
}

/// Re-expresses a joint row on the carriers of its bodies: a member `a` of
/// host `h` moves with `v_a = v_h + ω_h × r`, `r = x_a − x_h`, so
/// `l·v_a + k·ω_a = l·v_h + (k + r × l)·ω_h`. Returns `false` when both
/// bodies are carried by the same host (the joint is then rigid inside the
/// aggregate and leaves the solve).
fn carry_row(world: &World, row: &mut ndem_solve::GenericRow) -> bool {
    let [a, b] = row.bodies.map(|x| x as usize);
    let (ca, cb) = (world.carrier(a), world.carrier(b));
    if ca == cb {
        return false;
    }
    let j = &mut row.jacobian;
    if ca != a {
        let r = world.positions()[a] - world.positions()[ca];
        j.angular_a += r.cross(&j.linear_a);
    }
    if cb != b {
        let r = world.positions()[b] - world.positions()[cb];
        j.angular_b += r.cross(&j.linear_b);
    }
    row.bodies = [ca as u32, cb as u32];
    true
}

#[cfg(test)]
mod tests;

//! Warm-start policies (warm-starting paper, section 3, eqs. 7-11).
//!
//! Multipliers are carried between steps by [`ContactKey`]. Friction and
//! rolling impulses are stored as world-frame vectors and the normal impulse
//! as its physical value `s_n λ_n`, so that a tangent basis that rotates
//! between steps, or a Hertz scaling `s_n` that changes with the overlap,
//! does not change the warm-started force.

use crate::SolveError;
use crate::problem::{ContactProblem, project_record};
use ndem_math::{ContactKey, SettingError, Vec3, Velocity6};
use ndem_par::blocks::{block_len, map_parts};
use ndem_par::capacity::resize_for_overwrite;
use std::collections::HashMap;

/// The impulses of one contact in world-frame form.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StoredImpulse {
    /// Physical normal impulse `s_n λ_n` [N s].
    pub normal: f64,
    /// Friction impulse `λ_t1 t1 + λ_t2 t2` [N s].
    pub friction: Vec3,
    /// Rolling/twisting impulse `λ_r1 t1 + λ_r2 t2 + λ_r3 n` [N m s].
    pub rolling: Vec3,
}

/// Last step's multipliers, keyed by contact identity.
///
/// The contacts' impulses are kept sorted by key, each key once: the
/// stepper's contacts come in key order, so a record is a copy and a warm
/// start a merge walk through it (no hashing, no random access). Keys and
/// impulses are kept in two vectors side by side (68 bytes per contact; a
/// vector of pairs pads each 12-byte key to 16).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImpulseHistory {
    /// Sorted, each key once.
    keys: Vec<ContactKey>,
    /// The impulse of each key.
    impulses: Vec<StoredImpulse>,
    rows: HashMap<ContactKey, f64>,
    /// Keys of contacts that are out of the solve for now (inside a rigid
    /// aggregate), kept across records; see [`Self::hold`]. Sorted, each
    /// key once, like `keys`.
    held_keys: Vec<ContactKey>,
    /// The impulse of each held key.
    held_impulses: Vec<StoredImpulse>,
}

impl ImpulseHistory {
    /// An empty history (every contact is new).
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the history by the solution `λ` of `problem`. Contacts that
    /// are not in `problem` are forgotten; of a key given twice, the later
    /// contact's impulse is kept.
    pub fn record(&mut self, problem: &ContactProblem, lambda: &[f64]) {
        self.record_on(problem, lambda, 1);
    }

    /// [`Self::record`] with the contacts shared among `threads` threads
    /// (0: every core); each contact's entry is its own, so the history
    /// is the same on any count.
    pub fn record_on(&mut self, problem: &ContactProblem, lambda: &[f64], threads: usize) {
        let m = problem.contact_rows().count();
        // a `λ` shorter than the problem's records the contacts it covers
        let n = problem.contacts().len().min(lambda.len() / m);
        // every entry is overwritten below: only entries beyond the last
        // record's are filled first
        resize_for_overwrite(&mut self.keys, n, ContactKey::default());
        resize_for_overwrite(&mut self.impulses, n, StoredImpulse::default());
        self.rows.clear();
        let (records, keys) = (problem.records(), problem.contacts().keys());
        let per_thread = block_len(n, warm_start_threads(threads, n));
        let parts = self.keys.chunks_mut(per_thread);
        let parts = parts.zip(self.impulses.chunks_mut(per_thread)).enumerate();
        map_parts(parts, |(k, (out_keys, out))| {
            let first = k * per_thread;
            out_keys.copy_from_slice(&keys[first..first + out_keys.len()]);
            let lambdas = lambda[first * m..].chunks_exact(m);
            for ((c, lam), entry) in records[first..].iter().zip(lambdas).zip(out) {
                let (p, t) = c.jacobian.world_impulses(lam);
                let f = &c.jacobian.frame;
                *entry = StoredImpulse {
                    normal: c.jacobian.normal_scale * lam[0],
                    friction: p - f.normal * f.normal.dot(&p),
                    rolling: t,
                };
            }
        });
        self.sort_keeping_last(threads);
        let off = problem.generic_offset();
        for (r, &lam) in problem
            .generic_rows()
            .iter()
            .zip(lambda.get(off..).unwrap_or(&[]))
        {
            if let Some(key) = r.key {
                self.rows.insert(key, lam);
            }
        }
    }

    /// Stored impulse of a contact.
    pub fn get(&self, key: &ContactKey) -> Option<&StoredImpulse> {
        let mut from = 0;
        self.get_from(key, &mut from)
    }

    /// [`Self::get`] for keys asked in increasing order: `from` (start at
    /// 0) remembers where the last key was, so that a walk through sorted
    /// keys costs O(1) per key; a key below the last one is searched from
    /// the start.
    fn get_from(&self, key: &ContactKey, from: &mut usize) -> Option<&StoredImpulse> {
        let keys = &self.keys;
        let start = match *from {
            f if f <= keys.len() && (f == 0 || keys[f - 1] < *key) => f,
            _ => 0,
        };
        // the first entry at or after `key`, by doubling steps from `start`
        let (mut below, mut probe, mut step) = (start, start, 1);
        while probe < keys.len() && keys[probe] < *key {
            below = probe + 1;
            probe = start + step;
            step *= 2;
        }
        let end = probe.min(keys.len());
        let at = below + keys[below..end].partition_point(|k| k < key);
        *from = at;
        match keys.get(at) {
            Some(k) if k == key => Some(&self.impulses[at]),
            _ => self.held_get(key),
        }
    }

    /// The held impulse of `key`, if it is held.
    fn held_get(&self, key: &ContactKey) -> Option<&StoredImpulse> {
        let at = self.held_keys.binary_search(key).ok()?;
        Some(&self.held_impulses[at])
    }

    /// Replaces the held set by `keys`: contacts leaving the solve for now
    /// (inside a rigid aggregate) keep the impulse they last had (from the
    /// last record, or from the previous hold) across later records, which
    /// forget every contact they are not given. Call it when the set of such
    /// contacts changes, not every step.
    ///
    /// The keys are looked up by the warm start's merge walk, so
    /// keys given in increasing order (as the stepper's contacts come) cost
    /// O(1) each, and the held set is kept sorted without a sort (a hash map filled key
    /// by key costs about 200 ns per held contact on every step whose
    /// memberships change, 50 ms at 10⁵).
    pub fn hold(&mut self, keys: impl IntoIterator<Item = ContactKey>) {
        let (mut held_keys, mut held_impulses) = (Vec::new(), Vec::new());
        let mut from = 0;
        for k in keys {
            if let Some(i) = self.get_from(&k, &mut from) {
                held_keys.push(k);
                held_impulses.push(*i);
            }
        }
        sort_pairs_keeping_last(&mut held_keys, &mut held_impulses);
        self.held_keys = held_keys;
        self.held_impulses = held_impulses;
    }

    /// Stored multiplier of a keyed generic row.
    pub fn get_row(&self, key: &ContactKey) -> Option<f64> {
        self.rows.get(key).copied()
    }

    /// Inserts or replaces one contact's impulse (a search and a shift of
    /// the later entries: use [`Self::extend`] for many).
    pub fn insert(&mut self, key: ContactKey, impulse: StoredImpulse) {
        match self.keys.binary_search(&key) {
            Ok(i) => self.impulses[i] = impulse,
            Err(i) => {
                self.keys.insert(i, key);
                self.impulses.insert(i, impulse);
            }
        }
    }

    /// Inserts or replaces many contacts' impulses at once; of a key given
    /// twice (or already stored), the last impulse is kept.
    pub fn extend(&mut self, entries: impl IntoIterator<Item = (ContactKey, StoredImpulse)>) {
        let entries = entries.into_iter();
        // the iterator's lower bound reserved exactly (a restored history
        // grown by doubling holds up to twice its bytes)
        let (at_least, _) = entries.size_hint();
        self.keys.reserve_exact(at_least);
        self.impulses.reserve_exact(at_least);
        for (key, impulse) in entries {
            self.keys.push(key);
            self.impulses.push(impulse);
        }
        self.sort_keeping_last(1);
    }

    /// Inserts or replaces one keyed generic row's multiplier.
    pub fn insert_row(&mut self, key: ContactKey, lambda: f64) {
        self.rows.insert(key, lambda);
    }

    /// Number of stored contacts.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// `true` when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.rows.is_empty()
    }

    /// Stored contacts, held ones included, sorted by key (deterministic
    /// order, for checkpoints): [`Self::contacts_by_key`] collected.
    pub fn sorted_contacts(&self) -> Vec<(ContactKey, StoredImpulse)> {
        let mut v = Vec::with_capacity(self.contact_count());
        v.extend(self.contacts_by_key());
        v
    }

    /// Stored contacts, held ones included, in key order, without a copy
    /// of the history (a checkpoint of 10⁶ spheres streams 2·10⁶ of them):
    /// the two sorted lists merged, a held contact that is also stored
    /// given once, with its stored impulse.
    pub fn contacts_by_key<'a>(&'a self) -> impl Iterator<Item = (ContactKey, StoredImpulse)> + 'a {
        let pairs = |keys: &'a [ContactKey], impulses: &'a [StoredImpulse]| {
            keys.iter()
                .copied()
                .zip(impulses.iter().copied())
                .peekable()
        };
        let mut held = pairs(&self.held_keys, &self.held_impulses);
        let mut stored = pairs(&self.keys, &self.impulses);
        std::iter::from_fn(move || match (held.peek(), stored.peek()) {
            (Some(h), Some(s)) if h.0 < s.0 => held.next(),
            (Some(h), Some(s)) if h.0 == s.0 => {
                held.next();
                stored.next()
            }
            (Some(_), None) => held.next(),
            _ => stored.next(),
        })
    }

    /// How many contacts [`Self::contacts_by_key`] gives.
    pub fn contact_count(&self) -> usize {
        let also_stored = self
            .held_keys
            .iter()
            .filter(|k| self.keys.binary_search(k).is_ok())
            .count();
        self.keys.len() + self.held_keys.len() - also_stored
    }

    /// Stored generic rows, sorted by key.
    pub fn sorted_rows(&self) -> Vec<(ContactKey, f64)> {
        let mut v: Vec<_> = self.rows.iter().map(|(k, s)| (*k, *s)).collect();
        v.sort_by_key(|(k, _)| *k);
        v
    }
}

impl ImpulseHistory {
    /// Sorts the entries by key and keeps, of equal keys, the one that
    /// came last (as repeated inserts into a map would). Nothing moves (and
    /// nothing is allocated) when they are in strictly increasing key order
    /// already, as the stepper's contacts are; that is checked in parts on
    /// up to `threads` threads (0: every core).
    fn sort_keeping_last(&mut self, threads: usize) {
        let threads = ndem_par::blocks::resolve_threads(threads);
        let keys = &self.keys;
        let out_of_order = |r: std::ops::Range<usize>| {
            // entry `i` against the one before it, for `i` in `r` (from 1)
            (r.start.max(1)..r.end).find(|&i| keys[i - 1] >= keys[i])
        };
        if ndem_par::blocks::first_in_parts(keys.len(), threads, ORDER_CHECK_ENTRIES, out_of_order)
            .is_none()
        {
            return;
        }
        sort_pairs_keeping_last(&mut self.keys, &mut self.impulses);
    }
}

/// Sorts `keys` with their `impulses` by key and keeps, of equal keys, the
/// pair that came last. Nothing moves when the keys are in strictly
/// increasing order already (checked here on one thread).
fn sort_pairs_keeping_last(keys: &mut Vec<ContactKey>, impulses: &mut Vec<StoredImpulse>) {
    if keys.windows(2).all(|w| w[0] < w[1]) {
        return;
    }
    // the stable sort of the pairs, as they came
    let mut entries: Vec<(ContactKey, StoredImpulse)> =
        keys.drain(..).zip(impulses.drain(..)).collect();
    entries.sort_by_key(|e| e.0);
    for i in 0..entries.len() {
        if i + 1 < entries.len() && entries[i + 1].0 == entries[i].0 {
            continue;
        }
        keys.push(entries[i].0);
        impulses.push(entries[i].1);
    }
}

/// Fewest history entries per thread when their order is checked.
const ORDER_CHECK_ENTRIES: usize = 32_768;

/// What a warm start did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WarmStartStats {
    /// Contacts (and keyed rows) that received a non-cold initial value.
    pub warm: usize,
    /// Contacts (and rows) that started from zero.
    pub cold: usize,
}

/// A warm-start policy: produces the starting multipliers `λ₀` of a solve
/// and the matching starting velocity, and keeps whatever state it needs
/// between solves (warm-starting paper, section 3).
///
/// A time-stepping loop calls [`Self::initialize`] before each solve and
/// [`Self::record`] with every accepted solution; [`crate::solve_warm_started`]
/// does both around a solve, and the stepper does it in its stages (it
/// records when a step is accepted, so a refused step leaves no trace).
pub trait WarmStart: Send + Sync {
    /// Short name for reports.
    fn name(&self) -> &'static str;

    /// Writes `λ₀` into `lambda` and the starting velocity into `velocity`
    /// (normally `v₀ = v* + M⁻¹Gᵀλ₀`, eq. 8): every entry of both, since a
    /// caller may pass vectors that still hold an earlier solve's values
    /// (the stepper does).
    fn initialize(
        &mut self,
        problem: &ContactProblem,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> Result<WarmStartStats, SolveError>;

    /// Receives an accepted solution `λ` of `problem`. Policies that carry
    /// multipliers between steps store them here; the default keeps
    /// nothing.
    fn record(&mut self, problem: &ContactProblem, lambda: &[f64]) {
        let _ = (problem, lambda);
    }

    /// Threads the policy may use (1: this one, 0: every core); its
    /// results must not depend on the count. Default: ignored (one
    /// thread).
    fn set_threads(&mut self, threads: usize) {
        let _ = threads;
    }

    /// The multipliers this policy carries between steps, if it keeps any
    /// (checkpoints, model reduction's trial solve).
    fn history(&self) -> Option<&ImpulseHistory> {
        None
    }

    /// Whether [`Self::initialize`] reads the contacts' [`crate::ContactModel`]s.
    /// A caller that assembles its problems may leave them out when it does
    /// not ([`ContactProblem::without_model_data`], 32 bytes per contact).
    /// Default: `true`, so that a policy that does not say is given them.
    fn reads_model_data(&self) -> bool {
        true
    }

    /// Mutable access to the carried multipliers (restoring a checkpoint,
    /// holding the contacts inside rigid aggregates); `None` when the policy
    /// keeps none.
    fn history_mut(&mut self) -> Option<&mut ImpulseHistory> {
        None
    }

    /// Whether [`Self::initialize`] leaves `velocity` exactly
    /// `v* + M⁻¹Gᵀλ₀` as [`ContactProblem::velocity_from`] forms it, so that
    /// the solve may be told so ([`crate::StartVelocity::Formed`]) and skip
    /// forming it again. Default: `false` (always safe).
    fn forms_velocity(&self) -> bool {
        false
    }

    /// What a solve started by this policy may be told of its velocity:
    /// [`crate::StartVelocity::Formed`] when [`Self::forms_velocity`].
    fn start_velocity(&self) -> crate::StartVelocity {
        if self.forms_velocity() {
            crate::StartVelocity::Formed
        } else {
            crate::StartVelocity::Given
        }
    }
}

/// One solve of a time-stepping loop: `λ₀, v₀` from `warm`, the solve,
/// then the solution recorded in `warm` when the solver returned one (a
/// failed solve records nothing). Sizes are checked by the warm start and
/// the solver (typed errors).
pub fn solve_warm_started(
    warm: &mut dyn WarmStart,
    solver: &mut dyn crate::Solver,
    problem: &ContactProblem,
    lambda: &mut [f64],
    velocity: &mut [Velocity6],
) -> Result<(WarmStartStats, crate::SolveReport), SolveError> {
    let stats = warm.initialize(problem, lambda, velocity)?;
    let start = warm.start_velocity();
    let report = solver.solve_from(problem, lambda, velocity, start, &mut crate::NoObserver)?;
    warm.record(problem, lambda);
    Ok((stats, report))
}

/// `λ₀ = 0`, `v₀ = v*` after checking the sizes: where every policy
/// starts before it fills what it knows.
fn cold_start(
    problem: &ContactProblem,
    lambda: &mut [f64],
    velocity: &mut [Velocity6],
) -> Result<(), SolveError> {
    zero_start(problem, lambda, velocity)?;
    velocity.copy_from_slice(problem.free_velocity());
    Ok(())
}

/// `λ₀ = 0` after checking the sizes, for a policy that then forms all of
/// `v₀` itself (`v* + M⁻¹Gᵀλ₀` starts from a copy of `v*`).
fn zero_start(
    problem: &ContactProblem,
    lambda: &mut [f64],
    velocity: &[Velocity6],
) -> Result<(), SolveError> {
    problem.check_sizes(lambda, velocity)?;
    lambda.fill(0.0);
    Ok(())
}

/// `λ₀ = 0`, `v₀ = v*`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ColdStart;

impl WarmStart for ColdStart {
    fn initialize(
        &mut self,
        problem: &ContactProblem,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> Result<WarmStartStats, SolveError> {
        cold_start(problem, lambda, velocity)?;
        Ok(WarmStartStats {
            warm: 0,
            cold: problem.contacts().len() + problem.generic_rows().len(),
        })
    }

    fn name(&self) -> &'static str {
        "cold"
    }

    fn forms_velocity(&self) -> bool {
        // `v₀ = v*` for `λ₀ = 0`
        true
    }

    fn reads_model_data(&self) -> bool {
        false
    }
}

/// Which rows a history warm start fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WarmRows {
    /// Normal, friction, rolling and keyed generic rows.
    #[default]
    All,
    /// Normal rows only (the paper's ablation).
    NormalOnly,
}

/// History-based warm start (eq. 7): `λ₀ = β λ(t − Δt)` on persisting
/// contacts, zero on new ones, then (by default) `v₀ = v* + M⁻¹Gᵀλ₀` (eq. 8).
/// The stored world-frame impulses are expressed in this step's frame and
/// projected onto this step's bounds. The policy owns the [`ImpulseHistory`]
/// it starts from, filled by [`WarmStart::record`].
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryWarmStart {
    /// Fraction `β` of last step's impulse (paper: 0.85).
    pub beta: f64,
    /// Which rows are warm started.
    pub rows: WarmRows,
    /// Apply the velocity update of eq. 8 (without it the paper finds warm
    /// starting worse than cold).
    pub apply_velocity: bool,
    /// Last accepted step's multipliers (filled by [`WarmStart::record`];
    /// empty for a fresh policy, so every contact starts cold).
    pub history: ImpulseHistory,
    /// Threads the start and the record may use (1: this one, 0: every
    /// core; [`WarmStart::set_threads`]). Each contact's start is its own
    /// and `v₀` is formed in the serial order, so `λ₀`, `v₀` and the
    /// history are the same on any count.
    pub threads: usize,
}

impl Default for HistoryWarmStart {
    fn default() -> Self {
        Self {
            beta: 0.85,
            rows: WarmRows::All,
            apply_velocity: true,
            history: ImpulseHistory::new(),
            threads: 1,
        }
    }
}

impl HistoryWarmStart {
    /// Checks the fields.
    pub fn validate(&self) -> Result<(), SolveError> {
        SolveError::require_non_negative("beta", self.beta)?;
        Ok(())
    }
}

impl WarmStart for HistoryWarmStart {
    fn name(&self) -> &'static str {
        match (self.rows, self.apply_velocity) {
            (WarmRows::All, true) => "history",
            (WarmRows::NormalOnly, true) => "history-normal",
            (WarmRows::All, false) => "history-no-velocity",
            (WarmRows::NormalOnly, false) => "history-normal-no-velocity",
        }
    }

    fn initialize(
        &mut self,
        problem: &ContactProblem,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> Result<WarmStartStats, SolveError> {
        self.start_from(&self.history, problem, lambda, velocity)
    }

    fn record(&mut self, problem: &ContactProblem, lambda: &[f64]) {
        self.history.record_on(problem, lambda, self.threads);
    }

    fn set_threads(&mut self, threads: usize) {
        self.threads = threads;
    }

    fn history(&self) -> Option<&ImpulseHistory> {
        Some(&self.history)
    }

    fn reads_model_data(&self) -> bool {
        false
    }

    fn history_mut(&mut self) -> Option<&mut ImpulseHistory> {
        Some(&mut self.history)
    }

    fn forms_velocity(&self) -> bool {
        self.apply_velocity
    }
}

impl HistoryWarmStart {
    /// Eqs. 7-8 from a given `history` instead of the policy's own (model
    /// reduction's trial solve starts from the stepper's history this way
    /// without copying it).
    pub fn start_from(
        &self,
        history: &ImpulseHistory,
        problem: &ContactProblem,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> Result<WarmStartStats, SolveError> {
        self.validate()?;
        // every row of `λ₀` is written below (a zero where the history has
        // nothing), and `v₀` is formed from `v*` on either branch
        problem.check_sizes(lambda, velocity)?;
        let m = problem.contact_rows().count();
        let n = problem.contacts().len();
        let threads = warm_start_threads(self.threads, n);
        let per_thread = block_len(n, threads);
        let off = problem.generic_offset();
        let parts = lambda[..off].chunks_mut(per_thread * m).enumerate();
        let counts = map_parts(parts, |(k, part)| {
            self.start_contacts(history, problem, k * per_thread, part)
        });
        let mut stats = WarmStartStats::default();
        for c in counts {
            stats.warm += c.warm;
            stats.cold += c.cold;
        }
        for (i, r) in problem.generic_rows().iter().enumerate() {
            lambda[off + i] = match (r.key.and_then(|k| history.get_row(&k)), self.rows) {
                (Some(v), WarmRows::All) => {
                    stats.warm += 1;
                    self.beta * v
                }
                _ => {
                    stats.cold += 1;
                    0.0
                }
            };
        }
        problem.project_generic_unchecked(lambda);
        if self.apply_velocity {
            problem.velocity_from_on(lambda, velocity, threads);
        } else {
            velocity.copy_from_slice(problem.free_velocity());
        }
        Ok(stats)
    }

    /// Eq. 7 for the contacts from `first` on whose rows are `lambda`
    /// (every row written: zero where the history has nothing), each
    /// projected onto its bounds once (a disk projection is not idempotent
    /// to the last bit, so projecting twice would change disk-friction
    /// starts by round-off).
    fn start_contacts(
        &self,
        history: &ImpulseHistory,
        problem: &ContactProblem,
        first: usize,
        lambda: &mut [f64],
    ) -> WarmStartStats {
        let m = problem.contact_rows().count();
        let mut stats = WarmStartStats::default();
        let mut from = 0;
        let keys = &problem.contacts().keys()[first..];
        let records = &problem.records()[first..];
        let contacts = records.iter().zip(keys).zip(lambda.chunks_exact_mut(m));
        for (i, ((c, key), lam)) in contacts.enumerate() {
            let Some(s) = history.get_from(key, &mut from) else {
                lam.fill(0.0);
                stats.cold += 1;
                continue;
            };
            stats.warm += 1;
            let f = &c.jacobian.frame;
            lam[0] = self.beta * s.normal / c.jacobian.normal_scale;
            if self.rows == WarmRows::NormalOnly {
                lam[1..].fill(0.0);
            } else {
                if m >= 3 {
                    lam[1] = self.beta * f.tangent1.dot(&s.friction);
                    lam[2] = self.beta * f.tangent2.dot(&s.friction);
                }
                if m >= 6 {
                    lam[3] = self.beta * f.tangent1.dot(&s.rolling);
                    lam[4] = self.beta * f.tangent2.dot(&s.rolling);
                    lam[5] = self.beta * f.normal.dot(&s.rolling);
                }
            }
            let k = problem.coefficients(first + i);
            project_record(c, k, problem.friction_set(), lam);
        }
        stats
    }
}

/// Contacts per thread of a warm start or record below which a thread is
/// not worth its start.
const CONTACTS_PER_THREAD: usize = 8192;

/// The thread count for `contacts` contacts when `threads` are allowed
/// (0: every core).
fn warm_start_threads(threads: usize, contacts: usize) -> usize {
    ndem_par::blocks::resolve_threads(threads)
        .min(contacts / CONTACTS_PER_THREAD)
        .max(1)
}

/// Model-based warm start (eqs. 9-11 in the form of `docs/theory.md`, "Warm starting"): the static
/// normal estimate `λ_n0 = −Δt g / ε_n` (overlapping contacts), the viscous
/// estimates `λ_t0 = −Δt (G_t v*) / γ_t` and `λ_r0 = −Δt (G_r v*) / γ_r`
/// projected onto the friction and rolling bounds, then `v₀ = v* + M⁻¹Gᵀλ₀`.
/// Uses no history.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ModelWarmStart;

impl WarmStart for ModelWarmStart {
    fn initialize(
        &mut self,
        problem: &ContactProblem,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> Result<WarmStartStats, SolveError> {
        // `v₀ = v* + M⁻¹Gᵀλ₀` is formed at the end
        zero_start(problem, lambda, velocity)?;
        if !problem.has_model_data() && !problem.contacts().is_empty() {
            return Err(SolveError::NoModelData {
                reader: "ModelWarmStart",
            });
        }
        let m = problem.contact_rows().count();
        let dt = problem.dt();
        let vstar = problem.free_velocity();
        let mut stats = WarmStartStats::default();
        let records = problem.records().iter().zip(problem.models());
        for (ci, ((c, md), lam)) in records.zip(lambda.chunks_exact_mut(m)).enumerate() {
            if md.g < 0.0 && md.epsilon_n > 0.0 {
                lam[0] = -dt * md.g / md.epsilon_n;
                stats.warm += 1;
            } else {
                stats.cold += 1;
            }
            let [a, b] = c.bodies.map(|x| x as usize);
            let gv = c.jacobian.velocity(&vstar[a], &vstar[b]);
            if m >= 3 && md.gamma_t > 0.0 {
                lam[1] = -dt * gv[1] / md.gamma_t;
                lam[2] = -dt * gv[2] / md.gamma_t;
            }
            if m >= 6 && md.gamma_r > 0.0 {
                for j in 3..6 {
                    lam[j] = -dt * gv[j] / md.gamma_r;
                }
            }
            project_record(c, problem.coefficients(ci), problem.friction_set(), lam);
        }
        stats.cold += problem.generic_rows().len();
        problem.velocity_from_unchecked(lambda, velocity);
        Ok(stats)
    }

    fn name(&self) -> &'static str {
        "model"
    }

    fn forms_velocity(&self) -> bool {
        true
    }
}

/// A warm start that cannot hurt: computes the wrapped policy's start and
/// the cold start, evaluates both honestly (mean row residual at
/// `v = v* + M⁻¹Gᵀλ₀`, [`crate::ResidualStats::mean`]) and keeps the better
/// one. Costs two residual evaluations, about two sweeps.
///
/// Around [`ModelWarmStart`] this is a check of the model's own
/// assumption: the static estimate `λ_n0 = −Δt g/ε_n` presumes the
/// overlaps are those of static equilibrium. Where they are not (stiff
/// materials at NDEM time steps, where an overlap error δ' becomes a force
/// error `(3/2) k_n δ^{1/2} δ'` that the step cannot absorb: the explicit
/// spring integration's stability limit `Δt < 2/ω` that NDEM exists to
/// avoid), the forces do not balance, `v(λ₀)` is far from rest and the
/// residual says so; the cold start is then kept.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Safeguarded<W> {
    /// The wrapped policy.
    pub inner: W,
}

impl<W: WarmStart> Safeguarded<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        Self { inner }
    }
}

impl<W: WarmStart> WarmStart for Safeguarded<W> {
    fn name(&self) -> &'static str {
        match self.inner.name() {
            "history" => "safeguarded-history",
            "model" => "safeguarded-model",
            _ => "safeguarded",
        }
    }

    fn initialize(
        &mut self,
        problem: &ContactProblem,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> Result<WarmStartStats, SolveError> {
        let stats = self.inner.initialize(problem, lambda, velocity)?;
        let mut evaluator = crate::ResidualEvaluator::new();
        let warm = evaluator.stats(problem, lambda, None).mean;
        let zero = vec![0.0; problem.len()];
        let cold = evaluator.stats(problem, &zero, None).mean;
        if warm <= cold {
            Ok(stats)
        } else {
            ColdStart.initialize(problem, lambda, velocity)
        }
    }

    fn record(&mut self, problem: &ContactProblem, lambda: &[f64]) {
        self.inner.record(problem, lambda);
    }

    fn set_threads(&mut self, threads: usize) {
        self.inner.set_threads(threads);
    }

    fn history(&self) -> Option<&ImpulseHistory> {
        self.inner.history()
    }

    fn reads_model_data(&self) -> bool {
        self.inner.reads_model_data()
    }

    fn history_mut(&mut self) -> Option<&mut ImpulseHistory> {
        self.inner.history_mut()
    }

    fn forms_velocity(&self) -> bool {
        // the inner start, or the cold one, which forms it
        self.inner.forms_velocity()
    }
}

//! A body's contacts with immovable bodies solved as one block per sweep
//! ([`HubRows::Block`]): a rigid aggregate of model reduction standing on
//! the floor, a machine part resting on the ground.
//!
//! Why: the Delassus block of a body's `k` contacts with immovable bodies
//! is `Σ + G_h W_h G_hᵀ`, where `G_h` (`m k × 6` for `m` rows per contact)
//! maps the body's velocity onto the rows and `W_h` is its inverse mass.
//! `G_h W_h G_hᵀ` has rank 6, so every redistribution of the impulses
//! that leaves the body's net wrench unchanged (`G_hᵀ e = 0`) sees only
//! `Σ`. Row-wise Gauss-Seidel divides each row's residual by the whole
//! diagonal `Σ_jj + (G_h W_h G_hᵀ)_jj` and so removes such an error by a
//! factor of about `1 − Σ_jj / (G_h W_h G_hᵀ)_jj` per sweep: a layer of
//! 3 × 3 spheres merged on a floor keeps a residual of 4.5·10⁻⁸ after
//! 20 000 sweeps (`tests/hub_blocks.rs`).
//!
//! The block step, with every other multiplier held: the rows strictly
//! inside their bounds (a normal row with `λ_n > 0`, a friction or
//! rolling row of the box inside `±μ s_n λ_n` or `±μ_r R* s_n λ_n`, a
//! disk pair inside its disk) are solved exactly, the others held, on the
//! body's six degrees of freedom: with the rows' residuals `w_j = G_j v +
//! Σ_j λ_j + b_j`, `Δλ_j = −(w_j + g_j·Δv)/Σ_j` and `(W_h⁻¹ + Σ_F g_j
//! g_jᵀ/Σ_j) Δv = −Σ_F g_j w_j / Σ_j`, a 6 × 6 Cholesky solve and two
//! passes over the rows (Woodbury's identity for `(Σ + G W Gᵀ)⁻¹`). The
//! step is then projected contact by contact onto the admissible set with
//! the new normal multipliers, and halved until the block's objective
//! `½ Δλᵀ Σ Δλ + ½ ‖G_hᵀ Δλ‖²_{W_h} + wᵀ Δλ` falls (at most
//! [`MAX_HALVINGS`] times; no step is taken when none does). A row whose
//! `Σ_j` is zero (no compliance) takes `10⁻⁹` of its whole diagonal.
//!
//! Any solution of the problem is a fixed point of the step (its free
//! rows have `w_j = 0`, so `Δv = 0` and `Δλ = 0`), so the block changes
//! how fast PGS converges, not what it converges to. Contacts with movable
//! bodies stay in the row-wise sweep: their diagonals are dominated by the
//! light neighbour, not by the body's rank-6 term.

use crate::SolveError;
use crate::problem::{ClampTo, ContactProblem, FrictionSet};
use nalgebra::{Matrix6, Vector6};
use ndem_math::{SettingError, Vec3, Velocity6};

/// How [`ProjectedGaussSeidel`](crate::ProjectedGaussSeidel) treats a body with many contacts with
/// immovable bodies (static or kinematic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HubRows {
    /// Their contacts are swept row by row like all others (the papers'
    /// PGS).
    #[default]
    RowWise,
    /// Every sweep ends with a block step over the contacts between each
    /// movable body and immovable ones, for every body that has at least
    /// `min_contacts` of them (`docs/solvers.md`, "Hub blocks").
    Block {
        /// Fewest contacts with immovable bodies that make a body a hub;
        /// at least 2.
        min_contacts: usize,
    },
}

impl HubRows {
    /// Checks `min_contacts`.
    pub(crate) fn validate(self) -> Result<(), SolveError> {
        match self {
            HubRows::RowWise => Ok(()),
            HubRows::Block { min_contacts } => {
                SolveError::require(min_contacts >= 2, "hubs.min_contacts", "must be at least 2")
            }
        }
    }
}

/// Share of its whole diagonal a row takes as `Σ_j` when it has none.
const MIN_DIAGONAL_SHARE: f64 = 1e-9;
/// Halvings of the block step before it is dropped.
const MAX_HALVINGS: usize = 30;

/// One hub: the body, its inverse mass and mass as 6 × 6 matrices, and
/// its contacts (a range of [`HubBlocks::contacts`]).
#[derive(Debug, Clone)]
struct Hub {
    body: u32,
    inverse_mass: Matrix6<f64>,
    mass: Matrix6<f64>,
    contacts: std::ops::Range<usize>,
}

/// One contact of a hub with an immovable body.
#[derive(Debug, Clone)]
struct HubContact {
    /// Index of the contact's first multiplier.
    first: usize,
    /// The immovable body (its velocity enters the residual).
    other: usize,
    /// `μ s_n` and `μ_r R* s_n`: the friction and rolling bounds per unit
    /// `λ_n`.
    bounds: [f64; 2],
}

/// One row of a hub's contact.
#[derive(Debug, Clone)]
struct HubRow {
    /// `g_j`: the row's Jacobian on the hub.
    hub: Vector6<f64>,
    /// The row's Jacobian on the immovable body, as a velocity dual.
    other: Velocity6,
    /// `W_h g_jᵀ`.
    response: Velocity6,
    /// `1 / Σ_j` (see [`MIN_DIAGONAL_SHARE`]).
    inv_sigma: f64,
    sigma: f64,
    rhs: f64,
}

/// The hubs of one problem and the step's scratch.
#[derive(Debug, Clone, Default)]
pub(crate) struct HubBlocks {
    hubs: Vec<Hub>,
    contacts: Vec<HubContact>,
    rows: Vec<HubRow>,
    /// Per row of the hub being stepped: `λ⁰`, `w`, whether it is free,
    /// the free rows' `Δλ` and the projected candidate `λ`.
    start: Vec<f64>,
    residual: Vec<f64>,
    free: Vec<bool>,
    step: Vec<f64>,
    candidate: Vec<f64>,
}

fn six(v: &Velocity6) -> Vector6<f64> {
    Vector6::new(
        v.linear.x,
        v.linear.y,
        v.linear.z,
        v.angular.x,
        v.angular.y,
        v.angular.z,
    )
}

fn from_six(x: &Vector6<f64>) -> Velocity6 {
    Velocity6::new(Vec3::new(x[0], x[1], x[2]), Vec3::new(x[3], x[4], x[5]))
}

impl HubBlocks {
    /// Finds the hubs of `problem` (movable bodies with at least
    /// `min_contacts` contacts with immovable ones, in body order) and
    /// forms their rows. `inv_diag` is `D⁻¹` of the whole problem.
    /// Whether there is a hub.
    pub(crate) fn prepare(
        &mut self,
        problem: &ContactProblem,
        min_contacts: usize,
        inv_diag: &[f64],
    ) -> bool {
        self.hubs.clear();
        self.contacts.clear();
        self.rows.clear();
        let movable: Vec<bool> = problem.inverse_mass().movable().collect();
        // the movable body of each contact with an immovable one
        let moving = |bodies: [u32; 2]| match bodies.map(|x| movable[x as usize]) {
            [true, false] => Some(bodies[0] as usize),
            [false, true] => Some(bodies[1] as usize),
            _ => None,
        };
        let mut count = vec![0usize; problem.body_count()];
        for r in problem.records() {
            if let Some(b) = moving(r.bodies) {
                count[b] += 1;
            }
        }
        // each hub's contacts, in contact order (`slot`: a body's hub)
        let mut slot = vec![usize::MAX; count.len()];
        let mut of_hub: Vec<(usize, Vec<usize>)> = Vec::new();
        for (body, &n) in count.iter().enumerate() {
            if n >= min_contacts {
                slot[body] = of_hub.len();
                of_hub.push((body, Vec::with_capacity(n)));
            }
        }
        if of_hub.is_empty() {
            return false;
        }
        for (i, r) in problem.records().iter().enumerate() {
            if let Some(list) = moving(r.bodies).and_then(|b| of_hub.get_mut(slot[b])) {
                list.1.push(i);
            }
        }
        for (body, contacts) in &of_hub {
            self.push_hub(problem, *body, contacts, inv_diag);
        }
        !self.hubs.is_empty()
    }

    /// Forms one hub's contacts and rows; a body whose inverse mass is
    /// singular is left to the row-wise sweep.
    fn push_hub(
        &mut self,
        problem: &ContactProblem,
        body: usize,
        contacts: &[usize],
        inv_diag: &[f64],
    ) {
        let inv = problem.inverse_mass();
        let m = problem.contact_rows().count();
        let mut inverse_mass = Matrix6::zeros();
        for k in 0..6 {
            let mut unit = Vector6::zeros();
            unit[k] = 1.0;
            inverse_mass.set_column(k, &six(&inv.response(body, &from_six(&unit))));
        }
        let Some(mass) = inverse_mass.try_inverse() else {
            return;
        };
        let first_contact = self.contacts.len();
        let all = problem.contacts();
        for &i in contacts {
            let Some(c) = all.get(i) else { continue };
            let a_is_hub = c.bodies[0] as usize == body;
            self.contacts.push(HubContact {
                first: i * m,
                other: c.bodies[usize::from(a_is_hub)] as usize,
                bounds: [
                    c.friction * c.jacobian.normal_scale,
                    c.rolling_arm * c.jacobian.normal_scale,
                ],
            });
            for j in 0..m {
                let row = c.jacobian.row(j);
                let a = Velocity6::new(row.linear_a, row.angular_a);
                let b = Velocity6::new(row.linear_b, row.angular_b);
                let (hub, other) = if a_is_hub { (a, b) } else { (b, a) };
                let inv_whole = inv_diag[i * m + j];
                let whole_d = if inv_whole > 0.0 {
                    1.0 / inv_whole
                } else {
                    0.0
                };
                let sigma = c.row_sigma(j);
                let floor = sigma.max(MIN_DIAGONAL_SHARE * whole_d);
                self.rows.push(HubRow {
                    hub: six(&hub),
                    other,
                    response: inv.response(body, &hub),
                    inv_sigma: if floor > 0.0 { 1.0 / floor } else { 0.0 },
                    sigma,
                    rhs: c.rhs[j],
                });
            }
        }
        self.hubs.push(Hub {
            body: body as u32,
            inverse_mass,
            mass,
            contacts: first_contact..self.contacts.len(),
        });
    }

    /// The block step of every hub in turn (module docs), on the running
    /// velocity. The largest change of a block row's residual (the
    /// correction the solver tracks) and whether every multiplier stayed
    /// finite.
    pub(crate) fn step(
        &mut self,
        set: FrictionSet,
        m: usize,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> (f64, bool) {
        let (mut corr, mut finite) = (0.0f64, true);
        for h in 0..self.hubs.len() {
            let hub = self.hubs[h].clone();
            let (c, f) = self.step_hub(&hub, set, m, lambda, velocity);
            corr = corr.max(c);
            finite &= f;
        }
        (corr, finite)
    }

    /// The block step of one hub.
    fn step_hub(
        &mut self,
        hub: &Hub,
        set: FrictionSet,
        m: usize,
        lambda: &mut [f64],
        velocity: &mut [Velocity6],
    ) -> (f64, bool) {
        let body = hub.body as usize;
        let rows = hub.contacts.start * m..hub.contacts.end * m;
        self.gather((hub, set, m), lambda, velocity);
        let Some(dv) = self.free_rows_solve(hub, m) else {
            return (0.0, true);
        };
        self.step.clear();
        for (k, r) in self.rows[rows.clone()].iter().enumerate() {
            let delta = -(self.residual[k] + r.hub.dot(&dv)) * r.inv_sigma;
            self.step.push(if self.free[k] { delta } else { 0.0 });
        }
        if !self.backtrack(hub, set, m) {
            return (0.0, true);
        }
        let before = six(&velocity[body]);
        let mut finite = true;
        let contacts = &self.contacts[hub.contacts.clone()];
        for (k, r) in self.rows[rows.clone()].iter().enumerate() {
            let new = self.candidate[k];
            let delta = new - self.start[k];
            finite &= new.is_finite();
            if delta != 0.0 {
                lambda[contacts[k / m].first + k % m] = new;
                velocity[body] += r.response * delta;
            }
        }
        // the correction is each row's residual change `g_j·Δv + Σ_j Δλ_j`
        // (a row-wise update's `D_jj |Δλ_j|`): a redistribution along the
        // block's null space moves the multipliers, not the residuals
        let dv = six(&velocity[body]) - before;
        let corr = self.rows[rows]
            .iter()
            .enumerate()
            .fold(0.0f64, |c, (k, r)| {
                let delta = self.candidate[k] - self.start[k];
                c.max((r.hub.dot(&dv) + r.sigma * delta).abs())
            });
        (corr, finite)
    }

    /// `λ⁰`, `w` and which rows are free (strictly inside their bounds)
    /// of the hub's rows.
    fn gather(
        &mut self,
        (hub, set, m): (&Hub, FrictionSet, usize),
        lambda: &[f64],
        velocity: &[Velocity6],
    ) {
        self.start.clear();
        self.residual.clear();
        self.free.clear();
        let vh = six(&velocity[hub.body as usize]);
        let rows = &self.rows[hub.contacts.start * m..hub.contacts.end * m];
        for (contact, rows) in self.contacts[hub.contacts.clone()]
            .iter()
            .zip(rows.chunks(m))
        {
            let vo = &velocity[contact.other];
            let l = &lambda[contact.first..contact.first + m];
            for (r, &lj) in rows.iter().zip(l) {
                let other = r.other.linear.dot(&vo.linear) + r.other.angular.dot(&vo.angular);
                self.start.push(lj);
                self.residual
                    .push(r.hub.dot(&vh) + other + r.sigma * lj + r.rhs);
            }
            let mut free = [false; 6];
            inside(set, contact.bounds, l, &mut free[..m]);
            self.free.extend_from_slice(&free[..m]);
        }
    }

    /// `Δv` of the exact solve over the free rows with the others held,
    /// `(W_h⁻¹ + Σ_F g_j g_jᵀ / Σ_j) Δv = −Σ_F g_j w_j / Σ_j`; `None`
    /// without a free row or when the matrix is not positive definite.
    fn free_rows_solve(&self, hub: &Hub, m: usize) -> Option<Vector6<f64>> {
        let rows = &self.rows[hub.contacts.start * m..hub.contacts.end * m];
        let mut matrix = hub.mass;
        let mut rhs = Vector6::zeros();
        let mut any = false;
        for (k, r) in rows.iter().enumerate() {
            if self.free[k] {
                matrix += r.hub * r.hub.transpose() * r.inv_sigma;
                rhs -= r.hub * (self.residual[k] * r.inv_sigma);
                any = true;
            }
        }
        if !any {
            return None;
        }
        Some(matrix.cholesky()?.solve(&rhs))
    }

    /// Projects `λ⁰ + α Δλ` for `α = 1, 1/2, …` into `candidate` until
    /// the block's objective falls (module docs); whether it did.
    fn backtrack(&mut self, hub: &Hub, set: FrictionSet, m: usize) -> bool {
        let mut alpha = 1.0;
        for _ in 0..MAX_HALVINGS {
            self.candidate.clear();
            let contacts = &self.contacts[hub.contacts.clone()];
            let rows = self.start.chunks(m).zip(self.step.chunks(m));
            for (contact, (start, step)) in contacts.iter().zip(rows) {
                let mut lam = [0.0; 6];
                for j in 0..m {
                    lam[j] = start[j] + alpha * step[j];
                }
                project(set, contact.bounds, &mut lam[..m]);
                self.candidate.extend_from_slice(&lam[..m]);
            }
            if self.objective_change(hub, m) < 0.0 {
                return true;
            }
            alpha *= 0.5;
        }
        false
    }

    /// The block objective's change from `λ⁰` to `candidate`:
    /// `½ Δλᵀ Σ Δλ + ½ ‖G_hᵀ Δλ‖²_{W_h} + wᵀ Δλ`.
    fn objective_change(&self, hub: &Hub, m: usize) -> f64 {
        let rows = &self.rows[hub.contacts.start * m..hub.contacts.end * m];
        let mut impulse = Vector6::zeros();
        let mut change = 0.0;
        for (k, r) in rows.iter().enumerate() {
            let delta = self.candidate[k] - self.start[k];
            if delta != 0.0 {
                impulse += r.hub * delta;
                change += delta * (0.5 * r.sigma * delta + self.residual[k]);
            }
        }
        change + 0.5 * impulse.dot(&(hub.inverse_mass * impulse))
    }
}

/// Whether each row of a contact with multipliers `lam` is strictly
/// inside its bounds (a normal row: positive; a friction or rolling row of
/// the box: inside `±bound`; a pair of the disk: inside the disk;
/// twisting: inside `±bound`).
fn inside(set: FrictionSet, bounds: [f64; 2], lam: &[f64], free: &mut [bool]) {
    free[0] = lam[0] > 0.0;
    for j in 1..lam.len() {
        let bound = if j < 3 { bounds[0] } else { bounds[1] } * lam[0];
        free[j] = match (set, j) {
            (FrictionSet::Disk, 1 | 3) => lam[j].hypot(lam[j + 1]) < bound,
            (FrictionSet::Disk, 2 | 4) => lam[j - 1].hypot(lam[j]) < bound,
            _ => lam[j].abs() < bound,
        };
    }
}

/// Projects a contact's multipliers onto its admissible set with its own
/// normal multiplier (the papers' box or the disk).
fn project(set: FrictionSet, bounds: [f64; 2], lam: &mut [f64]) {
    lam[0] = lam[0].max(0.0);
    if lam.len() < 3 {
        return;
    }
    crate::problem::project_pair(set, bounds[0] * lam[0], &mut lam[1..3]);
    if lam.len() < 6 {
        return;
    }
    let b = bounds[1] * lam[0];
    crate::problem::project_pair(set, b, &mut lam[3..5]);
    lam[5] = lam[5].clamp_to(-b, b);
}

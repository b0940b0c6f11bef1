//! Preparing a [`ProjectedGaussSeidel`] solve: settings, the visiting order (the problem's own or coloured blocks), the contacts' shape classes and `D⁻¹`.

use super::*;

impl ProjectedGaussSeidel {
    /// Forms what the sweeps read besides the iterate: the visiting order,
    /// `D⁻¹` of every row and each contact's shape.
    pub(crate) fn prepare(&mut self, problem: &ContactProblem) {
        self.prepare_order(problem);
        self.form_inverse_diagonal(problem);
        self.finish_preparation(problem);
    }

    /// [`Self::prepare`] and the residual statistics of the start (at the
    /// velocity [`Self::start_velocity`] names), with `D⁻¹` and the
    /// contacts' shapes formed in the statistics' pass over the contacts
    /// when the sweeps use the problem's own masses: both form each
    /// contact's `D` from the same records and bodies, with the same
    /// arithmetic, so the numbers are those of the two passes apart.
    pub(super) fn prepare_with_start_stats(
        &mut self,
        problem: &ContactProblem,
        lambda: &[f64],
        velocity: &[Velocity6],
        start: StartVelocity,
    ) -> ResidualStats {
        self.prepare_order(problem);
        let given = self.start_velocity(problem, lambda, velocity, start);
        if !self.split_inverse.is_empty() {
            self.form_inverse_diagonal(problem);
            self.finish_preparation(problem);
            return self.evaluator.stats(problem, lambda, given);
        }
        let m = problem.contact_rows().count();
        let bodies = problem.inverse_mass().responses();
        let out = InverseDiagonal {
            rows: &mut self.inv_diag,
            classes: &mut self.shape_of,
            classify: |c: &ContactRecord| contact_shape_class(c, m, bodies),
        };
        let stats = self
            .evaluator
            .stats_with_inverse_diagonal(problem, lambda, given, out);
        self.finish_preparation(problem);
        stats
    }

    /// The masses the sweeps use, the sizes of `D⁻¹` and of the shapes, and
    /// the visiting order.
    pub(super) fn prepare_order(&mut self, problem: &ContactProblem) {
        let n = problem.len();
        self.split_inverse.clear();
        if !self.mass_split.is_empty() {
            let split = problem.inverse_mass().iter().zip(&self.mass_split);
            self.split_inverse
                .extend(split.map(|(inv, &k)| InverseMass {
                    inv_mass: inv.inv_mass * k,
                    inv_inertia: inv.inv_inertia * k,
                }));
        }
        // reused by every solve: grown by an eighth, not doubled; every
        // entry is written by the preparation before a sweep reads it
        ndem_par::capacity::resize_for_overwrite(&mut self.inv_diag, n, 0.0);
        self.order_source = match self.settings.order {
            ContactOrder::Given => OrderSource::Identity,
            ContactOrder::Coloured => {
                let threads = self.sweep_threads(problem);
                self.colouring
                    .build(problem, self.settings.colour_blocks, threads);
                OrderSource::Colouring
            }
            order => {
                order.fill(problem.contacts().len(), &mut self.order);
                OrderSource::Own
            }
        };
        let contacts = problem.records().len();
        ndem_par::capacity::resize_for_overwrite(&mut self.shape_of, contacts, SHAPE_COUPLED);
    }

    /// One pass over the contacts: `D⁻¹` of the contact rows (as
    /// `diagonal_unchecked` forms `D`) and the class of each contact's
    /// shape ([`contact_shape_class`]).
    pub(super) fn form_inverse_diagonal(&mut self, problem: &ContactProblem) {
        let threads = self.sweep_threads(problem);
        let off = problem.generic_offset();
        let m = problem.contact_rows().count();
        let inv = masses(&self.split_inverse, problem);
        let contacts = problem.records();
        let per_block = ndem_par::blocks::block_len(contacts.len(), threads);
        let parts = self.inv_diag[..off]
            .chunks_mut(per_block * m)
            .zip(self.shape_of.chunks_mut(per_block))
            .enumerate();
        let bodies = inv.responses();
        ndem_par::blocks::map_parts(parts, |(k, (diagonal, shapes))| {
            let first = k * per_block;
            let rows = diagonal.chunks_exact_mut(m).zip(shapes);
            for (i, (c, (o, shape))) in contacts[first..].iter().zip(rows).enumerate() {
                let [a, b] = c.bodies.map(|x| x as usize);
                let d = inv.diagonal(&c.jacobian, a, b);
                let s = problem.coefficients(first + i);
                for j in 0..m {
                    o[j] = invert_diagonal(d[j] + c.row_sigma(s, j));
                }
                *shape = contact_shape_class(c, m, bodies);
            }
        });
    }

    /// `D⁻¹` of the generic rows, and the blocks of the contacts whose
    /// shape is their own (the second, serial pass).
    pub(super) fn finish_preparation(&mut self, problem: &ContactProblem) {
        let off = problem.generic_offset();
        let m = problem.contact_rows().count();
        let inv = masses(&self.split_inverse, problem);
        let contacts = problem.records();
        problem.generic_diagonal_unchecked(&mut self.inv_diag);
        for d in &mut self.inv_diag[off..] {
            *d = invert_diagonal(*d);
        }
        self.relaxed_inv_diag.clear();
        let omega = self.settings.relaxation;
        if omega != 1.0 {
            let relaxed = self.inv_diag.iter().map(|&d| omega * d);
            self.relaxed_inv_diag.extend(relaxed);
        }
        self.shape_table.clear();
        self.shape_table.push(ContactShape {
            decoupled: true,
            friction: None,
            rolling: None,
        });
        self.shape_table.push(ContactShape::default());
        for (ci, s) in self.shape_of.iter_mut().enumerate() {
            if *s != SHAPE_PENDING {
                continue;
            }
            let c = &contacts[ci];
            let [a, b] = c.bodies.map(|x| x as usize);
            let k = problem.coefficients(ci);
            let shape = coupled_shape((c, k), m, &inv.at(a), &inv.at(b));
            *s = if shape.friction.is_none() && shape.rolling.is_none() {
                SHAPE_COUPLED
            } else {
                self.shape_table.push(shape);
                (self.shape_table.len() - 1) as u32
            };
        }
    }
}

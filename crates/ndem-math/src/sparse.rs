//! Export of Jacobian blocks to `nalgebra_sparse` matrices, for reference
//! solvers, tests and users who want assembled operators.

use crate::{ContactJacobian, JacobianRow};
use nalgebra_sparse::{CooMatrix, CsrMatrix};

/// Assembles rows acting on body pairs into a CSR matrix with
/// `6 · body_count` columns (body `i` owns columns `6i..6i+6`, `[v; ω]`).
/// Entries that are exactly zero are skipped.
pub fn rows_to_csr(rows: &[([usize; 2], JacobianRow)], body_count: usize) -> CsrMatrix<f64> {
    let mut coo = CooMatrix::new(rows.len(), 6 * body_count);
    for (i, (bodies, row)) in rows.iter().enumerate() {
        let arr = row.to_array();
        for (side, &body) in bodies.iter().enumerate() {
            for k in 0..6 {
                let v = arr[6 * side + k];
                if v != 0.0 {
                    coo.push(i, 6 * body + k, v);
                }
            }
        }
    }
    CsrMatrix::from(&coo)
}

/// Assembles the first `rows_per_contact` (1, 3 or 6) rows of each contact
/// into a CSR matrix `G` (contact-major row order).
pub fn contacts_to_csr(
    contacts: &[([usize; 2], ContactJacobian)],
    rows_per_contact: usize,
    body_count: usize,
) -> CsrMatrix<f64> {
    let rows: Vec<([usize; 2], JacobianRow)> = contacts
        .iter()
        .flat_map(|(b, jac)| (0..rows_per_contact).map(move |j| (*b, jac.row(j))))
        .collect();
    rows_to_csr(&rows, body_count)
}

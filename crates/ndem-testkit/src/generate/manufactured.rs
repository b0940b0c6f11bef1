//! Local problems with a known solution, rank-deficient or non-symmetric
//! `W` ([`manufactured_local_problem`]).

use nalgebra::DMatrix;
use nalgebra_sparse::{CooMatrix, CsrMatrix};
use ndem_math::SettingError;
use ndem_math::rng::Rng;
use ndem_solve::{LocalProblem, SolveError};

/// What [`manufactured_local_problem`] builds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ManufacturedSpec {
    /// Rigid bodies (6 degrees of freedom each).
    pub bodies: usize,
    /// Contacts; `W` has rank at most `6 · bodies`, so more than
    /// `2 · bodies` contacts make it rank deficient.
    pub contacts: usize,
    /// Weight of the normal reaction in the tangential velocities
    /// (`W = Hᵀ M⁻¹ H T` with `T` the identity plus this weight times a
    /// random column per contact): 0 gives a symmetric `W`.
    pub asymmetry: f64,
    /// Largest friction coefficient.
    pub max_friction: f64,
    /// Seed.
    pub seed: u64,
}

impl Default for ManufacturedSpec {
    fn default() -> Self {
        Self {
            bodies: 8,
            contacts: 40,
            asymmetry: 0.0,
            max_friction: 0.6,
            seed: 1,
        }
    }
}

/// A local problem `(W, q, μ)` with a known solution `r*` of Coulomb's
/// law: `W = Hᵀ M⁻¹ H T`, each contact on one or two of the bodies with
/// random Jacobian blocks, `M⁻¹` diagonal; per contact a state drawn
/// (open a fifth of the time, sticking or sliding two fifths each) and
/// `r*`, `u*` that satisfy Coulomb's law in it; `q = u* − W r*`. Returns
/// the problem and `r*` (at which its merit is zero up to round-off).
pub fn manufactured_local_problem(
    spec: &ManufacturedSpec,
) -> Result<(LocalProblem, Vec<f64>), SolveError> {
    SolveError::require(spec.bodies != 0, "bodies", "must be at least 1")?;
    for (field, value) in [
        ("asymmetry", spec.asymmetry),
        ("max_friction", spec.max_friction),
    ] {
        SolveError::require_non_negative(field, value)?;
    }
    let mut rng = Rng::new(spec.seed);
    let (n, dof) = (spec.contacts, 6 * spec.bodies);
    let mut h = DMatrix::<f64>::zeros(dof, 3 * n);
    for c in 0..n {
        let first = c % spec.bodies;
        let second = (rng.uniform() * spec.bodies as f64) as usize % spec.bodies;
        let touched = if rng.uniform() < 0.5 && second != first {
            vec![(first, 1.0), (second, -1.0)]
        } else {
            vec![(first, 1.0)]
        };
        for (body, sign) in touched {
            for d in 0..6 {
                for a in 0..3 {
                    h[(6 * body + d, 3 * c + a)] = sign * (2.0 * rng.uniform() - 1.0);
                }
            }
        }
    }
    let minv = DMatrix::from_diagonal(&nalgebra::DVector::from_fn(dof, |_, _| {
        0.5 + 1.5 * rng.uniform()
    }));
    let mut w = h.transpose() * minv * &h;
    let mut t = DMatrix::<f64>::identity(3 * n, 3 * n);
    for c in 0..n {
        for a in 1..3 {
            t[(3 * c + a, 3 * c)] = spec.asymmetry * (2.0 * rng.uniform() - 1.0);
        }
    }
    w *= t;
    let mu: Vec<f64> = (0..n).map(|_| spec.max_friction * rng.uniform()).collect();
    let (mut r, mut u) = (vec![0.0; 3 * n], vec![0.0; 3 * n]);
    for c in 0..n {
        let k = 3 * c;
        let state = rng.uniform();
        let angle = std::f64::consts::TAU * rng.uniform();
        let (cos, sin) = (angle.cos(), angle.sin());
        if state < 0.2 {
            // open: no reaction, separating
            u[k] = 0.1 + rng.uniform();
            u[k + 1] = 2.0 * rng.uniform() - 1.0;
            u[k + 2] = 2.0 * rng.uniform() - 1.0;
        } else if state < 0.6 || mu[c] == 0.0 {
            // sticking: inside the cone, no relative velocity
            r[k] = 0.5 + rng.uniform();
            let radius = 0.9 * mu[c] * r[k] * rng.uniform();
            r[k + 1] = radius * cos;
            r[k + 2] = radius * sin;
        } else {
            // sliding: on the cone's boundary, against the slip
            r[k] = 0.5 + rng.uniform();
            let slip = 0.1 + rng.uniform();
            u[k + 1] = slip * cos;
            u[k + 2] = slip * sin;
            r[k + 1] = -mu[c] * r[k] * cos;
            r[k + 2] = -mu[c] * r[k] * sin;
        }
    }
    let wr = &w * nalgebra::DVector::from_column_slice(&r);
    let q: Vec<f64> = (0..3 * n).map(|i| u[i] - wr[i]).collect();
    let mut coo = CooMatrix::new(3 * n, 3 * n);
    for j in 0..3 * n {
        for i in 0..3 * n {
            if w[(i, j)] != 0.0 {
                coo.push(i, j, w[(i, j)]);
            }
        }
    }
    Ok((LocalProblem::new(CsrMatrix::from(&coo), q, mu)?, r))
}

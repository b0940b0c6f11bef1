//! Cone (disk) friction PGS must be Coulomb at its fixed point for any
//! frame and any row diagonals: contacts with non-orthonormal frames,
//! anisotropic bodies and lever arms off the normal, pressed and sliding.

use ndem_math::Velocity6;
use ndem_solve::metrics::coulomb_merit;
use ndem_solve::testing::{SkewedSpec, skewed_contacts};
use ndem_solve::{ContactRows, PgsSettings, PgsVariant, ProjectedGaussSeidel, Solver, Stopping};
use proptest::prelude::*;

fn solve(problem: &ndem_solve::ContactProblem, variant: PgsVariant, sweeps: usize) -> f64 {
    let mut pgs = ProjectedGaussSeidel::new(PgsSettings {
        stopping: Stopping::iterations(sweeps),
        variant,
        ..PgsSettings::default()
    })
    .unwrap();
    let mut lambda = vec![0.0; problem.len()];
    let mut v = problem.free_velocity().to_vec();
    pgs.solve(problem, &mut lambda, &mut v).unwrap();
    coulomb_merit(problem, &lambda)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Merit ≤ 1e-8 after enough sweeps, row-wise and blocked, on every
    /// generated case (no filtering).
    #[test]
    fn disk_pgs_is_coulomb_on_skewed_sliding_contacts(
        bodies in 1usize..4,
        extra in 0usize..3,
        skew in 0.1f64..0.6,
        sliding in 0.0f64..3.0,
        six_rows in any::<bool>(),
        blocked in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let rows = if six_rows { ContactRows::NormalFrictionRolling } else { ContactRows::NormalFriction };
        let problem = skewed_contacts(&SkewedSpec { bodies, contacts: bodies + extra, skew, sliding, rows, seed });
        let variant = if blocked { PgsVariant::Blocked } else { PgsVariant::RowWise };
        let merit = solve(&problem, variant, 20_000);
        prop_assert!(merit <= 1e-8, "merit {merit:e} with {variant:?}");
    }
}

/// One sliding contact of a rotated box on the ground: the smallest case.
#[test]
fn single_sliding_skewed_contact_reaches_coulomb() {
    let problem = skewed_contacts(&SkewedSpec {
        bodies: 1,
        contacts: 1,
        skew: 0.5,
        sliding: 2.0,
        rows: ContactRows::NormalFriction,
        seed: 7,
    });
    for variant in [PgsVariant::RowWise, PgsVariant::Blocked] {
        let merit = solve(&problem, variant, 5000);
        println!("{variant:?}: Coulomb merit {merit:e}");
        assert!(merit <= 1e-10, "{variant:?}: merit {merit:e}");
    }
    let _ = Velocity6::ZERO;
}

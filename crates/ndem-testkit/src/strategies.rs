//! Proptest strategies over the [`crate::generate`] problem generators
//! (feature `proptest-support`).

pub use crate::generate::*;
use ndem_math::SpookSettings;
use ndem_solve::{ContactProblem, ContactRows, FrictionSet};
use proptest::prelude::*;

/// What a strategy's draw within a generator's ranges always is.
const DRAWN_IN_RANGE: &str = "a spec the strategy drew within the generator's ranges";

/// Small random sphere packings (2 to 4 per side, up to 3 layers) with
/// random compression, polydispersity, speeds and seed.
pub fn arb_packing(
    rows: ContactRows,
    friction_set: FrictionSet,
) -> impl Strategy<Value = ContactProblem> {
    packings(rows, friction_set, SpookSettings::default())
}

/// As [`arb_packing`] with given SPOOK settings (e.g. softer rolling
/// compliance for tests that need tight convergence); settings that fail
/// [`SpookSettings::validate`] are refused here, not in the draws.
pub fn arb_packing_with(
    rows: ContactRows,
    friction_set: FrictionSet,
    spook: SpookSettings,
) -> Result<impl Strategy<Value = ContactProblem>, GenerateError> {
    spook.validate()?;
    Ok(packings(rows, friction_set, spook))
}

/// [`arb_packing_with`]'s draws, with `spook` valid.
fn packings(
    rows: ContactRows,
    friction_set: FrictionSet,
    spook: SpookSettings,
) -> impl Strategy<Value = ContactProblem> {
    (
        1usize..=4,
        1usize..=3,
        1usize..=3,
        0.0f64..0.05,
        0.0f64..0.2,
        0.0f64..0.05,
        any::<u64>(),
    )
        .prop_map(move |(nx, ny, nz, compression, poly, speed, seed)| {
            sphere_packing(&PackingSpec {
                cells: [nx, ny, nz],
                spook,
                compression: 0.002 + compression,
                polydispersity: poly,
                speed,
                rows,
                friction_set,
                seed,
                ..PackingSpec::default()
            })
            .expect(DRAWN_IN_RANGE)
        })
}

/// Random sparse problems with Σ ≥ `min_sigma`; a `min_sigma` or
/// `bilateral_fraction` out of [`random_sparse_problem`]'s ranges is
/// refused here, not in the draws.
pub fn arb_sparse_problem(
    min_sigma: f64,
    bilateral_fraction: f64,
) -> Result<impl Strategy<Value = ContactProblem>, GenerateError> {
    let spec = move |bodies, rows, seed| SparseSpec {
        bodies,
        rows,
        bilateral_fraction,
        min_sigma,
        seed,
    };
    spec(2, 1, 0).validate()?;
    Ok(
        (2usize..8, 1usize..16, any::<u64>()).prop_map(move |(bodies, rows, seed)| {
            random_sparse_problem(&spec(bodies, rows, seed)).expect(DRAWN_IN_RANGE)
        }),
    )
}

/// Random joint trees ([`joint_tree`]): 1 to 8 moving bodies, masses over
/// up to five decades, 1 to 6 rows per joint, up to half of them
/// force-limited.
pub fn arb_joint_tree() -> impl Strategy<Value = ContactProblem> {
    (
        1usize..=8,
        0.0f64..5.0,
        1usize..=6,
        0.0f64..0.5,
        0.05f64..2.0,
        any::<u64>(),
    )
        .prop_map(|(bodies, decades, rows, bounded, bound, seed)| {
            joint_tree(&TreeSpec {
                bodies,
                mass_ratio: 10f64.powf(decades),
                rows_per_joint: rows,
                bounded_fraction: bounded,
                bound,
                sigma: 1e-6,
                seed,
            })
            .expect(DRAWN_IN_RANGE)
        })
}

/// Random global problems ([`random_global_problem`]): 1 to 6 rigid bodies
/// (6×6 mass blocks), up to one contact per body, μ up to 0.6; with
/// `coupled`, neighbouring bodies coupled in `M` (not block diagonal).
pub fn arb_global_problem(coupled: bool) -> impl Strategy<Value = ndem_solve::GlobalProblem> {
    (1usize..=6, 1usize..=6, any::<u64>()).prop_map(move |(bodies, contacts, seed)| {
        random_global_problem(&GlobalSpec {
            block: 6,
            bodies,
            contacts: contacts.min(bodies),
            coupled,
            max_friction: 0.6,
            seed,
        })
        .expect(DRAWN_IN_RANGE)
    })
}

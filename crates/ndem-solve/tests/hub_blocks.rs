//! PGS with hub blocks (`HubRows::Block`) on sphere packings whose bottom
//! layers are one rigid body standing on the floor (a model-reduction
//! aggregate): the block removes the floor rows' slow modes, and it
//! converges to the problem's solution (the dense reference where the
//! solution is unique, an independent residual otherwise).

use ndem_solve::reference::solve_frictionless;
use ndem_solve::{
    ContactProblem, ContactRows, FrictionSet, HubRows, PgsSettings, ProjectedGaussSeidel,
    SolveReport, Solver, SolverStatus, Stopping,
};
use ndem_testkit::generate::{PackingSpec, sphere_packing};
use proptest::prelude::*;

/// A lattice packing (no jitter, one radius) whose `layers` bottom layers
/// are merged into one body.
fn merged(cells: [usize; 3], layers: usize, rows: ContactRows, seed: u64) -> ContactProblem {
    merged_with(cells, layers, rows, FrictionSet::Box, seed)
}

fn merged_with(
    cells: [usize; 3],
    layers: usize,
    rows: ContactRows,
    friction_set: FrictionSet,
    seed: u64,
) -> ContactProblem {
    sphere_packing(&PackingSpec {
        cells,
        merged_layers: layers,
        compression: 0.001,
        polydispersity: 0.0,
        jitter: 0.0,
        rows,
        friction_set,
        seed,
        ..PackingSpec::default()
    })
    .expect("a valid spec")
}

fn solve(p: &ContactProblem, hubs: HubRows, stopping: Stopping) -> (Vec<f64>, SolveReport) {
    let mut pgs = ProjectedGaussSeidel::new(PgsSettings {
        stopping,
        hubs,
        ..PgsSettings::default()
    })
    .expect("valid settings");
    let (mut lambda, mut v) = p.cold_start();
    let report = pgs
        .solve(p, &mut lambda, &mut v)
        .expect("a solvable problem");
    (lambda, report)
}

const BLOCK: HubRows = HubRows::Block { min_contacts: 8 };

/// The largest `|λ − Π(λ − w/D)| D` over the rows (velocity units), from
/// the problem's own residual and projection, independent of the solver.
fn natural_residual(p: &ContactProblem, lambda: &[f64]) -> f64 {
    let mut v = p.cold_start().1;
    p.velocity_from(lambda, &mut v).expect("sizes");
    let mut w = vec![0.0; p.len()];
    p.residual(lambda, &v, &mut w).expect("sizes");
    let mut d = vec![0.0; p.len()];
    p.diagonal(&mut d).expect("sizes");
    let mut projected: Vec<f64> = (0..p.len()).map(|k| lambda[k] - w[k] / d[k]).collect();
    p.project(&mut projected).expect("sizes");
    (0..p.len()).fold(0.0f64, |e, k| {
        e.max((lambda[k] - projected[k]).abs() * d[k])
    })
}

/// A 3 × 3 layer merged on the floor (9 contacts, six rows each): row-wise
/// PGS is still at a residual of 4.5e-8 after 20 000 sweeps; with the
/// block it converges to 1e-8 in 9 sweeps (bound 12 from that count).
#[test]
fn a_merged_layer_on_the_floor_converges_in_a_few_sweeps() {
    let p = merged([3, 3, 1], 1, ContactRows::NormalFrictionRolling, 3);
    let stopping = Stopping::to_tolerance(20_000, 1e-8);
    let (_, row_wise) = solve(&p, HubRows::RowWise, stopping);
    assert_eq!(
        row_wise.status,
        SolverStatus::IterationLimit,
        "{row_wise:?}"
    );
    assert!(row_wise.residuals.max > 1e-8, "{row_wise:?}");
    let (lambda, block) = solve(&p, BLOCK, stopping);
    assert_eq!(block.status, SolverStatus::Converged, "{block:?}");
    assert!(block.iterations <= 12, "{block:?}");
    assert!(natural_residual(&p, &lambda) <= 1e-8);
}

/// Fewer contacts with immovable bodies than `min_contacts`: no hub, the
/// row-wise sweep's iterates bit for bit.
#[test]
fn a_body_below_min_contacts_is_swept_row_wise() {
    let p = merged([3, 2, 2], 1, ContactRows::NormalFrictionRolling, 3);
    let stopping = Stopping::iterations(200);
    let (row_wise, _) = solve(&p, HubRows::RowWise, stopping);
    let (block, _) = solve(&p, BLOCK, stopping);
    assert_eq!(row_wise, block);
}

#[test]
fn min_contacts_below_two_is_a_typed_error() {
    let e = ProjectedGaussSeidel::new(PgsSettings {
        hubs: HubRows::Block { min_contacts: 1 },
        ..PgsSettings::default()
    })
    .expect_err("refused");
    assert!(e.to_string().contains("hubs.min_contacts"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Frictionless merged packings (a unique solution): PGS with the
    /// block converges to 1e-12 and matches the dense reference (Murty's
    /// pivoting) within 1e-9 of its largest multiplier, 10× the largest
    /// difference measured over the strategy's draws (1.0e-10).
    #[test]
    fn frictionless_blocks_match_the_dense_reference(
        nx in 3usize..=4, ny in 3usize..=4, nz in 1usize..=3, layers in 1usize..=2, seed in 0u64..1000,
    ) {
        let p = merged([nx, ny, nz], layers.min(nz), ContactRows::Normal, seed);
        let exact = solve_frictionless(&p).expect("a P-matrix problem");
        let (lambda, report) = solve(&p, BLOCK, Stopping::to_tolerance(20_000, 1e-12));
        prop_assert_eq!(report.status, SolverStatus::Converged, "{:?}", report);
        let scale = exact.iter().fold(0.0f64, |a, &b| a.max(b.abs()));
        let error = exact.iter().zip(&lambda).fold(0.0f64, |e, (a, b)| e.max((a - b).abs()));
        prop_assert!(error <= 1e-9 * scale, "off by {:e} of {:e}", error, scale);
    }

    /// With friction and rolling (the papers' six rows, box or disk):
    /// whenever the block solve reports convergence to 1e-8, the
    /// independent residual is within that tolerance too; and one merged
    /// layer on the floor (every contact of the hub in the block) always
    /// converges.
    #[test]
    fn frictional_blocks_are_solutions(
        nx in 3usize..=4, ny in 3usize..=4, nz in 1usize..=2, disk: bool, seed in 0u64..1000,
    ) {
        let set = if disk { FrictionSet::Disk } else { FrictionSet::Box };
        let p = merged_with([nx, ny, nz], 1, ContactRows::NormalFrictionRolling, set, seed);
        let (lambda, report) = solve(&p, BLOCK, Stopping::to_tolerance(20_000, 1e-8));
        if nz == 1 {
            prop_assert_eq!(report.status, SolverStatus::Converged, "{:?}", report);
        }
        if report.status == SolverStatus::Converged {
            let r = natural_residual(&p, &lambda);
            prop_assert!(r <= 1e-8, "residual {:e}", r);
        }
    }
}

//! `cargo xtask reduce speedup … classes`: where the reduced problem's
//! residual stays. The last continuous problem of each reduced run is
//! solved again from a cold start, row by row and with hub blocks
//! (`HubRows::Block`), and the largest row residual the solvers report
//! (`ndem_solve::ResidualStats`: `D_jj |λ_j − Π_j(λ_j − w_j/D_jj)|`, m/s)
//! is recorded per contact class (aggregate–floor,
//! aggregate–free, free–free, free–floor, aggregate–aggregate) and row
//! kind (normal, friction, rolling, twisting) after 30, 300 and 3000
//! sweeps: `residual_classes.csv`.

use crate::report::SuiteResult;
use ndem_solve::{
    ContactProblem, HubRows, PgsSettings, ProjectedGaussSeidel, ResidualEvaluator, Solver, Stopping,
};

/// Contact classes, in the CSV's order.
const CLASSES: [&str; 5] = [
    "aggregate-floor",
    "aggregate-free",
    "free-free",
    "free-floor",
    "aggregate-aggregate",
];
/// Sweep counts at which the residuals are recorded.
const SWEEPS: [usize; 3] = [30, 300, 3000];

/// The CSV header of [`class_rows`].
pub(crate) const HEADER: [&str; 8] = [
    "h", "solver", "sweeps", "class", "normal", "friction", "rolling", "twisting",
];

/// Which bodies are aggregates: movable bodies at most half as heavy in
/// inverse mass as the median movable body (a merged aggregate holds
/// many spheres); body 0 is the floor.
fn aggregates(problem: &ContactProblem) -> Vec<bool> {
    let inv: Vec<f64> = problem.inverse_mass().iter().map(|m| m.inv_mass).collect();
    let mut movable: Vec<f64> = inv.iter().copied().filter(|&x| x > 0.0).collect();
    movable.sort_by(f64::total_cmp);
    let median = movable.get(movable.len() / 2).copied().unwrap_or(0.0);
    inv.iter().map(|&x| x > 0.0 && x < 0.5 * median).collect()
}

/// The class of a contact between `a` and `b`.
fn class(aggregate: &[bool], [a, b]: [u32; 2]) -> usize {
    let (a, b) = (a as usize, b as usize);
    let floor = a == 0 || b == 0;
    match (aggregate[a] as usize + aggregate[b] as usize, floor) {
        (2, _) => 4,
        (1, true) => 0,
        (1, false) => 1,
        (_, true) => 3,
        _ => 2,
    }
}

/// The largest row residual per class and row kind.
fn by_class(
    problem: &ContactProblem,
    lambda: &[f64],
    aggregate: &[bool],
    evaluator: &mut ResidualEvaluator,
) -> [[f64; 4]; 5] {
    let rows = evaluator.row_residuals(problem, lambda, None);
    let m = problem.contact_rows().count();
    let kind = |j: usize| [0, 1, 1, 2, 2, 3][j];
    let mut worst = [[0.0f64; 4]; 5];
    for (i, c) in problem.contacts().iter().enumerate() {
        let row = &mut worst[class(aggregate, c.bodies)];
        for j in 0..m {
            row[kind(j)] = row[kind(j)].max(rows[i * m + j]);
        }
    }
    worst
}

/// The `residual_classes.csv` rows of one reduction level's problem.
pub(crate) fn class_rows(
    problem: &ContactProblem,
    h: f64,
    hub_min_contacts: usize,
) -> SuiteResult<Vec<Vec<String>>> {
    let aggregate = aggregates(problem);
    let mut evaluator = ResidualEvaluator::new();
    let mut rows = Vec::new();
    let solvers = [
        ("row-wise", HubRows::RowWise),
        (
            "hub-blocks",
            HubRows::Block {
                min_contacts: hub_min_contacts,
            },
        ),
    ];
    for (name, hubs) in solvers {
        let (mut lambda, mut v) = problem.cold_start();
        let mut done = 0;
        for sweeps in SWEEPS {
            let mut pgs = ProjectedGaussSeidel::new(PgsSettings {
                stopping: Stopping::iterations(sweeps - done),
                hubs,
                ..PgsSettings::default()
            })
            .map_err(|e| e.to_string())?;
            // a restart from λ: the iterates of one longer solve, up to
            // the rounding of v formed again from λ
            pgs.solve(problem, &mut lambda, &mut v)
                .map_err(|e| e.to_string())?;
            done = sweeps;
            for (c, worst) in by_class(problem, &lambda, &aggregate, &mut evaluator)
                .iter()
                .enumerate()
            {
                let mut row = vec![format!("{h:.3}"), name.into(), sweeps.to_string()];
                row.push(CLASSES[c].into());
                row.extend(worst.iter().map(|x| format!("{x:.2e}")));
                rows.push(row);
            }
        }
    }
    Ok(rows)
}

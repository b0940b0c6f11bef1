//! # ndem-solve
//!
//! Contact problems of nonsmooth DEM and their solvers.
//!
//! * [`ContactProblem`]: one MCP of a SPOOK step in Schur-complement form
//!   (warm-starting paper, eqs. 1-2, 6), built from `ndem-math` Jacobian
//!   blocks or from sparse matrices.
//! * [`Solver`]: solve in place from a starting `λ`; implemented by
//!   [`ProjectedGaussSeidel`] (Algorithm 1, row-wise and blocked),
//!   [`ProjectedJacobi`] (parallel) and [`Apgd`] (Nesterov-accelerated
//!   projected gradient on the QP/CCP form).
//! * Problems given by matrices (FCLIB's forms): [`LocalProblem`]
//!   `(W, q, μ)` (`W` symmetric or not) and [`GlobalProblem`]
//!   `(M, H, f, w, μ)`, solved by the [`LocalSolver`]s
//!   [`LocalGaussSeidel`], [`SemismoothNewton`], [`ProximalPoint`],
//!   [`LocalApgd`] (symmetric `W` only) and [`LocalPortfolio`] (cheapest
//!   first, switching on a stall), and by [`GlobalGaussSeidel`] without
//!   forming `W`.
//! * [`compatible`]: compatible contact dynamics, the no-tension truss
//!   problem solved by an augmented Lagrangian with APGD subproblems.
//! * [`qp`]: the APGD core on any smooth convex objective and the
//!   bound/cone-constrained QP entry point [`solve_qp`].
//! * [`WarmStart`]: [`ColdStart`], [`HistoryWarmStart`] (eqs. 7-8) and
//!   [`ModelWarmStart`] (eqs. 9-11), with multipliers carried between steps
//!   in an [`ImpulseHistory`] keyed by [`ndem_math::ContactKey`].
//! * [`metrics`]: residuals by row kind, natural-map error, relative
//!   multiplier error (eq. 13), histograms, and the [`ResidualHistory`]
//!   observer.
//! * [`schedule`]: the coloured sweep's work schedule and the speed-up it
//!   allows on any number of threads.
//! * [`reference`](mod@reference): a dense principal-pivoting LCP solver for small
//!   frictionless problems (tests).
//!
//! Invariant: solvers see only problem data (inverse masses, free
//! velocities, Jacobian blocks, Σ, b, bounds); they know nothing about
//! bodies' shapes or positions, collision detection or time stepping.

pub mod apgd;
pub mod compatible;
mod cone;
pub mod coulomb_apgd;
mod direct;
pub mod error;
pub mod history;
pub mod jacobi;
mod local;
pub mod local_apgd;
mod local_contact;
pub mod local_gs;
pub mod local_portfolio;
pub mod local_problem;
pub mod local_prox;
pub mod local_solver;
pub mod masses;
pub mod metrics;
pub mod newton;
pub mod pgs;
mod pgs_parallel;
pub mod pgs_subdomain;
pub mod problem;
pub mod qp;
pub mod reference;
pub mod schedule;
pub mod solver;
pub mod warm_start;

// The test kit's generators and strategies, compiled into this crate's
// unit tests so that they build problems of its own types
// (`ndem-testkit`'s documentation).
#[cfg(test)]
extern crate self as ndem_solve;
#[cfg(test)]
#[allow(dead_code, unused_imports)]
#[path = "../../ndem-testkit/src/generate/mod.rs"]
mod generate;
#[cfg(test)]
#[allow(dead_code)]
#[path = "../../ndem-testkit/src/strategies.rs"]
mod strategies;

pub use apgd::Apgd;
pub use compatible::{TrussSettings, TrussSolution, compatible_forces, truss_forces};
pub use coulomb_apgd::{CoulombApgd, CoulombApgdSettings};
pub use error::SolveError;
pub use history::{HistoryEntry, ResidualHistory};
pub use jacobi::{JacobiSettings, ProjectedJacobi};
pub use local_apgd::LocalApgd;
pub use local_gs::{GlobalGaussSeidel, LocalGaussSeidel};
pub use local_portfolio::LocalPortfolio;
pub use local_problem::{GlobalProblem, LocalProblem};
pub use local_prox::ProximalPoint;
pub use local_solver::{LocalIteration, LocalObserver, LocalReport, LocalSolver, LocalTask};
pub use masses::InverseMasses;
pub use metrics::{ResidualEvaluator, ResidualStats, coulomb_merit};
pub use newton::{NewtonSettings, SemismoothNewton};
pub use pgs::{HubRows, JointRows, PgsSettings, PgsVariant, ProjectedGaussSeidel};
pub use pgs_subdomain::{SubdomainCoupling, SubdomainPgs, SubdomainSweep};
pub use problem::{
    Contact, ContactBuilder, ContactFillError, ContactIter, ContactModel, ContactProblem,
    ContactRows, Contacts, FrictionSet, GenericRow, ProblemStorage, RowBounds,
};
pub use qp::{ApgdSettings, BoxConeSet, solve_qp};
pub use solver::{
    ContactOrder, DEFAULT_TOLERANCE, IterationRecord, NoObserver, Observer, SolveReport, SolveTask,
    Solver, SolverScratch, SolverStatus, StartVelocity, Stopping,
};
pub use warm_start::{
    ColdStart, HistoryWarmStart, ImpulseHistory, ModelWarmStart, Safeguarded, StoredImpulse,
    WarmRows, WarmStart, WarmStartStats, solve_warm_started,
};

/// How many contacts ahead of their use the loops over a problem's
/// contacts (PGS sweeps, residual statistics, `v = v* + M⁻¹Gᵀλ`) ask for a
/// contact's bodies ([`ndem_par::prefetch`]): on a problem larger than the
/// cache the contacts come in a stream the processor fetches ahead by
/// itself, their bodies do not (8 measured best of 4, 8 and 16 on the
/// settled 10⁵ bed; `docs/performance.md`, "NDEM step").
pub(crate) const PREFETCH_AHEAD: usize = 8;

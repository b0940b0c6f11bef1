//! # ndem-mpi
//!
//! Distributed runs of both steppers by domain decomposition, on MPI
//! (feature `mpi`: rsmpi over the system's MPI) or on threads of one
//! process standing in for ranks ([`run_on_threads`], for tests and
//! machines without MPI).
//!
//! - [`Decomposition`]: recursive coordinate bisection of space into one
//!   box per rank, balanced by particle count and recomputed as the
//!   particles move.
//! - [`Domain`]: one rank's bodies: owned ones, ghost copies of its
//!   neighbours' bodies within reach, and the static and kinematic bodies
//!   every rank holds, in a local world ordered by global index; migration
//!   of bodies that leave their box, with the contact state that involves
//!   them.
//! - [`emit()`]: emitters run alike on every rank, their particles owned
//!   by the rank whose box holds them.
//! - [`DistributedSmooth`]: the smooth DEM step; bit-identical to one rank.
//! - [`DistributedNdem`]: the NDEM (SPOOK) step with the subdomain PGS of
//!   Preclik and Rüde (2015) ([`ndem_solve::SubdomainPgs`]): contacts owned
//!   by one rank, Gauss-Seidel inside a subdomain, the velocity corrections
//!   of shared bodies summed after each sweep; machines (jointed or
//!   non-sphere bodies) held by every rank; model reduction
//!   ([`DistributedNdem::set_reduction`]) with the same merge and split
//!   decisions on every rank.
//!
//! See `docs/distributed.md` for the algorithms, what depends on the rank
//! count, and measured scaling.
//!
//! Invariant: the decomposition talks to the solvers only through
//! [`ndem_solve::SubdomainCoupling`] and to the NDEM stepper's energy
//! guard only through [`ndem_step::ScenePart`]; the steppers run
//! unchanged on each rank's local world, and model reduction's tests and
//! aggregate sums are `ndem_reduce`'s.

pub mod comm;
pub mod domain;
pub mod emit;
pub mod error;
pub mod ndem;
pub mod output;
pub mod partition;
pub mod smooth;

#[cfg(feature = "mpi")]
pub use comm::MpiComm;
pub use comm::{Communicator, ThreadComm, run_on_threads};
pub use domain::{Carried, Domain, DomainSettings, GhostReach, GlobalKey, Role};
pub use emit::emit;
pub use error::MpiError;
pub use ndem::{
    DistributedNdem, DistributedNdemSettings, DistributedNdemStats, DomainCoupling,
    ExchangeCounters,
};
pub use output::ParallelFrames;
pub use partition::{Decomposition, Subdomain};
pub use smooth::{DistributedSmooth, DistributedSmoothStats};

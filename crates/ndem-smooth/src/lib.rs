//! # ndem-smooth
//!
//! The smooth (penalty) DEM baseline of the smooth-versus-nonsmooth slides
//! and the reference of the compatible-contact-dynamics paper: Hertz-Mindlin
//! contacts (Hertz normal spring with a viscous damper chosen from a
//! restitution coefficient, Mindlin tangential spring with history and a
//! Coulomb cap, elastic-plastic rolling resistance) or linear
//! spring-dashpots, integrated explicitly (symplectic Euler with the exact
//! quaternion step) with a critical time-step check. It uses the same
//! [`ndem_step::World`] and collision detection as the NDEM stepper, so one
//! scene runs under either method.
//!
//! Invariant: `ndem-smooth` does not use `ndem-solve`: there is no contact
//! problem, forces follow from overlaps and velocities.

mod force;
pub mod law;
mod settings;
pub mod stepper;
pub mod verification;

pub use force::ContactHistory;
pub use law::{SmoothLaw, damping_for_restitution, restitution_of_damping};
pub use stepper::{SmoothError, SmoothSettings, SmoothStats, SmoothStepper};

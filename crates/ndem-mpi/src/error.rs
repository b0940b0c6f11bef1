//! Errors of distributed runs.

use thiserror::Error;

/// Errors of a distributed run. Every rank returns the same error: a rank
/// that fails tells the others (a collective check after each step), so no
/// rank is left waiting in a collective call.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum MpiError {
    /// A subdomain is thinner than the largest particle along a cut axis:
    /// with fewer particles per rank than that, one particle would span
    /// more than two subdomains. Use fewer ranks or a larger scene.
    #[error(
        "subdomain of rank {rank} is {width:.3e} m wide along axis {axis}, smaller than the largest particle ({diameter:.3e} m); use fewer ranks"
    )]
    SubdomainTooSmall {
        /// Rank whose subdomain is too thin.
        rank: usize,
        /// Cut axis (0 = x, 1 = y, 2 = z).
        axis: usize,
        /// Subdomain width along it \[m\].
        width: f64,
        /// Largest particle diameter \[m\].
        diameter: f64,
    },
    /// A scene feature the decomposition does not support.
    #[error("body {body}: {reason} (not supported in distributed runs)")]
    Unsupported {
        /// Global index of the body (or joint) concerned.
        body: usize,
        /// What is unsupported.
        reason: &'static str,
    },
    /// A joint the distributed step cannot hold.
    #[error(
        "joint {joint} between bodies {bodies:?}: {reason} (not supported in distributed runs)"
    )]
    UnsupportedJoint {
        /// Index of the joint in the scene.
        joint: usize,
        /// Its bodies (global indices).
        bodies: [usize; 2],
        /// What is unsupported.
        reason: &'static str,
    },
    /// Invalid setting.
    #[error("invalid setting `{field}`: {reason}")]
    InvalidSettings {
        /// Field.
        field: &'static str,
        /// Reason.
        reason: &'static str,
    },
    /// A checkpoint that does not fit this run.
    #[error("checkpoint field `{field}`: {reason}")]
    Checkpoint {
        /// Field.
        field: &'static str,
        /// Reason.
        reason: String,
    },
    /// A step failed on some rank; every rank reports the first failing
    /// rank's error.
    #[error("rank {rank}: {message}")]
    Step {
        /// First rank (lowest) whose step failed.
        rank: usize,
        /// Its error.
        message: String,
    },
    /// Writing output failed.
    #[error("output {path}: {message}")]
    Output {
        /// File.
        path: String,
        /// Error.
        message: String,
    },
}

ndem_math::setting_error!(MpiError);

//! One error type at the facade ([`Error`](enum@Error)): every crate's error converts
//! into it, so a program over `ndem` returns `Result<_, ndem::Error>` and
//! uses `?` on any of them. Each variant keeps the crate's error, with the
//! field, body or step it names.

use thiserror::Error;

/// Any error of the ndem crates.
#[derive(Debug, Error)]
pub enum Error {
    /// Spatial algebra and contact parameters (`ndem_math`).
    #[error(transparent)]
    Math(#[from] ndem_math::MathError),
    /// Threads a setting asks for that the system refused (`ndem_par`).
    #[error(transparent)]
    Threads(#[from] ndem_par::ThreadsRefused),
    /// Shapes and contact detection (`ndem_collide`).
    #[error(transparent)]
    Collide(#[from] ndem_collide::CollideError),
    /// Contact problems and solvers (`ndem_solve`).
    #[error(transparent)]
    Solve(#[from] ndem_solve::SolveError),
    /// FCLIB files (`ndem_fclib`).
    #[error(transparent)]
    Fclib(#[from] ndem_fclib::FclibError),
    /// Worlds and the SPOOK stepper (`ndem_step`).
    #[error(transparent)]
    Step(#[from] ndem_step::StepError),
    /// Model reduction (`ndem_reduce`).
    #[error(transparent)]
    Reduce(#[from] ndem_reduce::ReduceError),
    /// The smooth (penalty) DEM stepper (`ndem_smooth`).
    #[error(transparent)]
    Smooth(#[from] ndem_smooth::SmoothError),
    /// Scenes, scene files and checkpoints (`ndem_scenes`, [`crate::checkpoint`]).
    #[error(transparent)]
    Scene(#[from] ndem_scenes::SceneError),
    /// Reading or writing files ([`crate::output`]).
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_crate_error_converts_and_keeps_its_message() {
        let step = ndem_step::StepError::EmptyScene;
        let message = step.to_string();
        let e: Error = step.into();
        assert!(matches!(e, Error::Step(_)));
        assert_eq!(e.to_string(), message);
        let solve: Error = ndem_solve::SolveError::InvalidSettings {
            field: "armijo",
            reason: "must be in (0, 0.5)",
        }
        .into();
        assert!(solve.to_string().contains("armijo"), "{solve}");
        fn read() -> Result<(), Error> {
            std::fs::read("/nonexistent/ndem")?;
            Ok(())
        }
        assert!(matches!(read(), Err(Error::Io(_))));
    }
}

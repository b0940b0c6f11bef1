//! Solver and warm-start choices of a scene, as data (scene files, CLI).

use ndem_solve::{
    Apgd, ApgdSettings, ColdStart, HistoryWarmStart, JacobiSettings, JointRows, ModelWarmStart,
    PgsSettings, PgsVariant, ProjectedGaussSeidel, ProjectedJacobi, Safeguarded, SolveError,
    Solver, Stopping, WarmStart,
};
use serde::{Deserialize, Serialize};

/// A name that is none of a choice's names; displays as
/// ``unknown `name` (one of a, b, c)``.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown `{name}` (one of {})", .choices.join(", "))]
pub struct UnknownName {
    /// The name given.
    pub name: String,
    /// The names there are.
    pub choices: Vec<&'static str>,
}

/// The element of `all` that `name_of` calls `name`.
pub fn by_name<T: Copy>(
    all: &[T],
    name_of: impl Fn(T) -> &'static str,
    name: &str,
) -> Result<T, UnknownName> {
    all.iter()
        .copied()
        .find(|&c| name_of(c) == name)
        .ok_or_else(|| UnknownName {
            name: name.to_string(),
            choices: all.iter().map(|&c| name_of(c)).collect(),
        })
}

/// Which continuous-stage solver to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SolverChoice {
    /// Row-wise projected Gauss-Seidel (the papers').
    #[default]
    Pgs,
    /// Blocked projected Gauss-Seidel.
    PgsBlocked,
    /// Row-wise PGS for contacts with a direct solve of the joint rows
    /// each sweep (the warm-starting paper's split solver for machines).
    PgsDirect,
    /// Projected Jacobi (parallel).
    Jacobi,
    /// Accelerated projected gradient descent.
    Apgd,
    /// Row-wise PGS in the coloured contact order
    /// ([`ndem_solve::ContactOrder::Coloured`]), swept on the scene's
    /// threads: the same result on any number of threads (another order
    /// than [`SolverChoice::Pgs`], so not the same result as it).
    PgsColoured,
    /// [`SolverChoice::PgsDirect`]'s split solver with the contacts swept
    /// in the coloured order on the scene's threads (the joint block's
    /// direct solve stays on one thread after each sweep): the same result
    /// on any number of threads, not the same as `pgs-direct`'s.
    PgsDirectColoured,
}

impl SolverChoice {
    /// Every choice, in the order of the docs.
    pub const ALL: [SolverChoice; 7] = [
        SolverChoice::Pgs,
        SolverChoice::PgsBlocked,
        SolverChoice::PgsDirect,
        SolverChoice::Jacobi,
        SolverChoice::Apgd,
        SolverChoice::PgsColoured,
        SolverChoice::PgsDirectColoured,
    ];

    /// The choice called `name` ([`Self::name`]), or the error that lists
    /// the names.
    pub fn parse(name: &str) -> Result<Self, UnknownName> {
        by_name(&Self::ALL, Self::name, name)
    }

    /// Builds the solver with `iterations` per step, on one thread.
    pub fn build(self, iterations: usize) -> Result<Box<dyn Solver>, SolveError> {
        self.build_on(iterations, 1)
    }

    /// Builds the solver with `iterations` per step; the choices that can
    /// use several threads use `threads` (0: every core).
    pub fn build_on(
        self,
        iterations: usize,
        threads: usize,
    ) -> Result<Box<dyn Solver>, SolveError> {
        let stopping = Stopping::iterations(iterations);
        Ok(match self {
            SolverChoice::PgsColoured => Box::new(ProjectedGaussSeidel::new(
                PgsSettings::coloured(stopping, threads),
            )?),
            SolverChoice::Pgs => Box::new(ProjectedGaussSeidel::with_stopping(stopping)?),
            SolverChoice::PgsBlocked => Box::new(ProjectedGaussSeidel::new(PgsSettings {
                stopping,
                variant: PgsVariant::Blocked,
                ..PgsSettings::default()
            })?),
            SolverChoice::PgsDirect => Box::new(ProjectedGaussSeidel::new(PgsSettings {
                stopping,
                joints: JointRows::Direct,
                ..PgsSettings::default()
            })?),
            SolverChoice::PgsDirectColoured => Box::new(ProjectedGaussSeidel::new(PgsSettings {
                joints: JointRows::Direct,
                ..PgsSettings::coloured(stopping, threads)
            })?),
            SolverChoice::Jacobi => Box::new(ProjectedJacobi::new(JacobiSettings {
                stopping,
                threads,
                ..JacobiSettings::default()
            })?),
            SolverChoice::Apgd => Box::new(Apgd::new(ApgdSettings {
                stopping,
                ..ApgdSettings::default()
            })?),
        })
    }

    /// Whether the continuous-stage solve itself uses several threads
    /// (`pgs-coloured`, `pgs-direct-coloured` and `jacobi` on the scene's
    /// threads); the
    /// other choices solve on one thread whatever the scene's `threads`,
    /// which then serve detection and assembly only.
    pub fn solves_on_threads(self) -> bool {
        matches!(
            self,
            SolverChoice::PgsColoured | SolverChoice::PgsDirectColoured | SolverChoice::Jacobi
        )
    }

    /// Whether the choice solves the joint rows directly after each sweep
    /// (`pgs-direct`, `pgs-direct-coloured`).
    pub fn solves_joints_directly(self) -> bool {
        matches!(
            self,
            SolverChoice::PgsDirect | SolverChoice::PgsDirectColoured
        )
    }

    /// The impact-stage solver that goes with this choice, when it is not
    /// the stepper's default (PGS in the problem's order to 1e-10 within
    /// `impact_iterations` sweeps): `pgs-coloured` and `pgs-direct-coloured`
    /// run the impact stage in the coloured order on the same `threads`,
    /// with the same stopping rule (joint rows row by row, as in the
    /// default impact stage).
    pub fn impact_solver(
        self,
        impact_iterations: usize,
        threads: usize,
    ) -> Result<Option<Box<dyn Solver>>, SolveError> {
        Ok(match self {
            SolverChoice::PgsColoured | SolverChoice::PgsDirectColoured => {
                Some(Box::new(ProjectedGaussSeidel::new(PgsSettings::coloured(
                    Stopping::to_tolerance(impact_iterations.max(1), 1e-10),
                    threads,
                ))?))
            }
            _ => None,
        })
    }

    /// Name as in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SolverChoice::Pgs => "pgs",
            SolverChoice::PgsBlocked => "pgs-blocked",
            SolverChoice::PgsDirect => "pgs-direct",
            SolverChoice::Jacobi => "jacobi",
            SolverChoice::Apgd => "apgd",
            SolverChoice::PgsColoured => "pgs-coloured",
            SolverChoice::PgsDirectColoured => "pgs-direct-coloured",
        }
    }
}

/// Which warm-start policy to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum WarmStartChoice {
    /// λ₀ = 0.
    Cold,
    /// History with β = 0.85 on all rows and the velocity update.
    #[default]
    History,
    /// Model-based (eqs. 9-11), kept only where it beats the cold start
    /// ([`Safeguarded`]): stable on stiff materials.
    Model,
    /// Model-based exactly as the paper's eqs. 9-11, unguarded (injects
    /// energy on stiff materials; see docs/solvers.md).
    ModelRaw,
    /// History with the velocity update, kept only where it beats the cold
    /// start ([`Safeguarded`]).
    SafeguardedHistory,
}

impl WarmStartChoice {
    /// Every choice, in the order of the docs.
    pub const ALL: [WarmStartChoice; 5] = [
        WarmStartChoice::Cold,
        WarmStartChoice::History,
        WarmStartChoice::Model,
        WarmStartChoice::ModelRaw,
        WarmStartChoice::SafeguardedHistory,
    ];

    /// The choice called `name` ([`Self::name`]), or the error that lists
    /// the names.
    pub fn parse(name: &str) -> Result<Self, UnknownName> {
        by_name(&Self::ALL, Self::name, name)
    }

    /// Builds the policy.
    pub fn build(self) -> Box<dyn WarmStart> {
        match self {
            WarmStartChoice::Cold => Box::new(ColdStart),
            WarmStartChoice::History => Box::new(HistoryWarmStart::default()),
            WarmStartChoice::Model => Box::new(Safeguarded::new(ModelWarmStart)),
            WarmStartChoice::ModelRaw => Box::new(ModelWarmStart),
            WarmStartChoice::SafeguardedHistory => {
                Box::new(Safeguarded::new(HistoryWarmStart::default()))
            }
        }
    }

    /// Name as in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            WarmStartChoice::Cold => "cold",
            WarmStartChoice::History => "history",
            WarmStartChoice::Model => "model",
            WarmStartChoice::ModelRaw => "model-raw",
            WarmStartChoice::SafeguardedHistory => "safeguarded-history",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every solver choice is found by its name, in scene files too
    /// (kebab-case), and builds; the solver's own name says its order and
    /// its joint treatment.
    #[test]
    fn every_solver_choice_parses_by_name_and_builds() {
        #[derive(Deserialize)]
        struct Run {
            solver: SolverChoice,
        }
        for choice in SolverChoice::ALL {
            assert_eq!(SolverChoice::parse(choice.name()), Ok(choice));
            let run: Run = toml::from_str(&format!("solver = \"{}\"", choice.name())).unwrap();
            assert_eq!(run.solver, choice);
            let solver = choice.build_on(25, 2).unwrap();
            let expected = match choice {
                SolverChoice::Pgs => "pgs",
                SolverChoice::PgsBlocked => "pgs-blocked",
                SolverChoice::PgsDirect => "pgs+direct",
                SolverChoice::Jacobi => "jacobi",
                SolverChoice::Apgd => "apgd",
                SolverChoice::PgsColoured => "pgs-coloured",
                SolverChoice::PgsDirectColoured => "pgs-coloured+direct",
            };
            assert_eq!(solver.name(), expected, "{choice:?}");
        }
        assert!(SolverChoice::parse("pgs-colored").is_err());
    }

    /// The coloured choices sweep on the scene's threads and take a
    /// coloured impact stage with the stepper's stopping rule; the others
    /// keep the stepper's default impact stage. The direct choices, and
    /// only they, solve the joint rows directly.
    #[test]
    fn coloured_and_direct_choices_say_so() {
        for choice in SolverChoice::ALL {
            let coloured = matches!(
                choice,
                SolverChoice::PgsColoured | SolverChoice::PgsDirectColoured
            );
            let threads = coloured || choice == SolverChoice::Jacobi;
            assert_eq!(choice.solves_on_threads(), threads, "{choice:?}");
            let impact = choice.impact_solver(20, 2).unwrap();
            assert_eq!(impact.is_some(), coloured, "{choice:?}");
            if let Some(impact) = impact {
                assert_eq!(impact.name(), "pgs-coloured");
                assert_eq!(impact.stopping(), Stopping::to_tolerance(20, 1e-10));
            }
            let direct = matches!(
                choice,
                SolverChoice::PgsDirect | SolverChoice::PgsDirectColoured
            );
            assert_eq!(choice.solves_joints_directly(), direct, "{choice:?}");
        }
    }
}

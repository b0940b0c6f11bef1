//! Step 1 of compatible contact dynamics on a packing at rest
//! (compatible-contact-dynamics paper, section 7; `docs/theory.md`, "Compatible
//! contact dynamics"): a contact-dynamics solve whose velocity change is
//! the static load.
//!
//! A rigid, over-coordinated packing settled with a fixed number of sweeps
//! keeps creeping: its last step carries residual accelerations in the load
//! `M(v⁺ − v*)/Δt` and leaves some touching pairs open by fractions of a
//! micrometre, and the truss problem takes both at face value. The static
//! solve removes both: the settled positions at rest (all velocities zero),
//! a contact margin so that touching pairs are in the network, no SPOOK
//! position correction (`Υ_n → 0`), and APGD to a tight tolerance.

use crate::error::SceneError;
use crate::scene::Scene;
use ndem_math::{ContactLaw, Velocity6};
use ndem_solve::{
    Apgd, ApgdSettings, ColdStart, ContactProblem, ProjectedGaussSeidel, Solver, Stopping,
};
use ndem_step::{StepError, StepStats, Stepper};

/// Settings of [`static_solve`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StaticSolveSettings {
    /// Contact margin \[m\]: pairs closer than this are in the network
    /// (choose it far below the gaps of pairs that should not touch).
    pub margin: f64,
    /// APGD iteration cap and projected-gradient tolerance.
    pub stopping: Stopping,
}

impl Default for StaticSolveSettings {
    fn default() -> Self {
        Self {
            margin: 1e-3 * 0.5 * crate::params::D,
            stopping: Stopping::to_tolerance(50_000, 1e-12),
        }
    }
}

/// The static solve of a settled scene: the scene one step later (at rest,
/// positions unchanged up to the solve's residual) and the stepper whose
/// [`Stepper::last_problem`] holds the problem and multipliers of step 1.
pub struct StaticSolve {
    /// The scene after the solve.
    pub scene: Scene,
    /// The stepper that took the step.
    pub stepper: Stepper,
    /// The step's statistics (iterations, residuals).
    pub stats: StepStats,
}

impl StaticSolve {
    /// The problem and multipliers of the static step, and the velocities
    /// `v⁺ = v* + M⁻¹Gᵀλ` they give (the input of
    /// [`ndem_solve::compatible_forces`]).
    pub fn step_one(&self) -> Option<(&ContactProblem, &[f64], Vec<Velocity6>)> {
        let (problem, lambda) = self.stepper.last_problem()?;
        let mut velocity = vec![Velocity6::ZERO; problem.body_count()];
        problem.velocity_from(lambda, &mut velocity).ok()?;
        Some((problem, lambda, velocity))
    }
}

/// Solves the contact problem of `settled` at rest (see the module docs).
pub fn static_solve(
    settled: &Scene,
    settings: &StaticSolveSettings,
) -> Result<StaticSolve, SceneError> {
    if !(settings.margin.is_finite() && settings.margin >= 0.0) {
        return Err(SceneError::Invalid {
            field: "margin",
            reason: format!("{} is not a finite value >= 0", settings.margin),
        });
    }
    let mut scene = settled.clone();
    for v in scene.world.state_mut().2 {
        *v = Velocity6::ZERO;
    }
    scene.settings.margin = settings.margin;
    scene.settings.spook.relaxation_steps = 1e12;
    let apgd = Apgd::new(ApgdSettings {
        stopping: settings.stopping,
        ..ApgdSettings::default()
    })
    .map_err(StepError::from)?;
    let mut stepper = Stepper::new(scene.settings, Box::new(apgd), Box::new(ColdStart))?;
    let stats = scene.step(&mut stepper)?;
    Ok(StaticSolve {
        scene,
        stepper,
        stats,
    })
}

/// How [`network_forces`] computes the contact forces of a packing at rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForceMethod {
    /// PGS to 1e-10 on one step of the scene at rest under the run's own
    /// settings (contact law, compliances, margin): the forces the run's
    /// contact law gives at the settled positions, which are the run's own
    /// contact forces once it rests. Under the rigid law, one of the many
    /// force sets of an over-coordinated packing (the one Gauss-Seidel's
    /// order picks).
    Pgs,
    /// APGD to 1e-12 on the same step as [`ForceMethod::Pgs`].
    Apgd,
    /// Compatible contact dynamics: the static load of the static solve
    /// ([`static_solve`]) carried by the no-tension truss of least
    /// complementary energy (compatible-contact-dynamics paper, eqs.
    /// 36-37), with each contact's stiffness `k_n` and exponent as the
    /// run's contact law forms them ([`truss_stiffness`]).
    Compatible,
}

impl ForceMethod {
    /// Every method, with its command-line name.
    pub const ALL: [(ForceMethod, &'static str); 3] = [
        (ForceMethod::Pgs, "pgs"),
        (ForceMethod::Apgd, "apgd"),
        (ForceMethod::Compatible, "compatible"),
    ];

    /// The method by its command-line name, or the error that lists the
    /// names.
    pub fn parse(name: &str) -> Result<Self, crate::choice::UnknownName> {
        crate::choice::by_name(&Self::ALL, |(_, n)| n, name).map(|(m, _)| m)
    }
}

/// One contact's normal force in a packing at rest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NetworkForce {
    /// Body a (the normal points from b to a).
    pub body_a: usize,
    /// Body b.
    pub body_b: usize,
    /// Unit normal.
    pub normal: ndem_math::Vec3,
    /// Normal force \[N\].
    pub force: f64,
}

impl From<ndem_step::ContactForce> for NetworkForce {
    /// A stepper's contact force: its bodies, normal and normal force.
    fn from(f: ndem_step::ContactForce) -> Self {
        NetworkForce {
            body_a: f.key.body_a as usize,
            body_b: f.key.body_b as usize,
            normal: f.normal,
            force: f.normal_force,
        }
    }
}

/// The contact forces of the settled scene `settled` by `method`
/// ([`ForceMethod`]), per contact, with the equilibrium residual of the
/// compatible truss where it applies.
pub fn network_forces(
    settled: &Scene,
    method: ForceMethod,
) -> Result<(Vec<NetworkForce>, Option<f64>), SceneError> {
    let solver: Box<dyn Solver> = match method {
        ForceMethod::Compatible => return compatible_network_forces(settled),
        ForceMethod::Pgs => Box::new(
            ProjectedGaussSeidel::with_stopping(Stopping::to_tolerance(100_000, 1e-10))
                .map_err(StepError::from)?,
        ),
        ForceMethod::Apgd => Box::new(
            Apgd::new(ApgdSettings {
                stopping: Stopping::to_tolerance(50_000, 1e-12),
                ..ApgdSettings::default()
            })
            .map_err(StepError::from)?,
        ),
    };
    let mut scene = settled.clone();
    for v in scene.world.state_mut().2 {
        *v = Velocity6::ZERO;
    }
    let mut stepper = Stepper::new(scene.settings, solver, Box::new(ColdStart))?;
    scene.step(&mut stepper)?;
    let forces = stepper
        .contact_forces_iter()
        .map(NetworkForce::from)
        .collect();
    Ok((forces, None))
}

/// [`ForceMethod::Compatible`]: the truss on the static solve's load.
fn compatible_network_forces(
    settled: &Scene,
) -> Result<(Vec<NetworkForce>, Option<f64>), SceneError> {
    let solved = static_solve(settled, &StaticSolveSettings::default())?;
    let Some((problem, _, velocity)) = solved.step_one() else {
        return Ok((Vec::new(), None));
    };
    let (stiffness, exponent) = truss_stiffness(settled, &solved)?;
    let truss = ndem_solve::compatible_forces(
        problem,
        &velocity,
        &stiffness,
        &ndem_solve::TrussSettings {
            exponent,
            tolerance: 1e-8,
            ..ndem_solve::TrussSettings::default()
        },
    )
    .map_err(StepError::from)?;
    let forces = problem
        .contacts()
        .iter()
        .zip(&truss.forces)
        .map(|(c, &force)| NetworkForce {
            body_a: c.bodies[0] as usize,
            body_b: c.bodies[1] as usize,
            normal: c.jacobian.direction(0),
            force,
        })
        .collect();
    Ok((forces, Some(truss.residual)))
}

/// The stiffness `k_n` of each contact of the static solve's problem and
/// the exponent of the force law `f = k_n δ^p`, as the run's contact law
/// forms them ([`Stepper::last_contact_parameters`]): Hertz,
/// `k_n = (4/3) E* √R*` with `E*` from the materials or the pair's
/// `effective_modulus`, `p = 3/2`; linear, the law's stiffness or the
/// materials' / pair's `linear_stiffness`, `p = 1`. A rigid law has no
/// stiffness: its compatible forces are those of the materials' Hertz
/// contact (`E*`, `R*`, `p = 3/2`), the elastic contact the rigid bodies
/// stand for.
pub fn truss_stiffness(
    settled: &Scene,
    solved: &StaticSolve,
) -> Result<(Vec<f64>, f64), SceneError> {
    let law = match settled.settings.contact_law {
        ContactLaw::Rigid => ContactLaw::Hertz,
        law => law,
    };
    let exponent = match law {
        ContactLaw::Hertz => 1.5,
        _ => 1.0,
    };
    let params = solved
        .stepper
        .last_contact_parameters(&solved.scene.world, law)?;
    Ok((params.iter().map(|p| p.stiffness).collect(), exponent))
}

//! Compatible contact dynamics (the compatible-contact-dynamics paper;
//! `docs/theory.md`, "Compatible contact dynamics"): the contact forces of an
//! over-coordinated packing are not unique in rigid contact dynamics, but
//! the generalized contact load is. Among all non-negative normal forces
//! that transmit that load (the equilibrium of a no-tension truss on the
//! contact network) this picks the one that minimises the complementary
//! energy of power-law springs, `Σ_α φ*_α(f_α)`,
//! `φ*(f) = p/(p+1) k̂^{−1/p} f^{(p+1)/p}` (Hookean `p = 1`, Hertzian
//! `p = 3/2`; only relative stiffnesses `k̂` matter): the forces a stiff
//! elastic DEM would produce.
//!
//! Algorithm: step 1, any frictionless contact-dynamics solve of a
//! [`ContactProblem`] gives `v⁺`; step 2, the generalized contact impulse
//! `M(v⁺ − v*)` on the dynamic degrees of freedom is the load `F Δt`; step
//! 3, the truss problem `min Φ(f) s.t. Jᵀ f = F, f ≥ 0` is solved by an
//! augmented Lagrangian (LANCELOT-style multiplier and penalty updates)
//! whose bound-constrained subproblems are solved by APGD with
//! backtracking ([`crate::qp::apgd_minimize`]).

use crate::SolveError;
use crate::problem::ContactProblem;
use crate::qp::{ApgdSettings, ApgdWorkspace, BoxConeSet, SmoothObjective, apgd_minimize};
use crate::solver::Stopping;
use ndem_math::SettingError;
use ndem_math::Velocity6;

/// Settings of the truss solve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrussSettings {
    /// Power-law exponent p (1 Hookean, 1.5 Hertzian).
    pub exponent: f64,
    /// Relative tolerance on the equilibrium residual `‖Jᵀf − F‖/‖F‖`.
    pub tolerance: f64,
    /// Outer (multiplier) iterations at most.
    pub max_outer: usize,
    /// APGD iterations per subproblem at most.
    pub max_inner: usize,
}

impl Default for TrussSettings {
    fn default() -> Self {
        Self {
            exponent: 1.0,
            tolerance: 1e-10,
            max_outer: 60,
            max_inner: 20_000,
        }
    }
}

/// Result of the truss solve.
#[derive(Debug, Clone, PartialEq)]
pub struct TrussSolution {
    /// Normal force per contact \[N\] (problem order).
    pub forces: Vec<f64>,
    /// Relative equilibrium residual `‖Jᵀf − F‖/‖F‖`.
    pub residual: f64,
    /// Outer iterations.
    pub outer_iterations: usize,
    /// APGD iterations in total.
    pub inner_iterations: usize,
    /// Whether the tolerance was met.
    pub converged: bool,
}

/// The equilibrium operator of the contact network on the dynamic degrees
/// of freedom: `Jᵀ f` with unit-scaled normal rows.
struct Network<'a> {
    problem: &'a ContactProblem,
    dynamic: Vec<bool>,
}

impl Network<'_> {
    /// `out = Σ_α J_αᵀ f_α` (zero on non-dynamic bodies).
    fn transpose_apply(&self, f: &[f64], out: &mut [Velocity6]) {
        out.fill(Velocity6::ZERO);
        for (c, &fa) in self.problem.records().iter().zip(f) {
            let [a, b] = c.bodies.map(|x| x as usize);
            let mut jac = c.jacobian;
            jac.normal_scale = 1.0;
            let (ia, ib) = jac.transpose_apply(&[fa]);
            if self.dynamic[a] {
                out[a] += ia;
            }
            if self.dynamic[b] {
                out[b] += ib;
            }
        }
    }

    /// `out_α = J_α · y`.
    fn apply(&self, y: &[Velocity6], out: &mut [f64]) {
        for (c, o) in self.problem.records().iter().zip(out.iter_mut()) {
            let [a, b] = c.bodies.map(|x| x as usize);
            let mut jac = c.jacobian;
            jac.normal_scale = 1.0;
            let ya = if self.dynamic[a] {
                y[a]
            } else {
                Velocity6::ZERO
            };
            let yb = if self.dynamic[b] {
                y[b]
            } else {
                Velocity6::ZERO
            };
            *o = jac.normal_velocity(&ya, &yb);
        }
    }
}

fn norm(v: &[Velocity6]) -> f64 {
    v.iter().map(|x| x.dot(x)).sum::<f64>().sqrt()
}

/// The augmented Lagrangian `Φ(f) − yᵀc + ½ρ‖c‖²`, `c = Jᵀf − F`.
struct Augmented<'a> {
    net: &'a Network<'a>,
    load: &'a [Velocity6],
    stiffness: &'a [f64],
    p: f64,
    y: &'a [Velocity6],
    rho: f64,
    c: Vec<Velocity6>,
    w: Vec<Velocity6>,
}

impl SmoothObjective for Augmented<'_> {
    fn dim(&self) -> usize {
        self.stiffness.len()
    }
    fn value_gradient(&mut self, f: &[f64], grad: &mut [f64]) -> f64 {
        self.net.transpose_apply(f, &mut self.c);
        for (c, l) in self.c.iter_mut().zip(self.load) {
            *c = *c - *l;
        }
        let mut value = 0.0;
        for (i, w) in self.w.iter_mut().enumerate() {
            *w = self.c[i] * self.rho - self.y[i];
            value += -self.y[i].dot(&self.c[i]) + 0.5 * self.rho * self.c[i].dot(&self.c[i]);
        }
        self.net.apply(&self.w, grad);
        let q = (self.p + 1.0) / self.p;
        for (i, g) in grad.iter_mut().enumerate() {
            let fi = f[i].max(0.0);
            let kinv = self.stiffness[i].powf(-1.0 / self.p);
            value += self.p / (self.p + 1.0) * kinv * fi.powf(q);
            *g += kinv * fi.powf(1.0 / self.p);
        }
        value
    }
}

/// The sizes of `dynamic`, `load` (per body, `nb`) and `stiffness` (per
/// contact, `n`), positive finite stiffnesses and an exponent in `[1, 2]`.
fn check_truss_input(
    (nb, n): (usize, usize),
    (dynamic, load, stiffness): (&[bool], &[Velocity6], &[f64]),
    settings: &TrussSettings,
) -> Result<(), SolveError> {
    for (field, len, want) in [
        ("dynamic", dynamic.len(), nb),
        ("load", load.len(), nb),
        ("stiffness", stiffness.len(), n),
    ] {
        SolveError::require_len(field, want, len)?;
    }
    if let Some(i) = stiffness.iter().position(|k| !(k.is_finite() && *k > 0.0)) {
        return Err(SolveError::OutOfRange {
            field: "stiffness",
            index: i,
            value: stiffness[i],
            range: "(0, inf)",
        });
    }
    SolveError::require(
        settings.exponent >= 1.0 && settings.exponent <= 2.0,
        "exponent",
        "must lie in [1, 2]",
    )?;
    Ok(())
}

/// Solves the truss problem for the load `load` (per body, force units)
/// on the contact network of `problem` (its contacts' normal rows, unit
/// scaled), with relative contact stiffnesses `stiffness` (`k̂_α > 0`).
pub fn truss_forces(
    problem: &ContactProblem,
    dynamic: &[bool],
    load: &[Velocity6],
    stiffness: &[f64],
    settings: &TrussSettings,
) -> Result<TrussSolution, SolveError> {
    let n = problem.contacts().len();
    let nb = problem.body_count();
    check_truss_input((nb, n), (dynamic, load, stiffness), settings)?;
    // Scale: forces relative to the largest load component, stiffnesses
    // relative to the largest (the minimiser is invariant under both).
    let fscale = load
        .iter()
        .flat_map(|l| l.to_array())
        .fold(0.0f64, |a, b| a.max(b.abs()));
    if fscale == 0.0 || n == 0 {
        return Ok(TrussSolution {
            forces: vec![0.0; n],
            residual: 0.0,
            outer_iterations: 0,
            inner_iterations: 0,
            converged: true,
        });
    }
    let kscale = stiffness.iter().fold(0.0f64, |a, &b| a.max(b));
    let k: Vec<f64> = stiffness.iter().map(|x| x / kscale).collect();
    let masked: Vec<Velocity6> = load
        .iter()
        .zip(dynamic)
        .map(|(l, &d)| {
            if d {
                *l * (1.0 / fscale)
            } else {
                Velocity6::ZERO
            }
        })
        .collect();
    let net = Network {
        problem,
        dynamic: dynamic.to_vec(),
    };
    let fnorm = norm(&masked).max(1e-300);
    let mut f = vec![0.0; n];
    let mut y = vec![Velocity6::ZERO; nb];
    let mut rho = 10.0;
    let mut eta = 0.1f64;
    let mut omega = 0.1f64;
    let mut ws = ApgdWorkspace::default();
    let set = BoxConeSet::nonnegative(n);
    let mut inner_total = 0;
    let mut c = vec![Velocity6::ZERO; nb];
    let mut residual = f64::INFINITY;
    let mut outer = 0;
    let mut converged = false;
    while outer < settings.max_outer {
        outer += 1;
        let mut obj = Augmented {
            net: &net,
            load: &masked,
            stiffness: &k,
            p: settings.exponent,
            y: &y,
            rho,
            c: vec![Velocity6::ZERO; nb],
            w: vec![Velocity6::ZERO; nb],
        };
        let apgd = ApgdSettings {
            stopping: Stopping::to_tolerance(settings.max_inner, omega),
            ..ApgdSettings::default()
        };
        let rep = apgd_minimize(&mut obj, &set, &mut f, &apgd, &mut ws, &mut |_, _, _, _| {})?;
        inner_total += rep.iterations;
        net.transpose_apply(&f, &mut c);
        for (ci, l) in c.iter_mut().zip(&masked) {
            *ci = *ci - *l;
        }
        residual = norm(&c) / fnorm;
        if residual <= settings.tolerance && rep.residual <= 10.0 * settings.tolerance.max(1e-12) {
            converged = true;
            break;
        }
        if residual <= eta {
            for (yi, ci) in y.iter_mut().zip(&c) {
                *yi = *yi - *ci * rho;
            }
            eta /= rho.powf(0.9);
            omega /= rho;
        } else {
            rho *= 10.0;
            eta = 0.1 / rho.powf(0.1);
            omega = 0.1 / rho;
        }
        eta = eta.max(0.1 * settings.tolerance);
        omega = omega.max(0.1 * settings.tolerance);
    }
    Ok(TrussSolution {
        forces: f.iter().map(|x| x * fscale).collect(),
        residual,
        outer_iterations: outer,
        inner_iterations: inner_total,
        converged,
    })
}

/// The whole two-step algorithm on a frictionless problem: `lambda` and the
/// matching `velocity` are a contact-dynamics solution of `problem` (any
/// solver, step 1); the load is `M(v⁺ − v*)/Δt` on the dynamic bodies
/// (bodies with finite mass), and the returned forces are the compatible
/// normal forces \[N\] per contact.
pub fn compatible_forces(
    problem: &ContactProblem,
    velocity: &[Velocity6],
    stiffness: &[f64],
    settings: &TrussSettings,
) -> Result<TrussSolution, SolveError> {
    let nb = problem.body_count();
    SolveError::require_len("velocity", nb, velocity.len())?;
    let dt = problem.dt();
    let mut dynamic = vec![false; nb];
    let mut load = vec![Velocity6::ZERO; nb];
    for i in 0..nb {
        let m = &problem.inverse_mass().at(i);
        if m.inv_mass > 0.0 {
            dynamic[i] = true;
            let dv = velocity[i] - problem.free_velocity()[i];
            let inertia = m
                .inv_inertia
                .try_inverse()
                .unwrap_or_else(nalgebra::Matrix3::zeros);
            load[i] = Velocity6::new(dv.linear / (m.inv_mass * dt), inertia * dv.angular / dt);
        }
    }
    truss_forces(problem, &dynamic, &load, stiffness, settings)
}

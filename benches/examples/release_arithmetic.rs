//! A reproduction of the release-build discrepancy of `docs/performance.md`
//! ("A compiler defect"): the loop of
//! `ContactProblem::apply_impulses`, copied here with
//! `ContactJacobian::velocity_change` inlined into it, against the
//! library's own `ContactProblem::velocity_from` and the value an IEEE
//! evaluation of the same operations in the same order gives (computed
//! outside Rust, from the problem printed with `{:?}`).
//!
//! `cargo run --release -p ndem-benches --example release_arithmetic`
//! printed, with rustc 1.95.0 (LLVM 22.1) on x86-64 (SSE2): the copied loop
//! −2236361.1044109412, the library −2236361.0581080536 (the IEEE value).
//! With `RUSTFLAGS="-C llvm-args=-vectorize-slp=false"` both give the IEEE
//! value; so does the same loop written over plain `[f64; 3]` arrays
//! instead of nalgebra vectors. Exits with status 1 while the two differ.
//!
//! Cause: LLVM's SLP vectorizer emits broken IR for `apply`
//! (an instruction used before the load that defines it); `-Zverify-llvm-ir`
//! rejects it, Miri finds no undefined behaviour. This example is the
//! self-test of `cargo xtask codegen`, which builds the workspace with the
//! IR verifier on and expects this example, and nothing else, rejected.
//!
//! A problem keeps its contacts in parts and `contacts()` puts each
//! together when read; the loop over that view does not meet the defect,
//! so the loop here runs over a slice of whole `Contact`s, where it does.

use ndem_math::{InverseMass, Velocity6};
use ndem_solve::Contact;
use ndem_testkit::generate::{PackingSpec, sphere_packing};

/// `ω_x` of body 1 that an IEEE evaluation of the operations gives.
const IEEE: f64 = -2236361.0581080536;

/// `velocity += M⁻¹ Gᵀ λ`, as `ContactProblem::apply_impulses` wrote it
/// for a problem that keeps its contacts as a slice of whole `Contact`s.
#[inline(never)]
fn apply(
    (contacts, inv, m): (&[Contact], &[InverseMass], usize),
    lambda: &[f64],
    velocity: &mut [Velocity6],
) {
    for (c, lam) in contacts.iter().zip(lambda.chunks_exact(m)) {
        let [a, b] = c.bodies.map(|x| x as usize);
        let (dva, dvb) = c.jacobian.velocity_change(&inv[a], &inv[b], lam);
        velocity[a] += dva;
        velocity[b] += dvb;
    }
}

fn main() {
    let problem = sphere_packing(&PackingSpec {
        cells: [2, 1, 1],
        seed: 0,
        ..PackingSpec::default()
    })
    .expect("a valid spec");
    let lambda: Vec<f64> = (0..problem.len())
        .map(|i| ((i * 7919) % 13) as f64 * 0.1 - 0.3)
        .collect();
    let mut copied = problem.free_velocity().to_vec();
    let contacts: Vec<Contact> = problem.contacts().iter().collect();
    let m = problem.contact_rows().count();
    let inverse_mass = problem.inverse_mass().to_vec();
    apply((&contacts, &inverse_mass, m), &lambda, &mut copied);
    let mut library = vec![Velocity6::ZERO; problem.body_count()];
    problem
        .velocity_from(&lambda, &mut library)
        .expect("sizes match");
    let (x, y) = (copied[1].angular.x, library[1].angular.x);
    println!("copied loop {x:?}, library {y:?}, IEEE evaluation {IEEE:?}");
    if x.to_bits() != IEEE.to_bits() || y.to_bits() != IEEE.to_bits() {
        println!("the release arithmetic differs from the IEEE evaluation");
        std::process::exit(1);
    }
}

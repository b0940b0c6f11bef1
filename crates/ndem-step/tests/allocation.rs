//! After warm-up, a step of a resting bed allocates no vector whose size
//! grows with the contact count: the problems are assembled in the storage
//! of the last one released, and the multipliers and velocities reuse the
//! last step's vectors.
//! In a step with an impact the continuous solver lends its scratch to the
//! impact solver and takes it back (`Solver::take_scratch`,
//! `adopt_scratch`); a step of this resting bed has none.

use ndem_math::Material;
use ndem_step::MaterialId;
use ndem_step::*;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// 12 × 12 columns of 4 spheres of 10 mm, touching, on a floor.
fn bed() -> World {
    let mut w = World::on_floor(Material::default()).unwrap();
    let r = 0.005;
    w.add_sphere_stack(r, MaterialId::from_index(0), [12, 12, 4])
        .unwrap();
    w
}

#[test]
fn a_resting_step_allocates_nothing_that_grows_with_the_contacts() {
    let mut world = bed();
    let mut stepper = Stepper::with_warm_pgs(StepSettings::default(), 25).unwrap();
    let _profiler = dhat::Profiler::builder().testing().build();
    for _ in 0..100 {
        stepper.step(&mut world).unwrap();
    }
    let before = dhat::HeapStats::get();
    let steps = 20;
    let mut contacts = usize::MAX;
    for _ in 0..steps {
        contacts = contacts.min(stepper.step(&mut world).unwrap().contacts);
    }
    let after = dhat::HeapStats::get();
    let bytes = (after.total_bytes - before.total_bytes) as usize / steps;
    let blocks = (after.total_blocks - before.total_blocks) as usize / steps;
    eprintln!(
        "{contacts} contacts, {} bodies: {bytes} bytes in {blocks} blocks per step",
        world.len()
    );
    assert!(contacts >= 1000, "{contacts} contacts");
    // a vector that grows with the contacts takes at least 8 bytes per
    // contact (an index); what a step allocates is half of that at most
    // (measured: 996 bytes in 10 blocks per step for 1296 contacts, from the
    // neighbour list of the collision pass and the scoped threads'
    // bookkeeping, neither of which grows with the contacts)
    assert!(bytes < 4 * contacts, "{bytes} bytes per step");
}

//! Distributed runs on MPI ranks. Run by `.ci/run` as
//! `mpirun -np 1`, `-np 2` and `-np 3` on the built test binary (a plain
//! `cargo test --features mpi` runs it as one rank). Checks on every rank
//! that the run agrees with the serial stepper on the whole scene; exits
//! non-zero on the first failure.

mod common;

use ndem_mpi::*;
use ndem_smooth::{SmoothLaw, SmoothSettings, SmoothStepper, stepper::critical_time_step};
use ndem_step::MaterialId;
use ndem_step::World;

fn smooth_settings(w: &World) -> SmoothSettings {
    SmoothSettings::with_dt(0.1 * critical_time_step(w, &SmoothLaw::Hertz))
}

/// Smooth DEM on the MPI ranks against the serial stepper, bit for bit.
fn smooth_matches_serial(comm: MpiComm) -> Result<String, String> {
    let steps = 1500;
    let scene = common::bed(300, 0.2);
    let mut run = DistributedSmooth::new(
        comm,
        &scene,
        smooth_settings(&scene),
        DomainSettings::default(),
    )
    .map_err(|e| e.to_string())?;
    for _ in 0..steps {
        run.step().map_err(|e| e.to_string())?;
    }
    let Some(world) = run.gather().map_err(|e| e.to_string())? else {
        return Ok("gathered on rank 0".into());
    };
    let mut reference = scene.clone();
    let mut st =
        SmoothStepper::new(smooth_settings(&reference), &reference).map_err(|e| e.to_string())?;
    for _ in 0..steps {
        st.step(&mut reference).map_err(|e| e.to_string())?;
    }
    for i in 0..world.len() {
        if world.positions()[i] != reference.positions()[i]
            || world.velocities()[i] != reference.velocities()[i]
        {
            return Err(format!("body {i} differs from the serial run"));
        }
    }
    Ok(format!(
        "{} bodies bit-identical after {steps} steps, {} layout rebuilds",
        world.len(),
        run.domain().rebuilds()
    ))
}

/// A 16-sphere column: its rest state on the MPI ranks equals a one-rank
/// run's within 2e-11 m (the bound of `tests/ndem.rs`, which also says
/// where it comes from).
/// The bodies owned, summed over the ranks.
fn owned_total<C: Communicator + Clone + 'static>(run: &DistributedNdem<C>) -> f64 {
    run.domain().total(run.domain().owned_count()) as f64
}

fn column_rests_as_on_one_rank(comm: MpiComm) -> Result<String, String> {
    use ndem_math::{Material, Vec3};
    use ndem_step::BodyDesc;
    let mut scene = World::new(vec![Material::default()], Vec3::new(0.0, 0.0, -9.81))
        .map_err(|e| e.to_string())?;
    scene
        .add_body(BodyDesc::floor(MaterialId::from_index(0)))
        .map_err(|e| e.to_string())?;
    for i in 0..16 {
        let p = Vec3::new(0.0, 0.0, 0.005 + 0.01 * i as f64);
        scene
            .add_body(
                BodyDesc::sphere(0.005, MaterialId::from_index(0), p).map_err(|e| e.to_string())?,
            )
            .map_err(|e| e.to_string())?;
    }
    let mut s = DistributedNdemSettings::default();
    s.step.dt = 1e-3;
    s.pgs.stopping = ndem_solve::Stopping::to_tolerance(3000, 1e-10);
    let mut run = DistributedNdem::new(comm, &scene, s).map_err(|e| e.to_string())?;
    let mut owned_each_step = true;
    for _ in 0..300 {
        run.step().map_err(|e| e.to_string())?;
        let owned = owned_total(&run);
        owned_each_step &= owned as usize == 16;
    }
    if !owned_each_step {
        return Err("a body was lost or duplicated".into());
    }
    let Some(world) = run.gather().map_err(|e| e.to_string())? else {
        return Ok("gathered on rank 0".into());
    };
    let d = distance_from_one_rank(&world, &scene, &[], s, 300)?;
    if d > 2e-11 {
        return Err(format!("{d:.3e} m from the one-rank rest state"));
    }
    Ok(format!(
        "rest state {d:.3e} m from one rank's; every step owned each body once"
    ))
}

/// The largest distance of `world`'s bodies from those of a one-rank run
/// (thread rank) of `scene` for `steps` steps from `history`.
fn distance_from_one_rank(
    world: &World,
    scene: &World,
    history: &[(GlobalKey, ndem_solve::StoredImpulse)],
    s: DistributedNdemSettings,
    steps: usize,
) -> Result<f64, String> {
    let one = run_on_threads(1, |c| {
        let mut r = DistributedNdem::new(c, scene, s).map_err(|e| e.to_string())?;
        r.set_history(history);
        for _ in 0..steps {
            r.step().map_err(|e| e.to_string())?;
        }
        r.gather().map_err(|e| e.to_string())
    });
    let one = one
        .into_iter()
        .next()
        .ok_or("no rank")??
        .ok_or("not gathered")?;
    Ok((0..world.len())
        .map(|i| (world.positions()[i] - one.positions()[i]).norm())
        .fold(0.0, f64::max))
}

/// The jointed chain across the cut (`common::chain_on_a_row`, its
/// joints solved directly): after 200 steps of 1 ms, every solve
/// converged, the rest state is within 1e-9 m of a one-rank run's (the
/// bound of `tests/ndem/machines.rs`, which also says where it comes
/// from).
fn chain_settles_as_on_one_rank(comm: MpiComm) -> Result<String, String> {
    let scene = common::chain_on_a_row();
    let mut s = DistributedNdemSettings::default();
    s.step.dt = 1e-3;
    s.step.impact_iterations = 10_000;
    s.pgs.stopping = ndem_solve::Stopping::to_tolerance(10_000, 1e-10);
    s.pgs.joints = ndem_solve::JointRows::Direct;
    let mut run = DistributedNdem::new(comm, &scene, s).map_err(|e| e.to_string())?;
    let converged = |x: ndem_solve::SolverStatus| x == ndem_solve::SolverStatus::Converged;
    let mut all_converged = true;
    for _ in 0..200 {
        let st = run.step().map_err(|e| e.to_string())?;
        all_converged &= converged(st.local.status) && st.local.impact_status.is_none_or(converged);
    }
    if !all_converged {
        return Err("a solve did not converge".into());
    }
    let Some(world) = run.gather().map_err(|e| e.to_string())? else {
        return Ok("gathered on rank 0".into());
    };
    if world.joints().len() != 8 {
        return Err(format!("{} joints gathered, not 8", world.joints().len()));
    }
    let d = distance_from_one_rank(&world, &scene, &[], s, 200)?;
    if d > 1e-9 {
        return Err(format!("{d:.3e} m from the one-rank rest state"));
    }
    Ok(format!(
        "rest state {d:.3e} m from one rank's; every solve converged"
    ))
}

/// One check on the MPI ranks: a line to print, or what failed.
type Case = fn(MpiComm) -> Result<String, String>;

/// A pile falling across the cuts, then resting: every step the ranks own
/// every body once; after settling, 50 more warm-started steps on the MPI
/// ranks stay within 5e-8 m of one rank's (the bound of `tests/ndem.rs`).
fn pile_keeps_every_body_and_rests_as_on_one_rank(comm: MpiComm) -> Result<String, String> {
    let scene = common::bed(200, 0.2);
    let dynamic = scene.dynamic_count();
    let mut settle = DistributedNdemSettings::default();
    settle.step.dt = 1e-3;
    settle.pgs.stopping = ndem_solve::Stopping::to_tolerance(500, 1e-6);
    let mut run = DistributedNdem::new(comm, &scene, settle).map_err(|e| e.to_string())?;
    for _ in 0..1000 {
        run.step().map_err(|e| e.to_string())?;
        let owned = owned_total(&run);
        if owned as usize != dynamic {
            return Err(format!("{owned} bodies owned of {dynamic}"));
        }
    }
    // everyone needs the settled state: gather on rank 0, then rebuild
    // it on every rank from rank 0's copy
    let settled = run.gather().map_err(|e| e.to_string())?;
    let history = run.gather_history();
    let positions = broadcast_positions(comm, settled.as_ref(), &scene)?;
    let mut start = scene.clone();
    let (pos, ori, vel) = start.state_mut();
    for (i, (p, q, v)) in positions.into_iter().enumerate() {
        (pos[i], ori[i], vel[i]) = (p, q, v);
    }
    let history = broadcast_history(comm, history.unwrap_or_default());
    let mut s = settle;
    s.pgs.stopping = ndem_solve::Stopping::to_tolerance(3000, 1e-6);
    let mut many = DistributedNdem::new(comm, &start, s).map_err(|e| e.to_string())?;
    many.set_history(&history);
    for _ in 0..50 {
        many.step().map_err(|e| e.to_string())?;
    }
    let gathered = many.gather().map_err(|e| e.to_string())?;
    // every rank takes part in the reduced run
    let reduced = reduced_bed_as_on_one_rank(comm, &start, &history, s)?;
    let Some(world) = gathered else {
        return Ok("gathered on rank 0".into());
    };
    let d = distance_from_one_rank(&world, &start, &history, s, 50)?;
    if d > 5e-8 {
        return Err(format!("{d:.3e} m from the one-rank rest state"));
    }
    Ok(format!(
        "every step owned each of {dynamic} bodies once; rest state {d:.3e} m from one rank's; {reduced}"
    ))
}

/// The settled bed with model reduction on the MPI ranks: it merges into
/// the aggregates of a one-rank run (thread rank), whose members lie on
/// every rank, and after 20 steps rests within 5e-9 m of it (the bound of
/// `tests/ndem/aggregates.rs`, which says where it comes from).
fn reduced_bed_as_on_one_rank(
    comm: MpiComm,
    start: &World,
    history: &[(GlobalKey, ndem_solve::StoredImpulse)],
    s: DistributedNdemSettings,
) -> Result<String, String> {
    fn run_reduced<C: Communicator + Clone + 'static>(
        run: &mut DistributedNdem<C>,
        history: &[(GlobalKey, ndem_solve::StoredImpulse)],
    ) -> Result<ndem_reduce::ReducerState, String> {
        run.set_history(history);
        let reduction = ndem_reduce::ReductionSettings::default();
        run.set_reduction(reduction, Default::default())
            .map_err(|e| e.to_string())?;
        for _ in 0..20 {
            run.step().map_err(|e| e.to_string())?;
        }
        Ok(run.reducer_state().unwrap_or_default())
    }
    let mut many = DistributedNdem::new(comm, start, s).map_err(|e| e.to_string())?;
    let state = run_reduced(&mut many, history)?;
    // ranks that own a member of the first aggregate
    let first = state.aggregates.first().ok_or("no aggregate formed")?;
    let d = many.domain();
    let mine = first.1.members.iter().any(|&m| {
        d.global_indices()
            .binary_search(&(m as u64))
            .is_ok_and(|i| d.roles()[i] == Role::Owned)
    });
    let spans = comm.sum(&[f64::from(u8::from(mine))])[0] as usize;
    let world = many.gather().map_err(|e| e.to_string())?;
    let one = run_on_threads(1, |c| {
        let mut r = DistributedNdem::new(c, start, s).map_err(|e| e.to_string())?;
        let state = run_reduced(&mut r, history)?;
        Ok::<_, String>((r.gather().map_err(|e| e.to_string())?, state))
    });
    let (one_world, one_state) = one.into_iter().next().ok_or("no rank")??;
    if state != one_state {
        return Err("aggregates differ from one rank's".into());
    }
    if spans != comm.size() {
        return Err(format!("the aggregate has members on {spans} ranks"));
    }
    let (Some(world), Some(one_world)) = (world, one_world) else {
        return Ok("reduced: gathered on rank 0".into());
    };
    let d = (0..world.len())
        .map(|i| (world.positions()[i] - one_world.positions()[i]).norm())
        .fold(0.0, f64::max);
    if d > 5e-9 {
        return Err(format!("reduced: {d:.3e} m from one rank"));
    }
    Ok(format!(
        "reduced: the same {} aggregate(s) as one rank, members on every rank, {d:.3e} m",
        state.aggregates.len()
    ))
}

/// 12 spheres emitted at 40 per second onto a floor across the MPI ranks:
/// each rank emits the particles a one-rank run (thread rank) emits, with
/// the same global indices, and after 0.6 s of converged solves the
/// positions are within 4e-11 m of one rank's (the bound of
/// `tests/ndem/emitters.rs`, which says where it comes from).
fn emitter_fills_as_on_one_rank(comm: MpiComm) -> Result<String, String> {
    use ::ndem::scenes::builders::{PileSpec, pile};
    let scene = pile(PileSpec {
        particles: 12,
        rate: 40.0,
        seed: 3,
    })
    .map_err(|e| e.to_string())?;
    let mut s = DistributedNdemSettings {
        step: scene.settings,
        ..DistributedNdemSettings::default()
    };
    s.step.impact_iterations = 3000;
    s.pgs.stopping = ndem_solve::Stopping::to_tolerance(3000, 1e-10);
    let steps = 120;
    let (emitted, world) = run_emitting(comm, &scene, s, steps)?;
    let one = run_on_threads(1, |c| run_emitting(c, &scene, s, steps))
        .into_iter()
        .next()
        .ok_or("no rank")??;
    if emitted != one.0 {
        return Err("the emitted particles differ from one rank's".into());
    }
    let (Some(world), Some(reference)) = (world, one.1) else {
        return Ok(format!(
            "{} particles emitted as on one rank",
            emitted.len()
        ));
    };
    let d = (0..world.len())
        .map(|i| (world.positions()[i] - reference.positions()[i]).norm())
        .fold(0.0, f64::max);
    if world.len() != reference.len() || d > 4e-11 {
        return Err(format!("{} bodies, {d:.3e} m from one rank", world.len()));
    }
    Ok(format!(
        "{} particles emitted as on one rank; positions {d:.3e} m from one rank's",
        emitted.len()
    ))
}

/// The positions of the particles `scene`'s emitters emit over `steps`
/// steps on the ranks of `comm`, and the world gathered at the end.
fn run_emitting<C: Communicator + Clone + 'static>(
    comm: C,
    scene: &::ndem::scenes::Scene,
    s: DistributedNdemSettings,
    steps: usize,
) -> Result<(Vec<ndem_math::Vec3>, Option<World>), String> {
    let mut run = DistributedNdem::new(comm, &scene.world, s).map_err(|e| e.to_string())?;
    let mut emitters = scene.emitters.clone();
    let mut emitted = Vec::new();
    for _ in 0..steps {
        let new = run.emit(&mut emitters).map_err(|e| e.to_string())?;
        emitted.extend(new.iter().map(|b| b.position));
        run.step().map_err(|e| e.to_string())?;
    }
    Ok((emitted, run.gather().map_err(|e| e.to_string())?))
}

/// Rank 0's gathered states, sent to every rank.
#[allow(clippy::type_complexity)]
fn broadcast_positions(
    comm: MpiComm,
    world: Option<&World>,
    scene: &World,
) -> Result<Vec<(ndem_math::Vec3, ndem_math::Quat, ndem_math::Velocity6)>, String> {
    let mut out = vec![Vec::new(); comm.size()];
    if let Some(w) = world {
        for buf in &mut out {
            for i in 0..w.len() {
                buf.extend_from_slice(w.positions()[i].as_slice());
                buf.extend_from_slice(w.orientations()[i].coords.as_slice());
                buf.extend_from_slice(w.velocities()[i].linear.as_slice());
                buf.extend_from_slice(w.velocities()[i].angular.as_slice());
            }
        }
    }
    let received = comm.exchange(out);
    let values = &received[0];
    if values.len() != 13 * scene.len() {
        return Err("rank 0 sent no state".into());
    }
    Ok(values
        .chunks_exact(13)
        .map(|v| {
            let p = ndem_math::Vec3::new(v[0], v[1], v[2]);
            let q =
                ndem_math::Quat::new_unchecked(nalgebra::Quaternion::new(v[6], v[3], v[4], v[5]));
            let vel = ndem_math::Velocity6::new(
                ndem_math::Vec3::new(v[7], v[8], v[9]),
                ndem_math::Vec3::new(v[10], v[11], v[12]),
            );
            (p, q, vel)
        })
        .collect())
}

/// Rank 0's impulses, sent to every rank.
fn broadcast_history(
    comm: MpiComm,
    history: Vec<(GlobalKey, ndem_solve::StoredImpulse)>,
) -> Vec<(GlobalKey, ndem_solve::StoredImpulse)> {
    let mut out = vec![Vec::new(); comm.size()];
    for buf in &mut out {
        for (k, v) in &history {
            buf.extend_from_slice(&[k.0 as f64, k.1 as f64, k.2 as f64]);
            v.pack(buf);
        }
    }
    comm.exchange(out)[0]
        .chunks_exact(3 + ndem_solve::StoredImpulse::WIDTH)
        .map(|e| {
            (
                (e[0] as u64, e[1] as u64, e[2] as u32),
                ndem_solve::StoredImpulse::unpack(&e[3..]),
            )
        })
        .collect()
}

fn main() {
    let Some(_universe) = mpi::initialize() else {
        eprintln!("MPI is already initialised");
        std::process::exit(2);
    };
    let comm = MpiComm;
    let cases: [(&str, Case); 5] = [
        ("smooth DEM equals the serial run", smooth_matches_serial),
        (
            "NDEM column rests as on one rank",
            column_rests_as_on_one_rank,
        ),
        (
            "NDEM pile keeps every body, rests and merges as on one rank",
            pile_keeps_every_body_and_rests_as_on_one_rank,
        ),
        (
            "NDEM emitter fills as on one rank",
            emitter_fills_as_on_one_rank,
        ),
        (
            "NDEM jointed chain across the cut settles as on one rank",
            chain_settles_as_on_one_rank,
        ),
    ];
    let mut failed = false;
    for (name, case) in cases {
        match case(comm) {
            Ok(msg) => println!("rank {}/{}: ok   {name}: {msg}", comm.rank(), comm.size()),
            Err(msg) => {
                println!("rank {}/{}: FAIL {name}: {msg}", comm.rank(), comm.size());
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}

//! `ndem.Simulation`: a scene with its stepper.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use ndem::checkpoint::{Checkpoint, CheckpointFormat};
use ndem::output::FrameLog;
use ndem::reduce::Reducer;
use ndem::scenes::{Scene, SceneFile, builders};
use ndem::step::{Motion, Stepper};
use numpy::{PyArray1, PyArray2};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrays::vectors;
use crate::errors::{invalid, io_error, scene_error, step_error};
use crate::options::{RunSettings, warn_caveat};
use crate::state;
use crate::stats::{self, Row};

/// Frames written as the simulation runs (`Simulation.open_frames`).
struct Frames {
    dir: PathBuf,
    every: u64,
    log: FrameLog,
}

/// What the lock guards: the scene, its stepper and what was recorded.
struct Run {
    scene: Scene,
    stepper: Stepper,
    rows: Vec<Row>,
    record: bool,
    frames: Option<Frames>,
}

impl Run {
    fn new(py: Python<'_>, mut scene: Scene, settings: &RunSettings) -> PyResult<Self> {
        let caveat = settings.apply(&mut scene)?;
        warn_caveat(py, &scene.name, caveat)?;
        let stepper = scene.stepper().map_err(scene_error)?;
        Ok(Self::with_stepper(scene, stepper))
    }

    fn with_stepper(scene: Scene, stepper: Stepper) -> Self {
        Self {
            scene,
            stepper,
            rows: Vec::new(),
            record: true,
            frames: None,
        }
    }

    /// One step of the scene (its drivers, then the world); the state is
    /// that of the last completed step if it fails.
    fn step(&mut self) -> Result<Row, ndem::scenes::SceneError> {
        let s = self.scene.step(&mut self.stepper)?;
        let r = self
            .stepper
            .hooks_as::<Reducer>()
            .map(|r| r.stats())
            .unwrap_or_default();
        if self.record {
            self.rows.push((s, r));
        }
        Ok((s, r))
    }

    fn write_frame(&mut self) -> PyResult<()> {
        let Some(f) = self.frames.as_mut() else {
            return Ok(());
        };
        let (world, stepper) = (&self.scene.world, &self.stepper);
        f.log
            .write_frame(
                &f.dir,
                world,
                stepper
                    .contact_forces_iter()
                    .chain(stepper.held_contact_forces_iter()),
                stepper.time(),
                stepper.step_count(),
            )
            .and_then(|()| f.log.write_collections(&f.dir))
            .map_err(|e| io_error(&f.dir, e))
    }

    fn frame_due(&self) -> bool {
        self.frames
            .as_ref()
            .is_some_and(|f| self.stepper.step_count().is_multiple_of(f.every))
    }
}

/// A scene and its stepper: step it, read its state into numpy arrays,
/// write frames and checkpoints.
///
/// Make one with `Simulation.builtin(name)`, `Simulation.from_file(path)`,
/// `Simulation.from_toml(text)`, `Simulation.resume(checkpoint)` or
/// `SceneBuilder.build()`. The run settings are keyword arguments of
/// these: `solver`, `iterations`, `warm_start`, `threads`, `reduce`,
/// `impact_iterations`, `impact_join_velocity`, `reach_growth`, `dt`.
///
/// The GIL is released while stepping; another thread that reads the
/// state waits for the current step to end (`run()` takes the simulation
/// step by step, so a reader sees the state between two steps).
#[pyclass(module = "ndem", name = "Simulation")]
pub struct Simulation {
    run: Mutex<Run>,
    /// Threads waiting for the lock; `run()` lets them in between steps.
    waiting: AtomicUsize,
}

impl Simulation {
    fn new(run: Run) -> Self {
        Self {
            run: Mutex::new(run),
            waiting: AtomicUsize::new(0),
        }
    }

    /// The run, waiting (without the GIL) while another thread steps it.
    fn lock(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, Run>> {
        let mut counted = false;
        let result = loop {
            match self.run.try_lock() {
                Ok(guard) => break Ok(guard),
                Err(TryLockError::WouldBlock) => {
                    if !counted {
                        self.waiting.fetch_add(1, Ordering::SeqCst);
                        counted = true;
                    }
                    py.detach(|| std::thread::sleep(Duration::from_micros(50)));
                }
                Err(TryLockError::Poisoned(_)) => {
                    break Err(PyRuntimeError::new_err(
                        "the simulation is unusable: a step panicked in another thread",
                    ));
                }
            }
        };
        if counted {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        }
        result
    }

    /// Between two steps of `run()`: lets a thread waiting for the lock
    /// take it (it polls every 50 µs).
    fn let_waiters_in(&self, py: Python<'_>) {
        if self.waiting.load(Ordering::SeqCst) > 0 {
            py.detach(|| std::thread::sleep(Duration::from_micros(200)));
        }
    }

    /// Creates a simulation of `scene` with `settings` applied.
    pub fn from_scene(py: Python<'_>, scene: Scene, settings: &RunSettings) -> PyResult<Self> {
        Ok(Self::new(Run::new(py, scene, settings)?))
    }
}

/// The built-in scenes: `(name, description)` pairs.
#[pyfunction]
pub fn builtin_scenes() -> Vec<(&'static str, &'static str)> {
    builders::BUILTIN.to_vec()
}

fn read_text(path: &PathBuf) -> PyResult<String> {
    std::fs::read_to_string(path).map_err(|e| io_error(path, e))
}

#[pymethods]
impl Simulation {
    /// A built-in scene by name (`ndem.builtin_scenes()` lists them);
    /// `particles` resizes the scenes that take a particle count.
    #[staticmethod]
    #[pyo3(signature = (name, particles = None, **settings))]
    fn builtin(
        py: Python<'_>,
        name: &str,
        particles: Option<usize>,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let settings = RunSettings::from_kwargs(settings)?;
        let scene = builders::builtin_sized(name, particles).map_err(scene_error)?;
        Self::from_scene(py, scene, &settings)
    }

    /// A scene file (TOML, the format of `ndem describe --toml`).
    #[staticmethod]
    #[pyo3(signature = (path, **settings))]
    fn from_file(
        py: Python<'_>,
        path: PathBuf,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let settings = RunSettings::from_kwargs(settings)?;
        let text = read_text(&path)?;
        let scene = SceneFile::from_toml(&text)
            .and_then(|f| f.to_scene())
            .map_err(scene_error)?;
        Self::from_scene(py, scene, &settings)
    }

    /// A scene given as TOML text.
    #[staticmethod]
    #[pyo3(signature = (text, **settings))]
    fn from_toml(
        py: Python<'_>,
        text: &str,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let settings = RunSettings::from_kwargs(settings)?;
        let scene = SceneFile::from_toml(text)
            .and_then(|f| f.to_scene())
            .map_err(scene_error)?;
        Self::from_scene(py, scene, &settings)
    }

    /// Continues from a checkpoint (JSON or binary) written by
    /// `checkpoint()` or by `ndem run --checkpoint-every`: the same
    /// trajectory, bit for bit.
    #[staticmethod]
    fn resume(path: PathBuf) -> PyResult<Self> {
        if !path.is_file() {
            return Err(io_error(&path, "no such checkpoint file"));
        }
        let cp = Checkpoint::read_file(&path).map_err(|e| invalid("checkpoint", e))?;
        let (scene, stepper) = cp.restore().map_err(scene_error)?;
        Ok(Self::new(Run::with_stepper(scene, stepper)))
    }

    /// The scene in its current state as TOML text (a scene file).
    fn to_toml(&self, py: Python<'_>) -> PyResult<String> {
        let run = self.lock(py)?;
        SceneFile::from_scene(&run.scene)
            .to_toml()
            .map_err(scene_error)
    }

    /// Advances one step (the scene's drivers, then the world) and returns
    /// its statistics (the columns of `stats.csv`).
    fn step<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut run = self.lock(py)?;
        let run = &mut *run;
        let row = py.detach(|| run.step()).map_err(scene_error)?;
        if run.frame_due() {
            run.write_frame()?;
        }
        stats::row_dict(py, &row)
    }

    /// Runs `steps` steps, or `time` seconds, or to the scene's duration;
    /// returns the statistics of these steps as columns. A progress bar
    /// shows on a terminal (`progress=True/False` forces it). Ctrl-C
    /// (KeyboardInterrupt) stops after the current step with the state
    /// consistent and the finished steps recorded.
    #[pyo3(signature = (steps = None, *, time = None, progress = None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        steps: Option<u64>,
        time: Option<f64>,
        progress: Option<bool>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let n = steps_to_take(&*self.lock(py)?, steps, time)?;
        let show = match progress {
            Some(p) => p,
            None => std::io::stderr().is_terminal(),
        };
        let mut bar = Bar::new(show, n);
        let mut rows = Vec::new();
        for _ in 0..n {
            // the lock is taken step by step: another thread may read the
            // state between two steps
            let row = {
                let mut guard = self.lock(py)?;
                let run = &mut *guard;
                let row = py.detach(|| run.step()).map_err(scene_error)?;
                if run.frame_due() {
                    run.write_frame()?;
                }
                row
            };
            rows.push(row);
            self.let_waiters_in(py);
            bar.tick(rows.len() as u64, &row);
            py.check_signals()?;
        }
        bar.finish();
        let unresolved = rows.iter().filter(|(s, _)| s.unresolved).count();
        if unresolved > 0 {
            crate::errors::warn(
                py,
                &format!(
                    "{unresolved} of {} steps unresolved: the mean normal residual is above the \
                     resolved-step tolerance (the `unresolved` column); raise `iterations`",
                    rows.len()
                ),
            )?;
        }
        stats::columns(py, &rows)
    }

    /// Statistics of every recorded step (see `record_stats`) as columns
    /// named as in `stats.csv`; `pandas.DataFrame(sim.stats)` reads them.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let run = self.lock(py)?;
        stats::columns(py, &run.rows)
    }

    /// Whether steps append their statistics to `stats` (default: True).
    #[getter]
    fn get_record_stats(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.lock(py)?.record)
    }

    #[setter]
    fn set_record_stats(&self, py: Python<'_>, on: bool) -> PyResult<()> {
        self.lock(py)?.record = on;
        Ok(())
    }

    /// Forgets the recorded statistics.
    fn clear_stats(&self, py: Python<'_>) -> PyResult<()> {
        self.lock(py)?.rows.clear();
        Ok(())
    }

    /// Writes a checkpoint: binary when `path` ends in `.ckpt` (for large
    /// scenes), JSON otherwise; both resume bit for bit.
    fn checkpoint(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let mut guard = self.lock(py)?;
        let run = &mut *guard;
        let format = if path.extension().is_some_and(|e| e == "ckpt") {
            CheckpointFormat::Binary
        } else {
            CheckpointFormat::Json
        };
        Checkpoint::write_scene(&run.scene, &mut run.stepper, &path, format)
            .map_err(|e| io_error(&path, e))
    }

    /// From now on writes a ParaView frame every `every` steps under
    /// `dir` (`frames/`, `particles.pvd`, `contacts.pvd`, `bodies.pvd`),
    /// and one of the current state now. `ndem.frames(sim, dir)` is the
    /// context manager.
    #[pyo3(signature = (dir, every = 1))]
    fn open_frames(&self, py: Python<'_>, dir: PathBuf, every: u64) -> PyResult<()> {
        if every == 0 {
            return Err(invalid("every", "must be at least 1"));
        }
        let mut run = self.lock(py)?;
        ndem::output::prepare_dir(&dir).map_err(|e| io_error(&dir, e))?;
        run.frames = Some(Frames {
            dir,
            every,
            log: FrameLog::default(),
        });
        run.write_frame()
    }

    /// Writes a frame of the current state (if frames are open, and it
    /// was not written yet) and stops writing frames.
    fn close_frames(&self, py: Python<'_>) -> PyResult<()> {
        let mut run = self.lock(py)?;
        let last = run.frames.as_ref().and_then(|f| f.log.last_step());
        if last != Some(run.stepper.step_count()) {
            run.write_frame()?;
        }
        run.frames = None;
        Ok(())
    }

    /// Body positions, `(n, 3)` float64 \[m\] (a copy); setting it moves
    /// every body (one row per body, finite).
    #[getter]
    fn get_positions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let run = self.lock(py)?;
        Ok(vectors(py, run.scene.world.positions().iter().copied()))
    }

    #[setter]
    fn set_positions(&self, py: Python<'_>, value: crate::arrays::Vectors<'_>) -> PyResult<()> {
        state::set_positions(&mut self.lock(py)?.scene.world, &value)
    }

    /// Linear velocities, `(n, 3)` float64 \[m/s\] (a copy; settable).
    #[getter]
    fn get_velocities<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        Ok(state::velocities(py, &self.lock(py)?.scene.world, false))
    }

    #[setter]
    fn set_velocities(&self, py: Python<'_>, value: crate::arrays::Vectors<'_>) -> PyResult<()> {
        state::set_velocities(&mut self.lock(py)?.scene.world, &value, false)
    }

    /// Angular velocities, `(n, 3)` float64 \[rad/s\], world frame (a
    /// copy; settable).
    #[getter]
    fn get_angular_velocities<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        Ok(state::velocities(py, &self.lock(py)?.scene.world, true))
    }

    #[setter]
    fn set_angular_velocities(
        &self,
        py: Python<'_>,
        value: crate::arrays::Vectors<'_>,
    ) -> PyResult<()> {
        state::set_velocities(&mut self.lock(py)?.scene.world, &value, true)
    }

    /// Orientations, `(n, 4)` float64 unit quaternions `(x, y, z, w)`.
    #[getter]
    fn orientations<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        state::orientations(py, &self.lock(py)?.scene.world)
    }

    /// Sphere radii, `(n,)` float64 \[m\]; NaN for other shapes.
    #[getter]
    fn radii<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        Ok(state::radii(py, &self.lock(py)?.scene.world))
    }

    /// Masses, `(n,)` float64 \[kg\]; infinite for fixed and kinematic
    /// bodies.
    #[getter]
    fn masses<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        Ok(state::masses(py, &self.lock(py)?.scene.world))
    }

    /// `(n,)` bool: the body moves under forces (not fixed, not kinematic).
    #[getter]
    fn dynamic<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let run = self.lock(py)?;
        let v: Vec<bool> = run
            .scene
            .world
            .motions()
            .iter()
            .map(|m| *m == Motion::Dynamic)
            .collect();
        Ok(numpy::IntoPyArray::into_pyarray(v, py))
    }

    /// `(n,)` int64: the rigid aggregate (model reduction) holding each
    /// member, and an aggregate's own body; -1 for every other body.
    #[getter]
    fn aggregate_ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let mut guard = self.lock(py)?;
        let run = &mut *guard;
        Ok(state::aggregate_ids(py, &run.scene.world, &mut run.stepper))
    }

    /// Kinetic energy \[J\].
    #[getter]
    fn kinetic_energy(&self, py: Python<'_>) -> PyResult<f64> {
        Ok(self.lock(py)?.scene.world.kinetic_energy())
    }

    /// Potential energy in gravity \[J\].
    #[getter]
    fn potential_energy(&self, py: Python<'_>) -> PyResult<f64> {
        Ok(self.lock(py)?.scene.world.potential_energy())
    }

    /// The contacts of the last step's continuous solve: `body_a`,
    /// `body_b` `(m,)` int64; `point`, `normal` (from b to a) `(m, 3)`;
    /// `normal_force` `(m,)` \[N\]; `tangential_force` on a `(m, 3)` \[N\];
    /// `overlap` `(m,)` \[m\].
    fn contacts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        state::contacts(py, &self.lock(py)?.stepper.contact_forces())
    }

    /// The contacts inside rigid aggregates (`reduce=True`) that hold an
    /// impulse, as arrays with the keys of `contacts()`: not in the solve,
    /// their forces are the impulses they had when last solved, over Δt
    /// (`docs/reduction.md`, "Outputs"). Empty without aggregates.
    fn held_contacts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let run = self.lock(py)?;
        let held: Vec<_> = run.stepper.held_contact_forces_iter().collect();
        state::contacts(py, &held)
    }

    /// The contact forces of the current state taken as a packing at
    /// rest, under the run's own contact law (what `ndem forces` writes):
    /// `method` `"compatible"` (compatible contact dynamics: the
    /// no-tension truss problem on the static load), `"pgs"` or `"apgd"`
    /// (one step at rest, solved to 1e-10 / 1e-12). Returns `body_a`,
    /// `body_b` `(m,)` int64, `normal` `(m, 3)`, `normal_force` `(m,)`
    /// \[N\] and `residual` (the truss equilibrium residual, or None).
    #[pyo3(signature = (method = "compatible"))]
    fn network_forces<'py>(&self, py: Python<'py>, method: &str) -> PyResult<Bound<'py, PyDict>> {
        use ndem::scenes::compatible::{ForceMethod, network_forces};
        let m = ForceMethod::parse(method).map_err(|e| invalid("method", e))?;
        let run = self.lock(py)?;
        let scene = &run.scene;
        let (forces, residual) = py
            .detach(|| network_forces(scene, m))
            .map_err(scene_error)?;
        let d = PyDict::new(py);
        let ints = |f: &dyn Fn(&ndem::scenes::compatible::NetworkForce) -> usize| {
            crate::arrays::ints(py, forces.iter().map(|x| f(x) as i64).collect())
        };
        d.set_item("body_a", ints(&|x| x.body_a))?;
        d.set_item("body_b", ints(&|x| x.body_b))?;
        d.set_item("normal", vectors(py, forces.iter().map(|x| x.normal)))?;
        d.set_item(
            "normal_force",
            crate::arrays::floats(py, forces.iter().map(|x| x.force).collect()),
        )?;
        d.set_item("residual", residual)?;
        Ok(d)
    }

    /// The joints' reactions of the last step: `force`, `torque` on body
    /// a `(k, 3)`; `drive_force` `(k,)` \[N or N·m\], NaN for an undriven
    /// joint.
    fn joint_reactions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let run = self.lock(py)?;
        state::joint_reactions(py, &run.scene.world, &run.stepper)
    }

    /// Sets (or with neither `speed` nor `position`, removes) the drive of
    /// joint `joint`: a target speed \[m/s or rad/s\] or position, reached
    /// with at most `max_force` \[N or N·m\].
    #[pyo3(signature = (joint, *, speed = None, position = None, max_force = f64::INFINITY))]
    fn set_drive(
        &self,
        py: Python<'_>,
        joint: usize,
        speed: Option<f64>,
        position: Option<f64>,
        max_force: f64,
    ) -> PyResult<()> {
        let mut run = self.lock(py)?;
        let id = state::joint(&run.scene.world, joint)?;
        let drive = state::drive(speed, position, max_force)?;
        run.scene
            .world
            .set_joint_drive(id, drive)
            .map_err(step_error)
    }

    /// Applies an external force \[N\] and torque \[N·m\] on `body` for
    /// the following steps (until set again).
    #[pyo3(signature = (body, force, torque = [0.0; 3]))]
    fn apply_force(
        &self,
        py: Python<'_>,
        body: usize,
        force: [f64; 3],
        torque: [f64; 3],
    ) -> PyResult<()> {
        let mut run = self.lock(py)?;
        let b = state::body(&run.scene.world, "body", body)?;
        let f = crate::arrays::vec3("force", force)?;
        let t = crate::arrays::vec3("torque", torque)?;
        run.scene.world.set_force(b, f, t).map_err(step_error)
    }

    /// Scene name.
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.lock(py)?.scene.name.clone())
    }

    /// Simulated time \[s\].
    #[getter]
    fn time(&self, py: Python<'_>) -> PyResult<f64> {
        Ok(self.lock(py)?.stepper.time())
    }

    /// Steps taken.
    #[getter]
    fn step_count(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.lock(py)?.stepper.step_count())
    }

    /// Time step Δt \[s\].
    #[getter]
    fn dt(&self, py: Python<'_>) -> PyResult<f64> {
        Ok(self.lock(py)?.scene.settings.dt)
    }

    /// The scene's own duration \[s\] (what `run()` runs to).
    #[getter]
    fn duration(&self, py: Python<'_>) -> PyResult<f64> {
        Ok(self.lock(py)?.scene.duration)
    }

    /// The run settings in force: solver, iterations, warm start, threads,
    /// reduction on or off, impact sweeps, reach growth, Δt.
    #[getter]
    fn settings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let run = self.lock(py)?;
        let s = &run.scene;
        let d = PyDict::new(py);
        d.set_item("solver", s.solver.name())?;
        d.set_item("iterations", s.iterations)?;
        d.set_item("warm_start", s.warm_start.name())?;
        d.set_item("threads", s.threads)?;
        d.set_item("reduce", s.reduction.is_some())?;
        d.set_item("impact_iterations", s.settings.impact_iterations)?;
        d.set_item("reach_growth", s.settings.reach_growth)?;
        d.set_item("dt", s.settings.dt)?;
        Ok(d)
    }

    /// Number of bodies (particles, walls, machine parts, aggregates).
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.lock(py)?.scene.world.len())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let run = self.lock(py)?;
        Ok(format!(
            "Simulation({:?}, bodies={}, dynamic={}, step={}, time={} s)",
            run.scene.name,
            run.scene.world.len(),
            run.scene.world.dynamic_count(),
            run.stepper.step_count(),
            run.stepper.time()
        ))
    }
}

/// Steps for `run(steps, time)`: `steps`, else `time / Δt` rounded, else to
/// the scene's duration.
fn steps_to_take(run: &Run, steps: Option<u64>, time: Option<f64>) -> PyResult<u64> {
    let dt = run.scene.settings.dt;
    match (steps, time) {
        (Some(_), Some(_)) => Err(invalid("time", "give `steps` or `time`, not both")),
        (Some(n), None) => Ok(n),
        (None, Some(t)) if t.is_finite() && t > 0.0 && t < 0.5 * dt => Err(invalid(
            "time",
            format!("{t} s is shorter than half a step (Δt = {dt} s): no step would run"),
        )),
        (None, Some(t)) if t.is_finite() && t >= 0.0 => Ok((t / dt).round() as u64),
        (None, Some(t)) => Err(invalid("time", format!("must be finite and >= 0, got {t}"))),
        (None, None) => Ok(((run.scene.duration - run.stepper.time()) / dt)
            .round()
            .max(0.0) as u64),
    }
}

/// A text progress bar on standard error, redrawn at most every 0.2 s.
struct Bar {
    show: bool,
    total: u64,
    start: Instant,
    last: Instant,
}

impl Bar {
    fn new(show: bool, total: u64) -> Self {
        let now = Instant::now();
        Self {
            show: show && total > 0,
            total,
            start: now,
            last: now,
        }
    }

    fn tick(&mut self, done: u64, (s, _): &Row) {
        if !self.show || (self.last.elapsed() < Duration::from_millis(200) && done < self.total) {
            return;
        }
        self.last = Instant::now();
        let width = 30;
        let filled = (done * width / self.total.max(1)) as usize;
        let rate = done as f64 / self.start.elapsed().as_secs_f64().max(1e-9);
        eprint!(
            "\r[{}{}] {done}/{} steps, t = {:.4} s, {} contacts, {rate:.0} steps/s ",
            "#".repeat(filled),
            " ".repeat(width as usize - filled),
            self.total,
            s.time,
            s.contacts
        );
    }

    fn finish(&self) {
        if self.show {
            eprintln!();
        }
    }
}

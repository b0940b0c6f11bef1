//! Output files: statistics CSV, VTK XML PolyData frames with a `.pvd`
//! collection (ParaView), and atomic writes (a file appears complete or not
//! at all).

use ndem_step::{ContactForce, StepStats, World};
use std::borrow::Borrow;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `contents` to `path` through a temporary file and a rename.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!(
        "{}.partial",
        path.extension().and_then(|e| e.to_str()).unwrap_or("")
    ));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// Writes the text that `fill` formats to `path` through a temporary file
/// and a rename, streamed through a buffer (a frame of 10⁵ spheres is not
/// held in memory as one string).
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn std::fmt::Write),
) -> std::io::Result<()> {
    write_atomic_stream(path, |out| {
        let mut sink = IoSink { out, error: None };
        fill(&mut sink);
        sink.error.map_or(Ok(()), Err)
    })
}

/// Writes the bytes that `fill` streams to `path` through a buffered
/// temporary file and a rename.
pub fn write_atomic_stream(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let tmp = path.with_extension(format!(
        "{}.partial",
        path.extension().and_then(|e| e.to_str()).unwrap_or("")
    ));
    {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
        fill(&mut out)?;
        let f = out.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// `fmt::Write` into an `io::Write`, keeping the first I/O error.
struct IoSink<W: Write> {
    out: W,
    error: Option<std::io::Error>,
}

impl<W: Write> std::fmt::Write for IoSink<W> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.error.is_some() {
            return Err(std::fmt::Error);
        }
        self.out.write_all(s.as_bytes()).map_err(|e| {
            self.error = Some(e);
            std::fmt::Error
        })
    }
}

/// Creates `dir` (and `dir/frames`) and checks that it is writable.
pub fn prepare_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("frames"))?;
    let probe = dir.join(".ndem-write-test");
    std::fs::write(&probe, b"ok")?;
    std::fs::remove_file(probe)
}

/// The files of an earlier run in `dir` (relative paths): statistics,
/// summary, collections, frames and checkpoints. Empty for a new folder.
pub fn run_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let listed = |sub: &Path| -> std::io::Result<Vec<PathBuf>> {
        match std::fs::read_dir(dir.join(sub)) {
            Ok(rd) => rd
                .map(|e| e.map(|e| sub.join(e.file_name())))
                .collect::<std::io::Result<Vec<_>>>(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    };
    for f in listed(Path::new(""))? {
        let name = f.to_string_lossy();
        if name == "stats.csv"
            || name == "joints.csv"
            || name == "summary.json"
            || name.ends_with(".pvd")
            || (name.starts_with("checkpoint_")
                && (name.ends_with(".json") || name.ends_with(".ckpt")))
        {
            found.push(f);
        }
    }
    for f in listed(Path::new("frames"))? {
        if f.extension().is_some_and(|e| e == "vtp") {
            found.push(f);
        }
    }
    found.sort();
    Ok(found)
}

/// The statistics of an earlier run in `dir` up to step `last` (header
/// included), for a run that continues it; the header alone when there is
/// no file.
pub fn stats_up_to(dir: &Path, last: u64) -> std::io::Result<String> {
    lines_up_to(dir, "stats.csv", STATS_HEADER, last)
}

/// The joints' file of an earlier run in `dir` up to step `last`, as
/// [`stats_up_to`] (`joints` joints: [`joints_header`]).
pub fn joints_up_to(dir: &Path, last: u64, joints: usize) -> std::io::Result<String> {
    lines_up_to(dir, "joints.csv", &joints_header(joints), last)
}

/// Header of `joints.csv` for `joints` joints: per statistics line, the
/// step, the time, the drive schedule's phase and each joint's drive
/// force or torque (\[N\], \[N m\]; empty for a joint without a drive).
pub fn joints_header(joints: usize) -> String {
    let mut h = String::from("step,time,phase");
    for j in 0..joints {
        h.push_str(&format!(",drive_force_{j}"));
    }
    h
}

/// One line of `joints.csv` ([`joints_header`]).
pub fn joints_line(
    step: u64,
    time: f64,
    phase: &str,
    drive_forces: impl IntoIterator<Item = Option<f64>>,
) -> String {
    let mut line = format!("{step},{time:e},{phase}");
    for f in drive_forces {
        match f {
            Some(f) => line.push_str(&format!(",{f:e}")),
            None => line.push(','),
        }
    }
    line
}

/// The lines of `file` in `dir` up to step `last` (the first column),
/// under `header`; the header alone when there is no file.
fn lines_up_to(dir: &Path, file: &str, header: &str, last: u64) -> std::io::Result<String> {
    let text = match std::fs::read_to_string(dir.join(file)) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let mut out = format!("{header}\n");
    let fields = header.split(',').count();
    for line in text.lines().skip(1) {
        let step = line.split(',').next().and_then(|s| s.parse::<u64>().ok());
        if step.is_some_and(|s| s <= last) {
            out.push_str(line);
            // lines of an earlier version lack the newer (last) columns:
            // they stay empty, so the file keeps one column count
            let missing = fields.saturating_sub(line.split(',').count());
            out.extend(std::iter::repeat_n(',', missing));
            out.push('\n');
        }
    }
    Ok(out)
}

/// Header of the statistics CSV.
pub const STATS_HEADER: &str = "step,time,contacts,impacts,iterations,status,unresolved,residual_tolerance,warm_contacts,residual_normal_mean,residual_friction_mean,residual_rolling_mean,residual_max,kinetic_energy,potential_energy,momentum_x,momentum_y,momentum_z,t_detection_s,t_assembly_s,t_impact_s,t_continuous_s,t_total_s,reduction_level,aggregates,merges,split_members,t_reduction_s,impact_status,impact_residual,overlap_max";

/// One CSV line of step statistics (reduction columns zero without a
/// reducer; `impact_status` is `skipped` when no contact impacted).
pub fn stats_line(s: &StepStats, r: Option<&ndem_reduce::ReductionStats>) -> String {
    let r = r.copied().unwrap_or_default();
    let line = format!(
        "{},{:e},{},{},{},{},{},{:e},{},{:e},{:e},{:e},{:e},{:e},{:e},{:e},{:e},{:e},{:e},{:e},{:e},{:e},{:e}",
        s.step,
        s.time,
        s.contacts,
        s.impacts,
        s.iterations,
        s.status.name(),
        s.unresolved,
        s.residual_tolerance,
        s.warm_contacts,
        s.residuals.normal.mean,
        s.residuals.friction.mean,
        s.residuals.rolling.mean,
        s.residuals.max,
        s.kinetic_energy,
        s.potential_energy,
        s.momentum.x,
        s.momentum.y,
        s.momentum.z,
        s.times.detection.as_secs_f64(),
        s.times.assembly.as_secs_f64(),
        s.times.impact.as_secs_f64(),
        s.times.continuous.as_secs_f64(),
        s.times.total.as_secs_f64()
    );
    format!(
        "{line},{:e},{},{},{},{:e},{},{:e},{:e}",
        r.level,
        r.aggregates,
        r.merges,
        r.split_members,
        (r.split_time + r.merge_time).as_secs_f64(),
        s.impact_status.map_or("skipped", |x| x.name()),
        s.impact_residual,
        s.overlap_max
    )
}

fn data_array(
    out: &mut dyn std::fmt::Write,
    name: &str,
    ty: &str,
    components: usize,
    values: impl Iterator<Item = String>,
) {
    let _ = write!(
        out,
        "        <DataArray type=\"{ty}\" Name=\"{name}\" NumberOfComponents=\"{components}\" format=\"ascii\">\n          "
    );
    for v in values {
        let _ = out.write_str(&v);
        let _ = out.write_char(' ');
    }
    let _ = out.write_str("\n        </DataArray>\n");
}

/// A `Float64` array of 3-vectors.
fn vector_array(
    out: &mut dyn std::fmt::Write,
    name: &str,
    values: impl Iterator<Item = ndem_math::Vec3>,
) {
    data_array(
        out,
        name,
        "Float64",
        3,
        values.map(|v| format!("{:e} {:e} {:e}", v.x, v.y, v.z)),
    );
}

/// VTK XML PolyData of the spheres (one vertex per sphere) with radius,
/// velocity, angular velocity and body id.
pub fn particles_vtp(world: &World) -> String {
    particles_vtp_labelled(world, None)
}

/// [`particles_vtp`] with the `body_id` of body `i` given by `labels[i]`
/// (a distributed run's piece, whose bodies carry their indices in the
/// whole scene); `None` labels bodies by their index in `world`.
pub fn particles_vtp_labelled(world: &World, labels: Option<&[u64]>) -> String {
    let mut s = String::new();
    write_particles_vtp(&mut s, world, labels);
    s
}

/// [`particles_vtp_labelled`] written to `s` (a file sink streams it).
pub fn write_particles_vtp(s: &mut dyn std::fmt::Write, world: &World, labels: Option<&[u64]>) {
    let ids: Vec<usize> = (0..world.len())
        .filter(|&i| world.shapes()[i].sphere_radius().is_some())
        .collect();
    let n = ids.len();
    let _ = writeln!(
        s,
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"PolyData\" version=\"0.1\" byte_order=\"LittleEndian\">\n  <PolyData>\n    <Piece NumberOfPoints=\"{n}\" NumberOfVerts=\"{n}\" NumberOfLines=\"0\" NumberOfStrips=\"0\" NumberOfPolys=\"0\">\n      <Points>"
    );
    vector_array(s, "position", ids.iter().map(|&i| world.positions()[i]));
    let _ =
        s.write_str("      </Points>\n      <PointData Scalars=\"radius\" Vectors=\"velocity\">\n");
    data_array(
        s,
        "radius",
        "Float64",
        1,
        ids.iter()
            .map(|&i| format!("{:e}", world.shapes()[i].sphere_radius().unwrap_or(0.0))),
    );
    let velocities = world.velocities();
    vector_array(s, "velocity", ids.iter().map(|&i| velocities[i].linear));
    vector_array(
        s,
        "angular_velocity",
        ids.iter().map(|&i| velocities[i].angular),
    );
    data_array(
        s,
        "body_id",
        "Int64",
        1,
        ids.iter()
            .map(|&i| labels.map_or(i as u64, |l| l[i]).to_string()),
    );
    // the body that carries each particle: its rigid aggregate, or -1
    data_array(
        s,
        "aggregate",
        "Int64",
        1,
        ids.iter()
            .map(|&i| world.host_of(i).map_or("-1".to_string(), |h| h.to_string())),
    );
    let _ = s.write_str("      </PointData>\n      <Verts>\n");
    data_array(s, "connectivity", "Int64", 1, (0..n).map(|i| i.to_string()));
    data_array(s, "offsets", "Int64", 1, (1..=n).map(|i| i.to_string()));
    let _ = s.write_str("      </Verts>\n    </Piece>\n  </PolyData>\n</VTKFile>\n");
}

/// VTK XML PolyData of the contact network: one line per contact from the
/// centre of body a to the centre of body b (or to the contact point for
/// large bodies), with the normal force magnitude, the overlap and `held`
/// (1 for a contact inside a rigid aggregate, whose force is the one it
/// held when last solved: [`ContactForce::held`]) as cell data.
pub fn contacts_vtp(world: &World, forces: &[ContactForce]) -> String {
    let mut s = String::new();
    write_contacts_vtp(&mut s, world, forces.iter());
    s
}

/// [`contacts_vtp`] written to `s`, for forces that may be formed on the
/// fly ([`ndem_step::Stepper::contact_forces_iter`]); each data array is
/// one pass over `forces`.
pub fn write_contacts_vtp<F: Borrow<ContactForce>>(
    s: &mut dyn std::fmt::Write,
    world: &World,
    forces: impl Iterator<Item = F> + Clone,
) {
    let n = forces.clone().count();
    let _ = writeln!(
        s,
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"PolyData\" version=\"0.1\" byte_order=\"LittleEndian\">\n  <PolyData>\n    <Piece NumberOfPoints=\"{}\" NumberOfVerts=\"0\" NumberOfLines=\"{n}\" NumberOfStrips=\"0\" NumberOfPolys=\"0\">\n      <Points>",
        2 * n
    );
    let end = |body: usize, f: &ContactForce| -> ndem_math::Vec3 {
        if world.shapes()[body].sphere_radius().is_some() {
            world.positions()[body]
        } else {
            f.point
        }
    };
    data_array(
        s,
        "position",
        "Float64",
        3,
        forces.clone().flat_map(|f| {
            let f = f.borrow();
            let a = end(f.key.body_a as usize, f);
            let b = end(f.key.body_b as usize, f);
            [
                format!("{:e} {:e} {:e}", a.x, a.y, a.z),
                format!("{:e} {:e} {:e}", b.x, b.y, b.z),
            ]
        }),
    );
    let _ = s.write_str("      </Points>\n      <CellData Scalars=\"normal_force\">\n");
    data_array(
        s,
        "normal_force",
        "Float64",
        1,
        forces
            .clone()
            .map(|f| format!("{:e}", f.borrow().normal_force)),
    );
    data_array(
        s,
        "overlap",
        "Float64",
        1,
        forces.clone().map(|f| format!("{:e}", f.borrow().overlap)),
    );
    data_array(
        s,
        "held",
        "UInt8",
        1,
        forces.map(|f| u8::from(f.borrow().held).to_string()),
    );
    let _ = s.write_str("      </CellData>\n      <Lines>\n");
    data_array(
        s,
        "connectivity",
        "Int64",
        1,
        (0..2 * n).map(|i| i.to_string()),
    );
    data_array(
        s,
        "offsets",
        "Int64",
        1,
        (1..=n).map(|i| (2 * i).to_string()),
    );
    let _ = s.write_str("      </Lines>\n    </Piece>\n  </PolyData>\n</VTKFile>\n");
}

/// The patch of a half-space drawn in ParaView: a square of this half size
/// around the particles' footprint (the plane itself is infinite).
fn half_space_patch(world: &World) -> (ndem_math::Vec3, f64) {
    let spheres: Vec<(ndem_math::Vec3, f64)> = (0..world.len())
        .filter_map(|i| {
            world.shapes()[i]
                .sphere_radius()
                .map(|r| (world.positions()[i], r))
        })
        .collect();
    if spheres.is_empty() {
        return (ndem_math::Vec3::zeros(), 1.0);
    }
    let mut lo = ndem_math::Vec3::repeat(f64::INFINITY);
    let mut hi = ndem_math::Vec3::repeat(f64::NEG_INFINITY);
    for (p, r) in &spheres {
        lo = lo.inf(&(p - ndem_math::Vec3::repeat(*r)));
        hi = hi.sup(&(p + ndem_math::Vec3::repeat(*r)));
    }
    let half = 0.5 * (hi - lo).max();
    (0.5 * (lo + hi), 1.2 * half.max(1e-3))
}

/// Triangles of body `i` for display, in body coordinates: the shape's
/// surface; a drum's curved wall and end caps (32 sides); a half-space as a
/// square patch (`patch`: centre in world coordinates and half size).
fn display_triangles(
    world: &World,
    i: usize,
    patch: (ndem_math::Vec3, f64),
) -> Option<(Vec<ndem_math::Vec3>, Vec<[u32; 3]>)> {
    use ndem_collide::Shape;
    use ndem_math::Vec3;
    match &world.shapes()[i] {
        Shape::Drum {
            radius,
            half_height,
        } => {
            let as_cylinder = Shape::Cylinder {
                radius: *radius,
                half_height: *half_height,
            };
            as_cylinder.surface_triangles()
        }
        Shape::HalfSpace { normal } => {
            // the patch centre projected onto the plane, in body coordinates
            let (p, q) = (world.positions()[i], world.orientations()[i]);
            let centre = q.inverse() * (patch.0 - p);
            let centre = centre - normal * normal.dot(&centre);
            let t1 = if normal.x.abs() < 0.9 {
                Vec3::x()
            } else {
                Vec3::y()
            };
            let t1 = (t1 - normal * normal.dot(&t1)).normalize() * patch.1;
            let t2 = normal.cross(&t1);
            let vertices = vec![
                centre - t1 - t2,
                centre + t1 - t2,
                centre + t1 + t2,
                centre - t1 + t2,
            ];
            Some((vertices, vec![[0, 1, 2], [0, 2, 3]]))
        }
        shape => shape.surface_triangles(),
    }
}

/// VTK XML PolyData of every body that is not a sphere: machine parts,
/// boxes, meshes, cylinders, convex hulls, drums (wall and caps) and
/// half-spaces (a square patch around the particles): their triangles in
/// world coordinates at the current pose, with the body id and the body's
/// velocity (linear, and angular) as cell data, so that ParaView shows the
/// container and the machine beside the particles. `None` when the scene
/// has no such body.
pub fn bodies_vtp(world: &World) -> Option<String> {
    let mut points: Vec<ndem_math::Vec3> = Vec::new();
    let mut triangles: Vec<[usize; 3]> = Vec::new();
    let mut owner = Vec::new();
    let patch = half_space_patch(world);
    for i in 0..world.len() {
        let Some((vertices, indices)) = display_triangles(world, i, patch) else {
            continue;
        };
        let (p, q) = (world.positions()[i], world.orientations()[i]);
        let base = points.len();
        points.extend(vertices.iter().map(|v| p + q * v));
        for t in indices {
            triangles.push(t.map(|k| base + k as usize));
            owner.push(i);
        }
    }
    if triangles.is_empty() {
        return None;
    }
    let (n, m) = (points.len(), triangles.len());
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"PolyData\" version=\"0.1\" byte_order=\"LittleEndian\">\n  <PolyData>\n    <Piece NumberOfPoints=\"{n}\" NumberOfVerts=\"0\" NumberOfLines=\"0\" NumberOfStrips=\"0\" NumberOfPolys=\"{m}\">\n      <Points>"
    );
    vector_array(&mut s, "position", points.iter().copied());
    s.push_str("      </Points>\n      <CellData Scalars=\"body_id\" Vectors=\"velocity\">\n");
    data_array(
        &mut s,
        "body_id",
        "Int64",
        1,
        owner.iter().map(|i| i.to_string()),
    );
    let velocities = world.velocities();
    vector_array(
        &mut s,
        "velocity",
        owner.iter().map(|&i| velocities[i].linear),
    );
    vector_array(
        &mut s,
        "angular_velocity",
        owner.iter().map(|&i| velocities[i].angular),
    );
    s.push_str("      </CellData>\n      <Polys>\n");
    data_array(
        &mut s,
        "connectivity",
        "Int64",
        1,
        triangles
            .iter()
            .map(|t| format!("{} {} {}", t[0], t[1], t[2])),
    );
    data_array(
        &mut s,
        "offsets",
        "Int64",
        1,
        (1..=m).map(|k| (3 * k).to_string()),
    );
    s.push_str("      </Polys>\n    </Piece>\n  </PolyData>\n</VTKFile>\n");
    Some(s)
}

/// The frames written so far, for the `.pvd` collections.
#[derive(Debug, Clone, Default)]
pub struct FrameLog {
    /// `(time, particles file, contacts file)` relative to the output folder.
    pub frames: Vec<(f64, PathBuf, PathBuf)>,
    /// `(time, bodies file)` of the frames that have surface bodies.
    pub bodies: Vec<(f64, PathBuf)>,
}

impl FrameLog {
    /// Writes frame files for the current state.
    /// `forces` may be a slice of [`ContactForce`] or the forces formed on
    /// the fly by [`ndem_step::Stepper::contact_forces_iter`] (`ndem run`
    /// chains [`ndem_step::Stepper::held_contact_forces_iter`] after them);
    /// the files are streamed, not built in memory.
    pub fn write_frame<I>(
        &mut self,
        dir: &Path,
        world: &World,
        forces: I,
        time: f64,
        step: u64,
    ) -> std::io::Result<()>
    where
        I: IntoIterator<IntoIter: Clone, Item: Borrow<ContactForce>>,
    {
        let p = PathBuf::from(format!("frames/particles_{step:08}.vtp"));
        let c = PathBuf::from(format!("frames/contacts_{step:08}.vtp"));
        write_atomic_with(&dir.join(&p), |s| write_particles_vtp(s, world, None))?;
        let forces = forces.into_iter();
        write_atomic_with(&dir.join(&c), |s| write_contacts_vtp(s, world, forces))?;
        self.frames.push((time, p, c));
        if let Some(bodies) = bodies_vtp(world) {
            let b = PathBuf::from(format!("frames/bodies_{step:08}.vtp"));
            write_atomic(&dir.join(&b), bodies.as_bytes())?;
            self.bodies.push((time, b));
        }
        Ok(())
    }

    /// The step of the last frame, from its file name.
    pub fn last_step(&self) -> Option<u64> {
        self.frames.last().and_then(|(_, p, _)| frame_step(p))
    }

    /// The frames of an earlier run in `dir` up to step `last`, read from
    /// its `particles.pvd`, `contacts.pvd` and `bodies.pvd`; the frame
    /// files of later steps are removed (a run that continues from `last`
    /// writes its own).
    pub fn read_up_to(dir: &Path, last: u64) -> std::io::Result<Self> {
        let entries = |name: &str| -> std::io::Result<Vec<(f64, PathBuf)>> {
            let text = match std::fs::read_to_string(dir.join(name)) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(e) => return Err(e),
            };
            Ok(text
                .lines()
                .filter_map(|l| {
                    let t = attribute(l, "timestep")?.parse::<f64>().ok()?;
                    Some((t, PathBuf::from(attribute(l, "file")?)))
                })
                .collect())
        };
        let keep = |p: &PathBuf| frame_step(p).is_some_and(|s| s <= last);
        let particles = entries("particles.pvd")?;
        let contacts = entries("contacts.pvd")?;
        let mut log = Self::default();
        for ((t, p), (_, c)) in particles.into_iter().zip(contacts) {
            if keep(&p) {
                log.frames.push((t, p, c));
            }
        }
        log.bodies = entries("bodies.pvd")?
            .into_iter()
            .filter(|(_, b)| keep(b))
            .collect();
        for f in run_files(dir)? {
            if f.starts_with("frames") && frame_step(&f).is_some_and(|s| s > last) {
                std::fs::remove_file(dir.join(f))?;
            }
        }
        Ok(log)
    }

    /// Writes `particles.pvd` and `contacts.pvd` (and `bodies.pvd` when
    /// the scene has surface bodies).
    pub fn write_collections(&self, dir: &Path) -> std::io::Result<()> {
        let particles: Vec<(f64, &PathBuf)> = self.frames.iter().map(|(t, p, _)| (*t, p)).collect();
        let contacts: Vec<(f64, &PathBuf)> = self.frames.iter().map(|(t, _, c)| (*t, c)).collect();
        let bodies: Vec<(f64, &PathBuf)> = self.bodies.iter().map(|(t, b)| (*t, b)).collect();
        for (name, files) in [
            ("particles.pvd", particles),
            ("contacts.pvd", contacts),
            ("bodies.pvd", bodies),
        ] {
            if name == "bodies.pvd" && files.is_empty() {
                continue;
            }
            write_atomic(&dir.join(name), pvd_collection(files).as_bytes())?;
        }
        Ok(())
    }
}

/// A VTK parallel PolyData file (`.pvtp`) joining the pieces written by
/// [`particles_vtp_labelled`] (paths relative to the `.pvtp` file), so that
/// ParaView opens them as one dataset.
pub fn particles_pvtp(pieces: &[PathBuf]) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"PPolyData\" version=\"0.1\" byte_order=\"LittleEndian\">\n  <PPolyData GhostLevel=\"0\">\n    <PPoints>\n      <PDataArray type=\"Float64\" Name=\"position\" NumberOfComponents=\"3\"/>\n    </PPoints>\n    <PPointData Scalars=\"radius\" Vectors=\"velocity\">\n",
    );
    for (ty, name, k) in [
        ("Float64", "radius", 1),
        ("Float64", "velocity", 3),
        ("Float64", "angular_velocity", 3),
        ("Int64", "body_id", 1),
        ("Int64", "aggregate", 1),
    ] {
        let _ = writeln!(
            s,
            "      <PDataArray type=\"{ty}\" Name=\"{name}\" NumberOfComponents=\"{k}\"/>"
        );
    }
    s.push_str("    </PPointData>\n");
    for p in pieces {
        let _ = writeln!(s, "    <Piece Source=\"{}\"/>", p.display());
    }
    s.push_str("  </PPolyData>\n</VTKFile>\n");
    s
}

/// A `.pvd` collection of `(time, file)` entries (paths relative to it).
pub fn pvd_collection<'a>(files: impl IntoIterator<Item = (f64, &'a PathBuf)>) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\">\n  <Collection>\n",
    );
    for (t, f) in files {
        let _ = writeln!(
            s,
            "    <DataSet timestep=\"{t:e}\" part=\"0\" file=\"{}\"/>",
            f.display()
        );
    }
    s.push_str("  </Collection>\n</VTKFile>\n");
    s
}

/// The step in a frame file name (`frames/particles_00000120.vtp` → 120).
fn frame_step(path: &Path) -> Option<u64> {
    let stem = path.file_stem()?.to_str()?;
    stem.rsplit('_').next()?.parse().ok()
}

/// The value of XML attribute `name` on `line`.
fn attribute<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("{name}=\"");
    let start = line.find(&key)? + key.len();
    let len = line[start..].find('"')?;
    Some(&line[start..start + len])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run written before the last column was added continues with one
    /// column count: its lines get the new columns empty.
    #[test]
    fn stats_of_an_earlier_version_keep_one_column_count() {
        let dir = std::env::temp_dir().join(format!("ndem-stats-up-to-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fields = STATS_HEADER.split(',').count();
        let old_header = STATS_HEADER.rsplit_once(',').unwrap().0;
        let old_line = |step: u64| {
            let mut f = vec!["0".to_string(); fields - 1];
            f[0] = step.to_string();
            f.join(",")
        };
        let text = format!("{old_header}\n{}\n{}\n", old_line(1), old_line(2));
        std::fs::write(dir.join("stats.csv"), text).unwrap();
        let kept = stats_up_to(&dir, 1).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let lines: Vec<&str> = kept.lines().collect();
        assert_eq!(lines.len(), 2, "{kept}");
        assert_eq!(lines[0], STATS_HEADER);
        assert_eq!(lines[1], format!("{},", old_line(1)));
        assert!(lines.iter().all(|l| l.split(',').count() == fields));
    }
}

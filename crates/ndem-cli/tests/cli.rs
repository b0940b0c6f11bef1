//! End-to-end tests of the `ndem` command and of checkpoint/restart.

use ndem::checkpoint::Checkpoint;
use ndem::scenes::{SceneFile, builders};
use ndem_cli::run::{RunOptions, run_scene};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A test's scratch directory, removed when the test passes and kept (for
/// a look at what it wrote) when it fails.
struct TmpDir(PathBuf);

impl std::ops::Deref for TmpDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TmpDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn tmp(name: &str) -> TmpDir {
    let d = std::env::temp_dir().join(format!("ndem-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TmpDir(d)
}

fn ndem(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ndem"))
        .args(args)
        .output()
        .unwrap()
}

/// `ndem` with the words of `line` (no word holds a space).
fn ndem_line(line: &str) -> std::process::Output {
    ndem(&line.split_whitespace().collect::<Vec<_>>())
}

/// `ndem` with the words of `line` and `--out out`.
fn ndem_out(line: &str, out: &Path) -> std::process::Output {
    let mut args: Vec<&str> = line.split_whitespace().collect();
    args.extend(["--out", out.to_str().unwrap()]);
    ndem(&args)
}

/// `ndem run` of the scene file `toml` (written to `dir/scene.toml`) with
/// the words of `args`, into `dir/out`: the output folder and the
/// command's output.
fn run_file(dir: &Path, toml: &str, args: &str) -> (PathBuf, std::process::Output) {
    let scene = dir.join("scene.toml");
    std::fs::write(&scene, toml).unwrap();
    let out = dir.join("out");
    let o = ndem_out(&format!("run {} {args}", scene.display()), &out);
    (out, o)
}

/// A minimal well-formedness check: every tag closes in order.
fn check_xml(text: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find('<') {
        let j = rest[i..].find('>').expect("unterminated tag") + i;
        let tag = &rest[i + 1..j];
        rest = &rest[j + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name.trim()),
                "mismatched </{name}>"
            );
        } else if !tag.ends_with('/') {
            stack.push(tag.split_whitespace().next().unwrap().to_string());
        }
    }
    assert!(stack.is_empty(), "unclosed tags {stack:?}");
}

/// The values of the VTK data array `name` in `text`.
fn data_array<T: std::str::FromStr<Err: std::fmt::Debug>>(text: &str, name: &str) -> Vec<T> {
    let start = text
        .find(&format!("Name=\"{name}\""))
        .unwrap_or_else(|| panic!("no {name} array"));
    let values = &text[start..];
    let values = &values[values.find('>').unwrap() + 1..values.find("</DataArray>").unwrap()];
    values
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
}

fn attr(text: &str, name: &str) -> usize {
    let k = text.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
    text[k..k + text[k..].find('"').unwrap()].parse().unwrap()
}

#[test]
fn every_builtin_scene_round_trips_through_its_file_and_runs() {
    for (name, _) in builders::BUILTIN {
        let scene = builders::builtin(name).unwrap();
        let file = SceneFile::from_scene(&scene);
        let text = file.to_toml().unwrap();
        let back = SceneFile::from_toml(&text).unwrap();
        assert_eq!(file, back, "{name}: TOML round trip");
        let rebuilt = back.to_scene().unwrap();
        assert_eq!(
            SceneFile::from_scene(&rebuilt),
            file,
            "{name}: scene round trip"
        );
        // run a few steps from the file form, end to end
        let dir = tmp(name);
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, &text).unwrap();
        let out = dir.join("out");
        let o = ndem_out(
            &format!("run {} --steps 3 --frame-every 3", path.display()),
            &out,
        );
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(summary["steps"], 3);
        let stats = std::fs::read_to_string(out.join("stats.csv")).unwrap();
        assert_eq!(stats.lines().count(), 4);
        // VTK: well formed, and the particle count survives
        let vtp = std::fs::read_to_string(out.join("frames/particles_00000003.vtp")).unwrap();
        check_xml(&vtp);
        let n = attr(&vtp, "NumberOfPoints");
        assert_eq!(
            n,
            rebuilt
                .world
                .shapes()
                .iter()
                .filter(|s| s.sphere_radius().is_some())
                .count()
                + summary["particles"].as_u64().unwrap() as usize
                - rebuilt.world.dynamic_count()
        );
        check_xml(&std::fs::read_to_string(out.join("frames/contacts_00000003.vtp")).unwrap());
        check_xml(&std::fs::read_to_string(out.join("particles.pvd")).unwrap());
        // every body that is not a sphere (machine parts, boxes, meshes,
        // cylinders, drums, half-spaces) is drawn in its own frames: well
        // formed, one polygon per display triangle (a drum as a 24-sided
        // cylinder, a half-space as a 2-triangle patch), every such body id
        // present
        use ndem::collide::Shape;
        let display = |s: &Shape| match s {
            Shape::HalfSpace { .. } => 2,
            Shape::Drum {
                radius,
                half_height,
            } => Shape::Cylinder {
                radius: *radius,
                half_height: *half_height,
            }
            .surface_triangles()
            .map_or(0, |(_, t)| t.len()),
            other => other.surface_triangles().map_or(0, |(_, t)| t.len()),
        };
        let shown: Vec<usize> = (0..rebuilt.world.len())
            .filter(|&i| display(&rebuilt.world.shapes()[i]) > 0)
            .collect();
        let triangles: usize = rebuilt.world.shapes().iter().map(display).sum();
        let bodies = out.join("frames/bodies_00000003.vtp");
        if triangles > 0 {
            let vtp = std::fs::read_to_string(&bodies).unwrap();
            check_xml(&vtp);
            assert_eq!(attr(&vtp, "NumberOfPolys"), triangles, "{name}");
            let ids: std::collections::BTreeSet<usize> =
                data_array::<usize>(&vtp, "body_id").into_iter().collect();
            assert_eq!(ids, shown.iter().copied().collect(), "{name}");
            check_xml(&std::fs::read_to_string(out.join("bodies.pvd")).unwrap());
        } else {
            assert!(!bodies.exists(), "{name}");
        }
        if *name == "drum" || *name == "triaxial" {
            // the container is drawn: the drum, the six walls
            assert!(!shown.is_empty(), "{name} shows no container");
        }
    }
}

#[test]
fn restart_continues_bit_identically() {
    let steps = |scene: &mut ndem::scenes::Scene, st: &mut ndem::step::Stepper, n: u64| {
        run_scene(
            scene,
            st,
            &RunOptions {
                steps: n,
                ..RunOptions::default()
            },
        )
        .unwrap();
    };
    // a pile with an emitter: checkpoints must carry emitter and RNG state,
    // and with model reduction the aggregates and memberships
    for reduce in [false, true] {
        let mut a = builders::pile(builders::PileSpec {
            particles: 60,
            rate: 200.0,
            seed: 9,
        })
        .unwrap();
        if reduce {
            a.reduction = Some(ndem::reduce::ReductionSettings::default());
        }
        let mut sa = a.stepper().unwrap();
        // without reduction as before (200 steps); with it, long enough for
        // aggregates to exist at the checkpoint
        steps(&mut a, &mut sa, if reduce { 300 } else { 200 });
        let cp = Checkpoint::capture(&a, &mut sa).to_json();
        if reduce {
            let level = sa
                .hooks_as::<ndem::reduce::Reducer>()
                .unwrap()
                .stats()
                .level;
            println!("reduction level at the checkpoint: {level}");
            assert!(level > 0.5, "nothing merged to test: h = {level}");
        }
        steps(&mut a, &mut sa, 150);
        let (mut b, mut sb) = Checkpoint::from_json(&cp).unwrap().restore().unwrap();
        steps(&mut b, &mut sb, 150);
        assert_eq!(a.world.len(), b.world.len());
        for (p, q) in a.world.positions().iter().zip(b.world.positions()) {
            for k in 0..3 {
                assert_eq!(p[k].to_bits(), q[k].to_bits());
            }
        }
        for (p, q) in a.world.velocities().iter().zip(b.world.velocities()) {
            assert_eq!(p.linear.map(f64::to_bits), q.linear.map(f64::to_bits));
            assert_eq!(p.angular.map(f64::to_bits), q.angular.map(f64::to_bits));
        }
        assert_eq!(sa.time().to_bits(), sb.time().to_bits());
        let hosts = |w: &ndem::step::World| (0..w.len()).map(|i| w.host_of(i)).collect::<Vec<_>>();
        assert_eq!(hosts(&a.world), hosts(&b.world));
    }
}

#[test]
fn checkpoint_files_of_either_format_resume_from_the_command_line() {
    for (format, extension) in [("json", "json"), ("binary", "ckpt")] {
        let dir = tmp(&format!("resume-{format}"));
        let out = dir.join("first");
        let o = ndem_out(
            &format!(
                "run column --steps 20 --checkpoint-every 10 --checkpoint-format {format} --frame-every 0"
            ),
            &out,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let cp = out.join(format!("checkpoint_00000010.{extension}"));
        assert!(cp.exists(), "{format}: no {}", cp.display());
        // on one thread: the result does not depend on it
        let o = ndem_out(
            &format!(
                "resume {} --steps 10 --threads 1 --frame-every 0",
                cp.display()
            ),
            &dir.join("second"),
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let a: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        let b: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("second/summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(a["time"], b["time"]);
        // same final state: compare the last stats line but for timings
        let last = |p: &Path| {
            let s = std::fs::read_to_string(p).unwrap();
            s.lines()
                .last()
                .unwrap()
                .split(',')
                .take(16)
                .collect::<Vec<_>>()
                .join(",")
        };
        assert_eq!(
            last(&out.join("stats.csv")),
            last(&dir.join("second/stats.csv")),
            "{format}"
        );
    }
}

#[test]
fn bad_input_gives_one_error_line_and_exit_code_2() {
    let dir = tmp("bad");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["run".into(), "no-such-scene".into()],
            "unknown built-in scene",
        ),
        (
            vec![
                "describe".into(),
                dir.join("missing.toml").to_string_lossy().into_owned(),
            ],
            "cannot read scene file",
        ),
    ];
    for (args, expect) in cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = ndem(&a);
        assert_eq!(o.status.code(), Some(2), "{a:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(expect), "{err}");
    }
    // malformed and incomplete scene files
    let good = SceneFile::from_scene(&builders::column(3).unwrap())
        .to_toml()
        .unwrap();
    for (name, text, expect) in [
        (
            "malformed.toml",
            "name = \"x\"\ngravity = [0, 0,\n".to_string(),
            "scene file",
        ),
        ("incomplete.toml", good.replace("dt = ", "dtx = "), "dt"),
        (
            "badmotion.toml",
            good.replacen("motion = \"dynamic\"", "motion = \"flying\"", 1),
            "flying",
        ),
        (
            "negmass.toml",
            good.replacen("radius = 0.0065", "radius = -0.0065", 1),
            "radius",
        ),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        let out = dir.join(format!("out-{name}"));
        let o = ndem_out(&format!("run {} --steps 2", p.display()), &out);
        assert_eq!(o.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{name}: {err}");
        assert!(err.contains(expect), "{name}: {err}");
        assert!(
            !out.join("summary.json").exists(),
            "{name}: nothing half-written"
        );
    }
    // unwritable output folder: a file where the folder should be
    let blocker = dir.join("blocker");
    std::fs::write(&blocker, b"x").unwrap();
    let o = ndem_out("run column --steps 2", &blocker.join("sub"));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot write output"));
}

#[test]
fn list_names_every_builtin_scene() {
    let o = ndem(&["list"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    for (name, _) in builders::BUILTIN {
        assert!(text.contains(name));
    }
}

#[test]
fn zero_iterations_is_refused_naming_the_field() {
    let dir = tmp("zero-iterations");
    let o = ndem_out("run column --iterations 0", &dir);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("run.iterations"), "{err}");
}

/// A column of spheres with density 1e300 kg/m³ on a 6 MPa Hertz contact
/// (no contact stiffness can carry that load): the run stops with exit 2
/// and one line naming the step and time, keeps its statistics, frames and
/// checkpoints, and the last checkpoint resumes.
#[test]
fn blow_up_exits_2_naming_step_and_time_with_outputs_intact() {
    let dir = tmp("blow-up");
    let o = ndem(&["describe", "column", "--toml"]);
    assert!(o.status.success());
    let toml: String = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with("mass = ") && !l.starts_with("inertia = "))
        .map(|l| {
            if l.starts_with("density = ") {
                "density = 1e300".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let (out, o) = run_file(
        &dir,
        &toml,
        "--steps 100 --checkpoint-every 5 --frame-every 5",
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    let err: Vec<&str> = err.lines().filter(|l| !l.contains("WARN")).collect();
    assert_eq!(err.len(), 1, "{err:?}");
    assert!(err[0].contains("step 8 (t = 0.035"), "{}", err[0]);
    let stats = std::fs::read_to_string(out.join("stats.csv")).unwrap();
    assert_eq!(stats.lines().count(), 1 + 7, "header and 7 steps");
    assert!(!out.join("summary.json").exists());
    assert!(out.join("particles.pvd").exists());
    let cp = out.join("checkpoint_00000005.json");
    let o = ndem_out(
        &format!("resume {} --steps 2 --frame-every 0", cp.display()),
        &dir.join("resumed"),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `ndem run column --reduce`: `stats.csv` shows the reduction level h(t)
/// and the VTK frames mark each particle's aggregate.
/// The merged column: h, every sphere's aggregate id in the particle
/// frame, and in the contact frame its floor contact solved (`held` 0)
/// beside the contacts inside the aggregate that hold an impulse (1).
#[test]
fn reduced_run_reports_h_aggregate_ids_and_held_contacts() {
    let dir = tmp("reduce");
    let o = ndem_out("run column --reduce --steps 300 --frame-every 300", &dir);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stats = std::fs::read_to_string(dir.join("stats.csv")).unwrap();
    let header: Vec<&str> = stats.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "reduction_level").unwrap();
    let last: Vec<&str> = stats.lines().last().unwrap().split(',').collect();
    let h: f64 = last[col].parse().unwrap();
    assert!((h - 0.96).abs() < 1e-12, "h = {h}");
    let frame = dir.join("frames").join("particles_00000300.vtp");
    let text = std::fs::read_to_string(frame).unwrap();
    let ids: Vec<i64> = data_array(&text, "aggregate");
    assert_eq!(ids.len(), 25);
    assert!(ids.iter().all(|&i| i == ids[0] && i > 25), "{ids:?}");
    let contacts = std::fs::read_to_string(dir.join("frames/contacts_00000300.vtp")).unwrap();
    check_xml(&contacts);
    let held: Vec<u8> = data_array(&contacts, "held");
    assert_eq!(held.len(), attr(&contacts, "NumberOfLines"));
    assert_eq!(held.iter().filter(|&&h| h == 0).count(), 1, "{held:?}");
    assert!(held.len() > 1 && held.iter().all(|&h| h <= 1), "{held:?}");
}

/// `--particles` sizes the built-in packing (and is refused, naming the
/// field, for a scene without a size); the summary reports the run's peak
/// memory and the most contacts of a step; `--threads` and the coloured
/// solver give the same statistics on one and two threads, and two
/// threads say that the sweeps of a bed this small ran on one.
#[test]
fn packing_size_threads_and_peak_memory() {
    let mut stats = Vec::new();
    for threads in ["1", "2"] {
        let dir = tmp(&format!("sized-{threads}"));
        let o = ndem_out(
            &format!(
                "run packing --particles 300 --solver pgs-coloured --threads {threads} --steps 40 --frame-every 0"
            ),
            &dir,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(summary["particles"], 300);
        assert_eq!(summary["solver"], "pgs-coloured");
        assert!(
            summary["peak_rss_bytes"].as_u64().unwrap() > 1 << 20,
            "{summary}"
        );
        // a bed this small is swept on one thread, and two say so
        let most = summary["max_contacts"].as_u64().unwrap();
        assert!(most > 0 && most as f64 >= summary["mean_contacts"].as_f64().unwrap());
        let said = String::from_utf8_lossy(&o.stdout);
        let note = "the pgs-coloured sweeps ran on one thread";
        assert_eq!(
            said.matches(note).count(),
            usize::from(threads == "2"),
            "{said}"
        );
        // every column but the timings
        let text = std::fs::read_to_string(dir.join("stats.csv")).unwrap();
        let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
        let keep: Vec<usize> = (0..header.len())
            .filter(|&i| !header[i].starts_with("t_"))
            .collect();
        let rows: Vec<Vec<String>> = text
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                keep.iter().map(|&i| f[i].to_string()).collect()
            })
            .collect();
        stats.push(rows);
    }
    assert_eq!(stats[0], stats[1]);
    let o = ndem_line("run column --particles 10 --steps 1");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("particles"));
}

/// `--threads 100000` must not abort the process when the system refuses
/// a thread; above `MAX_THREADS` it is an error naming
/// `run.threads` (exit code 2, no output folder). More threads than cores
/// run, with a note that they took turns; `--particles 0` says what it
/// needs.
#[test]
fn thread_counts_beyond_the_cores_and_the_cap() {
    let dir = tmp("thread_cap");
    let args = |threads: &str, out: &str| {
        let out = dir.join(out);
        let o = ndem_out(
            &format!("run packing --particles 50 --steps 3 --frame-every 0 --threads {threads}"),
            &out,
        );
        (o, out)
    };
    let (o, out) = args("100000", "capped");
    assert_eq!(o.status.code(), Some(2));
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("run.threads") && said.contains("1024"),
        "{said}"
    );
    assert!(!out.exists());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let more = (cores + 1).to_string();
    let (o, _) = args(&more, "oversubscribed");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said = String::from_utf8_lossy(&o.stdout);
    let note = format!("{more} threads on {cores} cores");
    assert_eq!(said.matches(&note).count(), 1, "{said}");
    let (o, _) = args(&cores.to_string(), "fitting");
    assert!(o.status.success());
    assert!(!String::from_utf8_lossy(&o.stdout).contains("cores: the threads took turns"));
    let o = ndem_line("run packing --particles 0 --steps 1");
    assert_eq!(o.status.code(), Some(2));
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(said.contains("`packing` needs at least 1"), "{said}");
}

/// Under a memory limit that cannot hold 600 thread stacks (`ulimit -v`,
/// which binds root too), `--threads 600` is refused when the run starts,
/// naming `run.threads` (exit code 2), not a panic in the first pass
/// that spawns them. Two threads run under the same limit.
#[cfg(unix)]
#[test]
fn threads_the_system_refuses_are_a_typed_error() {
    let dir = tmp("threads_refused");
    let limited = |threads: &str, out: &str| {
        let out = dir.join(out);
        let o = Command::new("sh")
            .args(["-c", "ulimit -v 400000 && exec \"$0\" \"$@\""])
            .arg(env!("CARGO_BIN_EXE_ndem"))
            .args(["run", "packing", "--particles", "50", "--steps", "2"])
            .args(["--frame-every", "0", "--threads", threads, "--out"])
            .arg(&out)
            .output()
            .unwrap();
        (o, out)
    };
    let (o, out) = limited("600", "refused");
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("run.threads") && said.contains("refused"),
        "{said}"
    );
    assert!(!out.exists());
    let (o, _) = limited("2", "given");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// With several threads and a solver that sweeps on one, the run's summary
/// says so (once, on stdout; a failed run keeps its one error line);
/// `pgs-coloured` on a bed this small says instead that its sweeps ran on
/// one thread (below `PgsSettings::parallel_min_contacts`), and one thread
/// says nothing. The impact-stage sweeps are set from the command line.
#[test]
fn several_threads_with_a_serial_solver_are_noted() {
    let dir = tmp("threads_note");
    let run = |extra: &[&str], name: &str| {
        let out = dir.join(name);
        let mut args = vec![
            "run",
            "packing",
            "--particles",
            "300",
            "--steps",
            "30",
            "--frame-every",
            "0",
            "--stats-every",
            "1",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = ndem(&args);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        (o.status.code(), out + &err)
    };
    let (code, err) = run(&["--threads", "2"], "pgs2");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        err.matches("assembly ran on up to 2 threads").count(),
        1,
        "{err}"
    );
    assert!(err.contains("the `pgs` solver swept on one"), "{err}");
    // the summary's status counts are those of stats.csv (steps with
    // contacts), and so is its unresolved count
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("pgs2").join("summary.json")).unwrap(),
    )
    .unwrap();
    let stats = std::fs::read_to_string(dir.join("pgs2").join("stats.csv")).unwrap();
    let mut lines = stats.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (contacts, status, unresolved) = (col("contacts"), col("status"), col("unresolved"));
    let (step, overlap) = (col("step"), col("overlap_max"));
    let mut counts = std::collections::BTreeMap::<String, u64>::new();
    let mut unresolved_steps = 0;
    let mut deepest = (0.0f64, 0u64);
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        if f[contacts] != "0" {
            *counts.entry(f[status].to_string()).or_default() += 1;
        }
        unresolved_steps += u64::from(f[unresolved] == "true");
        let o: f64 = f[overlap].parse().unwrap();
        if o > deepest.0 {
            deepest = (o, f[step].parse().unwrap());
        }
    }
    let reported: std::collections::BTreeMap<String, u64> =
        serde_json::from_value(summary["statuses"].clone()).unwrap();
    assert!(counts.values().sum::<u64>() >= 20, "{stats}");
    assert_eq!(reported, counts, "{summary}");
    assert_eq!(summary["unresolved_steps"], unresolved_steps, "{summary}");
    // the largest overlap and its step are those of stats.csv (written
    // with `{:e}`, which round-trips an f64 exactly)
    assert!(deepest.0 > 0.0, "{stats}");
    assert_eq!(summary["overlap_max"], deepest.0, "{summary}");
    assert_eq!(summary["overlap_max_step"], deepest.1, "{summary}");
    let said = format!(
        "largest overlap: {:.3} of its contact's radius at step {}",
        deepest.0, deepest.1
    );
    assert!(err.contains(&said), "{err}");
    let (code, err) = run(&["--threads", "2", "--solver", "pgs-coloured"], "col2");
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("assembly ran on up to 2 threads"), "{err}");
    assert_eq!(err.matches("note:").count(), 1, "{err}");
    assert!(
        err.contains("note: the pgs-coloured sweeps ran on one thread"),
        "{err}"
    );
    let (code, err) = run(&["--threads", "1", "--impact-iterations", "5"], "pgs1");
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("note:"), "{err}");
    let (code, err) = run(&["--impact-iterations", "0"], "zero");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("impact_iterations"), "{err}");
}

/// At the scenes' fixed iteration budget the end of a run says that the
/// budget was the setting and what residual it reached against the
/// resolved-step tolerance, not that the solves failed; `summary.json`
/// carries the same figures.
#[test]
fn a_fixed_budget_run_reports_its_budget_and_residual() {
    let dir = tmp("fixed-budget");
    let out = dir.0.join("run");
    let o = ndem_out("run column --steps 30", &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("continuous stage: 100 iterations per step, a fixed budget"),
        "{text}"
    );
    assert!(text.contains("of 30 steps unresolved"), "{text}");
    assert!(!text.contains("not converged"), "{text}");
    assert!(text.contains("impact stage: 3 steps had impacts"), "{text}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["fixed_budget"], true);
    let median = summary["normal_residual_median"].as_f64().unwrap();
    let tolerance = summary["residual_tolerance"].as_f64().unwrap();
    assert!(median > 0.0 && median < tolerance, "{summary}");
}

/// `--reduce` on a built-in scene whose physics reduction is known not to
/// keep says so; on one where nothing is known against it, it does not.
#[test]
fn reduce_warns_where_the_scene_carries_a_caveat() {
    let dir = tmp("reduce-caveat");
    for (scene, warned) in [("triaxial", true), ("column", false)] {
        let out = dir.join(scene);
        let o = ndem_out(
            &format!("run {scene} --reduce --steps 1 --frame-every 0"),
            &out,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            err.contains(&format!("warning: --reduce on `{scene}`")),
            warned,
            "{err}"
        );
    }
}

/// A scene with joints writes `joints.csv` beside `stats.csv`: one line
/// per statistics line with the step, the time, the schedule's phase and
/// each joint's drive force. A sphere hung from a static one by an
/// actuator whose position drive holds its length: the drive pulls with
/// the sphere's weight, `−m g` (measured: within 2.5e-9 of it on every
/// step, on the last ones to the digit; asserted within 2.5e-8). Resumed
/// into the same folder (`--append`) from step 10, the file keeps its
/// lines up to step 10 and continues with those the run wrote after it,
/// line for line.
#[test]
fn a_scene_with_joints_writes_its_drive_forces() {
    let dir = tmp("joints");
    let (out, o) = run_file(
        &dir,
        &hanging_sphere(),
        "--steps 20 --checkpoint-every 10 --frame-every 0",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let written = std::fs::read_to_string(out.join("joints.csv")).unwrap();
    let mut lines = written.lines();
    assert_eq!(lines.next(), Some("step,time,phase,drive_force_0"));
    let weight = 4.0 / 3.0 * std::f64::consts::PI * 0.01f64.powi(3) * 1000.0 * 9.81;
    let mut steps = Vec::new();
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), 4, "{line}");
        assert_eq!(fields[2], "", "no schedule, no phase");
        steps.push(fields[0].parse::<u64>().unwrap());
        let force: f64 = fields[3].parse().unwrap();
        assert!(
            (force + weight).abs() <= 2.5e-8 * weight,
            "{line}: against {weight}"
        );
    }
    assert_eq!(steps, (1..=20).collect::<Vec<u64>>());
    // the lines after the checkpoint replaced by one of another run: the
    // resumed run keeps those up to step 10 and writes its own after them
    let kept: Vec<&str> = written.lines().take(11).collect();
    let tampered = format!("{}\n21,1e-1,,0e0\n", kept.join("\n"));
    std::fs::write(out.join("joints.csv"), tampered).unwrap();
    let o = ndem_line(&format!(
        "resume {} --append --steps 10 --frame-every 0",
        out.join("checkpoint_00000010.json").display()
    ));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(out.join("joints.csv")).unwrap(),
        written
    );
}

/// A static sphere and a dynamic one 0.5 m below it, held by an actuator
/// whose position drive keeps its length.
fn hanging_sphere() -> String {
    let sphere = |motion: &str, z: f64| {
        format!(
            "[[bodies]]\nmaterial = 0\nmotion = \"{motion}\"\nposition = [0.0, 0.0, {z:?}]\n\
             [bodies.shape]\ntype = \"sphere\"\nradius = 0.01\n\n"
        )
    };
    format!(
        "{HANGING_SPHERE_RUN}{}{}{HANGING_SPHERE_JOINT}",
        sphere("static", 1.0),
        sphere("dynamic", 0.5)
    )
}

const HANGING_SPHERE_RUN: &str = r#"name = "hanging sphere"
gravity = [0.0, 0.0, -9.81]

[run]
dt = 0.005
duration = 1.0
iterations = 100

[[materials]]
density = 1000.0
youngs_modulus = 6000000.0
poisson_ratio = 0.3
restitution = 0.18
friction = 0.5
rolling_resistance = 0.0
damping = 0.0

"#;

const HANGING_SPHERE_JOINT: &str = r#"[[joints]]
kind = "actuator"
body_a = 0
body_b = 1
anchor_a = [0.0, 0.0, 0.0]
anchor_b = [0.0, 0.0, 0.0]
relative_orientation = [1.0, 0.0, 0.0, 0.0]
rest_length = 0.5
drive_target = 0.5
motor_max_force = 100.0
compliance = 1e-10
"#;

//! Runs that survive interruption and say what they did: an interrupted
//! run leaves consistent outputs, `resume` continues to the end time in a
//! new folder, built-in names, output tables, validation and reused
//! folders behave as the command-line docs say, each checked with the
//! `ndem` command a user would type.

use ndem::checkpoint::Checkpoint;
use ndem::scenes::{SceneFile, builders};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ndem-robust-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ndem_in(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ndem"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&read(p)).unwrap()
}

/// Steps of the data lines of a `stats.csv`.
fn stats_steps(p: &Path) -> Vec<u64> {
    read(p)
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect()
}

/// Steps of the frames a `.pvd` lists.
fn pvd_steps(p: &Path) -> Vec<u64> {
    read(p)
        .lines()
        .filter_map(|l| {
            let f = l.split("file=\"").nth(1)?;
            let stem = Path::new(&f[..f.find('"')?])
                .file_stem()?
                .to_str()?
                .to_string();
            stem.rsplit('_').next()?.parse().ok()
        })
        .collect()
}

/// A run interrupted by SIGINT leaves a consistent `stats.csv`,
/// `.pvd` and `summary.json` (`"interrupted": true`, exit code 130).
#[test]
fn sigint_leaves_consistent_outputs() {
    let dir = tmp("sigint");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ndem"))
        .args([
            "run",
            "pile",
            "--out",
            "x",
            "--frame-every",
            "40",
            "--steps",
            "100000",
        ])
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // wait until the run has written some steps (streamed, not at the end)
    let stats = dir.join("x/stats.csv");
    let start = Instant::now();
    while stats_lines(&stats) < 60 {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no statistics streamed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let summary = json(&dir.join("x/summary.json"));
    assert_eq!(summary["interrupted"], true);
    let last = summary["last_step"].as_u64().unwrap();
    let steps = stats_steps(&stats);
    assert_eq!(
        steps,
        (1..=last).collect::<Vec<_>>(),
        "stats.csv holds every step to the last"
    );
    // frames every 40 steps and the final state, all listed and on disk
    let frames = pvd_steps(&dir.join("x/particles.pvd"));
    let mut expected: Vec<u64> = (0..=last).step_by(40).collect();
    if !last.is_multiple_of(40) {
        expected.push(last);
    }
    assert_eq!(frames, expected);
    for s in frames {
        assert!(dir.join(format!("x/frames/particles_{s:08}.vtp")).exists());
    }
    let _ = std::fs::remove_dir_all(dir);
}

fn stats_lines(p: &Path) -> usize {
    std::fs::read_to_string(p).map_or(0, |t| t.lines().count().saturating_sub(1))
}

/// `ndem resume` without `--steps` continues to the scene's end
/// time, into a new folder; the original run's files are untouched. With
/// `--append` it continues the original files consistently.
#[test]
fn resume_defaults_to_the_end_time_and_a_new_folder() {
    let dir = tmp("resume");
    let o = ndem_in(
        &dir,
        &[
            "run",
            "column",
            "--steps",
            "400",
            "--checkpoint-every",
            "200",
            "--out",
            "a",
            "--frame-every",
            "100",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let before = read(&dir.join("a/stats.csv"));
    let o = ndem_in(&dir, &["resume", "a/checkpoint_00000200.json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let resumed = dir.join("a-resumed-00000200");
    let summary = json(&resumed.join("summary.json"));
    // column: duration 3 s at dt = 5 ms is 600 steps; from step 200 to 600
    assert_eq!(summary["steps"], 400);
    assert_eq!(summary["first_step"], 200);
    assert_eq!(summary["last_step"], 600);
    assert_eq!(
        read(&dir.join("a/stats.csv")),
        before,
        "the original run was overwritten"
    );
    // --append: the original folder continues from step 200
    let o = ndem_in(
        &dir,
        &[
            "resume",
            "a/checkpoint_00000200.json",
            "--append",
            "--steps",
            "100",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        stats_steps(&dir.join("a/stats.csv")),
        (1..=300).collect::<Vec<_>>()
    );
    assert_eq!(
        pvd_steps(&dir.join("a/particles.pvd")),
        vec![0, 100, 200, 300]
    );
    assert!(!dir.join("a/frames/particles_00000400.vtp").exists());
    // the appended lines equal the resumed run's (bit-identical restart)
    let cut = |t: &str, step: usize| {
        t.lines()
            .nth(step)
            .unwrap()
            .split(',')
            .take(18)
            .collect::<Vec<_>>()
            .join(",")
    };
    assert_eq!(
        cut(&read(&dir.join("a/stats.csv")), 300),
        cut(&read(&resumed.join("stats.csv")), 100)
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A folder named like a built-in scene does not shadow it.
#[test]
fn builtin_names_win_over_folders() {
    let dir = tmp("names");
    let o = ndem_in(&dir, &["run", "column", "--out", "column", "--steps", "5"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = ndem_in(&dir, &["describe", "column"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("column:"));
    let o = ndem_in(&dir, &["run", "column", "--steps", "5", "--out", "other"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // a path to a folder says so
    let o = ndem_in(&dir, &["run", "./column"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is a folder"));
    let _ = std::fs::remove_dir_all(dir);
}

/// The scene file's `[output]` table is honoured.
#[test]
fn output_table_is_honoured() {
    let dir = tmp("output");
    let mut file = SceneFile::from_scene(&builders::column(3).unwrap());
    file.output.frame_every = 10;
    file.output.stats_every = 10;
    std::fs::write(dir.join("s.toml"), file.to_toml().unwrap()).unwrap();
    let o = ndem_in(&dir, &["run", "s.toml", "--steps", "35", "--out", "o"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stats_steps(&dir.join("o/stats.csv")), vec![10, 20, 30]);
    // frames every 10 steps and the final state (problem 6)
    assert_eq!(
        pvd_steps(&dir.join("o/particles.pvd")),
        vec![0, 10, 20, 30, 35]
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Every listed validation gap gives a typed error naming the
/// field, one line, exit code 2.
#[test]
fn validation_gaps_are_closed() {
    let dir = tmp("validate");
    let pile = SceneFile::from_scene(&builders::builtin("pile").unwrap());
    let column = SceneFile::from_scene(&builders::column(3).unwrap());
    let mut cases: Vec<(SceneFile, &str)> = Vec::new();
    let mut f = pile.clone();
    f.emitters[0].centre[1] = f64::NAN;
    cases.push((f, "emitters.centre"));
    let mut f = pile.clone();
    f.emitters[0].bidisperse_fraction = 2.0;
    cases.push((f, "emitters.bidisperse_fraction"));
    let mut f = column.clone();
    f.bodies[1].orientation = [0.7, 0.7, 0.0, 0.0];
    cases.push((f, "bodies.orientation"));
    let mut f = column.clone();
    f.bodies[1].orientation = [0.0; 4];
    cases.push((f, "has norm 0"));
    for (k, (file, expect)) in cases.into_iter().enumerate() {
        // TOML cannot hold NaN as written by serde: write the field by hand
        let text = file.to_toml().unwrap_or_default();
        let path = dir.join(format!("case{k}.toml"));
        std::fs::write(&path, text).unwrap();
        let o = ndem_in(
            &dir,
            &[
                "run",
                path.to_str().unwrap(),
                "--steps",
                "1",
                "--out",
                &format!("o{k}"),
            ],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "case {k}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains(expect),
            "case {k}: expected `{expect}` in {err}"
        );
    }
    // checkpoints: another version, a negative time, another scene's history
    let o = ndem_in(
        &dir,
        &[
            "run",
            "column",
            "--steps",
            "10",
            "--checkpoint-every",
            "10",
            "--out",
            "c",
        ],
    );
    assert!(o.status.success());
    let cp = Checkpoint::from_json(&read(&dir.join("c/checkpoint_00000010.json"))).unwrap();
    let mut bad: Vec<(Checkpoint, &str)> = Vec::new();
    let mut c = cp.clone();
    c.version = 99;
    bad.push((c, "checkpoint.version"));
    let mut c = cp.clone();
    c.time = -1.0;
    bad.push((c, "checkpoint.time"));
    let mut c = cp.clone();
    c.contacts.push((500, 0, 0, 1.0, [0.0; 3], [0.0; 3]));
    bad.push((c, "checkpoint.contacts"));
    for (k, (c, expect)) in bad.into_iter().enumerate() {
        let path = dir.join(format!("cp{k}.json"));
        std::fs::write(&path, c.to_json()).unwrap();
        let o = ndem_in(&dir, &["resume", path.to_str().unwrap(), "--steps", "1"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(expect), "expected `{expect}` in {err}");
    }
    // --time -1: our message, not clap's "unexpected argument"
    let o = ndem_in(&dir, &["run", "column", "--time", "-1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("--time must be finite and >= 0"), "{err}");
    // a time below half of the column's Δt = 5 ms would run no step
    let o = ndem_in(&dir, &["run", "column", "--time", "0.002"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("shorter than half a step"), "{err}");
    // a checkpoint at the scene's end time: resuming it has nothing to run
    let o = ndem_in(
        &dir,
        &["run", "column", "--checkpoint-every", "600", "--out", "end"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = ndem_in(&dir, &["resume", "end/checkpoint_00000600.json"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("nothing to run"), "{err}");
    assert!(!dir.join("end-resumed-00000600").exists());
    let _ = std::fs::remove_dir_all(dir);
}

/// A reused output folder is refused (no stale frames mixed in);
/// with `--overwrite` the folder holds the new run only.
#[test]
fn reused_folders_are_refused_or_replaced() {
    let dir = tmp("stale");
    // `column` into the folder `o`, frames every 50 steps
    let run = |steps: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "column",
            "--steps",
            steps,
            "--frame-every",
            "50",
            "--out",
            "o",
        ];
        args.extend_from_slice(extra);
        ndem_in(&dir, &args)
    };
    let o = run("120", &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run("60", &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--overwrite"));
    let o = run("60", &["--overwrite"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(pvd_steps(&dir.join("o/particles.pvd")), vec![0, 50, 60]);
    let on_disk = std::fs::read_dir(dir.join("o/frames"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("particles_")
        })
        .count();
    assert_eq!(on_disk, 3, "stale frames left in the folder");
    let _ = std::fs::remove_dir_all(dir);
}

/// Writing to a closed pipe ends quietly.
#[test]
fn closed_pipe_ends_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ndem"))
        .args(["describe", "packing", "--toml"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // read one line, then close the pipe (as `| head -1` does)
    {
        use std::io::Read;
        let mut first = [0u8; 16];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{:?}: {err}", o.status);
    assert!(!err.contains("panicked"), "{err}");
}

/// Compatible contact dynamics from the command line. The
/// beam (a platform of weight 10 N on three equal supports, four contact
/// points each): compatible CD gives 10/3 N per support (the paper's
/// answer); PGS, a step under the run's compliant law, carries the weight
/// on the settled beam and less than it on the beam as built. The input
/// may be a scene or a checkpoint.
#[test]
fn forces_from_the_command_line() {
    let dir = tmp("forces");
    let o = ndem_in(
        &dir,
        &["forces", "beam", "--method", "compatible", "--out", "c"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let per_support = |csv: &str| -> Vec<f64> {
        let mut f = [0.0; 3];
        for l in csv.lines().skip(1) {
            let x: Vec<&str> = l.split(',').collect();
            let a: usize = x[0].parse().unwrap();
            f[a] += x[5].parse::<f64>().unwrap();
        }
        f.to_vec()
    };
    let f = per_support(&read(&dir.join("c/forces.csv")));
    // measured 3.33333331 N each (truss residual 5.9e-9); tolerance 10x
    for x in &f {
        assert!((x - 10.0 / 3.0).abs() <= 2e-7, "{f:?}");
    }
    // PGS solves a step of the packing at rest under the run's contact
    // law. On the beam as built (the platform just touching its supports)
    // the compliant rows give way during that step and carry less than the
    // weight: measured 9.9729 N of 10 N (a limit of the method on scenes
    // that have not settled)
    let o = ndem_in(&dir, &["forces", "beam", "--method", "pgs", "--out", "p"]);
    assert!(o.status.success());
    let f = per_support(&read(&dir.join("p/forces.csv")));
    let carried = f.iter().sum::<f64>();
    assert!(carried < 10.0 - 1e-3 && carried > 9.9, "{f:?}");
    // on the settled beam (a checkpoint after 1 s) its forces carry the
    // weight: measured 1.8e-6 N off, the positions of a run at the papers'
    // 100 sweeps still creep
    let o = ndem_in(
        &dir,
        &[
            "run",
            "beam",
            "--steps",
            "200",
            "--checkpoint-every",
            "200",
            "--frame-every",
            "0",
            "--out",
            "s",
        ],
    );
    assert!(o.status.success());
    let settled = "s/checkpoint_00000200.json";
    let o = ndem_in(&dir, &["forces", settled, "--method", "pgs", "--out", "q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let f = per_support(&read(&dir.join("q/forces.csv")));
    assert!((f.iter().sum::<f64>() - 10.0).abs() <= 1e-5, "{f:?}");
    // from a checkpoint
    let o = ndem_in(
        &dir,
        &[
            "run",
            "beam",
            "--steps",
            "4",
            "--checkpoint-every",
            "4",
            "--out",
            "r",
        ],
    );
    assert!(o.status.success());
    let o = ndem_in(
        &dir,
        &["forces", "r/checkpoint_00000004.json", "--out", "k"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("12 contacts by compatible"));
    let _ = std::fs::remove_dir_all(dir);
}

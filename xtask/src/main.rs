//! `cargo xtask <suite>`: verification and experiment suites for ndem.
//!
//! Every suite takes `--out DIR` (default `target/xtask/<suite>/`) and
//! `--quick`, writes `summary.json`, CSV files and a `report.md` there, and
//! prints progress to stderr.

mod ab;
mod codegen;
mod collapse;
mod compatible;
mod conveyor;
mod creep;
mod dem_vs_ndem;
mod drum;
mod excavator;
mod fclib;
mod fuzz;
mod host;
mod impact_scope;
mod mpi_excavator;
mod mpi_pile;
mod mpi_reduce;
mod mpi_scaling;
mod peers;
mod peers_bed;
mod peers_ndem;
mod peers_rapier;
mod plot;
mod reduce;
mod reduce_classes;
mod reduce_drum;
mod report;
mod runs;
mod scaling;
mod solvers;
mod targets;
mod triaxial;
mod verify;
mod warmstart;

use std::path::PathBuf;
use std::process::ExitCode;

/// Options shared by all suites.
#[derive(Debug, Clone)]
pub struct SuiteOptions {
    /// Output folder.
    pub out: PathBuf,
    /// Small sizes that run in minutes.
    pub quick: bool,
    /// Extra positional arguments (sub-suite names).
    pub args: Vec<String>,
    /// Override of the particle count (suites that have one).
    pub particles: Option<usize>,
    /// Override of the number of interleaved repeats (`peers`).
    pub repeats: Option<usize>,
    /// Override of a suite's random seed (`peers`: the generated bed;
    /// `fuzz`: the first case's).
    pub seed: Option<u64>,
}

const USAGE: &str = "usage: cargo xtask <suite> [--quick] [--out DIR] [--particles N] [--repeats N] [--seed N]
(--particles: ab, peers, mpi-scaling, scaling, warmstart pile|drum|triaxial, reduce drum, compatible cannonball; --repeats: ab, peers, scaling; --seed: fuzz, peers)

suites:
  verify      physics verification cases with known answers
  solvers     PGS, blocked PGS, Jacobi and APGD on problem snapshots
  warmstart column|pile|drum [frictional-caps]|triaxial   the warm-starting paper, sections 4.1-4.4
  dem-vs-ndem smooth DEM versus NDEM cost as stiffness grows
  compatible beam|cannonball   compatible contact dynamics
  reduce speedup|collapse|drum|conveyor   model reduction: measured speed-up against h; the paper's collapse, drum and conveyor
              (speedup [tolerance|tolerance=X] [random] [hubs] [classes] [static]: to a residual tolerance, on a settled
              random bed, with hub blocks, residuals per contact class, aggregates merged with the floor)
  fclib [FILES...] every solver on FCLIB problems (default: the three of crates/ndem-fclib/tests/data and two generated ones); a file that cannot be read is a row of the report
  excavator [timing [active-set]|reduce [carry] [static]|coloured]   the warm-starting paper's excavator, cold and warm (timing: cost only; reduce: warm with and without model reduction; carry: and a reduced run whose bucket carries its load merged; static: and a reduced run whose bed merges with the trench's floor and walls; coloured: pgs-direct against pgs-direct-coloured, or with timing the timed run in the coloured order on every core; active-set: with timing, the impact stage on the active set the impacts reach)
  fuzz [--cases N]     mutated scene files and checkpoints: the loaders and stepper never panic (--seed S: case k takes seed S + k, default 1)
  impact-scope [SCENE...] [samples=N]  the active-set impact stage against the whole-network one on every built-in scene (both converged, bound: the join velocity)
  creep                a pile at rest: drift against iterations, warm start and time step
  peers [smooth [settled]|ndem [ours]]  ndem-smooth beside LIGGGHTS (apt-get install liggghts) on one bed (--seed: another draw of it, default 11; `smooth settled`: the 10^5 bed settled for the full 1.5 s, not 2000 steps); the NDEM step on 1 and 2 threads beside rapier3d-f64 (built from xtask/rapier-peer; `ndem ours`: without it)
  codegen              the release build with LLVM's IR verifier on every function (RUSTC_BOOTSTRAP=1 -Zverify-llvm-ir): no miscompiled loop
  ab [BASE] [--threads N] [--steps N] [--callgrind]   the `ndem` command built at git revision BASE (default HEAD) against the working tree on one settled bed: stage times interleaved (ABBA, minima, ratios, load), whether the trajectories stay bit-identical, and with --callgrind instruction counts by function
  mpi-scaling          distributed runs on 1, 2, 4 MPI ranks (.ci/install-mpi): strong and weak scaling, communication, sweeps by subdomains, cluster model
  scaling [threads=1,2,...] [checkpoint=FILE]   the coloured sweep's schedule bound for 1-64 threads on a settled bed (and a 10^6 lattice), against the step measured on the listed thread counts (default 1,2); checkpoint: the bed of an `ndem run` checkpoint instead of the peers' bed settled here";

/// The word after `flag`, parsed; the error says the flag needs `what`.
fn value<T: std::str::FromStr>(
    args: &mut impl Iterator<Item = String>,
    flag: &str,
    what: &str,
) -> Result<T, String> {
    args.next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("{flag} needs {what}"))
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    // `help` in first place, or `-h` / `--help` anywhere
    let asks_help = std::env::args().skip(1).any(|a| a == "-h" || a == "--help");
    if asks_help || args.peek().is_some_and(|a| a == "help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let Some(suite) = args.next() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let mut out = None;
    let mut quick = false;
    let mut particles = None;
    let mut repeats = None;
    let mut seed = None;
    let mut rest = Vec::new();
    let mut parse = || -> Result<(), String> {
        while let Some(a) = args.next() {
            match a.as_str() {
                "--quick" => quick = true,
                "--out" => out = Some(value::<PathBuf>(&mut args, "--out", "a folder")?),
                "--particles" => particles = Some(value(&mut args, "--particles", "a number")?),
                "--repeats" => {
                    let n = value(&mut args, "--repeats", "a positive number")?;
                    if n == 0 {
                        return Err("--repeats needs a positive number".into());
                    }
                    repeats = Some(n);
                }
                "--seed" => seed = Some(value(&mut args, "--seed", "a whole number")?),
                _ => rest.push(a),
            }
        }
        Ok(())
    };
    if let Err(e) = parse() {
        eprintln!("error: {e}\n{USAGE}");
        return ExitCode::from(2);
    }
    let given = [
        ("--particles", particles.is_some()),
        ("--repeats", repeats.is_some()),
        ("--seed", seed.is_some()),
    ];
    let first = rest.first().map(String::as_str);
    if let Some((flag, _)) = given
        .iter()
        .find(|&&(flag, on)| on && !reads_flag(&suite, first, flag))
    {
        eprintln!("error: `{suite}` does not read {flag}\n{USAGE}");
        return ExitCode::from(2);
    }
    if let Err(e) = check_words(&suite, &rest) {
        eprintln!("error: {e}\n{USAGE}");
        return ExitCode::from(2);
    }
    let folder = match (suite.as_str(), rest.first()) {
        ("warmstart" | "compatible" | "reduce", Some(_)) => format!("{suite}-{}", rest.join("-")),
        _ => suite.clone(),
    };
    let out = out.unwrap_or_else(|| PathBuf::from("target/xtask").join(folder));
    let opts = SuiteOptions {
        out,
        quick,
        args: rest,
        particles,
        repeats,
        seed,
    };
    let result = match suite.as_str() {
        "verify" => verify::run(&opts),
        "ab" => ab::run(&opts),
        "excavator" => excavator::run(&opts),
        "solvers" => solvers::run(&opts),
        "dem-vs-ndem" => dem_vs_ndem::run(&opts),
        "fuzz" => fuzz::run(&opts),
        "codegen" => codegen::run(&opts),
        "peers" => peers::run(&opts),
        "mpi-scaling" => mpi_scaling::run(&opts),
        "scaling" => scaling::run(&opts),
        "creep" => creep::run(&opts),
        "impact-scope" => impact_scope::run(&opts),
        "fclib" => {
            let mut o = opts.clone();
            o.args.insert(0, "fclib".into());
            fclib::run_suite(&o)
        }
        "compatible" | "reduce" | "warmstart" => match part(&suite, opts.args.first()) {
            Ok(run) => run(&opts),
            Err(e) => {
                eprintln!("error: {e}\n{USAGE}");
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("error: unknown suite `{suite}`\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("some cases failed");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// A suite that runs with the options given.
type Suite = fn(&SuiteOptions) -> report::SuiteResult<bool>;

/// The parts of the suites that have several, by their first word.
const PARTS: [(&str, &[(&str, Suite)]); 3] = [
    (
        "compatible",
        &[
            ("beam", compatible::beam),
            ("cannonball", compatible::cannonball),
        ],
    ),
    (
        "reduce",
        &[
            ("speedup", reduce::speedup),
            ("collapse", collapse::collapse),
            ("drum", reduce_drum::drum_suite),
            ("conveyor", conveyor::conveyor_suite),
        ],
    ),
    (
        "warmstart",
        &[
            ("column", warmstart::column),
            ("pile", warmstart::pile),
            ("drum", drum::run),
            ("triaxial", triaxial::run),
        ],
    ),
];

/// The part of `suite` that `word` names; the error lists the parts.
fn part(suite: &str, word: Option<&String>) -> Result<Suite, String> {
    let parts = PARTS
        .iter()
        .find(|(name, _)| *name == suite)
        .map_or(&[][..], |p| p.1);
    let found = parts
        .iter()
        .find(|(name, _)| Some(*name) == word.map(String::as_str));
    found.map(|p| p.1).ok_or_else(|| {
        let names: Vec<&str> = parts.iter().map(|p| p.0).collect();
        format!("`cargo xtask {suite}` needs one of {}", names.join(", "))
    })
}

/// The words after a suite's name that the suite does not read: a typo
/// (`cargo xtask excavator timnig`) would otherwise run the whole suite in
/// its default form. `ab`, `fclib` and `peers` check their own words; the
/// sub-suite dispatchers below check the first.
fn check_words(suite: &str, words: &[String]) -> Result<(), String> {
    let allowed: &[&str] = match (suite, words.first().map(String::as_str)) {
        ("ab" | "fclib" | "peers", _) => return Ok(()),
        ("fuzz", _) => {
            return match words {
                [] => Ok(()),
                [flag, n] if flag == "--cases" && n.parse::<usize>().is_ok() => Ok(()),
                _ => Err(format!(
                    "`fuzz` takes `--cases N`, not `{}`",
                    words.join(" ")
                )),
            };
        }
        ("excavator", _) => &[
            "timing",
            "reduce",
            "carry",
            "static",
            "coloured",
            "active-set",
        ],
        ("scaling", _) => return scaling::Words::parse(words).map(|_| ()),
        ("impact-scope", _) => {
            let builtin = |w: &String| ndem_scenes::builders::BUILTIN.iter().any(|(n, _)| n == w);
            let known = |w: &String| builtin(w) || impact_scope::samples_word(w).is_some();
            return match words.iter().find(|w| !known(w)) {
                None => Ok(()),
                Some(w) => Err(format!(
                    "`impact-scope` takes names of built-in scenes and `samples=N` (N ≥ 1), not `{w}`"
                )),
            };
        }
        ("warmstart", Some("drum")) => &["drum", "frictional-caps"],
        ("reduce", Some("speedup")) => {
            let known = |w: &String| {
                [
                    "speedup",
                    "tolerance",
                    "hubs",
                    "random",
                    "classes",
                    "static",
                ]
                .contains(&w.as_str())
                    || reduce::tolerance_word(w).is_some()
            };
            return match words.iter().find(|w| !known(w)) {
                None => Ok(()),
                Some(w) => Err(format!(
                    "`reduce speedup` takes `tolerance`, `tolerance=X` (X > 0), `hubs`, `random`, `classes` and `static`, not `{w}`"
                )),
            };
        }
        ("warmstart" | "compatible" | "reduce", Some(first)) => {
            // the first word names the sub-suite (checked where it is run)
            return match &words[1..] {
                [] => Ok(()),
                extra => Err(format!("`{suite} {first}` takes no `{}`", extra.join(" "))),
            };
        }
        _ => &[],
    };
    match words.iter().find(|w| !allowed.contains(&w.as_str())) {
        None => Ok(()),
        Some(w) => Err(format!("`{suite}` does not take `{w}`")),
    }
}

/// Whether `suite` (with its first word `first`) reads the shared option
/// `flag`; one it does not read would be ignored without a word.
fn reads_flag(suite: &str, first: Option<&str>, flag: &str) -> bool {
    match flag {
        "--particles" => matches!(
            (suite, first),
            ("ab" | "peers" | "mpi-scaling" | "scaling", _)
                | ("warmstart", Some("pile" | "drum" | "triaxial"))
                | ("reduce", Some("drum"))
                | ("compatible", Some("cannonball"))
        ),
        "--repeats" => matches!(suite, "ab" | "peers" | "scaling"),
        "--seed" => matches!(suite, "fuzz" | "peers"),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::{check_words, reads_flag};

    #[test]
    fn the_shared_options_go_to_the_suites_that_read_them() {
        assert!(reads_flag("peers", Some("ndem"), "--particles"));
        assert!(reads_flag("warmstart", Some("pile"), "--particles"));
        assert!(reads_flag("compatible", Some("cannonball"), "--particles"));
        assert!(reads_flag("fuzz", None, "--seed"));
        assert!(reads_flag("ab", None, "--repeats"));
        assert!(!reads_flag("excavator", None, "--particles"));
        assert!(!reads_flag("warmstart", Some("column"), "--particles"));
        assert!(!reads_flag("compatible", Some("beam"), "--particles"));
        assert!(!reads_flag("verify", None, "--seed"));
        assert!(!reads_flag("fuzz", None, "--repeats"));
    }

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_suite_refuses_words_it_does_not_read() {
        for (suite, text) in [
            ("excavator", "timing"),
            ("excavator", "reduce"),
            ("excavator", "timing coloured"),
            ("excavator", "timing coloured active-set"),
            ("excavator", ""),
            ("warmstart", "drum frictional-caps"),
            ("warmstart", "column"),
            ("reduce", "conveyor"),
            ("reduce", "speedup tolerance"),
            (
                "reduce",
                "speedup tolerance=1e-5 random hubs classes static",
            ),
            ("fuzz", "--cases 20"),
            ("fuzz", ""),
            ("ab", "HEAD~1 --callgrind"),
            ("peers", "ndem ours"),
            ("verify", ""),
            ("impact-scope", ""),
            ("impact-scope", "pile excavator"),
            ("impact-scope", "excavator samples=24"),
            ("scaling", ""),
            ("scaling", "threads=1,2,4,8,16"),
            ("scaling", "checkpoint=bed.ckpt threads=1,3"),
        ] {
            assert!(check_words(suite, &words(text)).is_ok(), "{suite} {text}");
        }
        for (suite, text) in [
            ("excavator", "timnig"),
            ("warmstart", "column frictional-caps"),
            ("warmstart", "pile extra"),
            ("reduce", "speedup tolerances"),
            ("reduce", "speedup tolerance=-1"),
            ("reduce", "speedup tolerance=nan"),
            ("reduce", "conveyor tolerance"),
            ("compatible", "beam cannonball"),
            ("fuzz", "--cases"),
            ("fuzz", "--cases many"),
            ("verify", "all"),
            ("creep", "--fast"),
            ("impact-scope", "pile heap"),
            ("impact-scope", "samples=0"),
            ("impact-scope", "samples=many"),
            ("scaling", "threads=2,4"),
            ("scaling", "threads=1,4,2"),
            ("scaling", "threads=1,0"),
            ("scaling", "threads=1,many"),
            ("scaling", "checkpoint="),
            ("scaling", "quick"),
        ] {
            assert!(check_words(suite, &words(text)).is_err(), "{suite} {text}");
        }
    }
}

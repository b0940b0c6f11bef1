//! `cargo xtask <suite>`: verification and experiment suites for ndem.
//!
//! Every suite takes `--out DIR` (default `target/xtask/<suite>/`) and
//! `--quick`, writes `summary.json`, CSV files and a `report.md` there, and
//! prints progress to stderr.

mod plot;
mod report;
mod solvers;
mod verify;

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
}

const USAGE: &str = "usage: cargo xtask <suite> [--quick] [--out DIR]

suites:
  verify      physics verification cases with known answers
  solvers     PGS, blocked PGS, Jacobi and APGD on problem snapshots";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(suite) = args.next() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let mut out = None;
    let mut quick = false;
    let mut rest = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--out" => match args.next() {
                Some(d) => out = Some(PathBuf::from(d)),
                None => {
                    eprintln!("error: --out needs a folder\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            _ => rest.push(a),
        }
    }
    let out = out.unwrap_or_else(|| PathBuf::from("target/xtask").join(&suite));
    let opts = SuiteOptions {
        out,
        quick,
        args: rest,
    };
    let result = match suite.as_str() {
        "verify" => verify::run(&opts),
        "solvers" => solvers::run(&opts),
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

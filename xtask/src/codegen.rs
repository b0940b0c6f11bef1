//! `cargo xtask codegen [--quick]`: the optimised (release-profile) build
//! of the workspace with LLVM's IR verifier on every function, so that a
//! code generator that emits broken IR for one of our loops is caught
//! before it computes wrong numbers.
//!
//! Why: LLVM 22.1's SLP vectorizer (rustc 1.95.0) emits, for a loop that
//! accumulates `velocity += M⁻¹ Gᵀ λ` over nalgebra vectors, an instruction
//! that uses a value before the load defining it ("Instruction does not
//! dominate all uses"). Release builds do not verify IR, so the binary
//! reads a stale register and returns a wrong number without any warning
//! (`benches/examples/release_arithmetic.rs`, `docs/performance.md`,
//! "A compiler defect"). `-Zverify-llvm-ir` (enabled on the stable compiler
//! with `RUSTC_BOOTSTRAP=1`, in a target folder of its own) makes rustc
//! reject such a function.
//!
//! The suite builds every target of the workspace (`--quick`: the
//! libraries and the `ndem` command) at the target's baseline CPU and at
//! the x86-64 levels users build for speed (`-Ctarget-cpu=x86-64-v3`,
//! `x86-64-v4`; `--quick` leaves out v4), and expects exactly one
//! rejection at the baseline: the reproduction example, which shows the
//! check has teeth. Any other rejected function fails the suite. If the
//! reproduction is no longer rejected, the compiler was fixed or changed
//! and the suite says so.

use crate::SuiteOptions;
use crate::report::{self, Progress, SuiteResult};
use serde_json::json;
use std::process::Command;

/// The example that reproduces the defect; the verifier must reject it.
const REPRODUCTION: (&str, &str) = ("ndem-benches", "release_arithmetic");

/// One target rustc refused to build, with the functions the verifier
/// rejected in it.
#[derive(Debug, Clone, PartialEq)]
struct Rejected {
    /// `package (target)` as cargo names it.
    target: String,
    /// Mangled names of the broken functions.
    functions: Vec<String>,
    /// The verifier's first message, e.g. "Instruction does not dominate all uses!".
    message: String,
}

/// What one verified build at one CPU level found.
struct LevelResult {
    /// `-C target-cpu` (`default`: the target's baseline).
    cpu: &'static str,
    /// Targets the verifier rejected, the reproduction included.
    rejected: Vec<Rejected>,
    /// Whether the reproduction was among them (built at this level).
    reproduction_rejected: Option<bool>,
    /// A target failed for another reason than the verifier.
    other_failure: bool,
    /// Wall time of the level's builds \[s\].
    seconds: f64,
}

impl LevelResult {
    fn unexpected(&self) -> impl Iterator<Item = &Rejected> {
        self.rejected.iter().filter(|r| !is_reproduction(r))
    }
}

fn is_reproduction(r: &Rejected) -> bool {
    r.target.contains(&format!(
        "`{}` (example \"{}\")",
        REPRODUCTION.0, REPRODUCTION.1
    ))
}

/// CPU levels verified: the target's baseline and, on x86-64, the levels
/// users build for speed (`-C target-cpu=x86-64-v3`: AVX2 and FMA;
/// `x86-64-v4`: AVX-512), whose vectorizer decisions differ. `--quick`
/// leaves out AVX-512.
fn cpu_levels(quick: bool) -> Vec<&'static str> {
    match (cfg!(target_arch = "x86_64"), quick) {
        (false, _) => vec!["default"],
        (true, true) => vec!["default", "x86-64-v3"],
        (true, false) => vec!["default", "x86-64-v3", "x86-64-v4"],
    }
}

/// `cargo xtask codegen`.
pub fn run(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    let root = report::workspace_root();
    let levels = cpu_levels(opts.quick);
    let mut progress = Progress::new("codegen (verified release build)", levels.len() + 1);
    let compiler = Compiler::query()?;
    let versions = compiler.versions.clone();
    progress.tick(&versions);
    let scope: Vec<&str> = if opts.quick {
        vec!["--workspace", "--lib", "--bins"]
    } else {
        vec!["--workspace", "--all-targets"]
    };
    let mut results = Vec::new();
    for &cpu in &levels {
        let start = progress.elapsed();
        let target_dir = root.join("target/verify-ir").join(cpu);
        let (mut rejected, built) =
            verified_build(&root, &target_dir, &scope, cpu, &compiler.host)?;
        let mut other_failure = !built;
        // `--quick` builds no examples: the reproduction on its own, at the
        // baseline only (the level it was found at)
        let reproduction_built = !opts.quick || cpu == "default";
        if opts.quick && cpu == "default" {
            let (pkg, example) = REPRODUCTION;
            let (r, built) = verified_build(
                &root,
                &target_dir,
                &["-p", pkg, "--example", example],
                cpu,
                &compiler.host,
            )?;
            rejected.extend(r);
            other_failure |= !built;
        }
        let result = LevelResult {
            cpu,
            reproduction_rejected: reproduction_built.then(|| rejected.iter().any(is_reproduction)),
            rejected,
            other_failure,
            seconds: progress.elapsed() - start,
        };
        progress.tick(&format!(
            "{cpu}: {} unexpected rejections, {:.0} s",
            result.unexpected().count(),
            result.seconds
        ));
        results.push(result);
    }
    let baseline_reproduced = results[0].reproduction_rejected == Some(true);
    if !baseline_reproduced {
        eprintln!(
            "warning: codegen: the reproduction was not rejected ({versions}): the self-test is void"
        );
    }
    let passed = results
        .iter()
        .all(|r| r.unexpected().count() == 0 && !r.other_failure);
    write_outputs(
        opts,
        &versions,
        &scope,
        &results,
        baseline_reproduced,
        passed,
    )?;
    println!(
        "codegen: {} unexpected rejections over {} CPU levels; reproduction {}; {:.0} s",
        results
            .iter()
            .map(|r| r.unexpected().count())
            .sum::<usize>(),
        results.len(),
        if baseline_reproduced {
            "rejected"
        } else {
            "not rejected"
        },
        progress.elapsed()
    );
    Ok(passed)
}

/// `rejected.csv`, `summary.json` and `report.md`.
fn write_outputs(
    opts: &SuiteOptions,
    versions: &str,
    scope: &[&str],
    results: &[LevelResult],
    baseline_reproduced: bool,
    passed: bool,
) -> SuiteResult<()> {
    let rows: Vec<Vec<String>> = results
        .iter()
        .flat_map(|l| {
            l.rejected.iter().flat_map(move |r| {
                r.functions.iter().map(move |f| {
                    vec![
                        l.cpu.to_string(),
                        r.target.replace(',', ";"),
                        f.clone(),
                        r.message.replace(',', ";"),
                        if is_reproduction(r) {
                            "expected"
                        } else {
                            "unexpected"
                        }
                        .to_string(),
                    ]
                })
            })
        })
        .collect();
    report::write_csv(
        &opts.out.join("rejected.csv"),
        &["target_cpu", "target", "function", "message", "expected"],
        &rows,
    )?;
    let levels: Vec<serde_json::Value> = results
        .iter()
        .map(|l| {
            json!({
                "target_cpu": l.cpu,
                "rejected_targets": l.rejected.len(),
                "unexpected_rejections": l.unexpected().count(),
                "reproduction_rejected": l.reproduction_rejected,
                "other_build_failure": l.other_failure,
                "seconds": l.seconds,
            })
        })
        .collect();
    let summary = json!({
        "compiler": versions,
        "scope": scope.join(" "),
        "flags": "RUSTC_BOOTSTRAP=1 RUSTFLAGS='-Zverify-llvm-ir [-Ctarget-cpu=LEVEL]', release profile",
        "levels": levels,
        "reproduction_rejected_at_baseline": baseline_reproduced,
        "passed": passed,
    });
    report::write_summary(&opts.out, &summary)?;
    let mut md = report::heading("cargo xtask codegen", opts.quick);
    md.push_str(&format!(
        "Release-profile build of `{}` with LLVM's IR verifier on every function \
         (`RUSTC_BOOTSTRAP=1 RUSTFLAGS=-Zverify-llvm-ir`, plus `-Ctarget-cpu=LEVEL`; target folders \
         `target/verify-ir/LEVEL`). Compiler: {versions}.\n\n\
         | target CPU | rejected targets | unexpected | reproduction (`{}` example `{}`) | time [s] |\n|---|---|---|---|---|\n",
        scope.join(" "),
        REPRODUCTION.0,
        REPRODUCTION.1,
    ));
    for l in results {
        let repro = match l.reproduction_rejected {
            Some(true) => "rejected",
            Some(false) => "not rejected",
            None => "not built",
        };
        md.push_str(&format!(
            "| {} | {} | {} | {repro} | {:.0} |\n",
            l.cpu,
            l.rejected.len(),
            l.unexpected().count(),
            l.seconds
        ));
    }
    md.push('\n');
    if !baseline_reproduced {
        md.push_str("**The reproduction was not rejected at the baseline**: this compiler no longer shows the defect, or the example changed; the check's self-test is void.\n\n");
    }
    for l in results {
        for r in l.unexpected() {
            md.push_str(&format!(
                "- **{}, {}**: {} in {}\n",
                l.cpu,
                r.target,
                r.message,
                r.functions.join(", ")
            ));
        }
        if l.other_failure {
            md.push_str(&format!(
                "- **{}**: the build failed for a reason other than the verifier (log on stderr).\n",
                l.cpu
            ));
        }
    }
    md.push_str(
        "\nWhy: `docs/performance.md`, \"A compiler defect\": LLVM's SLP vectorizer can emit an \
         instruction before the definition of its operand; a release build then reads a stale \
         register and computes a wrong number silently. The check covers that signature (IR that \
         fails verification), not every possible miscompilation.\n",
    );
    report::write(&opts.out.join("report.md"), &md)
}

/// What `rustc -vV` says of the compiler the builds use.
struct Compiler {
    /// "rustc 1.95.0, LLVM 22.1.2".
    versions: String,
    /// The host triple, the `--target` of the CPU-level builds.
    host: String,
}

impl Compiler {
    fn query() -> SuiteResult<Self> {
        let out = Command::new("rustc")
            .arg("-vV")
            .output()
            .map_err(|e| format!("rustc -vV: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name).map(str::trim))
                .unwrap_or("?")
                .to_string()
        };
        Ok(Self {
            versions: format!(
                "rustc {}, LLVM {}",
                field("release:"),
                field("LLVM version:")
            ),
            host: field("host:"),
        })
    }
}

/// Builds `scope` with the verifier on, `--keep-going`, and returns the
/// targets rejected by it and whether the build failed for nothing else.
fn verified_build(
    root: &std::path::Path,
    target_dir: &std::path::Path,
    scope: &[&str],
    cpu: &str,
    host: &str,
) -> SuiteResult<(Vec<Rejected>, bool)> {
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo
        .current_dir(root)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", target_dir)
        .args(["build", "--release", "--keep-going", "--color", "never"]);
    match cpu {
        "default" => cargo.env("RUSTFLAGS", "-Zverify-llvm-ir"),
        // with an explicit `--target`, RUSTFLAGS reach the target's code
        // only: build scripts and proc-macros stay at the host's baseline,
        // so a host without AVX-512 still builds (it need not run) v4
        level => cargo
            .env(
                "RUSTFLAGS",
                format!("-Zverify-llvm-ir -Ctarget-cpu={level}"),
            )
            .args(["--target", host]),
    };
    let out = cargo
        .args(scope)
        .output()
        .map_err(|e| format!("cargo build: {e}"))?;
    let log = String::from_utf8_lossy(&out.stderr);
    let rejected = parse_rejections(&log);
    let failed_targets = log
        .lines()
        .filter(|l| l.starts_with("error: could not compile"))
        .count();
    // a failed build with no target the verifier rejected (a manifest
    // error, a compiler that refuses the flags) is a failure too
    let only_verifier =
        out.status.success() || (failed_targets > 0 && failed_targets == rejected.len());
    if !only_verifier {
        eprintln!("{log}");
    }
    Ok((rejected, only_verifier))
}

/// Reads cargo's log: each "in function F" line of the verifier belongs to
/// the next "error: could not compile `P` (T)" line.
fn parse_rejections(log: &str) -> Vec<Rejected> {
    let mut out = Vec::new();
    let mut functions = Vec::new();
    let mut message = String::new();
    for line in log.lines() {
        if let Some(f) = line.strip_prefix("in function ") {
            functions.push(f.trim().to_string());
        } else if message.is_empty()
            && (line.contains("does not dominate") || line.starts_with("Broken"))
        {
            message = line.trim().to_string();
        } else if let Some(rest) = line.strip_prefix("error: could not compile ") {
            if !functions.is_empty() {
                let target = rest
                    .split(" due to")
                    .next()
                    .unwrap_or(rest)
                    .trim()
                    .to_string();
                out.push(Rejected {
                    target,
                    functions: std::mem::take(&mut functions),
                    message: std::mem::take(&mut message),
                });
            }
            message.clear();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verifier_rejection_is_attributed_to_its_target() {
        let log = "   Compiling ndem-math v0.1.0\n\
            Instruction does not dominate all uses!\n  %68 = load <6 x double>\n\
            in function _RNvCs1x_18release_arithmetic5apply\n\
            rustc-LLVM ERROR: Broken function found, compilation aborted!\n\
            error: could not compile `ndem-benches` (example \"release_arithmetic\")\n\
            error: could not compile `other` (lib) due to 2 previous errors\n";
        let r = parse_rejections(log);
        assert_eq!(r.len(), 1);
        assert_eq!(
            r[0].target,
            "`ndem-benches` (example \"release_arithmetic\")"
        );
        assert_eq!(r[0].functions, vec!["_RNvCs1x_18release_arithmetic5apply"]);
        assert_eq!(r[0].message, "Instruction does not dominate all uses!");
    }
}

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
//! libraries and the `ndem` command) and expects exactly one rejection:
//! the reproduction example, which shows the check has teeth. Any other
//! rejected function fails the suite. If the reproduction is no longer
//! rejected, the compiler was fixed or changed and the suite says so.

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

/// `cargo xtask codegen`.
pub fn run(opts: &SuiteOptions) -> SuiteResult<bool> {
    report::prepare(&opts.out)?;
    let root = report::workspace_root();
    let target_dir = root.join("target/verify-ir");
    let mut progress = Progress::new("codegen (verified release build)", 3);
    let versions = compiler_versions()?;
    progress.tick(&versions);

    let scope: Vec<&str> = if opts.quick {
        vec!["--workspace", "--lib", "--bins"]
    } else {
        vec!["--workspace", "--all-targets"]
    };
    let main_build = verified_build(&root, &target_dir, &scope)?;
    progress.tick(&format!(
        "{} targets rejected, {:.0} s",
        main_build.0.len(),
        progress.elapsed()
    ));
    // `--quick` does not build examples: build the reproduction on its own.
    let reproduction_build = if opts.quick {
        let (pkg, example) = REPRODUCTION;
        verified_build(&root, &target_dir, &["-p", pkg, "--example", example])?
    } else {
        main_build.clone()
    };
    progress.tick(&format!("done, {:.0} s", progress.elapsed()));

    let is_reproduction = |r: &Rejected| {
        r.target.contains(&format!(
            "`{}` (example \"{}\")",
            REPRODUCTION.0, REPRODUCTION.1
        ))
    };
    let unexpected: Vec<&Rejected> = main_build
        .0
        .iter()
        .filter(|r| !is_reproduction(r))
        .collect();
    let reproduction_rejected = reproduction_build.0.iter().any(is_reproduction);
    let passed = unexpected.is_empty() && main_build.1;
    let reproduction_status = if reproduction_rejected {
        "rejected by the verifier (the check can fail)"
    } else {
        "NOT rejected: this compiler no longer shows the defect, or the example changed; the check's self-test is void"
    };
    if !reproduction_rejected {
        eprintln!("warning: codegen: the reproduction was not rejected ({versions})");
    }

    let rows: Vec<Vec<String>> = main_build
        .0
        .iter()
        .chain(if opts.quick {
            reproduction_build.0.iter()
        } else {
            [].iter()
        })
        .flat_map(|r| {
            r.functions.iter().map(move |f| {
                vec![
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
        .collect();
    report::write_csv(
        &opts.out.join("rejected.csv"),
        &["target", "function", "message", "expected"],
        &rows,
    )?;
    let summary = json!({
        "compiler": versions,
        "scope": scope.join(" "),
        "flags": "RUSTC_BOOTSTRAP=1 RUSTFLAGS=-Zverify-llvm-ir, release profile",
        "rejected_targets": main_build.0.len(),
        "unexpected_rejections": unexpected.len(),
        "other_build_failure": !main_build.1,
        "reproduction_rejected": reproduction_rejected,
        "passed": passed,
        "seconds": progress.elapsed(),
    });
    report::write_summary(&opts.out, &summary)?;
    let mut md = report::heading("cargo xtask codegen", opts.quick);
    md.push_str(&format!(
        "Release-profile build of `{}` with LLVM's IR verifier on every function \
         (`RUSTC_BOOTSTRAP=1 RUSTFLAGS=-Zverify-llvm-ir`, target folder `target/verify-ir`).\n\n\
         Compiler: {versions}.\n\n\
         | rejected targets | unexpected | reproduction (`{}` example `{}`) | time [s] |\n|---|---|---|---|\n\
         | {} | {} | {reproduction_status} | {:.0} |\n\n",
        scope.join(" "),
        REPRODUCTION.0,
        REPRODUCTION.1,
        main_build.0.len(),
        unexpected.len(),
        progress.elapsed()
    ));
    for r in &unexpected {
        md.push_str(&format!(
            "- **{}**: {} in {}\n",
            r.target,
            r.message,
            r.functions.join(", ")
        ));
    }
    if !main_build.1 {
        md.push_str("\nThe build also failed for a reason other than the verifier; see the build log above.\n");
    }
    md.push_str(
        "\nWhy: `docs/performance.md`, \"A compiler defect\": LLVM's SLP vectorizer can emit an \
         instruction before the definition of its operand; a release build then reads a stale \
         register and computes a wrong number silently.\n",
    );
    report::write(&opts.out.join("report.md"), &md)?;
    println!(
        "codegen: {} unexpected rejections; reproduction {}; {:.0} s",
        unexpected.len(),
        if reproduction_rejected {
            "rejected"
        } else {
            "not rejected"
        },
        progress.elapsed()
    );
    Ok(passed)
}

/// `rustc -vV`'s release and LLVM version.
fn compiler_versions() -> SuiteResult<String> {
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
    Ok(format!(
        "rustc {}, LLVM {}",
        field("release:"),
        field("LLVM version:")
    ))
}

/// Builds `scope` with the verifier on, `--keep-going`, and returns the
/// targets rejected by it and whether every other target built.
fn verified_build(
    root: &std::path::Path,
    target_dir: &std::path::Path,
    scope: &[&str],
) -> SuiteResult<(Vec<Rejected>, bool)> {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTFLAGS", "-Zverify-llvm-ir")
        .env("CARGO_TARGET_DIR", target_dir)
        .args(["build", "--release", "--keep-going", "--color", "never"])
        .args(scope)
        .output()
        .map_err(|e| format!("cargo build: {e}"))?;
    let log = String::from_utf8_lossy(&out.stderr);
    let rejected = parse_rejections(&log);
    let failed_targets = log
        .lines()
        .filter(|l| l.starts_with("error: could not compile"))
        .count();
    let only_verifier = failed_targets == rejected.len();
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

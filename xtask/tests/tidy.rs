//! Tidy checks: crate layering and documented invariants
//! (docs/ARCHITECTURE.md).

use std::path::PathBuf;

mod workspace;
use workspace::{root, rust_files, sources};

/// Layer of each crate, lowest first (docs/ARCHITECTURE.md).
const LAYERS: &[(&str, u32)] = &[
    ("ndem-par", 0),
    ("ndem-math", 0),
    ("ndem-collide", 1),
    ("ndem-solve", 1),
    ("ndem-step", 2),
    ("ndem-fclib", 2),
    ("ndem-testkit", 2),
    ("ndem-reduce", 3),
    ("ndem-smooth", 3),
    ("ndem-scenes", 4),
    ("ndem", 5),
    ("ndem-mpi", 6),
    ("ndem-cli", 7),
    ("ndem-py", 7),
    ("ndem-benches", 8),
    ("xtask", 8),
];

fn layer(name: &str) -> Option<u32> {
    LAYERS.iter().find(|(n, _)| *n == name).map(|(_, l)| *l)
}

fn crates() -> Vec<(String, PathBuf)> {
    let mut out = vec![
        ("xtask".to_string(), root().join("xtask")),
        ("ndem-benches".to_string(), root().join("benches")),
    ];
    for e in std::fs::read_dir(root().join("crates")).expect("crates/") {
        let p = e.expect("entry").path();
        if p.join("Cargo.toml").exists() {
            out.push((p.file_name().unwrap().to_string_lossy().into_owned(), p));
        }
    }
    out
}

/// Names of `ndem*` crates in the `[dependencies]` section (not dev).
fn ndem_dependencies(manifest: &str) -> Vec<String> {
    let mut in_deps = false;
    let mut out = Vec::new();
    for line in manifest.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_deps = t == "[dependencies]";
            continue;
        }
        if in_deps && t.starts_with("ndem") {
            let name: String = t
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            let name = name.trim_end_matches(".workspace").to_string();
            out.push(name);
        }
    }
    out
}

#[test]
fn crates_depend_only_downwards() {
    for (name, dir) in crates() {
        let own = layer(&name).unwrap_or_else(|| {
            panic!("crate {name} has no layer in docs/ARCHITECTURE.md and tidy.rs")
        });
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        for dep in ndem_dependencies(&manifest) {
            let l = layer(&dep).unwrap_or_else(|| panic!("{name} depends on unknown crate {dep}"));
            assert!(
                l < own,
                "{name} (layer {own}) depends on {dep} (layer {l}): crates depend only on lower layers"
            );
        }
    }
}

#[test]
fn every_crate_states_its_invariant_and_architecture_lists_it() {
    let arch = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    for (name, dir) in crates() {
        if name == "xtask" {
            assert!(arch.contains("Invariant: `xtask`"));
            continue;
        }
        let lib = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
        assert!(
            lib.contains("Invariant:"),
            "{name}/src/lib.rs has no `Invariant:` line"
        );
        assert!(
            arch.contains(&format!("Invariant: `{name}`")),
            "docs/ARCHITECTURE.md has no invariant for {name}"
        );
        assert!(
            arch.contains(&format!("`{name}`")),
            "docs/ARCHITECTURE.md does not list {name}"
        );
    }
}

#[test]
fn no_parry_type_in_the_public_api_of_ndem_collide() {
    for (p, text) in sources("crates/ndem-collide/src") {
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim_start();
            if !t.starts_with("pub ") {
                continue;
            }
            // the whole item header, up to its body or end
            let mut header = String::new();
            for l in &lines[i..] {
                header.push_str(l);
                if l.contains('{')
                    || l.trim_end().ends_with(';')
                    || l.trim_end().ends_with(',') && !header.contains('(')
                {
                    break;
                }
            }
            let leaks =
                header.contains("ps::") || header.contains("pq::") || header.contains("parry3d");
            assert!(
                !leaks,
                "{}:{}: public item mentions a parry type: {header}",
                p.display(),
                i + 1
            );
        }
    }
}

#[test]
fn solvers_do_not_know_bodies_or_shapes() {
    for (p, text) in sources("crates/ndem-solve/src") {
        assert!(
            !text.contains("ndem_collide"),
            "{} uses ndem_collide",
            p.display()
        );
        assert!(
            !text.contains("ndem_step"),
            "{} uses ndem_step",
            p.display()
        );
    }
}

/// The keyword written in pieces, so that this file does not hold it.
const UNSAFE: &str = concat!("un", "safe");

/// Whether `line` uses the keyword in code (not in a comment, and not as
/// part of a longer name such as the lint's).
fn uses_unsafe(line: &str) -> bool {
    let code = line.split("//").next().unwrap_or("");
    code.match_indices(UNSAFE).any(|(i, _)| {
        let word = |c: char| c.is_alphanumeric() || c == '_';
        let before = code[..i].chars().next_back().is_some_and(word);
        let after = code[i + UNSAFE.len()..].chars().next().is_some_and(word);
        !before && !after
    })
}

/// The two blocks of `unsafe` code are the prefetch hint
/// (`crates/ndem-par/src/prefetch.rs`) and the `ndem` process's allocator
/// setting (`crates/ndem-cli/src/allocator.rs`), one each
/// (`docs/ARCHITECTURE.md`); the workspace denies it everywhere else.
#[test]
fn the_only_unsafe_code_is_the_prefetch_hint_and_the_allocator_setting() {
    let allowed = [
        root().join("crates/ndem-par/src/prefetch.rs"),
        root().join("crates/ndem-cli/src/allocator.rs"),
    ];
    let dirs = crates().into_iter().map(|(_, dir)| dir);
    let mut found = Vec::new();
    let mut files = 0;
    for dir in dirs {
        for p in rust_files(&dir) {
            files += 1;
            let text = std::fs::read_to_string(&p).unwrap();
            for (i, line) in text.lines().enumerate() {
                if uses_unsafe(line) {
                    found.push((p.clone(), i + 1));
                }
            }
        }
    }
    assert!(files > 100, "only {files} source files found");
    let elsewhere: Vec<_> = found.iter().filter(|(p, _)| !allowed.contains(p)).collect();
    assert!(
        elsewhere.is_empty(),
        "{UNSAFE} code outside the prefetch hint and the allocator setting: {elsewhere:?}"
    );
    for file in &allowed {
        let blocks = found.iter().filter(|(p, _)| p == file).count();
        assert_eq!(
            blocks,
            1,
            "{} holds one {UNSAFE} block: {found:?}",
            file.display()
        );
    }
    // the check itself: a block is found, the lint's name and comments not
    assert!(uses_unsafe(&format!("    {UNSAFE} {{")));
    assert!(!uses_unsafe(&format!("#[allow({UNSAFE}_code)]")));
    assert!(!uses_unsafe(&format!("// {UNSAFE} {{")));
}

/// The resolved dependency graph (`cargo metadata`), not the manifests'
/// text: package name → names of its normal (non-dev, non-build)
/// dependencies, direct.
fn resolved_graph() -> std::collections::BTreeMap<String, Vec<String>> {
    // the host platform only: the workspace's test build fetched exactly
    // those crates, so this works offline on a clean clone after it
    let mut args = vec!["metadata", "--format-version", "1", "--offline"];
    let triple = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    if cfg!(target_os = "linux") {
        args.extend(["--filter-platform", triple.as_str()]);
    }
    let meta: serde_json::Value = serde_json::from_slice(&cargo(&args)).expect("metadata JSON");
    let names: std::collections::BTreeMap<String, String> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap().to_string(),
                p["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|node| {
            let name = names[node["id"].as_str().unwrap()].clone();
            let deps = node["deps"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| {
                    d["dep_kinds"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|k| k["kind"].is_null())
                })
                .map(|d| names[d["pkg"].as_str().unwrap()].clone())
                .collect();
            (name, deps)
        })
        .collect()
}

/// The layering on the resolved graph: every normal dependency between
/// workspace crates goes to a lower layer.
#[test]
fn resolved_graph_is_layered() {
    let graph = resolved_graph();
    for (name, _) in LAYERS {
        let deps = graph
            .get(*name)
            .unwrap_or_else(|| panic!("{name} not in the workspace"));
        let own = layer(name).unwrap();
        for dep in deps.iter().filter(|d| layer(d).is_some()) {
            assert!(layer(dep).unwrap() < own, "{name} depends on {dep}");
        }
    }
}

/// The standard output of `cargo ARGS` in the workspace root; panics
/// with its standard error when it fails. A command with `--offline` that
/// fails runs once more without it: after the workspace's test build
/// every crate these commands read is fetched, but `cargo test -p xtask`
/// alone on a fresh cargo home has not fetched the crates that only other
/// members' tests build (criterion's), which `cargo metadata` resolves.
fn cargo(args: &[&str]) -> Vec<u8> {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO"))
            .args(args)
            .current_dir(root())
            .output()
            .expect("cargo runs")
    };
    let mut out = run(args);
    if !out.status.success() && args.contains(&"--offline") {
        let online: Vec<&str> = args.iter().copied().filter(|a| *a != "--offline").collect();
        out = run(&online);
    }
    assert!(
        out.status.success(),
        "cargo {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// What a build of `krate` alone compiles through normal dependencies
/// (`cargo tree -e normal`, features as a user of that crate gets them;
/// `cargo metadata` unifies features over the whole workspace, dev
/// dependencies included, so it cannot answer this).
fn user_build(krate: &str) -> Vec<String> {
    let args = [
        "tree",
        "--offline",
        "-e",
        "normal",
        "--prefix",
        "none",
        "-p",
        krate,
    ];
    String::from_utf8_lossy(&cargo(&args))
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// What each library pulls into its users' builds: the facade does not build the command line's crates,
/// the solver crate builds no collision, HDF5 or serialization crates, and
/// no library builds test or plotting crates.
#[test]
fn libraries_do_not_pull_tools_into_users_builds() {
    let forbidden = |krate: &str, banned: &[&str]| {
        let reach = user_build(krate);
        assert!(
            reach.iter().any(|p| p == krate),
            "cargo tree did not list {krate}"
        );
        for b in banned {
            assert!(
                !reach.iter().any(|p| p == b),
                "{krate} pulls {b} into every user's build"
            );
        }
    };
    let tools = [
        "clap",
        "indicatif",
        "tracing-subscriber",
        "plotters",
        "proptest",
        "criterion",
    ];
    for krate in [
        "ndem",
        "ndem-scenes",
        "ndem-step",
        "ndem-reduce",
        "ndem-smooth",
        "ndem-fclib",
        "ndem-mpi",
    ] {
        forbidden(krate, &tools);
    }
    forbidden(
        "ndem-solve",
        &[
            &tools[..],
            &["parry3d-f64", "hdf5-pure", "ndem-collide", "serde", "toml"],
        ]
        .concat(),
    );
    forbidden("ndem-math", &["parry3d-f64", "rayon", "faer"]);
    // and the command line does build them (the check can fail)
    assert!(user_build("ndem-cli").iter().any(|p| p == "clap"));
}

/// Scene knowledge stays out of the solver crate's public API: no public
/// item of `ndem-solve` names radii, gravity, materials, spheres, shapes
/// or positions; the generators of scene-like problems live in
/// `ndem-testkit`, compiled into `ndem-solve` only for its unit tests.
#[test]
fn solver_public_items_carry_no_scene_knowledge() {
    let words = [
        "radius", "gravity", "material", "sphere", "shape", "position",
    ];
    for (p, text) in sources("crates/ndem-solve/src") {
        let file = p.file_name().unwrap().to_string_lossy().into_owned();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim_start().to_lowercase();
            if t.starts_with("pub ") {
                for w in words {
                    assert!(
                        !t.contains(w),
                        "{file}:{}: public item names `{w}`: {line}",
                        i + 1
                    );
                }
            }
        }
    }
    let lib = std::fs::read_to_string(root().join("crates/ndem-solve/src/lib.rs")).unwrap();
    assert!(lib.contains("#[cfg(test)]\n#[allow(dead_code, unused_imports)]\n#[path = \"../../ndem-testkit/src/generate/mod.rs\"]\nmod generate;"));
}

/// The test kit is for tests, benches and experiments: `xtask` is the only
/// crate with it among its normal dependencies (the benches and the
/// solver's and FCLIB crate's tests have it as a dev-dependency).
#[test]
fn only_tests_benches_and_xtask_depend_on_the_testkit() {
    let mut users = Vec::new();
    for (name, dir) in crates() {
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        if ndem_dependencies(&manifest)
            .iter()
            .any(|d| d == "ndem-testkit")
        {
            users.push(name);
        }
    }
    users.sort();
    assert_eq!(users, ["xtask"]);
}

/// Doc comments cite the docs by section (`docs/theory.md`, "SPOOK"): every
/// cited section exists as a heading of that page, and no doc comment
/// points to a file outside the repository.
#[test]
fn cited_doc_sections_exist() {
    let mut files = Vec::new();
    for (_, dir) in crates() {
        for sub in ["src", "tests"] {
            files.extend(rust_files(&dir.join(sub)));
        }
    }
    let mut cited = 0;
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let outside = ["NOTES", ".md"].concat();
        assert!(
            !text.contains(&outside),
            "{} cites {outside}, which is not in the repository",
            f.display()
        );
        for page in ["theory.md", "reduction.md", "solvers.md", "machines.md"] {
            let needle = format!("docs/{page}`, \"");
            let doc = std::fs::read_to_string(root().join("docs").join(page)).unwrap();
            let mut rest = text.as_str();
            while let Some(i) = rest.find(&needle) {
                rest = &rest[i + needle.len()..];
                // a citation may wrap over doc-comment lines
                let section: Vec<&str> = rest[..rest.find('"').unwrap()]
                    .split_whitespace()
                    .filter(|w| *w != "//!" && *w != "///")
                    .collect();
                let section = section.join(" ");
                let found = doc.lines().any(|l| {
                    l.starts_with('#') && l.trim_start_matches('#').trim().starts_with(&section)
                });
                assert!(
                    found,
                    "{}: docs/{page} has no section \"{section}\"",
                    f.display()
                );
                cited += 1;
            }
        }
    }
    assert!(
        cited > 10,
        "only {cited} citations found: is the pattern still used?"
    );
}

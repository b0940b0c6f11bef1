//! Tidy checks: crate layering and documented invariants
//! (docs/ARCHITECTURE.md).

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Layer of each crate, lowest first (docs/ARCHITECTURE.md).
const LAYERS: &[(&str, u32)] = &[
    ("ndem-math", 0),
    ("ndem-collide", 1),
    ("ndem-solve", 1),
    ("ndem-step", 2),
    ("ndem-fclib", 2),
    ("ndem-reduce", 3),
    ("ndem-smooth", 3),
    ("ndem-scenes", 4),
    ("ndem", 5),
    ("xtask", 6),
];

fn layer(name: &str) -> Option<u32> {
    LAYERS.iter().find(|(n, _)| *n == name).map(|(_, l)| *l)
}

fn crates() -> Vec<(String, PathBuf)> {
    let mut out = vec![("xtask".to_string(), root().join("xtask"))];
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
    let src = root().join("crates/ndem-collide/src");
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
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
    let src = root().join("crates/ndem-solve/src");
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
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

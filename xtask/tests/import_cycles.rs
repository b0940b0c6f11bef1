//! File-level import cycles within each crate (docs/ARCHITECTURE.md,
//! "Invariant: no import cycle between the files of a crate").
//!
//! A file imports another when its code (comments and its `#[cfg(test)]
//! mod tests` left out) names a path into the other's module: `crate::…`,
//! `super::…`, a child module's `name::…`, or an item the crate root
//! re-exports from it. `mod` declarations are not imports. Any cycle fails
//! the test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod workspace;
use workspace::{root, rust_files};

/// The code of a file that its imports are read from: comments and the
/// unit-test module left out.
fn code(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or("");
        out.push_str(line);
        out.push('\n');
    }
    match out.find("#[cfg(test)]\nmod tests") {
        Some(i) => out[..i].to_string(),
        None => out,
    }
}

/// Module path (`a::b`, the root `""`) → code, for a crate's `src`.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for p in rust_files(src) {
        let rel = p.strip_prefix(src).unwrap().with_extension("");
        let mut parts: Vec<String> = rel
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        if parts.first().is_some_and(|d| d == "bin") {
            continue;
        }
        if matches!(
            parts.last().map(String::as_str),
            Some("lib" | "main" | "mod")
        ) {
            parts.pop();
        }
        let text = std::fs::read_to_string(&p).unwrap();
        out.insert(parts.join("::"), code(&text));
    }
    out
}

/// The paths a use tree names: `a::{b::C, D}` → `a::b::C`, `a::D`.
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        return vec![tree];
    };
    let (prefix, rest) = tree.split_at(open);
    let inner = &rest[1..rest.rfind('}').unwrap_or(rest.len())];
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| expand(p).into_iter().map(move |e| format!("{prefix}{e}")))
        .collect()
}

/// The use tree that follows `at` in `text`: identifiers, `::`, and brace
/// groups, up to the first other character outside braces.
fn tree_at(text: &str, at: usize) -> &str {
    let mut depth = 0;
    for (i, c) in text[at..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth > 0 => depth -= 1,
            c if c.is_alphanumeric() || c == '_' || c == ':' => {}
            c if depth > 0 && (c == ',' || c.is_whitespace()) => {}
            _ => return &text[at..at + i],
        }
    }
    &text[at..]
}

/// The module a path (segments from `base`) lands in: the longest prefix
/// that is a module, else the module the root re-exports its first
/// segment from.
fn resolve(
    base: &[String],
    path: &str,
    mods: &BTreeMap<String, String>,
    reexports: &BTreeMap<String, String>,
) -> Option<String> {
    let segs: Vec<String> = base
        .iter()
        .cloned()
        .chain(
            path.split("::")
                .filter(|s| !s.is_empty() && *s != "self")
                .map(|s| s.split(" as ").next().unwrap_or(s).to_string()),
        )
        .collect();
    for k in (1..=segs.len()).rev() {
        let cand = segs[..k].join("::");
        if mods.contains_key(&cand) {
            return Some(cand);
        }
    }
    segs.get(base.len()).and_then(|s| reexports.get(s)).cloned()
}

fn occurrences<'a>(text: &'a str, pat: &'a str) -> impl Iterator<Item = usize> + 'a {
    text.match_indices(pat).filter_map(move |(i, _)| {
        let before = text[..i].chars().next_back();
        let ident = before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        (!ident).then_some(i + pat.len())
    })
}

/// Edges module → modules it imports, for one crate's `src`.
fn import_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(src);
    let root_code = mods.get("").cloned().unwrap_or_default();
    let mut reexports = BTreeMap::new();
    for at in occurrences(&root_code, "pub use ") {
        for path in expand(tree_at(&root_code, at)) {
            let path = path
                .trim_start_matches("crate::")
                .trim_start_matches("self::");
            if let (Some(m), Some(name)) = (
                resolve(&[], path, &mods, &BTreeMap::new()),
                path.rsplit("::").next(),
            ) && !m.is_empty()
            {
                let name = name.rsplit(" as ").next().unwrap_or(name);
                reexports.insert(name.to_string(), m);
            }
        }
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, text) in &mods {
        if m.is_empty() {
            continue;
        }
        let here: Vec<String> = m.split("::").map(str::to_string).collect();
        let parent = &here[..here.len() - 1];
        let mut targets = BTreeSet::new();
        for (pat, base) in [("crate::", &[][..]), ("super::", parent)] {
            for at in occurrences(text, pat) {
                for path in expand(tree_at(text, at)) {
                    targets.extend(resolve(base, &path, &mods, &reexports));
                }
            }
        }
        for child in mods.keys().filter(|k| {
            k.strip_prefix(&format!("{m}::"))
                .is_some_and(|rest| !rest.contains("::"))
        }) {
            let name = child.rsplit("::").next().unwrap();
            if occurrences(text, &format!("{name}::")).next().is_some() {
                targets.insert(child.clone());
            }
        }
        targets.retain(|t| t != m && !t.is_empty());
        edges.insert(m.clone(), targets);
    }
    edges
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, (usize, usize)>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, (n, n));
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.index[w].1.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                } else if self.on_stack.contains(w) {
                    let low = self.index[w].0.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                }
            }
            if self.index[v].0 == self.index[v].1 {
                let mut comp = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    comp.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    self.out.push(comp);
                }
            }
        }
    }
    let mut t = Tarjan {
        edges,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out
}

fn crate_sources() -> Vec<(String, PathBuf)> {
    let mut out = vec![("xtask".to_string(), root().join("xtask/src"))];
    for e in std::fs::read_dir(root().join("crates")).expect("crates/") {
        let p = e.expect("entry").path();
        if p.join("src").is_dir() {
            out.push((
                p.file_name().unwrap().to_string_lossy().into_owned(),
                p.join("src"),
            ));
        }
    }
    out.push(("ndem-benches".to_string(), root().join("benches/src")));
    out
}

#[test]
fn no_import_cycle_between_the_files_of_a_crate() {
    let mut found = Vec::new();
    for (name, src) in crate_sources() {
        for comp in cycles(&import_graph(&src)) {
            found.push((name.clone(), comp));
        }
    }
    assert!(found.is_empty(), "import cycles (crate, files): {found:?}");
}

/// The check has teeth: a crate whose two files import each other (one by
/// a `use crate::…` tree, the other through an item the root re-exports)
/// has one cycle, and without the back edge none.
#[test]
fn a_planted_cycle_is_found() {
    let dir = std::env::temp_dir().join(format!("ndem-import-cycles-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("a")).unwrap();
    let write = |f: &str, t: &str| std::fs::write(src.join(f), t).unwrap();
    write("lib.rs", "mod a;\nmod b;\npub use b::B;\n");
    write(
        "a.rs",
        "mod inner;\nuse crate::{b::helper, x};\npub struct A;\n",
    );
    write("a/inner.rs", "use super::A;\n");
    write(
        "b.rs",
        "// crate::a::A in a comment is no import\npub struct B;\npub fn helper() {}\n",
    );
    assert!(cycles(&import_graph(&src)).is_empty());
    // `b` names `a`'s item, `a` names `b`'s helper
    let with_b = |import: &str| {
        write(
            "b.rs",
            &format!("{import}pub struct B;\npub fn helper() {{}}\n"),
        );
        cycles(&import_graph(&src))
    };
    assert_eq!(with_b("use crate::a::A;\n"), [["a", "b"]]);
    // `a::inner` names the re-export of `b`'s item, `b` names `a::inner`
    write("a/inner.rs", "use crate::B;\n");
    assert_eq!(with_b("use crate::a::inner;\n"), [["a::inner", "b"]]);
    let _ = std::fs::remove_dir_all(&dir);
}

//! Room sizes (docs/ARCHITECTURE.md): no library source file over 1000
//! lines and no library function over 120, unit-test files (`tests.rs`),
//! integration tests, examples, benches and xtask aside.

use std::path::PathBuf;

mod workspace;
use workspace::{root, rust_files};

/// Most lines in a library source file.
const MAX_FILE_LINES: usize = 1000;
/// Most lines in a library function, signature to closing brace.
const MAX_FUNCTION_LINES: usize = 120;

fn library_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root().join("crates")).unwrap() {
        let src = e.unwrap().path().join("src");
        out.extend(
            rust_files(&src)
                .into_iter()
                .filter(|p| p.file_name().is_some_and(|n| n != "tests.rs")),
        );
    }
    out.sort();
    out
}

/// `(name, first line, lines)` of every `fn` with a body in `text`.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let Some(at) = code.find("fn ") else {
            continue;
        };
        let before = code[..at].trim();
        let head = before.is_empty()
            || before
                .split_whitespace()
                .all(|w| w.starts_with("pub") || matches!(w, "const" | "async"));
        if !head {
            continue;
        }
        let name: String = code[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let (mut depth, mut opened) = (0i64, false);
        for (j, l) in lines.iter().enumerate().skip(i) {
            let l = l.split("//").next().unwrap_or("");
            depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
            opened |= l.contains('{');
            if !opened && l.trim_end().ends_with(';') {
                break;
            }
            if opened && depth <= 0 {
                out.push((name.clone(), i + 1, j - i + 1));
                break;
            }
        }
    }
    out
}

#[test]
fn library_files_and_functions_are_rooms_a_reader_holds() {
    let mut long_files = Vec::new();
    let mut long_functions = Vec::new();
    for path in library_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let n = text.lines().count();
        if n > MAX_FILE_LINES {
            long_files.push(format!("{} ({n} lines)", path.display()));
        }
        for (name, line, len) in functions(&text) {
            if len > MAX_FUNCTION_LINES {
                long_functions.push(format!("{}:{line} {name} ({len} lines)", path.display()));
            }
        }
    }
    assert!(
        long_files.is_empty(),
        "files over {MAX_FILE_LINES} lines: {long_files:#?}"
    );
    assert!(
        long_functions.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines: {long_functions:#?}"
    );
}

#[test]
fn a_long_function_is_measured() {
    let body: String = (0..130).map(|i| format!("    let x{i} = {i};\n")).collect();
    let text = format!("pub(crate) fn long() {{\n{body}}}\n\nfn short() -> u8 {{ 1 }}\n");
    let found = functions(&text);
    assert_eq!(
        found,
        vec![("long".into(), 1, 132), ("short".into(), 134, 1)]
    );
}

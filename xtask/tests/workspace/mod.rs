//! The workspace's folders and source files, shared by the tidy tests.

use std::path::{Path, PathBuf};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Every `.rs` file below `dir`, sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            files.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            files.push(p);
        }
    }
    files.sort();
    files
}

/// The path and text of every `.rs` file below `crate_src` (relative to
/// the root); panics when there is none, so that a check over them cannot
/// pass on an empty or moved folder.
#[allow(dead_code)] // each test binary that includes this module uses part of it
pub fn sources(crate_src: &str) -> Vec<(PathBuf, String)> {
    let src = root().join(crate_src);
    let files = rust_files(&src);
    assert!(!files.is_empty(), "no sources in {}", src.display());
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

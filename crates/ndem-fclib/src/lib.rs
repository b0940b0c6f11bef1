//! # ndem-fclib
//!
//! FCLIB, the community's collection of 3D frictional contact problems
//! (Siconos, LMGC90, …), read and written in its HDF5 layout with a pure
//! Rust HDF5 implementation (`hdf5-pure`): no C library, so the workspace
//! still builds on a fresh machine with `cargo` alone.
//!
//! * [`read`]: a file's problem, local (`/fclib_local`: W, q, μ) or global
//!   (`/fclib_global`: M, H, f, w, μ), as [`Problem`];
//! * [`write_local`], [`write_global`]: the same layout back (compressed
//!   column matrices), so a round trip gives identical numbers.
//!
//! Layout facts (checked on the shared files, `crates/ndem-fclib/tests/data/README.md`):
//! matrices are `fclib_matrix` groups (`nzmax, m, n, p, i, x, nz`); with
//! `nz ≥ 0` (triplet) `i` holds the row and `p` the column of each entry;
//! with `nz = −1` (compressed column) `p` holds column pointers. Per
//! contact the normal component comes first.
//!
//! Invariant: this crate only converts between files and
//! `ndem_solve::{LocalProblem, GlobalProblem}`; it solves nothing.

use nalgebra_sparse::{CooMatrix, CscMatrix, CsrMatrix};
use ndem_solve::{GlobalProblem, LocalProblem, SolveError};
use std::path::Path;
use thiserror::Error;

/// Why a file could not be read or written.
#[derive(Debug, Error)]
pub enum FclibError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// Not an HDF5 file, or a truncated one.
    #[error("{path}: not a readable HDF5 file: {reason}")]
    NotHdf5 {
        /// File.
        path: String,
        /// What the HDF5 reader said.
        reason: String,
    },
    /// A required field is missing or has the wrong type or size.
    #[error("{path}: field `{field}`: {reason}")]
    Field {
        /// File.
        path: String,
        /// Field path inside the file.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// The data do not form a valid problem.
    #[error("{path}: {source}")]
    Problem {
        /// File.
        path: String,
        /// The validation error (names the field).
        source: SolveError,
    },
}

/// A problem read from a file.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// `(W, q, μ)`.
    Local(LocalProblem),
    /// `(M, H, f, w, μ)`.
    Global(GlobalProblem),
}

impl Problem {
    /// The local form (a global problem is reduced by `W = Hᵀ M⁻¹ H`).
    pub fn to_local(&self) -> Result<LocalProblem, SolveError> {
        match self {
            Problem::Local(p) => Ok(p.clone()),
            Problem::Global(g) => g.to_local(),
        }
    }
}

struct Reader<'a> {
    file: hdf5_pure::File,
    path: &'a str,
}

impl Reader<'_> {
    fn field_err(&self, field: &str, reason: impl Into<String>) -> FclibError {
        FclibError::Field {
            path: self.path.to_string(),
            field: field.to_string(),
            reason: reason.into(),
        }
    }

    fn f64s(&self, field: &str) -> Result<Vec<f64>, FclibError> {
        self.file
            .dataset(field)
            .and_then(|d| d.read_f64())
            .map_err(|e| self.field_err(field, e.to_string()))
    }

    fn i64s(&self, field: &str) -> Result<Vec<i64>, FclibError> {
        self.file
            .dataset(field)
            .and_then(|d| d.read_i64())
            .map_err(|e| self.field_err(field, e.to_string()))
    }

    fn scalar(&self, field: &str) -> Result<i64, FclibError> {
        self.i64s(field)?
            .first()
            .copied()
            .ok_or_else(|| self.field_err(field, "empty"))
    }

    fn index(&self, field: &str, x: i64, bound: usize) -> Result<usize, FclibError> {
        if x < 0 || x as usize >= bound {
            Err(self.field_err(field, format!("index {x} outside 0..{bound}")))
        } else {
            Ok(x as usize)
        }
    }

    /// An `fclib_matrix` group as CSR, of the `shape` the problem's
    /// vectors give it (`name` names its sides in the error): a size is
    /// checked before anything is allocated for it, so that a damaged size
    /// field is a typed error, not an allocation of 2⁵⁶ bytes that aborts
    /// the process (`tests/mutated_files.rs`).
    fn matrix(
        &self,
        (group, name): (&str, [&'static str; 2]),
        shape: (usize, usize),
    ) -> Result<CsrMatrix<f64>, FclibError> {
        let f = |n: &str| format!("{group}/{n}");
        let m = self.scalar(&f("m"))?;
        let n = self.scalar(&f("n"))?;
        let nz = self.scalar(&f("nz"))?;
        if m < 0 || n < 0 {
            return Err(self.field_err(&f("m"), "negative size"));
        }
        let (m, n) = (m as usize, n as usize);
        for (field, expected, got) in [(name[0], shape.0, m), (name[1], shape.1, n)] {
            if expected != got {
                return Err(FclibError::Problem {
                    path: self.path.to_string(),
                    source: SolveError::DimensionMismatch {
                        field,
                        expected,
                        got,
                    },
                });
            }
        }
        let p = self.i64s(&f("p"))?;
        let i = self.i64s(&f("i"))?;
        let x = self.f64s(&f("x"))?;
        let mut coo = CooMatrix::new(m, n);
        if nz >= 0 {
            // triplet: i rows, p columns
            let count = nz as usize;
            if p.len() < count || i.len() < count || x.len() < count {
                return Err(self.field_err(&f("x"), "fewer entries than nz"));
            }
            for k in 0..count {
                let r = self.index(&f("i"), i[k], m)?;
                let c = self.index(&f("p"), p[k], n)?;
                coo.push(r, c, x[k]);
            }
        } else {
            // compressed column: p column pointers
            if p.len() != n + 1 {
                return Err(self.field_err(
                    &f("p"),
                    format!("{} column pointers for {n} columns", p.len()),
                ));
            }
            for c in 0..n {
                let (a, b) = (p[c], p[c + 1]);
                if a < 0 || b < a || b as usize > i.len() || b as usize > x.len() {
                    return Err(self.field_err(&f("p"), "column pointers out of range"));
                }
                for k in a as usize..b as usize {
                    let r = self.index(&f("i"), i[k], m)?;
                    coo.push(r, c, x[k]);
                }
            }
        }
        for (k, v) in x.iter().enumerate() {
            if !v.is_finite() {
                return Err(self.field_err(&f("x"), format!("entry {k} is {v}")));
            }
        }
        Ok(CsrMatrix::from(&coo))
    }
}

/// Reads the problem of an FCLIB file.
pub fn read(path: &Path) -> Result<Problem, FclibError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| FclibError::Io {
        path: name.clone(),
        source,
    })?;
    let file = hdf5_pure::File::from_bytes(bytes).map_err(|e| FclibError::NotHdf5 {
        path: name.clone(),
        reason: e.to_string(),
    })?;
    let r = Reader { file, path: &name };
    let problem = |source| FclibError::Problem {
        path: name.clone(),
        source,
    };
    if r.file.group("/fclib_local").is_ok() {
        let q = r.f64s("/fclib_local/vectors/q")?;
        let mu = r.f64s("/fclib_local/vectors/mu")?;
        let w = r.matrix(
            ("/fclib_local/W", ["W.nrows", "W.ncols"]),
            (q.len(), q.len()),
        )?;
        return LocalProblem::new(w, q, mu)
            .map(Problem::Local)
            .map_err(problem);
    }
    if r.file.group("/fclib_global").is_ok() {
        let f = r.f64s("/fclib_global/vectors/f")?;
        let w = r.f64s("/fclib_global/vectors/w")?;
        let mu = r.f64s("/fclib_global/vectors/mu")?;
        let (nd, nw) = (f.len(), w.len());
        let g = GlobalProblem {
            m: r.matrix(("/fclib_global/M", ["M.nrows", "M.ncols"]), (nd, nd))?,
            h: r.matrix(("/fclib_global/H", ["H.nrows", "H.ncols"]), (nd, nw))?,
            f,
            w,
            mu,
        };
        // shapes, finite values, μ ≥ 0, M symmetric (positive definiteness
        // is checked when M is factorized by a solver or `to_local`)
        g.validate().map_err(problem)?;
        return Ok(Problem::Global(g));
    }
    Err(r.field_err("/", "neither /fclib_local nor /fclib_global"))
}

/// An `fclib_matrix` group in compressed-column storage.
fn matrix_group(parent: &mut hdf5_pure::GroupBuilder, name: &str, a: &CsrMatrix<f64>) {
    let csc = CscMatrix::from(a);
    let mut g = parent.create_group(name);
    let p: Vec<i64> = csc.col_offsets().iter().map(|&x| x as i64).collect();
    let i: Vec<i64> = csc.row_indices().iter().map(|&x| x as i64).collect();
    g.create_dataset("m").with_i64_data(&[a.nrows() as i64]);
    g.create_dataset("n").with_i64_data(&[a.ncols() as i64]);
    g.create_dataset("nz").with_i64_data(&[-1]);
    g.create_dataset("nzmax").with_i64_data(&[csc.nnz() as i64]);
    g.create_dataset("p").with_i64_data(&p);
    g.create_dataset("i").with_i64_data(&i);
    g.create_dataset("x").with_f64_data(csc.values());
    parent.add_group(g.finish());
}

fn write_bytes(path: &Path, builder: hdf5_pure::FileBuilder) -> Result<(), FclibError> {
    let name = path.display().to_string();
    let bytes = builder.finish().map_err(|e| FclibError::NotHdf5 {
        path: name.clone(),
        reason: e.to_string(),
    })?;
    std::fs::write(path, bytes).map_err(|source| FclibError::Io { path: name, source })
}

/// Writes a local problem in the FCLIB layout (`/fclib_local`).
pub fn write_local(path: &Path, p: &LocalProblem) -> Result<(), FclibError> {
    let mut b = hdf5_pure::FileBuilder::new();
    let mut top = b.create_group("fclib_local");
    top.create_dataset("spacedim").with_i64_data(&[3]);
    matrix_group(&mut top, "W", p.w());
    let mut v = top.create_group("vectors");
    v.create_dataset("q").with_f64_data(p.q());
    v.create_dataset("mu").with_f64_data(p.mu());
    top.add_group(v.finish());
    b.add_group(top.finish());
    write_bytes(path, b)
}

/// Writes a global problem in the FCLIB layout (`/fclib_global`).
pub fn write_global(path: &Path, g: &GlobalProblem) -> Result<(), FclibError> {
    let mut b = hdf5_pure::FileBuilder::new();
    let mut top = b.create_group("fclib_global");
    top.create_dataset("spacedim").with_i64_data(&[3]);
    matrix_group(&mut top, "M", &g.m);
    matrix_group(&mut top, "H", &g.h);
    let mut v = top.create_group("vectors");
    v.create_dataset("f").with_f64_data(&g.f);
    v.create_dataset("w").with_f64_data(&g.w);
    v.create_dataset("mu").with_f64_data(&g.mu);
    top.add_group(v.finish());
    b.add_group(top.finish());
    write_bytes(path, b)
}

//! FCLIB files are user input: a damaged file is a typed error, never a
//! panic. Files this crate writes (a global problem and its local
//! reduction) are damaged by byte flips, overwrites and truncations
//! (a fixed-seed generator, so every run sees the same cases) and read
//! back; a problem that reads is also reduced to its local form, where a
//! damaged but well-formed file reaches the problem's own checks.

use ndem_fclib::{FclibError, Problem, read, write_global, write_local};
use ndem_testkit::generate::{GlobalSpec, random_global_problem};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Xorshift64: the cases are reproducible from the case number.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// `bytes` damaged in one of three ways.
fn damage(bytes: &mut Vec<u8>, rng: &mut Rng) {
    match rng.below(3) {
        0 => {
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(bytes.len());
                bytes[i] ^= 1 << rng.below(8);
            }
        }
        1 => {
            let keep = rng.below(bytes.len());
            bytes.truncate(keep);
        }
        _ => {
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(bytes.len());
                bytes[i] = [0x00, 0xff, 0x7f, 0x80][rng.below(4)];
            }
        }
    }
}

#[test]
fn damaged_files_are_typed_errors_never_panics() {
    let global = random_global_problem(&GlobalSpec {
        block: 6,
        bodies: 6,
        contacts: 6,
        coupled: true,
        max_friction: 0.5,
        seed: 3,
    })
    .expect("a valid spec");
    let local = global.to_local().expect("a reducible problem");
    let dir = std::env::temp_dir();
    let id = std::process::id();
    let (g_path, l_path, case_path) = (
        dir.join(format!("ndem-fclib-damage-g-{id}.hdf5")),
        dir.join(format!("ndem-fclib-damage-l-{id}.hdf5")),
        dir.join(format!("ndem-fclib-damage-case-{id}.hdf5")),
    );
    write_global(&g_path, &global).unwrap();
    write_local(&l_path, &local).unwrap();
    let originals = [
        std::fs::read(&g_path).unwrap(),
        std::fs::read(&l_path).unwrap(),
    ];
    let _ = (std::fs::remove_file(&g_path), std::fs::remove_file(&l_path));

    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let (mut panics, mut read_ok, mut problem_errors, mut other_errors) = (Vec::new(), 0, 0, 0);
    let cases = 4000;
    for case in 0..cases {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (case as u64 + 1));
        let mut bytes = originals[case % 2].clone();
        damage(&mut bytes, &mut rng);
        std::fs::write(&case_path, &bytes).unwrap();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            read(&case_path).map(|p| match p {
                Problem::Local(l) => Ok(l.contacts()),
                Problem::Global(g) => g.to_local().map(|l| l.contacts()),
            })
        }));
        match outcome {
            Err(_) => panics.push(case),
            Ok(Ok(_)) => read_ok += 1,
            Ok(Err(FclibError::Problem { .. })) => problem_errors += 1,
            Ok(Err(_)) => other_errors += 1,
        }
    }
    std::panic::set_hook(hook);
    let _ = std::fs::remove_file(&case_path);
    println!(
        "{cases} damaged files: {read_ok} read (with or without a problem the solver refuses), \
         {problem_errors} refused by the problem's checks, {other_errors} refused by the reader, \
         {} panics",
        panics.len()
    );
    assert!(panics.is_empty(), "cases that panicked: {panics:?}");
    // the cases reach past the HDF5 layer: some files still read, and some
    // are refused by the problem's own checks (a shape or a value)
    assert!(read_ok > cases / 20, "{read_ok} files read");
    assert!(problem_errors > 0, "no case reached the problem's checks");
}

//! Fuzzing of the loaders and the stepper without nightly: valid scene
//! files and checkpoints mutated by a seeded generator (byte flips,
//! truncations, numeric extremes, swapped types) are fed to
//! `SceneFile::from_toml` → `to_scene` → a few steps, and to
//! `Checkpoint::from_json` → `restore` → a few steps. Every case must end
//! in a result or a typed error; a panic is a finding, saved with its input.

use ndem::checkpoint::Checkpoint;
use ndem::math::rng::Rng;
use ndem::scenes::{Scene, SceneFile, builders};
use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What a fuzzing run found.
#[derive(Debug, Clone, Default)]
pub struct FuzzReport {
    /// Cases run.
    pub cases: usize,
    /// Cases that loaded and stepped without error.
    pub accepted: usize,
    /// Distinct error messages (their first line, numbers masked).
    pub distinct_errors: BTreeSet<String>,
    /// Panics: `(case, input kind, message, input)`.
    pub panics: Vec<(usize, &'static str, String, String)>,
}

/// Values that break assumptions when put in place of a number.
const EXTREMES: [&str; 14] = [
    "0",
    "-0",
    "-1",
    "1e308",
    "-1e308",
    "1e-320",
    "nan",
    "inf",
    "-inf",
    "18446744073709551615",
    "-9223372036854775808",
    "0.5",
    "\"x\"",
    "[]",
];

/// One mutation of `text`.
fn mutate(text: &str, rng: &mut Rng) -> String {
    let mut bytes = text.as_bytes().to_vec();
    if bytes.is_empty() {
        return String::new();
    }
    match rng.below(5) {
        // flip bytes
        0 => {
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(bytes.len());
                bytes[i] ^= 1 << rng.below(8);
            }
        }
        // truncate
        1 => bytes.truncate(rng.below(bytes.len())),
        // a number replaced by an extreme (or a string, an array: a type swap)
        2 | 3 => {
            let starts: Vec<usize> = (0..bytes.len())
                .filter(|&i| {
                    bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
                })
                .collect();
            if !starts.is_empty() {
                let s = starts[rng.below(starts.len())];
                let s = if s > 0 && bytes[s - 1] == b'-' {
                    s - 1
                } else {
                    s
                };
                let e = (s + 1..bytes.len())
                    .find(|&i| !(bytes[i].is_ascii_alphanumeric() || b".-+".contains(&bytes[i])))
                    .unwrap_or(bytes.len());
                let with = EXTREMES[rng.below(EXTREMES.len())].as_bytes();
                bytes.splice(s..e, with.iter().copied());
            }
        }
        // a line dropped or doubled
        _ => {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let mut lines: Vec<&str> = text.lines().collect();
            if !lines.is_empty() {
                let i = rng.below(lines.len());
                if rng.below(2) == 0 {
                    lines.remove(i);
                } else {
                    lines.insert(i, lines[i]);
                }
            }
            return lines.join("\n");
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The valid inputs mutations start from: small scenes covering emitters,
/// joints-free machines, pairs, reduction; and checkpoints of them.
pub fn corpus() -> Vec<(&'static str, String)> {
    let mut scenes: Vec<Scene> = Vec::new();
    let small_pile = builders::PileSpec {
        particles: 30,
        rate: 300.0,
        seed: 3,
    };
    for s in [
        builders::column(4),
        builders::beam(),
        builders::pile(small_pile),
        builders::builtin("conveyor"),
    ] {
        scenes.extend(s);
    }
    // a two-material column with a pair of its own and model reduction
    if let Ok(column) = builders::column(4) {
        let mut file = SceneFile::from_scene(&column);
        file.materials.push(file.materials[0]);
        file.bodies[0].material = 1;
        file.pairs.push(ndem::scenes::file::PairSpec {
            materials: [0, 1],
            friction: Some(0.2),
            rolling_resistance: None,
            restitution: Some(0.5),
            damping: None,
            effective_modulus: None,
            linear_stiffness: None,
        });
        file.reduction = Some(ndem::scenes::reduction::ReductionSpec::from_settings(
            &ndem::reduce::ReductionSettings::default(),
        ));
        scenes.extend(file.to_scene());
    }
    let mut out = Vec::new();
    for mut scene in scenes {
        if let Ok(text) = SceneFile::from_scene(&scene).to_toml() {
            out.push(("scene", text));
        }
        if let Ok(mut stepper) = scene.stepper() {
            for _ in 0..5 {
                let _ = scene.step(&mut stepper);
            }
            out.push((
                "checkpoint",
                Checkpoint::capture(&scene, &mut stepper).to_json(),
            ));
        }
    }
    out
}

/// The input of case `k` (seed `seed + k`) over `corpus`: its kind
/// (`"scene"` or `"checkpoint"`) and text, to reproduce a finding.
pub fn case_input(
    corpus: &[(&'static str, String)],
    seed: u64,
    k: usize,
) -> (&'static str, String) {
    let mut rng = Rng::new(seed.wrapping_add(k as u64));
    let (kind, base) = &corpus[rng.below(corpus.len())];
    let mut input = mutate(base, &mut rng);
    for _ in 0..rng.below(3) {
        input = mutate(&input, &mut rng);
    }
    (kind, input)
}

/// Loads `input` as `kind` and takes `steps` steps; `Ok` or the error text.
pub fn exercise(kind: &str, input: &str, steps: usize) -> Result<(), String> {
    let (mut scene, mut stepper) = if kind == "scene" {
        let file = SceneFile::from_toml(input).map_err(|e| e.to_string())?;
        let scene = file.to_scene().map_err(|e| e.to_string())?;
        let stepper = scene.stepper().map_err(|e| e.to_string())?;
        (scene, stepper)
    } else {
        let cp = Checkpoint::from_json(input)?;
        cp.restore().map_err(|e| e.to_string())?
    };
    for _ in 0..steps {
        scene.step(&mut stepper).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The error's first line with digits masked, so that "body 3" and
/// "body 4" count as one message.
fn error_class(e: &str) -> String {
    let masked: String = e
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect();
    // a TOML parse error quotes the input: keep its message, after the caret
    let masked = match (masked.find("TOML parse error"), masked.rfind('^')) {
        (Some(start), Some(caret)) => format!(
            "{}TOML parse error: {}",
            &masked[..start],
            masked[caret + 1..].trim_start_matches('^').trim()
        ),
        _ => masked,
    };
    // the mutated token of "unknown field `x`" / "unknown variant `x`"
    let masked = match masked.find("unknown ").and_then(|i| {
        let open = i + masked[i..].find('`')?;
        let close = open + 1 + masked[open + 1..].find('`')?;
        Some((open, close))
    }) {
        Some((open, close)) => format!("{}`…`{}", &masked[..open], &masked[close + 1..]),
        None => masked,
    };
    let first = masked.lines().next().unwrap_or("");
    first.chars().take(160).collect()
}

/// Runs `cases` mutated inputs (case `k` uses seed `seed + k`), each loaded
/// and stepped `steps` times; `on_case` is called after each.
pub fn fuzz(
    cases: usize,
    seed: u64,
    steps: usize,
    on_case: &mut dyn FnMut(usize, &FuzzReport),
) -> FuzzReport {
    let corpus = corpus();
    let mut report = FuzzReport::default();
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for k in 0..cases {
        let (kind, input) = case_input(&corpus, seed, k);
        match catch_unwind(AssertUnwindSafe(|| exercise(kind, &input, steps))) {
            Ok(Ok(())) => report.accepted += 1,
            Ok(Err(e)) => {
                report.distinct_errors.insert(error_class(&e));
            }
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".into());
                report.panics.push((k, kind, message, input));
            }
        }
        report.cases = k + 1;
        on_case(k, &report);
    }
    std::panic::set_hook(hook);
    report
}

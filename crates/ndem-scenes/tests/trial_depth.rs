//! `[reduction.trial_split] depth`: the partial trial solve in scene files.

use ndem_reduce::{ReductionSettings, TrialSplit};
use ndem_scenes::builders::builtin;
use ndem_scenes::{SceneError, SceneFile};

/// The `[reduction.trial_split]` table of a scene file's text.
fn trial_table(text: &str) -> &str {
    let start = text.find("[reduction.trial_split]").expect("a trial table");
    let rest = &text[start + 1..];
    &text[start..start + 1 + rest.find("\n[").unwrap_or(rest.len())]
}

/// Absent by default (the whole unfolded model) and not written; a depth
/// is written, read back, and 0 is refused naming the field.
#[test]
fn the_trial_depth_round_trips_and_is_checked() {
    let mut scene = builtin("column").unwrap();
    scene.reduction = Some(ReductionSettings {
        trial_split: Some(TrialSplit::default()),
        ..ReductionSettings::default()
    });
    let text = SceneFile::from_scene(&scene).to_toml().unwrap();
    assert!(
        !trial_table(&text).contains("depth"),
        "the default is not written: {}",
        trial_table(&text)
    );
    let back = SceneFile::from_toml(&text).unwrap().to_scene().unwrap();
    let trial = back.reduction.unwrap().trial_split.unwrap();
    assert_eq!(trial.depth, None);
    scene.reduction = Some(ReductionSettings {
        trial_split: Some(TrialSplit {
            depth: Some(2),
            ..TrialSplit::default()
        }),
        ..ReductionSettings::default()
    });
    let text = SceneFile::from_scene(&scene).to_toml().unwrap();
    assert!(trial_table(&text).contains("\ndepth = 2\n"), "{text}");
    let back = SceneFile::from_toml(&text).unwrap().to_scene().unwrap();
    assert_eq!(back.reduction.unwrap().trial_split.unwrap().depth, Some(2));
    let table = trial_table(&text);
    let zero = text.replace(table, &table.replace("\ndepth = 2\n", "\ndepth = 0\n"));
    match SceneFile::from_toml(&zero).unwrap().to_scene() {
        Err(SceneError::Invalid { field, reason }) => {
            assert_eq!(field, "reduction.trial_split.depth", "{reason}")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

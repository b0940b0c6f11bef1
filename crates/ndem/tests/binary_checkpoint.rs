//! The binary checkpoint format: the same checkpoint as the JSON one, read
//! back exactly, resuming bit-identically, and refusing damaged files with
//! an error (never a panic).

use ndem::checkpoint::{Checkpoint, CheckpointFormat, MAGIC};
use ndem::scenes::{Scene, builders};
use ndem::step::Stepper;

fn stepped(mut scene: Scene, steps: usize) -> (Scene, Stepper) {
    let mut stepper = scene.stepper().unwrap();
    for _ in 0..steps {
        scene.step(&mut stepper).unwrap();
    }
    (scene, stepper)
}

fn binary(cp: &mut Checkpoint) -> Vec<u8> {
    let mut bytes = Vec::new();
    cp.write_binary(&mut bytes).unwrap();
    bytes
}

/// A pile with model reduction after 300 steps: spheres, a floor, an
/// emitter with its random state, warm-start impulses, aggregates and
/// their members.
fn reduced_pile() -> (Scene, Stepper) {
    let mut scene = builders::pile(builders::PileSpec {
        particles: 60,
        rate: 200.0,
        seed: 9,
    })
    .unwrap();
    scene.reduction = Some(ndem::reduce::ReductionSettings::default());
    stepped(scene, 300)
}

#[test]
fn a_binary_checkpoint_reads_back_to_the_same_checkpoint() {
    let (pile, mut pile_stepper) = reduced_pile();
    // the excavator with a small trench: meshes, boxes, joints with
    // drives, a drive schedule
    let spec = ndem::scenes::excavator::ExcavatorSpec {
        trench: [1.2, 2.2, 0.12],
        ..ndem::scenes::excavator::ExcavatorSpec::quick()
    };
    let (excavator, mut excavator_stepper) =
        stepped(ndem::scenes::excavator::excavator(spec).unwrap(), 2);
    for (scene, stepper) in [
        (&pile, &mut pile_stepper),
        (&excavator, &mut excavator_stepper),
    ] {
        let mut cp = Checkpoint::capture(scene, stepper);
        assert!(
            !cp.contacts.is_empty() || !cp.rows.is_empty(),
            "{}: nothing stored",
            scene.name
        );
        let bytes = binary(&mut cp);
        assert!(bytes.starts_with(MAGIC));
        let back = Checkpoint::read_binary(&mut bytes.as_slice()).unwrap();
        assert_eq!(back, cp, "{}", scene.name);
    }
    let cp = Checkpoint::capture(&pile, &mut pile_stepper);
    assert!(!cp.aggregates.is_empty() && !cp.members.is_empty());
}

#[test]
fn a_binary_checkpoint_resumes_bit_identically() {
    let (mut a, mut sa) = reduced_pile();
    let bytes = binary(&mut Checkpoint::capture(&a, &mut sa));
    let (mut b, mut sb) = Checkpoint::read_binary(&mut bytes.as_slice())
        .unwrap()
        .restore()
        .unwrap();
    for _ in 0..100 {
        a.step(&mut sa).unwrap();
        b.step(&mut sb).unwrap();
    }
    assert_eq!(a.world.len(), b.world.len());
    let bits = |s: &Scene| -> Vec<u64> {
        let w = &s.world;
        w.positions()
            .iter()
            .flat_map(|p| p.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
            .chain(w.velocities().iter().flat_map(|v| {
                v.linear
                    .iter()
                    .chain(v.angular.iter())
                    .map(|x| x.to_bits())
                    .collect::<Vec<_>>()
            }))
            .collect()
    };
    assert_eq!(bits(&a), bits(&b));
    assert_eq!(sa.time().to_bits(), sb.time().to_bits());
}

#[test]
fn every_truncation_is_an_error_and_no_damage_panics() {
    let (column, mut stepper) = stepped(builders::builtin("column").unwrap(), 20);
    let bytes = binary(&mut Checkpoint::capture(&column, &mut stepper));
    for len in 0..bytes.len() {
        assert!(
            Checkpoint::read_binary(&mut &bytes[..len]).is_err(),
            "a file cut at byte {len} of {} was read",
            bytes.len()
        );
    }
    // every byte overwritten by each of three values: an error or a
    // checkpoint, never a panic (restore checks what it is given)
    for at in 0..bytes.len() {
        for value in [0u8, 0x7f, 0xff] {
            let mut damaged = bytes.clone();
            damaged[at] = value;
            if let Ok(cp) = Checkpoint::read_binary(&mut damaged.as_slice()) {
                let _ = cp.restore();
            }
        }
    }
}

#[test]
fn read_file_reads_both_formats() {
    let dir = std::env::temp_dir().join(format!("ndem-binary-checkpoint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (column, mut stepper) = stepped(builders::builtin("column").unwrap(), 10);
    let mut cp = Checkpoint::capture(&column, &mut stepper);
    for format in [CheckpointFormat::Json, CheckpointFormat::Binary] {
        let path = dir.join(format!("cp.{}", format.extension()));
        cp.write_file(&path, format).unwrap();
        assert_eq!(Checkpoint::read_file(&path).unwrap(), cp, "{format:?}");
    }
    // the streamed writer of a scene writes the same checkpoint
    let (pile, mut pile_stepper) = reduced_pile();
    let streamed = dir.join("streamed.ckpt");
    Checkpoint::write_scene(
        &pile,
        &mut pile_stepper,
        &streamed,
        CheckpointFormat::Binary,
    )
    .unwrap();
    assert_eq!(
        Checkpoint::read_file(&streamed).unwrap(),
        Checkpoint::capture(&pile, &mut pile_stepper)
    );
    let json = std::fs::read_to_string(dir.join("cp.json")).unwrap();
    assert_eq!(json, cp.to_json());
    std::fs::write(dir.join("junk.ckpt"), b"NDEMCKPT\x07\x00\x00\x00").unwrap();
    let e = Checkpoint::read_file(&dir.join("junk.ckpt")).unwrap_err();
    assert!(e.contains("format 7"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `Checkpoint::write_scene` streams the bodies from the world and the
/// stored impulses from the history (held contacts of aggregates merged
/// in key order): the same bytes as the captured checkpoint written whole.
#[test]
fn a_streamed_checkpoint_is_the_captured_one() {
    let (pile, mut stepper) = reduced_pile();
    let history = stepper.history().expect("a history");
    let (listed, stored) = (history.contact_count(), history.len());
    assert!(listed > stored, "no held contact to merge in");
    let mut cp = Checkpoint::capture(&pile, &mut stepper);
    assert!(!cp.aggregates.is_empty(), "the pile merged nothing");
    assert_eq!(cp.contacts.len(), listed);
    let whole = binary(&mut cp);
    let dir = std::env::temp_dir().join(format!("ndem-streamed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("streamed.ckpt");
    Checkpoint::write_scene(&pile, &mut stepper, &path, CheckpointFormat::Binary).unwrap();
    let streamed = std::fs::read(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(streamed == whole, "the streamed file differs");
}

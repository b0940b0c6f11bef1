//! The fast version of `cargo xtask fuzz`: mutated scene files and
//! checkpoints never panic the loaders or the stepper.

#[test]
fn mutated_inputs_never_panic() {
    let report = ndem_cli::fuzz::fuzz(3000, 1, 3, &mut |_, _| {});
    println!(
        "{} cases: {} accepted, {} distinct errors, {} panics",
        report.cases,
        report.accepted,
        report.distinct_errors.len(),
        report.panics.len()
    );
    for (k, kind, message, input) in report.panics.iter().take(3) {
        println!(
            "case {k} ({kind}): {message}\n{}",
            &input[..input.len().min(2000)]
        );
    }
    assert!(report.panics.is_empty(), "{} panics", report.panics.len());
    // the mutations reach the validation, not only the parser
    assert!(
        report.distinct_errors.len() > 20,
        "{:?}",
        report.distinct_errors
    );
}

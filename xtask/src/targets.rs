//! The performance targets `cargo xtask peers` is measured against
//! (`docs/performance.md`, "Targets and where they stand"),
//! each judged on the figures of the run that printed it: met, not met,
//! or not measured (the run did not produce the figure, for instance a
//! peer that is not installed). The suite reports; it does not fail on a
//! target it misses (its exit status says whether it ran).

use serde_json::json;
use std::fmt::Write as _;

/// Which side of its threshold a figure must fall on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Bound {
    /// The figure must be at most this.
    AtMost(f64),
    /// The figure must be at least this.
    AtLeast(f64),
}

impl Bound {
    fn holds_for(self, x: f64) -> bool {
        match self {
            Bound::AtMost(b) => x <= b,
            Bound::AtLeast(b) => x >= b,
        }
    }

    fn text(self) -> String {
        match self {
            Bound::AtMost(b) => format!("≤ {b}"),
            Bound::AtLeast(b) => format!("≥ {b}"),
        }
    }
}

/// What became of a target in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TargetStatus {
    Met,
    NotMet,
    /// The run has no finite figure for it.
    NotMeasured,
}

impl TargetStatus {
    pub(crate) const fn name(self) -> &'static str {
        match self {
            TargetStatus::Met => "met",
            TargetStatus::NotMet => "not met",
            TargetStatus::NotMeasured => "not measured",
        }
    }
}

/// One target with the figure a run measured for it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TargetCheck {
    /// What is measured, with its unit.
    pub(crate) what: String,
    /// The bed size the target is set for.
    pub(crate) particles: usize,
    pub(crate) bound: Bound,
    /// The run's figure (NaN: not measured).
    pub(crate) measured: f64,
}

impl TargetCheck {
    pub(crate) fn status(&self) -> TargetStatus {
        if !self.measured.is_finite() {
            TargetStatus::NotMeasured
        } else if self.bound.holds_for(self.measured) {
            TargetStatus::Met
        } else {
            TargetStatus::NotMet
        }
    }

    fn to_json(&self) -> serde_json::Value {
        let (at_most, at_least) = match self.bound {
            Bound::AtMost(b) => (Some(b), None),
            Bound::AtLeast(b) => (None, Some(b)),
        };
        json!({
            "target": self.what,
            "particles": self.particles,
            "at_most": at_most,
            "at_least": at_least,
            "measured": self.measured.is_finite().then_some(self.measured),
            "status": self.status().name(),
        })
    }
}

/// The checks as JSON rows and as the report's section (with `sizes`, the
/// bed sizes the run measured, named when no target is set for them).
pub(crate) fn render(checks: &[TargetCheck], sizes: &[usize]) -> (Vec<serde_json::Value>, String) {
    let rows = checks.iter().map(TargetCheck::to_json).collect();
    let mut md = String::from(
        "\n## Targets\n\nEach judged on this run's figures (the minimum over its repeats); a target missed is reported, not failed.\n\n",
    );
    if checks.is_empty() {
        let _ = writeln!(
            md,
            "No target is set for the sizes this run measured ({sizes:?}): they are set for 10⁴ and 10⁵ spheres.",
        );
        return (rows, md);
    }
    md.push_str("| target | N | bound | measured | status |\n|---|---|---|---|---|\n");
    for c in checks {
        let measured = if c.measured.is_finite() {
            format!("{:.3}", c.measured)
        } else {
            "–".to_string()
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {measured} | **{}** |",
            c.what,
            c.particles,
            c.bound.text(),
            c.status().name()
        );
    }
    (rows, md)
}

#[cfg(test)]
mod tests {
    use super::{Bound, TargetCheck, TargetStatus, render};

    fn check(bound: Bound, measured: f64) -> TargetCheck {
        TargetCheck {
            what: "x".into(),
            particles: 100_000,
            bound,
            measured,
        }
    }

    #[test]
    fn a_target_is_met_on_its_side_of_the_bound_and_at_it() {
        assert_eq!(check(Bound::AtMost(45.0), 45.0).status(), TargetStatus::Met);
        assert_eq!(check(Bound::AtMost(45.0), 44.9).status(), TargetStatus::Met);
        assert_eq!(
            check(Bound::AtMost(45.0), 45.1).status(),
            TargetStatus::NotMet
        );
        assert_eq!(check(Bound::AtLeast(1.7), 1.7).status(), TargetStatus::Met);
        assert_eq!(
            check(Bound::AtLeast(1.7), 1.69).status(),
            TargetStatus::NotMet
        );
    }

    #[test]
    fn a_missing_or_nan_figure_is_not_measured_never_met() {
        for bound in [Bound::AtMost(1.0), Bound::AtLeast(1.0)] {
            for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                assert_eq!(check(bound, x).status(), TargetStatus::NotMeasured);
            }
        }
        let (rows, md) = render(&[check(Bound::AtMost(1.0), f64::NAN)], &[100_000]);
        assert_eq!(rows[0]["status"], "not measured");
        assert!(rows[0]["measured"].is_null());
        assert!(md.contains("| – | **not measured** |"));
    }

    #[test]
    fn the_report_names_every_check_or_says_none_applies() {
        let checks = [
            check(Bound::AtMost(45.0), 48.2),
            check(Bound::AtLeast(1.7), 1.72),
        ];
        let (rows, md) = render(&checks, &[100_000]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0]["status"], "not met");
        assert_eq!(rows[0]["at_most"], 45.0);
        assert!(rows[0]["at_least"].is_null());
        assert_eq!(rows[1]["status"], "met");
        assert!(md.contains("| x | 100000 | ≤ 45 | 48.200 | **not met** |"));
        assert!(md.contains("| x | 100000 | ≥ 1.7 | 1.720 | **met** |"));
        let (rows, md) = render(&[], &[1000]);
        assert!(rows.is_empty());
        assert!(md.contains("No target is set for the sizes this run measured ([1000])"));
    }
}

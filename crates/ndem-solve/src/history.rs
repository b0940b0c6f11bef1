//! The residual history of a solve: the statistics after every
//! iteration, recorded by an [`Observer`].

use crate::metrics::{ResidualEvaluator, ResidualStats};
use crate::solver::{IterationRecord, Observer};
use std::time::Duration;

/// One entry of a [`ResidualHistory`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HistoryEntry {
    /// Completed iterations.
    pub iteration: usize,
    /// Solver time so far.
    pub elapsed: Duration,
    /// Residual statistics after this iteration.
    pub stats: ResidualStats,
}

/// An observer that records residual statistics after every iteration
/// (Figs. 4 and 8 of the warm-starting paper, and the solver comparison).
#[derive(Debug, Clone, Default)]
pub struct ResidualHistory {
    /// Recorded entries, one per iteration.
    pub entries: Vec<HistoryEntry>,
    /// Multipliers after each iteration, when `keep_lambda` is set
    /// (for eq. 13 against a reference solve).
    pub lambdas: Vec<Vec<f64>>,
    /// Keep a copy of `λ` after every iteration.
    pub keep_lambda: bool,
    evaluator: ResidualEvaluator,
}

impl ResidualHistory {
    /// A history that records statistics only.
    pub fn new() -> Self {
        Self::default()
    }

    /// A history that also keeps every iterate.
    pub fn with_lambdas() -> Self {
        Self {
            keep_lambda: true,
            ..Self::default()
        }
    }
}

impl Observer for ResidualHistory {
    fn observe(&mut self, record: &IterationRecord<'_>) {
        let stats = self
            .evaluator
            .stats(record.problem, record.lambda, record.velocity);
        self.entries.push(HistoryEntry {
            iteration: record.iteration,
            elapsed: record.elapsed,
            stats,
        });
        if self.keep_lambda {
            self.lambdas.push(record.lambda.to_vec());
        }
    }
}

//! Progress of a run: a bar on a terminal, plain periodic lines otherwise.
//! The remaining time comes from the recent rate (the last
//! [`RECENT_STEPS`] steps), not the average since the start: a pile's
//! steps get slower as particles are emitted, and an average over the
//! whole run promises too early an end.

use ndem::step::StepStats;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Steps in the moving window of the rate.
pub const RECENT_STEPS: usize = 50;

/// Progress display of one run.
pub struct Progress {
    style: ProgressStyle,
    bar: Option<indicatif::ProgressBar>,
    total: u64,
    done: u64,
    recent: VecDeque<Instant>,
    last_line: Instant,
}

impl Progress {
    /// Starts showing progress of `total` steps.
    pub fn new(style: ProgressStyle, total: u64) -> Self {
        let bar = (style == ProgressStyle::Bar).then(|| {
            let b = indicatif::ProgressBar::new(total);
            b.set_style(
                indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} steps  {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        });
        let now = Instant::now();
        Self {
            style,
            bar,
            total,
            done: 0,
            recent: VecDeque::from([now]),
            last_line: now,
        }
    }

    /// Steps per second over the recent window.
    pub fn recent_rate(&self) -> Option<f64> {
        let (first, last) = (self.recent.front()?, self.recent.back()?);
        let span = last.duration_since(*first).as_secs_f64();
        (self.recent.len() > 1 && span > 0.0).then(|| (self.recent.len() - 1) as f64 / span)
    }

    /// Remaining wall time at the recent rate.
    pub fn eta(&self) -> Option<Duration> {
        let rate = self.recent_rate()?;
        Some(Duration::from_secs_f64(
            self.total.saturating_sub(self.done) as f64 / rate,
        ))
    }

    /// Records one step.
    pub fn step(&mut self, s: &StepStats) {
        self.done += 1;
        let now = Instant::now();
        self.recent.push_back(now);
        while self.recent.len() > RECENT_STEPS + 1 {
            self.recent.pop_front();
        }
        let eta = self
            .eta()
            .map_or("-".to_string(), |d| format!("{:.0} s", d.as_secs_f64()));
        let rate = self.recent_rate().unwrap_or(0.0);
        match self.style {
            ProgressStyle::Bar => {
                if let Some(b) = &self.bar {
                    b.inc(1);
                    if self.done.is_multiple_of(10) || self.done == self.total {
                        b.set_message(format!(
                            "t = {:.3} s, {} contacts, {rate:.1} steps/s, eta {eta}",
                            s.time, s.contacts
                        ));
                    }
                }
            }
            ProgressStyle::Lines { every } => {
                if now.duration_since(self.last_line) >= every || self.done == self.total {
                    self.last_line = now;
                    eprintln!(
                        "step {}/{} (t = {:.3} s): {} contacts, {rate:.1} steps/s, eta {eta}",
                        self.done, self.total, s.time, s.contacts
                    );
                }
            }
            ProgressStyle::Quiet => {}
        }
    }

    /// Ends the display.
    pub fn finish(&mut self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProgressStyle {
    /// Nothing.
    #[default]
    Quiet,
    /// A progress bar (stderr is a terminal).
    Bar,
    /// A plain line on stderr every `every` (stderr is a file or a pipe).
    Lines {
        /// Interval between lines.
        every: Duration,
    },
}

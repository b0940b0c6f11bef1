//! Two figures of the host that decide what a second thread gains, taken
//! beside a suite's timings (`docs/performance.md`, "How to measure"): how long
//! a cache line written by one thread takes to reach another, and how far
//! dependent arithmetic alone scales on two threads. On a host whose
//! virtual cores share no cache the first is several times what cores of
//! one cache take, and every body velocity the two threads of a sweep
//! share pays it. A third figure, how fast one thread and two read
//! memory, bounds what two threads gain on a pass whose data does not fit
//! in a cache (the 10⁵ bed's). A virtual machine's cores can move between the two
//! kinds within seconds (this project's host: 14-36 ns at some times,
//! 155-167 ns at others), so a suite measures before and after its runs.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// What [`probe`] measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostProbe {
    /// One way, a cache line from one thread to another \[ns\]: half the
    /// shortest mean round trip of a counter passed back and forth.
    pub line_transfer_ns: f64,
    /// Time of a fixed amount of dependent floating-point arithmetic on
    /// one thread over the time of the same amount split between two
    /// (shortest of the repeats): 2 when the two threads run on cores of
    /// their own.
    pub compute_scaling: f64,
    /// Reading a buffer four times the size of a large L3 cache
    /// ([`STREAM_BYTES`]) from memory, one thread and two (each half of
    /// it) \[GB/s\]: a pass whose data lives in memory rather than in a
    /// cache scales on two threads by at most their ratio (this
    /// project's host: 21-24 GB/s on one thread, 26-43 on two,
    /// 1.2-1.95× as its virtual cores moved).
    pub memory_gbs: [f64; 2],
}

impl HostProbe {
    /// The figures as a JSON object for a suite's summary.
    pub fn to_json(self) -> serde_json::Value {
        serde_json::json!({
            "line_transfer_ns": self.line_transfer_ns,
            "compute_scaling_two_threads": self.compute_scaling,
            "memory_read_gb_per_s": {"one_thread": self.memory_gbs[0], "two_threads": self.memory_gbs[1]},
        })
    }

    /// One sentence for a report.
    pub fn sentence(self) -> String {
        format!(
            "a cache line written by one thread reaches another in {:.0} ns (one way); dependent arithmetic runs {:.2}× faster on two threads than on one; memory is read at {:.1} GB/s by one thread and {:.1} GB/s by two ({:.2}×).",
            self.line_transfer_ns,
            self.compute_scaling,
            self.memory_gbs[0],
            self.memory_gbs[1],
            self.memory_gbs[1] / self.memory_gbs[0]
        )
    }
}

/// The probes a suite takes before and after its timed runs (a virtual
/// machine's cores may move in between), as its summary and report show
/// them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AroundRuns {
    /// Before the runs.
    pub before: Option<HostProbe>,
    /// After them.
    pub after: Option<HostProbe>,
}

impl AroundRuns {
    /// `{"before_runs": …, "after_runs": …}` for a suite's summary.
    pub fn to_json(self) -> serde_json::Value {
        serde_json::json!({
            "before_runs": self.before.map(HostProbe::to_json),
            "after_runs": self.after.map(HostProbe::to_json),
        })
    }

    /// A paragraph for each probe taken, for a report.
    pub fn text(self) -> String {
        [("Before the runs", self.before), ("After them", self.after)]
            .into_iter()
            .filter_map(|(when, p)| p.map(|p| format!("{when}: {}\n\n", p.sentence())))
            .collect()
    }
}

/// Round trips of one ping-pong.
const ROUND_TRIPS: u64 = 100_000;
/// Repeats of each measurement (the shortest is kept).
const REPEATS: usize = 3;
/// Dependent multiply-adds of the arithmetic probe, in all.
const CHAIN_STEPS: u64 = 40_000_000;
/// Bytes the memory probe reads (four times a 32 MiB L3 cache).
const STREAM_BYTES: usize = 128 << 20;

/// Measures the host (about a second); `None` with fewer than two
/// hardware threads.
pub fn probe() -> Option<HostProbe> {
    if std::thread::available_parallelism().map_or(1, usize::from) < 2 {
        return None;
    }
    let line = (0..REPEATS)
        .map(|_| ping_pong())
        .fold(f64::INFINITY, f64::min);
    let one = (0..REPEATS)
        .map(|_| chains(1))
        .fold(f64::INFINITY, f64::min);
    let two = (0..REPEATS)
        .map(|_| chains(2))
        .fold(f64::INFINITY, f64::min);
    let buffer: Vec<f64> = (0..STREAM_BYTES / 8).map(|i| i as f64).collect();
    let memory_gbs = [1, 2].map(|threads| {
        let seconds = (0..REPEATS)
            .map(|_| read_through(&buffer, threads))
            .fold(f64::INFINITY, f64::min);
        STREAM_BYTES as f64 / seconds / 1e9
    });
    Some(HostProbe {
        line_transfer_ns: line,
        compute_scaling: one / two,
        memory_gbs,
    })
}

/// Seconds to sum `buffer` split between `threads` threads (eight
/// independent sums per thread: the reads, not the additions, set the
/// pace).
fn read_through(buffer: &[f64], threads: usize) -> f64 {
    let sum = |part: &[f64]| {
        let mut s = [0.0f64; 8];
        for chunk in part.chunks_exact(8) {
            for (acc, x) in s.iter_mut().zip(chunk) {
                *acc += x;
            }
        }
        black_box(s.iter().sum::<f64>())
    };
    let per = buffer.len().div_ceil(threads);
    let start = Instant::now();
    std::thread::scope(|s| {
        for part in buffer.chunks(per).skip(1) {
            s.spawn(move || sum(part));
        }
        sum(&buffer[..per.min(buffer.len())]);
    });
    start.elapsed().as_secs_f64()
}

/// Half the mean round trip of a counter two threads pass to each other
/// \[ns\]: each waits (spinning) for the other's increment, then adds its own.
fn ping_pong() -> f64 {
    let counter = AtomicU64::new(0);
    let wait_for = |value: u64| {
        while counter.load(Ordering::Acquire) != value {
            std::hint::spin_loop();
        }
    };
    let start = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..ROUND_TRIPS {
                wait_for(2 * i + 1);
                counter.store(2 * i + 2, Ordering::Release);
            }
        });
        for i in 0..ROUND_TRIPS {
            counter.store(2 * i + 1, Ordering::Release);
            wait_for(2 * i + 2);
        }
    });
    start.elapsed().as_secs_f64() * 1e9 / ROUND_TRIPS as f64 / 2.0
}

/// Seconds to run [`CHAIN_STEPS`] dependent multiply-adds split between
/// `threads` threads.
fn chains(threads: u64) -> f64 {
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(move || chain(CHAIN_STEPS / threads));
        }
    });
    start.elapsed().as_secs_f64()
}

/// Four independent chains of `steps / 4` dependent multiply-adds each
/// (the result is kept from the optimiser).
fn chain(steps: u64) -> f64 {
    let (a, b) = (black_box(1.000_000_1), black_box(0.999_999_9));
    let mut x = [1.0f64, 2.0, 3.0, 4.0];
    for _ in 0..steps / 4 {
        for v in &mut x {
            *v = *v * a + b * 1e-9;
        }
    }
    black_box(x.iter().sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe's figures are positive and finite on a host with two
    /// threads (their size is the host's, not checked).
    #[test]
    fn the_probe_measures_something() {
        let Some(p) = probe() else { return };
        eprintln!("{}", p.sentence());
        assert!(p.line_transfer_ns.is_finite() && p.line_transfer_ns > 0.0);
        assert!(p.compute_scaling.is_finite() && p.compute_scaling > 0.0);
        assert!(p.memory_gbs.iter().all(|g| g.is_finite() && *g > 0.0));
        assert!(p.to_json()["memory_read_gb_per_s"]["two_threads"].is_number());
        let around = AroundRuns {
            before: Some(p),
            after: None,
        };
        assert!(around.text().starts_with("Before the runs: a cache line"));
        assert!(!around.text().contains("After them"));
        assert!(around.to_json()["after_runs"].is_null());
        assert!(around.to_json()["before_runs"]["line_transfer_ns"].is_number());
        assert!(p.sentence().contains(" ns "));
        assert!(p.to_json()["line_transfer_ns"].is_number());
    }
}

//! The communicator the decomposition runs on: MPI (feature `mpi`, rsmpi)
//! or, for tests and single-machine use without MPI, threads of one
//! process standing in for ranks.
//!
//! Only three collective operations are needed: a personalised exchange
//! (each rank sends its own buffer to each other rank: ghost updates,
//! migration, velocity accumulation), an all-gather of equal-sized slices,
//! and the reductions built on it. Reductions sum in rank order on every
//! rank, so their results are bit-identical on all ranks and do not depend
//! on the MPI implementation's reduction tree.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};

/// Collective communication among the ranks of one run. Every rank must
/// call the same operations in the same order (as in MPI).
pub trait Communicator: Send + Sync {
    /// This rank, `0..size`.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Personalised all-to-all: `send[r]` goes to rank `r` (`send` has
    /// `size` entries); returns what every rank sent to this one, by rank.
    fn exchange(&self, send: Vec<Vec<f64>>) -> Vec<Vec<f64>>;
    /// Every rank's `values`, by rank (the slices may differ in length).
    fn all_gather(&self, values: &[f64]) -> Vec<Vec<f64>> {
        self.exchange(vec![values.to_vec(); self.size()])
    }
    /// Element-wise sum over ranks, added in rank order (the same bits on
    /// every rank).
    fn sum(&self, values: &[f64]) -> Vec<f64> {
        reduce(self.all_gather(values), values.len(), |a, b| a + b)
    }
    /// Element-wise maximum over ranks.
    fn max(&self, values: &[f64]) -> Vec<f64> {
        reduce(self.all_gather(values), values.len(), f64::max)
    }
    /// [`Self::sum`] written over `values`.
    fn sum_in_place(&self, values: &mut [f64]) {
        let total = self.sum(values);
        values.copy_from_slice(&total);
    }
    /// [`Self::max`] written over `values`.
    fn max_in_place(&self, values: &mut [f64]) {
        let total = self.max(values);
        values.copy_from_slice(&total);
    }
    /// Whether every rank passed `true`.
    fn all(&self, flag: bool) -> bool {
        self.max(&[if flag { 0.0 } else { 1.0 }])[0] == 0.0
    }
}

fn reduce(parts: Vec<Vec<f64>>, n: usize, op: impl Fn(f64, f64) -> f64) -> Vec<f64> {
    let mut it = parts.into_iter();
    let mut out = it.next().unwrap_or_default();
    out.resize(n, 0.0);
    for p in it {
        for (o, x) in out.iter_mut().zip(p) {
            *o = op(*o, x);
        }
    }
    out
}

/// One rank of a run whose ranks are threads of this process: the
/// in-process backend, for tests and for machines without MPI. Made by
/// [`run_on_threads`].
#[derive(Debug, Clone)]
pub struct ThreadComm {
    rank: usize,
    shared: Arc<Mailboxes>,
}

#[derive(Debug)]
struct Mailboxes {
    size: usize,
    barrier: Barrier,
    /// Two sets of `size²` slots, used by alternate exchanges:
    /// `slots[set * size² + from * size + to]`.
    slots: Mutex<Vec<Vec<f64>>>,
    /// Each rank's count of exchanges made: its next exchange uses set
    /// `count % 2`.
    exchanges: Vec<AtomicUsize>,
}

impl Communicator for ThreadComm {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.shared.size
    }
    fn exchange(&self, send: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
        let n = self.shared.size;
        assert_eq!(send.len(), n, "exchange needs one buffer per rank");
        // One barrier per exchange, the slot sets alternating: a rank
        // writes set `k % 2` again in exchange `k + 2` only after it passed
        // exchange `k + 1`'s barrier, which every rank reaches after it has
        // read exchange `k`'s.
        let set = self.shared.exchanges[self.rank].fetch_add(1, Ordering::Relaxed) % 2;
        let base = set * n * n;
        {
            let mut slots = self.shared.slots.lock().unwrap_or_else(|e| e.into_inner());
            for (to, buf) in send.into_iter().enumerate() {
                slots[base + self.rank * n + to] = buf;
            }
        }
        self.shared.barrier.wait();
        let mut slots = self.shared.slots.lock().unwrap_or_else(|e| e.into_inner());
        (0..n)
            .map(|from| std::mem::take(&mut slots[base + from * n + self.rank]))
            .collect()
    }
}

/// Runs `f` on `ranks` threads, each with its [`ThreadComm`], and returns
/// their results by rank. A panic on one rank is re-raised here (the other
/// ranks may then wait forever in a collective call, as MPI ranks would:
/// library code returns errors collectively instead of panicking).
pub fn run_on_threads<T: Send>(ranks: usize, f: impl Fn(ThreadComm) -> T + Sync) -> Vec<T> {
    let ranks = ranks.max(1);
    let shared = Arc::new(Mailboxes {
        size: ranks,
        barrier: Barrier::new(ranks),
        slots: Mutex::new(vec![Vec::new(); 2 * ranks * ranks]),
        exchanges: (0..ranks).map(|_| AtomicUsize::new(0)).collect(),
    });
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..ranks)
            .map(|rank| {
                let comm = ThreadComm {
                    rank,
                    shared: shared.clone(),
                };
                s.spawn(move || f(comm))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// The MPI world communicator (rsmpi). A handle without state: valid while
/// the [`mpi::environment::Universe`] returned by [`mpi::initialize`] is
/// alive (keep it in `main`).
#[cfg(feature = "mpi")]
#[derive(Debug, Clone, Copy, Default)]
pub struct MpiComm;

#[cfg(feature = "mpi")]
impl Communicator for MpiComm {
    fn rank(&self) -> usize {
        use mpi::traits::Communicator as _;
        mpi::topology::SimpleCommunicator::world().rank() as usize
    }
    fn size(&self) -> usize {
        use mpi::traits::Communicator as _;
        mpi::topology::SimpleCommunicator::world().size() as usize
    }
    fn exchange(&self, send: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
        use mpi::datatype::{Partition, PartitionMut};
        use mpi::traits::CommunicatorCollectives;
        let world = mpi::topology::SimpleCommunicator::world();
        let counts: Vec<mpi::Count> = send.iter().map(|v| v.len() as mpi::Count).collect();
        let mut recv_counts = vec![0 as mpi::Count; counts.len()];
        world.all_to_all_into(&counts[..], &mut recv_counts[..]);
        let displs = offsets(&counts);
        let recv_displs = offsets(&recv_counts);
        let flat: Vec<f64> = send.concat();
        let total: usize = recv_counts.iter().map(|&c| c as usize).sum();
        let mut buf = vec![0.0f64; total];
        {
            let partition = Partition::new(&flat[..], &counts[..], &displs[..]);
            let mut received = PartitionMut::new(&mut buf[..], &recv_counts[..], &recv_displs[..]);
            world.all_to_all_varcount_into(&partition, &mut received);
        }
        recv_counts
            .iter()
            .zip(&recv_displs)
            .map(|(&c, &d)| buf[d as usize..(d + c) as usize].to_vec())
            .collect()
    }

    /// `MPI_Allreduce` with `MPI_MAX`: exact in any order, and `O(log P)`
    /// where the all-gather of the provided method is `O(P)`.
    fn max(&self, values: &[f64]) -> Vec<f64> {
        use mpi::collective::SystemOperation;
        use mpi::traits::CommunicatorCollectives;
        let world = mpi::topology::SimpleCommunicator::world();
        let mut out = vec![0.0; values.len()];
        world.all_reduce_into(values, &mut out[..], SystemOperation::max());
        out
    }
}

#[cfg(feature = "mpi")]
fn offsets(counts: &[mpi::Count]) -> Vec<mpi::Count> {
    counts
        .iter()
        .scan(0, |acc, &c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{Communicator, run_on_threads};
    use std::time::Duration;

    /// Every exchange hands each rank what each rank sent it in that
    /// exchange, while the ranks drift apart: one rank in turn is slow to
    /// write, another slow to read, so that a fast rank writes the next
    /// exchange while others still read this one (the two slot sets).
    #[test]
    fn each_exchange_delivers_what_was_sent_in_it() {
        const RANKS: usize = 3;
        const EXCHANGES: usize = 120;
        // a rank records what it got wrong and goes on (a rank that
        // panicked would leave the others waiting at the barrier)
        let wrong = run_on_threads(RANKS, |comm| {
            let me = comm.rank();
            let mut wrong = Vec::new();
            for k in 0..EXCHANGES {
                if k % RANKS == me {
                    std::thread::sleep(Duration::from_micros(300));
                }
                // a length that changes from exchange to exchange
                let send = (0..RANKS)
                    .map(|to| [me as f64, to as f64, k as f64].repeat(1 + (k + to) % 3))
                    .collect();
                let got = comm.exchange(send);
                if (k + 1) % RANKS == me {
                    std::thread::sleep(Duration::from_micros(300));
                }
                for (from, buf) in got.iter().enumerate() {
                    let want = [from as f64, me as f64, k as f64].repeat(1 + (k + me) % 3);
                    if buf != &want {
                        wrong.push(format!(
                            "rank {me}, exchange {k}, from rank {from}: {buf:?}"
                        ));
                    }
                }
            }
            wrong
        });
        assert_eq!(wrong, vec![Vec::<String>::new(); RANKS]);
    }
}

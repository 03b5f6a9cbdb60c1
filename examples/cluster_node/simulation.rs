//! `run_simulation`: the workers as goroutines, each with its own deque behind a
//! `goro::sync::Mutex`.

use crate::cluster::{Job, Worker};
use crate::error::{Code, RpcError};
use crate::{IDLE_BACKOFF, JOB_TIME};
use std::collections::hash_map::RandomState;
use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one worker did during a simulation.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct Tally {
    pub processed: u64,
    pub stolen: u64,
}

/// What the worker goroutines share.
struct Shared {
    /// One deque per worker, indexed as the cluster's workers.
    queues: Vec<goro::sync::Mutex<VecDeque<Job>>>,
    /// Jobs not yet processed: queued, or in a worker's hands (being processed,
    /// or between a victim's deque and its thief's). Zero means all idle.
    unfinished: AtomicUsize,
    deadline: Instant,
}

/// Runs one goroutine per worker for `duration` or until every job is done,
/// then puts the jobs left back into `workers`. Returns each worker's tally.
pub fn run(workers: &mut [Worker], duration: Duration) -> Result<Vec<Tally>, RpcError> {
    let queues = workers
        .iter_mut()
        .map(|w| goro::sync::Mutex::new(std::mem::take(&mut w.queue)))
        .collect::<Vec<_>>();
    let unfinished = queues.iter().map(|q| q.lock().len()).sum();
    let shared = Arc::new(Shared {
        queues,
        unfinished: AtomicUsize::new(unfinished),
        deadline: Instant::now() + duration,
    });
    let handles: Vec<_> = (0..workers.len())
        .map(|me| {
            let shared = shared.clone();
            goro::go!(move || work(me, &shared))
        })
        .collect();
    let tallies: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
    for (worker, queue) in workers.iter_mut().zip(&shared.queues) {
        worker.queue = std::mem::take(&mut *queue.lock());
    }
    tallies
        .into_iter()
        .map(|t| t.map_err(|_| RpcError::new(Code::Crash, "a simulated worker panicked")))
        .collect()
}

/// One worker's loop: its own jobs first, from the front; then one stolen job
/// at a time from the back of a random busy worker.
fn work(me: usize, shared: &Shared) -> Tally {
    let mut rng = Rng::seeded(me);
    let mut tally = Tally::default();
    while Instant::now() < shared.deadline && shared.unfinished.load(Ordering::Acquire) > 0 {
        // Pop first, so the lock guard is gone before the branches run.
        let own = shared.queues[me].lock().pop_front();
        if let Some(job) = own {
            process(job);
            tally.processed += 1;
            shared.unfinished.fetch_sub(1, Ordering::AcqRel);
        } else if let Some(job) = steal(me, shared, &mut rng) {
            shared.queues[me].lock().push_back(job);
            tally.stolen += 1;
        } else {
            // The last jobs are in other workers' hands: wait for them to finish.
            goro::time::sleep(IDLE_BACKOFF);
        }
    }
    tally
}

/// "Processes" a job: parks this goroutine for [`JOB_TIME`].
fn process(_job: Job) {
    goro::time::sleep(JOB_TIME);
}

/// Takes the last job of a worker other than `me` with a non-empty deque,
/// chosen at random. `None` if there is none, or if the chosen one was emptied
/// between the look and the steal (the caller just tries again later).
fn steal(me: usize, shared: &Shared, rng: &mut Rng) -> Option<Job> {
    let busy: Vec<usize> = (0..shared.queues.len())
        .filter(|&i| i != me && !shared.queues[i].lock().is_empty())
        .collect();
    if busy.is_empty() {
        return None;
    }
    let victim = busy[rng.below(busy.len())];
    shared.queues[victim].lock().pop_back()
}

/// xorshift64*: enough randomness to pick victims, no dependency needed.
struct Rng(u64);

impl Rng {
    /// A generator seeded per process (std's random hasher keys) and per worker.
    fn seeded(worker: usize) -> Rng {
        Rng(RandomState::new().hash_one(worker) | 1)
    }

    /// A number in `0..n`, `n > 0`.
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64) as usize
    }
}

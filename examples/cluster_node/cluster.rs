//! The cluster's state and its pure operations: no I/O, no goroutines.

use crate::error::{Code, RpcError};
use std::collections::{BTreeMap, HashSet, VecDeque};

/// A job is known by its id, `job<n>`.
pub type Job = String;

/// One worker and its deque: the owner works from the front, thieves take the back.
#[derive(Debug)]
pub struct Worker {
    pub id: String,
    pub queue: VecDeque<Job>,
}

/// The outcome of a `steal_job`.
#[derive(Debug, PartialEq, Eq)]
pub struct Steal {
    pub victim: String,
    pub job: Job,
    pub victim_queue_size: usize,
}

/// A worker as `check_cluster_state` reports it.
#[derive(Debug, serde::Serialize)]
pub struct WorkerState {
    pub queue_size: usize,
    pub state: &'static str,
}

/// The workers, in the order `init` listed them.
#[derive(Debug)]
pub struct Cluster {
    workers: Vec<Worker>,
}

impl Default for Cluster {
    /// The state before any `init`: `w1` holds `job0..job2`, `w2` holds
    /// `job3..job5`, `w3` holds nothing.
    fn default() -> Self {
        let worker = |id: &str, jobs: std::ops::Range<u64>| Worker {
            id: id.to_string(),
            queue: jobs.map(job_name).collect(),
        };
        Cluster {
            workers: vec![worker("w1", 0..3), worker("w2", 3..6), worker("w3", 0..0)],
        }
    }
}

fn job_name(n: u64) -> Job {
    format!("job{n}")
}

impl Cluster {
    /// A cluster of `ids` with `job0..job{jobs-1}` spread evenly in contiguous
    /// blocks: the first `jobs % k` workers get one job more than the others.
    pub fn new(ids: Vec<String>, jobs: u64) -> Result<Cluster, RpcError> {
        validate_worker_ids(&ids)?;
        if jobs > crate::MAX_JOBS {
            return Err(RpcError::malformed(format!(
                "jobs_to_distribute {jobs} is over the limit of {}",
                crate::MAX_JOBS
            )));
        }
        let k = ids.len() as u64;
        let (share, extra) = (jobs / k, jobs % k);
        let mut next = 0;
        let workers = (0u64..)
            .zip(ids)
            .map(|(i, id)| {
                let count = share + u64::from(i < extra);
                let queue = (next..next + count).map(job_name).collect();
                next += count;
                Worker { id, queue }
            })
            .collect();
        Ok(Cluster { workers })
    }

    /// Moves the last job of the busy worker with the longest queue (ties: the
    /// first listed) to the back of `thief`'s queue.
    pub fn steal(&mut self, thief: &str, busy: &[String]) -> Result<Steal, RpcError> {
        let thief_at = self.position(thief)?;
        if busy.iter().any(|b| b == thief) {
            return Err(RpcError::malformed(format!(
                "thief_worker {thief} is also listed in busy_workers"
            )));
        }
        let victim_at = self.longest_queue(busy)?;
        let victim = &mut self.workers[victim_at];
        let job = victim.queue.pop_back().ok_or_else(|| {
            RpcError::new(
                Code::PreconditionFailed,
                "nothing to steal: no busy worker has a job queued",
            )
        })?;
        let steal = Steal {
            victim: victim.id.clone(),
            job: job.clone(),
            victim_queue_size: victim.queue.len(),
        };
        self.workers[thief_at].queue.push_back(job);
        Ok(steal)
    }

    /// Every worker's queue size and state, sorted by id.
    pub fn state(&self) -> BTreeMap<String, WorkerState> {
        self.workers
            .iter()
            .map(|w| {
                let state = if w.queue.is_empty() { "idle" } else { "busy" };
                let queue_size = w.queue.len();
                (w.id.clone(), WorkerState { queue_size, state })
            })
            .collect()
    }

    /// True when no worker has a job (none is in hand between requests).
    pub fn all_idle(&self) -> bool {
        self.workers.iter().all(|w| w.queue.is_empty())
    }

    /// Jobs queued anywhere.
    pub fn queued_jobs(&self) -> usize {
        self.workers.iter().map(|w| w.queue.len()).sum()
    }

    /// The workers, for `run_simulation` to take their queues and put back what
    /// is left.
    pub fn workers_mut(&mut self) -> &mut [Worker] {
        &mut self.workers
    }

    fn position(&self, id: &str) -> Result<usize, RpcError> {
        self.workers
            .iter()
            .position(|w| w.id == id)
            .ok_or_else(|| RpcError::new(Code::KeyDoesNotExist, format!("no worker {id}")))
    }

    /// The index of the listed worker with the longest queue, the first listed
    /// among equals (its queue is empty if every listed queue is). Errors if the
    /// list is empty or names an unknown worker.
    fn longest_queue(&self, listed: &[String]) -> Result<usize, RpcError> {
        let mut best: Option<usize> = None;
        for id in listed {
            let at = self.position(id)?;
            let len = self.workers[at].queue.len();
            if best.is_none_or(|b| len > self.workers[b].queue.len()) {
                best = Some(at);
            }
        }
        best.ok_or_else(|| RpcError::new(Code::PreconditionFailed, "nothing to steal: busy_workers is empty"))
    }
}

/// `init`'s worker list: non-empty, at most `MAX_WORKERS`, no duplicates.
fn validate_worker_ids(ids: &[String]) -> Result<(), RpcError> {
    if ids.is_empty() {
        return Err(RpcError::malformed("workers must list at least one worker"));
    }
    if ids.len() > crate::MAX_WORKERS {
        return Err(RpcError::malformed(format!(
            "{} workers is over the limit of {}",
            ids.len(),
            crate::MAX_WORKERS
        )));
    }
    let mut seen = HashSet::new();
    match ids.iter().find(|id| !seen.insert(id.as_str())) {
        Some(dup) => Err(RpcError::malformed(format!("worker {dup} is listed twice"))),
        None => Ok(()),
    }
}

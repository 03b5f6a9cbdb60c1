//! A work-stealing cluster node: a Maelstrom-style JSON service on stdin/stdout
//! whose `run_simulation` runs its workers as real goroutines.
//!
//! ```text
//! cargo run --example cluster_node
//! {"src":"client","dest":"cluster","body":{"type":"steal_job","msg_id":1,"thief_worker":"w3","busy_workers":["w1","w2"]}}
//! {"src": "cluster", "dest": "client", "body": {"type": "job_stolen", "in_reply_to": 1, "thief": "w3", "victim": "w1", "job_id": "job2", "victim_queue_size": 2}}
//! ```
//!
//! # The cluster
//! Each worker owns a deque of jobs. The owner takes work from the front; a thief
//! takes the *last* job, from the back, so owner and thief rarely touch the same
//! end (LIFO stealing). Before any `init` the cluster is `w1` with `job0..job2`, `w2`
//! with `job3..job5` and an empty `w3`.
//!
//! # Protocol
//! Every message is an envelope `{"src":..,"dest":..,"body":{"type":..,"msg_id":..}}`.
//! Every message gets exactly one reply: an envelope from the request's `dest` to its
//! `src` whose body carries `"in_reply_to": <msg_id>`. Replies are one JSON object a
//! line, flushed per line, spaced as Python's `json.dumps` spaces them.
//!
//! | request | fields | reply |
//! |---|---|---|
//! | `init` | `workers: [id]`, `jobs_to_distribute: N` | `init_ok` |
//! | `steal_job` | `thief_worker`, `busy_workers: [id]` | `job_stolen` {`thief`, `victim`, `job_id`, `victim_queue_size`} |
//! | `check_cluster_state` | | `cluster_state_ok` {`workers`: {id: {`queue_size`, `state`}}, `all_idle`} |
//! | `run_simulation` | `duration_ms` | `run_simulation_ok` {`workers`: {id: {`processed`, `stolen`}}, `processed`, `remaining`, `all_idle`} |
//!
//! Rules:
//! - `init` replaces the cluster: its workers, with `job0..job{N-1}` spread evenly in
//!   contiguous blocks, in order. With `N = q * k + r` over `k` workers, the first `r`
//!   workers get `q + 1` jobs and the rest `q` (7 jobs over 3 workers: 3, 2, 2).
//! - `steal_job`: the victim is the busy worker with the longest queue, ties going to
//!   the first listed. The thief takes the victim's last job and appends it to its own
//!   queue. `victim_queue_size` is the victim's queue size after the steal.
//! - A worker's `state` is `"busy"` while it has a job queued or in hand, else
//!   `"idle"`. Between requests no job is in hand (`run_simulation` lets in-flight jobs
//!   finish before it replies), so `busy` means a non-empty queue. Workers are listed
//!   sorted by id.
//! - `run_simulation` runs one goroutine per worker. A worker pops the front of its
//!   own deque and "processes" the job by sleeping `JOB_TIME` = 5 ms; when its deque is
//!   empty it steals the last job of a busy worker chosen at random. It runs until
//!   `duration_ms` has passed or the cluster is all idle (no job queued or in hand:
//!   nothing can change after that), whichever comes first. Jobs left in the deques
//!   stay there for the next request.
//!
//! # Errors
//! Bad input never stops the node: it answers with a Maelstrom `error` body
//! `{"type":"error","in_reply_to":<msg_id or null>,"code":..,"text":..}`. When the
//! input names no `src`/`dest`, the reply comes from `cluster` and goes to `null`.
//! Codes:
//! - 10 not-supported: an unknown `type`;
//! - 12 malformed-request: not JSON, not an object, a missing or mistyped field, an
//!   out-of-range value (no workers, duplicate workers, more than `MAX_WORKERS` = 256
//!   workers or `MAX_JOBS` = 100 000 jobs, `duration_ms` over `MAX_DURATION_MS` =
//!   60 000, a thief listed as busy), a message too large (see below);
//! - 13 crash: a simulation worker died (a bug; the node keeps going);
//! - 20 key-does-not-exist: an unknown worker id;
//! - 22 precondition-failed: nothing to steal (no listed busy worker has a job).
//!
//! # Framing
//! A message is normally one line, but may be pretty-printed over many lines. The node
//! collects lines until they parse as one JSON value:
//! - blank lines between messages are skipped;
//! - a syntax error other than "unexpected end of input" is answered with an error and
//!   the collected lines are dropped;
//! - a line that on its own is a JSON object with a `body` starts a new message: an
//!   unfinished message before it is answered with an error and dropped, so one
//!   truncated message costs only itself;
//! - bytes that are not UTF-8 are read as U+FFFD;
//! - a message over `MAX_MESSAGE_BYTES` = 64 KiB or `MAX_MESSAGE_LINES` = 1024 lines
//!   (a single over-long line included) is answered with one error and dropped;
//! - at end of input, an unfinished message is answered with an error, then the node
//!   exits with status 0.

use std::time::Duration;

/// Longest message accepted, in bytes (its lines joined by `\n`). A demo cluster's
/// messages are a few KiB; the cap bounds memory and the cost of re-parsing a
/// message as its lines arrive.
const MAX_MESSAGE_BYTES: usize = 64 << 10;
/// Most lines one message may span (a pretty-printed `init` of [`MAX_WORKERS`]
/// workers takes about `MAX_WORKERS + 10`).
const MAX_MESSAGE_LINES: usize = 1024;
/// Most workers `init` accepts: each one is a goroutine during `run_simulation`.
const MAX_WORKERS: usize = 256;
/// Most jobs `init` accepts.
const MAX_JOBS: u64 = 100_000;
/// Longest `run_simulation` accepted: one minute.
const MAX_DURATION_MS: u64 = 60_000;
/// How long a simulated worker spends on one job.
const JOB_TIME: Duration = Duration::from_millis(5);
/// How long a simulated worker with nothing to do (its deque and every other one
/// empty, but jobs still in hand elsewhere) waits before it looks again.
const IDLE_BACKOFF: Duration = Duration::from_millis(1);

fn main() -> std::process::ExitCode {
    match node::serve(std::io::stdin().lock(), std::io::stdout().lock()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cluster_node: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Maelstrom error codes and the error type every request handler returns.
mod error {
    /// A Maelstrom error code (the subset this node uses).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Code {
        NotSupported = 10,
        MalformedRequest = 12,
        Crash = 13,
        KeyDoesNotExist = 20,
        PreconditionFailed = 22,
    }

    /// A request that could not be served: answered with an `error` body.
    #[derive(Debug, PartialEq, Eq)]
    pub struct RpcError {
        pub code: Code,
        pub text: String,
    }

    impl RpcError {
        pub fn new(code: Code, text: impl Into<String>) -> Self {
            RpcError {
                code,
                text: text.into(),
            }
        }

        pub fn malformed(text: impl Into<String>) -> Self {
            Self::new(Code::MalformedRequest, text)
        }
    }
}

/// The cluster's state and its pure operations: no I/O, no goroutines.
mod cluster {
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
                if best.map_or(true, |b| len > self.workers[b].queue.len()) {
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
}

/// `run_simulation`: the workers as goroutines, each with its own deque behind a
/// `goro::sync::Mutex`.
mod simulation {
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
}

/// Turning input lines into messages (see "Framing" in the module docs).
mod framing {
    use crate::{MAX_MESSAGE_BYTES, MAX_MESSAGE_LINES};
    use serde_json::Value;
    use std::io::{self, BufRead};

    /// One input line, without its `\n`.
    pub enum Line {
        Text(Vec<u8>),
        /// A line longer than [`MAX_MESSAGE_BYTES`]: its bytes were skipped.
        TooLong,
    }

    /// What a line completed: a message, or an error to answer.
    #[derive(Debug)]
    pub enum Frame {
        Message(Value),
        Broken(String),
    }

    /// Reads the next line, keeping at most `MAX_MESSAGE_BYTES` of it in memory.
    /// `None` at end of input.
    pub fn read_line(input: &mut impl BufRead) -> io::Result<Option<Line>> {
        let mut line = Vec::new();
        let (mut read_any, mut too_long) = (false, false);
        loop {
            let chunk = match input.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                break;
            }
            read_any = true;
            let newline = chunk.iter().position(|&b| b == b'\n');
            let content = &chunk[..newline.unwrap_or(chunk.len())];
            if !too_long && line.len() + content.len() > MAX_MESSAGE_BYTES {
                too_long = true;
                line = Vec::new(); // free it: the rest of the line is skipped
            }
            if !too_long {
                line.extend_from_slice(content);
            }
            let used = newline.map_or(chunk.len(), |i| i + 1);
            input.consume(used);
            if newline.is_some() {
                break;
            }
        }
        Ok(match (read_any, too_long) {
            (false, _) => None,
            (true, true) => Some(Line::TooLong),
            (true, false) => Some(Line::Text(line)),
        })
    }

    /// Collects lines until they make one JSON value.
    #[derive(Default)]
    pub struct Framer {
        pending: String,
        lines: usize,
    }

    impl Framer {
        /// Takes the next line; returns what it completed (at most two frames: an
        /// abandoned message, then the line's own message).
        pub fn push(&mut self, line: Line) -> Vec<Frame> {
            let Line::Text(bytes) = line else {
                self.reset();
                return vec![too_large()];
            };
            let line = String::from_utf8_lossy(&bytes);
            let mut frames = Vec::new();
            if self.pending.is_empty() && line.trim().is_empty() {
                return frames;
            }
            if !self.pending.is_empty() && is_envelope(&line) {
                self.reset();
                frames.push(Frame::Broken(
                    "incomplete JSON message: a new message began before it ended".into(),
                ));
            }
            self.append(&line);
            if self.pending.len() > MAX_MESSAGE_BYTES || self.lines > MAX_MESSAGE_LINES {
                self.reset();
                frames.push(too_large());
                return frames;
            }
            match serde_json::from_str::<Value>(&self.pending) {
                Ok(value) => frames.push(Frame::Message(value)),
                Err(e) if e.is_eof() => return frames,
                Err(e) => frames.push(Frame::Broken(format!("invalid JSON: {e}"))),
            }
            self.reset();
            frames
        }

        /// At end of input: an error for an unfinished message, if any.
        pub fn finish(&mut self) -> Option<Frame> {
            if self.pending.is_empty() {
                return None;
            }
            self.reset();
            Some(Frame::Broken("incomplete JSON message at end of input".into()))
        }

        fn append(&mut self, line: &str) {
            if !self.pending.is_empty() {
                self.pending.push('\n');
            }
            self.pending.push_str(line);
            self.lines += 1;
        }

        fn reset(&mut self) {
            self.pending.clear();
            self.lines = 0;
        }
    }

    /// Whether `line` alone is a JSON object with a `body`: the start of a new message.
    fn is_envelope(line: &str) -> bool {
        matches!(serde_json::from_str::<Value>(line), Ok(Value::Object(m)) if m.contains_key("body"))
    }

    fn too_large() -> Frame {
        Frame::Broken(format!(
            "message too large: over {MAX_MESSAGE_BYTES} bytes or {MAX_MESSAGE_LINES} lines"
        ))
    }
}

/// Requests in, replies out: the message types and the dispatcher.
mod node {
    use crate::cluster::{Cluster, WorkerState};
    use crate::error::{Code, RpcError};
    use crate::framing::{self, Frame, Framer};
    use crate::simulation::{self, Tally};
    use serde::{Deserialize, Serialize};
    use serde_json::Value;
    use std::collections::BTreeMap;
    use std::io::{self, BufRead, Write};
    use std::time::Duration;

    /// Our node id when a request does not name one in `dest`.
    const NODE_ID: &str = "cluster";

    #[derive(Deserialize)]
    struct Init {
        workers: Vec<String>,
        jobs_to_distribute: u64,
    }

    #[derive(Deserialize)]
    struct StealJob {
        thief_worker: String,
        busy_workers: Vec<String>,
    }

    #[derive(Deserialize)]
    struct RunSimulation {
        duration_ms: u64,
    }

    /// A reply body. `type` comes first, then `in_reply_to`, then the fields, in
    /// the order the seed's samples print them.
    #[derive(Serialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Reply {
        InitOk {
            in_reply_to: u64,
        },
        JobStolen {
            in_reply_to: u64,
            thief: String,
            victim: String,
            job_id: String,
            victim_queue_size: usize,
        },
        ClusterStateOk {
            in_reply_to: u64,
            workers: BTreeMap<String, WorkerState>,
            all_idle: bool,
        },
        RunSimulationOk {
            in_reply_to: u64,
            workers: BTreeMap<String, Tally>,
            processed: u64,
            remaining: usize,
            all_idle: bool,
        },
        Error {
            in_reply_to: Option<u64>,
            code: u16,
            text: String,
        },
    }

    impl Reply {
        fn error(in_reply_to: Option<u64>, e: RpcError) -> Reply {
            Reply::Error {
                in_reply_to,
                code: e.code as u16,
                text: e.text,
            }
        }
    }

    #[derive(Serialize)]
    struct Envelope {
        src: String,
        dest: Option<String>,
        body: Reply,
    }

    /// Reads messages from `input` and answers each on `output` until end of input.
    pub fn serve(mut input: impl BufRead, mut output: impl Write) -> io::Result<()> {
        let mut cluster = Cluster::default();
        let mut framer = Framer::default();
        while let Some(line) = framing::read_line(&mut input)? {
            for frame in framer.push(line) {
                write_reply(&mut output, &answer(&mut cluster, frame))?;
            }
        }
        if let Some(frame) = framer.finish() {
            write_reply(&mut output, &answer(&mut cluster, frame))?;
        }
        Ok(())
    }

    /// The reply to one frame.
    fn answer(cluster: &mut Cluster, frame: Frame) -> Envelope {
        match frame {
            Frame::Message(message) => handle(cluster, message),
            Frame::Broken(text) => Envelope {
                src: NODE_ID.into(),
                dest: None,
                body: Reply::error(None, RpcError::malformed(text)),
            },
        }
    }

    /// Answers one message: the envelope is turned around, the body handled.
    fn handle(cluster: &mut Cluster, message: Value) -> Envelope {
        let field = |name| message.get(name).and_then(Value::as_str).map(String::from);
        let src = field("dest").unwrap_or_else(|| NODE_ID.into());
        let dest = field("src");
        let body = match message.as_object().map(|m| m.get("body")) {
            None => Err((None, malformed("a message must be a JSON object"))),
            Some(None) => Err((None, malformed("missing body"))),
            Some(Some(body)) if body.is_object() => handle_body(cluster, body),
            Some(Some(_)) => Err((None, malformed("body must be an object"))),
        };
        let body = body.unwrap_or_else(|(msg_id, e)| Reply::error(msg_id, e));
        Envelope { src, dest, body }
    }

    /// Answers a request body (an object); an error comes with the `msg_id` if it
    /// was readable.
    fn handle_body(cluster: &mut Cluster, body: &Value) -> Result<Reply, (Option<u64>, RpcError)> {
        let msg_id = match body.get("msg_id") {
            Some(id) => id
                .as_u64()
                .ok_or_else(|| (None, malformed("msg_id must be a non-negative integer")))?,
            None => return Err((None, malformed("missing msg_id"))),
        };
        let kind = match body.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(_) => return Err((Some(msg_id), malformed("type must be a string"))),
            None => return Err((Some(msg_id), malformed("missing type"))),
        };
        dispatch(cluster, msg_id, kind, body).map_err(|e| (Some(msg_id), e))
    }

    fn dispatch(cluster: &mut Cluster, in_reply_to: u64, kind: &str, body: &Value) -> Result<Reply, RpcError> {
        match kind {
            "init" => {
                let req: Init = fields(kind, body)?;
                *cluster = Cluster::new(req.workers, req.jobs_to_distribute)?;
                Ok(Reply::InitOk { in_reply_to })
            }
            "steal_job" => {
                let req: StealJob = fields(kind, body)?;
                let steal = cluster.steal(&req.thief_worker, &req.busy_workers)?;
                Ok(Reply::JobStolen {
                    in_reply_to,
                    thief: req.thief_worker,
                    victim: steal.victim,
                    job_id: steal.job,
                    victim_queue_size: steal.victim_queue_size,
                })
            }
            "check_cluster_state" => Ok(Reply::ClusterStateOk {
                in_reply_to,
                workers: cluster.state(),
                all_idle: cluster.all_idle(),
            }),
            "run_simulation" => {
                let req: RunSimulation = fields(kind, body)?;
                run_simulation(cluster, in_reply_to, req.duration_ms)
            }
            other => Err(RpcError::new(
                Code::NotSupported,
                format!("unknown message type {other:?}"),
            )),
        }
    }

    fn run_simulation(cluster: &mut Cluster, in_reply_to: u64, duration_ms: u64) -> Result<Reply, RpcError> {
        if duration_ms > crate::MAX_DURATION_MS {
            return Err(malformed(format!(
                "duration_ms {duration_ms} is over the limit of {}",
                crate::MAX_DURATION_MS
            )));
        }
        let duration = Duration::from_millis(duration_ms);
        let tallies = simulation::run(cluster.workers_mut(), duration)?;
        let ids = cluster.workers_mut().iter().map(|w| w.id.clone());
        let workers: BTreeMap<_, _> = ids.zip(tallies).collect();
        Ok(Reply::RunSimulationOk {
            in_reply_to,
            processed: workers.values().map(|t| t.processed).sum(),
            workers,
            remaining: cluster.queued_jobs(),
            all_idle: cluster.all_idle(),
        })
    }

    /// A request's typed fields (unknown fields are ignored).
    fn fields<'a, T: Deserialize<'a>>(kind: &str, body: &'a Value) -> Result<T, RpcError> {
        T::deserialize(body).map_err(|e| malformed(format!("bad {kind} request: {e}")))
    }

    fn malformed(text: impl Into<String>) -> RpcError {
        RpcError::malformed(text)
    }

    /// Writes one reply line, spaced as Python's `json.dumps`, and flushes it.
    fn write_reply(output: &mut impl Write, reply: &Envelope) -> io::Result<()> {
        let mut ser = serde_json::Serializer::with_formatter(&mut *output, PythonSpacing);
        reply.serialize(&mut ser).map_err(io::Error::from)?;
        output.write_all(b"\n")?;
        output.flush()
    }

    /// Compact JSON with `", "` and `": "` separators: byte for byte what Python's
    /// `json.dumps` prints, as the seed's expected outputs do.
    struct PythonSpacing;

    impl serde_json::ser::Formatter for PythonSpacing {
        fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
            if first {
                Ok(())
            } else {
                w.write_all(b", ")
            }
        }

        fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
            self.begin_array_value(w, first)
        }

        fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
            w.write_all(b": ")
        }
    }
}

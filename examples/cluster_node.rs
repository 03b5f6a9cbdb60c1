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

#[path = "cluster_node/cluster.rs"]
mod cluster;
#[path = "cluster_node/error.rs"]
mod error;
#[path = "cluster_node/framing.rs"]
mod framing;
#[path = "cluster_node/node.rs"]
mod node;
#[path = "cluster_node/simulation.rs"]
mod simulation;

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

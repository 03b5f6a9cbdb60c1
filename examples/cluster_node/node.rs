//! Requests in, replies out: the message types and the dispatcher.

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

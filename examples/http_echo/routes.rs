//! What the server answers: `GET /` a short text, `GET /stats` the runtime's
//! counters as JSON, `POST` (any path) echoes the body, `HEAD` the GET's headers;
//! any other method 405, any other GET path 404. With `--debug`,
//! `GET /debug/goroutines` answers the goroutine dump (Go's pprof
//! `goroutine?debug=2`; one dump at a time, the others wait their turn) and `GET /debug/trace?seconds=N` an execution trace of
//! the next N seconds (1 to 60, default 1; Go's pprof `trace`; one at a time:
//! 409 while another is taken; cut short when its client goes away, as Go's);
//! without it those paths are a 404 like any other.

use crate::request::{Head, Method};
use crate::response::Response;
use goro::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

/// The text `GET /` answers with.
pub const HELLO: &str = "hello, world\n";

/// `--debug`: the `/debug/` paths are served.
static DEBUG: AtomicBool = AtomicBool::new(false);

/// Turns the `/debug/` paths on (`--debug`).
pub fn enable_debug() {
    DEBUG.store(true, Ordering::Relaxed);
}

/// Appends the answer to `head` (with its decoded `body`) to `out`. `client`
/// is the connection it came on, watched while an answer takes time.
#[inline(never)]
pub fn answer(head: &Head, body: &[u8], client: &TcpStream, out: &mut Vec<u8>) {
    let path = head.path.split('?').next().unwrap_or_default();
    let head_only = head.method == Method::Head;
    let stats;
    let dump;
    let response = match head.method {
        Method::Post => Response::new(200, "application/octet-stream", body),
        Method::Get | Method::Head => match path {
            "/" => Response::text(200, HELLO),
            "/stats" => {
                stats = stats_json();
                Response::new(200, "application/json", stats.as_bytes())
            }
            "/debug/goroutines" if DEBUG.load(Ordering::Relaxed) => {
                dump = goroutine_dump();
                Response::new(200, "text/plain; charset=utf-8", &dump)
            }
            "/debug/trace" if DEBUG.load(Ordering::Relaxed) => match trace_seconds(&head.path) {
                Ok(seconds) => match execution_trace(seconds, client) {
                    Ok(trace) => {
                        dump = trace;
                        Response::new(200, "application/json", &dump)
                    }
                    Err(409) => Response::text(409, "a trace is already being taken\n"),
                    Err(status) => Response::text(status, "writing the trace failed\n"),
                },
                Err(why) => Response::text(400, why),
            },
            _ => Response::text(404, "not found\n"),
        },
        Method::Other => Response {
            extra: "Allow: GET, HEAD, POST\r\n",
            ..Response::text(405, "method not allowed\n")
        },
    };
    response.write_to(out, head.keep_alive, head_only);
}

/// Taken while a goroutine dump is made: one at a time. A dump runs on a
/// thread of its own, and its goroutine's M leaves its P to another while it
/// waits for it, so dumps made at once would multiply the server's threads
/// (100 at once: 200 threads). The others wait their turn, parked, first come
/// first served, and are all answered, as in Go, whose dumps take turns too
/// (each stops the world).
static DUMPING: LazyLock<goro::sync::Mutex<()>> = LazyLock::new(|| goro::sync::Mutex::new(()));

/// Every goroutine and waiting thread, as `goro::runtime::write_goroutines`
/// prints them; one dump at a time ([`DUMPING`]).
fn goroutine_dump() -> Vec<u8> {
    let _turn = DUMPING.lock();
    let mut out = Vec::new();
    if let Err(e) = goro::runtime::write_goroutines(&mut out) {
        out = format!("goroutine dump failed: {e}\n").into_bytes();
    }
    out
}

/// Longest trace `/debug/trace` takes.
const MAX_TRACE_SECONDS: u64 = 60;

/// The `seconds` of `/debug/trace?seconds=N`: a whole number from 1 to
/// [`MAX_TRACE_SECONDS`], 1 if absent (Go's pprof `trace` endpoint's query).
fn trace_seconds(path: &str) -> Result<u64, &'static str> {
    let query = path.split_once('?').map_or("", |(_, q)| q);
    let mut seconds = 1;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("seconds", v)) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
                seconds = v.parse().unwrap_or(u64::MAX);
            }
            Some(("seconds", _)) => return Err("seconds wants a whole number from 1 to 60\n"),
            _ => return Err("the only parameter is seconds=N\n"),
        }
    }
    if (1..=MAX_TRACE_SECONDS).contains(&seconds) {
        Ok(seconds)
    } else {
        Err("seconds wants a whole number from 1 to 60\n")
    }
}

/// An execution trace of the next `seconds` (`goro::runtime::trace`), as its
/// JSON; `Err(409)` while another is being taken (one at a time, as Go's),
/// `Err(500)` if writing it failed. The trace stops early if `client` goes
/// away ([`wait_unless_gone`]), so the next trace need not wait for it.
/// The waiting goroutine is parked: its connection's read deadlines are not
/// running meanwhile, and its answer is written under the write timeout.
fn execution_trace(seconds: u64, client: &TcpStream) -> Result<Vec<u8>, u16> {
    let buf = SharedBuf::default();
    goro::runtime::trace::start(buf.clone()).map_err(|_| 409_u16)?;
    wait_unless_gone(client, Duration::from_secs(seconds));
    if let Err(e) = goro::runtime::trace::stop() {
        eprintln!("http_echo: /debug/trace: {e}");
        return Err(500);
    }
    let trace = std::mem::take(&mut *buf.0.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(trace)
}

/// Waits `d`, or less if `client` goes away first: its end of stream (the
/// client closed, or shut its sending side, after its request) or an error
/// (a reset), as Go's handler stops when its request's context is cancelled
/// by the same. A client that sends more meanwhile (a pipelined request) is
/// there: the rest of `d` is slept, its bytes left for the connection to read.
fn wait_unless_gone(client: &TcpStream, d: Duration) {
    let until = Instant::now() + d;
    if client.set_read_timeout(Some(d)).is_ok() {
        // Back when `d` is up (`TimedOut`), at the client's end of stream (0),
        // at a reset (another error), or with bytes that came.
        if !matches!(client.peek(&mut [0u8; 1]), Ok(n) if n > 0) {
            return;
        }
    }
    goro::time::sleep(until.saturating_duration_since(Instant::now()));
}

/// A byte buffer the trace writer thread appends to and the route then takes.
#[derive(Clone, Default)]
struct SharedBuf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for SharedBuf {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `goro::runtime::stats()` as a JSON object, one field per counter and one
/// entry per P.
fn stats_json() -> String {
    let s = goro::runtime::stats();
    let procs: Vec<_> = s
        .procs
        .iter()
        .map(|p| {
            serde_json::json!({
                "schedtick": p.schedtick,
                "runq_len": p.runq_len,
                "steals": p.steals,
            })
        })
        .collect();
    let json = serde_json::json!({
        "gomaxprocs": goro::runtime::gomaxprocs(),
        "num_goroutine": goro::runtime::num_goroutine(),
        "spawned": s.spawned,
        "completed": s.completed,
        "live": s.live,
        "context_switches": s.context_switches,
        "steals": s.steals,
        "stolen": s.stolen,
        "global_runq_gets": s.global_runq_gets,
        "runnext_hits": s.runnext_hits,
        "netpoll_ready": s.netpoll_ready,
        "timers_fired": s.timers_fired,
        "syscall_handoffs": s.syscall_handoffs,
        "preempt_retakes": s.preempt_retakes,
        "stacks_swapped_out": s.stacks_swapped_out,
        "stacks_swapped_in": s.stacks_swapped_in,
        "swapped_bytes": s.swapped_bytes,
        "procs": procs,
    });
    let mut text = json.to_string();
    text.push('\n');
    text
}

//! What the server answers: `GET /` a short text, `GET /stats` the runtime's
//! counters as JSON, `POST` (any path) echoes the body, `HEAD` the GET's headers;
//! any other method 405, any other GET path 404. With `--debug`,
//! `GET /debug/goroutines` answers the goroutine dump (Go's pprof
//! `goroutine?debug=2`); without it that path is a 404 like any other.

use crate::request::{Head, Method};
use crate::response::Response;
use std::sync::atomic::{AtomicBool, Ordering};

/// The text `GET /` answers with.
pub const HELLO: &str = "hello, world\n";

/// `--debug`: the `/debug/` paths are served.
static DEBUG: AtomicBool = AtomicBool::new(false);

/// Turns the `/debug/` paths on (`--debug`).
pub fn enable_debug() {
    DEBUG.store(true, Ordering::Relaxed);
}

/// Appends the answer to `head` (with its decoded `body`) to `out`.
pub fn answer(head: &Head, body: &[u8], out: &mut Vec<u8>) {
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
            _ => Response::text(404, "not found\n"),
        },
        Method::Other => Response {
            extra: "Allow: GET, HEAD, POST\r\n",
            ..Response::text(405, "method not allowed\n")
        },
    };
    response.write_to(out, head.keep_alive, head_only);
}

/// Every goroutine and waiting thread, as `goro::runtime::write_goroutines`
/// prints them.
fn goroutine_dump() -> Vec<u8> {
    let mut out = Vec::new();
    if let Err(e) = goro::runtime::write_goroutines(&mut out) {
        out = format!("goroutine dump failed: {e}\n").into_bytes();
    }
    out
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
        "procs": procs,
    });
    let mut text = json.to_string();
    text.push('\n');
    text
}

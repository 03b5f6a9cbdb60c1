//! An HTTP/1.1 echo server on goro: one goroutine per connection, blocking-style
//! code, every wait parked on the netpoller.
//!
//! ```sh
//! cargo run --release --example http_echo -- --addr 127.0.0.1:8080 --procs 2
//! curl localhost:8080/                 # hello, world
//! curl --data-binary @Cargo.toml localhost:8080/echo
//! curl localhost:8080/stats            # the scheduler's counters, as JSON
//! ```
//!
//! With `--debug`, `curl localhost:8080/debug/goroutines` shows every goroutine
//! and where it waits (Go's pprof `goroutine?debug=2`; one dump at a time,
//! requests made meanwhile wait their turn and are all answered), and
//! `curl -o trace.json 'localhost:8080/debug/trace?seconds=5'` records an
//! execution trace (docs/TRACE.md), one at a time (409 while another is
//! taken), cut short if the client goes away; off by default, since both show
//! the server's internals to whoever asks.
//!
//! Keep-alive and pipelining; `POST` echoes the body (`Content-Length` or
//! chunked), `GET /` answers a short text, `GET /stats` the runtime stats.
//! Refused with the right status and the connection closed: a head over 16 KiB
//! (431), a body over 1 MiB (413), a malformed request (400), an ambiguous or
//! unsupported framing (400/501). Other methods get 405 and the connection stays
//! open.
//!
//! # Deploying
//! The server bounds what one client can hold, as Go's `http.Server` does when
//! its timeouts are set; each limit is a flag:
//! - a request's head must arrive whole within `--header-timeout` (10 s) of its
//!   first byte (of the accept, for a connection's first request), and its body
//!   within `--body-timeout` (30 s) of the head: bytes trickling in do not extend
//!   either, and a request cut off by them gets 408;
//! - the answers buffered at one time must be written within `--write-timeout`
//!   (30 s), or the connection closes (a client that does not read);
//! - a connection idle between requests for `--idle-timeout` (30 s) closes;
//! - at most `--max-conns` connections are served at once (default: the soft
//!   `RLIMIT_NOFILE`, less the descriptors open at start, less max(16,
//!   limit/16) kept spare: 232 at 256, 952 at 1024); one beyond gets 503
//!   (Service Unavailable) and is closed, never reset. A refused connection
//!   lingers up to 500 ms, reading and dropping what the client still sends;
//!   at most half the spare descriptors (8 at 256) linger at once, and a
//!   connection beyond those is answered at once by the accept loop, which
//!   waits for nothing: one write of the 503, the write side shut, what the
//!   client has already sent read and dropped (up to 64 KiB), and the close,
//!   so it holds a descriptor only for those calls;
//! - a connection holds at most about 2 MiB while it echoes a 1 MiB body (the
//!   body, then the answer), and about 17 KiB while it waits: size
//!   `--max-conns` to the memory you have;
//! - heads over 16 KiB and bodies over 1 MiB are refused (431, 413).
//!
//! The accept loop survives errors such as running out of file descriptors: it
//! backs off (5 ms doubling to 1 s) and goes on. Put a proxy with TLS in front
//! for the open internet; `scripts/http_attack.py` replays the slow-client,
//! connection-flood and framing attacks against a running server.

#[path = "http_echo/chunked.rs"]
mod chunked;
#[path = "http_echo/conn.rs"]
mod conn;
#[path = "http_echo/limits.rs"]
mod limits;
#[path = "http_echo/memory.rs"]
mod memory;
#[path = "http_echo/request.rs"]
mod request;
#[path = "http_echo/response.rs"]
mod response;
#[path = "http_echo/routes.rs"]
mod routes;

use goro::net::TcpListener;
use limits::{Admission, Slots, Timeouts};
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

const USAGE: &str = "usage: http_echo [--addr HOST:PORT] [--procs N] [--debug] [--max-conns N]
                 [--header-timeout SECS] [--body-timeout SECS] [--write-timeout SECS]
                 [--idle-timeout SECS]
  --addr            address to listen on (default 127.0.0.1:8080; port 0 picks one)
  --procs           GOMAXPROCS, 1 to 1024 (default: the GOMAXPROCS variable, else every CPU)
  --debug           serve GET /debug/goroutines (the goroutine dump) and
                    GET /debug/trace?seconds=N (an execution trace of N seconds, 1 to 60)
  --max-conns       connections served at once, 1 to 10000000; one more gets 503 and is
                    closed (default: the open-files limit, less the descriptors open at
                    start, less max(16, limit/16))
  --header-timeout  seconds for a request's head, from its first byte (default 10)
  --body-timeout    seconds for a request's body, from the end of its head (default 30)
  --write-timeout   seconds for writing the answers out to a client (default 30)
  --idle-timeout    seconds a connection may wait between requests (default 30)
Every timeout takes seconds from 0.001 to 86400, fractions allowed; bytes arriving
do not extend a deadline.";

struct Options {
    addr: String,
    procs: Option<usize>,
    debug: bool,
    max_conns: Option<usize>,
    timeouts: Timeouts,
}

/// The options, or `None` for `--help`.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Options>, String> {
    let mut opts = Options {
        addr: "127.0.0.1:8080".to_owned(),
        procs: None,
        debug: false,
        max_conns: None,
        timeouts: Timeouts::default(),
    };
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--addr" => opts.addr = address(&value()?)?,
            "--procs" => opts.procs = Some(count(&flag, &value()?, 1024)?),
            "--max-conns" => opts.max_conns = Some(count(&flag, &value()?, 10_000_000)?),
            "--header-timeout" => opts.timeouts.header = seconds(&flag, &value()?)?,
            "--body-timeout" => opts.timeouts.body = seconds(&flag, &value()?)?,
            "--write-timeout" => opts.timeouts.write = seconds(&flag, &value()?)?,
            "--idle-timeout" => opts.timeouts.idle = seconds(&flag, &value()?)?,
            "--debug" => opts.debug = true,
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Some(opts))
}

/// An `--addr` value: `HOST:PORT` that resolves (a name, an IPv4 address or a
/// bracketed IPv6 one).
fn address(v: &str) -> Result<String, String> {
    use std::net::ToSocketAddrs;
    match v.to_socket_addrs() {
        Ok(addrs) if addrs.len() > 0 => Ok(v.to_owned()),
        _ => Err(format!("--addr wants HOST:PORT (port 0 to 65535), not {v:?}")),
    }
}

/// A duration flag's value: seconds, finite, from 1 ms to a day (fractions are
/// for tests that need short timeouts).
fn seconds(flag: &str, v: &str) -> Result<Duration, String> {
    const MIN: f64 = 0.001;
    const MAX: f64 = 86_400.0;
    match v.parse::<f64>() {
        Ok(s) if (MIN..=MAX).contains(&s) => Ok(Duration::from_secs_f64(s)),
        _ => Err(format!("{flag} wants seconds from {MIN} to {MAX}, not {v:?}")),
    }
}

/// A count flag's value: a whole number from 1 to `max`, in digits only.
fn count(flag: &str, v: &str, max: usize) -> Result<usize, String> {
    let digits = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit());
    match v.parse::<usize>() {
        Ok(n) if digits && (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("{flag} wants a whole number from 1 to {max}, not {v:?}")),
    }
}

fn main() -> ExitCode {
    memory::limit_arenas();
    let opts = match parse_args(std::env::args().skip(1)) {
        Ok(Some(opts)) => opts,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(why) => {
            eprintln!("http_echo: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if opts.debug {
        routes::enable_debug();
    }
    if let Some(n) = opts.procs {
        if let Err(e) = goro::runtime::Config::new().procs(n).init() {
            eprintln!("http_echo: {e}");
            return ExitCode::FAILURE;
        }
    }
    let listener = match TcpListener::bind(&opts.addr) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("http_echo: cannot listen on {}: {e}", opts.addr);
            return ExitCode::FAILURE;
        }
    };
    match listener.local_addr() {
        Ok(addr) => println!("listening on {addr}"),
        Err(e) => {
            eprintln!("http_echo: {e}");
            return ExitCode::FAILURE;
        }
    }
    let _ = std::io::stdout().flush();
    let slots = Slots::new(opts.max_conns.unwrap_or_else(limits::default_max_conns));
    let timeouts = opts.timeouts;
    // The accept loop runs as a goroutine too, so its waits park on the poller.
    let _ = goro::go!(move || accept_loop(&listener, &slots, timeouts)).join();
    ExitCode::SUCCESS
}

/// Accepts forever, one goroutine per connection while `slots` has room, a
/// 503 beyond. An accept error (out of file descriptors, a connection reset
/// before it was accepted, ...) is reported and retried after a pause that
/// doubles from 5 ms up to 1 s while errors repeat, as Go's `http.Server` does.
fn accept_loop(listener: &TcpListener, slots: &Arc<Slots>, timeouts: Timeouts) {
    let mut backoff = Duration::ZERO;
    loop {
        match listener.accept() {
            Ok((stream, _peer)) => {
                backoff = Duration::ZERO;
                match slots.admit() {
                    Admission::Serve(slot) => {
                        goro::go!(move || {
                            let _slot = slot;
                            conn::serve(stream, timeouts);
                        });
                    }
                    Admission::Refuse(slot) => {
                        goro::go!(move || {
                            let _slot = slot;
                            conn::turn_away(stream, timeouts);
                        });
                    }
                    Admission::RefuseAtOnce => conn::turn_away_at_once(stream),
                }
            }
            Err(e) => {
                backoff = (backoff * 2).clamp(Duration::from_millis(5), Duration::from_secs(1));
                eprintln!("http_echo: accept: {e}; retrying in {backoff:?}");
                goro::time::sleep(backoff);
            }
        }
    }
}

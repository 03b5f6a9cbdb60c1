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
//! and where it waits (Go's pprof `goroutine?debug=2`); off by default, since a
//! dump shows the server's internals to whoever asks.
//!
//! Keep-alive and pipelining; `POST` echoes the body (`Content-Length` or
//! chunked), `GET /` answers a short text, `GET /stats` the runtime stats.
//! Refused with the right status and the connection closed: a head over 16 KiB
//! (431), a body over 1 MiB (413), a malformed request (400), an ambiguous or
//! unsupported framing (400/501). Other methods get 405 and the connection stays
//! open. A connection that sends nothing for the idle timeout (30 s) is closed,
//! with 408 if it left a request half-sent. The accept loop survives errors such
//! as running out of file descriptors: it backs off (5 ms doubling to 1 s) and
//! goes on.

#[path = "http_echo/chunked.rs"]
mod chunked;
#[path = "http_echo/conn.rs"]
mod conn;
#[path = "http_echo/request.rs"]
mod request;
#[path = "http_echo/response.rs"]
mod response;
#[path = "http_echo/routes.rs"]
mod routes;

use goro::net::TcpListener;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str = "usage: http_echo [--addr HOST:PORT] [--procs N] [--idle-timeout SECS] [--debug]
  --addr          address to listen on (default 127.0.0.1:8080; port 0 picks one)
  --procs         GOMAXPROCS (default: the GOMAXPROCS variable, else every CPU)
  --idle-timeout  seconds a connection may send nothing before it is closed (default 30;
                  from 0.001 to 86400, fractions allowed)
  --debug         serve GET /debug/goroutines, the goroutine dump";

struct Options {
    addr: String,
    procs: Option<usize>,
    idle: Duration,
    debug: bool,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut opts = Options {
        addr: "127.0.0.1:8080".to_owned(),
        procs: None,
        idle: Duration::from_secs(30),
        debug: false,
    };
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--addr" => opts.addr = value()?,
            "--procs" => {
                let v = value()?;
                match v.parse::<usize>() {
                    Ok(n) if n > 0 => opts.procs = Some(n),
                    _ => return Err(format!("--procs wants a positive number, not {v:?}")),
                }
            }
            "--idle-timeout" => opts.idle = seconds(&flag, &value()?)?,
            "--debug" => opts.debug = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(opts)
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

fn main() -> ExitCode {
    let opts = match parse_args(std::env::args().skip(1)) {
        Ok(opts) => opts,
        Err(why) => {
            if !why.is_empty() {
                eprintln!("http_echo: {why}");
            }
            eprintln!("{USAGE}");
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
    let idle = opts.idle;
    // The accept loop runs as a goroutine too, so its waits park on the poller.
    let _ = goro::go!(move || accept_loop(&listener, idle)).join();
    ExitCode::SUCCESS
}

/// Accepts forever, one goroutine per connection. An accept error (out of file
/// descriptors, a connection reset before it was accepted, ...) is reported and
/// retried after a pause that doubles from 5 ms up to 1 s while errors repeat,
/// as Go's `http.Server` does.
fn accept_loop(listener: &TcpListener, idle: Duration) {
    let mut backoff = Duration::ZERO;
    loop {
        match listener.accept() {
            Ok((stream, _peer)) => {
                backoff = Duration::ZERO;
                goro::go!(move || conn::serve(stream, idle));
            }
            Err(e) => {
                backoff = (backoff * 2).clamp(Duration::from_millis(5), Duration::from_secs(1));
                eprintln!("http_echo: accept: {e}; retrying in {backoff:?}");
                goro::time::sleep(backoff);
            }
        }
    }
}

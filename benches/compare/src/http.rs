//! Shared by the HTTP echo servers of the `http_echo` benchmark
//! (`src/bin/http_tokio.rs`, `src/bin/http_may.rs`; Go: `go/http_server.go`;
//! goro: the main crate's `examples/http_echo`). All of them:
//!
//! ```text
//! <server> --addr 127.0.0.1:PORT --procs P
//! ```
//!
//! print `listening on <addr>` on stdout once accepting, and serve HTTP/1.1 with
//! keep-alive until killed: `GET` (any path) answers [`HELLO`] as `text/plain`,
//! `POST` (any path) echoes the request body as `application/octet-stream`.
//! Load comes from `wrk`, see scripts/compare_http.sh.

use std::io::Write;

use crate::harness::{fail, procs_from_env};

/// The body of every `GET` answer (the same 13 bytes in all implementations).
pub const HELLO: &str = "hello, world\n";
/// Content type of a `GET` answer.
pub const HELLO_TYPE: &str = "text/plain";
/// Content type of a `POST` answer (the echoed request body).
pub const ECHO_TYPE: &str = "application/octet-stream";

pub struct HttpArgs {
    /// host:port to listen on (port 0 = any free port).
    pub addr: String,
    /// Worker threads / Ps; default: env GOMAXPROCS, else the number of CPUs.
    pub procs: usize,
}

/// Parses `--addr HOST:PORT [--procs P]`; exits 2 with a usage line on bad input.
pub fn parse_http_args(name: &str) -> HttpArgs {
    let usage = |msg: &str| -> ! {
        eprintln!("{name}: {msg}");
        eprintln!("usage: {name} --addr HOST:PORT [--procs P]   (default P: env GOMAXPROCS, else all CPUs)");
        std::process::exit(2)
    };
    let mut addr = None;
    let mut procs = procs_from_env();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--addr" => addr = Some(it.next().unwrap_or_else(|| usage("--addr needs a value"))),
            "--procs" => {
                let v = it.next().unwrap_or_else(|| usage("--procs needs a value"));
                procs = v
                    .parse()
                    .ok()
                    .filter(|&p| p > 0)
                    .unwrap_or_else(|| usage("--procs must be a positive integer"));
            }
            _ => usage(&format!("unknown argument {a:?}")),
        }
    }
    let addr = addr.unwrap_or_else(|| usage("missing --addr"));
    HttpArgs { addr, procs }
}

/// Tells scripts/compare_http.sh (which waits for this line) that the server is
/// accepting: `listening on <addr>` on stdout, flushed.
pub fn announce_http(addr: std::net::SocketAddr) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "listening on {addr}");
    let _ = out.flush();
}

/// Exits 1 with the reason (bind errors and the like), shown in the report.
pub fn http_fail(what: &str, e: &dyn std::fmt::Display) -> ! {
    fail(&format!("http server: {what}: {e}"))
}

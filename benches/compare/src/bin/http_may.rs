//! may side of the `http_echo` benchmark (see `src/http.rs` for the behaviour all
//! four servers share):
//!
//! ```text
//! http_may --addr 127.0.0.1:PORT [--procs P]
//! ```
//!
//! `may_minihttp`'s `HttpServer` (one coroutine per connection, keep-alive,
//! pipelining), `may::config().set_workers(P)`, worker pinning off, default
//! coroutine stacks: the same settings as the `may` binary. `POST` bodies are read
//! through `Request::body()` (may_minihttp frames them by `Content-Length` only,
//! no chunked encoding; wrk sends `Content-Length`). may_minihttp leaves Nagle on
//! (it writes each batch of responses with one write, so there is no small write
//! waiting behind an unacknowledged one).

use std::io::{self, Read};
use std::net::{SocketAddr, ToSocketAddrs};

use compare::http::{announce_http, http_fail, parse_http_args, ECHO_TYPE, HELLO, HELLO_TYPE};
use may_minihttp::{HttpServer, HttpService, Request, Response};

const NAME: &str = "http_may";

#[derive(Clone)]
struct Echo {
    /// `Content-Type: ...` header lines (may_minihttp wants `&'static str`).
    hello_type: &'static str,
    echo_type: &'static str,
}

impl HttpService for Echo {
    fn call(&mut self, req: Request, rsp: &mut Response) -> io::Result<()> {
        match req.method() {
            "GET" => {
                rsp.header(self.hello_type).body(HELLO);
            }
            "POST" => {
                let mut body = Vec::new();
                req.body().read_to_end(&mut body)?;
                rsp.header(self.echo_type).body_vec(body);
            }
            _ => {
                rsp.status_code(405, "Method Not Allowed");
            }
        }
        Ok(())
    }
}

fn main() {
    let args = parse_http_args(NAME);
    may::config().set_workers(args.procs).set_worker_pin(false);
    let addr = resolve(&args.addr);
    let header = |t: &str| -> &'static str { Box::leak(format!("Content-Type: {t}").into_boxed_str()) };
    let echo = Echo {
        hello_type: header(HELLO_TYPE),
        echo_type: header(ECHO_TYPE),
    };
    // start() binds before it returns, so the server is accepting once it is Ok.
    let server = HttpServer(echo)
        .start(addr)
        .unwrap_or_else(|e| http_fail(&format!("bind {addr}"), &e));
    announce_http(addr);
    let _ = server.join();
    http_fail("accept loop", &"ended")
}

/// `--addr` as one socket address. may_minihttp does not tell which port it
/// bound, so port 0 is replaced here by a port that was free a moment ago.
fn resolve(addr: &str) -> SocketAddr {
    let mut a = addr
        .to_socket_addrs()
        .ok()
        .and_then(|mut it| it.next())
        .unwrap_or_else(|| http_fail(&format!("--addr {addr}"), &"not a socket address"));
    if a.port() == 0 {
        let l = std::net::TcpListener::bind(a).unwrap_or_else(|e| http_fail(&format!("bind {a}"), &e));
        a = l.local_addr().unwrap_or_else(|e| http_fail("local_addr", &e));
    }
    a
}

//! Tokio + hyper side of the `http_echo` benchmark (see `src/http.rs` for the
//! behaviour all four servers share):
//!
//! ```text
//! http_tokio --addr 127.0.0.1:PORT [--procs P]
//! ```
//!
//! hyper 1.x `server::conn::http1` (keep-alive on, its default) over
//! `tokio::net`, one `tokio::spawn`ed task per connection, TCP_NODELAY on. The
//! runtime follows the rule of the other Tokio binary: `current_thread` at P = 1,
//! else `multi_thread` with `worker_threads = P` (`TOKIO_FLAVOR` overrides).

use std::convert::Infallible;

use bytes::Bytes;
use compare::harness::tokio_runtime;
use compare::http::{announce_http, http_fail, parse_http_args, ECHO_TYPE, HELLO, HELLO_TYPE};
use compare::workloads::echo_error;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

const NAME: &str = "http_tokio";

fn main() {
    let args = parse_http_args(NAME);
    let (rt, _) = tokio_runtime(args.procs).unwrap_or_else(|e| http_fail("tokio runtime", &e));
    rt.block_on(serve(&args.addr));
}

/// Binds, announces, then accepts forever (the script kills the process).
async fn serve(addr: &str) {
    let l = tokio::net::TcpListener::bind(addr)
        .await
        .unwrap_or_else(|e| http_fail(&format!("bind {addr}"), &e));
    announce_http(l.local_addr().unwrap_or_else(|e| http_fail("local_addr", &e)));
    loop {
        let stream = match l.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                echo_error("accept", &e);
                continue;
            }
        };
        if let Err(e) = stream.set_nodelay(true) {
            echo_error("set_nodelay", &e);
        }
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), hyper::service::service_fn(handle));
            if let Err(e) = conn.await {
                // wrk closes its connections mid-request when its time is up.
                if !e.is_incomplete_message() {
                    echo_error("connection", &e);
                }
            }
        });
    }
}

/// `GET`: the fixed text; `POST`: the request body back; anything else: 405.
async fn handle(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, ctype, body) = match *req.method() {
        Method::GET => (StatusCode::OK, HELLO_TYPE, Bytes::from_static(HELLO.as_bytes())),
        Method::POST => match req.into_body().collect().await {
            Ok(b) => (StatusCode::OK, ECHO_TYPE, b.to_bytes()),
            Err(e) => (StatusCode::BAD_REQUEST, HELLO_TYPE, Bytes::from(format!("{e}\n"))),
        },
        _ => (StatusCode::METHOD_NOT_ALLOWED, HELLO_TYPE, Bytes::new()),
    };
    let mut rsp = Response::new(Full::new(body));
    *rsp.status_mut() = status;
    rsp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    Ok(rsp)
}

//! `examples/http_echo` driven over real sockets: a raw Rust client for exact
//! bytes on the wire (pipelining, limits, malformed input), curl when the machine
//! has it, and many concurrent goroutine clients. Each server is its own process;
//! every test ends by checking it never panicked.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Longest any single wait in these tests may take before it counts as a hang.
const PATIENCE: Duration = Duration::from_secs(20);

struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let mut child = Command::new(common::example_bin("http_echo"))
            .args(["--addr", "127.0.0.1:0", "--procs", "2"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start http_echo");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(PATIENCE).expect("server printed nothing");
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Server { child, addr }
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        s
    }

    /// A fresh connection still gets `GET /` answered.
    fn assert_serves(&self) {
        let mut r = BufReader::new(self.connect());
        r.get_mut().write_all(get("/").as_bytes()).unwrap();
        assert_eq!(read_reply(&mut r).status, 200, "the server no longer serves");
    }

    /// Sends `raw` on a new connection and reads until the server closes it.
    fn exchange_until_close(&self, raw: &[u8]) -> String {
        let mut s = self.connect();
        s.write_all(raw).unwrap();
        read_to_close(&mut s)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let mut stderr = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut stderr);
        }
        let _ = self.child.wait();
        if !std::thread::panicking() {
            assert!(!stderr.contains("panicked"), "the server panicked:\n{stderr}");
        }
    }
}

fn read_to_close(s: &mut TcpStream) -> String {
    let mut all = Vec::new();
    s.read_to_end(&mut all).expect("read until the server closes");
    String::from_utf8_lossy(&all).into_owned()
}

/// One response read off `r`: status, headers (lower-case names), body.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

fn read_reply(r: &mut impl BufRead) -> Reply {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {line:?}"));
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (n, v) = l.split_once(':').expect("header line");
        headers.push((n.to_ascii_lowercase(), v.trim().to_owned()));
    }
    let len: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap();
    Reply { status, headers, body }
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n")
}

fn post(body: &[u8]) -> Vec<u8> {
    let mut req = format!(
        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    req
}

#[test]
fn keep_alive_serves_many_requests_on_one_connection() {
    let server = Server::start(&[]);
    let s = server.connect();
    let mut r = BufReader::new(s.try_clone().unwrap());
    for i in 0..50 {
        let body = format!("message {i}");
        (&s).write_all(get("/").as_bytes()).unwrap();
        let hello = read_reply(&mut r);
        assert_eq!((hello.status, &hello.body[..]), (200, &b"hello, world\n"[..]));
        assert!(hello.header("date").is_some_and(|d| d.ends_with(" GMT")));
        (&s).write_all(&post(body.as_bytes())).unwrap();
        let echo = read_reply(&mut r);
        assert_eq!(echo.status, 200);
        assert_eq!(echo.body, body.as_bytes());
        assert_eq!(echo.header("connection"), None);
    }
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let server = Server::start(&[]);
    let s = server.connect();
    let mut wire = Vec::new();
    for i in 0..200 {
        if i % 2 == 0 {
            wire.extend_from_slice(&post(format!("#{i}").as_bytes()));
        } else {
            wire.extend_from_slice(get("/").as_bytes());
        }
    }
    (&s).write_all(&wire).unwrap();
    let mut r = BufReader::new(s);
    for i in 0..200 {
        let reply = read_reply(&mut r);
        assert_eq!(reply.status, 200);
        if i % 2 == 0 {
            assert_eq!(reply.body, format!("#{i}").as_bytes());
        } else {
            assert_eq!(reply.body, b"hello, world\n");
        }
    }
}

#[test]
fn bodies_up_to_one_mebibyte_echo_and_larger_get_413() {
    let server = Server::start(&[]);
    let body: Vec<u8> = (0..1024 * 1024).map(|i| (i * 7 % 251) as u8).collect();
    let s = server.connect();
    (&s).write_all(&post(&body)).unwrap();
    let reply = read_reply(&mut BufReader::new(s));
    assert_eq!(reply.status, 200);
    assert!(reply.body == body, "1 MiB body not echoed intact");

    let too_big = format!("POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n", 1024 * 1024 + 1);
    let answer = server.exchange_until_close(too_big.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 413 "), "{answer}");
    assert!(answer.contains("Connection: close\r\n"));
}

#[test]
fn chunked_bodies_are_decoded_even_when_split_byte_by_byte() {
    let server = Server::start(&[]);
    let wire = b"POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
                 5;name=value\r\nhello\r\n8\r\n, chunks\r\n0\r\nX-Trailer: yes\r\n\r\n";
    let s = server.connect();
    s.set_nodelay(true).unwrap();
    for b in wire {
        (&s).write_all(&[*b]).unwrap();
    }
    (&s).write_all(get("/").as_bytes()).unwrap();
    let mut r = BufReader::new(s);
    let reply = read_reply(&mut r);
    assert_eq!((reply.status, &reply.body[..]), (200, &b"hello, chunks"[..]));
    assert_eq!(read_reply(&mut r).body, b"hello, world\n", "pipelined after chunks");

    // A chunked body over the limit is refused as soon as its size is known.
    let huge = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n100001\r\n";
    assert!(server.exchange_until_close(huge).starts_with("HTTP/1.1 413 "));
}

#[test]
fn refused_requests_get_their_status_and_the_connection_closes() {
    let server = Server::start(&[]);
    let big_header = format!("GET / HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(17 * 1024));
    let cases: Vec<(Vec<u8>, u16)> = vec![
        (big_header.into_bytes(), 431),
        (vec![b'a'; 20 * 1024], 431), // no line end at all, past the limit
        (b"GARBAGE\r\n\r\n".to_vec(), 400),
        (b"GET / HTTP/1.1\r\nBad Header\r\n\r\n".to_vec(), 400),
        (b"\x00\x01\x02\r\n\r\n".to_vec(), 400),
        (b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n".to_vec(), 400),
        (
            b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n".to_vec(),
            400,
        ),
        (
            b"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec(),
            400,
        ),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n".to_vec(), 501),
        (
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n".to_vec(),
            400,
        ),
        (b"GET / HTTP/1.1\r\nExpect: something\r\n\r\n".to_vec(), 417),
    ];
    for (wire, status) in cases {
        let answer = server.exchange_until_close(&wire);
        let shown = String::from_utf8_lossy(&wire[..wire.len().min(60)]).into_owned();
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status} ")),
            "{shown:?} got {answer:?}"
        );
        assert!(answer.contains("Connection: close\r\n"), "{shown:?}");
    }
    // The server still serves.
    server.assert_serves();
}

#[test]
fn unknown_methods_get_405_and_the_connection_stays_open() {
    let server = Server::start(&[]);
    let s = server.connect();
    (&s).write_all(b"PUT /x HTTP/1.1\r\nContent-Length: 4\r\n\r\nbodyBREW / HTTP/1.1\r\n\r\n")
        .unwrap();
    (&s).write_all(get("/nowhere").as_bytes()).unwrap();
    (&s).write_all(b"HEAD / HTTP/1.1\r\n\r\n").unwrap();
    (&s).write_all(get("/").as_bytes()).unwrap();
    let mut r = BufReader::new(s);
    for method in ["PUT", "BREW"] {
        let reply = read_reply(&mut r);
        assert_eq!(reply.status, 405, "{method}");
        assert_eq!(reply.header("allow"), Some("GET, HEAD, POST"));
    }
    assert_eq!(read_reply(&mut r).status, 404);
    // HEAD: GET's headers, no body (so read the head only).
    let mut head = String::new();
    loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    assert!(head.starts_with("HTTP/1.1 200 ") && head.contains("Content-Length: 13\r\n"));
    assert_eq!(read_reply(&mut r).body, b"hello, world\n");
}

#[test]
fn stats_are_json_with_the_runtime_counters() {
    let server = Server::start(&[]);
    let mut r = BufReader::new(server.connect());
    r.get_mut().write_all(get("/stats").as_bytes()).unwrap();
    let reply = read_reply(&mut r);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let v: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(v["gomaxprocs"], 2);
    assert_eq!(v["procs"].as_array().map(Vec::len), Some(2));
    assert!(
        v["num_goroutine"].as_u64().unwrap() >= 2,
        "accept loop + this connection"
    );
    assert!(v["spawned"].as_u64().unwrap() >= 2);
}

/// `--debug` serves the goroutine dump; without it the path is a 404.
#[test]
fn debug_goroutines_only_with_debug() {
    let server = Server::start(&[]);
    let mut r = BufReader::new(server.connect());
    r.get_mut().write_all(get("/debug/goroutines").as_bytes()).unwrap();
    assert_eq!(read_reply(&mut r).status, 404);

    let server = Server::start(&["--debug"]);
    let mut r = BufReader::new(server.connect());
    r.get_mut().write_all(get("/debug/goroutines").as_bytes()).unwrap();
    let reply = read_reply(&mut r);
    assert_eq!(reply.status, 200);
    let text = String::from_utf8(reply.body).unwrap();
    // The accept loop waits on the poller; this connection's G is the one asking.
    assert!(text.contains("[IO wait]:\n"), "{text}");
    assert!(text.contains("accept_loop"), "{text}");
    assert!(text.contains("[running]:\n"), "{text}");
    server.assert_serves();
}

#[test]
fn expect_100_continue_and_http_1_0() {
    let server = Server::start(&[]);
    let s = server.connect();
    (&s).write_all(b"POST / HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        .unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert_eq!(line, "HTTP/1.1 100 Continue\r\n");
    r.read_line(&mut line).unwrap();
    (&s).write_all(b"hello").unwrap();
    assert_eq!(read_reply(&mut r).body, b"hello");

    // HTTP/1.0 closes unless asked to keep alive.
    let answer = server.exchange_until_close(b"GET / HTTP/1.0\r\n\r\n");
    assert!(answer.contains("Connection: close\r\n") && answer.ends_with("hello, world\n"));
    let s = server.connect();
    (&s).write_all(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        .unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    assert_eq!(read_reply(&mut r).status, 200);
    (&s).write_all(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
    assert_eq!(read_reply(&mut r).header("connection"), Some("close"));
}

#[test]
fn idle_connections_are_closed_and_half_sent_requests_get_408() {
    let server = Server::start(&["--idle-timeout", "0.3"]);
    let started = Instant::now();
    let mut idle = server.connect();
    assert_eq!(read_to_close(&mut idle), "", "an idle connection closes silently");
    assert!(started.elapsed() >= Duration::from_millis(250));
    let answer = server.exchange_until_close(b"GET / HTTP/1.1\r\nHost: half");
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer:?}");
    // Activity resets the timer: a connection used every 100 ms stays open.
    let s = server.connect();
    let mut r = BufReader::new(s.try_clone().unwrap());
    for _ in 0..6 {
        (&s).write_all(get("/").as_bytes()).unwrap();
        assert_eq!(read_reply(&mut r).status, 200);
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn many_concurrent_clients_on_goroutines() {
    let server = Server::start(&[]);
    let addr = server.addr.clone();
    let clients: Vec<_> = (0..300)
        .map(|c| {
            let addr = addr.clone();
            goro::go!(move || {
                let mut s = goro::net::TcpStream::connect(&addr).unwrap();
                for i in 0..10 {
                    let body = format!("client {c} request {i}");
                    s.write_all(&post(body.as_bytes())).unwrap();
                    let mut head = Vec::new();
                    let mut byte = [0u8];
                    while !head.ends_with(b"\r\n\r\n") {
                        s.read_exact(&mut byte).unwrap();
                        head.push(byte[0]);
                    }
                    let mut echoed = vec![0; body.len()];
                    s.read_exact(&mut echoed).unwrap();
                    assert_eq!(echoed, body.as_bytes());
                }
            })
        })
        .collect();
    for c in clients {
        c.join().expect("a client failed");
    }
}

#[test]
fn curl_gets_posts_and_reuses_the_connection() {
    if Command::new("curl").arg("--version").output().is_err() {
        eprintln!("curl not installed: skipped");
        return;
    }
    let server = Server::start(&[]);
    let url = format!("http://{}", server.addr);
    let curl = |args: &[&str]| {
        let out = Command::new("curl")
            .args(["-sS", "--max-time", "20"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "curl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    assert_eq!(curl(&[&url]).stdout, b"hello, world\n");
    let body = "x".repeat(5000); // over 1 KiB: curl sends Expect: 100-continue
    assert_eq!(curl(&["--data-binary", &body, &url]).stdout, body.as_bytes());
    let chunked = curl(&["-H", "Transfer-Encoding: chunked", "--data-binary", &body, &url]);
    assert_eq!(chunked.stdout, body.as_bytes());
    let twice = curl(&["-v", &url, &format!("{url}/stats")]);
    let log = String::from_utf8_lossy(&twice.stderr);
    assert!(
        log.contains("Re-using existing connection") || log.contains("Reusing existing"),
        "{log}"
    );
    assert_eq!(
        curl(&["-o", "/dev/null", "-w", "%{http_code}", "-X", "DELETE", &url]).stdout,
        b"405"
    );
}

#[test]
fn bad_flags_print_the_usage_and_exit_2() {
    for args in [
        &["--procs", "0"][..],
        &["--bogus"],
        &["--addr"],
        &["--idle-timeout", "-1"],
        &["--idle-timeout", "1e300"],
        &["--idle-timeout", "1e-12"],
        &["--idle-timeout", "NaN"],
        &["--idle-timeout", "inf"],
        &["--idle-timeout", "86401"],
    ] {
        let out = Command::new(common::example_bin("http_echo"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("usage: http_echo"));
    }
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = Command::new(common::example_bin("http_echo"))
        .args(["--addr", &addr])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot listen on"));
}

#[test]
fn a_client_that_resets_mid_request_harms_nobody() {
    let server = Server::start(&[]);
    for _ in 0..20 {
        let s = server.connect();
        (&s).write_all(b"POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\nabc")
            .unwrap();
        let _ = s.shutdown(Shutdown::Both);
    }
    server.assert_serves();
}

/// Random bytes, mangled requests and oversized ones, each on its own
/// connection: the server answers with an HTTP status or closes, never panics,
/// and serves a valid request afterwards.
#[test]
fn malformed_input_never_breaks_the_server() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let server = Server::start(&[]);
    let valid = b"POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".to_vec();
    let mangled = (0..valid.len(), any::<u8>(), 0..valid.len()).prop_map(move |(at, byte, cut)| {
        let mut v = valid.clone();
        v[at] = byte;
        v.truncate(cut.max(at + 1));
        v
    });
    let input = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..4096),
        mangled,
        (1usize..64).prop_map(|kib| {
            let mut v = b"GET / HTTP/1.1\r\nX-Pad: ".to_vec();
            v.resize(kib * 1024, b'p');
            v
        }),
    ];
    let mut runner = TestRunner::new(Config {
        cases: 64,
        ..Config::default()
    });
    runner
        .run(&input, |bytes| {
            let mut s = server.connect();
            // The server may refuse and close before it has read everything.
            let _ = s.write_all(&bytes);
            let _ = s.shutdown(Shutdown::Write);
            let mut answer = Vec::new();
            let _ = s.read_to_end(&mut answer);
            prop_assert!(
                answer.is_empty() || answer.starts_with(b"HTTP/1.1 "),
                "answer {:?}",
                String::from_utf8_lossy(&answer[..answer.len().min(80)])
            );
            Ok(())
        })
        .unwrap();
    server.assert_serves();
}

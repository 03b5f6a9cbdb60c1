//! `examples/http_echo` driven over real sockets: a raw Rust client for exact
//! bytes on the wire (pipelining, limits, malformed input), curl when the machine
//! has it, and many concurrent goroutine clients. Each server is its own process;
//! every test ends by checking it never panicked.

use crate::common;

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
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
        Server::start_command(&mut Command::new(common::example_bin("http_echo")), extra)
    }

    /// Starts the server by `command` (the example, or a shell that runs it).
    fn start_command(command: &mut Command, extra: &[&str]) -> Server {
        let mut child = command
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

    let too_big = format!(
        "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        1024 * 1024 + 1
    );
    let answer = server.exchange_until_close(too_big.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 413 "), "{answer}");
    assert!(answer.contains("Connection: close\r\n"));
}

#[test]
fn chunked_bodies_are_decoded_even_when_split_byte_by_byte() {
    let server = Server::start(&[]);
    let wire = b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
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
    let huge = b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n100001\r\n";
    assert!(server.exchange_until_close(huge).starts_with("HTTP/1.1 413 "));
}

#[test]
fn refused_requests_get_their_status_and_the_connection_closes() {
    let server = Server::start(&[]);
    let big_header = format!("GET / HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n", "a".repeat(17 * 1024));
    let cases: Vec<(Vec<u8>, u16)> = vec![
        (big_header.into_bytes(), 431),
        (vec![b'a'; 20 * 1024], 431), // no line end at all, past the limit
        (b"GARBAGE\r\n\r\n".to_vec(), 400),
        (b"GET / HTTP/1.1\r\nHost: t\r\nBad Header\r\n\r\n".to_vec(), 400),
        (b"\x00\x01\x02\r\n\r\n".to_vec(), 400),
        (b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n".to_vec(), 400),
        (
            b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n".to_vec(),
            400,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec(),
            400,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n".to_vec(),
            501,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n".to_vec(),
            400,
        ),
        (b"GET / HTTP/1.1\r\nHost: t\r\nExpect: something\r\n\r\n".to_vec(), 417),
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
    (&s).write_all(b"PUT /x HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nbodyBREW / HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    (&s).write_all(get("/nowhere").as_bytes()).unwrap();
    (&s).write_all(b"HEAD / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
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

/// The status of `GET path` on a connection of its own (its body read whole).
fn status_of(server: &Server, path: &str) -> u16 {
    let mut r = BufReader::new(server.connect());
    r.get_mut().write_all(get(path).as_bytes()).unwrap();
    read_reply(&mut r).status
}

/// A 60 s `/debug/trace` whose client goes away stops then, as Go's: the next
/// trace is not refused with 409 for the rest of the minute.
#[test]
fn a_trace_whose_client_left_stops_and_the_next_one_is_taken() {
    let server = Server::start(&["--debug"]);
    let started = Instant::now();
    let taker = server.connect();
    (&taker).write_all(get("/debug/trace?seconds=60").as_bytes()).unwrap();
    // The trace is under way once the taker's goroutine waits for its client
    // in `wait_unless_gone` (the dump shows it there).
    loop {
        assert!(started.elapsed() < PATIENCE, "the 60 s trace never started");
        let mut r = BufReader::new(server.connect());
        r.get_mut().write_all(get("/debug/goroutines").as_bytes()).unwrap();
        if String::from_utf8_lossy(&read_reply(&mut r).body).contains("wait_unless_gone") {
            break;
        }
    }
    assert_eq!(status_of(&server, "/debug/trace?seconds=1"), 409, "one trace at a time");
    drop(taker);
    let left = Instant::now();
    loop {
        match status_of(&server, "/debug/trace?seconds=1") {
            200 => break,
            409 => assert!(
                left.elapsed() < PATIENCE,
                "the trace went on {:?} after its client left",
                left.elapsed()
            ),
            other => panic!("a probe got {other}"),
        }
        // Pacing: each 409 is answered at once.
        std::thread::sleep(Duration::from_millis(50));
    }
    server.assert_serves();
}

/// 50 goroutine dumps asked for at once are made one at a time: the server's
/// threads do not multiply (a dump takes a thread of its own, and its
/// goroutine's M leaves its P to another while it waits for that thread).
#[test]
fn goroutine_dumps_asked_at_once_take_turns_and_do_not_multiply_threads() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    const ASKING: usize = 50;
    let server = Server::start(&["--debug"]);
    server.assert_serves();
    let task_dir = format!("/proc/{}/task", server.child.id());
    let threads = move || std::fs::read_dir(&task_dir).map_or(0, |d| d.count());
    let before = threads();
    let done = AtomicBool::new(false);
    let peak = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(threads(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let asking: Vec<TcpStream> = (0..ASKING)
            .map(|_| {
                let s = server.connect();
                (&s).write_all(get("/debug/goroutines").as_bytes()).unwrap();
                s
            })
            .collect();
        for s in asking {
            let reply = read_reply(&mut BufReader::new(s));
            assert_eq!(reply.status, 200);
            assert!(reply.body.starts_with(b"goroutine "), "not a dump");
        }
        done.store(true, Ordering::Relaxed);
    });
    let peak = peak.into_inner();
    eprintln!("server threads: {before} before, {peak} at most while {ASKING} dumps were asked for");
    assert!(
        peak <= before + 20,
        "{peak} threads while {ASKING} dumps were asked for, {before} before"
    );
}

#[test]
fn expect_100_continue_and_http_1_0() {
    let server = Server::start(&[]);
    let s = server.connect();
    (&s).write_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
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
    (&s).write_all(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    assert_eq!(read_reply(&mut r).header("connection"), Some("close"));
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
        &["--header-timeout", "0"],
        &["--header-timeout", "1e300"],
        &["--body-timeout", "1e-12"],
        &["--body-timeout", "-inf"],
        &["--write-timeout", "NaN"],
        &["--write-timeout", "86400.5"],
        &["--max-conns", "0"],
        &["--max-conns", "-1"],
        &["--max-conns", "1.5"],
        &["--max-conns", "10000001"],
        &["--procs", "1025"],
        &["--header-timeout"],
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
        (&s).write_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc")
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
    let valid = b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".to_vec();
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
            let mut v = b"GET / HTTP/1.1\r\nHost: t\r\nX-Pad: ".to_vec();
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

/// Sends `wire` then a pipelined `GET /` on one connection: the answer is one
/// response with `status` and `Connection: close`, and the `GET` is not served.
fn assert_refused_alone(server: &Server, wire: &[u8], status: u16) {
    let mut raw = wire.to_vec();
    raw.extend_from_slice(get("/").as_bytes());
    let answer = server.exchange_until_close(&raw);
    let shown = String::from_utf8_lossy(wire).into_owned();
    assert!(
        answer.starts_with(&format!("HTTP/1.1 {status} ")),
        "{shown:?} got {answer:?}"
    );
    assert!(answer.contains("Connection: close\r\n"), "{shown:?}");
    assert_eq!(answer.matches("HTTP/1.1 ").count(), 1, "{shown:?} got {answer:?}");
}

/// A request smuggled behind a bare LF in a chunk extension: a proxy that ends
/// lines at LF reads `2;` as the size line and the request as chunk data; a
/// server reading the LF as extension bytes would end the body early and serve
/// the request on its own. Refused whole instead.
#[test]
fn a_request_hidden_behind_a_bare_lf_in_chunked_framing_is_not_served() {
    let server = Server::start(&[]);
    let hidden = "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n";
    let wire = format!(
        "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
         2;\nAB\r\n{:x}\r\n{hidden}\r\n0\r\n\r\n",
        hidden.len()
    );
    let answer = server.exchange_until_close(wire.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer:?}");
    assert_eq!(answer.matches("HTTP/1.1 ").count(), 1, "{answer:?}");
    server.assert_serves();
}

/// Every ambiguity in chunked framing is a 400 that closes the connection, and
/// nothing pipelined behind it is served.
#[test]
fn chunked_framing_ambiguities_get_400_and_close() {
    let server = Server::start(&[]);
    let framings: [&[u8]; 18] = [
        b"5\nhello\r\n0\r\n\r\n",                   // bare LF ending the size line
        b"5;a\nb\r\nhello\r\n0\r\n\r\n",            // bare LF inside an extension
        b"5\r\nhello\n0\r\n\r\n",                   // bare LF after chunk data
        b"5\r\nhello\r\n0\r\nX-T: 1\n\r\n",         // bare LF ending a trailer
        b"5\r\nhello\r\n0\r\n\n",                   // bare LF as the final line
        b"5\rhello\r\n0\r\n\r\n",                   // CR not followed by LF
        b"5;a=\"b\0\"\r\nhello\r\n0\r\n\r\n",       // NUL in a quoted extension value
        b"5;a\x01\r\nhello\r\n0\r\n\r\n",           // control byte in an extension
        b"5;a=b c\r\nhello\r\n0\r\n\r\n",           // stray bytes in an extension
        b"5 \r\nhello\r\n0\r\n\r\n",                // whitespace leading nowhere
        b"\r\nhello\r\n0\r\n\r\n",                  // empty chunk size
        b";a\r\nhello\r\n0\r\n\r\n",                // empty chunk size, with an extension
        b"10000000000000005\r\nhello\r\n0\r\n\r\n", // size overflows
        b"0\r\nno colon\r\n\r\n",                   // trailer without a colon
        b"0\r\nX-T : 1\r\n\r\n",                    // whitespace before a trailer's colon
        b"0\r\nX-T: 1\r\n folded\r\n\r\n",          // obs-fold in the trailers
        b"0\r\n X-T: 1\r\n\r\n",                    // indented trailer line
        b"0\r\nX-T: a\x7fb\r\n\r\n",                // control byte in a trailer value
    ];
    for framing in framings {
        let mut wire = b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        wire.extend_from_slice(framing);
        assert_refused_alone(&server, &wire, 400);
    }
    server.assert_serves();
}

/// The chunk-size line's limit holds however the line arrives: in one write or
/// byte by byte. Leading zeros are accepted, up to the limit.
#[test]
fn over_long_chunk_size_lines_get_400_in_one_write_or_dribbled() {
    let server = Server::start(&[]);
    let head = b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    let wire = |zeros: usize| {
        let mut w = head.to_vec();
        w.extend_from_slice("0".repeat(zeros).as_bytes());
        w.extend_from_slice(b"5\r\nhello\r\n0\r\n\r\n");
        w
    };
    // 1021 zeros, "5", CRLF: 1024 bytes, the limit.
    let s = server.connect();
    (&s).write_all(&wire(1021)).unwrap();
    let reply = read_reply(&mut BufReader::new(s));
    assert_eq!((reply.status, &reply.body[..]), (200, &b"hello"[..]));

    assert_refused_alone(&server, &wire(1022), 400);
    let mut long_ext = head.to_vec();
    long_ext.extend_from_slice(b"5;x=");
    long_ext.resize(long_ext.len() + 1100, b'x');
    long_ext.extend_from_slice(b"\r\nhello\r\n0\r\n\r\n");
    assert_refused_alone(&server, &long_ext, 400);

    for w in [wire(1022), long_ext] {
        let mut s = server.connect();
        s.set_nodelay(true).unwrap();
        for b in &w {
            // The server refuses part-way, and may stop reading.
            if (&s).write_all(&[*b]).is_err() {
                break;
            }
        }
        let answer = read_to_close(&mut s);
        assert!(answer.starts_with("HTTP/1.1 400 "), "{answer:?}");
    }
    server.assert_serves();
}

/// Ambiguous framing in the request head is a 400 (an unimplemented transfer
/// coding a 501) that closes the connection, and nothing pipelined behind it
/// is served.
#[test]
fn head_framing_ambiguities_get_400_and_close() {
    let server = Server::start(&[]);
    let cases: [(&[u8], u16); 16] = [
        (b"POST /echo HTTP/1.1\nHost: t\r\nContent-Length: 1\r\n\r\nx", 400),
        (b"POST /echo HTTP/1.1\r\nHost: t\nContent-Length: 1\r\n\r\nx", 400),
        (b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1\n\r\nx", 400),
        (b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\nx", 400),
        (b"POST /echo HTTP/1.1\r\nHost: t\rContent-Length: 1\r\n\r\nx", 400),
        (b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length : 1\r\n\r\nx", 400),
        (
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
            400,
        ),
        (b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n 2\r\n\r\nx", 400),
        (
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx",
            400,
        ),
        (
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nTransfer-Encoding: gzip\r\n\r\nx",
            400,
        ),
        (
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n",
            400,
        ),
        (
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            400,
        ),
        (
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
            400,
        ),
        (
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            501,
        ),
        (
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked;q=1\r\n\r\n0\r\n\r\n",
            501,
        ),
        (b"\nGET / HTTP/1.1\r\nHost: t\r\n\r\n", 400),
    ];
    for (wire, status) in cases {
        assert_refused_alone(&server, wire, status);
    }
    server.assert_serves();
}

/// Starts the server with its open-files limit (soft and hard) at `nofile`.
fn start_with_fd_limit(nofile: u32, extra: &[&str]) -> Server {
    let bin = common::example_bin("http_echo");
    let script = format!("ulimit -n {nofile} && exec \"$0\" \"$@\"");
    Server::start_command(Command::new("sh").args(["-c", &script]).arg(bin), extra)
}

/// Sends `first`, then `trickle` every 100 ms, until the server closes the
/// connection; returns what it answered and how long that took.
fn trickle_until_closed(server: &Server, first: &[u8], trickle: &[u8]) -> (String, Duration) {
    let mut s = server.connect();
    let started = Instant::now();
    s.write_all(first).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while started.elapsed() < PATIENCE {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {
                if s.write_all(trickle).is_err() {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    (String::from_utf8_lossy(&answer).into_owned(), started.elapsed())
}

#[test]
fn a_trickled_head_gets_408_at_the_header_timeout() {
    let server = Server::start(&["--header-timeout", "1"]);
    let (answer, took) = trickle_until_closed(&server, b"GET / HTTP/1.1\r\n", b"X-Pad: 1\r\n");
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer:?}");
    assert!(took >= Duration::from_millis(900), "cut off early: {took:?}");
    assert!(took < Duration::from_secs(5), "bytes extended the deadline: {took:?}");
    // A connection that sends nothing at all closes at the same deadline.
    let started = Instant::now();
    assert_eq!(read_to_close(&mut server.connect()), "");
    assert!(started.elapsed() < Duration::from_secs(5));
    server.assert_serves();
}

#[test]
fn a_trickled_body_gets_408_at_the_body_timeout() {
    let server = Server::start(&["--body-timeout", "1"]);
    let head = b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n";
    let (answer, took) = trickle_until_closed(&server, head, b"x");
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer:?}");
    assert!(took >= Duration::from_millis(900), "cut off early: {took:?}");
    assert!(took < Duration::from_secs(5), "bytes extended the deadline: {took:?}");
    // Chunked bodies too.
    let head = b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    let (answer, took) = trickle_until_closed(&server, head, b"1\r\nx\r\n");
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer:?}");
    assert!(took < Duration::from_secs(5), "bytes extended the deadline: {took:?}");
    server.assert_serves();
}

#[test]
fn a_client_that_does_not_read_is_closed_at_the_write_timeout() {
    let server = Server::start(&["--write-timeout", "1"]);
    let s = server.connect();
    s.set_write_timeout(Some(Duration::from_millis(100))).unwrap();
    let request = post(&vec![b'x'; 1 << 20]);
    let started = Instant::now();
    // Echo requests, never reading the answers: the server's writes block, then
    // its reads, then ours. A connection still open at PATIENCE is the failure.
    let closed = loop {
        if started.elapsed() > PATIENCE {
            break None;
        }
        match (&s).write(&request) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {}
            Err(_) => break Some(started.elapsed()),
        }
    };
    let took = closed.expect("the server kept a client that does not read");
    assert!(took < Duration::from_secs(8), "closed only after {took:?}");
    server.assert_serves();
}

#[test]
fn idle_time_between_requests_is_bounded_and_activity_keeps_a_connection() {
    let server = Server::start(&["--idle-timeout", "0.3"]);
    let s = server.connect();
    let mut r = BufReader::new(s.try_clone().unwrap());
    // Used every 100 ms, the connection stays open past the idle timeout.
    for i in 0..6 {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(100));
        }
        (&s).write_all(get("/").as_bytes()).unwrap();
        assert_eq!(read_reply(&mut r).status, 200);
    }
    let idle_from = Instant::now();
    let mut rest = String::new();
    r.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "", "an idle connection closes silently");
    let idled = idle_from.elapsed();
    assert!(idled >= Duration::from_millis(250), "{idled:?}");
    assert!(idled < Duration::from_secs(5), "{idled:?}");
}

/// The server's `/stats` counter `name`.
fn stat(server: &Server, name: &str) -> u64 {
    let s = server.connect();
    let mut r = BufReader::new(s.try_clone().unwrap());
    (&s).write_all(get("/stats").as_bytes()).unwrap();
    let reply = read_reply(&mut r);
    let v: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
    v[name].as_u64().unwrap_or_else(|| panic!("no {name} in /stats"))
}

/// Connections idle past a second give their buffers back and wait without
/// them; past another their goroutines' stacks are swapped out. Each then
/// serves its next request, a small one or a body that needs a grown buffer.
#[test]
fn idle_connections_without_buffers_or_stacks_serve_their_next_request() {
    const CONNS: usize = 40;
    let server = Server::start(&["--idle-timeout", "60"]);
    let conns: Vec<_> = (0..CONNS)
        .map(|_| {
            let s = server.connect();
            let mut r = BufReader::new(s.try_clone().unwrap());
            (&s).write_all(get("/").as_bytes()).unwrap();
            assert_eq!(read_reply(&mut r).status, 200);
            (s, r)
        })
        .collect();
    let since = Instant::now();
    while stat(&server, "stacks_swapped_out") < CONNS as u64 {
        assert!(
            since.elapsed() < Duration::from_secs(30),
            "the idle connections' stacks stayed in"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let body: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    for (i, (s, mut r)) in conns.into_iter().enumerate() {
        if i % 2 == 0 {
            (&s).write_all(get("/").as_bytes()).unwrap();
            assert_eq!(read_reply(&mut r).status, 200, "connection {i}");
        } else {
            (&s).write_all(&post(&body)).unwrap();
            let reply = read_reply(&mut r);
            assert_eq!((reply.status, reply.body.len()), (200, body.len()), "connection {i}");
            assert!(reply.body == body, "connection {i}'s echo differs");
        }
    }
}

/// 252 connections that trickle their heads, at a 256-descriptor limit: the
/// ones beyond `--max-conns` (240 here) get 503 at once, the rest 408 at the
/// header timeout, and a well-behaved client is served once they are gone.
#[test]
fn slow_clients_at_the_descriptor_limit_keep_nobody_out_past_the_header_timeout() {
    const HEADER_TIMEOUT: Duration = Duration::from_secs(2);
    let server = start_with_fd_limit(256, &["--header-timeout", "2"]);
    let started = Instant::now();
    let slow: Vec<TcpStream> = (0..252)
        .map(|_| {
            let s = server.connect();
            let _ = (&s).write_all(b"GET / HTTP/1.1\r\nHost: slow\r\n");
            s
        })
        .collect();
    let mut refused_503 = 0;
    let served_after = loop {
        assert!(started.elapsed() < PATIENCE, "a new client was never served");
        let s = server.connect();
        let mut r = BufReader::new(s.try_clone().unwrap());
        if (&s).write_all(get("/").as_bytes()).is_err() {
            continue;
        }
        let mut line = String::new();
        match r.read_line(&mut line) {
            Ok(_) if line.starts_with("HTTP/1.1 200 ") => break started.elapsed(),
            Ok(_) if line.starts_with("HTTP/1.1 503 ") => refused_503 += 1,
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    eprintln!("served after {served_after:?}; {refused_503} retries answered 503");
    assert!(
        served_after < HEADER_TIMEOUT + Duration::from_secs(4),
        "served only after {served_after:?}"
    );
    // Every slow connection is closed by now: with 408 if it was being served,
    // 503 if it was turned away (with a linger, or at once when too many were
    // being turned away).
    let (mut got_503, mut got_408) = (0, 0);
    for mut s in slow {
        let answer = read_to_close(&mut s);
        match answer.get(..13) {
            Some("HTTP/1.1 503 ") => got_503 += 1,
            Some("HTTP/1.1 408 ") => got_408 += 1,
            _ => panic!("a slow client got {answer:?}"),
        }
    }
    assert!(
        (1..=240).contains(&got_408),
        "{got_408} slow connections were served at once"
    );
    assert!(got_503 + refused_503 >= 1, "nobody was turned away with 503");
}

/// A burst of clients beyond `--max-conns` (1 here) and beyond the refusals
/// that linger (8 at a 64-descriptor limit, each held 500 ms at most): every
/// one reads a 503 and the end of the stream, never a reset.
#[test]
fn clients_beyond_every_budget_read_a_503_not_a_reset() {
    let server = start_with_fd_limit(64, &["--max-conns", "1"]);
    // The one place to be served, held: a keep-alive connection, idle.
    let mut held = BufReader::new(server.connect());
    held.get_mut().write_all(get("/").as_bytes()).unwrap();
    assert_eq!(read_reply(&mut held).status, 200);
    let burst: Vec<TcpStream> = (0..40)
        .map(|_| {
            let s = server.connect();
            (&s).write_all(get("/").as_bytes()).unwrap();
            s
        })
        .collect();
    for (i, mut s) in burst.into_iter().enumerate() {
        let mut all = Vec::new();
        if let Err(e) = s.read_to_end(&mut all) {
            panic!("client {i} of the burst: {e} after {:?}", String::from_utf8_lossy(&all));
        }
        let answer = String::from_utf8_lossy(&all);
        assert!(
            answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
            "client {i} of the burst got {answer:?}"
        );
    }
}

#[test]
fn http_1_1_requests_need_exactly_one_valid_host() {
    let server = Server::start(&[]);
    for raw in [
        &b"GET / HTTP/1.1\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a b/c@\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a:8x\r\n\r\n",
    ] {
        let answer = server.exchange_until_close(raw);
        assert!(answer.starts_with("HTTP/1.1 400 "), "{raw:?}: {answer:?}");
    }
    for raw in [
        &b"GET / HTTP/1.0\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: [::1]:80\r\nConnection: close\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: example.com:8080\r\nConnection: close\r\n\r\n",
    ] {
        let answer = server.exchange_until_close(raw);
        assert!(answer.starts_with("HTTP/1.1 200 "), "{raw:?}: {answer:?}");
    }
}

#[test]
fn content_length_lists_must_repeat_one_value_with_no_empty_element() {
    let server = Server::start(&[]);
    for value in [",3", "3,", "3,,3", "3, 4"] {
        let raw = format!("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: {value}\r\n\r\nabc");
        let answer = server.exchange_until_close(raw.as_bytes());
        assert!(answer.starts_with("HTTP/1.1 400 "), "{value:?}: {answer:?}");
    }
    let raw = "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3, 3\r\nConnection: close\r\n\r\nabc";
    let answer = server.exchange_until_close(raw.as_bytes());
    assert!(
        answer.starts_with("HTTP/1.1 200 ") && answer.ends_with("abc"),
        "{answer:?}"
    );
}

#[test]
fn http_1_0_expectations_are_ignored() {
    let server = Server::start(&[]);
    for expect in ["100-continue", "something-else"] {
        let raw = format!("POST / HTTP/1.0\r\nExpect: {expect}\r\nContent-Length: 3\r\n\r\nabc");
        let answer = server.exchange_until_close(raw.as_bytes());
        assert!(answer.starts_with("HTTP/1.1 200 "), "{expect}: {answer:?}");
        assert!(!answer.contains("100 Continue"), "{answer:?}");
    }
}

#[test]
fn empty_lines_after_a_request_leave_the_connection_idle() {
    let server = Server::start(&["--header-timeout", "0.3", "--idle-timeout", "1"]);
    let s = server.connect();
    let mut r = BufReader::new(s.try_clone().unwrap());
    (&s).write_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc\r\n")
        .unwrap();
    assert_eq!(read_reply(&mut r).status, 200);
    let idle_from = Instant::now();
    (&s).write_all(b"\r\n").unwrap();
    let mut rest = String::new();
    r.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "", "empty lines are not a request to time out");
    assert!(
        idle_from.elapsed() >= Duration::from_millis(800),
        "{:?}",
        idle_from.elapsed()
    );
}

/// Empty lines keep no connection open past its idle timeout, however often
/// they come.
#[test]
fn empty_lines_do_not_restart_the_idle_timeout() {
    let server = Server::start(&["--idle-timeout", "1"]);
    let s = server.connect();
    let mut r = BufReader::new(s.try_clone().unwrap());
    (&s).write_all(get("/").as_bytes()).unwrap();
    assert_eq!(read_reply(&mut r).status, 200);
    let idle_from = Instant::now();
    let crlf = s.try_clone().unwrap();
    let dribble = std::thread::spawn(move || {
        // Every 300 ms until the server closes (or 20 s pass).
        for _ in 0..66 {
            std::thread::sleep(Duration::from_millis(300));
            if (&crlf).write_all(b"\r\n").is_err() {
                return;
            }
        }
    });
    let mut rest = String::new();
    let _ = r.read_to_string(&mut rest);
    let idled = idle_from.elapsed();
    assert_eq!(rest, "", "empty lines are not a request");
    assert!(idled >= Duration::from_millis(800), "{idled:?}");
    assert!(
        idled < Duration::from_secs(10),
        "empty lines kept the connection for {idled:?}"
    );
    let _ = s.shutdown(std::net::Shutdown::Both);
    dribble.join().unwrap();
}

#[test]
fn help_goes_to_stdout_and_malformed_counts_and_addresses_are_usage_errors() {
    let out = Command::new(common::example_bin("http_echo"))
        .arg("--help")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--header-timeout"));
    for args in [
        &["--procs", "+2"][..],
        &["--max-conns", "+5"],
        &["--max-conns", ""],
        &["--addr", "foo"],
        &["--addr", ""],
        &["--addr", "127.0.0.1:99999"],
        &["--addr", "127.0.0.1:-1"],
    ] {
        let out = Command::new(common::example_bin("http_echo"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("usage: http_echo"),
            "{args:?}"
        );
    }
}

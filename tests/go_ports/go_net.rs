//! Go's `net` package tests, ported to `goro::net`.
//!
//! Sources (golang/go): `src/net/timeout_test.go`, `src/net/net_test.go`,
//! `src/net/tcpsock_test.go`, `src/net/tcpsock_unix_test.go`,
//! `src/net/udpsock_test.go` and `src/net/conn_test.go`, with the helpers of
//! `src/net/mockserver_test.go` (`timeoutReceiver`, `timeoutTransmitter`,
//! `transponder`) rewritten as the small functions below. Each test names the Go
//! test it ports; the last section holds checks of goro's own contract (API.md)
//! that have no Go counterpart, among them socket I/O from a plain OS thread.
//!
//! Translation rules:
//! - Each Go test body runs in a goroutine ([`go_test`]) at GOMAXPROCS 4, under a
//!   watchdog. Listeners and UDP sockets bind `127.0.0.1:0`.
//! - Deadlines become per-call timeouts: `SetReadDeadline(time.Now().Add(d))` is
//!   `set_read_timeout(Some(d))`, `SetWriteDeadline` is `set_write_timeout`,
//!   `SetDeadline` both, `noDeadline` is `None`. goro's timeouts are std's: they
//!   bound each call that has to wait, not a series of calls, and a call that need
//!   not wait (data already queued, room in the send buffer) succeeds whatever the
//!   timeout. So Go's "deadline in the past" cases become the smallest timeout,
//!   1 ns, which fails only a call that must wait (a call with data at hand is
//!   checked to succeed instead); Go's loops that call until an absolute deadline
//!   has passed become loops that call until one call has to wait longer than the
//!   timeout (an idle peer, a full send buffer); and a timeout set while a call is
//!   already waiting does not reach that call, so timeouts are set before the
//!   goroutines that use them start.
//! - A timeout (`os.ErrDeadlineExceeded`, `Timeout() == true`) is
//!   `io::ErrorKind::TimedOut`; `io.EOF` is `Ok(0)`; Go's `Conn.Write`, which writes
//!   everything, is `write_all`, and `io.ReadFull` is `read_exact`.
//! - `Close` of a socket another goroutine is using: Rust does not let a value be
//!   dropped while it is borrowed, so the socket is shut down instead
//!   (`TcpStream::shutdown`; for a listener, `shutdown(2)` on its descriptor, see
//!   [`shutdown_listener`]). Dropping the last handle closes the socket, as `Close`
//!   does. `SetLinger(0)` is `common::reset_on_close`.
//! - `Dial("udp", addr)` is `UdpSocket::bind("127.0.0.1:0")` plus `connect(addr)`.
//! - Timing checks: "not early" strictly (a call that times out waited at least its
//!   timeout), "not late" loosely ([`LATE`], seconds), since the machine is shared.
//!   Where Go sleeps to let another goroutine block first, so does the port, but
//!   only to widen the window: no check depends on the sleep's length.
//! - Scales are cut down so the file runs in seconds in a debug build; each test
//!   says what it changed.
//!
//! Not ported:
//! - Every `unix`/`unixpacket`/`unixgram` variant: goro::net has TCP and UDP only.
//! - `TestDialTimeout`: it needs Go's socktest hooks to make a connect hang
//!   (tests/network/net.rs covers `connect_timeout` against a full backlog).
//! - `TestAcceptTimeout`, `TestAcceptTimeoutMustReturn`: goro's `TcpListener`, like
//!   std's, has no accept timeout (the "no deadline" test,
//!   `TestAcceptTimeoutMustNotReturn`, is ported).
//! - `TestWriteToTimeout`: a UDP send on Linux never waits for the receiver, so a
//!   per-call timeout has nothing to bound (Go's test needs a deadline in the past).
//! - `TestVariousDeadlines4Proc`: this binary runs at GOMAXPROCS 4, so it is
//!   `various_deadlines` itself.
//! - `TestConnClose`, `TestPacketConnClose`: they read from a closed socket; in Rust
//!   that does not compile, and a `try_clone`d handle keeps the socket open (a
//!   duplicated descriptor, as std), so there is nothing to observe.
//! - `TestCloseUnblocksReadUDP`: a UDP socket cannot be dropped while a goroutine
//!   reads from it, and `UdpSocket` has no `shutdown` (nor has std's): a parked
//!   receive ends only with a datagram or its timeout.
//! - `TestAcceptIgnoreAbortedConnRequest`: needs socktest to inject accept errors.
//! - `TestErrors`: Go's error types (goro returns `io::Error`).
//! - `TestResolveTCPAddr`, `TestResolveUDPAddr`, the IPv6 link-local tests,
//!   `TestUDPIPVersionReadMsg`, the `WriteMsgUDPAddrPort` target-address tests,
//!   `TestReadWriteMsgUDPAddrPortEmptyCmsg`, `TestDualStackUDPBroadcast`: address
//!   parsing (std's `ToSocketAddrs`), ReadMsg/WriteMsg, IPv6, broadcast and the
//!   external network are not part of goro::net.
//! - `TestTCPReadWriteAllocs`, `TestAllocs`: Go's allocation counts.
//! - `TestTCPSpuriousConnSetupCompletionWithCancel`: Go contexts and an external
//!   host.
//! - Benchmarks.
//!
//! Where Linux's sockets differ from Go's `net`, goro does as Go:
//! - [`zero_byte_read`]: a TCP read into an empty buffer returns 0 at once. The
//!   non-blocking `recv` of 0 bytes says `EAGAIN` on an empty socket, so a read
//!   that waited for readiness would park until data arrived.
//! - [`tcp_self_connect`]: `TcpStream::connect` to a local port where nothing
//!   listens can get a socket connected to itself (Linux's simultaneous open
//!   with its own ephemeral port: once in a few hundred to a few tens of
//!   thousands of tries); like Go's `Dial`, goro retries such a connect.

use crate::{common, go_test, go_test_at_one_proc, join, running, PROCS};

use goro::chan::{self, Receiver, RecvTimeoutError};
use goro::go;
use goro::net::{TcpListener, TcpStream, UdpSocket};
use goro::time::{sleep, Ticker};
use std::fmt::Debug;
use std::io::{self, ErrorKind, IoSlice, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

const NS: Duration = Duration::from_nanos(1);
const US: Duration = Duration::from_micros(1);
const MS: Duration = Duration::from_millis(1);
const HOUR: Duration = Duration::from_secs(3600);
/// The loose upper bound of "returns soon" (the machine is shared and noisy).
const LATE: Duration = Duration::from_secs(5);
/// How long a call that must not return is watched.
const MUST_NOT_RETURN: Duration = Duration::from_millis(100);

/// Go's `newLocalListener("tcp")`.
fn listen() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").expect("listen on 127.0.0.1:0")
}

fn dial(addr: SocketAddr) -> TcpStream {
    TcpStream::connect(addr).expect("dial")
}

/// A connection: (the dialing side, the accepted side).
fn conn_pair() -> (TcpStream, TcpStream) {
    let l = listen();
    let c = dial(l.local_addr().unwrap());
    let (s, _) = l.accept().unwrap();
    (c, s)
}

/// Go's `newLocalPacketListener("udp")`.
fn packet_conn() -> UdpSocket {
    UdpSocket::bind("127.0.0.1:0").expect("bind udp 127.0.0.1:0")
}

/// Go's `ln.Close()` while goroutines are parked in `Accept`: Rust will not drop
/// a listener they borrow, so its socket is shut down, which wakes every accept
/// with an error.
fn shutdown_listener(l: &TcpListener) {
    // SAFETY: shutdown(2) on a socket `l` owns; its descriptor stays open.
    let rc = unsafe { libc::shutdown(l.as_raw_fd(), libc::SHUT_RDWR) };
    assert_eq!(rc, 0, "shutdown(listener): {}", io::Error::last_os_error());
}

/// Go's `timeoutReceiver`/`timeoutTransmitter` check: `call` must fail with
/// `TimedOut` after waiting at least `d`, and not much later.
fn check_timeout<T: Debug>(what: &str, d: Duration, call: impl FnOnce() -> io::Result<T>) {
    let start = Instant::now();
    let r = call();
    let took = start.elapsed();
    match r {
        Err(e) if e.kind() == ErrorKind::TimedOut => {}
        other => panic!("{what}: got {other:?}; want a TimedOut error"),
    }
    assert!(took >= d, "{what}: timed out after {took:?}, before its {d:?} timeout");
    assert!(took < d + LATE, "{what}: a {d:?} timeout took {took:?}");
}

/// Checks that `rx` gets nothing for [`MUST_NOT_RETURN`]: the call feeding it
/// is still blocked. Joins `h` (re-raising its panic) if it died instead.
fn check_still_blocked<T: Debug, H>(what: &str, rx: &Receiver<T>, h: goro::JoinHandle<H>) -> goro::JoinHandle<H> {
    match rx.recv_timeout(MUST_NOT_RETURN) {
        Err(RecvTimeoutError::Timeout) => h,
        Ok(v) => panic!("{what}: returned {v:?}; want it still blocked"),
        Err(RecvTimeoutError::Closed) => {
            join(h);
            panic!("{what}: its goroutine ended without a result");
        }
    }
}

/// Writes `chunk` until a write fails; returns the error, the bytes written
/// before it and how long the failing call took (Go's `timeoutTransmitter` loop).
fn write_until_error(c: &TcpStream, chunk: &[u8]) -> (io::Error, usize, Duration) {
    let mut w = c;
    let mut sent = 0;
    loop {
        let start = Instant::now();
        match w.write(chunk) {
            Ok(n) => sent += n,
            Err(e) => return (e, sent, start.elapsed()),
        }
    }
}

/// The test data: byte `i` of a stream that starts at `offset` is
/// `(offset + i) % 251`, so a lost, repeated or reordered chunk shows.
const PERIOD: usize = 251;

fn pattern_block() -> [u8; 2 * PERIOD] {
    std::array::from_fn(|i| (i % PERIOD) as u8)
}

fn fill_pattern(offset: usize, buf: &mut [u8]) {
    let block = pattern_block();
    let start = offset % PERIOD;
    for chunk in buf.chunks_mut(PERIOD) {
        chunk.copy_from_slice(&block[start..start + chunk.len()]);
    }
}

fn pattern_ok(offset: usize, buf: &[u8]) -> bool {
    let block = pattern_block();
    let start = offset % PERIOD;
    buf.chunks(PERIOD)
        .all(|chunk| chunk == &block[start..start + chunk.len()])
}

// ---------------------------------------------------------------------------
// timeout_test.go

/// TestReadTimeout. The peer sends one message and keeps the connection open.
/// Go's first case (a deadline already past fails even a read with data at
/// hand) becomes: with the smallest timeout, a read with data at hand succeeds
/// (std's per-call rule), and a read with nothing to read times out. The second
/// case (50 ms) keeps Go's sleeps of a third of the timeout between successful
/// reads: the series outlasts the timeout, yet every read that finds data
/// succeeds; the two reads after the data time out.
#[test]
fn read_timeout() {
    go_test(|| {
        const MSG: &[u8] = b"READ TIMEOUT TEST";
        let l = listen();
        let addr = l.local_addr().unwrap();
        let (done_tx, done_rx) = chan::bounded::<()>(0);
        let server = go!(move || {
            let (mut s, _) = l.accept().unwrap();
            s.write_all(MSG).unwrap();
            // No end of file until the client is done.
            let _ = done_rx.recv();
        });
        let mut c = dial(addr);
        let mut b = [0u8; 1];
        // Wait, without a timeout, until the message is there.
        assert_eq!(c.peek(&mut b).unwrap(), 1);
        c.set_read_timeout(Some(NS)).unwrap();
        assert_eq!(c.read(&mut b).unwrap(), 1, "a read with data at hand succeeds");
        assert_eq!(b[0], MSG[0]);

        let d = 50 * MS;
        c.set_read_timeout(Some(d)).unwrap();
        let start = Instant::now();
        for &want in &MSG[1..] {
            assert_eq!(c.read(&mut b).unwrap(), 1);
            assert_eq!(b[0], want);
            sleep(d / 3);
        }
        assert!(start.elapsed() >= d, "the reads outlasted one timeout");
        for _ in 0..2 {
            check_timeout("a 50 ms read after the data", d, || c.read(&mut b));
        }

        c.set_read_timeout(Some(NS)).unwrap();
        for _ in 0..2 {
            check_timeout("a 1 ns read with nothing to read", NS, || c.read(&mut b));
        }
        drop(done_tx);
        join(server);
    });
}

/// TestReadTimeoutMustNotReturn: with the write timeout and then the read
/// timeout set and the read timeout cleared, a read keeps waiting. Go ends it by
/// closing the socket; the port ends it with data from the peer, which it must
/// return.
#[test]
fn read_timeout_must_not_return() {
    go_test(|| {
        let (c, mut s) = conn_pair();
        c.set_write_timeout(Some(NS)).unwrap();
        c.set_read_timeout(Some(NS)).unwrap();
        c.set_read_timeout(None).unwrap();
        let (tx, rx) = chan::bounded(1);
        let reader = go!(move || {
            let mut b = [0u8; 1];
            let r = (&c).read(&mut b).map(|n| (n, b[0]));
            let _ = tx.send(r);
        });
        let reader = check_still_blocked("a read without a timeout", &rx, reader);
        s.write_all(b"x").unwrap();
        let r = rx
            .recv_timeout(LATE)
            .expect("the read did not return when data arrived");
        assert_eq!(r.unwrap(), (1, b'x'));
        join(reader);
    });
}

/// TestReadFromTimeout (UDP). The 1 ns case runs before the peer sends (a read
/// with a datagram at hand would succeed, as for TCP); then the peer sends one
/// datagram: one `recv_from` gets it (cut to the 1-byte buffer), the next two
/// time out.
#[test]
fn read_from_timeout() {
    go_test(|| {
        const MSG: &[u8] = b"READFROM TIMEOUT TEST";
        let server = packet_conn();
        let server_addr = server.local_addr().unwrap();
        let (addr_tx, addr_rx) = chan::bounded::<SocketAddr>(0);
        let handler = go!(move || {
            if let Ok(dst) = addr_rx.recv() {
                assert_eq!(server.send_to(MSG, dst).unwrap(), MSG.len());
            }
        });
        let c = packet_conn();
        let mut b = [0u8; 1];
        c.set_read_timeout(Some(NS)).unwrap();
        for _ in 0..2 {
            check_timeout("a 1 ns recv_from", NS, || c.recv_from(&mut b));
        }
        addr_tx.send(c.local_addr().unwrap()).unwrap();
        join(handler); // the datagram is on its way

        let d = 50 * MS;
        c.set_read_timeout(Some(d)).unwrap();
        let (n, from) = c.recv_from(&mut b).unwrap();
        assert_eq!((n, from, b[0]), (1, server_addr, MSG[0]));
        for _ in 0..2 {
            check_timeout("a 50 ms recv_from after the datagram", d, || c.recv_from(&mut b));
        }
    });
}

/// TestWriteTimeout. The peer never reads (Go's listener never accepts). Go's
/// first case (a deadline in the past fails even a write with buffer room)
/// becomes: a 1 ns timeout does not fail a write that has room. The 10 ms case
/// writes until a write has to wait: it times out, and so does the next series
/// (Go's second expected error). The port writes 64 KiB chunks, not Go's 18
/// bytes, to fill the buffers quickly.
#[test]
fn write_timeout() {
    go_test(|| {
        const MSG: &[u8] = b"WRITE TIMEOUT TEST";
        let l = listen();
        let c = dial(l.local_addr().unwrap());
        c.set_write_timeout(Some(NS)).unwrap();
        assert_eq!((&c).write(MSG).unwrap(), MSG.len(), "a write with room succeeds");

        let c = dial(l.local_addr().unwrap());
        let d = 10 * MS;
        c.set_write_timeout(Some(d)).unwrap();
        let chunk = vec![0u8; 64 << 10];
        for round in 0..2 {
            let (e, sent, took) = write_until_error(&c, &chunk);
            assert_eq!(e.kind(), ErrorKind::TimedOut, "round {round}: {e} after {sent} bytes");
            assert!(round > 0 || sent > 0, "some data went out before the buffers filled");
            assert!(took >= d, "round {round}: timed out after {took:?}, before {d:?}");
            assert!(took < d + LATE, "round {round}: a {d:?} timeout took {took:?}");
        }
        drop(l);
    });
}

/// TestWriteTimeoutMustNotReturn: with the read timeout set and no write
/// timeout, a writer to a peer that never reads keeps waiting once the buffers
/// are full. Go closes the socket to end it; here it is shut down (the writer
/// shares it), which must wake the writer with an error that is not a timeout.
/// The port writes 16 KiB chunks, not single bytes, to fill the buffers quickly.
#[test]
fn write_timeout_must_not_return() {
    go_test(|| {
        let l = listen();
        let c = Arc::new(dial(l.local_addr().unwrap()));
        c.set_write_timeout(Some(NS)).unwrap();
        c.set_read_timeout(Some(NS)).unwrap();
        c.set_write_timeout(None).unwrap();
        let (tx, rx) = chan::bounded(1);
        let writer = {
            let c = c.clone();
            go!(move || {
                let (e, sent, _) = write_until_error(&c, &[0u8; 16 << 10]);
                let _ = tx.send((e.kind(), sent));
            })
        };
        let writer = check_still_blocked("a write without a timeout", &rx, writer);
        c.shutdown(Shutdown::Both).unwrap();
        let (kind, sent) = rx.recv_timeout(LATE).expect("shutdown did not wake the blocked writer");
        assert_ne!(kind, ErrorKind::TimedOut, "after {sent} bytes");
        assert_eq!(kind, ErrorKind::BrokenPipe, "after {sent} bytes");
        join(writer);
        drop(l);
    });
}

/// TestReadTimeoutFluctuation: one 100 ms read on an idle connection times out,
/// not early, not seconds late.
#[test]
fn read_timeout_fluctuation() {
    go_test(|| {
        let (c, _s) = conn_pair();
        let d = 100 * MS;
        c.set_read_timeout(Some(d)).unwrap();
        check_timeout("a 100 ms read", d, || (&c).read(&mut [0u8; 256]));
    });
}

/// TestReadFromTimeoutFluctuation: the same for `recv_from` on a connected UDP
/// socket.
#[test]
fn read_from_timeout_fluctuation() {
    go_test(|| {
        let c1 = packet_conn();
        let c2 = packet_conn();
        c2.connect(c1.local_addr().unwrap()).unwrap();
        let d = 100 * MS;
        c2.set_read_timeout(Some(d)).unwrap();
        check_timeout("a 100 ms recv_from", d, || c2.recv_from(&mut [0u8; 256]));
    });
}

/// TestWriteTimeoutFluctuation: writing to a peer that never reads with a
/// 100 ms write timeout ends with a write that timed out after at least 100 ms.
#[test]
fn write_timeout_fluctuation() {
    go_test(|| {
        let l = listen();
        let c = dial(l.local_addr().unwrap());
        let d = 100 * MS;
        c.set_write_timeout(Some(d)).unwrap();
        let start = Instant::now();
        let (e, sent, took) = write_until_error(&c, &[0u8; 64 << 10]);
        assert_eq!(e.kind(), ErrorKind::TimedOut, "{e} after {sent} bytes");
        assert!(took >= d, "timed out after {took:?}, before {d:?}");
        assert!(start.elapsed() < d + LATE, "writing took {:?}", start.elapsed());
        drop(l);
    });
}

/// The timeouts of [`various_deadlines_body`]: Go's list up to 50 ms (Go goes on
/// to 1 s).
const VARIOUS: &[Duration] = &[
    Duration::from_nanos(1),
    Duration::from_nanos(2),
    Duration::from_nanos(5),
    Duration::from_nanos(50),
    Duration::from_nanos(100),
    Duration::from_nanos(200),
    Duration::from_nanos(500),
    Duration::from_nanos(750),
    Duration::from_micros(1),
    Duration::from_micros(5),
    Duration::from_micros(25),
    Duration::from_micros(250),
    Duration::from_micros(500),
    Duration::from_millis(1),
    Duration::from_millis(5),
    Duration::from_millis(20),
    Duration::from_millis(50),
];
/// Bytes each server connection sends before it waits for the client: more than
/// the socket buffers first hold, so the sender has to wait for the reader.
const BURST: usize = 1 << 20;
/// Connections copying at once, per timeout (Go runs 3 in a row).
const COPIES: usize = 3;

/// TestVariousDeadlines: Go copies from the connection until the deadline ends
/// the copy. With per-call timeouts a copy of an endless stream never ends, so
/// each server connection sends a burst of [`BURST`] bytes and then waits; the
/// client, once the burst is arriving, copies with a read timeout (short ones
/// expire mid-transfer, long ones after it) until one read has waited that long, which
/// must fail with `TimedOut` after at least the timeout, within Go's 5 s.
/// Then nothing may have been lost: the client asks for the end of the stream
/// and reads the rest, and the bytes, checked as they come, add up to the
/// burst. [`COPIES`] connections copy at once per timeout.
fn various_deadlines_body() {
    let l = listen();
    let addr = l.local_addr().unwrap();
    let server = go!(move || {
        let conns: Vec<_> = l
            .incoming()
            .take(VARIOUS.len() * COPIES)
            .map(|c| {
                let mut c = c.unwrap();
                go!(move || {
                    let mut burst = vec![0u8; BURST];
                    fill_pattern(0, &mut burst);
                    c.write_all(&burst).unwrap();
                    // The client's go-ahead, sent once its copy timed out.
                    assert_eq!(c.read(&mut [0u8; 1]).unwrap(), 1);
                })
            })
            .collect();
        for h in conns {
            join(h);
        }
    });
    for &d in VARIOUS {
        let copies: Vec<_> = (0..COPIES).map(|_| go!(move || copy_until_timeout(addr, d))).collect();
        for h in copies {
            join(h);
        }
    }
    join(server);
}

/// One client of [`various_deadlines_body`].
fn copy_until_timeout(addr: SocketAddr, d: Duration) {
    let start = Instant::now();
    let mut c = dial(addr);
    // Start the timed copy once the burst is arriving, so that short timeouts
    // expire in the middle of the transfer (while the sender refills the
    // buffers), not before it.
    assert!(c.peek(&mut [0u8; 1]).unwrap() > 0);
    c.set_read_timeout(Some(d)).unwrap();
    let mut buf = vec![0u8; 8 << 10];
    let mut got = 0;
    let waited = loop {
        let t = Instant::now();
        match c.read(&mut buf) {
            Ok(0) => panic!("{d:?}: end of stream after {got} bytes; want a timeout"),
            Ok(n) => {
                assert!(pattern_ok(got, &buf[..n]), "{d:?}: wrong bytes at {got}");
                got += n;
            }
            Err(e) if e.kind() == ErrorKind::TimedOut => break t.elapsed(),
            Err(e) => panic!("{d:?}: {e} after {got} bytes; want a timeout"),
        }
    };
    assert!(waited >= d, "{d:?}: the read timed out after {waited:?}");
    assert!(
        start.elapsed() < LATE,
        "{d:?}: client stuck in dial and copy for {:?}",
        start.elapsed()
    );
    c.set_read_timeout(None).unwrap();
    c.write_all(b"k").unwrap();
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).unwrap();
    assert!(pattern_ok(got, &rest), "{d:?}: wrong bytes after the timeout");
    assert_eq!(got + rest.len(), BURST, "{d:?}: {got} bytes before the timeout");
}

/// TestVariousDeadlines (and TestVariousDeadlines4Proc: this binary runs at
/// GOMAXPROCS 4).
#[test]
fn various_deadlines() {
    go_test(various_deadlines_body);
}

/// TestVariousDeadlines1Proc: the same at GOMAXPROCS 1 (alone: it holds the
/// binary's lock exclusively while it changes GOMAXPROCS).
#[test]
fn various_deadlines_1proc() {
    go_test_at_one_proc(various_deadlines_body);
}

/// TestReadWriteProlongedTimeout: on the server side one goroutine reads and one
/// writes single bytes, each setting its timeout to an hour before every call,
/// while the client does write/read pairs (300, Go 1000). Once the client
/// hangs up, both server goroutines must end.
#[test]
fn read_write_prolonged_timeout() {
    go_test(|| {
        let l = listen();
        let addr = l.local_addr().unwrap();
        let server = go!(move || {
            let (s, _) = l.accept().unwrap();
            let r = Arc::new(s);
            let w = r.clone();
            let reader = go!(move || {
                let mut b = [0u8; 1];
                loop {
                    r.set_read_timeout(Some(HOUR)).unwrap();
                    match (&*r).read(&mut b) {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                }
            });
            let writer = go!(move || loop {
                w.set_write_timeout(Some(HOUR)).unwrap();
                if (&*w).write(&[0u8]).is_err() {
                    return;
                }
            });
            join(reader);
            join(writer);
        });
        let mut c = dial(addr);
        let mut b = [0u8; 1];
        for _ in 0..300 {
            c.write_all(&b).unwrap();
            c.read_exact(&mut b).unwrap();
        }
        drop(c);
        join(server);
    });
}

/// TestReadWriteDeadlineRace: one goroutine keeps setting 2 µs timeouts while
/// another reads and a third writes (200 each, Go 1000). Nobody writes to this
/// connection, so every read must time out; every write has buffer room, so
/// every write must succeed. The timeouts are set once before the readers
/// start (module docs).
#[test]
fn read_write_deadline_race() {
    go_test(|| {
        const N: usize = 200;
        let l = listen();
        let c = Arc::new(dial(l.local_addr().unwrap()));
        c.set_read_timeout(Some(2 * US)).unwrap();
        c.set_write_timeout(Some(2 * US)).unwrap();
        let setter = {
            let c = c.clone();
            go!(move || {
                let tick = Ticker::new(2 * US);
                for _ in 0..N {
                    c.set_read_timeout(Some(2 * US)).unwrap();
                    c.set_write_timeout(Some(2 * US)).unwrap();
                    tick.receiver().recv().unwrap();
                }
            })
        };
        let reader = {
            let c = c.clone();
            go!(move || {
                (0..N)
                    .filter(|_| matches!((&*c).read(&mut [0u8; 1]), Err(ref e) if e.kind() == ErrorKind::TimedOut))
                    .count()
            })
        };
        let writer = go!(move || (0..N).filter(|_| matches!((&*c).write(&[0u8]), Ok(1))).count());
        assert_eq!(join(reader), N, "reads of an idle connection that timed out");
        assert_eq!(join(writer), N, "1-byte writes with buffer room that succeeded");
        join(setter);
        drop(l);
    });
}

/// TestConcurrentSetDeadline: 8 goroutines set the timeouts of 10 connections
/// 100 times each, steadily shorter; each connection ends with one of the last
/// values set.
#[test]
fn concurrent_set_deadline() {
    go_test(|| {
        const GOROUTINES: usize = 8;
        const CONNS: usize = 10;
        const TRIES: usize = 100;
        let l = listen();
        let addr = l.local_addr().unwrap();
        let conns: Arc<Vec<TcpStream>> = Arc::new((0..CONNS).map(|_| dial(addr)).collect());
        let secs = |i: usize, j: usize, k: usize| Duration::from_secs((i * j * k) as u64);
        let setters: Vec<_> = (0..GOROUTINES)
            .map(|i| {
                let conns = conns.clone();
                go!(move || {
                    for j in (1..=TRIES).rev() {
                        for (k, c) in conns.iter().enumerate() {
                            c.set_read_timeout(Some(2 * HOUR + secs(i, j, k))).unwrap();
                            c.set_write_timeout(Some(HOUR + secs(i, j, k))).unwrap();
                        }
                    }
                })
            })
            .collect();
        for h in setters {
            join(h);
        }
        for (k, c) in conns.iter().enumerate() {
            // Each goroutine's last value for connection k is `base + i*k` s.
            let last = |base: Duration| (0..GOROUTINES).map(move |i| base + secs(i, 1, k)).collect::<Vec<_>>();
            let r = c.read_timeout().unwrap().expect("read timeout");
            let w = c.write_timeout().unwrap().expect("write timeout");
            assert!(last(2 * HOUR).contains(&r), "conn {k}: read timeout {r:?}");
            assert!(last(HOUR).contains(&w), "conn {k}: write timeout {w:?}");
        }
        drop(l);
    });
}

/// TestDialTimeoutMaxDuration: a connect timeout too large for the clock
/// (Go's 1<<63-1 ns, and `Duration::MAX`) is no timeout, not an instant one.
/// Extended to read timeouts: a read with such a timeout waits for its data.
#[test]
fn dial_timeout_max_duration() {
    go_test(|| {
        let l = listen();
        let addr = l.local_addr().unwrap();
        for timeout in [Duration::from_nanos(i64::MAX as u64), Duration::MAX] {
            let start = Instant::now();
            let c = TcpStream::connect_timeout(&addr, timeout).unwrap();
            assert!(start.elapsed() < LATE, "connect took {:?}", start.elapsed());
            let (mut s, _) = l.accept().unwrap();
            c.set_read_timeout(Some(timeout)).unwrap();
            let (tx, rx) = chan::bounded(1);
            let reader = go!(move || {
                let mut b = [0u8; 4];
                let r = (&c).read(&mut b).map(|n| b[..n].to_vec());
                let _ = tx.send(r);
            });
            let reader = check_still_blocked("a read with a huge timeout", &rx, reader);
            s.write_all(b"late").unwrap();
            let r = rx
                .recv_timeout(LATE)
                .expect("the read did not return when data arrived");
            assert_eq!(r.unwrap(), b"late");
            join(reader);
        }
    });
}

/// TestAcceptTimeoutMustNotReturn: an accept without a timeout keeps waiting;
/// the port then dials, and the accept must return that connection.
#[test]
fn accept_timeout_must_not_return() {
    go_test(|| {
        let l = listen();
        let addr = l.local_addr().unwrap();
        let (tx, rx) = chan::bounded(1);
        let acceptor = go!(move || {
            let _ = tx.send(l.accept().map(|(_, peer)| peer));
        });
        let acceptor = check_still_blocked("an accept", &rx, acceptor);
        let c = dial(addr);
        let peer = rx.recv_timeout(LATE).expect("accept did not return after a dial");
        assert_eq!(peer.unwrap(), c.local_addr().unwrap());
        join(acceptor);
    });
}

// ---------------------------------------------------------------------------
// net_test.go

/// TestCloseRead: after `shutdown(Read)` a read returns end of file (Go: 0 and
/// an error, `io.EOF`).
#[test]
fn close_read() {
    go_test(|| {
        let (mut c, _s) = conn_pair();
        c.shutdown(Shutdown::Read).unwrap();
        assert_eq!(c.read(&mut [0u8; 1]).unwrap(), 0);
    });
}

/// TestCloseWrite: each side's `shutdown(Write)` is end of file for the other,
/// and a write after it fails (EPIPE). Extended: after the client's half-close
/// the server still sends a reply, which the client reads.
#[test]
fn close_write() {
    go_test(|| {
        let l = listen();
        let addr = l.local_addr().unwrap();
        let server = go!(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut b = [0u8; 1];
            assert_eq!(
                s.read(&mut b).unwrap(),
                0,
                "the client's shutdown(Write) is end of file"
            );
            s.write_all(b"still here").unwrap();
            s.shutdown(Shutdown::Write).unwrap();
            let e = s.write(&b).unwrap_err();
            assert_eq!(
                e.kind(),
                ErrorKind::BrokenPipe,
                "server write after shutdown(Write): {e}"
            );
        });
        let mut c = dial(addr);
        c.shutdown(Shutdown::Write).unwrap();
        let mut reply = Vec::new();
        c.read_to_end(&mut reply).unwrap();
        assert_eq!(reply, b"still here");
        let e = c.write(&[0u8]).unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::BrokenPipe,
            "client write after shutdown(Write): {e}"
        );
        join(server);
    });
}

/// TestListenerClose. A dropped listener cannot be used in Rust, so this checks
/// what the drop does outside: a connection the kernel completed but nobody
/// accepted is reset. (Go's test notes that a later dial to the address proves
/// nothing, as the port may be reused; so does this one.)
#[test]
fn listener_close() {
    go_test(|| {
        let l = listen();
        let mut c = dial(l.local_addr().unwrap());
        drop(l);
        c.set_read_timeout(Some(LATE)).unwrap();
        let e = c.read(&mut [0u8; 1]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");
    });
}

/// TestReadTimeoutUnblocksRead, adapted. Go interrupts a Read already waiting by
/// moving its deadline into the past; goro's timeouts, like std's, bound a call
/// from its start and do not reach a read already parked (module docs). goro's
/// way to interrupt it, documented on `TcpStream::shutdown`, is `shutdown(Read)`
/// on the same socket from another goroutine: the read returns end of file.
#[test]
fn read_timeout_unblocks_read() {
    go_test(|| {
        let (c, _s) = conn_pair();
        let c = Arc::new(c);
        let (tx, rx) = chan::bounded(1);
        let reader = {
            let c = c.clone();
            go!(move || {
                let _ = tx.send((&*c).read(&mut [0u8; 1]));
            })
        };
        sleep(20 * MS); // lets the reader park first: widens the window only
        c.shutdown(Shutdown::Read).unwrap();
        let r = rx
            .recv_timeout(LATE)
            .expect("shutdown(Read) did not wake the parked read");
        assert_eq!(r.unwrap(), 0);
        join(reader);
    });
}

/// TestCloseUnblocksRead: a read parked on a connection whose peer closes
/// returns end of file.
#[test]
fn close_unblocks_read() {
    go_test(|| {
        let (mut c, s) = conn_pair();
        let reader = go!(move || c.read(&mut [0u8; 1]));
        sleep(20 * MS); // lets the reader park first: widens the window only
        drop(s);
        assert_eq!(join(reader).unwrap(), 0);
    });
}

/// TestNotTemporaryRead: when the peer resets the connection (`SetLinger(0)`
/// and close), a read fails (ConnectionReset) rather than reporting end of
/// file. Extended: a write afterwards fails too, without a panic or a signal.
#[test]
fn not_temporary_read() {
    go_test(|| {
        let l = listen();
        let addr = l.local_addr().unwrap();
        let (dialed_tx, dialed_rx) = chan::bounded::<()>(0);
        let server = go!(move || {
            let (s, _) = l.accept().unwrap();
            let _ = dialed_rx.recv();
            common::reset_on_close(&s);
            drop(s);
        });
        let mut c = dial(addr);
        drop(dialed_tx);
        let e = c.read(&mut [0u8; 1]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");
        let e = c.write(b"after the reset").unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset),
            "write after a reset: {e}"
        );
        join(server);
    });
}

/// TestZeroByteRead: a read into an empty buffer returns 0 at once, on either
/// side of a connection with nothing to read (Go's `fd.Read` returns `0, nil`
/// for an empty buffer without a system call).
#[test]
fn zero_byte_read() {
    go_test(|| {
        let (c, s) = conn_pair();
        let (c, s) = (Arc::new(c), Arc::new(s));
        for (side, reader, peer) in [("client", c.clone(), s.clone()), ("server", s, c)] {
            let (tx, rx) = chan::bounded(1);
            let h = go!(move || {
                let _ = tx.send((&*reader).read(&mut []));
            });
            match rx.recv_timeout(Duration::from_secs(2)) {
                Ok(r) => assert_eq!(r.unwrap(), 0, "{side}"),
                Err(_) => {
                    (&*peer).write_all(b"x").unwrap(); // unblock it, so the test ends
                    let late = rx.recv_timeout(LATE);
                    join(h);
                    panic!("{side}: a zero-byte read waited for data; it returned {late:?} once a byte came");
                }
            }
            join(h);
        }
    });
}

// ---------------------------------------------------------------------------
// tcpsock_test.go, tcpsock_unix_test.go, conn_test.go

/// TestTCPStress: echo traffic on concurrent connections, served through
/// `incoming()`; every echoed message is checked byte for byte. 8 connections
/// of 300 messages of 512 bytes (Go: 2 of 10,000).
#[test]
fn tcp_stress() {
    go_test(|| {
        const CONNS: usize = 8;
        const MSGS: usize = 300;
        const LEN: usize = 512;
        let l = listen();
        let addr = l.local_addr().unwrap();
        let acceptor = go!(move || {
            let servers: Vec<_> = l
                .incoming()
                .take(CONNS)
                .map(|c| {
                    let mut c = c.unwrap();
                    go!(move || {
                        let mut buf = [0u8; LEN];
                        for _ in 0..MSGS {
                            c.read_exact(&mut buf).unwrap();
                            c.write_all(&buf).unwrap();
                        }
                    })
                })
                .collect();
            for h in servers {
                join(h);
            }
        });
        let clients: Vec<_> = (0..CONNS)
            .map(|i| {
                go!(move || {
                    let mut c = dial(addr);
                    let (mut out, mut back) = ([0u8; LEN], [0u8; LEN]);
                    for m in 0..MSGS {
                        fill_pattern(i * 7919 + m * 13, &mut out);
                        c.write_all(&out).unwrap();
                        c.read_exact(&mut back).unwrap();
                        assert!(out == back, "conn {i}, message {m}: the echo differs");
                    }
                })
            })
            .collect();
        for h in clients {
            join(h);
        }
        join(acceptor);
    });
}

/// TestTCPBig: one write of a big buffer (16 MiB + 1, Go 5 GiB + 1 MiB), plain
/// and vectored (Go's `Buffers.WriteTo`; here three slices written with
/// `write_vectored` until all is out), read back with one `read_exact` and
/// checked byte for byte, then end of file.
#[test]
fn tcp_big() {
    go_test(|| {
        const X: usize = (16 << 20) + 1;
        for writev in [false, true] {
            let l = listen();
            let addr = l.local_addr().unwrap();
            let server = go!(move || {
                let (mut c, _) = l.accept().unwrap();
                let mut buf = vec![0u8; X];
                fill_pattern(0, &mut buf);
                if writev {
                    let (a, rest) = buf.split_at(X / 3);
                    let (b, z) = rest.split_at(X / 3);
                    let mut slices = [IoSlice::new(a), IoSlice::new(b), IoSlice::new(z)];
                    let mut bufs = &mut slices[..];
                    let mut total = 0;
                    while !bufs.is_empty() {
                        let n = c.write_vectored(bufs).unwrap();
                        assert!(n > 0, "write_vectored wrote nothing");
                        total += n;
                        IoSlice::advance_slices(&mut bufs, n);
                    }
                    assert_eq!(total, X);
                } else {
                    c.write_all(&buf).unwrap();
                }
            });
            let mut c = dial(addr);
            let mut buf = vec![0u8; X];
            c.read_exact(&mut buf).unwrap();
            assert!(pattern_ok(0, &buf), "writev={writev}: the data differs");
            assert_eq!(c.read(&mut [0u8; 1]).unwrap(), 0, "writev={writev}: end of file");
            join(server);
        }
    });
}

/// TestTCPConcurrentAccept: 10 goroutines accept on one listener while 100
/// dials (200 ms timeout each) come in; at most a ninth may fail, and every
/// connection that was made is accepted. Go then closes the listener to stop
/// the acceptors; here it is shut down, which must wake all ten.
#[test]
fn tcp_concurrent_accept() {
    go_test(|| {
        const N: usize = 10;
        const ATTEMPTS: usize = 10 * N;
        let l = Arc::new(listen());
        let addr = l.local_addr().unwrap();
        let (accepted_tx, accepted_rx) = chan::bounded::<()>(ATTEMPTS);
        let acceptors: Vec<_> = (0..N)
            .map(|_| {
                let (l, accepted) = (l.clone(), accepted_tx.clone());
                go!(move || {
                    while let Ok((c, _)) = l.accept() {
                        drop(c);
                        accepted.send(()).unwrap();
                    }
                })
            })
            .collect();
        let mut fails = 0;
        for _ in 0..ATTEMPTS {
            match TcpStream::connect_timeout(&addr, 200 * MS) {
                Ok(c) => drop(c),
                Err(_) => fails += 1,
            }
        }
        assert!(fails <= ATTEMPTS / 9, "too many dials failed: {fails} of {ATTEMPTS}");
        for i in 0..ATTEMPTS - fails {
            accepted_rx
                .recv_timeout(LATE)
                .unwrap_or_else(|e| panic!("{i} of {} connections accepted: {e}", ATTEMPTS - fails));
        }
        shutdown_listener(&l);
        for h in acceptors {
            join(h);
        }
    });
}

/// TestTCPSelfConnect: dialing, over and over, a local address where nothing
/// listens (the local address of a closed connection) must always fail. On
/// Linux a connect can pick that very address as its source port and connect
/// the socket to itself (TCP simultaneous open); Go's `Dial` detects this
/// (`selfConnect`) and retries. Go's scale: 100,000 dials.
#[test]
fn tcp_self_connect() {
    go_test(|| {
        let l = listen();
        let c = dial(l.local_addr().unwrap());
        let laddr = c.local_addr().unwrap();
        drop(c);
        drop(l);
        for i in 0..100_000 {
            if let Ok(c) = TcpStream::connect(laddr) {
                let local = c.local_addr().unwrap();
                let peer = c.peer_addr().unwrap();
                // Another test's socket may take the port meanwhile (Go logs
                // that); a socket connected to itself is the bug.
                assert_ne!(local, peer, "dial {i} to {laddr}: the socket is connected to itself");
            }
        }
    });
}

/// TestTCPSpuriousConnSetupCompletion: many dials in flight at once (500, Go
/// 10,000; at most GOMAXPROCS*2 at a time) against a server that reads a byte
/// and closes; a dial that succeeds must be a connected socket, whose first
/// write succeeds (never ENOTCONN).
#[test]
fn tcp_spurious_conn_setup_completion() {
    go_test(|| {
        const ATTEMPTS: usize = 500;
        let l = Arc::new(listen());
        let addr = l.local_addr().unwrap();
        let server = {
            let l = l.clone();
            go!(move || {
                let mut conns = Vec::new();
                for c in l.incoming() {
                    let Ok(mut c) = c else { break };
                    conns.push(go!(move || {
                        let _ = c.read(&mut [0u8; 1]);
                    }));
                }
                for h in conns {
                    join(h);
                }
            })
        };
        let (throttle_tx, throttle_rx) = chan::bounded::<()>(PROCS * 2);
        let dialers: Vec<_> = (0..ATTEMPTS)
            .map(|i| {
                throttle_tx.send(()).unwrap();
                let throttle = throttle_rx.clone();
                go!(move || {
                    // Go allows dial errors; a made connection must be usable.
                    let wrote = TcpStream::connect_timeout(&addr, LATE).map(|mut c| c.write(&[0u8]));
                    throttle.recv().unwrap();
                    if let Ok(Err(e)) = wrote {
                        panic!("dial {i}: first write: {e}");
                    }
                })
            })
            .collect();
        for h in dialers {
            join(h);
        }
        shutdown_listener(&l);
        join(server);
    });
}

/// TestConnAndListener (with mockserver's `transponder`): a dial and an accept
/// see each other's addresses; with timeouts set, a message is echoed.
#[test]
fn conn_and_listener() {
    go_test(|| {
        const MSG: &[u8] = b"CONN AND LISTENER TEST";
        let l = listen();
        let laddr = l.local_addr().unwrap();
        let server = go!(move || {
            let (mut s, peer) = l.accept().unwrap();
            assert_eq!(s.local_addr().unwrap(), laddr);
            assert_eq!(s.peer_addr().unwrap(), peer);
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut b = [0u8; MSG.len()];
            s.read_exact(&mut b).unwrap();
            s.write_all(&b).unwrap();
            peer
        });
        let mut c = dial(laddr);
        assert_eq!(c.peer_addr().unwrap(), laddr);
        assert!(c.local_addr().unwrap().ip().is_loopback());
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(MSG).unwrap();
        let mut back = [0u8; MSG.len()];
        c.read_exact(&mut back).unwrap();
        assert_eq!(&back, MSG);
        assert_eq!(join(server), c.local_addr().unwrap(), "accept's peer is the dialer");
    });
}

/// TestTCPListenerName: a listener bound to port 0 reports its real port.
#[test]
fn tcp_listener_name() {
    go_test(|| {
        let a = listen().local_addr().unwrap();
        assert!(a.port() != 0 && a.ip().is_loopback(), "{a}");
    });
}

// ---------------------------------------------------------------------------
// udpsock_test.go

/// TestWriteToUDP. Connected: `send` works; Go refuses `WriteTo` on a
/// connected socket (`ErrWriteToConnected`), while goro, like std and the
/// kernel, sends to the address given (a translation, checked as such).
/// Unconnected: `send_to` works and `send` (no peer) fails. The receiver gets
/// every datagram from its sender.
#[test]
fn write_to_udp() {
    go_test(|| {
        const B: &[u8] = b"CONNECTED-MODE SOCKET";
        const U: &[u8] = b"UNCONNECTED-MODE SOCKET";
        let c = packet_conn();
        let raddr = c.local_addr().unwrap();

        let conn = packet_conn();
        conn.connect(raddr).unwrap();
        assert_eq!(conn.send(B).unwrap(), B.len());
        assert_eq!(conn.send_to(B, raddr).unwrap(), B.len());

        let pc = packet_conn();
        assert_eq!(pc.send_to(U, raddr).unwrap(), U.len());
        assert_eq!(pc.send_to(U, raddr).unwrap(), U.len());
        assert!(pc.send(U).is_err(), "send without a peer must fail");

        let (conn_addr, pc_addr) = (conn.local_addr().unwrap(), pc.local_addr().unwrap());
        let mut want = vec![
            (B.to_vec(), conn_addr),
            (B.to_vec(), conn_addr),
            (U.to_vec(), pc_addr),
            (U.to_vec(), pc_addr),
        ];
        c.set_read_timeout(Some(LATE)).unwrap();
        let mut got: Vec<_> = (0..want.len())
            .map(|_| {
                let mut buf = [0u8; 64];
                let (n, from) = c.recv_from(&mut buf).unwrap();
                (buf[..n].to_vec(), from)
            })
            .collect();
        got.sort();
        want.sort();
        assert_eq!(got, want);
    });
}

/// TestUDPConnLocalName: a UDP socket bound to port 0 reports its real port.
#[test]
fn udp_conn_local_name() {
    go_test(|| {
        let a = packet_conn().local_addr().unwrap();
        assert!(a.port() != 0 && a.ip().is_loopback(), "{a}");
    });
}

/// TestUDPConnLocalAndRemoteNames: an unconnected socket has no peer
/// (`NotConnected`); a connected one has its local port and its peer.
#[test]
fn udp_conn_local_and_remote_names() {
    go_test(|| {
        let c1 = packet_conn();
        let c2 = packet_conn();
        c2.connect(c1.local_addr().unwrap()).unwrap();
        assert_ne!(c1.local_addr().unwrap().port(), 0);
        assert_eq!(c1.peer_addr().unwrap_err().kind(), ErrorKind::NotConnected);
        assert_ne!(c2.local_addr().unwrap().port(), 0);
        assert_eq!(c2.peer_addr().unwrap(), c1.local_addr().unwrap());
    });
}

/// TestUDPZeroBytePayload: an empty datagram is sent (0 bytes) and received as
/// one, by `recv_from` and by the generic `recv`.
#[test]
fn udp_zero_byte_payload() {
    go_test(|| {
        let c = packet_conn();
        let me = c.local_addr().unwrap();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        for generic_read in [false, true] {
            assert_eq!(c.send_to(&[], me).unwrap(), 0);
            let mut b = [0u8; 1];
            if generic_read {
                assert_eq!(c.recv(&mut b).unwrap(), 0, "recv of an empty datagram");
            } else {
                assert_eq!(c.recv_from(&mut b).unwrap(), (0, me), "recv_from of an empty datagram");
            }
        }
    });
}

/// TestUDPZeroByteBuffer: receiving a datagram into an empty buffer succeeds
/// with 0 bytes (Go also accepts a timeout, which some platforms give; Linux
/// and std return the datagram, cut to nothing). The datagram is consumed.
#[test]
fn udp_zero_byte_buffer() {
    go_test(|| {
        const B: &[u8] = b"UDP ZERO BYTE BUFFER TEST";
        let c = packet_conn();
        let me = c.local_addr().unwrap();
        c.set_read_timeout(Some(LATE)).unwrap();
        for generic_read in [false, true] {
            assert_eq!(c.send_to(B, me).unwrap(), B.len());
            if generic_read {
                assert_eq!(c.recv(&mut []).unwrap(), 0);
            } else {
                assert_eq!(c.recv_from(&mut []).unwrap(), (0, me));
            }
        }
        c.set_read_timeout(Some(10 * MS)).unwrap();
        check_timeout("a recv after both datagrams", 10 * MS, || c.recv_from(&mut [0u8; 64]));
    });
}

/// TestUDPReadSizeError: a datagram longer than the buffer is cut to the
/// buffer, without an error (std's rule, as Go on Linux).
#[test]
fn udp_read_size_error() {
    go_test(|| {
        const B1: &[u8] = b"READ SIZE ERROR TEST";
        let c1 = packet_conn();
        let c2 = packet_conn();
        c2.connect(c1.local_addr().unwrap()).unwrap();
        c1.set_read_timeout(Some(LATE)).unwrap();
        for generic_read in [false, true] {
            assert_eq!(c2.send(B1).unwrap(), B1.len());
            let mut b2 = [0u8; B1.len() - 1];
            let n = if generic_read {
                c1.recv(&mut b2).unwrap()
            } else {
                let (n, from) = c1.recv_from(&mut b2).unwrap();
                assert_eq!(from, c2.local_addr().unwrap());
                n
            };
            assert_eq!(n, B1.len() - 1);
            assert_eq!(&b2[..], &B1[..B1.len() - 1]);
        }
    });
}

/// TestUDPReadTimeout: a receive that times out (Go's deadline "now" is the
/// smallest timeout here) fails with `TimedOut` and no data.
#[test]
fn udp_read_timeout() {
    go_test(|| {
        let c = packet_conn();
        c.set_read_timeout(Some(NS)).unwrap();
        check_timeout("a 1 ns recv_from", NS, || c.recv_from(&mut [0u8; 1]));
    });
}

// ---------------------------------------------------------------------------
// goro's own contract (API.md), no Go counterpart

/// `try_clone`, `set_nodelay` and the address getters. Socket options belong to
/// the socket, so a clone sees `nodelay`; timeouts belong to the handle (goro
/// documents that a clone starts without them). A clone writes in one goroutine
/// while the other side reads in another, and the original keeps working after
/// the clone is dropped (a duplicated descriptor, not a second connection).
#[test]
fn tcp_clone_and_options() {
    go_test(|| {
        let l = listen();
        let laddr = l.local_addr().unwrap();
        let c = dial(laddr);
        let (mut s, peer) = l.accept().unwrap();
        assert_eq!(peer, c.local_addr().unwrap());
        assert_eq!(c.peer_addr().unwrap(), laddr);
        assert_eq!(s.local_addr().unwrap(), laddr);
        assert_eq!(s.peer_addr().unwrap(), peer);

        assert!(
            !c.nodelay().unwrap(),
            "Nagle stays on by default (std's default, not Go's)"
        );
        c.set_nodelay(true).unwrap();
        assert!(c.nodelay().unwrap());
        c.set_read_timeout(Some(LATE)).unwrap();
        c.set_write_timeout(Some(LATE)).unwrap();

        let clone = c.try_clone().unwrap();
        assert!(clone.nodelay().unwrap(), "the clone shares the socket's options");
        assert_eq!(
            clone.read_timeout().unwrap(),
            None,
            "the clone starts without a read timeout"
        );
        assert_eq!(
            clone.write_timeout().unwrap(),
            None,
            "the clone starts without a write timeout"
        );
        assert_eq!(clone.local_addr().unwrap(), c.local_addr().unwrap());
        assert_eq!(clone.peer_addr().unwrap(), laddr);
        assert_eq!(c.read_timeout().unwrap(), Some(LATE), "the original keeps its timeouts");

        let writer = go!(move || {
            let mut w = clone;
            for i in 0..1000u32 {
                w.write_all(&i.to_le_bytes()).unwrap();
            }
        });
        let mut b = [0u8; 4];
        for i in 0..1000u32 {
            s.read_exact(&mut b).unwrap();
            assert_eq!(u32::from_le_bytes(b), i);
        }
        join(writer); // the clone is dropped: the connection stays open
        (&c).write_all(b"end").unwrap();
        let mut end = [0u8; 3];
        s.read_exact(&mut end).unwrap();
        assert_eq!(&end, b"end");
        s.write_all(b"back").unwrap();
        let mut back = [0u8; 4];
        (&c).read_exact(&mut back).unwrap();
        assert_eq!(&back, b"back");
    });
}

/// API.md: every blocking call also works on a plain OS thread, blocking it.
/// The test thread (a plain thread) is the client of a goroutine server: echo
/// round trips, a read timeout, a half-close answered by the server; then it
/// waits in `recv_from` for a datagram a goroutine sends.
#[test]
fn plain_thread_client_goroutine_server() {
    let _running = running();
    assert!(goro::current().is_none(), "the test thread is not a goroutine");
    let l = listen();
    let addr = l.local_addr().unwrap();
    let server = go!(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = [0u8; 4096];
        let mut total = 0;
        loop {
            match s.read(&mut buf).unwrap() {
                0 => break,
                n => {
                    s.write_all(&buf[..n]).unwrap();
                    total += n;
                }
            }
        }
        s.write_all(b"bye").unwrap();
        total
    });
    let mut c = dial(addr);
    for i in 0..200u32 {
        c.write_all(&i.to_le_bytes()).unwrap();
        let mut b = [0u8; 4];
        c.read_exact(&mut b).unwrap();
        assert_eq!(u32::from_le_bytes(b), i);
    }
    let d = 30 * MS;
    c.set_read_timeout(Some(d)).unwrap();
    check_timeout("a read on a plain thread", d, || c.read(&mut [0u8; 8]));
    c.set_read_timeout(None).unwrap();
    c.shutdown(Shutdown::Write).unwrap();
    let mut bye = Vec::new();
    c.read_to_end(&mut bye).unwrap();
    assert_eq!(bye, b"bye");
    assert_eq!(join(server), 800);

    let u = packet_conn();
    let uaddr = u.local_addr().unwrap();
    let sender = go!(move || {
        let s = packet_conn();
        s.send_to(b"to a thread", uaddr).unwrap();
        s.local_addr().unwrap()
    });
    let mut b = [0u8; 32];
    let (n, from) = u.recv_from(&mut b).unwrap();
    assert_eq!(&b[..n], b"to a thread");
    assert_eq!(from, join(sender));
}

/// The other way round: a plain thread serves goroutine clients one after the
/// other, blocking in `accept`, and sends each 2 MiB, more than the socket
/// buffers hold at first, so its writes block until the goroutine reads.
#[test]
fn plain_thread_server_goroutine_clients() {
    let _running = running();
    const CLIENTS: usize = 4;
    const BIG: usize = 2 << 20;
    let l = listen();
    let addr = l.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        assert!(goro::current().is_none());
        for _ in 0..CLIENTS {
            let (mut s, _) = l.accept().unwrap();
            let mut id = [0u8; 1];
            s.read_exact(&mut id).unwrap();
            let mut big = vec![0u8; BIG];
            fill_pattern(usize::from(id[0]), &mut big);
            s.write_all(&big).unwrap();
        }
    });
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            go!(move || {
                let mut c = dial(addr);
                c.write_all(&[i as u8]).unwrap();
                let mut got = Vec::new();
                c.read_to_end(&mut got).unwrap();
                assert_eq!(got.len(), BIG, "client {i}");
                assert!(pattern_ok(i, &got), "client {i}: the data differs");
            })
        })
        .collect();
    for h in clients {
        join(h);
    }
    server.join().unwrap();
}

/// A zero-byte write succeeds with 0 and sends nothing (Go: `Write(nil)` is
/// `0, nil`).
#[test]
fn zero_byte_write() {
    go_test(|| {
        let (mut c, s) = conn_pair();
        assert_eq!(c.write(&[]).unwrap(), 0);
        s.set_read_timeout(Some(20 * MS)).unwrap();
        check_timeout("a read after a zero-byte write", 20 * MS, || (&s).read(&mut [0u8; 1]));
    });
}

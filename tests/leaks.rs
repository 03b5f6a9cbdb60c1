//! No leaks of what `scripts/leak_check.sh` cannot see, because it is not
//! malloc'd: goroutine stacks (mmap'd slabs) and file descriptors.
//!
//! Stacks: after a warm-up round of goroutines alive at once, more rounds of
//! the same size (Gs that return, panic, are detached, or park on a channel, a
//! timer or a `select!` with a timer arm before they are woken) map no new
//! stack memory: every stack went back to the pool. Measured as the bytes of
//! goro's stack slabs in /proc/self/smaps (no public counter exists).
//!
//! Descriptors: /proc/self/fd is back to its count after TCP and UDP traffic
//! that ends every way a socket can end (closed by either side, reset, read and
//! connect timeouts, refused, dropped while a goroutine is parked reading it,
//! dropped by a goroutine's panic). `src/net/tcp.rs` checks the plain
//! connect/accept/drop case.
//!
//! GOMAXPROCS=1, and the stack rounds run inside a goroutine: with one P, the
//! M that runs a finishing G puts its stack back before the P runs the G that
//! joins it, so the counts are exact. The two tests take turns (`SERIAL`): each
//! would disturb the other's count.

mod common;

use goro::chan;
use goro::net::{TcpListener, TcpStream, UdpSocket};
use goro::sync::WaitGroup;
use std::io::{ErrorKind, Read, Write};
use std::panic::resume_unwind;
use std::sync::Mutex;
use std::time::Duration;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Bytes mapped for goroutine stacks: anonymous read-write mappings that are
/// both `MAP_NORESERVE` (`nr`) and `MADV_NOHUGEPAGE` (`nh`), which is how
/// `src/runtime/stack.rs` maps its slabs and nothing else in this process maps
/// memory (glibc's malloc arenas are not `nh`, thread stacks not `nr`).
fn stack_slab_bytes() -> usize {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut total = 0;
    let mut candidate = 0;
    for line in smaps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let Some(flags) = line.strip_prefix("VmFlags:") {
            let flags: Vec<&str> = flags.split_whitespace().collect();
            if flags.contains(&"nr") && flags.contains(&"nh") {
                total += candidate;
            }
            candidate = 0;
        } else if fields.len() == 5 && fields[0].contains('-') && fields[1].starts_with("rw") {
            // A mapping's header with no path: `start-end perms offset dev inode`.
            let (lo, hi) = fields[0].split_once('-').unwrap();
            let lo = usize::from_str_radix(lo, 16).unwrap();
            let hi = usize::from_str_radix(hi, 16).unwrap();
            candidate = hi - lo;
        } else if fields.len() >= 5 && fields[0].contains('-') && fields[1].len() == 4 {
            candidate = 0; // a header of another kind of mapping
        }
    }
    total
}

/// One round: `n` goroutines with stacks of `stack_size` bytes, all alive at
/// once (parked on a gate), then each ends one of five ways.
fn round(n: usize, stack_size: usize) {
    let started = WaitGroup::new();
    started.add(n);
    let (gate_tx, gate) = chan::bounded::<()>(0);
    let (work_tx, work) = chan::bounded::<usize>(0);
    let (detached_tx, detached) = chan::bounded::<usize>(n);
    let mut handles = Vec::new();
    for i in 0..n {
        let (started, gate, work, detached_tx) = (started.clone(), gate.clone(), work.clone(), detached_tx.clone());
        let h = goro::go!(goro::Builder::new().stack_size(stack_size), move || {
            started.done();
            assert!(gate.recv().is_err(), "the gate only closes");
            match i % 5 {
                0 => {
                    detached_tx.send(i).unwrap();
                    i
                }
                // resume_unwind: a panic without the message on stderr.
                1 => resume_unwind(Box::new(i)),
                2 => {
                    assert_eq!(work.recv().unwrap() % 5, 2);
                    i
                }
                3 => {
                    goro::time::sleep(Duration::from_millis(1));
                    i
                }
                _ => goro::select! {
                    recv(chan::never::<usize>()) -> _ => unreachable!(),
                    recv(goro::time::after(Duration::from_millis(1))) -> _ => i,
                },
            }
        });
        let h = h.unwrap();
        if i % 5 == 0 {
            drop(h);
        } else {
            handles.push((i, h));
        }
    }
    drop(detached_tx);
    started.wait(); // all n are alive now, each on its own stack
    drop(gate_tx);
    for i in (0..n).filter(|i| i % 5 == 2) {
        work_tx.send(i).unwrap();
    }
    for (i, h) in handles {
        match h.join() {
            Ok(v) => assert_eq!(v, i),
            Err(p) => assert_eq!((i % 5, p.downcast_ref::<usize>()), (1, Some(&i))),
        }
    }
    assert_eq!(detached.iter().count(), n.div_ceil(5));
}

/// Rounds of `n` goroutines: after the first, the stack memory does not grow.
fn stacks_are_reused(n: usize, stack_size: usize, rounds: usize) {
    round(n, stack_size);
    let warm = stack_slab_bytes();
    assert!(
        warm >= n * stack_size,
        "{n} stacks of {stack_size} bytes alive at once, but only {warm} bytes of stack slabs found"
    );
    for r in 1..=rounds {
        round(n, stack_size);
        let now = stack_slab_bytes();
        assert_eq!(
            now,
            warm,
            "round {r} of {n} goroutines mapped {} more bytes of stacks: some stack was not returned",
            now.saturating_sub(warm)
        );
    }
}

#[test]
fn stacks_go_back_to_the_pool() {
    let _serial = serial();
    common::init_procs(1);
    let _w = common::watchdog(Duration::from_secs(60));
    goro::go!(|| {
        // 64 MiB stacks get a slab each, through the global pool: one stack kept
        // back in any round shows as 64 MiB more.
        stacks_are_reused(10, 64 << 20, 10);
        // Default-size stacks, through the P's cache (CACHE_MAX 64, batches of
        // 16), from 248-stack slabs: 600 at once need three slabs, and a fifth of
        // them kept back per round would need a fourth by the second round.
        stacks_are_reused(600, 256 << 10, 4);
    })
    .join()
    .unwrap();
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Connections to one listener, one goroutine per side, ended each way in turn.
fn tcp_endings(conns: usize) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let l2 = l.try_clone().unwrap();
    let server = goro::go!(move || {
        let mut served = Vec::new();
        for k in 0..conns {
            let listener = if k % 2 == 0 { &l } else { &l2 };
            let (mut s, _) = listener.accept().unwrap();
            served.push(goro::go!(move || {
                let mut b = [0u8; 1];
                s.read_exact(&mut b).unwrap();
                match b[0] {
                    // Echo, then read until the client closes (FIN).
                    0 => {
                        s.write_all(&b).unwrap();
                        assert_eq!(s.read(&mut b).unwrap(), 0);
                    }
                    // The server closes first; the client reads end of file.
                    1 => drop(s),
                    // The client resets (once it has our reply): the parked read fails.
                    2 => {
                        s.write_all(&b).unwrap();
                        assert_eq!(s.read(&mut b).unwrap_err().kind(), ErrorKind::ConnectionReset);
                    }
                    // The server times out on a silent client.
                    3 => {
                        s.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
                        assert_eq!(s.read(&mut b).unwrap_err().kind(), ErrorKind::TimedOut);
                    }
                    // The server panics holding the socket (and a clone of it).
                    _ => {
                        let _clone = s.try_clone().unwrap();
                        resume_unwind(Box::new("server panic"));
                    }
                }
            }));
        }
        served
            .into_iter()
            .map(goro::JoinHandle::join)
            .filter(Result::is_err)
            .count()
    });
    let clients: Vec<_> = (0..conns)
        .map(|k| {
            goro::go!(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                let kind = (k % 5) as u8;
                s.write_all(&[kind]).unwrap();
                let mut b = [0u8; 1];
                match kind {
                    0 => s.read_exact(&mut b).unwrap(),
                    2 => {
                        s.read_exact(&mut b).unwrap();
                        common::reset_on_close(&s);
                    }
                    3 => {
                        // Silent until the server gives up and closes.
                        assert_eq!(s.read(&mut b).unwrap(), 0);
                    }
                    _ => {
                        // The server closed or panicked: end of file (or a reset).
                        let _ = s.read(&mut b);
                    }
                }
            })
        })
        .collect();
    clients.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(
        server.join().unwrap(),
        conns / 5,
        "each fifth server goroutine panicked"
    );
}

/// A goroutine parked reading a socket whose handle was dropped: the peer's
/// close wakes it, it returns, and its socket closes.
fn dropped_while_parked_reading() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (s, _) = l.accept().unwrap();
    let (about_to_read_tx, about_to_read) = chan::bounded::<()>(0);
    let (gone_tx, gone) = chan::bounded::<usize>(1);
    drop(goro::go!(move || {
        let mut s = s;
        about_to_read_tx.send(()).unwrap();
        let n = s.read(&mut [0u8; 8]).unwrap(); // parks: the peer sends nothing
        drop(s);
        gone_tx.send(n).unwrap();
    }));
    about_to_read.recv().unwrap();
    drop((c, l));
    assert_eq!(gone.recv().unwrap(), 0);
}

/// Connects that fail: refused, and timed out against a listener whose backlog
/// is full (it never accepts, so the kernel drops further SYNs).
fn failed_connects() {
    use std::os::fd::AsRawFd;
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    assert!(TcpStream::connect(dead).is_err());
    let full = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    // SAFETY: listen(2) again on a listening socket we own only lowers its backlog.
    assert_eq!(unsafe { libc::listen(full.as_raw_fd(), 0) }, 0);
    let addr = full.local_addr().unwrap();
    let mut held = Vec::new();
    let timed_out = loop {
        assert!(held.len() < 64, "the backlog never filled");
        match TcpStream::connect_timeout(&addr, Duration::from_millis(50)) {
            Ok(s) => held.push(s),
            Err(e) => break e.kind(),
        }
    };
    assert_eq!(timed_out, ErrorKind::TimedOut);
    drop((held, full));
}

/// UDP: a round trip, a receive timeout, and a socket dropped by a panic.
fn udp_endings() {
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b_addr = b.local_addr().unwrap();
    let echo = goro::go!(move || {
        let mut buf = [0u8; 16];
        let (n, from) = b.recv_from(&mut buf).unwrap();
        b.send_to(&buf[..n], from).unwrap();
    });
    a.connect(b_addr).unwrap();
    a.send(b"ping").unwrap();
    assert_eq!(a.recv(&mut [0u8; 16]).unwrap(), 4);
    echo.join().unwrap();
    a.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
    assert_eq!(a.recv(&mut [0u8; 16]).unwrap_err().kind(), ErrorKind::TimedOut);
    let holder = goro::go!(|| {
        let _socks = (
            UdpSocket::bind("127.0.0.1:0").unwrap(),
            TcpListener::bind("127.0.0.1:0").unwrap(),
        );
        resume_unwind(Box::new("holder panic"));
    });
    assert!(holder.join().is_err());
}

#[test]
fn sockets_close_their_descriptors() {
    let _serial = serial();
    common::init_procs(1);
    let _w = common::watchdog(Duration::from_secs(60));
    goro::go!(|| {
        // The poller's own descriptors exist once a socket has been registered.
        drop(TcpListener::bind("127.0.0.1:0").unwrap());
        let base = open_fds();
        let steps: [(&str, fn()); 4] = [
            ("tcp_endings", || tcp_endings(200)),
            ("dropped_while_parked_reading", dropped_while_parked_reading),
            ("failed_connects", failed_connects),
            ("udp_endings", udp_endings),
        ];
        for (name, step) in steps {
            step();
            assert_eq!(open_fds(), base, "descriptors left open after {name}");
        }
    })
    .join()
    .unwrap();
}

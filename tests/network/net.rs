//! `goro::net` on the netpoller (GOMAXPROCS=2): echo between goroutines and
//! between a goroutine and a plain thread, 1,000 concurrent connections, read
//! timeouts, a writer blocked by a peer that does not read, waking a parked G by
//! shutting the socket down, UDP.

use crate::{common, PROCS};

use goro::go;
use goro::net::{TcpListener, TcpStream, UdpSocket};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An echo server on a fresh port: one goroutine per connection.
fn echo_server() -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(go!(move || {
        for s in l.incoming() {
            let mut s = s.unwrap();
            drop(go!(move || {
                let mut buf = [0u8; 4096];
                loop {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if s.write_all(&buf[..n]).is_err() {
                                return;
                            }
                        }
                    }
                }
            }));
        }
    }));
    addr
}

fn round_trips(s: &mut TcpStream, n: u32) {
    for i in 0..n {
        s.write_all(&i.to_le_bytes()).unwrap();
        let mut b = [0; 4];
        s.read_exact(&mut b).unwrap();
        assert_eq!(u32::from_le_bytes(b), i);
    }
}

#[test]
fn echo_between_goroutines_and_from_a_thread() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(60));
    let addr = echo_server();
    go!(move || round_trips(&mut TcpStream::connect(addr).unwrap(), 2000))
        .join()
        .unwrap();
    // A plain thread uses the same API and blocks instead of parking.
    round_trips(&mut TcpStream::connect(addr).unwrap(), 500);
    // A goroutine server answering a std client.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap();
    let srv = go!(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut v = Vec::new();
        s.read_to_end(&mut v).unwrap();
        v.len()
    });
    let mut std_client = std::net::TcpStream::connect(a).unwrap();
    std_client.write_all(&[7u8; 100_000]).unwrap();
    drop(std_client);
    assert_eq!(srv.join().unwrap(), 100_000);
}

#[test]
fn a_thousand_concurrent_connections() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(120));
    let addr = echo_server();
    let done = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..1000)
        .map(|_| {
            let done = done.clone();
            go!(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_nodelay(true).unwrap();
                round_trips(&mut s, 20);
                done.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    clients.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(done.load(Ordering::SeqCst), 1000);
}

/// A short read marks the socket drained, and the next read parks without a
/// syscall: bytes that arrive at any moment after it must still wake that read.
/// The writer sends bursts of 1 to 8 small pieces back to back, so pieces land
/// before, during and after the reader's short reads.
#[test]
fn bytes_arriving_after_a_short_read_are_not_missed() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(60));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    const ROUNDS: usize = 3000;
    let reader = go!(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = [0u8; 64];
        for round in 0..ROUNDS {
            let want = round % 8 + 1;
            let mut got = 0;
            while got < want {
                let n = s.read(&mut buf).unwrap();
                assert!(n > 0, "early end of stream");
                got += n;
            }
            assert_eq!(got, want, "round {round}");
            s.write_all(&[1]).unwrap();
        }
    });
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_nodelay(true).unwrap();
    for round in 0..ROUNDS {
        for _ in 0..round % 8 + 1 {
            c.write_all(&[0]).unwrap();
        }
        c.read_exact(&mut [0]).unwrap();
    }
    reader.join().unwrap();
}

/// An end of stream queued right behind the data is not signalled again after
/// the short read that takes the data: the read after it must still see it.
/// The peer writes and closes while the reader is parked, so the wake-up often
/// carries the hang-up already.
#[test]
fn end_of_stream_behind_the_data_of_a_short_read_is_seen() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(60));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    for _ in 0..300 {
        let mut c = TcpStream::connect(addr).unwrap();
        let (mut s, _) = l.accept().unwrap();
        let reader = go!(move || {
            let mut first = [0u8; 1];
            s.read_exact(&mut first).unwrap(); // parks: nothing sent yet
            let mut rest = Vec::new();
            s.read_to_end(&mut rest).unwrap();
            rest.len()
        });
        c.write_all(b"abcd").unwrap();
        drop(c);
        assert_eq!(reader.join().unwrap(), 3);
    }
}

/// Returns once the poller has handled every readiness event queued before the
/// call: a goroutine parks reading a fresh connection, and that connection's
/// event comes after them in the kernel's ready list.
fn handle_queued_events(l: &TcpListener) {
    let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut s, _) = l.accept().unwrap();
    let reader = go!(move || s.read_exact(&mut [0]).unwrap());
    c.write_all(&[1]).unwrap();
    reader.join().unwrap();
}

/// A read stops short at an urgent (out-of-band) byte with more data behind
/// it. That short read must not make the next one wait for an edge that never
/// comes: the poller's `EPOLLPRI` makes the direction sticky.
#[test]
fn data_behind_an_urgent_byte_is_not_missed() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(30));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut s, _) = l.accept().unwrap();
    for (bytes, flags) in [(&b"ab"[..], 0), (b"!", libc::MSG_OOB), (b"de", 0)] {
        // SAFETY: a valid buffer for a connected socket.
        let n = unsafe { libc::send(c.as_raw_fd(), bytes.as_ptr().cast(), bytes.len(), flags) };
        assert_eq!(n, bytes.len() as isize);
    }
    handle_queued_events(&l);
    let mut buf = [0u8; 64];
    let mut got = Vec::new();
    while got.len() < 4 {
        let n = s.read(&mut buf).unwrap();
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got, b"abde", "the urgent byte is out of band");
}

/// A vectored read over more buffers than the kernel takes in one call
/// (`UIO_MAXIOV`) that fills the ones it was given is not a short read: the
/// next read gets the rest without waiting for an edge.
#[test]
fn a_vectored_read_over_too_many_buffers_is_not_short() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(30));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut s, _) = l.accept().unwrap();
    c.write_all(&[7; 2000]).unwrap();
    handle_queued_events(&l);
    let mut bytes = vec![[0u8; 1]; 1100];
    let mut bufs: Vec<_> = bytes.iter_mut().map(|b| std::io::IoSliceMut::new(b)).collect();
    let mut got = s.read_vectored(&mut bufs).unwrap();
    while got < 2000 {
        got += s.read(&mut [0; 4096]).unwrap();
    }
    assert_eq!(got, 2000);
}

/// Shutting down the read side after a short read ends the next read at once
/// (end of file), though the socket is marked drained: the shutdown is an edge.
#[test]
fn shutting_down_reads_after_a_short_read_gives_end_of_file() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(30));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut s, _) = l.accept().unwrap();
    c.write_all(b"abc").unwrap();
    let mut buf = [0u8; 64];
    let mut got = 0;
    while got < 3 {
        got += s.read(&mut buf).unwrap();
    }
    s.shutdown(std::net::Shutdown::Read).unwrap();
    assert_eq!(s.read(&mut buf).unwrap(), 0);
    drop(c);
}

/// Short writes mark the socket's send side full; the writer parks until the
/// peer reads, and megabytes still arrive whole and in order.
#[test]
fn a_bulk_write_through_short_writes_arrives_whole() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(60));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let data: Vec<u8> = (0..16 << 20).map(|i: u32| (i % 251) as u8).collect();
    let expect = data.clone();
    let writer = go!(move || {
        let (mut s, _) = l.accept().unwrap();
        s.write_all(&data).unwrap();
    });
    let mut c = TcpStream::connect(addr).unwrap();
    let mut got = Vec::new();
    c.read_to_end(&mut got).unwrap();
    writer.join().unwrap();
    assert!(
        got == expect,
        "{} of {} bytes, or out of order",
        got.len(),
        expect.len()
    );
}

#[test]
fn read_timeout_fires_and_the_socket_stays_usable() {
    common::init_procs(PROCS);
    let addr = echo_server();
    go!(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(30))).unwrap();
        assert_eq!(s.read_timeout().unwrap(), Some(Duration::from_millis(30)));
        let t = Instant::now();
        let err = s.read(&mut [0; 8]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::TimedOut);
        assert!(t.elapsed() >= Duration::from_millis(30));
        round_trips(&mut s, 10);
        assert_eq!(
            s.set_read_timeout(Some(Duration::ZERO)).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
    })
    .join()
    .unwrap();
}

#[test]
fn a_writer_blocked_by_a_silent_peer_blocks_only_itself() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(60));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    // The peer accepts and never reads.
    let peer = go!(move || l.accept().unwrap().0);
    let writer = go!(move || {
        let s = TcpStream::connect(addr).unwrap();
        s.set_write_timeout(Some(Duration::from_millis(300))).unwrap();
        let chunk = vec![0u8; 64 << 10];
        let mut sent = 0usize;
        loop {
            match (&s).write(&chunk) {
                Ok(n) => sent += n,
                Err(e) => return (sent, e.kind()),
            }
        }
    });
    // Meanwhile other goroutines keep running.
    let others: Vec<_> = (0..50)
        .map(|i| go!(move || (0..1000u64).map(|x| x * i).sum::<u64>()))
        .collect();
    for h in others {
        h.join().unwrap();
    }
    let (sent, kind) = writer.join().unwrap();
    assert_eq!(kind, ErrorKind::TimedOut, "the writer parked until its timeout");
    assert!(sent > 0, "some data went out before the buffers filled");
    drop(peer.join().unwrap());
}

#[test]
fn shutting_down_wakes_a_parked_reader_and_acceptor() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(60));
    let addr = echo_server();
    let s = Arc::new(TcpStream::connect(addr).unwrap());
    let s2 = s.clone();
    let reader = go!(move || (&*s2).read(&mut [0; 16]));
    // Give the reader time to park (it has nothing to read). Not needed for the
    // assertion, which holds either way: it makes the test exercise the wake-up.
    goro::time::sleep(Duration::from_millis(20));
    s.shutdown(std::net::Shutdown::Both).unwrap();
    assert_eq!(reader.join().unwrap().unwrap(), 0, "end of file after shutdown");
    // A goroutine parked in accept wakes with an error when the listener is shut.
    let l = Arc::new(TcpListener::bind("127.0.0.1:0").unwrap());
    let l2 = l.clone();
    let acceptor = go!(move || l2.accept().map(|_| ()));
    goro::time::sleep(Duration::from_millis(20));
    // SAFETY: shutdown(2) on a socket we own; the fd stays open.
    assert_eq!(unsafe { libc::shutdown(l.as_raw_fd(), libc::SHUT_RDWR) }, 0);
    assert!(acceptor.join().unwrap().is_err());
}

#[test]
fn peer_reset_and_half_close_surface_as_io_results() {
    common::init_procs(PROCS);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let srv = go!(move || {
        let (mut s, _) = l.accept().unwrap();
        // Half-close from the client: we read to EOF, then can still write.
        let mut v = Vec::new();
        s.read_to_end(&mut v).unwrap();
        s.write_all(b"bye").unwrap();
        v
    });
    let mut c = TcpStream::connect(addr).unwrap();
    c.write_all(b"hello").unwrap();
    c.shutdown(std::net::Shutdown::Write).unwrap();
    let mut back = Vec::new();
    c.read_to_end(&mut back).unwrap();
    assert_eq!(back, b"bye");
    assert_eq!(srv.join().unwrap(), b"hello");
    // Connecting to a closed port is an error, not a panic.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    assert!(go!(move || TcpStream::connect(dead)).join().unwrap().is_err());
}

#[test]
fn udp_round_trip() {
    common::init_procs(PROCS);
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b_addr = b.local_addr().unwrap();
    let echo = go!(move || {
        let mut buf = [0; 64];
        for _ in 0..100 {
            let (n, from) = b.recv_from(&mut buf).unwrap();
            b.send_to(&buf[..n], from).unwrap();
        }
    });
    a.connect(b_addr).unwrap();
    a.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    for i in 0..100u32 {
        a.send(&i.to_le_bytes()).unwrap();
        let mut buf = [0; 64];
        let n = a.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], &i.to_le_bytes());
    }
    echo.join().unwrap();
    let lonely = UdpSocket::bind("127.0.0.1:0").unwrap();
    lonely.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    assert_eq!(lonely.recv(&mut [0; 8]).unwrap_err().kind(), ErrorKind::TimedOut);
}

#[test]
fn std_sockets_convert() {
    common::init_procs(PROCS);
    let std_l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = std_l.local_addr().unwrap();
    let l = TcpListener::try_from(std_l).unwrap();
    let srv = go!(move || l.accept().unwrap().0.peer_addr().unwrap());
    let c = TcpStream::try_from(std::net::TcpStream::connect(addr).unwrap()).unwrap();
    assert_eq!(srv.join().unwrap(), c.local_addr().unwrap());
    let clone = c.try_clone().unwrap();
    assert_eq!(clone.peer_addr().unwrap(), addr);
}

#[test]
fn writing_to_a_closed_peer_is_an_error_not_a_panic() {
    common::init_procs(PROCS);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let srv = go!(move || drop(l.accept().unwrap()));
    let c = TcpStream::connect(addr).unwrap();
    srv.join().unwrap(); // the peer is gone
    let r = go!(move || {
        let buf = [1u8; 4096];
        loop {
            if let Err(e) = (&c).write(&buf) {
                return e.kind();
            }
        }
    })
    .join()
    .unwrap();
    assert!(matches!(r, ErrorKind::BrokenPipe | ErrorKind::ConnectionReset), "{r:?}");
}

#[test]
fn connect_timeout_gives_up_on_a_peer_that_never_answers() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(60));
    // A listener with a zero backlog that never accepts: once its queue is
    // full, the kernel drops further SYNs and those handshakes hang.
    // SAFETY: plain socket calls on a socket this test owns; results checked.
    let (fd, addr) = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0);
        let mut sa: libc::sockaddr_in = std::mem::zeroed();
        sa.sin_family = libc::AF_INET as libc::sa_family_t;
        sa.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        assert_eq!(libc::bind(fd, std::ptr::addr_of!(sa).cast(), len), 0);
        assert_eq!(libc::listen(fd, 0), 0);
        let mut len = len;
        assert_eq!(libc::getsockname(fd, std::ptr::addr_of_mut!(sa).cast(), &mut len), 0);
        let port = u16::from_be(sa.sin_port);
        (fd, std::net::SocketAddr::from(([127, 0, 0, 1], port)))
    };
    let outcome = go!(move || {
        let mut held = Vec::new();
        for _ in 0..16 {
            let started = Instant::now();
            match TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
                Ok(s) => held.push(s),
                Err(e) => return Some((e.kind(), started.elapsed(), held.len())),
            }
        }
        None
    })
    .join()
    .unwrap();
    let (kind, waited, connected) = outcome.expect("every connect succeeded");
    assert_eq!(kind, ErrorKind::TimedOut, "after {connected} connections");
    assert!(waited >= Duration::from_millis(190), "gave up after {waited:?}");
    assert_eq!(
        TcpStream::connect_timeout(&addr, Duration::ZERO).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    // SAFETY: closing the fd made above, used by nothing else.
    unsafe { libc::close(fd) };
}

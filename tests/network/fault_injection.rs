//! Faults injected at every kind of blocking point, and what the user sees: a
//! goroutine that panics while partners are parked on it (channel, select, goro
//! Mutex, a blocking call), handles dropped while their goroutines are parked,
//! and a network peer that resets the connection under a parked reader. After
//! each fault the rest of the program keeps working. Elsewhere: peers that
//! half-close, stall or refuse (`net.rs`), fd exhaustion (`net_fd_exhaustion.rs`),
//! stack overflow (`behaviour/stack_overflow.rs`), malformed input (`examples/http_echo.rs`,
//! `examples/cluster_node.rs`).

use crate::{common, PROCS};

use goro::chan::SendTimeoutError;
use goro::sync::Mutex;
use std::io::{ErrorKind, Read};
use std::sync::Arc;
use std::time::Duration;

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

#[test]
fn a_sender_that_panics_wakes_its_parked_receiver_with_a_closed_channel() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(60));
    let (tx, rx) = goro::chan::bounded::<u32>(0);
    let (started_tx, started) = goro::chan::bounded::<()>(0);
    let receiver = goro::go!(move || {
        started_tx.send(()).unwrap();
        rx.recv() // parks: nothing is ever sent
    });
    started.recv().unwrap();
    let sender = goro::go!(move || {
        let _tx = tx; // dropped by the unwind
        panic!("sender failed");
    });
    assert_eq!(panic_text(sender.join().unwrap_err()), "sender failed");
    assert!(receiver.join().unwrap().is_err(), "receiver sees the channel closed");
}

#[test]
fn a_panic_after_select_leaves_no_waiter_behind() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(60));
    let (a_tx, a) = goro::chan::bounded::<u32>(0);
    let (b_tx, b) = goro::chan::bounded::<u32>(0);
    let b_keep = b.clone();
    let selecting = goro::go!(move || {
        goro::select! {
            recv(a) -> v => panic!("chose a: {v:?}"),
            recv(b) -> v => panic!("chose b: {v:?}"),
        }
    });
    a_tx.send(7).unwrap();
    assert_eq!(panic_text(selecting.join().unwrap_err()), "chose a: Ok(7)");
    // The dead goroutine's waiter on `b` is gone: a send must not vanish into it.
    assert!(matches!(
        b_tx.send_timeout(8, Duration::from_millis(20)),
        Err(SendTimeoutError::Timeout(8))
    ));
    drop(b_keep);
}

#[test]
fn a_mutex_holder_that_panics_hands_the_lock_to_its_parked_waiter() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(60));
    let m = Arc::new(Mutex::new(0u32));
    let (locked_tx, locked) = goro::chan::bounded::<()>(0);
    let (waiting_tx, waiting) = goro::chan::bounded::<()>(0);
    let m1 = m.clone();
    let holder = goro::go!(move || {
        let mut g = m1.lock();
        *g = 1;
        locked_tx.send(()).unwrap();
        waiting.recv().unwrap(); // the waiter is about to park on the lock
        goro::time::sleep(Duration::from_millis(5));
        panic!("holder failed");
    });
    locked.recv().unwrap();
    let m2 = m.clone();
    let waiter = goro::go!(move || {
        waiting_tx.send(()).unwrap();
        let mut g = m2.lock(); // parks until the holder unwinds
        *g += 10;
        *g
    });
    assert!(holder.join().is_err());
    assert_eq!(
        waiter.join().unwrap(),
        11,
        "no poisoning; the write before the panic stays"
    );
    assert_eq!(*m.lock(), 11);
}

#[test]
fn a_panic_inside_a_blocking_call_returns_the_p() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(60));
    let failed = goro::go!(|| {
        goro::blocking(|| {
            std::thread::sleep(Duration::from_millis(30)); // long enough to hand off the P
            panic!("syscall wrapper failed");
        })
    });
    assert_eq!(panic_text(failed.join().unwrap_err()), "syscall wrapper failed");
    // Every P still runs goroutines afterwards.
    let hs: Vec<_> = (0..100u64)
        .map(|i| {
            goro::go!(move || {
                goro::yield_now();
                i
            })
        })
        .collect();
    assert_eq!(hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>(), 4950);
}

#[test]
fn dropped_handles_of_parked_goroutines_lose_nothing() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(60));
    let (tx, rx) = goro::chan::bounded::<u64>(0);
    let (out_tx, out) = goro::chan::bounded::<u64>(1000);
    for _ in 0..1000 {
        let (rx, out_tx) = (rx.clone(), out_tx.clone());
        // Each goroutine parks in recv; its handle is dropped at once.
        drop(goro::go!(move || {
            let v = rx.recv().unwrap();
            out_tx.send(v * 2).unwrap();
            vec![v; 16] // a result nobody joins: dropped with the goroutine
        }));
    }
    drop((rx, out_tx));
    for v in 0..1000 {
        tx.send(v).unwrap();
    }
    let mut got: Vec<u64> = out.iter().collect();
    got.sort_unstable();
    assert_eq!(got, (0..1000).map(|v| v * 2).collect::<Vec<_>>());
    // `out` closed, so every sender (every goroutine) is gone.
}

/// A connected pair: (server side, client side), both goro streams.
fn pair() -> (goro::net::TcpStream, goro::net::TcpStream) {
    let l = goro::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (s, _) = l.accept().unwrap();
    (s, c)
}

#[test]
fn a_peer_reset_wakes_the_parked_reader_with_an_error() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(60));
    let (server, client) = pair();
    let reader = goro::go!(move || {
        let mut s = server;
        let mut buf = [0u8; 64];
        s.read(&mut buf) // parks until the reset arrives
    });
    // Most likely parked by now; if not, the read finds the reset pending and
    // the outcome is the same.
    goro::time::sleep(Duration::from_millis(10));
    common::reset_on_close(&client);
    drop(client);
    let err = reader.join().unwrap().expect_err("a reset is an error");
    assert_eq!(err.kind(), ErrorKind::ConnectionReset);
}

//! loom models of the poll descriptor (`desc.rs`): readiness against parking.
//!
//! A loom atomic stands in for the socket's kernel state ("data waiting"); the
//! poller thread sets it and then runs the real `notify`, as an edge-triggered
//! epoll event follows the data. The reader runs the real I/O-loop protocol: read
//! the generation, try the "syscall", and on "would block" `wait` with the
//! generation it saw. A readiness edge lost between the failed attempt and the
//! park would leave the reader asleep forever: a deadlock loom reports.

use super::desc::{closed_error, Dir, PollDesc};
use crate::runtime::park::Waiter;
use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;
use std::io;

/// The I/O loop of `registered.rs` on a model socket: returns once data is seen,
/// or with the wait's error.
fn read_loop(pd: &'static PollDesc, data: &AtomicBool, deadline: Option<u64>) -> io::Result<()> {
    loop {
        let seen = pd.gen(Dir::Read);
        if data.load(SeqCst) {
            return Ok(());
        }
        pd.wait(Dir::Read, seen, deadline)?;
    }
}

/// The poller's side of one edge: the data lands, then the event is handled.
fn deliver(pd: &PollDesc, data: &AtomicBool) {
    data.store(true, SeqCst);
    let mut woken = Vec::new();
    pd.notify(Dir::Read, &mut woken);
    woken.into_iter().for_each(Waiter::wake);
}

/// A fresh descriptor (leaked, as the real ones are: waits and deadline timers
/// hold them as `'static`) and its model socket, with no data yet.
fn socket() -> (&'static PollDesc, Arc<AtomicBool>) {
    (Box::leak(Box::new(PollDesc::new())), Arc::new(AtomicBool::new(false)))
}

/// The poller thread delivering one edge on `pd`.
fn spawn_poller(pd: &'static PollDesc, data: &Arc<AtomicBool>) -> thread::JoinHandle<()> {
    let data = data.clone();
    thread::spawn(move || deliver(pd, &data))
}

/// Data arriving at any point of the reader's attempt-then-park is never missed.
#[test]
fn loom_netpoll_readiness_vs_park_no_lost_edge() {
    loom::model(|| {
        let (pd, data) = socket();
        let poller = spawn_poller(pd, &data);
        read_loop(pd, &data, None).unwrap();
        poller.join().unwrap();
    });
}

/// A close racing a parked (or parking) reader wakes it with the closed error.
#[test]
fn loom_netpoll_close_wakes_the_reader() {
    loom::model(|| {
        let (pd, data) = socket();
        let closer = thread::spawn(move || pd.shut());
        let err = read_loop(pd, &data, None).unwrap_err();
        assert_eq!(err.kind(), closed_error().kind());
        closer.join().unwrap();
    });
}

/// The descriptor's deadline timer firing racing the edge: the reader either
/// sees the data or times out, and a timed-out reader leaves no sudog behind for
/// the poller to find. The timer thread runs the real `expire_due` as the timer
/// heap would once the deadline (already past: 1 ns) has come.
#[test]
fn loom_netpoll_deadline_vs_edge_leaves_no_waiter() {
    loom::model(|| {
        let (pd, data) = socket();
        let poller = spawn_poller(pd, &data);
        let timer = thread::spawn(move || {
            let (expired, _) = pd.expire_due(pd.deadline_tag(Dir::Read), u64::MAX);
            expired.into_iter().for_each(Waiter::wake);
        });
        match read_loop(pd, &data, Some(1)) {
            Ok(()) => {}
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::TimedOut),
        }
        poller.join().unwrap();
        timer.join().unwrap();
        assert!(pd.no_waiters(), "a timed-out reader left its sudog queued");
    });
}

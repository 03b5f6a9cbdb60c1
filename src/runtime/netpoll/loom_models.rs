//! loom models of the poll descriptor (`desc.rs`): readiness against parking.
//!
//! A loom atomic stands in for the socket's kernel state ("data waiting"); the
//! poller thread sets it and then runs the real `notify`, as an edge-triggered
//! epoll event follows the data. The reader runs the real I/O-loop protocol: read
//! the generation, try the "syscall", and on "would block" `wait` with the
//! generation it saw. A readiness edge lost between the failed attempt and the
//! park would leave the reader asleep forever: a deadlock loom reports.

use super::desc::{closed_error, Dir, PollDesc};
use crate::runtime::proc::waiter::Waiter;
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

/// The timer heap's part: fires the descriptor's deadline timers as they are
/// armed, each as if the clock had reached its time, until `done`.
fn spawn_timers(pd: &'static PollDesc, done: &Arc<AtomicBool>) -> thread::JoinHandle<()> {
    let done = done.clone();
    thread::spawn(move || {
        while pd.fire_model_timer() || !done.load(SeqCst) {
            thread::yield_now();
        }
    })
}

/// The descriptor's deadline timer racing the edge: the reader either sees the
/// data or times out, and a timed-out reader leaves no sudog behind for the
/// poller to find.
#[test]
fn loom_netpoll_deadline_vs_edge_leaves_no_waiter() {
    loom::model(|| {
        let (pd, data) = socket();
        let done = Arc::new(AtomicBool::new(false));
        let poller = spawn_poller(pd, &data);
        let timers = spawn_timers(pd, &done);
        match read_loop(pd, &data, Some(1)) {
            Ok(()) => {}
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::TimedOut),
        }
        done.store(true, SeqCst);
        poller.join().unwrap();
        timers.join().unwrap();
        assert!(pd.no_waiters(), "a timed-out reader left its sudog queued");
    });
}

/// With no edge, a reader with a deadline times out: the wait arms the timer
/// only after it is queued, so the timer cannot fire past it.
#[test]
fn loom_netpoll_deadline_without_edge_times_out() {
    loom::model(|| {
        let (pd, data) = socket();
        let done = Arc::new(AtomicBool::new(false));
        let timers = spawn_timers(pd, &done);
        let err = read_loop(pd, &data, Some(1)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        done.store(true, SeqCst);
        timers.join().unwrap();
        assert!(pd.no_waiters());
    });
}

/// Two readers with different deadlines share the direction's one timer: in
/// whichever order they park, the earlier timer fires first and re-arms for the
/// later deadline, so both time out.
#[test]
fn loom_netpoll_deadline_rearms_for_the_later_waiter() {
    loom::model(|| {
        let (pd, data) = socket();
        let done = Arc::new(AtomicBool::new(false));
        let timers = spawn_timers(pd, &done);
        let early = {
            let data = data.clone();
            thread::spawn(move || read_loop(pd, &data, Some(1)).unwrap_err().kind())
        };
        let late = read_loop(pd, &data, Some(2)).unwrap_err().kind();
        assert_eq!(early.join().unwrap(), io::ErrorKind::TimedOut);
        assert_eq!(late, io::ErrorKind::TimedOut);
        done.store(true, SeqCst);
        timers.join().unwrap();
        assert!(pd.no_waiters());
    });
}

//! loom models of channels and `select!`: the real `Chan`, its wait queues, the
//! claim every wait is ended through, and the parking protocol's thread side, with
//! loom threads as the blocked parties (a G parks through the same records; only
//! who releases the record's lock differs, see `runtime/wait/park.rs`).
//!
//! What they check, over every interleaving (`scripts/loom.sh`):
//! - each value is delivered exactly once, in FIFO order, or handed back;
//! - a close wakes every blocked sender and receiver (a missing wake-up is a
//!   deadlock loom reports);
//! - a timeout racing a sender ends the wait exactly one way;
//! - a `select!` takes exactly one case and leaves no waiter behind in the others.

use crate::chan::{bounded, Receiver, RecvError, RecvTimeoutError, SendError, TrySendError};
use loom::thread;
use std::time::Duration;

/// Senders and receivers still queued on the channel behind `rx`.
fn queued<T>(rx: &Receiver<T>) -> (bool, bool) {
    let mut l = rx.chan.lock();
    let st = l.st();
    (!st.sendq.is_empty(), !st.recvq.is_empty())
}

/// An unbuffered channel hands each value over once, in order, and the receiver
/// sees the close that the sender's drop makes.
#[test]
fn loom_chan_rendezvous_delivers_in_order_then_close() {
    loom::model(|| {
        let (tx, rx) = bounded::<u32>(0);
        let sender = thread::spawn(move || {
            tx.send(1).unwrap();
            tx.send(2).unwrap();
        });
        assert_eq!(rx.recv(), Ok(1));
        assert_eq!(rx.recv(), Ok(2));
        assert_eq!(rx.recv(), Err(RecvError));
        sender.join().unwrap();
    });
}

/// A sender blocked on a full buffer moves its value to the buffer's tail when a
/// receiver frees a slot: FIFO across buffer and queue.
#[test]
fn loom_chan_blocked_sender_keeps_fifo() {
    loom::model(|| {
        let (tx, rx) = bounded::<u32>(1);
        let sender = thread::spawn(move || {
            for v in 1..=3 {
                tx.send(v).unwrap();
            }
        });
        let got: Vec<u32> = (0..3).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(got, [1, 2, 3]);
        sender.join().unwrap();
        assert_eq!(queued(&rx), (false, false));
    });
}

/// A close races a rendezvous between a blocked sender and a blocked receiver:
/// either the value moves (both succeed) or both are woken with an error and the
/// value goes back to the sender. Never one without the other, never a sleeper
/// left behind.
#[test]
fn loom_chan_close_vs_rendezvous_exactly_once() {
    loom::model(|| {
        let (tx, rx) = bounded::<u32>(0);
        let closer = tx.clone();
        let sender = thread::spawn(move || tx.send(7));
        let receiver = thread::spawn(move || rx.recv());
        closer.close();
        let sent = sender.join().unwrap();
        let got = receiver.join().unwrap();
        match sent {
            Ok(()) => assert_eq!(got, Ok(7)),
            Err(SendError(v)) => {
                assert_eq!(v, 7, "the value comes back to the sender");
                assert_eq!(got, Err(RecvError));
            }
        }
    });
}

/// A receiver's deadline races a sender: the sender either claims the waiting
/// receiver (the value is received) or finds no one to claim (the receive timed
/// out). The timed-out waiter leaves the queue.
#[test]
fn loom_chan_timeout_vs_send_ends_the_wait_once() {
    loom::model(|| {
        let (tx, rx) = bounded::<u32>(0);
        let rx2 = rx.clone();
        let receiver = thread::spawn(move || rx2.recv_timeout(Duration::from_secs(1)));
        let sent = tx.try_send(5);
        let got = receiver.join().unwrap();
        match sent {
            Ok(()) => assert_eq!(got, Ok(5)),
            Err(TrySendError::Full(5)) => assert_eq!(got, Err(RecvTimeoutError::Timeout)),
            Err(e) => panic!("unexpected {e:?}"),
        }
        assert_eq!(queued(&rx), (false, false));
    });
}

/// A `select!` over two channels while a value arrives on each: it takes exactly
/// one, the other stays buffered for a plain receive, and no sudog of the select
/// is left in either queue.
#[test]
fn loom_select_takes_one_of_two_and_leaves_no_waiter() {
    loom::model(|| {
        let (tx_a, rx_a) = bounded::<u32>(1);
        let (tx_b, rx_b) = bounded::<u32>(1);
        let a = thread::spawn(move || tx_a.send(1).unwrap());
        let b = thread::spawn(move || tx_b.send(2).unwrap());
        let first = crate::select! {
            recv(rx_a) -> v => v.unwrap(),
            recv(rx_b) -> v => v.unwrap(),
        };
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(queued(&rx_a), (false, false));
        assert_eq!(queued(&rx_b), (false, false));
        let second = if first == 1 { rx_b.recv() } else { rx_a.recv() };
        assert_eq!(first + second.unwrap(), 3, "each value exactly once");
    });
}

/// A `select!` offering a send while the other case's channel closes: if the
/// send case wins the receiver gets the value, otherwise the close wins and the
/// receiver sees the channel close. Exactly one case runs.
#[test]
fn loom_select_send_vs_close_runs_exactly_one_case() {
    loom::model(|| {
        let (tx_a, rx_a) = bounded::<u32>(0);
        let (tx_b, rx_b) = bounded::<u32>(0);
        let receiver = thread::spawn(move || rx_a.recv());
        let closer = thread::spawn(move || drop(tx_b));
        let sent = crate::select! {
            send(tx_a, 9) -> r => {
                r.unwrap();
                true
            },
            recv(rx_b) -> v => {
                assert_eq!(v, Err(RecvError));
                false
            },
        };
        drop(tx_a);
        closer.join().unwrap();
        let got = receiver.join().unwrap();
        assert_eq!(got.is_ok(), sent, "the receiver got the value iff the send case ran");
    });
}

/// A waker that counts its wakes, for futures polled by hand in a model (read
/// after the waking thread is joined).
struct Count(std::sync::atomic::AtomicUsize);

impl std::task::Wake for Count {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

fn counting() -> (std::sync::Arc<Count>, std::task::Waker) {
    let c = std::sync::Arc::new(Count(std::sync::atomic::AtomicUsize::new(0)));
    (c.clone(), std::task::Waker::from(c))
}

fn woken(c: &Count) -> bool {
    c.0.load(std::sync::atomic::Ordering::SeqCst) > 0
}

fn poll_by_hand<F: std::future::Future + Unpin>(f: &mut F, w: &std::task::Waker) -> std::task::Poll<F::Output> {
    std::pin::Pin::new(f).poll(&mut std::task::Context::from_waker(w))
}

/// Two receive futures wait; a value arrives while the first is dropped. The
/// wake-up the value brings reaches the second whatever the order: the first
/// was either still registered (the drop removes it, the send wakes the
/// second) or already woken (its drop passes the wake-up on). The value stays
/// in the channel for the second.
#[test]
fn loom_chan_recv_async_cancel_passes_the_wake_on() {
    loom::model(|| {
        let (tx, rx) = bounded::<u32>(1);
        let (_c1, w1) = counting();
        let (c2, w2) = counting();
        let mut first = rx.recv_async();
        let mut second = rx.recv_async();
        assert!(poll_by_hand(&mut first, &w1).is_pending());
        assert!(poll_by_hand(&mut second, &w2).is_pending());
        // A clone sends: `tx` stays, so no close (which wakes everyone) hides
        // a lost wake-up.
        let tx2 = tx.clone();
        let sender = thread::spawn(move || tx2.try_send(7).unwrap());
        drop(first);
        sender.join().unwrap();
        assert!(woken(&c2), "the value's wake-up was lost with the dropped future");
        assert_eq!(poll_by_hand(&mut second, &w2), std::task::Poll::Ready(Ok(7)));
        drop(tx);
    });
}

/// An unbuffered send future is queued; a receiver takes from the channel
/// while the future is re-polled with a new waker and then dropped. The value
/// is received or dropped with the future, exactly once; if the re-poll saw
/// no receiver, the receive woke the new waker.
#[test]
fn loom_chan_send_async_cancel_exactly_once() {
    loom::model(|| {
        let (tx, rx) = bounded::<std::sync::Arc<()>>(0);
        let value = std::sync::Arc::new(());
        let (_c1, w1) = counting();
        let (c2, w2) = counting();
        let mut send = tx.send_async(value.clone());
        assert!(poll_by_hand(&mut send, &w1).is_pending());
        // A clone receives: `rx` stays, so no close claims the send instead.
        let rx2 = rx.clone();
        let receiver = thread::spawn(move || rx2.try_recv().ok());
        let second = poll_by_hand(&mut send, &w2);
        drop(send);
        let got = receiver.join().unwrap();
        match &second {
            std::task::Poll::Ready(r) => assert!(r.is_ok() && got.is_some()),
            std::task::Poll::Pending => assert!(got.is_none() || woken(&c2), "the send's wake-up was lost"),
        }
        drop(got);
        assert_eq!(
            std::sync::Arc::strong_count(&value),
            1,
            "the value was kept or dropped twice"
        );
    });
}

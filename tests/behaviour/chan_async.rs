//! Channels from async code: `recv_async`, `send_async`, `stream`, `sink`, polled
//! by hand (a counting waker), by `goro::block_on` on threads and goroutines,
//! against blocked senders, `select!` arms, closes and cancellations.

use crate::common::watchdog;
use futures_core::Stream;
use futures_sink::Sink;
use goro::chan::{bounded, RecvError, SendError, TryRecvError};
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// A waker that counts its wakes.
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting() -> (Arc<Count>, Waker) {
    let c = Arc::new(Count(AtomicUsize::new(0)));
    (c.clone(), Waker::from(c))
}

fn wakes(c: &Count) -> usize {
    c.0.load(Ordering::SeqCst)
}

fn poll_once<F: Future + Unpin>(f: &mut F, w: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(w))
}

#[test]
fn a_receive_future_gets_values_from_goroutines_in_order() {
    let (tx, rx) = bounded::<u32>(0);
    let sender = goro::go!(move || (0..100).for_each(|i| tx.send(i).unwrap()));
    let got: Vec<u32> = (0..100).map(|_| goro::block_on(rx.recv_async()).unwrap()).collect();
    assert_eq!(got, (0..100).collect::<Vec<_>>());
    assert_eq!(goro::block_on(rx.recv_async()), Err(RecvError));
    sender.join().unwrap();
}

#[test]
fn an_unbuffered_send_future_completes_only_once_the_value_is_taken() {
    let (tx, rx) = bounded::<String>(0);
    let (count, w) = counting();
    let mut send = tx.send_async("v".to_string());
    assert!(poll_once(&mut send, &w).is_pending());
    assert!(poll_once(&mut send, &w).is_pending(), "nobody has taken it yet");
    assert_eq!(wakes(&count), 0);
    assert_eq!(rx.try_recv().as_deref(), Ok("v"));
    assert_eq!(wakes(&count), 1, "the receive woke the send future");
    assert_eq!(poll_once(&mut send, &w), Poll::Ready(Ok(())));
}

#[test]
fn a_dropped_send_future_withdraws_its_value() {
    let (tx, rx) = bounded::<Arc<()>>(0);
    let value = Arc::new(());
    let (_count, w) = counting();
    let mut send = tx.send_async(value.clone());
    assert!(poll_once(&mut send, &w).is_pending());
    assert_eq!(Arc::strong_count(&value), 2);
    drop(send);
    assert_eq!(Arc::strong_count(&value), 1, "the value dropped with the future");
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "and left the queue");
    // A send future dropped after its value was taken: the send happened.
    let mut send = tx.send_async(value.clone());
    assert!(poll_once(&mut send, &w).is_pending());
    let got = rx.try_recv().unwrap();
    drop(send);
    assert!(Arc::ptr_eq(&got, &value));
}

#[test]
fn a_buffered_send_future_waits_for_room_in_fifo_order() {
    let (tx, rx) = bounded::<u32>(1);
    let (count, w) = counting();
    assert_eq!(poll_once(&mut tx.send_async(1), &w), Poll::Ready(Ok(())));
    let mut second = tx.send_async(2);
    assert!(poll_once(&mut second, &w).is_pending());
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(wakes(&count), 1);
    assert_eq!(poll_once(&mut second, &w), Poll::Ready(Ok(())));
    assert_eq!(rx.try_recv(), Ok(2), "its value moved into the buffer");
}

#[test]
fn a_woken_receive_future_dropped_unpolled_passes_its_wake_on() {
    let (tx, rx) = bounded::<u32>(4);
    let (c1, w1) = counting();
    let (c2, w2) = counting();
    let mut first = rx.recv_async();
    let mut second = rx.recv_async();
    assert!(poll_once(&mut first, &w1).is_pending());
    assert!(poll_once(&mut second, &w2).is_pending());
    tx.send(7).unwrap();
    assert_eq!((wakes(&c1), wakes(&c2)), (1, 0), "one value wakes the oldest");
    drop(first);
    assert_eq!(wakes(&c2), 1, "the unused wake-up went on");
    assert_eq!(poll_once(&mut second, &w2), Poll::Ready(Ok(7)));
    // Dropping one that was never woken wakes nobody.
    let (c3, w3) = counting();
    let mut third = rx.recv_async();
    assert!(poll_once(&mut third, &w3).is_pending());
    drop(third);
    tx.send(8).unwrap();
    assert_eq!(wakes(&c3), 0);
    assert_eq!(rx.try_recv(), Ok(8));
}

#[test]
fn a_repoll_with_a_new_waker_is_the_one_woken() {
    let (tx, rx) = bounded::<u32>(1);
    let (old, w_old) = counting();
    let (new, w_new) = counting();
    let mut recv = rx.recv_async();
    assert!(poll_once(&mut recv, &w_old).is_pending());
    assert!(poll_once(&mut recv, &w_new).is_pending());
    tx.send(1).unwrap();
    assert_eq!((wakes(&old), wakes(&new)), (0, 1));
    assert_eq!(poll_once(&mut recv, &w_new), Poll::Ready(Ok(1)));

    let (tx0, rx0) = bounded::<u32>(0);
    let mut send = tx0.send_async(2);
    assert!(poll_once(&mut send, &w_old).is_pending());
    assert!(poll_once(&mut send, &w_new).is_pending());
    assert_eq!(rx0.try_recv(), Ok(2));
    assert_eq!((wakes(&old), wakes(&new)), (0, 2));
}

#[test]
fn close_wakes_every_pending_future() {
    let (tx, rx) = bounded::<u32>(0);
    let (c, w) = counting();
    let mut recvs: Vec<_> = (0..3).map(|_| rx.recv_async()).collect();
    for r in &mut recvs {
        assert!(poll_once(r, &w).is_pending());
    }
    let (tx2, rx2) = bounded::<u32>(0);
    let mut send = tx2.send_async(5);
    assert!(poll_once(&mut send, &w).is_pending());
    tx.close();
    tx2.close();
    assert_eq!(wakes(&c), 4);
    for r in &mut recvs {
        assert_eq!(poll_once(r, &w), Poll::Ready(Err(RecvError)));
    }
    assert_eq!(poll_once(&mut send, &w), Poll::Ready(Err(SendError(5))));
    drop(rx2);
}

#[test]
fn blocked_senders_and_select_arms_wake_receive_futures() {
    let _w = watchdog(Duration::from_secs(60));
    let (tx, rx) = bounded::<u32>(0);
    // A goroutine parked in send, then one parked in a select's send arm.
    let plain = {
        let tx = tx.clone();
        goro::go!(move || tx.send(1).unwrap())
    };
    assert_eq!(goro::block_on(rx.recv_async()), Ok(1));
    plain.join().unwrap();
    let selecting = goro::go!(move || goro::select! {
        send(tx, 2) -> r => r.unwrap(),
    });
    assert_eq!(goro::block_on(rx.recv_async()), Ok(2));
    selecting.join().unwrap();
}

#[test]
fn async_senders_and_receivers_meet_on_an_unbuffered_channel() {
    let _w = watchdog(Duration::from_secs(60));
    let (tx, rx) = bounded::<u64>(0);
    let senders: Vec<_> = (0..4)
        .map(|s| {
            let tx = tx.clone();
            goro::go!(move || (0..250).for_each(|i| goro::block_on(tx.send_async(s * 1000 + i)).unwrap()))
        })
        .collect();
    drop(tx);
    let receivers: Vec<_> = (0..3)
        .map(|_| {
            let rx = rx.clone();
            std::thread::spawn(move || {
                let mut got = Vec::new();
                while let Ok(v) = goro::block_on(rx.recv_async()) {
                    got.push(v);
                }
                got
            })
        })
        .collect();
    senders.into_iter().for_each(|h| h.join().unwrap());
    let mut all: Vec<u64> = receivers.into_iter().flat_map(|h| h.join().unwrap()).collect();
    all.sort_unstable();
    let want: Vec<u64> = (0..4).flat_map(|s| (0..250).map(move |i| s * 1000 + i)).collect();
    assert_eq!(all, want, "every value exactly once");
}

#[test]
fn a_timer_channel_wakes_a_receive_future() {
    let _w = watchdog(Duration::from_secs(60));
    let t = goro::time::after(Duration::from_millis(5));
    let fired = goro::go!(move || goro::block_on(t.recv_async()).is_ok());
    assert!(fired.join().unwrap());
}

#[test]
fn a_stream_ends_at_the_close_and_a_sink_sends_in_order() {
    let _w = watchdog(Duration::from_secs(60));
    let (tx, rx) = bounded::<u32>(2);
    let sending = goro::go!(move || {
        let mut sink = pin!(tx.sink());
        for i in 0..50 {
            goro::block_on(poll_fn(|cx| sink.as_mut().poll_ready(cx))).unwrap();
            sink.as_mut().start_send(i).unwrap();
        }
        goro::block_on(poll_fn(|cx| sink.as_mut().poll_close(cx))).unwrap();
    });
    let mut stream = pin!(rx.stream());
    let mut got = Vec::new();
    while let Some(v) = goro::block_on(poll_fn(|cx| stream.as_mut().poll_next(cx))) {
        got.push(v);
    }
    assert_eq!(got, (0..50).collect::<Vec<_>>());
    sending.join().unwrap();
}

/// A value that records its id in `withdrawn` if it is dropped unreceived.
struct Val {
    id: u64,
    withdrawn: Arc<std::sync::Mutex<Vec<u64>>>,
}

impl Val {
    fn receive(mut self) -> u64 {
        std::mem::replace(&mut self.id, u64::MAX)
    }
}

impl Drop for Val {
    fn drop(&mut self) {
        if self.id != u64::MAX {
            self.withdrawn.lock().unwrap().push(self.id);
        }
    }
}

/// Receive and send futures dropped at random points among blocking senders and
/// receivers: every value is received exactly once or dropped with its send
/// future (withdrawn), never both, never neither; nobody is left waiting.
#[test]
fn cancelled_futures_lose_no_value() {
    let _w = watchdog(Duration::from_secs(120));
    for cap in [0, 1, 4] {
        let (tx, rx) = bounded::<Val>(cap);
        let withdrawn = Arc::new(std::sync::Mutex::new(Vec::new()));
        let senders: Vec<_> = (0..4u64)
            .map(|s| {
                let (tx, withdrawn) = (tx.clone(), withdrawn.clone());
                goro::go!(move || {
                    for i in 0..300 {
                        let v = Val {
                            id: s * 10_000 + i,
                            withdrawn: withdrawn.clone(),
                        };
                        if i % 3 == 0 {
                            tx.send(v).map_err(drop).unwrap();
                            continue;
                        }
                        // Poll once; if pending, give up at every other value.
                        let mut f = tx.send_async(v);
                        let (_c, w) = counting();
                        match poll_once(&mut f, &w) {
                            Poll::Ready(r) => r.map_err(drop).unwrap(),
                            Poll::Pending if i % 2 == 0 => {
                                goro::yield_now();
                                if let Poll::Ready(r) = poll_once(&mut f, &w) {
                                    r.map_err(drop).unwrap();
                                }
                            }
                            Poll::Pending => goro::block_on(f).map_err(drop).unwrap(),
                        }
                    }
                })
            })
            .collect();
        drop(tx);
        let receivers: Vec<_> = (0..3)
            .map(|r| {
                let rx = rx.clone();
                goro::go!(move || {
                    let mut got = Vec::new();
                    let mut n = 0u32;
                    loop {
                        n += 1;
                        if r == 0 {
                            match rx.recv() {
                                Ok(v) => got.push(v.receive()),
                                Err(_) => break,
                            }
                            continue;
                        }
                        let mut f = rx.recv_async();
                        let (_c, w) = counting();
                        match poll_once(&mut f, &w) {
                            Poll::Ready(Ok(v)) => got.push(v.receive()),
                            Poll::Ready(Err(_)) => break,
                            Poll::Pending if n.is_multiple_of(2) => drop(f),
                            Poll::Pending => match goro::block_on(f) {
                                Ok(v) => got.push(v.receive()),
                                Err(_) => break,
                            },
                        }
                        goro::yield_now();
                    }
                    got
                })
            })
            .collect();
        senders.into_iter().for_each(|h| h.join().unwrap());
        let mut all: Vec<u64> = receivers.into_iter().flat_map(|h| h.join().unwrap()).collect();
        all.extend(withdrawn.lock().unwrap().iter());
        all.sort_unstable();
        let want: Vec<u64> = (0..4).flat_map(|s| (0..300).map(move |i| s * 10_000 + i)).collect();
        assert!(all == want, "cap {cap}: each value received or withdrawn, exactly once");
    }
}

//! Channel semantics, after Go's test/chan/*.go and runtime/chan_test.go: the sieve,
//! FIFO order across senders, non-blocking operations, close rules, zero-size
//! values, many consumers, and traffic between goroutines and plain threads.

use crate::{common, no_crowd, until_state};

use goro::chan::{self, RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError};
use goro::go;
use goro::runtime::{GoState, WaitReason};
use std::collections::HashSet;
use std::time::Duration;

/// Go's test/chan/sieve1.go: a daisy chain of filter goroutines.
#[test]
fn sieve_finds_the_first_primes() {
    let _w = common::watchdog(Duration::from_secs(60));
    let primes = go!(|| {
        let (tx, mut rx) = chan::bounded::<u32>(0);
        go!(move || {
            for i in 2.. {
                if tx.send(i).is_err() {
                    return;
                }
            }
        });
        let mut out = Vec::new();
        for _ in 0..100 {
            let p = rx.recv().unwrap();
            out.push(p);
            let (ftx, frx) = chan::bounded(0);
            let src = rx;
            go!(move || {
                for v in src.iter() {
                    if v % p != 0 && ftx.send(v).is_err() {
                        return;
                    }
                }
            });
            rx = frx;
        }
        out
    })
    .join()
    .unwrap();
    assert_eq!(&primes[..10], &[2, 3, 5, 7, 11, 13, 17, 19, 23, 29]);
    assert_eq!(primes[99], 541);
}

/// Go's test/chan/fifo.go: each sender's values arrive in its order.
#[test]
fn fifo_per_sender_with_many_senders() {
    for cap in [0, 1, 16] {
        let (tx, rx) = chan::bounded::<(usize, usize)>(cap);
        let senders: Vec<_> = (0..8)
            .map(|s| {
                let tx = tx.clone();
                go!(move || (0..2000).for_each(|i| tx.send((s, i)).unwrap()))
            })
            .collect();
        drop(tx);
        let mut next = [0usize; 8];
        for (s, i) in rx.iter() {
            assert_eq!(i, next[s], "sender {s} out of order (cap {cap})");
            next[s] += 1;
        }
        assert!(next.iter().all(|&n| n == 2000));
        senders.into_iter().for_each(|h| h.join().unwrap());
    }
}

/// Go's test/chan/nonblock.go.
#[test]
fn non_blocking_operations() {
    let (tx, rx) = chan::bounded::<i32>(0);
    assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)), "unbuffered, no receiver");
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    let (tx, rx) = chan::bounded::<i32>(2);
    assert_eq!(tx.try_send(1), Ok(()));
    assert_eq!(tx.try_send(2), Ok(()));
    assert_eq!(tx.try_send(3), Err(TrySendError::Full(3)));
    assert_eq!((tx.len(), tx.capacity(), rx.len()), (2, 2, 2));
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.try_iter().collect::<Vec<_>>(), [2]);
    // An unbuffered try_send succeeds when a receiver is already waiting.
    let (tx, rx) = chan::bounded::<i32>(0);
    let r = go!(move || rx.recv());
    loop {
        match tx.try_send(9) {
            Ok(()) => break,
            Err(TrySendError::Full(_)) => goro::yield_now(),
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(r.join().unwrap(), Ok(9));
}

#[test]
fn close_rules() {
    let (tx, rx) = chan::bounded::<i32>(3);
    tx.send(1).unwrap();
    tx.send(2).unwrap();
    tx.close();
    tx.close(); // idempotent
    assert!(tx.is_closed() && rx.is_closed());
    assert_eq!(tx.send(3), Err(SendError(3)));
    assert_eq!(tx.try_send(4), Err(TrySendError::Closed(4)));
    assert_eq!(rx.recv(), Ok(1), "buffered values survive the close");
    assert_eq!(rx.recv(), Ok(2));
    assert_eq!(rx.recv(), Err(RecvError));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Closed));
}

#[test]
fn close_wakes_blocked_receivers_and_senders() {
    let _c = no_crowd();
    let (tx, rx) = chan::bounded::<i32>(0);
    let receivers: Vec<_> = (0..5)
        .map(|_| {
            let rx = rx.clone();
            go!(move || rx.recv())
        })
        .collect();
    let (stx, _srx) = chan::bounded::<i32>(0);
    let senders: Vec<_> = (0..5)
        .map(|i| {
            let stx = stx.clone();
            go!(move || stx.send(i))
        })
        .collect();
    // Every G is parked in its blocking call when the channels close.
    for r in &receivers {
        until_state(r.id(), GoState::Waiting(WaitReason::ChanRecv));
    }
    for s in &senders {
        until_state(s.id(), GoState::Waiting(WaitReason::ChanSend));
    }
    tx.close();
    stx.close();
    for r in receivers {
        assert_eq!(r.join().unwrap(), Err(RecvError));
    }
    // Senders blocked on a channel that closes fail with their own value.
    for (i, s) in senders.into_iter().enumerate() {
        match s.join().unwrap() {
            Err(SendError(v)) => assert_eq!(v, i as i32),
            Ok(()) => panic!("nobody received, so no send can succeed"),
        }
    }
}

#[test]
fn dropping_all_senders_closes_and_dropping_all_receivers_fails_sends() {
    let _c = no_crowd();
    let (tx, rx) = chan::bounded::<i32>(1);
    let tx2 = tx.clone();
    drop(tx);
    tx2.send(5).unwrap();
    drop(tx2);
    assert_eq!(rx.recv(), Ok(5));
    assert_eq!(rx.recv(), Err(RecvError));

    let (tx, rx) = chan::bounded::<String>(0);
    let blocked = {
        let tx = tx.clone();
        go!(move || tx.send("kept".to_string()))
    };
    until_state(blocked.id(), GoState::Waiting(WaitReason::ChanSend));
    drop(rx);
    assert_eq!(blocked.join().unwrap(), Err(SendError("kept".to_string())));
    assert_eq!(tx.send("later".into()), Err(SendError("later".to_string())));
}

#[test]
fn zero_size_values() {
    for cap in [0, 1, 100] {
        let (tx, rx) = chan::bounded::<()>(cap);
        let h = go!(move || (0..1000).for_each(|_| tx.send(()).unwrap()));
        assert_eq!(rx.iter().count(), 1000);
        h.join().unwrap();
    }
}

/// Many producers, many consumers: every value exactly once.
#[test]
fn multi_consumer_each_value_once() {
    let _w = common::watchdog(Duration::from_secs(60));
    for cap in [0, 7, 128] {
        let (tx, rx) = chan::bounded::<u32>(cap);
        let producers: Vec<_> = (0..4u32)
            .map(|p| {
                let tx = tx.clone();
                go!(move || (0..5000u32).for_each(|i| tx.send(p * 10_000 + i).unwrap()))
            })
            .collect();
        drop(tx);
        let consumers: Vec<_> = (0..4)
            .map(|_| {
                let rx = rx.clone();
                go!(move || rx.iter().collect::<Vec<u32>>())
            })
            .collect();
        producers.into_iter().for_each(|h| h.join().unwrap());
        let mut all = HashSet::new();
        for c in consumers {
            for v in c.join().unwrap() {
                assert!(all.insert(v), "value {v} received twice");
            }
        }
        assert_eq!(all.len(), 20_000);
    }
}

/// Goroutines and plain threads on the same channels, both directions.
#[test]
fn goroutine_thread_traffic() {
    let (to_g, from_t) = chan::bounded::<u64>(0);
    let (to_t, from_g) = chan::bounded::<u64>(0);
    let g = go!(move || {
        for v in from_t.iter() {
            to_t.send(v * 2).unwrap();
        }
    });
    let t = std::thread::spawn(move || {
        let mut sum = 0;
        for i in 0..10_000 {
            to_g.send(i).unwrap();
            sum += from_g.recv().unwrap();
        }
        sum
    });
    assert_eq!(t.join().unwrap(), 2 * (0..10_000u64).sum::<u64>());
    g.join().unwrap();
}

#[test]
fn timeouts_hand_values_back() {
    let (tx, rx) = chan::bounded::<i32>(0);
    assert_eq!(
        tx.send_timeout(1, Duration::from_millis(5)),
        Err(SendTimeoutError::Timeout(1))
    );
    assert_eq!(
        rx.recv_timeout(Duration::from_millis(5)),
        Err(RecvTimeoutError::Timeout)
    );
    let h = go!(move || (tx.send_timeout(2, Duration::from_millis(5)), tx));
    let (r, tx) = h.join().unwrap();
    assert_eq!(r, Err(SendTimeoutError::Timeout(2)));
    // A timeout that does not expire: the value goes through.
    let h = go!(move || rx.recv_timeout(Duration::from_secs(30)));
    tx.send(3).unwrap();
    assert_eq!(h.join().unwrap(), Ok(3));
}

#[test]
fn iter_ends_at_close() {
    let (tx, rx) = chan::bounded(4);
    go!(move || {
        for i in 0..10 {
            tx.send(i).unwrap();
        }
    });
    assert_eq!((&rx).into_iter().sum::<i32>(), 45);
}

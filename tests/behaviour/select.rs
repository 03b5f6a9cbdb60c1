//! `select!`, after Go's select tests: uniform choice among ready arms, default,
//! send and receive arms, a channel named twice, many channels under stress,
//! timeouts, evaluation order, and control flow in arm bodies.

use crate::common;

use goro::chan::{self, RecvError, SendError};
use goro::{go, select};
use std::cell::RefCell;
use std::time::Duration;

#[test]
fn ready_arms_are_chosen_uniformly() {
    let (a_tx, a_rx) = chan::bounded::<u8>(1);
    let (b_tx, b_rx) = chan::bounded::<u8>(1);
    const N: u32 = 100_000;
    let mut a = 0u32;
    for _ in 0..N {
        a_tx.try_send(1).unwrap();
        b_tx.try_send(2).unwrap();
        select! {
            recv(a_rx) -> v => { assert_eq!(v, Ok(1)); a += 1; b_rx.try_recv().unwrap(); },
            recv(b_rx) -> v => { assert_eq!(v, Ok(2)); a_rx.try_recv().unwrap(); },
        }
    }
    let share = f64::from(a) / f64::from(N);
    assert!((0.45..=0.55).contains(&share), "arm A chosen {share:.3} of the time");
}

#[test]
fn default_runs_when_nothing_is_ready() {
    let (tx, rx) = chan::bounded::<i32>(0);
    let r = select! {
        recv(rx) -> _ => 1,
        send(tx, 5) -> _ => 2,
        default => 3,
    };
    assert_eq!(r, 3, "unbuffered with no partner: nothing ready");
    let only_default = select! { default => "d" };
    assert_eq!(only_default, "d");
}

#[test]
fn send_and_recv_arms_complete_with_partners() {
    let (tx, rx) = chan::bounded::<i32>(0);
    let h = go!(move || rx.recv().unwrap());
    let (_unused_tx, never_ready) = chan::bounded::<i32>(0);
    let r: Result<(), SendError<i32>> = select! {
        send(tx, 42) -> res => res,
        recv(never_ready) -> _ => unreachable!(),
    };
    assert_eq!(r, Ok(()));
    assert_eq!(h.join().unwrap(), 42);
}

#[test]
fn closed_channels_are_ready() {
    let (tx, rx) = chan::bounded::<i32>(0);
    tx.close();
    let r: Result<i32, RecvError> = select! { recv(rx) -> v => v };
    assert_eq!(r, Err(RecvError));
    let r: Result<(), SendError<i32>> = select! { send(tx, 7) -> res => res };
    assert_eq!(r, Err(SendError(7)));
}

#[test]
fn the_same_channel_in_several_arms() {
    let (tx, rx) = chan::bounded::<i32>(1);
    let mut counts = [0; 2];
    for i in 0..1000 {
        let r = go!({
            let rx = rx.clone();
            move || {
                select! {
                    recv(rx) -> v => (0, v.unwrap()),
                    recv(rx) -> v => (1, v.unwrap()),
                }
            }
        });
        if i % 2 == 0 {
            goro::yield_now(); // sometimes the select blocks first
        }
        tx.send(i).unwrap();
        let (arm, v) = r.join().unwrap();
        assert_eq!(v, i);
        counts[arm] += 1;
    }
    assert!(counts[0] > 0 && counts[1] > 0, "{counts:?}");
    // Both directions of one channel in one select.
    let (tx, rx) = chan::bounded::<i32>(1);
    let r = select! {
        send(tx, 1) -> _ => "sent",
        recv(rx) -> _ => "received",
    };
    assert_eq!(r, "sent", "the buffer was empty, so only the send was ready");
    assert_eq!(rx.try_recv(), Ok(1));
}

/// Go's select stress: many goroutines selecting over many channels; every value is
/// received exactly once and nothing deadlocks.
#[test]
fn select_stress_over_many_channels() {
    let _w = common::watchdog(Duration::from_secs(120));
    const CHANS: usize = 8;
    const PER: u64 = 2000;
    let chans: Vec<_> = (0..CHANS).map(|i| chan::bounded::<u64>(i % 3)).collect();
    let producers: Vec<_> = chans
        .iter()
        .enumerate()
        .map(|(i, (tx, _))| {
            let tx = tx.clone();
            go!(move || (0..PER).for_each(|v| tx.send(i as u64 * PER + v).unwrap()))
        })
        .collect();
    let rxs: Vec<_> = chans.iter().map(|(_, rx)| rx.clone()).collect();
    drop(chans);
    let consumers: Vec<_> = (0..6)
        .map(|_| {
            let rxs = rxs.clone();
            go!(move || {
                let mut got = Vec::new();
                let mut open = [true; CHANS];
                while open.iter().any(|&o| o) {
                    // Closed channels are switched off with `never()`.
                    let r: Vec<chan::Receiver<u64>> = (0..CHANS)
                        .map(|i| if open[i] { rxs[i].clone() } else { chan::never() })
                        .collect();
                    select! {
                        recv(r[0]) -> v => match v { Ok(v) => got.push(v), Err(_) => open[0] = false },
                        recv(r[1]) -> v => match v { Ok(v) => got.push(v), Err(_) => open[1] = false },
                        recv(r[2]) -> v => match v { Ok(v) => got.push(v), Err(_) => open[2] = false },
                        recv(r[3]) -> v => match v { Ok(v) => got.push(v), Err(_) => open[3] = false },
                        recv(r[4]) -> v => match v { Ok(v) => got.push(v), Err(_) => open[4] = false },
                        recv(r[5]) -> v => match v { Ok(v) => got.push(v), Err(_) => open[5] = false },
                        recv(r[6]) -> v => match v { Ok(v) => got.push(v), Err(_) => open[6] = false },
                        recv(r[7]) -> v => match v { Ok(v) => got.push(v), Err(_) => open[7] = false },
                    }
                }
                got
            })
        })
        .collect();
    drop(rxs);
    producers.into_iter().for_each(|h| h.join().unwrap());
    let mut all: Vec<u64> = consumers.into_iter().flat_map(|h| h.join().unwrap()).collect();
    all.sort_unstable();
    assert_eq!(all, (0..CHANS as u64 * PER).collect::<Vec<_>>());
}

#[test]
fn timeout_arm_fires_and_a_ready_arm_beats_it() {
    let (_tx, rx) = chan::bounded::<i32>(0);
    let t = std::time::Instant::now();
    let r = select! {
        recv(rx) -> _ => "value",
        recv(goro::time::after(Duration::from_millis(20))) -> _ => "timeout",
    };
    assert_eq!(r, "timeout");
    assert!(t.elapsed() >= Duration::from_millis(20));
    let (tx, rx) = chan::bounded::<i32>(1);
    tx.send(1).unwrap();
    let r = select! {
        recv(rx) -> _ => "value",
        recv(goro::time::after(Duration::from_secs(60))) -> _ => "timeout",
    };
    assert_eq!(r, "value");
}

#[test]
fn operands_are_evaluated_once_in_source_order() {
    let log = RefCell::new(Vec::new());
    let (tx, rx) = chan::bounded::<i32>(1);
    let (tx2, rx2) = chan::bounded::<i32>(1);
    fn pick<T>(log: &RefCell<Vec<&'static str>>, name: &'static str, v: T) -> T {
        log.borrow_mut().push(name);
        v
    }
    let r = select! {
        recv(pick(&log, "rx", &rx)) -> _ => 0,
        send(pick(&log, "tx2", &tx2), pick(&log, "value", 5)) -> _ => 1,
        send(pick(&log, "tx", &tx), pick(&log, "value2", 6)) -> _ => 2,
    };
    assert_eq!(*log.borrow(), ["rx", "tx2", "value", "tx", "value2"]);
    assert!(r == 1 || r == 2);
    // The value of the arm not chosen was dropped, not sent.
    assert_eq!(rx2.try_recv().is_ok() as i32 + rx.try_recv().is_ok() as i32, 1);
}

#[test]
fn arm_bodies_control_the_enclosing_loop() {
    let (tx, rx) = chan::bounded::<i32>(10);
    for i in 0..10 {
        tx.send(i).unwrap();
    }
    tx.close();
    let mut seen = Vec::new();
    loop {
        select! {
            recv(rx) -> v => {
                let Ok(v) = v else { break };
                if v % 2 == 0 {
                    continue;
                }
                seen.push(v);
            }
        }
    }
    assert_eq!(seen, [1, 3, 5, 7, 9]);
    fn first(rx: &chan::Receiver<i32>) -> Option<i32> {
        select! { recv(rx) -> v => return v.ok(), default => {} }
        None
    }
    let (tx, rx) = chan::bounded(1);
    assert_eq!(first(&rx), None);
    tx.send(4).unwrap();
    assert_eq!(first(&rx), Some(4));
}

#[test]
fn select_from_a_plain_thread_and_nested() {
    let (tx, rx) = chan::bounded::<i32>(0);
    let (tx2, rx2) = chan::bounded::<i32>(0);
    go!(move || tx.send(1).unwrap());
    let r = select! {
        recv(rx) -> v => {
            let inner = select! { recv(rx2) -> _ => -1, default => v.unwrap() * 10 };
            inner
        }
    };
    assert_eq!(r, 10);
    drop(tx2);
}

/// A select loop over a quiet channel must not leave a waiter behind per round.
#[test]
fn losing_arms_are_unregistered() {
    let (quiet_tx, quiet_rx) = chan::bounded::<i32>(0);
    let (busy_tx, busy_rx) = chan::bounded::<i32>(0);
    let h = go!(move || {
        for i in 0..20_000 {
            busy_tx.send(i).unwrap();
        }
    });
    let mut n = 0;
    while n < 20_000 {
        select! {
            recv(quiet_rx) -> _ => unreachable!(),
            recv(busy_rx) -> _ => n += 1,
        }
    }
    h.join().unwrap();
    // With stale waiters left behind, this send would "succeed" into a dead select.
    assert!(quiet_tx.try_send(1).is_err());
}

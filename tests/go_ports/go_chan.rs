//! Go's channel and select tests, ported to goro.
//!
//! Sources: golang/go `src/runtime/chan_test.go` (TestChan and the tests after
//! it), `src/runtime/chanbarrier_test.go` (TestChanSendBarrier,
//! TestChanSendSelectBarrier) and, since the runtime has no separate
//! `select_test.go`, the select programs of `test/chan/` (doubleselect.go,
//! select6.go, select7.go, nonblock.go).
//!
//! Translation rules (goro's API contract, API.md, has the details):
//! - each test body runs inside a goroutine, as a Go test does;
//! - Go's nil channel is `chan::never()` for a receive arm; for a send arm it is a
//!   `Sender` of an unbuffered channel whose receiver is kept alive and never read;
//! - a goro channel also closes when every `Sender` (or every `Receiver`) is
//!   dropped, so every channel that Go leaves open keeps a live handle on the side
//!   that would otherwise vanish;
//! - `close()` is idempotent in goro, so Go's double-close panics are not checked;
//! - Go's `v, ok := <-c` on a closed channel is `Err(RecvError)` here;
//! - iteration counts are Go's full scales unless a comment says otherwise (the
//!   whole file runs in a few seconds in a debug build);
//! - where Go sleeps to let another goroutine reach a blocking call first, the
//!   port sleeps too, but only to widen the window for a bug: no check depends on
//!   the sleep being long enough.

use crate::{go_test, join};

use goro::chan::{self, Receiver, RecvError, Sender, TryRecvError, TrySendError};
use goro::sync::WaitGroup;
use goro::{go, select};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Go's `defer wg.Done()`.
struct DoneOnDrop(WaitGroup);

impl Drop for DoneOnDrop {
    fn drop(&mut self) {
        self.0.done();
    }
}

/// Uses about 1 KiB of stack per level, as Go's `stackGrowthRecursive` does.
#[inline(never)]
fn stack_growth_recursive(depth: usize) -> u64 {
    let mut pad = [0u64; 128];
    pad[depth % 128] = depth as u64;
    let pad = std::hint::black_box(pad);
    let below = if depth > 0 {
        stack_growth_recursive(depth - 1)
    } else {
        0
    };
    pad.iter().sum::<u64>() + below
}

/// A send arm that is never ready (Go's send on a nil channel): the receiver is
/// returned so the caller keeps it alive, else the channel would close.
fn never_sender<T>() -> (Sender<T>, Receiver<T>) {
    chan::bounded(0)
}

/// Widens the window in which a wrongly completed operation would show.
fn pause() {
    goro::time::sleep(Duration::from_millis(1));
}

// ---------------------------------------------------------------------------
// TestChan
// ---------------------------------------------------------------------------

/// Go: 200 capacities (20 with -short): the full scale.
const CHAN_CAPS: usize = 200;

// Ports TestChan: for capacities 0..CHAN_CAPS, checks that a receive on an empty
// channel and a send on a full one block, that non-blocking forms do not, that a
// closed channel yields its buffered values in order and then "closed", that a
// close wakes a blocked receiver, FIFO delivery from one sender, that 4 senders
// and 4 receivers lose and duplicate nothing, and len/cap.
#[test]
fn test_chan() {
    go_test(|| {
        for cap in 0..CHAN_CAPS {
            chan_recv_blocks_on_empty(cap);
            chan_send_blocks_on_full(cap);
            chan_closed_drains_then_reports_closed(cap);
            chan_close_wakes_receiver(cap);
            chan_fifo_and_many_to_many(cap);
            chan_len_cap(cap);
        }
    });
}

fn chan_recv_blocks_on_empty(cap: usize) {
    let (tx, rx) = chan::bounded::<i32>(cap);
    let recv1 = Arc::new(AtomicBool::new(false));
    let recv2 = Arc::new(AtomicBool::new(false));
    let h1 = {
        let (rx, flag) = (rx.clone(), recv1.clone());
        go!(move || {
            let v = rx.recv();
            flag.store(true, Ordering::SeqCst);
            v
        })
    };
    let h2 = {
        let (rx, flag) = (rx.clone(), recv2.clone());
        go!(move || {
            let v = rx.recv();
            flag.store(true, Ordering::SeqCst);
            v
        })
    };
    pause();
    assert!(
        !recv1.load(Ordering::SeqCst) && !recv2.load(Ordering::SeqCst),
        "chan[{cap}]: receive from empty chan"
    );
    // Non-blocking receives must not block (and must not succeed).
    select! {
        recv(rx) -> v => panic!("chan[{cap}]: receive from empty chan: {v:?}"),
        default => {}
    }
    assert_eq!(
        rx.try_recv(),
        Err(TryRecvError::Empty),
        "chan[{cap}]: receive from empty chan"
    );
    tx.send(0).unwrap();
    tx.send(0).unwrap();
    assert_eq!(join(h1), Ok(0), "chan[{cap}]");
    assert_eq!(join(h2), Ok(0), "chan[{cap}]");
}

fn chan_send_blocks_on_full(cap: usize) {
    let (tx, rx) = chan::bounded::<usize>(cap);
    for i in 0..cap {
        tx.send(i).unwrap();
    }
    let sent = Arc::new(AtomicBool::new(false));
    let h = {
        let (tx, sent) = (tx.clone(), sent.clone());
        go!(move || {
            tx.send(0).unwrap();
            sent.store(true, Ordering::SeqCst);
        })
    };
    pause();
    assert!(!sent.load(Ordering::SeqCst), "chan[{cap}]: send to full chan");
    // Non-blocking sends must not block (and must not succeed).
    select! {
        send(tx, 0) -> r => panic!("chan[{cap}]: send to full chan: {r:?}"),
        default => {}
    }
    assert_eq!(
        tx.try_send(7),
        Err(TrySendError::Full(7)),
        "chan[{cap}]: send to full chan"
    );
    rx.recv().unwrap();
    join(h);
    assert!(sent.load(Ordering::SeqCst));
}

fn chan_closed_drains_then_reports_closed(cap: usize) {
    let (tx, rx) = chan::bounded::<usize>(cap);
    for i in 0..cap {
        tx.send(i).unwrap();
    }
    tx.close();
    for i in 0..cap {
        assert_eq!(rx.recv(), Ok(i), "chan[{cap}]");
    }
    // Go: the zero value, then the zero value with ok == false.
    assert_eq!(rx.recv(), Err(RecvError), "chan[{cap}]");
    assert_eq!(rx.recv(), Err(RecvError), "chan[{cap}]");
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed), "chan[{cap}]");
    let r = select! { recv(rx) -> v => v, default => panic!("chan[{cap}]: closed chan not ready") };
    assert_eq!(r, Err(RecvError), "chan[{cap}]");
}

fn chan_close_wakes_receiver(cap: usize) {
    let (tx, rx) = chan::bounded::<i32>(cap);
    let (done_tx, done_rx) = chan::bounded::<bool>(0);
    let h = go!(move || {
        let r = rx.recv();
        done_tx.send(r == Err(RecvError)).unwrap();
    });
    pause();
    tx.close();
    assert!(
        done_rx.recv().unwrap(),
        "chan[{cap}]: received a value from a closed chan"
    );
    join(h);
}

fn chan_fifo_and_many_to_many(cap: usize) {
    let (tx, rx) = chan::bounded::<i32>(cap);
    // One sender, 100 values, received in order; twice (Go's two receive forms
    // are one form here).
    for _round in 0..2 {
        let h = {
            let tx = tx.clone();
            go!(move || (0..100).for_each(|i| tx.send(i).unwrap()))
        };
        for i in 0..100 {
            assert_eq!(rx.recv(), Ok(i), "chan[{cap}]: FIFO");
        }
        join(h);
    }

    // 4 senders of 0..L and 4 receivers of L values each: every value arrives
    // exactly P times.
    const P: usize = 4;
    const L: i32 = 1000;
    let senders: Vec<_> = (0..P)
        .map(|_| {
            let tx = tx.clone();
            go!(move || (0..L).for_each(|i| tx.send(i).unwrap()))
        })
        .collect();
    let (done_tx, done_rx) = chan::bounded::<HashMap<i32, usize>>(0);
    let receivers: Vec<_> = (0..P)
        .map(|_| {
            let (rx, done_tx) = (rx.clone(), done_tx.clone());
            go!(move || {
                let mut recv = HashMap::new();
                for _ in 0..L {
                    *recv.entry(rx.recv().unwrap()).or_insert(0) += 1;
                }
                done_tx.send(recv).unwrap();
            })
        })
        .collect();
    let mut recv = HashMap::new();
    for _ in 0..P {
        for (k, v) in done_rx.recv().unwrap() {
            *recv.entry(k).or_insert(0) += v;
        }
    }
    assert_eq!(recv.len(), L as usize, "chan[{cap}]: distinct values received");
    for (k, v) in &recv {
        assert_eq!(*v, P, "chan[{cap}]: value {k} received {v} times");
    }
    senders.into_iter().chain(receivers).for_each(join);
}

fn chan_len_cap(cap: usize) {
    let (tx, rx) = chan::bounded::<usize>(cap);
    assert_eq!((rx.len(), rx.capacity()), (0, cap), "chan[{cap}]: len/cap");
    assert_eq!((tx.len(), tx.capacity()), (0, cap), "chan[{cap}]: len/cap");
    for i in 0..cap {
        tx.send(i).unwrap();
    }
    assert_eq!((rx.len(), rx.capacity()), (cap, cap), "chan[{cap}]: len/cap");
    assert_eq!((tx.len(), tx.capacity()), (cap, cap), "chan[{cap}]: len/cap");
}

// ---------------------------------------------------------------------------
// Non-blocking races
// ---------------------------------------------------------------------------

// Ports TestNonblockRecvRace: a buffered channel holding one value is closed
// while another goroutine polls it; the poll must see it ready (a value or the
// close), never take `default`.
#[test]
fn test_nonblock_recv_race() {
    go_test(|| {
        // Go: 10000 (100 with -short).
        for _ in 0..10_000 {
            let (tx, rx) = chan::bounded::<i32>(1);
            tx.send(1).unwrap();
            let h = {
                let rx = rx.clone();
                go!(move || select! { recv(rx) -> _ => true, default => false })
            };
            tx.close();
            let _ = rx.recv();
            assert!(join(h), "chan is not ready");
        }
    });
}

// Ports TestNonblockSelectRace: from the moment the polling goroutine starts,
// at least one of c1, c2 is ready (c2 is filled before c1 may be drained), so a
// select over both with `default` must never take `default`: select must act
// on one snapshot of the channels.
#[test]
fn test_nonblock_select_race() {
    nonblock_select_race(false);
}

// Ports TestNonblockSelectRace2: as above, with c2 unbuffered and closed
// instead of filled.
#[test]
fn test_nonblock_select_race2() {
    nonblock_select_race(true);
}

fn nonblock_select_race(close_c2: bool) {
    go_test(move || {
        let (done_tx, done_rx) = chan::bounded::<bool>(1);
        // Go: 100000 (1000 with -short).
        for _ in 0..100_000 {
            let (c1_tx, c1_rx) = chan::bounded::<i32>(1);
            let (c2_tx, c2_rx) = chan::bounded::<i32>(if close_c2 { 0 } else { 1 });
            c1_tx.send(1).unwrap();
            {
                let (c1, c2, done) = (c1_rx.clone(), c2_rx.clone(), done_tx.clone());
                go!(move || {
                    let ready = select! {
                        recv(c1) -> _ => true,
                        recv(c2) -> _ => true,
                        default => false,
                    };
                    done.send(ready).unwrap();
                });
            }
            if close_c2 {
                c2_tx.close();
            } else {
                c2_tx.send(1).unwrap();
            }
            select! {
                recv(c1_rx) -> _ => {},
                default => {}
            }
            assert!(done_rx.recv().unwrap(), "no chan is ready");
        }
    });
}

// ---------------------------------------------------------------------------
// Select stress
// ---------------------------------------------------------------------------

// Ports TestSelfSelect: two goroutines each select between sending on and
// receiving from the same channel (both arm orders); nothing may deadlock, and
// on an unbuffered channel a goroutine must never receive its own value.
#[test]
fn test_self_select() {
    go_test(|| {
        for cap in [0usize, 10] {
            let wg = WaitGroup::new();
            wg.add(2);
            let (tx, rx) = chan::bounded::<usize>(cap);
            let hs: Vec<_> = (0..2usize)
                .map(|p| {
                    let (tx, rx, wg) = (tx.clone(), rx.clone(), wg.clone());
                    go!(move || {
                        let _done = DoneOnDrop(wg);
                        let check = |v: Result<usize, RecvError>| {
                            let v = v.expect("channel stays open");
                            assert!(!(cap == 0 && v == p), "self receive (goroutine {p})");
                        };
                        for i in 0..1000 {
                            if p == 0 || i % 2 == 0 {
                                select! {
                                    send(tx, p) -> r => r.unwrap(),
                                    recv(rx) -> v => check(v),
                                }
                            } else {
                                select! {
                                    recv(rx) -> v => check(v),
                                    send(tx, p) -> r => r.unwrap(),
                                }
                            }
                        }
                    })
                })
                .collect();
            wg.wait();
            hs.into_iter().for_each(join);
        }
    });
}

// Ports TestSelectStress: four channels (two unbuffered, capacities 2 and 3);
// per channel one plain sender and one plain receiver of N values, plus one
// goroutine sending N values on each through a single 4-arm select and one
// receiving N from each the same way, switching an arm off (Go: nil channel)
// once its channel is done. The whole must not deadlock.
#[test]
fn test_select_stress() {
    go_test(|| {
        const N: usize = 100_000; // Go: 1e5 (1e4 with -short)
        let chans: Vec<(Sender<i32>, Receiver<i32>)> = [0, 0, 2, 3].iter().map(|&cap| chan::bounded(cap)).collect();
        let wg = WaitGroup::new();
        wg.add(10);
        let mut hs = Vec::new();
        for (tx, rx) in &chans {
            let (tx, wg1) = (tx.clone(), wg.clone());
            hs.push(go!(move || {
                let _done = DoneOnDrop(wg1);
                for _ in 0..N {
                    tx.send(0).unwrap();
                }
            }));
            let (rx, wg2) = (rx.clone(), wg.clone());
            hs.push(go!(move || {
                let _done = DoneOnDrop(wg2);
                for _ in 0..N {
                    rx.recv().unwrap();
                }
            }));
        }
        {
            let mut c: Vec<Sender<i32>> = chans.iter().map(|(tx, _)| tx.clone()).collect();
            let wg = wg.clone();
            hs.push(go!(move || {
                let _done = DoneOnDrop(wg);
                let (off, _off_rx) = never_sender::<i32>();
                let mut n = [0usize; 4];
                for _ in 0..4 * N {
                    let hit = select! {
                        send(c[3], 0) -> r => { r.unwrap(); 3 },
                        send(c[2], 0) -> r => { r.unwrap(); 2 },
                        send(c[0], 0) -> r => { r.unwrap(); 0 },
                        send(c[1], 0) -> r => { r.unwrap(); 1 },
                    };
                    n[hit] += 1;
                    if n[hit] == N {
                        c[hit] = off.clone();
                    }
                }
            }));
        }
        {
            let mut c: Vec<Receiver<i32>> = chans.iter().map(|(_, rx)| rx.clone()).collect();
            let wg = wg.clone();
            hs.push(go!(move || {
                let _done = DoneOnDrop(wg);
                let mut n = [0usize; 4];
                for _ in 0..4 * N {
                    let hit = select! {
                        recv(c[0]) -> v => { v.unwrap(); 0 },
                        recv(c[1]) -> v => { v.unwrap(); 1 },
                        recv(c[2]) -> v => { v.unwrap(); 2 },
                        recv(c[3]) -> v => { v.unwrap(); 3 },
                    };
                    n[hit] += 1;
                    if n[hit] == N {
                        c[hit] = chan::never();
                    }
                }
            }));
        }
        wg.wait();
        hs.into_iter().for_each(join);
    });
}

// Ports TestSelectFairness: a goroutine selects over two always-ready buffered
// channels (and two idle unbuffered ones) and forwards what it got; the two
// ready arms must each win about half the time (within 10 sigma).
#[test]
fn test_select_fairness() {
    go_test(|| {
        const TRIALS: usize = 10_000;
        let (c1_tx, c1) = chan::bounded::<u8>(TRIALS + 1);
        let (c2_tx, c2) = chan::bounded::<u8>(TRIALS + 1);
        for _ in 0..TRIALS + 1 {
            c1_tx.send(1).unwrap();
            c2_tx.send(2).unwrap();
        }
        // Idle channels: their senders stay alive so that they never close.
        let (_c3_tx, c3) = chan::bounded::<u8>(0);
        let (_c4_tx, c4) = chan::bounded::<u8>(0);
        let (out_tx, out) = chan::bounded::<u8>(0);
        let (done_tx, done) = chan::bounded::<u8>(0);
        let wg = WaitGroup::new();
        wg.add(1);
        let h = {
            let wg = wg.clone();
            go!(move || {
                let _done = DoneOnDrop(wg);
                loop {
                    let b = select! {
                        recv(c3) -> b => b.unwrap(),
                        recv(c4) -> b => b.unwrap(),
                        recv(c1) -> b => b.unwrap(),
                        recv(c2) -> b => b.unwrap(),
                    };
                    select! {
                        send(out_tx, b) -> r => r.unwrap(),
                        recv(done) -> _ => return,
                    }
                }
            })
        };
        let (mut cnt1, mut cnt2) = (0usize, 0usize);
        for _ in 0..TRIALS {
            match out.recv().unwrap() {
                1 => cnt1 += 1,
                2 => cnt2 += 1,
                b => panic!("unexpected value {b} on channel"),
            }
        }
        let mean = TRIALS as f64 * 0.5;
        let stddev = (TRIALS as f64 * 0.5 * 0.5).sqrt();
        assert!(
            (cnt1 as f64 - mean).abs() <= 10.0 * stddev,
            "unfair select: in {TRIALS} trials, results were {cnt1}, {cnt2}"
        );
        done_tx.close();
        wg.wait();
        join(h);
    });
}

// Ports TestChanSendInterface: sends of a shared (reference-counted) value on a
// full channel through selects with `default`, one with two send arms. Nothing
// may block, and the values of the arms not taken are dropped (goro's rule).
#[test]
fn test_chan_send_interface() {
    go_test(|| {
        struct Mt;
        let m = Arc::new(Mt);
        let (tx, rx) = chan::bounded::<Arc<Mt>>(1);
        tx.send(m.clone()).unwrap();
        select! {
            send(tx, m.clone()) -> r => panic!("send to full chan succeeded: {:?}", r.is_ok()),
            default => {}
        }
        select! {
            send(tx, m.clone()) -> r => panic!("send to full chan succeeded: {:?}", r.is_ok()),
            send(tx, Arc::new(Mt)) -> r => panic!("send to full chan succeeded: {:?}", r.is_ok()),
            default => {}
        }
        assert_eq!(Arc::strong_count(&m), 2, "values of arms not taken must be dropped");
        assert!(Arc::ptr_eq(&rx.recv().unwrap(), &m));
        assert_eq!(Arc::strong_count(&m), 1);
    });
}

// Ports TestPseudoRandomSend: a select with two send arms on the same channel
// (values 1 and 0) feeds a receiver that yields before each receive; over 100
// sends each value must show up more than 10 times, unbuffered and buffered.
// (Fails on goro at cap 0 as of this writing: a parked select queues its arms
// in source order, so the receiver always completes the first arm; Go queues
// them in an order derived from the random poll order.)
#[test]
fn test_pseudo_random_send() {
    go_test(|| {
        const N: usize = 100;
        for cap in [0, N] {
            let (tx, rx) = chan::bounded::<usize>(cap);
            let h = go!(move || {
                (0..N)
                    .map(|_| {
                        goro::yield_now();
                        rx.recv().unwrap()
                    })
                    .collect::<Vec<_>>()
            });
            for _ in 0..N {
                select! {
                    send(tx, 1) -> r => r.unwrap(),
                    send(tx, 0) -> r => r.unwrap(),
                }
            }
            let l = join(h);
            let n1: usize = l.iter().sum();
            let n0 = N - n1;
            assert!(
                n0 > N / 10 && n1 > N / 10,
                "want pseudorandom, got {n0} zeros and {n1} ones (chan cap {cap})"
            );
        }
    });
}

// Ports TestMultiConsumer: a feeder pushes values through a work channel to 23
// workers (some of which yield on particular values to disturb the order),
// which forward them to a result channel; the feeder closes the work channel,
// waits for the workers and closes the results. Count and sum must match.
#[test]
fn test_multi_consumer() {
    go_test(|| {
        const NWORK: usize = 23;
        const NITER: usize = 271_828; // as Go
        const PN: [usize; 10] = [2, 3, 7, 11, 13, 17, 19, 23, 27, 31];
        let (q_tx, q_rx) = chan::bounded::<usize>(NWORK * 3);
        let (r_tx, r_rx) = chan::bounded::<usize>(NWORK * 3);
        let wg = WaitGroup::new();
        let mut workers = Vec::new();
        for w in 0..NWORK {
            wg.add(1);
            let (q, r, wg) = (q_rx.clone(), r_tx.clone(), wg.clone());
            workers.push(go!(move || {
                for v in &q {
                    if PN[w % PN.len()] == v {
                        goro::yield_now();
                    }
                    r.send(v).unwrap();
                }
                wg.done();
            }));
        }
        drop(q_rx);
        let feeder = go!(move || {
            let mut expect = 0;
            for i in 0..NITER {
                let v = PN[i % PN.len()];
                expect += v;
                q_tx.send(v).unwrap();
            }
            q_tx.close(); // no more work
            wg.wait(); // workers done
            r_tx.close(); // so no more results
            expect
        });
        let (mut n, mut s) = (0, 0);
        for v in &r_rx {
            n += 1;
            s += v;
        }
        let expect = join(feeder);
        assert!(
            n == NITER && s == expect,
            "expected sum {expect} (got {s}) from {NITER} iter (saw {n})"
        );
        workers.into_iter().for_each(join);
    });
}

// Ports TestShrinkStackDuringBlockedSend as a plain blocked-send test: the
// sender briefly uses a lot of stack between sends and then blocks in an
// unbuffered send; values must arrive intact and in order.
#[test]
fn test_blocked_send_after_deep_stack() {
    go_test(|| {
        const N: usize = 10;
        let (tx, rx) = chan::bounded::<usize>(0);
        let (done_tx, done_rx) = chan::bounded::<()>(0);
        go!(move || {
            for i in 0..N {
                tx.send(i).unwrap();
                std::hint::black_box(stack_growth_recursive(20));
            }
            done_tx.send(()).unwrap();
        });
        for i in 0..N {
            assert_eq!(rx.recv(), Ok(i), "bad channel read");
            pause(); // lets the sender use its stack and block again
        }
        done_rx.recv().unwrap();
    });
}

// Ports TestNoShrinkStackWhileParking without the GC: many sender/receiver
// pairs where the sender grows its stack between unbuffered sends and the
// receiver sleeps briefly before each receive, so the sender fully parks
// (exercising the window between "about to park" and "parked").
#[test]
fn test_park_after_deep_stack() {
    go_test(|| {
        const N: usize = 10;
        for _ in 0..N * 20 {
            let (tx, rx) = chan::bounded::<usize>(0);
            let (done_tx, done_rx) = chan::bounded::<()>(0);
            let done2 = done_tx.clone();
            go!(move || {
                for i in 0..N {
                    goro::time::sleep(Duration::from_micros(10));
                    assert_eq!(rx.recv(), Ok(i));
                }
                done_tx.send(()).unwrap();
            });
            go!(move || {
                for i in 0..N {
                    tx.send(i).unwrap();
                    std::hint::black_box(stack_growth_recursive(20));
                }
                done2.send(()).unwrap();
            });
            done_rx.recv().unwrap();
            done_rx.recv().unwrap();
        }
    });
}

// Ports TestSelectDuplicateChannel: goroutine A selects on c (twice) and d,
// goroutine B then blocks on c. Waking A through d must take both of A's
// entries out of c's queue, so that a later send on c reaches B.
#[test]
fn test_select_duplicate_channel() {
    go_test(|| {
        let (c_tx, c_rx) = chan::bounded::<i32>(0);
        let (d_tx, d_rx) = chan::bounded::<i32>(0);
        let (e_tx, e_rx) = chan::bounded::<i32>(0);
        let a = {
            let c = c_rx.clone();
            go!(move || {
                let got = select! {
                    recv(c) -> v => ("c", v),
                    recv(c) -> v => ("c", v),
                    recv(d_rx) -> v => ("d", v),
                };
                e_tx.send(9).unwrap();
                got
            })
        };
        pause(); // A should queue on c first
        let b = go!(move || c_rx.recv());
        pause(); // then B
        d_tx.send(7).unwrap(); // wakes A, which must leave c's queue cleanly
        assert_eq!(e_rx.recv(), Ok(9));
        c_tx.send(8).unwrap(); // must reach B, not a stale entry of A
        assert_eq!(join(b), Ok(8));
        assert_eq!(join(a), ("d", Ok(7)));
    });
}

// Ports TestSelectStackAdjust as a plain select: two goroutines grow their stack,
// then wait in a select over c and d (one with every channel named twice, the
// other with nil-channel stand-ins); closing d wakes both, and a local that a
// `c` arm would have overwritten must be untouched.
#[test]
fn test_select_stack_adjust() {
    go_test(|| {
        let (c_tx, c_rx) = chan::bounded::<usize>(0);
        let (d_tx, d_rx) = chan::bounded::<usize>(0);
        let spawn = |dup: bool| {
            let (c, d) = (c_rx.clone(), d_rx.clone());
            let (ready_tx, ready_rx) = chan::bounded::<bool>(0);
            let h = go!(move || {
                std::hint::black_box(stack_growth_recursive((10 << 10) / (128 * 8)));
                ready_tx.send(true).unwrap();
                let mut val = 42;
                let mut cx: *const i32 = &val;
                let (c2, d2) = if dup {
                    (c.clone(), d.clone())
                } else {
                    (chan::never(), chan::never())
                };
                let arm = select! {
                    recv(c) -> v => { cx = v.unwrap() as *const i32; "c" },
                    recv(c2) -> _ => "c2",
                    recv(d) -> v => { assert_eq!(v, Err(RecvError)); "d" },
                    recv(d2) -> v => { assert_eq!(v, Err(RecvError)); "d2" },
                };
                assert!(arm == "d" || arm == "d2", "woken by arm {arm}");
                assert!(std::ptr::eq(cx, &val), "cx no longer points to val");
                assert_eq!(val, 42, "val changed");
                val = 43;
                assert_eq!(std::hint::black_box(val), 43);
                ready_tx.send(true).unwrap();
            });
            (h, ready_rx)
        };
        let (h1, ready1) = spawn(false);
        let (h2, ready2) = spawn(true);
        assert_eq!(ready1.recv(), Ok(true));
        assert_eq!(ready2.recv(), Ok(true));
        goro::time::sleep(Duration::from_millis(10)); // let both reach the select
        d_tx.close();
        assert_eq!(ready1.recv(), Ok(true));
        assert_eq!(ready2.recv(), Ok(true));
        join(h1);
        join(h2);
        drop(c_tx);
    });
}

// ---------------------------------------------------------------------------
// chanbarrier_test.go
// ---------------------------------------------------------------------------

struct Response;

#[derive(Debug)]
struct MyError;

impl fmt::Display for MyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("my error")
    }
}

impl std::error::Error for MyError {}

struct Async {
    resp: Option<Response>,
    err: Option<Box<dyn std::error::Error + Send + Sync>>,
}

/// One request answered by a fresh goroutine over an unbuffered channel, by a
/// plain send or by a select that could also give up on `done`.
fn do_request(use_select: bool) -> (Option<Response>, Option<Box<dyn std::error::Error + Send + Sync>>) {
    let (ch_tx, ch_rx) = chan::bounded::<Box<Async>>(0);
    let (done_tx, done_rx) = chan::bounded::<()>(0);
    let answer = || {
        Box::new(Async {
            resp: None,
            err: Some(Box::new(MyError)),
        })
    };
    if use_select {
        go!(move || {
            select! {
                send(ch_tx, answer()) -> _ => {},
                recv(done_rx) -> _ => {},
            }
        });
    } else {
        drop(done_rx);
        go!(move || {
            let _ = ch_tx.send(answer());
        });
    }
    let r = ch_rx.recv().expect("the answering goroutine sends before it ends");
    goro::yield_now();
    drop(done_tx); // only now may the select's `done` arm become ready
    (r.resp, r.err)
}

fn chan_send_barrier(use_select: bool) {
    go_test(move || {
        const OUTER: usize = 100; // as Go (10 with -short)
        const INNER: usize = 1_000; // Go: 100000 (1000 with -short)
        let wg = WaitGroup::new();
        let mut hs = Vec::new();
        for _ in 0..OUTER {
            wg.add(1);
            let wg = wg.clone();
            hs.push(go!(move || {
                let _done = DoneOnDrop(wg);
                for _ in 0..INNER {
                    let (resp, err) = do_request(use_select);
                    assert!(resp.is_none());
                    let err = err.expect("an error comes back");
                    assert!(err.downcast_ref::<MyError>().is_some(), "wrong error: {err}");
                }
            }));
        }
        wg.wait();
        hs.into_iter().for_each(join);
    });
}

// Ports TestChanSendBarrier: many goroutines each make requests answered by a
// new goroutine's plain send of a boxed result; every result must arrive whole.
#[test]
fn test_chan_send_barrier() {
    chan_send_barrier(false);
}

// Ports TestChanSendSelectBarrier: as above, the answer sent from a select arm.
#[test]
fn test_chan_send_select_barrier() {
    chan_send_barrier(true);
}

// ---------------------------------------------------------------------------
// test/chan select programs
// ---------------------------------------------------------------------------

// Ports test/chan/doubleselect.go: one goroutine sends a counter through a 4-arm
// select over four unbuffered channels, four muxes forward to one channel, and
// the receiver checks that no value arrives twice (two arms of one select must
// never both run), and (added here) that none is lost.
#[test]
fn test_double_select() {
    go_test(|| {
        const ITERATIONS: usize = 100_000; // as Go
        let chans: Vec<(Sender<usize>, Receiver<usize>)> = (0..4).map(|_| chan::bounded(0)).collect();
        let (done_tx, done_rx) = chan::bounded::<bool>(0);
        let (mux_tx, mux_rx) = chan::bounded::<usize>(0);
        let mut hs = Vec::new();
        {
            let c: Vec<Sender<usize>> = chans.iter().map(|(tx, _)| tx.clone()).collect();
            hs.push(go!(move || {
                for i in 0..ITERATIONS {
                    select! {
                        send(c[0], i) -> r => r.unwrap(),
                        send(c[1], i) -> r => r.unwrap(),
                        send(c[2], i) -> r => r.unwrap(),
                        send(c[3], i) -> r => r.unwrap(),
                    }
                }
                c.iter().for_each(Sender::close);
            }));
        }
        for (_, rx) in &chans {
            let (input, out, done) = (rx.clone(), mux_tx.clone(), done_tx.clone());
            hs.push(go!(move || {
                for v in &input {
                    out.send(v).unwrap();
                }
                done.send(true).unwrap();
            }));
        }
        drop(chans);
        hs.push(go!(move || {
            for _ in 0..4 {
                done_rx.recv().unwrap();
            }
            mux_tx.close();
        }));
        let mut seen = HashSet::new();
        for v in &mux_rx {
            assert!(seen.insert(v), "got duplicate value: {v}");
        }
        assert_eq!(seen.len(), ITERATIONS, "values lost");
        hs.into_iter().for_each(join);
    });
}

// Ports test/chan/select6.go (Go issue 2075): a select that lost on c1 while
// another goroutine also waits on c1 must leave c1's queue intact, so that two
// later sends on c1 wake both receivers.
#[test]
fn test_select_leaves_queue_intact() {
    go_test(|| {
        let (c1_tx, c1_rx) = chan::bounded::<bool>(0);
        let (c2_tx, c2_rx) = chan::bounded::<bool>(0);
        let (c3_tx, c3_rx) = chan::bounded::<bool>(0);
        let first = {
            let c1 = c1_rx.clone();
            go!(move || c1.recv())
        };
        let second = go!(move || {
            select! {
                recv(c1_rx) -> v => panic!("dummy: {v:?}"),
                recv(c2_rx) -> v => { v.unwrap(); c3_tx.send(true).unwrap(); },
            }
            c1_rx.recv()
        });
        let third = go!(move || c2_tx.send(true));
        c3_rx.recv().unwrap();
        c1_tx.send(true).unwrap();
        c1_tx.send(true).unwrap();
        assert_eq!(join(first), Ok(true));
        assert_eq!(join(second), Ok(true));
        assert_eq!(join(third), Ok(()));
    });
}

// Ports test/chan/select7.go: every combination of a receiver (plain, 1-arm
// select, 2-arm select with an idle channel) and a sender (the same three
// forms) completes on an unbuffered channel.
#[test]
fn test_select_discard_value() {
    go_test(|| {
        type Recv = fn(Receiver<i32>);
        fn recv1(c: Receiver<i32>) {
            c.recv().unwrap();
        }
        fn recv2(c: Receiver<i32>) {
            select! { recv(c) -> v => { v.unwrap(); } }
        }
        fn recv3(c: Receiver<i32>) {
            let (_c2_tx, c2) = chan::bounded::<i32>(0); // idle, never closed
            select! {
                recv(c) -> v => { v.unwrap(); },
                recv(c2) -> v => panic!("idle channel ready: {v:?}"),
            }
        }
        let recvs: [Recv; 3] = [recv1, recv2, recv3];
        for recv in recvs {
            for send in 1..=3 {
                let (tx, rx) = chan::bounded::<i32>(0);
                let h = go!(move || recv(rx));
                goro::yield_now();
                match send {
                    1 => tx.send(1).unwrap(),
                    2 => select! { send(tx, 1) -> r => r.unwrap() },
                    _ => {
                        let (c2, _c2_rx) = never_sender::<i32>();
                        select! {
                            send(tx, 1) -> r => r.unwrap(),
                            send(c2, 1) -> r => panic!("idle channel ready: {r:?}"),
                        }
                    }
                }
                join(h);
            }
        }
    });
}

/// Go's `sleep` helper in nonblock.go: lets other goroutines run a little.
fn nonblock_sleep() {
    goro::time::sleep(Duration::from_micros(10));
    for _ in 0..3 {
        goro::yield_now();
    }
}

/// Go: 10000 tries of ~10 µs each.
const MAX_TRIES: usize = 10_000;

/// One value type of test/chan/nonblock.go, at one buffer size.
fn nonblock_case<T>(buffer: usize, to_receiver: T, from_sender: T)
where
    T: Clone + PartialEq + fmt::Debug + Send + 'static,
{
    let (tx, rx) = chan::bounded::<T>(buffer);
    let (sync_tx, sync_rx) = chan::bounded::<bool>(0);

    select! {
        recv(rx) -> v => panic!("blocked sender: {v:?} (buffer {buffer})"),
        default => {}
    }

    // A receiver goroutine: a non-blocking send succeeds once it waits (or at
    // once into a buffer).
    let h = {
        let (rx, sync_tx, want) = (rx.clone(), sync_tx.clone(), to_receiver.clone());
        go!(move || {
            assert_eq!(rx.recv(), Ok(want));
            sync_tx.send(true).unwrap();
        })
    };
    let mut tries = 0;
    loop {
        select! {
            send(tx, to_receiver.clone()) -> r => { r.unwrap(); break; },
            default => {
                tries += 1;
                assert!(tries <= MAX_TRIES, "receiver: non-blocking send never succeeded (buffer {buffer})");
                nonblock_sleep();
            }
        }
    }
    sync_rx.recv().unwrap();
    join(h);

    // A sender goroutine: a non-blocking receive succeeds once it waits (or
    // once the value is buffered).
    let h = {
        let (tx, sync_tx, v) = (tx.clone(), sync_tx.clone(), from_sender.clone());
        go!(move || {
            tx.send(v).unwrap();
            sync_tx.send(true).unwrap();
        })
    };
    if buffer > 0 {
        sync_rx.recv().unwrap();
    }
    let mut tries = 0;
    let got = loop {
        select! {
            recv(rx) -> v => break v.unwrap(),
            default => {
                tries += 1;
                assert!(tries <= MAX_TRIES, "sender: non-blocking receive never succeeded (buffer {buffer})");
                nonblock_sleep();
            }
        }
    };
    assert_eq!(got, from_sender);
    if buffer == 0 {
        sync_rx.recv().unwrap();
    }
    join(h);
}

// Ports test/chan/nonblock.go: for buffer sizes 0 and 1 and several value types,
// a non-blocking receive on an empty channel takes `default`, and non-blocking
// sends / receives retried in a loop complete once a partner goroutine waits.
#[test]
fn test_nonblock() {
    go_test(|| {
        for buffer in 0..2 {
            nonblock_case::<i32>(buffer, 123, 234);
            nonblock_case::<i64>(buffer, 123_456, 234_567);
            nonblock_case::<bool>(buffer, true, true);
            nonblock_case::<String>(buffer, "hello".into(), "hello again".into());
        }
    });
}

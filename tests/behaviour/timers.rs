//! `goro::time`: `sleep` parks the G on a timer (no OS thread blocks), is never
//! early, and 100,000 Gs can sleep at once; timers after Go's
//! time/sleep_test.go: after and tick fire and are never early, Timer/Ticker stop
//! and reset leave no stale value (Go 1.23), after_func, huge durations, and
//! stop/reset racing with firing. tests/README.md lists where the other timer
//! tests live.

use crate::{common, crowd, no_crowd};

use goro::go;
use goro::time::{after, after_func, tick, Ticker, Timer};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn sleep_is_never_early() {
    let hs: Vec<_> = (1..=20u64)
        .map(|ms| {
            go!(move || {
                let d = Duration::from_micros(ms * 700);
                let t = Instant::now();
                goro::time::sleep(d);
                (d, t.elapsed())
            })
        })
        .collect();
    for h in hs {
        let (want, got) = h.join().unwrap();
        assert!(got >= want, "slept {got:?} < {want:?}");
    }
}

#[test]
fn sleeping_gs_do_not_block_threads() {
    let _c = no_crowd();
    // More sleepers than Ps: if sleep blocked an M they would run in sequence.
    let procs = goro::runtime::gomaxprocs() as u32;
    let n = procs * 8;
    let t = Instant::now();
    let hs: Vec<_> = (0..n)
        .map(|_| go!(|| goro::time::sleep(Duration::from_millis(100))))
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert!(
        t.elapsed() < Duration::from_millis(100) * 4,
        "{n} sleeps took {:?}",
        t.elapsed()
    );
}

#[test]
fn zero_sleep_returns_and_thread_sleep_works() {
    go!(|| goro::time::sleep(Duration::ZERO)).join().unwrap();
    let t = Instant::now();
    goro::time::sleep(Duration::from_millis(2)); // plain thread
    assert!(t.elapsed() >= Duration::from_millis(2));
}

#[test]
fn a_hundred_thousand_gs_sleep_at_once() {
    let _c = crowd();
    let _w = common::watchdog(Duration::from_secs(120));
    const N: usize = 100_000;
    let started = Arc::new(AtomicUsize::new(0));
    let woke = Arc::new(AtomicUsize::new(0));
    let fired_before = goro::runtime::stats().timers_fired;
    let t0 = Instant::now();
    let hs: Vec<_> = (0..N)
        .map(|i| {
            let (started, woke) = (started.clone(), woke.clone());
            go!(move || {
                started.fetch_add(1, Ordering::SeqCst);
                goro::time::sleep(Duration::from_millis(1500 + (i % 100) as u64));
                woke.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    while started.load(Ordering::SeqCst) < N {
        std::thread::yield_now();
    }
    if t0.elapsed() < Duration::from_millis(1500) {
        // Every G has started and, since the first deadline is still ahead, every
        // one of them is parked on its timer right now.
        assert_eq!(woke.load(Ordering::SeqCst), 0);
        assert!(goro::runtime::num_goroutine() >= N);
    }
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(woke.load(Ordering::SeqCst), N);
    assert!(goro::runtime::stats().timers_fired >= fired_before + N as u64);
}

#[test]
fn after_fires_once_and_never_early() {
    let hs: Vec<_> = (1..=30u64)
        .map(|i| {
            go!(move || {
                let d = Duration::from_micros(300 * i);
                let t = Instant::now();
                let fired = after(d).recv().unwrap();
                assert!(fired >= t + d, "fired early");
                t.elapsed() >= d
            })
        })
        .collect();
    assert!(hs.into_iter().all(|h| h.join().unwrap()));
    // From a plain thread too.
    let t = Instant::now();
    after(Duration::from_millis(3)).recv().unwrap();
    assert!(t.elapsed() >= Duration::from_millis(3));
}

#[test]
fn timer_channels_deliver_one_value_and_never_close() {
    let rx = after(Duration::from_millis(1));
    rx.recv().unwrap();
    assert!(rx.recv_timeout(Duration::from_millis(20)).unwrap_err() == goro::chan::RecvTimeoutError::Timeout);
    assert!(!rx.is_closed());
}

#[test]
fn stop_before_firing_prevents_the_value() {
    let t = Timer::new(Duration::from_millis(20));
    assert!(t.stop());
    assert!(!t.stop(), "second stop finds nothing to stop");
    assert!(t.receiver().recv_timeout(Duration::from_millis(60)).is_err());
}

/// Go 1.23: a fired but unreceived value is discarded by stop/reset.
#[test]
fn stop_and_reset_leave_no_stale_value() {
    // Give each timer time to fire, so its value sits in the channel. (A timer
    // channel shows no buffered value: len() is 0, as Go 1.23's. If one has not
    // fired yet, the checks hold all the same: it is pending, and stop/reset keep
    // it from ever delivering.)
    let t = Timer::new(Duration::from_millis(1));
    std::thread::sleep(Duration::from_millis(10));
    assert!(t.receiver().is_empty(), "a timer channel reports no buffer");
    assert!(
        t.reset(Duration::from_secs(3600)),
        "the unreceived fire counts as pending"
    );
    assert!(t.receiver().try_recv().is_err(), "stale value after reset");
    assert!(t.stop());
    let t = Timer::new(Duration::from_millis(1));
    std::thread::sleep(Duration::from_millis(10));
    assert!(t.stop());
    assert!(t.receiver().try_recv().is_err(), "stale value after stop");
    // Reset after receiving: fires again.
    let t = Timer::new(Duration::from_millis(1));
    t.receiver().recv().unwrap();
    assert!(!t.reset(Duration::from_millis(2)));
    t.receiver().recv().unwrap();
}

#[test]
fn tickers_tick_drop_slow_ticks_and_stop() {
    // The clock starts before the ticker is armed (arming may take a while: it can
    // start the runtime).
    let t = Instant::now();
    let k = Ticker::new(Duration::from_millis(2));
    for _ in 0..5 {
        k.receiver().recv().unwrap();
    }
    assert!(t.elapsed() >= Duration::from_millis(10));
    // A slow receiver: a tick waits (its channel has one slot; tests/go_ports/go_time.rs
    // checks that slow receivers lose ticks), and stop drains it.
    goro::time::sleep(Duration::from_millis(20));
    k.stop();
    assert!(k.receiver().try_recv().is_err(), "stop drains the pending tick");
    assert!(k.receiver().recv_timeout(Duration::from_millis(20)).is_err());
    k.reset(Duration::from_millis(1));
    k.receiver().recv().unwrap();
    let rx = tick(Duration::from_millis(1));
    rx.recv().unwrap();
    rx.recv().unwrap();
}

#[test]
#[should_panic(expected = "non-positive interval")]
fn zero_tick_panics() {
    let _ = Ticker::new(Duration::ZERO);
}

#[test]
fn after_func_runs_in_a_goroutine_and_obeys_stop_and_reset() {
    let runs = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = goro::chan::bounded::<Option<goro::GoId>>(4);
    let r = runs.clone();
    let t = after_func(Duration::from_millis(1), move || {
        r.fetch_add(1, Ordering::SeqCst);
        let _ = tx.try_send(goro::current());
    });
    assert!(rx.recv().unwrap().is_some(), "f runs in a goroutine");
    assert!(!t.stop(), "already fired");
    assert!(!t.reset(Duration::from_millis(1)), "reset after firing");
    rx.recv().unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2, "reset after firing runs f again");
    let r2 = runs.clone();
    let t2 = after_func(Duration::from_millis(30), move || {
        r2.fetch_add(100, Ordering::SeqCst);
    });
    assert!(t2.stop());
    goro::time::sleep(Duration::from_millis(60));
    assert_eq!(runs.load(Ordering::SeqCst), 2, "a stopped after_func never runs");
    drop(t);
}

#[test]
fn huge_durations_never_fire_and_never_panic() {
    let rx = after(Duration::MAX);
    assert!(rx.try_recv().is_err());
    let r = goro::select! {
        recv(after(Duration::MAX)) -> _ => "fired",
        default => "pending",
    };
    assert_eq!(r, "pending");
    let t = Timer::new(Duration::MAX);
    assert!(t.stop(), "pending for good until stopped, as Go's");
    assert!(!t.stop());
    let h = go!(|| goro::time::sleep(Duration::MAX));
    assert!(!h.is_finished());
    drop(h); // that G sleeps forever
}

/// Many goroutines stop and reset shared timers while they fire: no panic, and
/// after the final stop nothing is received.
#[test]
fn stop_and_reset_race_with_firing() {
    let _w = common::watchdog(Duration::from_secs(60));
    let timers: Arc<Vec<Timer>> = Arc::new((0..16).map(|_| Timer::new(Duration::from_micros(100))).collect());
    let hs: Vec<_> = (0..8)
        .map(|g| {
            let timers = timers.clone();
            go!(move || {
                for i in 0..2000 {
                    let t = &timers[(g * 7 + i) % 16];
                    match i % 3 {
                        0 => {
                            t.reset(Duration::from_micros(50 + (i % 5) as u64 * 20));
                        }
                        1 => {
                            t.stop();
                        }
                        _ => {
                            let _ = t.receiver().try_recv();
                        }
                    }
                    if i % 50 == 0 {
                        goro::yield_now();
                    }
                }
            })
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    for t in timers.iter() {
        t.stop();
    }
    goro::time::sleep(Duration::from_millis(5));
    for t in timers.iter() {
        assert!(t.receiver().try_recv().is_err(), "value received after the final stop");
    }
}

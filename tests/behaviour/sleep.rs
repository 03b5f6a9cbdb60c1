//! `time::sleep`: parks the G on a timer (no OS thread blocks), is never early,
//! and 100,000 Gs can sleep at once. (Deadline order on one P: one_p_order.rs.)

use crate::{common, crowd, no_crowd};

use goro::go;
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

//! `set_gomaxprocs` while the program runs: resizing up and down under load loses
//! no G, and the new count shows everywhere.

mod common;

use goro::go;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn resizing_under_load_loses_no_goroutine() {
    common::init_procs(2);
    let _w = common::watchdog(Duration::from_secs(120));
    assert_eq!(goro::runtime::set_gomaxprocs(0), 2, "0 only reads");
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    // The resizer is itself a G (so it keeps its P across each resize), hogging
    // nothing: it parks between resizes.
    // The plain thread below resizes concurrently; once it is done, the
    // resizer's own count must show everywhere.
    let thread_done = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let td = thread_done.clone();
    let resizer = go!(move || {
        let sizes = [4, 1, 8, 3, 1, 6, 2];
        let mut resizes = 0;
        let mut i = 0;
        while !s.load(Ordering::Relaxed) {
            let n = sizes[i % sizes.len()];
            let alone = td.load(Ordering::Acquire);
            goro::runtime::set_gomaxprocs(n);
            if alone {
                assert_eq!(goro::runtime::gomaxprocs(), n);
                assert_eq!(goro::runtime::stats().procs.len(), n);
            }
            resizes += 1;
            i += 1;
            goro::time::sleep(Duration::from_millis(2));
        }
        resizes
    });
    // 10,000 Gs that run, park on channels and timers, and spawn.
    let handles: Vec<_> = (0..10_000u64)
        .map(|i| {
            let done = done.clone();
            go!(move || {
                let (tx, rx) = goro::chan::bounded::<u64>(0);
                let child = go!(move || {
                    for k in 0..5 {
                        tx.send(k).unwrap();
                    }
                });
                let mut sum = 0;
                for v in rx.iter() {
                    sum += v;
                    if (i + v) % 7 == 0 {
                        goro::time::sleep(Duration::from_micros(100));
                    } else {
                        goro::yield_now();
                    }
                }
                child.join().unwrap();
                done.fetch_add(1, Ordering::Relaxed);
                sum
            })
        })
        .collect();
    // Also from a plain thread, concurrently with the G resizer.
    for n in [3, 5, 1, 2] {
        goro::runtime::set_gomaxprocs(n);
    }
    thread_done.store(true, Ordering::Release);
    let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    stop.store(true, Ordering::Relaxed);
    let resizes = resizer.join().unwrap();
    assert_eq!(total, 10_000 * 10);
    assert_eq!(done.load(Ordering::Relaxed), 10_000);
    assert!(resizes >= 2, "only {resizes} resizes happened");
    goro::runtime::set_gomaxprocs(2);
    // Every G finished is counted, including those finished on removed Ps.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while goro::runtime::num_goroutine() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{} Gs left",
            goro::runtime::num_goroutine()
        );
        std::thread::yield_now();
    }
}

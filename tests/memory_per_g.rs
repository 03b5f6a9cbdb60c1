//! Memory per goroutine: 20,000 goroutines parked on a channel cost a few KiB of
//! resident memory each (their stacks are reserved, not touched), and the memory
//! is reused, not grown, by the next 20,000. Its own binary: RSS is per process.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const GS: usize = 20_000;
/// Generous for debug builds, whose frames are larger; release measures about
/// 4 KiB (docs/BENCHMARKS.md, `parked_rss`).
const MAX_KIB_PER_G: usize = 16;

/// Parks `GS` goroutines, measures RSS growth while they are parked, then
/// releases them all.
fn park_a_crowd() -> usize {
    let before = common::rss_kib();
    let (tx, rx) = goro::chan::bounded::<()>(0);
    let (done_tx, done) = goro::chan::bounded::<()>(GS);
    let started = Arc::new(AtomicUsize::new(0));
    for _ in 0..GS {
        let (rx, done_tx, started) = (rx.clone(), done_tx.clone(), started.clone());
        goro::go!(move || {
            started.fetch_add(1, Ordering::Relaxed);
            let _ = rx.recv(); // parked until the channel closes
            done_tx.send(()).unwrap();
        });
    }
    // Every goroutine has run up to its receive (its stack is in use) before the
    // RSS is read.
    while started.load(Ordering::Relaxed) < GS {
        std::thread::yield_now();
    }
    let during = common::rss_kib();
    drop(tx); // closes: everyone wakes and reports
    for _ in 0..GS {
        done.recv().unwrap();
    }
    during.saturating_sub(before) / GS.max(1)
}

#[test]
fn parked_goroutines_cost_a_few_kib_and_memory_is_reused() {
    common::init_procs(2);
    let _w = common::watchdog(Duration::from_secs(120));
    let first = park_a_crowd();
    let rss_after_first = common::rss_kib();
    let second = park_a_crowd();
    let rss_after_second = common::rss_kib();
    println!("KiB per parked G: first crowd {first}, second {second}");
    assert!(first <= MAX_KIB_PER_G, "{first} KiB per parked goroutine");
    // Stacks and G records are recycled: the second crowd adds (almost) nothing.
    assert!(
        rss_after_second <= rss_after_first + rss_after_first / 10 + 4096,
        "RSS grew from {rss_after_first} to {rss_after_second} KiB"
    );
}

//! The stack scavenger: after a burst of goroutines that used deep stacks, the
//! stacks' memory goes back to the kernel once they have sat unused for a
//! while, and the released stacks serve the next burst. Its own binary: RSS is
//! per process.

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

const GS: usize = 2_000;
/// Stack each goroutine touches.
const DEPTH: usize = 64 << 10;
/// The scavenger releases a stack one to two seconds after it came back.
const PATIENCE: Duration = Duration::from_secs(20);

/// Writes one byte per page of a `DEPTH`-byte frame, so those pages become
/// resident, and returns something that depends on them.
#[inline(never)]
fn use_stack() -> u8 {
    let mut frame = [0u8; DEPTH];
    black_box(&mut frame);
    for i in (0..DEPTH).step_by(4096) {
        frame[i] = 1;
    }
    black_box(&frame)
        .iter()
        .step_by(4096)
        .fold(0, |a: u8, &b| a.wrapping_add(b))
}

/// Runs `GS` goroutines at once, each on a deep stack, and waits for them all.
fn burst() {
    let wg = goro::sync::WaitGroup::new();
    let (tx, rx) = goro::chan::bounded::<()>(0);
    wg.add(GS);
    let hs: Vec<_> = (0..GS)
        .map(|_| {
            let (wg, rx) = (wg.clone(), rx.clone());
            goro::go!(move || {
                let x = use_stack();
                wg.done();
                let _ = rx.recv(); // all alive at once: each needs its own stack
                x
            })
        })
        .collect();
    wg.wait();
    drop(tx);
    for h in hs {
        assert_ne!(h.join().unwrap(), 0);
    }
}

#[test]
fn idle_stacks_are_given_back_and_reused() {
    common::init_procs(2);
    let _w = common::watchdog(PATIENCE * 3);
    let before = common::rss_kib();
    burst();
    let after_burst = common::rss_kib();
    let grown = after_burst.saturating_sub(before);
    assert!(
        grown >= GS * DEPTH / 1024 / 2,
        "the burst should have made its stacks resident: RSS {before} -> {after_burst} KiB"
    );
    // Polls the RSS: the release happens on sysmon's schedule, not ours.
    let start = Instant::now();
    let target = before + grown / 4;
    while common::rss_kib() > target {
        assert!(
            start.elapsed() < PATIENCE,
            "idle stacks not released: RSS {} KiB after {PATIENCE:?} (before the burst {before}, after it {after_burst})",
            common::rss_kib()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "RSS {before} -> {after_burst} KiB after the burst, {} KiB {:?} later",
        common::rss_kib(),
        start.elapsed()
    );
    // The released stacks serve the next burst: zeroed pages, still mapped.
    burst();
    assert!(common::rss_kib() <= after_burst + after_burst / 10 + 4096);
}

//! The heap trim: after a burst of goroutines that allocated and freed heap
//! memory, sysmon gives glibc's free memory back to the kernel once every P has
//! idled for a second; `GODEBUG=heaptrim=0` keeps it. Its own binary: RSS is
//! per process. Only where glibc's malloc serves Rust's allocations (not under
//! LeakSanitizer's, say: the test then says so and passes).
#![cfg(all(target_os = "linux", target_env = "gnu"))]

mod common;

use std::time::{Duration, Instant};

const GS: usize = 250;
/// Blocks each goroutine allocates and frees, each with a small block that
/// stays allocated after it, so that the freed memory is not at the top of an
/// arena (where `free` itself would give it back).
const BLOCKS: usize = 4;
/// Under glibc's 128 KiB mmap threshold: served from an arena.
const BLOCK: usize = 64 << 10;
/// Too big for glibc's per-thread cache and fast bins, so a pin comes from
/// the top of the arena, right after its block.
const PIN: usize = 2 << 10;
/// The trim comes a second after every P idled; the stack scavenger's release
/// one to two seconds after the stacks came back.
const PATIENCE: Duration = Duration::from_secs(20);

/// Bytes glibc's malloc has handed out and not had back (`mallinfo2`).
fn glibc_in_use() -> usize {
    // SAFETY: `mallinfo2` has no preconditions; it returns a plain struct.
    let info = unsafe { libc::mallinfo2() };
    info.uordblks + info.hblkhd
}

/// Runs `GS` goroutines at once, each writing `BLOCKS` blocks of `BLOCK` bytes
/// on the heap. Returns the small blocks (kept: they pin the freed memory
/// below them) and whether glibc's malloc held the blocks while they lived.
fn burst() -> (Vec<Vec<Vec<u8>>>, bool) {
    let wg = goro::sync::WaitGroup::new();
    let (tx, rx) = goro::chan::bounded::<()>(0);
    wg.add(GS);
    let hs: Vec<_> = (0..GS)
        .map(|i| {
            let (wg, rx) = (wg.clone(), rx.clone());
            goro::go!(move || {
                let mut blocks = Vec::with_capacity(BLOCKS);
                let mut pins = Vec::with_capacity(BLOCKS);
                for b in 0..BLOCKS {
                    blocks.push(vec![(i + b) as u8 | 1; BLOCK]);
                    pins.push(vec![1u8; PIN]);
                }
                wg.done();
                let _ = rx.recv(); // all alive at once
                assert!(blocks.iter().all(|b| b[BLOCK - 1] != 0));
                pins
            })
        })
        .collect();
    wg.wait();
    let glibc_holds_them = glibc_in_use() >= GS * BLOCKS * BLOCK;
    drop(tx);
    (hs.into_iter().map(|h| h.join().unwrap()).collect(), glibc_holds_them)
}

#[test]
fn freed_heap_goes_back_once_idle() {
    common::init_procs(2);
    let _w = common::watchdog(PATIENCE * 3);
    let before = common::rss_kib();
    let (pins, glibc) = burst();
    let after_burst = common::rss_kib();
    if !glibc {
        println!("glibc's malloc does not serve this process's allocations: nothing to trim");
        return;
    }
    let grown = after_burst.saturating_sub(before);
    assert!(
        grown >= GS * BLOCKS * BLOCK / 1024 / 2,
        "the burst should have made its blocks resident: RSS {before} -> {after_burst} KiB"
    );
    // The goroutines' stacks are a few percent of the growth, the pins (and
    // the partly used pages at the ends of each freed block) about a tenth:
    // only giving the heap back brings RSS this low.
    let target = before + grown / 4;
    let start = Instant::now();
    while common::rss_kib() > target {
        assert!(
            start.elapsed() < PATIENCE,
            "freed heap not given back: RSS {} KiB after {PATIENCE:?} (before the burst {before}, after it {after_burst})",
            common::rss_kib()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "RSS {before} -> {after_burst} KiB after the burst, {} KiB {:?} later",
        common::rss_kib(),
        start.elapsed()
    );
    drop(pins);
}

/// With `GODEBUG=heaptrim=0`, the same burst's heap stays resident (a child
/// process: GODEBUG is read when the runtime starts).
#[test]
fn heaptrim_0_keeps_the_heap() {
    if !common::is_child() {
        let out = common::run_child("heaptrim_0_keeps_the_heap", &[("GODEBUG", "heaptrim=0")]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed:\n{text}");
        return;
    }
    common::init_procs(2);
    let before = common::rss_kib();
    let (pins, glibc) = burst();
    let after_burst = common::rss_kib();
    if !glibc {
        println!("glibc's malloc does not serve this process's allocations: nothing to trim");
        return;
    }
    let grown = after_burst.saturating_sub(before);
    // Three seconds: a trim would have come after one.
    std::thread::sleep(Duration::from_secs(3));
    let later = common::rss_kib();
    assert!(
        later > before + grown / 2,
        "RSS fell from {after_burst} to {later} KiB (before the burst {before}) with heaptrim=0"
    );
    drop(pins);
}

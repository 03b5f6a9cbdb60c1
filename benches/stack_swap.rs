//! What swapping idle stacks out saves and costs
//! (docs/decisions/0037-swapping-idle-stacks.md): `cargo bench --bench
//! stack_swap [-- N]`.
//!
//! Runs itself twice as a child, with swapping off and with a 100 ms
//! threshold: N goroutines (default 100,000) sleep until a common wake time;
//! once every one has parked (and, swapping on, every stack is out), the
//! child prints the RSS growth per goroutine and the heap bytes the copies
//! hold; then how long after the wake time the last of them was joined (the
//! burst of wake-ups, each swapped-out goroutine copied back).
//!
//! Then, at GOMAXPROCS=1, the wake-up of one swapped-out goroutine at a time:
//! 2,000 goroutines each wait on a channel of their own; once all are parked
//! (swapping on: all swapped out; off: as long), a driver goroutine sends
//! each the time of the send and waits for its answer; the woken goroutine
//! answers how long after the send it runs (its stack copied back first,
//! swapping on): p50, p99 and max from the `ready` to running.
//!
//! The kernel's share, on its own (a C probe, `gcc -O2`): map 100,000 65-page
//! stacks, write 720 bytes at each top, then time `madvise(MADV_DONTNEED)` of
//! each stack, `mincore` of each top page, and the write again (one page
//! fault each); and one `MADV_DONTNEED` over the whole mapping.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CHILD: &str = "GORO_STACK_SWAP_CHILD";

fn rss_bytes() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<usize>().ok())
        .expect("VmRSS")
        * 1024
}

fn child(n: usize, swap: bool) {
    goro::runtime::Config::new()
        .swap_idle_after(swap.then_some(Duration::from_millis(100)))
        .init()
        .unwrap();
    goro::go!(|| ()).join().unwrap();
    let before = rss_bytes();
    let wake = Instant::now() + Duration::from_secs(5);
    let parked = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..n)
        .map(|_| {
            let parked = parked.clone();
            goro::go!(move || {
                parked.fetch_add(1, Ordering::Relaxed);
                goro::time::sleep(wake.saturating_duration_since(Instant::now()));
            })
        })
        .collect();
    while parked.load(Ordering::Relaxed) < n {
        std::thread::sleep(Duration::from_millis(1));
    }
    // The last to count itself may not have switched out yet.
    std::thread::sleep(Duration::from_millis(20));
    let all_parked = Instant::now();
    while swap && goro::runtime::stats().stacks_swapped_out < n as u64 {
        assert!(
            Instant::now() < wake,
            "the stacks were not all out before the wake time"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let out_after = all_parked.elapsed();
    let per_g = rss_bytes().saturating_sub(before) / n;
    let held = goro::runtime::stats().swapped_bytes / n as u64;
    for h in hs {
        h.join().unwrap();
    }
    let burst = Instant::now().saturating_duration_since(wake);
    println!(
        "swap {}: {per_g} B of RSS per parked goroutine (heap copies {held} B per goroutine; all out {:.0?} after the \
         last parked); the burst of {n} wake-ups ended {:.1?} after the wake time",
        if swap { "on " } else { "off" },
        out_after,
        burst
    );
}

/// Goroutines woken one at a time in the wake-up latency child.
const WAKE_ONE_BY_ONE: usize = 2_000;

fn wake_child(k: usize, swap: bool) {
    goro::runtime::Config::new()
        .procs(1)
        .swap_idle_after(swap.then_some(Duration::from_millis(100)))
        .init()
        .unwrap();
    let (lat_tx, lat_rx) = goro::chan::bounded::<Duration>(0);
    let txs: Vec<_> = (0..k)
        .map(|_| {
            let (tx, rx) = goro::chan::bounded::<Instant>(0);
            let lat_tx = lat_tx.clone();
            goro::go!(move || {
                let sent = rx.recv().unwrap();
                lat_tx.send(sent.elapsed()).unwrap();
            });
            tx
        })
        .collect();
    let parked = Instant::now();
    while swap && goro::runtime::stats().stacks_swapped_out < k as u64 {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Parked as long either way.
    std::thread::sleep(Duration::from_millis(300).saturating_sub(parked.elapsed()));
    let mut lat = goro::go!(move || {
        txs.iter()
            .map(|tx| {
                tx.send(Instant::now()).unwrap();
                lat_rx.recv().unwrap()
            })
            .collect::<Vec<_>>()
    })
    .join()
    .unwrap();
    lat.sort_unstable();
    let at = |q: f64| lat[((lat.len() - 1) as f64 * q) as usize];
    println!(
        "swap {}: wake-up of one of {k} parked goroutines at a time (GOMAXPROCS=1), ready to running: \
         p50 {:.1?}, p99 {:.1?}, max {:.1?}",
        if swap { "on " } else { "off" },
        at(0.5),
        at(0.99),
        at(1.0)
    );
}

fn main() {
    let n: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(100_000);
    if let Ok(mode) = std::env::var(CHILD) {
        return match mode.strip_prefix("wake-") {
            Some(swap) => wake_child(WAKE_ONE_BY_ONE, swap == "on"),
            None => child(n, mode == "on"),
        };
    }
    let exe = std::env::current_exe().unwrap();
    for mode in ["off", "on", "wake-off", "wake-on"] {
        let out = std::process::Command::new(&exe)
            .arg(n.to_string())
            .env(CHILD, mode)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        print!("{}", String::from_utf8_lossy(&out.stdout));
    }
}

//! The imbalanced-workload demo from Go's scheduler lore: 1000 CPU-bound goroutines
//! all spawned from one goroutine, so they all start on one P. The spawning P's
//! 256-slot ring overflows: each time it is full, half of it goes to the global
//! queue in one batch, as in Go. The other Ps take their share from there in
//! batches, and steal half of a busy P's ring when they run dry.
//!
//! ```text
//! cargo run --release --example imbalanced
//! GODEBUG=schedtrace=100 GOMAXPROCS=2 cargo run --release --example imbalanced
//! ```
//! With `schedtrace`, watch the global `runqueue=` and the per-P run queues
//! (`[ 71 46 ]`) drain, and every P's `schedticks=` climb. `steals=` counts the
//! steals: often few, because most of the spreading goes through the global queue.
//! To see stealing alone, spawn fewer than 256 Gs (`tests/steal_two_ps.rs` does).
//! At the end the program prints the wall time and how many Gs each P ran.

use std::hint::black_box;
use std::time::Instant;

const GOROUTINES: u64 = 1000;
const WORK: u64 = 3_000_000;

/// CPU-bound work the optimiser cannot delete.
fn work(seed: u64) -> u64 {
    let mut sum = 0u64;
    for i in 0..WORK {
        sum = sum.wrapping_add(black_box(i ^ seed));
    }
    sum
}

fn main() {
    let start = Instant::now();
    let total = goro::go!(|| {
        let handles: Vec<_> = (0..GOROUTINES).map(|i| goro::go!(move || work(i))).collect();
        handles
            .into_iter()
            .fold(0u64, |acc, h| acc.wrapping_add(h.join().expect("worker panicked")))
    })
    .join()
    .expect("driver panicked");
    let elapsed = start.elapsed();

    let stats = goro::runtime::stats();
    println!(
        "{GOROUTINES} goroutines x {WORK} iterations on {} Ps: {:.3} s (checksum {total:x})",
        goro::runtime::gomaxprocs(),
        elapsed.as_secs_f64()
    );
    println!(
        "steals={} stolen={} context_switches={}",
        stats.steals, stats.stolen, stats.context_switches
    );
    for (i, p) in stats.procs.iter().enumerate() {
        println!("  P{i}: schedticks={} steals={}", p.schedtick, p.steals);
    }
}

//! Skynet: one goroutine spawns 10, each of those spawns 10 more, down to a
//! million leaves; each leaf sends its number up a channel and each parent sums
//! what its ten children send. A classic stress test of spawning, channels and
//! scheduling (<https://github.com/atemerev/skynet>).
//!
//! ```text
//! cargo run --release --example skynet                 # 1,000,000 leaves
//! cargo run --release --example skynet -- 10000        # any power of 10
//! GOMAXPROCS=1 cargo run --release --example skynet
//! ```
//! It prints the sum (size × (size − 1) / 2) and the time it took.

use goro::chan::Sender;
use std::process::ExitCode;
use std::time::Instant;

const FANOUT: u64 = 10;

/// The subtree of `size` leaves numbered from `num`: sends their sum on `up`.
fn skynet(up: Sender<u64>, num: u64, size: u64) {
    let sum = if size == 1 {
        num
    } else {
        let (tx, rx) = goro::chan::bounded(FANOUT as usize);
        let child_size = size / FANOUT;
        for i in 0..FANOUT {
            let tx = tx.clone();
            goro::go!(move || skynet(tx, num + i * child_size, child_size));
        }
        drop(tx);
        rx.iter().take(FANOUT as usize).sum()
    };
    // The parent is waiting for exactly this one value.
    let _ = up.send(sum);
}

fn parse_size(arg: Option<String>) -> Result<u64, String> {
    let Some(arg) = arg else {
        return Ok(1_000_000);
    };
    match arg.parse::<u64>() {
        Ok(n) if n > 0 && 10u64.pow(n.ilog10()) == n => Ok(n),
        _ => Err(format!("the size must be a power of 10 (1, 10, 100, ...), not {arg:?}")),
    }
}

fn main() -> ExitCode {
    let size = match parse_size(std::env::args().nth(1)) {
        Ok(size) => size,
        Err(why) => {
            eprintln!("skynet: {why}\nusage: skynet [SIZE]");
            return ExitCode::from(2);
        }
    };
    let start = Instant::now();
    let (tx, rx) = goro::chan::bounded(1);
    goro::go!(move || skynet(tx, 0, size));
    let sum = rx.recv().expect("the root sends its sum");
    let elapsed = start.elapsed();
    assert_eq!(sum, size * (size - 1) / 2);
    println!(
        "Result: {sum} in {:.1} ms ({} goroutines, GOMAXPROCS={})",
        elapsed.as_secs_f64() * 1e3,
        size + (size - 1) / (FANOUT - 1),
        goro::runtime::gomaxprocs()
    );
    ExitCode::SUCCESS
}

//! How late a short `goro::time::sleep` wakes: 10,000 sleeps of 500 µs in one
//! goroutine, each timed with `Instant`; prints the median, p99 and max of the
//! overshoot. The kernel's timer slack and the scheduler's delay make it up
//! (docs/decisions/0020-timer-slack.md).
//!
//! `GOMAXPROCS=2 cargo bench --bench sleep_lateness`

use std::time::{Duration, Instant};

const SLEEP: Duration = Duration::from_micros(500);
const SLEEPS: usize = 10_000;

fn main() {
    let mut late: Vec<Duration> = goro::go!(|| {
        (0..SLEEPS)
            .map(|_| {
                let t = Instant::now();
                goro::time::sleep(SLEEP);
                t.elapsed().saturating_sub(SLEEP)
            })
            .collect()
    })
    .join()
    .expect("the sleeping goroutine");
    late.sort_unstable();
    let at = |q: f64| late[((late.len() as f64 * q) as usize).min(late.len() - 1)];
    println!(
        "sleep {SLEEP:?} x {SLEEPS}, GOMAXPROCS={}: late by median {:?}, p99 {:?}, max {:?}",
        goro::runtime::gomaxprocs(),
        at(0.5),
        at(0.99),
        late[late.len() - 1]
    );
}

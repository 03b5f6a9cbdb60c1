//! `goro::blocking` fast path: what wrapping a short call costs, measured inside a
//! goroutine (on a plain thread `blocking(f)` is just `f()`). The call is a fixed
//! loop of about 1 µs; the cost of `blocking` is the difference between the two
//! lines. Figures are recorded in docs/BENCHMARKS.md.
//!
//! `cargo bench --bench blocking_overhead`

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use std::time::{Duration, Instant};

/// A call of about 1 µs: a dependent arithmetic chain the compiler cannot fold.
fn one_microsecond_call(iters: u64) -> u64 {
    let mut x = black_box(1u64);
    for i in 0..iters {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(black_box(i));
    }
    x
}

/// Loop iterations that take about 1 µs on this machine.
fn calibrate() -> u64 {
    let mut iters = 256;
    loop {
        let t = Instant::now();
        for _ in 0..100 {
            black_box(one_microsecond_call(iters));
        }
        let per_call = t.elapsed() / 100;
        if per_call >= Duration::from_micros(1) {
            return iters;
        }
        iters *= 2;
    }
}

/// Runs `iters` calls inside a goroutine, wrapped in `blocking` or not.
fn in_a_goroutine(iters: u64, work: u64, wrapped: bool) -> Duration {
    goro::go!(move || {
        let t = Instant::now();
        for _ in 0..iters {
            if wrapped {
                black_box(goro::blocking(|| one_microsecond_call(work)));
            } else {
                black_box(one_microsecond_call(work));
            }
        }
        t.elapsed()
    })
    .join()
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let work = calibrate();
    let mut g = c.benchmark_group("1us_call");
    g.bench_function("direct", |b| b.iter_custom(|n| in_a_goroutine(n, work, false)));
    g.bench_function("blocking", |b| b.iter_custom(|n| in_a_goroutine(n, work, true)));
    g.finish();
    // The empty call shows the fixed cost alone.
    let mut g = c.benchmark_group("empty_call");
    g.bench_function("direct", |b| b.iter_custom(|n| in_a_goroutine(n, 0, false)));
    g.bench_function("blocking", |b| b.iter_custom(|n| in_a_goroutine(n, 0, true)));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

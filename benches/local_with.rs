//! `goro::local!`'s `with` beside std's `thread_local!`: the cost of reaching the
//! current context's value once it exists. Each loop does one `with` that reads
//! and bumps a `Cell<u64>`; the key is behind `black_box` so the compiler cannot
//! hoist the lookup out of the loop. Figures are recorded in docs/BENCHMARKS.md.
//!
//! `cargo bench --bench local_with`

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use std::cell::Cell;
use std::time::{Duration, Instant};

thread_local! {
    /// Lazily initialised (no `const`), the std form `local!` is compared with.
    static STD_LAZY: Cell<u64> = Cell::new(0);
}

goro::local! {
    static GORO: Cell<u64> = Cell::new(0);
}

fn std_loop(iters: u64) -> Duration {
    let key = black_box(&STD_LAZY);
    let t = Instant::now();
    for _ in 0..iters {
        key.with(|c| c.set(black_box(c.get() + 1)));
    }
    t.elapsed()
}

fn goro_loop(iters: u64) -> Duration {
    let key = black_box(&GORO);
    let t = Instant::now();
    for _ in 0..iters {
        key.with(|c| c.set(black_box(c.get() + 1)));
    }
    t.elapsed()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("with");
    g.bench_function("thread_local_lazy/thread", |b| b.iter_custom(std_loop));
    g.bench_function("goro_local/thread", |b| b.iter_custom(goro_loop));
    g.bench_function("goro_local/goroutine", |b| {
        b.iter_custom(|n| goro::go!(move || goro_loop(n)).join().unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

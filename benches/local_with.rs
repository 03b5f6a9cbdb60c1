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
    #[allow(clippy::missing_const_for_thread_local)]
    static STD_LAZY: Cell<u64> = Cell::new(0);
}

goro::local! {
    static GORO: Cell<u64> = Cell::new(0);
}

/// Runs `op` `iters` times; the time it took.
fn timed(iters: u64, mut op: impl FnMut()) -> Duration {
    let t = Instant::now();
    for _ in 0..iters {
        op();
    }
    t.elapsed()
}

fn std_loop(iters: u64) -> Duration {
    let key = black_box(&STD_LAZY);
    timed(iters, || key.with(|c| c.set(black_box(c.get() + 1))))
}

fn goro_loop(iters: u64) -> Duration {
    let key = black_box(&GORO);
    timed(iters, || key.with(|c| c.set(black_box(c.get() + 1))))
}

/// A thread-local reached the allowed way from a goroutine: inside `blocking`.
fn std_in_blocking_loop(iters: u64) -> Duration {
    let key = black_box(&STD_LAZY);
    timed(iters, || goro::blocking(|| key.with(|c| c.set(black_box(c.get() + 1)))))
}

/// Two goroutines handing a token back and forth; with `locked`, each is wired
/// to its thread (the other allowed way), so every park hands its P over.
fn pingpong(iters: u64, locked: bool) -> Duration {
    let (ping_tx, ping_rx) = goro::chan::bounded::<u64>(0);
    let (pong_tx, pong_rx) = goro::chan::bounded::<u64>(0);
    let echo = goro::go!(move || {
        if locked {
            goro::runtime::lock_os_thread();
        }
        for v in &ping_rx {
            pong_tx.send(v).unwrap();
        }
    });
    let t = goro::go!(move || {
        if locked {
            goro::runtime::lock_os_thread();
        }
        let t = Instant::now();
        for i in 0..iters {
            ping_tx.send(i).unwrap();
            black_box(pong_rx.recv().unwrap());
        }
        t.elapsed()
    })
    .join()
    .unwrap();
    echo.join().unwrap();
    t
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("with");
    g.bench_function("thread_local_lazy/thread", |b| b.iter_custom(std_loop));
    g.bench_function("goro_local/thread", |b| b.iter_custom(goro_loop));
    g.bench_function("goro_local/goroutine", |b| {
        b.iter_custom(|n| goro::go!(move || goro_loop(n)).join().unwrap())
    });
    g.bench_function("thread_local_in_blocking/goroutine", |b| {
        b.iter_custom(|n| goro::go!(move || std_in_blocking_loop(n)).join().unwrap())
    });
    g.finish();
    let mut g = c.benchmark_group("pingpong_round_trip");
    g.bench_function("free", |b| b.iter_custom(|n| pingpong(n, false)));
    g.bench_function("lock_os_thread", |b| b.iter_custom(|n| pingpong(n, true)));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

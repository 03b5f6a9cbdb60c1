//! `goro::block_on` in a goroutine: a future ready at once (the poll and the
//! waker on the caller's stack: no allocation), and a future pending once
//! whose waker another goroutine wakes (the record made, the goroutine parked
//! and readied: a round trip). Figures: docs/decisions/0033-block-on-waker.md.
//!
//! `cargo bench --bench block_on` (GOMAXPROCS=1 and 2 for both rows)

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// Pending once, its waker handed to the slot; ready when polled again.
struct PendingOnce(bool, Arc<Mutex<Option<Waker>>>);

impl Future for PendingOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        *self.1.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}

fn ready(iters: u64) -> Duration {
    goro::go!(move || {
        let t = Instant::now();
        for i in 0..iters {
            black_box(goro::block_on(black_box(async move { i })));
        }
        t.elapsed()
    })
    .join()
    .unwrap()
}

fn woken_by_a_goroutine(iters: u64) -> Duration {
    let slot: Arc<Mutex<Option<Waker>>> = Arc::default();
    let (done_tx, done_rx) = goro::chan::bounded::<()>(1);
    let s = slot.clone();
    let waker = goro::go!(move || {
        for _ in 0..iters {
            loop {
                if let Some(w) = s.lock().unwrap().take() {
                    w.wake();
                    break;
                }
                goro::yield_now();
            }
        }
        done_tx.send(()).unwrap();
    });
    let t = goro::go!(move || {
        let t = Instant::now();
        for _ in 0..iters {
            goro::block_on(PendingOnce(false, slot.clone()));
        }
        t.elapsed()
    })
    .join()
    .unwrap();
    done_rx.recv().unwrap();
    waker.join().unwrap();
    t
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("block_on");
    g.bench_function("ready", |b| b.iter_custom(ready));
    g.bench_function("pending_once_woken_by_a_goroutine", |b| {
        b.iter_custom(woken_by_a_goroutine)
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

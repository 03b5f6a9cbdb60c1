//! The local run queue: goro's ring (Go's runqput/runqget/runqgrab) against
//! `crossbeam_deque::Worker` held to 256 slots with the same overflow rule (half to
//! the global queue). The choice and these figures are recorded in docs/decisions/0003-run-queue-ring.md.
//!
//! `cargo bench --bench runq_ring_vs_worker`

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use crossbeam_deque::{Injector, Steal, Worker};
use goro::__bench::{RunQueue, RING_CAP};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const BATCH: usize = 128;

fn items(n: usize) -> Vec<NonNull<u64>> {
    let v: &'static mut [u64] = Box::leak((0..n as u64).collect::<Vec<_>>().into_boxed_slice());
    v.iter_mut().map(NonNull::from).collect()
}

/// What a `Worker` holds in the comparison: a G pointer, as the ring holds.
#[derive(Clone, Copy)]
struct Ptr(#[allow(dead_code)] NonNull<u64>);
// SAFETY: points into a leaked, never-written array.
unsafe impl Send for Ptr {}

/// Worker with Go's bound: a push onto 256 items moves half to the injector.
fn worker_push(w: &Worker<Ptr>, inj: &Injector<Ptr>, p: Ptr) {
    if w.len() >= RING_CAP as usize {
        for _ in 0..RING_CAP / 2 {
            if let Some(x) = w.pop() {
                inj.push(x);
            }
        }
    }
    w.push(p);
}

fn owner_push_pop(c: &mut Criterion) {
    let it = items(BATCH);
    let mut g = c.benchmark_group("owner_push_then_pop_128");
    g.throughput(Throughput::Elements(BATCH as u64 * 2));
    g.bench_function("ring", |b| {
        let q = RunQueue::new();
        b.iter(|| {
            for &i in &it {
                q.push(i, false, |_| unreachable!());
            }
            while let Some(x) = q.pop() {
                black_box(x);
            }
        })
    });
    g.bench_function("worker", |b| {
        let w = Worker::new_fifo();
        let inj = Injector::new();
        b.iter(|| {
            for &i in &it {
                worker_push(&w, &inj, Ptr(i));
            }
            while let Some(x) = w.pop() {
                black_box(x);
            }
        })
    });
    g.finish();
}

fn steal_half(c: &mut Criterion) {
    let it = items(BATCH);
    let mut g = c.benchmark_group("steal_from_128");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function(BenchmarkId::new("ring", "half"), |b| {
        let victim = RunQueue::new();
        let thief = RunQueue::new();
        b.iter(|| {
            for &i in &it {
                victim.push(i, false, |_| unreachable!());
            }
            // Drain by repeated steal-half, as idle Ps do.
            while let Some((x, _)) = thief.steal_into(&victim, false, || true) {
                black_box(x);
                while let Some(y) = thief.pop() {
                    black_box(y);
                }
            }
        })
    });
    g.bench_function(BenchmarkId::new("worker", "batch"), |b| {
        let victim = Worker::new_fifo();
        let stealer = victim.stealer();
        let thief = Worker::new_fifo();
        let inj = Injector::new();
        b.iter(|| {
            for &i in &it {
                worker_push(&victim, &inj, Ptr(i));
            }
            loop {
                match stealer.steal_batch_and_pop(&thief) {
                    Steal::Success(x) => {
                        black_box(x);
                        while let Some(y) = thief.pop() {
                            black_box(y);
                        }
                    }
                    Steal::Empty => break,
                    Steal::Retry => {}
                }
            }
        })
    });
    g.finish();
}

/// The owner pushes and pops while another thread keeps stealing: what the owner
/// pays for sharing its queue.
fn contended(c: &mut Criterion) {
    let it = items(BATCH);
    let mut g = c.benchmark_group("owner_under_a_thief");
    g.throughput(Throughput::Elements(BATCH as u64 * 2));
    g.bench_function("ring", |b| {
        let q = Arc::new(RunQueue::<u64>::new());
        let stop = Arc::new(AtomicBool::new(false));
        let thief = {
            let (q, stop) = (q.clone(), stop.clone());
            std::thread::spawn(move || {
                let mine = RunQueue::new();
                while !stop.load(Ordering::Relaxed) {
                    if mine.steal_into(&q, false, || true).is_some() {
                        while mine.pop().is_some() {}
                    }
                }
            })
        };
        b.iter(|| {
            for &i in &it {
                q.push(i, false, |_| {});
            }
            while let Some(x) = q.pop() {
                black_box(x);
            }
        });
        stop.store(true, Ordering::Relaxed);
        thief.join().unwrap();
    });
    g.bench_function("worker", |b| {
        let w = Worker::new_fifo();
        let stealer = w.stealer();
        let inj = Injector::new();
        let stop = Arc::new(AtomicBool::new(false));
        let thief = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mine = Worker::new_fifo();
                while !stop.load(Ordering::Relaxed) {
                    if let Steal::Success(_) = stealer.steal_batch_and_pop(&mine) {
                        while mine.pop().is_some() {}
                    }
                }
            })
        };
        b.iter(|| {
            for &i in &it {
                worker_push(&w, &inj, Ptr(i));
            }
            while let Some(x) = w.pop() {
                black_box(x);
            }
        });
        stop.store(true, Ordering::Relaxed);
        thief.join().unwrap();
    });
    g.finish();
}

criterion_group!(benches, owner_push_pop, steal_half, contended);
criterion_main!(benches);

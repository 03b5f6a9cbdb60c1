//! Tokio side of the comparison.
//!
//! Runtime: GOMAXPROCS = 1 -> `current_thread` (one thread runs every task, as
//! Go with one P); GOMAXPROCS = P > 1 -> `multi_thread` with `worker_threads = P`.
//! Env TOKIO_FLAVOR=multi forces multi_thread even at P = 1 (TOKIO_FLAVOR=current
//! forces current_thread). The driver is itself a spawned task (like Go's main
//! goroutine, it runs on a worker, not on the block_on thread).

use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use compare::*;

const IMPL: &str = "tokio";

type Driver = Pin<Box<dyn Future<Output = Measure> + Send>>;

fn main() {
    let args = parse_args(IMPL);
    let n = args.n;
    let driver: Driver = match args.workload.as_str() {
        "spawn_join" => Box::pin(spawn_join(n)),
        "yield" => Box::pin(yield_pingpong(n)),
        "imbalanced" => Box::pin(imbalanced(n)),
        "parked_rss" => Box::pin(parked_rss(n)),
        "work_unit" => Box::pin(work_unit(n)),
        other => unknown_workload(IMPL, other),
    };

    let procs = procs_from_env();
    let current = match std::env::var("TOKIO_FLAVOR").as_deref() {
        Ok("current") => true,
        Ok("multi") => false,
        _ => procs == 1,
    };
    let rt = if current {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(procs)
            .enable_all()
            .build()
    }
    .unwrap_or_else(|e| fail(&format!("tokio runtime: {e}")));
    let procs = if current { 1 } else { procs };

    let m = match rt.block_on(async { tokio::spawn(driver).await }) {
        Ok(m) => m,
        Err(e) => fail(&format!("driver task failed: {e}")),
    };
    emit_and_exit(&args.workload, IMPL, procs, m)
}

/// Spawn n trivial tasks, then await each handle.
async fn spawn_join(n: u64) -> Measure {
    let mut hs = Vec::with_capacity(n as usize);
    let t = Instant::now();
    for _ in 0..n {
        hs.push(tokio::spawn(async {}));
    }
    for h in hs {
        if h.await.is_err() {
            fail("a trivial task failed");
        }
    }
    ns_per_op(t.elapsed(), n)
}

/// Two tasks each yield n times.
async fn yield_pingpong(n: u64) -> Measure {
    let t = Instant::now();
    let hs: Vec<_> = (0..2)
        .map(|_| {
            tokio::spawn(async move {
                for _ in 0..n {
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    for h in hs {
        if h.await.is_err() {
            fail("a yielding task failed");
        }
    }
    ns_per_op(t.elapsed(), 2 * n)
}

/// n CPU-bound tasks (no .await inside: tokio cannot preempt them, as may).
async fn imbalanced(n: u64) -> Measure {
    let t = Instant::now();
    let hs: Vec<_> = (0..n)
        .map(|_| tokio::spawn(async { work(WORK_ITERS) }))
        .collect();
    let mut sink = 0u64;
    for h in hs {
        match h.await {
            Ok(s) => sink ^= s,
            Err(e) => fail(&format!("a CPU-bound task failed: {e}")),
        }
    }
    black_box(sink);
    (t.elapsed().as_secs_f64(), "s")
}

static STARTED: AtomicU64 = AtomicU64::new(0);

/// n tasks each sleeping 10 s: RSS growth per parked task.
async fn parked_rss(n: u64) -> Measure {
    let before = vm_rss_kib();
    for _ in 0..n {
        // Dropping the JoinHandle detaches the task.
        drop(tokio::spawn(async {
            STARTED.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(PARK_FOR).await;
        }));
    }
    let t = Instant::now();
    while STARTED.load(Ordering::Relaxed) < n {
        if t.elapsed() > START_DEADLINE {
            fail(&format!(
                "only {}/{n} tasks started after {START_DEADLINE:?}",
                STARTED.load(Ordering::Relaxed)
            ));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    kib_per_task(before, vm_rss_kib(), n)
}

/// Milliseconds of one imbalanced task's work, run n times in this task.
async fn work_unit(n: u64) -> Measure {
    let t = Instant::now();
    for _ in 0..n {
        black_box(work(black_box(WORK_ITERS)));
    }
    (t.elapsed().as_secs_f64() * 1e3 / n as f64, "ms")
}

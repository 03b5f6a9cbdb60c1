//! may side of the comparison: stackful coroutines, `may::config().set_workers(GOMAXPROCS)`,
//! worker pinning off (goro, Go and Tokio do not pin by default either), default
//! coroutine stack (0x1000 words = 32 KiB). The driver is itself a coroutine.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use compare::*;

const IMPL: &str = "may";

fn main() {
    let args = parse_args(IMPL);
    let f: fn(u64) -> Measure = match args.workload.as_str() {
        "spawn_join" => spawn_join,
        "yield" => yield_pingpong,
        "imbalanced" => imbalanced,
        "parked_rss" => parked_rss,
        "work_unit" => work_unit,
        other => unknown_workload(IMPL, other),
    };
    let procs = procs_from_env();
    may::config().set_workers(procs).set_worker_pin(false);
    let n = args.n;
    let m = match go(move || f(n)).join() {
        Ok(m) => m,
        Err(p) => {
            let mut msg = format!("driver coroutine panicked: {}", panic_message(&*p));
            if msg.contains("alloc sys stack") {
                // Each may stack is its own mmap plus a guard page (two mappings).
                let max = std::fs::read_to_string("/proc/sys/vm/max_map_count").unwrap_or_default();
                msg += &format!(
                    " [each may stack is an mmap + guard page; vm.max_map_count={}]",
                    max.trim()
                );
            }
            fail(&msg)
        }
    };
    emit_and_exit(&args.workload, IMPL, may::config().get_workers(), m)
}

/// may's spawn is unsafe (TLS access and stack overflow are UB in a coroutine);
/// none of the closures here touch TLS or use deep stacks.
fn go<F, T>(f: F) -> may::coroutine::JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    unsafe { may::coroutine::spawn(f) }
}

/// Spawn n trivial coroutines, then join each.
fn spawn_join(n: u64) -> Measure {
    let mut hs = Vec::with_capacity(n as usize);
    let t = Instant::now();
    for _ in 0..n {
        hs.push(go(|| ()));
    }
    for h in hs {
        if h.join().is_err() {
            fail("a trivial coroutine panicked");
        }
    }
    ns_per_op(t.elapsed(), n)
}

/// Two coroutines each yield n times.
fn yield_pingpong(n: u64) -> Measure {
    let t = Instant::now();
    let hs: Vec<_> = (0..2)
        .map(|_| {
            go(move || {
                for _ in 0..n {
                    may::coroutine::yield_now();
                }
            })
        })
        .collect();
    for h in hs {
        if h.join().is_err() {
            fail("a yielding coroutine panicked");
        }
    }
    ns_per_op(t.elapsed(), 2 * n)
}

/// n CPU-bound coroutines spawned from this one (may does not preempt).
fn imbalanced(n: u64) -> Measure {
    let t = Instant::now();
    let hs: Vec<_> = (0..n).map(|_| go(|| work(WORK_ITERS))).collect();
    let mut sink = 0u64;
    for h in hs {
        match h.join() {
            Ok(s) => sink ^= s,
            Err(_) => fail("a CPU-bound coroutine panicked"),
        }
    }
    black_box(sink);
    (t.elapsed().as_secs_f64(), "s")
}

static STARTED: AtomicU64 = AtomicU64::new(0);

/// n coroutines each sleeping 10 s: RSS growth per parked coroutine.
fn parked_rss(n: u64) -> Measure {
    let before = vm_rss_kib();
    for _ in 0..n {
        // Dropping the JoinHandle detaches the coroutine.
        drop(go(|| {
            STARTED.fetch_add(1, Ordering::Relaxed);
            may::coroutine::sleep(PARK_FOR);
        }));
    }
    let t = Instant::now();
    while STARTED.load(Ordering::Relaxed) < n {
        if t.elapsed() > START_DEADLINE {
            fail(&format!(
                "only {}/{n} coroutines started after {START_DEADLINE:?}",
                STARTED.load(Ordering::Relaxed)
            ));
        }
        may::coroutine::sleep(Duration::from_millis(1));
    }
    kib_per_task(before, vm_rss_kib(), n)
}

/// Milliseconds of one imbalanced task's work, run n times in this coroutine.
fn work_unit(n: u64) -> Measure {
    let t = Instant::now();
    for _ in 0..n {
        black_box(work(black_box(WORK_ITERS)));
    }
    (t.elapsed().as_secs_f64() * 1e3 / n as f64, "ms")
}

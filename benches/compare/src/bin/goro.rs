//! goro side of the comparison. Written against /work/shared/API.md only.
//! The driver runs inside a G (like Go's main goroutine); GOMAXPROCS comes from
//! the environment, which goro reads natively.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use compare::*;

const IMPL: &str = "goro";

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
    let n = args.n;
    let m = match goro::go!(move || f(n)).join() {
        Ok(m) => m,
        Err(p) => fail(&format!("driver G panicked: {}", panic_message(&*p))),
    };
    emit_and_exit(&args.workload, IMPL, goro::runtime::gomaxprocs(), m)
}

/// Spawn n trivial Gs, then join each.
fn spawn_join(n: u64) -> Measure {
    let mut hs = Vec::with_capacity(n as usize);
    let t = Instant::now();
    for _ in 0..n {
        hs.push(goro::spawn(|| ()));
    }
    for h in hs {
        if h.join().is_err() {
            fail("a trivial G panicked");
        }
    }
    ns_per_op(t.elapsed(), n)
}

/// Two Gs each yield n times.
fn yield_pingpong(n: u64) -> Measure {
    let t = Instant::now();
    let hs: Vec<_> = (0..2)
        .map(|_| {
            goro::spawn(move || {
                for _ in 0..n {
                    goro::yield_now();
                }
            })
        })
        .collect();
    for h in hs {
        if h.join().is_err() {
            fail("a yielding G panicked");
        }
    }
    ns_per_op(t.elapsed(), 2 * n)
}

/// n CPU-bound Gs spawned from this one; wall seconds until all are joined.
fn imbalanced(n: u64) -> Measure {
    let t = Instant::now();
    let hs: Vec<_> = (0..n).map(|_| goro::spawn(|| work(WORK_ITERS))).collect();
    let mut sink = 0u64;
    for h in hs {
        match h.join() {
            Ok(s) => sink ^= s,
            Err(_) => fail("a CPU-bound G panicked"),
        }
    }
    black_box(sink);
    (t.elapsed().as_secs_f64(), "s")
}

static STARTED: AtomicU64 = AtomicU64::new(0);

/// n Gs each sleeping 10 s: RSS growth per parked G.
fn parked_rss(n: u64) -> Measure {
    let before = vm_rss_kib();
    for _ in 0..n {
        // Dropping the handle detaches the G (no handle memory is counted).
        drop(goro::spawn(|| {
            STARTED.fetch_add(1, Ordering::Relaxed);
            goro::time::sleep(PARK_FOR);
        }));
    }
    let t = Instant::now();
    while STARTED.load(Ordering::Relaxed) < n {
        if t.elapsed() > START_DEADLINE {
            fail(&format!(
                "only {}/{n} Gs started after {START_DEADLINE:?}",
                STARTED.load(Ordering::Relaxed)
            ));
        }
        goro::time::sleep(std::time::Duration::from_millis(1));
    }
    kib_per_task(before, vm_rss_kib(), n)
}

/// Milliseconds of one imbalanced task's work, run n times in this G.
fn work_unit(n: u64) -> Measure {
    let t = Instant::now();
    for _ in 0..n {
        black_box(work(black_box(WORK_ITERS)));
    }
    (t.elapsed().as_secs_f64() * 1e3 / n as f64, "ms")
}

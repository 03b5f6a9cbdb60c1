//! goro with async Rust: goro and Tokio in one program (the rows of the
//! section "goro with async Rust" of docs/BENCHMARKS.md). Go and may have no
//! equivalent, so this binary is not a [`compare::harness::Runtime`]: each
//! workload below is written out once for its two variants, which differ only
//! in the one call being compared.
//!
//! `bridge <workload> [--n N]`, with env `GOMAXPROCS` = P (the parallelism of
//! goro, which reads it natively, and the worker count of the Tokio
//! `multi_thread` runtime; scripts/compare.sh runs P = 2). Each run prints one
//! or two result lines, named by the row (`workload=`) and the variant
//! (`impl=`), in the format of the other binaries:
//!
//! ```text
//! BENCH workload=offload          impl=<spawn_blocking|goro> procs=P value=<ms>      unit=ms
//! BENCH workload=offload_threads  impl=<spawn_blocking|goro> procs=P value=<threads> unit=threads
//! BENCH workload=bridge_pingpong  impl=<goro|thread>         procs=P value=<µs>      unit=us
//! BENCH workload=block_on_ready   impl=goro                  procs=P value=<ns>      unit=ns/op
//! ```
//!
//! | workload | row, variant | N | measures |
//! |---|---|---|---|
//! | `offload_spawn_blocking` | offload, `spawn_blocking` | 100,000 | see [`offload`] |
//! | `offload_goro` | offload, `goro` | 100,000 | see [`offload`] |
//! | `bridge_pingpong_goro` | bridge_pingpong, `goro` | 100,000 | see [`pingpong`] |
//! | `bridge_pingpong_thread` | bridge_pingpong, `thread` | 100,000 | see [`pingpong`] |
//! | `block_on_ready` | block_on_ready, `goro` | 100,000,000 | see [`block_on_ready`] |
//!
//! A wrong count or value fails the run (`FAILED: <reason>`, exit 1), as in
//! the other binaries.

use std::future::Future;
use std::hint::black_box;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use compare::harness::{fail, fmt_value, panic_message, procs_from_env};
use tokio::sync::mpsc;

/// `offload`: how long each job waits, blocking-style.
const JOB_WAIT: Duration = Duration::from_millis(1);

/// `offload`: how often the sampler reads the process's thread count.
const SAMPLE_EVERY: Duration = Duration::from_millis(1);

/// `bridge_pingpong`: untimed round trips before the timed N.
const PINGPONG_WARMUP: u64 = 1_000;

/// A workload of the command line: its name, its default N, and what runs it
/// (with N and the parallelism P).
type Workload = (&'static str, u64, fn(u64, usize));

/// The workloads of the command line.
const WORKLOADS: [Workload; 5] = [
    // jobs
    ("offload_spawn_blocking", 100_000, |n, p| {
        offload(
            n,
            p,
            "spawn_blocking",
            spawn_blocking_job,
            |e: tokio::task::JoinError| e.to_string(),
        )
    }),
    // jobs
    ("offload_goro", 100_000, |n, p| {
        offload(n, p, "goro", goro_job, |e: Box<dyn std::any::Any + Send>| {
            panic_message(&*e)
        })
    }),
    // round trips
    ("bridge_pingpong_goro", 100_000, |n, p| pingpong(n, p, Side::Goroutine)),
    // round trips
    ("bridge_pingpong_thread", 100_000, |n, p| pingpong(n, p, Side::Thread)),
    // calls
    ("block_on_ready", 100_000_000, block_on_ready),
];

fn main() {
    let usage = |msg: &str| -> ! {
        eprintln!("bridge: {msg}");
        let names: Vec<&str> = WORKLOADS.iter().map(|w| w.0).collect();
        eprintln!(
            "usage: bridge <{}> [--n N]   (env GOMAXPROCS sets the parallelism)",
            names.join("|")
        );
        std::process::exit(2)
    };
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| usage("missing workload"));
    let &(_, default_n, run) = WORKLOADS
        .iter()
        .find(|w| w.0 == name)
        .unwrap_or_else(|| usage(&format!("unknown workload {name:?}")));
    let mut n = default_n;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--n" => {
                n = args
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .filter(|&v| v > 0)
                    .unwrap_or_else(|| usage("--n needs a positive integer"));
            }
            _ => usage(&format!("unknown argument {a:?}")),
        }
    }
    run(n, procs_from_env());
    let _ = std::io::stdout().flush();
    // Tasks, blocking threads and Gs still around are not waited for.
    std::process::exit(0)
}

/// Prints one result line (flushed by `main` before it exits).
fn emit(workload: &str, variant: &str, procs: usize, value: f64, unit: &str) {
    println!(
        "BENCH workload={workload} impl={variant} procs={procs} value={} unit={unit}",
        fmt_value(value, unit)
    );
}

/// The Tokio runtime of every workload: `multi_thread` with `procs` workers
/// and Tokio's defaults otherwise (`max_blocking_threads` = 512).
fn tokio_runtime(procs: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(procs)
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(&format!("tokio runtime: {e}")))
}

/// The OS threads of this process now (`Threads:` of /proc/self/status).
fn threads_now() -> u64 {
    let s =
        std::fs::read_to_string("/proc/self/status").unwrap_or_else(|e| fail(&format!("read /proc/self/status: {e}")));
    s.lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| fail("no Threads: in /proc/self/status"))
}

/// A thread that reads the process's thread count every [`SAMPLE_EVERY`]
/// until stopped, and keeps the largest.
struct ThreadPeak {
    stop: Arc<AtomicBool>,
    sampler: thread::JoinHandle<u64>,
}

impl ThreadPeak {
    fn start() -> ThreadPeak {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let sampler = thread::Builder::new()
            .name("thread-sampler".into())
            .spawn(move || {
                let mut peak = 0;
                loop {
                    peak = peak.max(threads_now());
                    if flag.load(Ordering::Relaxed) {
                        return peak;
                    }
                    thread::sleep(SAMPLE_EVERY);
                }
            })
            .unwrap_or_else(|e| fail(&format!("spawn the sampler thread: {e}")));
        ThreadPeak { stop, sampler }
    }

    /// The peak, not counting the sampler itself (it reads once more first).
    fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let peak = self
            .sampler
            .join()
            .unwrap_or_else(|p| fail(&format!("sampler thread panicked: {}", panic_message(&*p))));
        peak - 1
    }
}

/// One `offload` job on Tokio's blocking pool: wait [`JOB_WAIT`] with
/// `std::thread::sleep`, return `i`.
fn spawn_blocking_job(i: u64) -> tokio::task::JoinHandle<u64> {
    tokio::task::spawn_blocking(move || {
        thread::sleep(JOB_WAIT);
        i
    })
}

/// One `offload` job in a goroutine: wait [`JOB_WAIT`] with
/// `goro::time::sleep` (only the G waits), return `i`.
fn goro_job(i: u64) -> goro::JoinHandle<u64> {
    goro::go!(move || {
        goro::time::sleep(JOB_WAIT);
        i
    })
}

/// `offload`: a Tokio program (`multi_thread`, `procs` workers) offloads n
/// jobs that each wait 1 ms blocking-style, through `job` (Tokio's
/// `spawn_blocking` or `goro::go!`; the handle is awaited either way). The
/// driver, a `tokio::spawn`ed task, starts all n jobs, keeping their handles
/// in a `Vec`, then awaits each handle in turn and checks the sum of the
/// jobs' results (their indices). Before the clock starts, one job is offloaded
/// and awaited (it starts Tokio's first blocking thread, or goro's runtime).
///
/// Prints the wall time from the first offload to the last await (`offload`,
/// ms) and the process's peak OS thread count over the whole driver, warm-up
/// included (`offload_threads`): the largest `Threads:` of /proc/self/status
/// read every 1 ms by a sampler thread, which is not counted.
fn offload<H, E>(n: u64, procs: usize, variant: &'static str, job: fn(u64) -> H, why: fn(E) -> String)
where
    H: Future<Output = Result<u64, E>> + Send + 'static,
    E: Send + 'static,
{
    let driver = async move {
        let peak = ThreadPeak::start();
        let warm = job(n)
            .await
            .unwrap_or_else(|e| fail(&format!("warm-up job failed: {}", why(e))));
        if warm != n {
            fail(&format!("warm-up job returned {warm}, not {n}"));
        }
        let t = Instant::now();
        let handles: Vec<H> = (0..n).map(job).collect();
        let mut sum = 0u64;
        for h in handles {
            sum += h.await.unwrap_or_else(|e| fail(&format!("a job failed: {}", why(e))));
        }
        let wall = t.elapsed();
        let threads = peak.finish();
        if sum != n * (n - 1) / 2 {
            fail(&format!("the jobs' results sum to {sum}, not {}", n * (n - 1) / 2));
        }
        (wall, threads)
    };
    let rt = tokio_runtime(procs);
    let (wall, threads) = rt
        .block_on(async { tokio::spawn(driver).await })
        .unwrap_or_else(|e| fail(&format!("driver task failed: {e}")));
    emit("offload", variant, procs, wall.as_secs_f64() * 1e3, "ms");
    emit("offload_threads", variant, procs, threads as f64, "threads");
    // Dropping the runtime would wait for its idle blocking threads.
    std::mem::forget(rt);
}

/// The side of `bridge_pingpong` that is not the Tokio task.
#[derive(Clone, Copy)]
enum Side {
    /// A goroutine: `goro::block_on(tx.send(v))`, `goro::block_on(rx.recv())`.
    Goroutine,
    /// A plain `std::thread`: `tx.blocking_send(v)`, `rx.blocking_recv()`.
    Thread,
}

/// One round trip of `bridge_pingpong`'s pinging side: send i, get i back.
fn round_trip(i: u64, send: &mut impl FnMut(u64) -> bool, recv: &mut impl FnMut() -> Option<u64>) {
    if !send(i) {
        fail("the Tokio task's receiver is gone");
    }
    match recv() {
        Some(v) if v == i => {}
        Some(v) => fail(&format!("sent {i}, got {v} back")),
        None => fail("the Tokio task's sender is gone"),
    }
}

/// The pinging side's loop: `warmup` round trips, then n timed ones; the
/// time of the n.
fn ping_loop(
    warmup: u64,
    n: u64,
    mut send: impl FnMut(u64) -> bool,
    mut recv: impl FnMut() -> Option<u64>,
) -> Duration {
    for i in 0..warmup {
        round_trip(i, &mut send, &mut recv);
    }
    let t = Instant::now();
    for i in warmup..warmup + n {
        round_trip(i, &mut send, &mut recv);
    }
    t.elapsed()
}

/// `bridge_pingpong`: a Tokio task (on a `multi_thread` runtime with `procs`
/// workers) and the other side exchange values over two
/// `tokio::sync::mpsc::channel(1)`s: the other side sends i on `ping` and
/// waits for it back on `pong`, the task echoes. The other side is a
/// goroutine (`goro::block_on` of the channel futures; goro's GOMAXPROCS from
/// the environment) or a `std::thread` (`blocking_send` / `blocking_recv`).
/// [`PINGPONG_WARMUP`] round trips first, then n timed by the other side;
/// every value is checked, and so is the task's count once `ping` is closed.
/// Prints µs per round trip.
fn pingpong(n: u64, procs: usize, side: Side) {
    let rt = tokio_runtime(procs);
    let (ping_tx, mut ping_rx) = mpsc::channel::<u64>(1);
    let (pong_tx, mut pong_rx) = mpsc::channel::<u64>(1);
    let echo = rt.spawn(async move {
        let mut count = 0u64;
        while let Some(v) = ping_rx.recv().await {
            if pong_tx.send(v).await.is_err() {
                break;
            }
            count += 1;
        }
        count
    });
    let (d, variant) = match side {
        Side::Goroutine => {
            let g = goro::go!(move || {
                ping_loop(
                    PINGPONG_WARMUP,
                    n,
                    |v| goro::block_on(ping_tx.send(v)).is_ok(),
                    || goro::block_on(pong_rx.recv()),
                )
            });
            let d = g
                .join()
                .unwrap_or_else(|p| fail(&format!("the pinging G panicked: {}", panic_message(&*p))));
            (d, "goro")
        }
        Side::Thread => {
            let t = thread::spawn(move || {
                ping_loop(
                    PINGPONG_WARMUP,
                    n,
                    |v| ping_tx.blocking_send(v).is_ok(),
                    || pong_rx.blocking_recv(),
                )
            });
            let d = t
                .join()
                .unwrap_or_else(|p| fail(&format!("the pinging thread panicked: {}", panic_message(&*p))));
            (d, "thread")
        }
    };
    // `ping`'s sender was dropped with the loop: the task ends.
    let count = rt
        .block_on(echo)
        .unwrap_or_else(|e| fail(&format!("the echoing task failed: {e}")));
    if count != PINGPONG_WARMUP + n {
        fail(&format!(
            "the Tokio task echoed {count} values, not {}",
            PINGPONG_WARMUP + n
        ));
    }
    emit(
        "bridge_pingpong",
        variant,
        procs,
        d.as_secs_f64() * 1e6 / n as f64,
        "us",
    );
    std::mem::forget(rt);
}

/// `block_on_ready`: in one goroutine, n calls of
/// `goro::block_on(std::future::ready(i))` (input and output through
/// `black_box`), the results summed and checked; ns per call.
fn block_on_ready(n: u64, procs: usize) {
    let g = goro::go!(move || {
        let t = Instant::now();
        let mut sum = 0u64;
        for i in 0..n {
            sum = sum.wrapping_add(black_box(goro::block_on(std::future::ready(black_box(i)))));
        }
        (t.elapsed(), sum)
    });
    let (d, sum) = g
        .join()
        .unwrap_or_else(|p| fail(&format!("the G panicked: {}", panic_message(&*p))));
    let want = (0..n).fold(0u64, |a, i| a.wrapping_add(i));
    if sum != want {
        fail(&format!("the calls' results sum to {sum}, not {want}"));
    }
    emit("block_on_ready", "goro", procs, d.as_nanos() as f64 / n as f64, "ns/op");
}

//! The workloads of the `goro`, `tokio` and `may` binaries, written once over
//! [`Runtime`]; go/main.go is their Go twin and mirrors this list.
//!
//! This module owns what a workload is: its name and default size N
//! ([`table`]), its constants, what it times and in which unit, and how its
//! result is checked (a wrong sum or count fails the run). Each is an async fn
//! generic over the runtime; only the primitives it calls differ between the
//! binaries. The driver itself runs as a task (see [`Runtime::run`]), so
//! runtime start-up is not timed.
//!
//! Adding a workload: one entry in [`table`] and its function here, a `defaultN`
//! entry and a `case` in go/main.go, and one line in the PLAN of
//! scripts/compare.sh.
//!
//! The one server among them, `echo_server`, prints `LISTENING <port>` instead
//! of a result line and serves until killed; the shared load generator
//! `src/bin/echo_client.rs` measures it.

use std::future::Future;
use std::hint::black_box;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::harness::{fail, process_cpu_time, Args, Driver, Measure, Runtime};

/// A workload of the command line.
pub struct Workload {
    pub name: &'static str,
    /// N when `--n` is not given.
    pub default_n: u64,
    /// The workload with the given arguments, on the runtime of [`table`].
    pub driver: fn(&Args) -> Driver,
}

/// Every workload, on runtime `R`, with what its N counts.
pub fn table<R: Runtime>() -> [Workload; 16] {
    fn w(name: &'static str, default_n: u64, driver: fn(&Args) -> Driver) -> Workload {
        Workload {
            name,
            default_n,
            driver,
        }
    }
    [
        // tasks
        w("spawn_join", 1_000_000, |a| Box::pin(spawn_join::<R>(a.n))),
        // yields per task (2 tasks)
        w("yield", 1_000_000, |a| Box::pin(yield_pingpong::<R>(a.n))),
        // coroutine switch round trips, per best of 5 (the runtime is not used)
        w("switch_floor", 20_000_000, |a| Box::pin(switch_floor(a.n))),
        // CPU-bound tasks
        w("imbalanced", 1_000, |a| Box::pin(imbalanced::<R>(a.n))),
        // sleeping tasks
        w("parked_rss", 100_000, |a| Box::pin(parked_rss::<R>(a.n))),
        // tasks parked on a channel receive, measured after they idled
        w("idle_rss", 100_000, |a| Box::pin(idle_rss::<R>(a.n))),
        // repetitions of one imbalanced task's work
        w("work_unit", 50, |a| Box::pin(work_unit(a.n))),
        // round trips over two unbuffered channels
        w("pingpong", 1_000_000, |a| Box::pin(pingpong::<R>(a.n))),
        // messages in total (N/4 per producer)
        w("buffered", 4_000_000, |a| Box::pin(buffered::<R>(a.n))),
        // leaves (a power of 10)
        w("skynet", 1_000_000, |a| Box::pin(skynet::<R>(a.n))),
        // lock + unlock by one task
        w("mutex_uncontended", 10_000_000, |a| Box::pin(mutex_tasks::<R>(a.n, 1))),
        // lock + unlock in total (N/4 per task)
        w("mutex_contended", 4_000_000, |a| {
            Box::pin(mutex_tasks::<R>(a.n, MUTEX_TASKS))
        }),
        // tasks sleeping 10 times
        w("sleepers_wall", 100_000, |a| Box::pin(sleepers_wall::<R>(a.n))),
        // the same tasks
        w("sleepers_cpu", 100_000, |a| Box::pin(sleepers_cpu::<R>(a.n))),
        // ms the CPU hog runs
        w("hog_latency", 2_000, |a| Box::pin(hog_latency::<R>(a.n))),
        // unused: serves until killed
        w("echo_server", 0, |a| Box::pin(echo_server::<R>(a.port))),
    ]
}

/// Iterations of [`work`] per task in `imbalanced` (~1-2 ms on a 2-3 GHz core).
const WORK_ITERS: u64 = 3_000_000;

/// How long each `parked_rss` task sleeps; the process exits long before.
const PARK_FOR: Duration = Duration::from_secs(10);

/// How long `idle_rss` lets its tasks idle before it measures (past goro's
/// default `swap_idle_after` of 1 s and the sweeps that follow it).
const IDLE_FOR: Duration = Duration::from_secs(3);

/// How long `parked_rss` waits for all its tasks to have started.
const START_DEADLINE: Duration = Duration::from_secs(60);

/// `buffered`: channel capacity, producers and consumers.
const BUFFERED_CAP: usize = 128;
const BUFFERED_PRODUCERS: u64 = 4;
const BUFFERED_CONSUMERS: u64 = 4;

/// `skynet`: children per node (the canonical 10); N (leaves) must be a power of it.
const SKYNET_FANOUT: u64 = 10;

/// `mutex_contended`: tasks sharing the one lock.
const MUTEX_TASKS: u64 = 4;

/// `sleepers_*`: sleeps per task, each of [`next_sleep_ms`] milliseconds.
const SLEEPS_PER_TASK: u32 = 10;

/// `hog_latency`: the ticker's sleep.
const HOG_TICK: Duration = Duration::from_millis(5);

/// `hog_latency`: sleeps the ticker completes before the hog is spawned.
const HOG_WARMUP_TICKS: u64 = 3;

/// `hog_latency`: how long the driver waits for those [`HOG_WARMUP_TICKS`] sleeps.
const HOG_WARMUP_DEADLINE: Duration = Duration::from_secs(10);

/// `echo_server`: bytes read (and written back) at most per read call.
const ECHO_BUF: usize = 4096;

/// Waits for `task`; exits 1 naming it (`who`, e.g. "a yielding") if it failed.
async fn wait<R: Runtime, T: Send + 'static>(task: R::Task<T>, who: &str) -> T {
    R::join(task)
        .await
        .unwrap_or_else(|e| fail(&format!("{who} {} failed: {e}", R::TASK)))
}

/// Waits for every task of `tasks` in turn (see [`wait`]).
async fn wait_all<R: Runtime, T: Send + 'static>(tasks: Vec<R::Task<T>>, who: &str) -> Vec<T> {
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(wait::<R, T>(t, who).await);
    }
    out
}

/// ns per operation.
fn ns_per_op(d: Duration, ops: u64) -> Measure {
    (d.as_nanos() as f64 / ops as f64, "ns/op")
}

/// Wall seconds.
fn secs(d: Duration) -> Measure {
    (d.as_secs_f64(), "s")
}

/// Items of part `i` when `n` items are split into `parts` parts: n / parts, and
/// one more for the first n % parts parts (so the parts add up to n exactly).
fn share(n: u64, parts: u64, i: u64) -> u64 {
    n / parts + u64::from(i < n % parts)
}

/// `spawn_join`: spawn n trivial tasks, then wait for each; ns per task.
async fn spawn_join<R: Runtime>(n: u64) -> Measure {
    let mut hs = Vec::with_capacity(n as usize);
    let t = Instant::now();
    for _ in 0..n {
        hs.push(R::spawn(|| async {}));
    }
    wait_all::<R, ()>(hs, "a trivial").await;
    ns_per_op(t.elapsed(), n)
}

/// `yield`: two tasks each yield n times; ns per yield.
async fn yield_pingpong<R: Runtime>(n: u64) -> Measure {
    let t = Instant::now();
    let hs: Vec<_> = (0..2)
        .map(|_| {
            R::spawn(move || async move {
                for _ in 0..n {
                    R::yield_now().await;
                }
            })
        })
        .collect();
    wait_all::<R, ()>(hs, "a yielding").await;
    ns_per_op(t.elapsed(), 2 * n)
}

/// `switch_floor`: the floor goro's switches are measured against: a bare
/// corosensei coroutine resumed and suspended n times (the switch every goro
/// park, yield and hand-off makes, with nothing else), best of 5; ns per
/// round trip. It uses no runtime: scripts/compare.sh runs it in goro's binary
/// only, beside `yield` and `pingpong`, whose ns it divides.
async fn switch_floor(n: u64) -> Measure {
    use corosensei::{Coroutine, CoroutineResult};
    let best = (0..5)
        .map(|_| {
            let mut co = Coroutine::new(|y, mut x: u64| loop {
                x = y.suspend(x.wrapping_add(1));
            });
            let t = Instant::now();
            let mut v = 0u64;
            for _ in 0..n {
                match co.resume(v) {
                    CoroutineResult::Yield(r) => v = r,
                    CoroutineResult::Return(()) => unreachable!("the coroutine loops forever"),
                }
            }
            let took = t.elapsed();
            black_box(v);
            // Never finished: forgetting it skips the forced unwind of its stack.
            std::mem::forget(co);
            took
        })
        .min()
        .expect("five runs");
    ns_per_op(best, n)
}

/// The CPU-bound body of one `imbalanced` task: sum 0..iters, with black_box so
/// that LLVM neither vectorises nor closes the loop into n*(n-1)/2 (Go's
/// compiler does neither either: go/main.go has the plain loop).
#[inline(never)]
fn work(iters: u64) -> u64 {
    let mut s = 0u64;
    for i in 0..iters {
        s = s.wrapping_add(black_box(i));
    }
    s
}

/// `imbalanced`: n CPU-bound tasks spawned from the driver, with no yield
/// inside (Tokio and may cannot preempt them; goro and Go could, but need not:
/// all are equal); wall seconds until all are joined.
async fn imbalanced<R: Runtime>(n: u64) -> Measure {
    let t = Instant::now();
    let hs: Vec<_> = (0..n).map(|_| R::spawn(|| async { work(WORK_ITERS) })).collect();
    let sink = wait_all::<R, u64>(hs, "a CPU-bound")
        .await
        .into_iter()
        .fold(0, |a, s| a ^ s);
    black_box(sink);
    secs(t.elapsed())
}

/// `work_unit`: milliseconds of one `imbalanced` task's work, run n times in the
/// driver (calibration: the same work in all four).
async fn work_unit(n: u64) -> Measure {
    let t = Instant::now();
    for _ in 0..n {
        black_box(work(black_box(WORK_ITERS)));
    }
    (t.elapsed().as_secs_f64() * 1e3 / n as f64, "ms")
}

/// VmRSS of this process in KiB, from /proc/self/status.
fn vm_rss_kib() -> u64 {
    let s =
        std::fs::read_to_string("/proc/self/status").unwrap_or_else(|e| fail(&format!("read /proc/self/status: {e}")));
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| fail("no VmRSS in /proc/self/status"))
}

/// `parked_rss`: tasks that have started.
static STARTED: AtomicU64 = AtomicU64::new(0);

/// `parked_rss`: n detached tasks each sleeping [`PARK_FOR`]; KiB of VmRSS
/// growth per task once all have started.
async fn parked_rss<R: Runtime>(n: u64) -> Measure {
    let before = vm_rss_kib();
    for _ in 0..n {
        drop(R::spawn(|| async {
            STARTED.fetch_add(1, Ordering::Relaxed);
            R::sleep(PARK_FOR).await;
        }));
    }
    until_started::<R>(n).await;
    ((vm_rss_kib() as f64 - before as f64) / n as f64, "KiB")
}

/// Waits until `n` tasks have counted themselves in [`STARTED`]; fails after
/// [`START_DEADLINE`].
async fn until_started<R: Runtime>(n: u64) {
    let t = Instant::now();
    while STARTED.load(Ordering::Relaxed) < n {
        if t.elapsed() > START_DEADLINE {
            fail(&format!(
                "only {}/{n} {}s started after {START_DEADLINE:?}",
                STARTED.load(Ordering::Relaxed),
                R::TASK
            ));
        }
        R::sleep(Duration::from_millis(1)).await;
    }
}

/// `idle_rss`: N tasks, each parked receiving on a channel of its own (capacity
/// 1: the smallest every runtime has), idle for [`IDLE_FOR`] once all have
/// started; (VmRSS then - VmRSS before) / N in KiB, channels included. The
/// senders are leaked, so nobody wakes before the process exits.
async fn idle_rss<R: Runtime>(n: u64) -> Measure {
    let before = vm_rss_kib();
    let mut senders = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let (tx, mut rx) = R::channel(1);
        senders.push(tx);
        drop(R::spawn(move || async move {
            STARTED.fetch_add(1, Ordering::Relaxed);
            let _ = R::recv(&mut rx).await;
        }));
    }
    until_started::<R>(n).await;
    R::sleep(IDLE_FOR).await;
    let kib = (vm_rss_kib() as f64 - before as f64) / n as f64;
    std::mem::forget(senders);
    (kib, "KiB")
}

/// `pingpong`: two tasks, two unbuffered channels: A sends i on `ping` and waits
/// for it back on `pong`, B echoes; ns per round trip.
async fn pingpong<R: Runtime>(n: u64) -> Measure {
    let (mut ping_tx, mut ping_rx) = R::channel(0);
    let (mut pong_tx, mut pong_rx) = R::channel(0);
    let t = Instant::now();
    let a = R::spawn(move || async move {
        for i in 0..n {
            if R::send(&mut ping_tx, i).await.is_err() {
                fail("pingpong: ping send failed");
            }
            match R::recv(&mut pong_rx).await {
                Some(v) if v == i => {}
                other => fail(&format!("pingpong: expected Some({i}) back, got {other:?}")),
            }
        }
    });
    let b = R::spawn(move || async move {
        for _ in 0..n {
            let v = R::recv(&mut ping_rx)
                .await
                .unwrap_or_else(|| fail("pingpong: ping recv failed"));
            if R::send(&mut pong_tx, v).await.is_err() {
                fail("pingpong: pong send failed");
            }
        }
    });
    wait_all::<R, ()>(vec![a, b], "a pingpong").await;
    ns_per_op(t.elapsed(), n)
}

/// `buffered`: one MPMC channel of capacity [`BUFFERED_CAP`], producers sending
/// 0..share(n) each and consumers receiving until the channel is closed (the
/// last sender dropped); msgs/s. The consumers' count and sum are checked.
async fn buffered<R: Runtime>(n: u64) -> Measure {
    let (tx, rx) = R::mpmc_channel(BUFFERED_CAP);
    let t = Instant::now();
    let consumers: Vec<_> = (0..BUFFERED_CONSUMERS)
        .map(|_| {
            let mut rx = rx.clone();
            R::spawn(move || async move {
                let (mut count, mut sum) = (0u64, 0u64);
                while let Ok(v) = R::mpmc_recv(&mut rx).await {
                    count += 1;
                    sum += v;
                }
                (count, sum)
            })
        })
        .collect();
    drop(rx);
    let producers: Vec<_> = (0..BUFFERED_PRODUCERS)
        .map(|p| {
            let mut tx = tx.clone();
            let k = share(n, BUFFERED_PRODUCERS, p);
            R::spawn(move || async move {
                for i in 0..k {
                    if R::mpmc_send(&mut tx, i).await.is_err() {
                        fail("buffered: send failed");
                    }
                }
            })
        })
        .collect();
    drop(tx);
    wait_all::<R, ()>(producers, "a buffered producer").await;
    let got = wait_all::<R, (u64, u64)>(consumers, "a buffered consumer").await;
    let d = t.elapsed();
    let (count, sum) = got.into_iter().fold((0, 0), |(c, s), (dc, ds)| (c + dc, s + ds));
    // Producer p sends 0..share(n, PRODUCERS, p).
    let want: u64 = (0..BUFFERED_PRODUCERS)
        .map(|p| {
            let k = share(n, BUFFERED_PRODUCERS, p);
            k * k.saturating_sub(1) / 2
        })
        .sum();
    if count != n || sum != want {
        fail(&format!(
            "buffered: consumers got {count} messages summing to {sum}, expected {n} summing to {want}"
        ));
    }
    (n as f64 / d.as_secs_f64(), "msgs/s")
}

/// One skynet node: a leaf sends its index; an inner node makes a channel of
/// capacity [`SKYNET_FANOUT`], spawns that many children on it, sums their
/// answers and sends the sum up. Not an `async fn`: the node spawns its own
/// kind, and only a declared `Send` lets the compiler see that it is.
#[allow(clippy::manual_async_fn)]
fn skynet_node<R: Runtime>(mut up: R::Tx, num: u64, size: u64) -> impl Future<Output = ()> + Send {
    async move {
        let v = if size == 1 {
            num
        } else {
            let (tx, mut rx) = R::channel(SKYNET_FANOUT as usize);
            let sub = size / SKYNET_FANOUT;
            for i in 0..SKYNET_FANOUT {
                let tx = tx.clone();
                drop(R::spawn(move || skynet_node::<R>(tx, num + i * sub, sub)));
            }
            drop(tx);
            let mut sum = 0;
            for _ in 0..SKYNET_FANOUT {
                sum += R::recv(&mut rx).await.unwrap_or_else(|| fail("skynet: recv failed"));
            }
            sum
        };
        if R::send(&mut up, v).await.is_err() {
            fail("skynet: send failed");
        }
    }
}

/// `skynet`: the tree of n leaves (a power of [`SKYNET_FANOUT`]); wall seconds
/// until the root's sum, 0 + 1 + ... + (n - 1), is received by the driver.
async fn skynet<R: Runtime>(n: u64) -> Measure {
    let mut k = n;
    while k > 1 && k.is_multiple_of(SKYNET_FANOUT) {
        k /= SKYNET_FANOUT;
    }
    if k != 1 {
        fail(&format!("skynet: N={n} leaves is not a power of {SKYNET_FANOUT}"));
    }
    let (tx, mut rx) = R::channel(1);
    let t = Instant::now();
    drop(R::spawn(move || skynet_node::<R>(tx, 0, n)));
    let sum = R::recv(&mut rx)
        .await
        .unwrap_or_else(|| fail("skynet: root recv failed"));
    let d = t.elapsed();
    let want = n * (n - 1) / 2;
    if sum != want {
        fail(&format!("skynet: root sum {sum}, expected {want}"));
    }
    secs(d)
}

/// `mutex_*`: `tasks` tasks (1: `mutex_uncontended`, [`MUTEX_TASKS`]:
/// `mutex_contended`) share n lock + increment + unlock of one mutex; wall ns /
/// n. The counter must end at n. Even the one task is spawned, not the driver
/// itself: goro's and may's loop then compiles as in a plain function (the
/// driver's future keeps its timer, whose address escapes, next to the loop's
/// variables, which then stay in memory).
async fn mutex_tasks<R: Runtime>(n: u64, tasks: u64) -> Measure {
    let m = Arc::new(R::mutex(0));
    let t = Instant::now();
    let hs: Vec<_> = (0..tasks)
        .map(|i| {
            let m = m.clone();
            let k = share(n, tasks, i);
            R::spawn(move || async move {
                for _ in 0..k {
                    *R::lock(&m).await += 1;
                }
            })
        })
        .collect();
    wait_all::<R, ()>(hs, "a mutex").await;
    let d = t.elapsed();
    let counter = *R::lock(&m).await;
    if counter != n {
        fail(&format!("mutex: counter is {counter} after {n} increments"));
    }
    ns_per_op(d, n)
}

/// `sleepers_*`: the next sleep of a task, 1..=50 ms, from a 64-bit LCG (Knuth's
/// MMIX constants) whose state starts at the task's index. go/main.go has the
/// same sequence.
fn next_sleep_ms(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    1 + (*state >> 33) % 50
}

/// `sleepers_*`: n tasks each sleep [`SLEEPS_PER_TASK`] times [`next_sleep_ms`];
/// wall time and process CPU time (user + sys), both from just before the first
/// spawn to after the last task has been waited for.
async fn sleepers<R: Runtime>(n: u64) -> (Duration, Duration) {
    let cpu = process_cpu_time();
    let t = Instant::now();
    let hs: Vec<_> = (0..n)
        .map(|i| {
            R::spawn(move || async move {
                let mut s = i;
                for _ in 0..SLEEPS_PER_TASK {
                    R::sleep(Duration::from_millis(next_sleep_ms(&mut s))).await;
                }
            })
        })
        .collect();
    wait_all::<R, ()>(hs, "a sleeping").await;
    (t.elapsed(), process_cpu_time() - cpu)
}

/// `sleepers_wall`: wall seconds of [`sleepers`].
async fn sleepers_wall<R: Runtime>(n: u64) -> Measure {
    secs(sleepers::<R>(n).await.0)
}

/// `sleepers_cpu`: process CPU seconds of [`sleepers`] (a separate run, so that
/// each run prints one line).
async fn sleepers_cpu<R: Runtime>(n: u64) -> Measure {
    secs(sleepers::<R>(n).await.1)
}

/// `hog_latency`: shared by the driver, the ticker and the hog.
#[derive(Default)]
struct HogState {
    /// Sleeps the ticker has completed.
    ticks: AtomicU64,
    /// Set by the hog when it has finished; the ticker then stops.
    done: AtomicBool,
}

/// `hog_latency`: one sleep of the ticker: when it started, and how late it
/// woke up (elapsed - [`HOG_TICK`], in ms; negative if early).
struct Tick {
    start: Instant,
    late_ms: f64,
}

/// `hog_latency`'s ticker: sleeps [`HOG_TICK`] and records how late it woke up,
/// until the hog is done.
async fn hog_ticker<R: Runtime>(st: Arc<HogState>) -> Vec<Tick> {
    let mut ticks = Vec::new();
    while !st.done.load(Ordering::Acquire) {
        let start = Instant::now();
        R::sleep(HOG_TICK).await;
        let late_ms = (start.elapsed().as_secs_f64() - HOG_TICK.as_secs_f64()) * 1e3;
        ticks.push(Tick { start, late_ms });
        st.ticks.fetch_add(1, Ordering::Release);
    }
    ticks
}

/// `hog_latency`: the hog. Spins for `d` with no yield and no runtime call (the
/// clock, a vDSO read, is checked every 1000 iterations); returns when it
/// started and when it finished. go/main.go's hogSpin is the same loop.
#[inline(never)]
fn hog_spin(d: Duration) -> (Instant, Instant) {
    let start = Instant::now();
    let mut x = 0u64;
    loop {
        for _ in 0..1000 {
            x = black_box(x + 1);
        }
        if start.elapsed() >= d {
            break;
        }
    }
    black_box(x);
    (start, Instant::now())
}

/// `hog_latency`: the nearest-rank 99th percentile (sort, index
/// ceil(0.99 len) - 1) of the lateness of the sleeps that started while the hog
/// ran (strictly after `hog.0`, before `hog.1`); if there is none (a runtime
/// that cannot run the ticker until the hog ends), the largest lateness of all.
/// Milliseconds rounded to 2 decimals; go/main.go's hogP99 is the same.
fn hog_p99(ticks: &[Tick], hog: (Instant, Instant)) -> Measure {
    let mut during: Vec<f64> = ticks
        .iter()
        .filter(|t| t.start > hog.0 && t.start < hog.1)
        .map(|t| t.late_ms)
        .collect();
    let v = if during.is_empty() {
        ticks
            .iter()
            .map(|t| t.late_ms)
            .reduce(f64::max)
            .unwrap_or_else(|| fail("hog_latency: the ticker took no sample"))
    } else {
        during.sort_by(f64::total_cmp);
        during[(99 * during.len()).div_ceil(100) - 1]
    };
    ((v * 100.0).round() / 100.0, "ms")
}

/// `hog_latency`: a ticker task sleeping [`HOG_TICK`] in a loop, then (once it
/// has slept [`HOG_WARMUP_TICKS`] times) a hog task spinning n ms without a
/// yield: p99 lateness of the ticks taken meanwhile (see [`hog_p99`]). A runtime
/// that cannot take the CPU from the hog runs the ticker again only when the
/// hog has finished.
async fn hog_latency<R: Runtime>(n: u64) -> Measure {
    let st = Arc::new(HogState::default());
    let ticker = {
        let st = st.clone();
        R::spawn(move || hog_ticker::<R>(st))
    };
    let t = Instant::now();
    while st.ticks.load(Ordering::Acquire) < HOG_WARMUP_TICKS {
        if t.elapsed() > HOG_WARMUP_DEADLINE {
            fail(&format!(
                "hog_latency: the ticker did {} sleeps in {HOG_WARMUP_DEADLINE:?}",
                st.ticks.load(Ordering::Acquire)
            ));
        }
        R::sleep(Duration::from_millis(1)).await;
    }
    let hog = {
        let st = st.clone();
        R::spawn(move || async move {
            let span = hog_spin(Duration::from_millis(n));
            st.done.store(true, Ordering::Release);
            span
        })
    };
    let span = wait::<R, _>(hog, "the hog").await;
    let ticks = wait::<R, _>(ticker, "the ticker").await;
    hog_p99(&ticks, span)
}

/// `echo_server`: listens on 127.0.0.1:port, prints `LISTENING <port>` (flushed;
/// scripts/compare.sh waits for that line), then accepts forever, one task per
/// connection ([`echo_conn`]). Never returns (the script kills it).
async fn echo_server<R: Runtime>(port: u16) -> Measure {
    let l = R::listen(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .unwrap_or_else(|e| fail(&format!("echo_server: bind 127.0.0.1:{port}: {e}")));
    let port = R::local_port(&l).unwrap_or_else(|e| fail(&format!("echo_server: local_addr: {e}")));
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "LISTENING {port}");
        let _ = out.flush();
    }
    loop {
        match R::accept(&l).await {
            Ok(s) => drop(R::spawn(move || echo_conn::<R>(s))),
            Err(e) => echo_error("accept", &e),
        }
    }
}

/// `echo_server`'s connection: TCP_NODELAY, then reads up to [`ECHO_BUF`] bytes
/// and writes back exactly what was read, until EOF.
async fn echo_conn<R: Runtime>(mut s: R::Stream) {
    if let Err(e) = R::set_nodelay(&s) {
        echo_error("set_nodelay", &e);
    }
    let mut buf = vec![0u8; ECHO_BUF];
    loop {
        match R::read(&mut s, &mut buf).await {
            Ok(0) => return,
            Ok(n) => {
                if let Err(e) = R::write_all(&mut s, &buf[..n]).await {
                    return echo_error("write", &e);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return echo_error("read", &e),
        }
    }
}

/// Servers' connection or accept errors (`echo_server`, `http_tokio`) are not
/// expected in the benchmark (the clients close each connection cleanly), so
/// each is reported on stderr as `ECHO-ERROR <what>: <error>` (the first 20
/// only; scripts/compare.sh puts them in the report's notes). The server keeps
/// serving.
pub fn echo_error(what: &str, e: &dyn std::fmt::Display) {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let k = COUNT.fetch_add(1, Ordering::Relaxed);
    if k < 20 {
        eprintln!("ECHO-ERROR {what}: {e}");
    } else if k == 20 {
        eprintln!("ECHO-ERROR (more errors not shown)");
    }
}

//! Shared helpers for the goro / Tokio / may benchmark binaries (the Go twin is
//! `go/main.go`). Nothing here depends on a runtime.
//!
//! CLI of every binary: `<impl> <workload> [--n N]`. Each run prints exactly one
//! line on stdout:
//!
//! ```text
//! BENCH workload=<name> impl=<goro|go|tokio|may> procs=<P> value=<number> unit=<unit>
//! ```
//!
//! Adding a workload: add its default size to [`default_n`] (and to
//! `defaultN` in go/main.go), one match arm in each of src/bin/{goro,tokio,may}.rs
//! and go/main.go, and one line in the PLAN of scripts/compare.sh.
//!
//! The one exception is the server workload `echo_server` (`<impl> echo_server
//! [--port P]`): it prints `LISTENING <port>` instead of a BENCH line and serves
//! until killed; the shared load generator `src/bin/echo_client.rs` measures it
//! and prints the BENCH lines (workloads `tcp_echo_*`).
//!
//! The HTTP servers of the `http_echo` benchmark are binaries of their own
//! (`http_tokio`, `http_may`), with their shared parts in [`http`].

use std::hint::black_box;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::{Duration, Instant};

pub mod http;

/// What a workload returns: the value and its unit. Lower is better, except for
/// rates (a unit ending in `/s`, e.g. `buffered`'s `msgs/s`), where higher is.
pub type Measure = (f64, &'static str);

/// Iterations of [`work`] per task in `imbalanced` (~1-2 ms on a 2-3 GHz core).
pub const WORK_ITERS: u64 = 3_000_000;

/// How long each `parked_rss` task sleeps; the process exits long before.
pub const PARK_FOR: Duration = Duration::from_secs(10);

/// How long `parked_rss` waits for all its tasks to have started.
pub const START_DEADLINE: Duration = Duration::from_secs(60);

/// `buffered`: channel capacity, producers and consumers.
pub const BUFFERED_CAP: usize = 128;
pub const BUFFERED_PRODUCERS: u64 = 4;
pub const BUFFERED_CONSUMERS: u64 = 4;

/// `skynet`: children per node (the canonical 10); N (leaves) must be a power of it.
pub const SKYNET_FANOUT: u64 = 10;

/// `mutex_contended`: tasks sharing the one lock.
pub const MUTEX_TASKS: u64 = 4;

/// `sleepers_*`: sleeps per task, each of [`next_sleep_ms`] milliseconds.
pub const SLEEPS_PER_TASK: u32 = 10;

/// Default size of each workload (`--n` overrides it).
pub fn default_n(workload: &str) -> Option<u64> {
    Some(match workload {
        "spawn_join" => 1_000_000,                   // tasks
        "yield" => 1_000_000,                        // yields per task (2 tasks)
        "imbalanced" => 1_000,                       // CPU-bound tasks
        "parked_rss" => 100_000,                     // sleeping tasks
        "work_unit" => 50,                           // repetitions of one imbalanced task's work
        "pingpong" => 1_000_000,                     // round trips over two unbuffered channels
        "buffered" => 4_000_000,                     // messages in total (N/4 per producer)
        "skynet" => 1_000_000,                       // leaves (a power of 10)
        "mutex_uncontended" => 10_000_000,           // lock + unlock by one task
        "mutex_contended" => 4_000_000,              // lock + unlock in total (N/4 per task)
        "sleepers_wall" | "sleepers_cpu" => 100_000, // tasks sleeping 10 times
        "hog_latency" => 2_000,                      // ms the CPU hog runs
        "echo_server" => 0,                          // unused: serves until killed
        _ => return None,
    })
}

pub struct Args {
    pub workload: String,
    pub n: u64,
    /// `--port` (only `echo_server` uses it): 0 = any free port.
    pub port: u16,
}

/// Parses `<workload> [--n N] [--port P]`; exits 2 with a usage line on bad input.
pub fn parse_args(impl_name: &str) -> Args {
    let usage = |msg: &str| -> ! {
        eprintln!("{impl_name}: {msg}");
        eprintln!("usage: {impl_name} <workload> [--n N] [--port P]   (env GOMAXPROCS sets the parallelism)");
        std::process::exit(2)
    };
    let mut it = std::env::args().skip(1);
    let workload = it.next().unwrap_or_else(|| usage("missing workload"));
    let mut n = None;
    let mut port = 0u16;
    while let Some(a) = it.next() {
        match a.as_str() {
            "--n" => {
                let v = it.next().unwrap_or_else(|| usage("--n needs a value"));
                n = Some(
                    v.parse::<u64>()
                        .ok()
                        .filter(|&v| v > 0)
                        .unwrap_or_else(|| usage("--n must be a positive integer")),
                );
            }
            "--port" => {
                let v = it.next().unwrap_or_else(|| usage("--port needs a value"));
                port = v.parse().unwrap_or_else(|_| usage("--port must be 0..=65535"));
            }
            _ => usage(&format!("unknown argument {a:?}")),
        }
    }
    let n = match n.or_else(|| default_n(&workload)) {
        Some(n) => n,
        None => unknown_workload(impl_name, &workload),
    };
    Args { workload, n, port }
}

/// Exits 2: the workload name is not known to this binary.
pub fn unknown_workload(impl_name: &str, workload: &str) -> ! {
    eprintln!("{impl_name}: unknown workload {workload:?}");
    std::process::exit(2)
}

/// Exits 3: this implementation cannot run the workload; `reason` ends up in the report.
pub fn unsupported(impl_name: &str, workload: &str, reason: &str) -> ! {
    eprintln!("UNSUPPORTED {impl_name} {workload}: {reason}");
    std::process::exit(3)
}

/// Exits 1 with a message that the report shows as the reason.
pub fn fail(msg: &str) -> ! {
    eprintln!("FAILED: {msg}");
    std::process::exit(1)
}

/// Parallelism from env GOMAXPROCS, else the number of CPUs (as Go).
pub fn procs_from_env() -> usize {
    std::env::var("GOMAXPROCS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&p| p > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Whether a Tokio binary runs a `current_thread` runtime (else `multi_thread`
/// with `procs` workers): env `TOKIO_FLAVOR=current|multi`, else current_thread
/// exactly at one P (one thread runs everything, as Go with GOMAXPROCS=1).
pub fn tokio_current_thread(procs: usize) -> bool {
    match std::env::var("TOKIO_FLAVOR").as_deref() {
        Ok("current") => true,
        Ok("multi") => false,
        _ => procs == 1,
    }
}

/// Prints the one result line, flushes, and exits the process at once (tasks
/// still parked, e.g. in `parked_rss`, are not waited for).
pub fn emit_and_exit(workload: &str, impl_name: &str, procs: usize, m: Measure) -> ! {
    let (value, unit) = m;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "BENCH workload={workload} impl={impl_name} procs={procs} value={} unit={unit}",
        fmt_value(value, unit)
    );
    let _ = out.flush();
    std::process::exit(0)
}

/// Same formatting as go/main.go's fmtValue.
pub fn fmt_value(v: f64, unit: &str) -> String {
    match unit {
        "s" => format!("{v:.4}"),
        "ms" => format!("{v:.3}"),
        "msgs/s" => format!("{v:.0}"),
        _ => format!("{v:.2}"),
    }
}

/// ns per operation.
pub fn ns_per_op(d: Duration, ops: u64) -> Measure {
    (d.as_nanos() as f64 / ops as f64, "ns/op")
}

/// The CPU-bound body of one `imbalanced` task: sum 0..iters, with black_box so
/// that LLVM neither vectorises nor closes the loop into n*(n-1)/2 (Go's
/// compiler does neither either: go/main.go has the plain loop).
#[inline(never)]
pub fn work(iters: u64) -> u64 {
    let mut s = 0u64;
    for i in 0..iters {
        s = s.wrapping_add(black_box(i));
    }
    s
}

/// VmRSS of this process in KiB, from /proc/self/status.
pub fn vm_rss_kib() -> u64 {
    let s =
        std::fs::read_to_string("/proc/self/status").unwrap_or_else(|e| fail(&format!("read /proc/self/status: {e}")));
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| fail("no VmRSS in /proc/self/status"))
}

/// KiB per task between two VmRSS readings.
pub fn kib_per_task(before: u64, after: u64, n: u64) -> Measure {
    ((after as f64 - before as f64) / n as f64, "KiB")
}

/// A panic payload as text, for the report.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

/// Items of part `i` when `n` items are split into `parts` parts: n / parts, and
/// one more for the first n % parts parts (so the parts add up to n exactly).
pub fn share(n: u64, parts: u64, i: u64) -> u64 {
    n / parts + u64::from(i < n % parts)
}

/// Messages per second.
pub fn msgs_per_sec(d: Duration, msgs: u64) -> Measure {
    (msgs as f64 / d.as_secs_f64(), "msgs/s")
}

/// `buffered`: the sum of everything the producers send (producer p sends
/// 0..share(n, PRODUCERS, p)), which the consumers must receive in total.
pub fn buffered_expected_sum(n: u64) -> u64 {
    (0..BUFFERED_PRODUCERS)
        .map(|p| {
            let k = share(n, BUFFERED_PRODUCERS, p);
            k * k.saturating_sub(1) / 2
        })
        .sum()
}

/// Checks the consumers' totals of `buffered`; exits 1 on a mismatch.
pub fn buffered_check(n: u64, count: u64, sum: u64) {
    if count != n || sum != buffered_expected_sum(n) {
        fail(&format!(
            "buffered: consumers got {count} messages summing to {sum}, expected {n} summing to {}",
            buffered_expected_sum(n)
        ));
    }
}

/// `skynet`: exits 1 unless `n` (the number of leaves) is a power of [`SKYNET_FANOUT`].
pub fn skynet_check_n(n: u64) {
    let mut k = n;
    while k > 1 && k.is_multiple_of(SKYNET_FANOUT) {
        k /= SKYNET_FANOUT;
    }
    if k != 1 {
        fail(&format!("skynet: N={n} leaves is not a power of {SKYNET_FANOUT}"));
    }
}

/// `skynet`: exits 1 unless the root's sum is 0 + 1 + ... + (n - 1)
/// (499999500000 for the canonical 1,000,000 leaves).
pub fn skynet_check_sum(n: u64, sum: u64) {
    let want = n * (n - 1) / 2;
    if sum != want {
        fail(&format!("skynet: root sum {sum}, expected {want}"));
    }
}

/// Exits 1 unless the `mutex_*` counter ended at `n`.
pub fn mutex_check(n: u64, counter: u64) {
    if counter != n {
        fail(&format!("mutex: counter is {counter} after {n} increments"));
    }
}

/// `sleepers_*`: the next sleep of a task, 1..=50 ms, from a 64-bit LCG (Knuth's
/// MMIX constants) whose state starts at the task's index. go/main.go has the
/// same sequence.
pub fn next_sleep_ms(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    1 + (*state >> 33) % 50
}

/// User + system CPU time of the whole process so far (getrusage(RUSAGE_SELF)).
pub fn process_cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        fail(&format!("getrusage: {}", std::io::Error::last_os_error()));
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// What `sleepers` measured: wall time and process CPU time (user + sys), both
/// from just before the first spawn to after the last task has been waited for.
pub struct SleepersTimes {
    pub wall: Duration,
    pub cpu: Duration,
}

impl SleepersTimes {
    pub fn wall(&self) -> Measure {
        (self.wall.as_secs_f64(), "s")
    }
    pub fn cpu(&self) -> Measure {
        (self.cpu.as_secs_f64(), "s")
    }
}

/// `hog_latency`: the ticker's sleep.
pub const HOG_TICK: Duration = Duration::from_millis(5);

/// `hog_latency`: sleeps the ticker completes before the hog is spawned.
pub const HOG_WARMUP_TICKS: u64 = 3;

/// `hog_latency`: how long the driver waits for those [`HOG_WARMUP_TICKS`] sleeps.
pub const HOG_WARMUP_DEADLINE: Duration = Duration::from_secs(10);

/// `hog_latency`: shared by the driver, the ticker and the hog.
#[derive(Default)]
pub struct HogState {
    /// Sleeps the ticker has completed.
    pub ticks: AtomicU64,
    /// Set by the hog when it has finished; the ticker then stops.
    pub done: AtomicBool,
}

/// `hog_latency`: one sleep of the ticker: when it started, and how late it
/// woke up (elapsed - [`HOG_TICK`], in ms; negative if early).
pub struct Tick {
    pub start: Instant,
    pub late_ms: f64,
}

impl Tick {
    /// The sample of a sleep that started at `start` and has just returned.
    pub fn ended_now(start: Instant) -> Tick {
        let late_ms = (start.elapsed().as_secs_f64() - HOG_TICK.as_secs_f64()) * 1e3;
        Tick { start, late_ms }
    }
}

/// `hog_latency`: the hog. Spins for `d` with no yield and no runtime call (the
/// clock, a vDSO read, is checked every 1000 iterations); returns when it
/// started and when it finished. go/main.go's hogSpin is the same loop.
#[inline(never)]
pub fn hog_spin(d: Duration) -> (Instant, Instant) {
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
pub fn hog_p99(ticks: &[Tick], hog: (Instant, Instant)) -> Measure {
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

/// `echo_server`: bytes read (and written back) at most per read call.
pub const ECHO_BUF: usize = 4096;

/// `echo_server`: tells scripts/compare.sh (which waits for this line) that the
/// listener is bound and accepting: `LISTENING <port>` on stdout, flushed.
pub fn announce_listening(port: u16) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "LISTENING {port}");
    let _ = out.flush();
}

/// `echo_server`: connection or accept errors are not expected in the benchmark
/// (the client closes each connection cleanly), so each is reported on stderr as
/// `ECHO-ERROR <what>: <error>` (the first 20 only; scripts/compare.sh puts them
/// in the report's notes). The server keeps serving.
pub fn echo_error(what: &str, e: &dyn std::fmt::Display) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let k = COUNT.fetch_add(1, Ordering::Relaxed);
    if k < 20 {
        eprintln!("ECHO-ERROR {what}: {e}");
    } else if k == 20 {
        eprintln!("ECHO-ERROR (more errors not shown)");
    }
}

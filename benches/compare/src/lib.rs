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

use std::hint::black_box;
use std::io::Write;
use std::time::Duration;

/// What a workload returns: the value and its unit (lower is better for all).
pub type Measure = (f64, &'static str);

/// Iterations of [`work`] per task in `imbalanced` (~1-2 ms on a 2-3 GHz core).
pub const WORK_ITERS: u64 = 3_000_000;

/// How long each `parked_rss` task sleeps; the process exits long before.
pub const PARK_FOR: Duration = Duration::from_secs(10);

/// How long `parked_rss` waits for all its tasks to have started.
pub const START_DEADLINE: Duration = Duration::from_secs(60);

/// Default size of each workload (`--n` overrides it).
pub fn default_n(workload: &str) -> Option<u64> {
    Some(match workload {
        "spawn_join" => 1_000_000, // tasks
        "yield" => 1_000_000,      // yields per task (2 tasks)
        "imbalanced" => 1_000,     // CPU-bound tasks
        "parked_rss" => 100_000,   // sleeping tasks
        "work_unit" => 50,         // repetitions of one imbalanced task's work
        _ => return None,
    })
}

pub struct Args {
    pub workload: String,
    pub n: u64,
}

/// Parses `<workload> [--n N]`; exits 2 with a usage line on bad input.
pub fn parse_args(impl_name: &str) -> Args {
    let usage = |msg: &str| -> ! {
        eprintln!("{impl_name}: {msg}");
        eprintln!("usage: {impl_name} <workload> [--n N]   (env GOMAXPROCS sets the parallelism)");
        std::process::exit(2)
    };
    let mut it = std::env::args().skip(1);
    let workload = it.next().unwrap_or_else(|| usage("missing workload"));
    let mut n = None;
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
            _ => usage(&format!("unknown argument {a:?}")),
        }
    }
    let n = match n.or_else(|| default_n(&workload)) {
        Some(n) => n,
        None => unknown_workload(impl_name, &workload),
    };
    Args { workload, n }
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
    let s = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_else(|e| fail(&format!("read /proc/self/status: {e}")));
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

//! Runtime configuration: [`Config`] (API), the environment (`GOMAXPROCS`,
//! `GODEBUG`), and the resolved values the scheduler starts with.

use std::fmt;

/// Highest GOMAXPROCS accepted (Go's limit until Go 1.10 removed it).
pub(crate) const MAX_PROCS: usize = 1024;
/// Default stack per G.
pub(crate) const DEFAULT_STACK_SIZE: usize = 256 << 10;

/// The runtime's settings, applied by [`Config::init`] before its first use.
///
/// The runtime starts lazily, with default settings, the first time goro needs it
/// (the first `go!` or `spawn`, timer, socket, or runtime call); `init` must
/// therefore come first, typically at the top of `main`.
/// Settings not given keep their defaults: GOMAXPROCS from the `GOMAXPROCS`
/// environment variable or the number of CPUs, 256 KiB stacks, no thread pinning.
///
/// ```
/// use goro::runtime::Config;
///
/// Config::new()
///     .procs(2)
///     .stack_size(128 << 10)
///     .init()
///     .expect("init comes before any other use of goro");
/// assert_eq!(goro::runtime::gomaxprocs(), 2);
///
/// // Too late now: the runtime runs, and its settings stay.
/// assert!(Config::new().procs(4).init().is_err());
/// assert_eq!(goro::runtime::gomaxprocs(), 2);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Config {
    procs: Option<usize>,
    stack_size: Option<usize>,
    pin_threads: bool,
    swap_idle_after: Option<Option<std::time::Duration>>,
}

/// How long a goroutine parks before its stack is swapped out, by default.
pub(crate) const DEFAULT_SWAP_IDLE_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// The error of [`Config::init`] when the runtime was already running.
///
/// The runtime starts lazily, with default settings that then stay, the first
/// time goro needs it: the first `go!` or `spawn`, timer, socket, or call such as
/// [`gomaxprocs`](crate::runtime::gomaxprocs). (GOMAXPROCS can still be changed with
/// [`set_gomaxprocs`](crate::runtime::set_gomaxprocs).)
///
/// ```
/// use goro::runtime::{AlreadyStarted, Config};
///
/// goro::go!(|| ()).join().unwrap(); // starts the runtime
/// assert_eq!(Config::new().init(), Err(AlreadyStarted));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlreadyStarted;

impl fmt::Display for AlreadyStarted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the goro runtime is already running; Config::init must come before its first use")
    }
}

impl std::error::Error for AlreadyStarted {}

impl Config {
    /// The default settings: GOMAXPROCS from the environment or the number of
    /// CPUs, 256 KiB stacks, no pinning. `Config::new().init()` starts the runtime
    /// as its first use would.
    ///
    /// ```
    /// goro::runtime::Config::new().init().unwrap();
    /// assert!(goro::runtime::gomaxprocs() >= 1);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// GOMAXPROCS: how many Ps, i.e. how many goroutines run in parallel. Takes
    /// precedence over the `GOMAXPROCS` environment variable. 0 means "the
    /// default"; values above 1024 are capped at 1024.
    ///
    /// ```
    /// goro::runtime::Config::new().procs(1).init().unwrap();
    /// assert_eq!(goro::runtime::gomaxprocs(), 1);
    /// ```
    pub fn procs(mut self, n: usize) -> Self {
        self.procs = (n > 0).then_some(n);
        self
    }

    /// The stack size of goroutines that do not ask for one with
    /// [`Builder::stack_size`](crate::Builder::stack_size), in bytes: rounded up
    /// to whole pages and clamped to 16 KiB ..= 1 GiB. Only the pages a goroutine
    /// touches use memory. Stacks do not grow (unlike Go's), so the size bounds
    /// the deepest recursion; an overflow aborts the process with a message.
    ///
    /// ```
    /// goro::runtime::Config::new().stack_size(64 << 10).init().unwrap();
    /// assert_eq!(goro::go!(|| 1 + 1).join().unwrap(), 2);
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Pins the M that holds P *i* to CPU core *i* (modulo the number of cores),
    /// for cache locality on a machine the program has to itself. Off by default.
    ///
    /// ```
    /// goro::runtime::Config::new().pin_threads(true).init().unwrap();
    /// assert_eq!(goro::go!(|| "pinned").join().unwrap(), "pinned");
    /// ```
    pub fn pin_threads(mut self, pin: bool) -> Self {
        self.pin_threads = pin;
        self
    }

    /// Swaps out the stack of a goroutine parked longer than `after` (default
    /// 1 s; `None` turns it off): the live part of its stack (usually under
    /// 1 KiB) is copied to the heap and its pages go back to the kernel, to be
    /// copied back to the same addresses before it next runs (a few µs, paid
    /// only by goroutines that slept that long). Applies to goroutines parked
    /// in `time::sleep`, `join`, a channel's `send`/`recv`, `goro::sync`
    /// waits, `select!` and socket reads and writes, whose wait records move to
    /// the heap with it (not `block_on`). Rounded to whole milliseconds.
    ///
    /// A thread that borrows a goroutine's locals (a `crossbeam::scope`
    /// thread) must be done with them before the goroutine waits that long:
    /// its accesses to a swapped-out stack would be lost, and the process
    /// stops with a fatal error when the goroutine comes back in (SAFETY.md).
    ///
    /// ```
    /// use std::time::Duration;
    /// goro::runtime::Config::new().swap_idle_after(Some(Duration::from_millis(200))).init().unwrap();
    /// assert_eq!(goro::go!(|| goro::time::sleep(Duration::from_millis(1))).join().unwrap(), ());
    /// ```
    pub fn swap_idle_after(mut self, after: Option<std::time::Duration>) -> Self {
        self.swap_idle_after = Some(after);
        self
    }

    pub(crate) fn resolve(&self) -> Resolved {
        let procs = self.procs.unwrap_or_else(procs_from_env).min(MAX_PROCS);
        let stack_size = crate::runtime::task::stack::round_size(self.stack_size.unwrap_or(DEFAULT_STACK_SIZE));
        let swap_after = self.swap_idle_after.unwrap_or(Some(DEFAULT_SWAP_IDLE_AFTER));
        Resolved {
            procs,
            stack_size,
            pin_threads: self.pin_threads,
            // At least 1 ms when on: 0 means off.
            swap_after_ms: swap_after.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)),
        }
    }
}

/// The parsed `GODEBUG` settings goro understands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Godebug {
    /// Print period in ms; 0 = off.
    pub(crate) schedtrace_ms: u64,
    pub(crate) scheddetail: bool,
    /// `deadlock=0` turns the deadlock report off.
    pub(crate) no_deadlock_report: bool,
    /// `heaptrim=0` turns the heap trim off (`heap_trim.rs`).
    pub(crate) no_heap_trim: bool,
    /// `dumpsig=N`: the real-time signal a dump sends to the threads of
    /// running goroutines for their frames (`monitor/running.rs`); `None`:
    /// the default; `Some(0)`: none (running goroutines dump without frames).
    pub(crate) dumpsig: Option<i32>,
    /// `blockwarn=1`: a line on stderr when a goroutine blocks its thread
    /// outside `goro::blocking` (`monitor/sysmon.rs`).
    pub(crate) blockwarn: bool,
}

impl Godebug {
    pub(crate) fn from_env() -> Godebug {
        match std::env::var("GODEBUG") {
            Ok(v) => Godebug::parse(&v, |warning| eprintln!("goro: GODEBUG: {warning}")),
            Err(_) => Godebug::default(),
        }
    }

    /// Parses `key=value,...`; unknown keys are left to other readers (Go ignores
    /// them too), bad values of our keys are reported through `warn`.
    pub(crate) fn parse(v: &str, mut warn: impl FnMut(String)) -> Godebug {
        let mut g = Godebug::default();
        for kv in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, val) = kv.split_once('=').unwrap_or((kv, ""));
            match k {
                "schedtrace" => match val.parse::<u64>() {
                    Ok(ms) => g.schedtrace_ms = ms,
                    Err(_) => warn(format!(
                        "schedtrace={val:?} is not a whole number of milliseconds; ignored"
                    )),
                },
                "scheddetail" => match val {
                    "0" => g.scheddetail = false,
                    "1" => g.scheddetail = true,
                    _ => warn(format!("scheddetail={val:?} must be 0 or 1; ignored")),
                },
                "deadlock" => match val {
                    "0" => g.no_deadlock_report = true,
                    "1" => g.no_deadlock_report = false,
                    _ => warn(format!("deadlock={val:?} must be 0 or 1; ignored")),
                },
                "heaptrim" => match val {
                    "0" => g.no_heap_trim = true,
                    "1" => g.no_heap_trim = false,
                    _ => warn(format!("heaptrim={val:?} must be 0 or 1; ignored")),
                },
                "dumpsig" => match val.parse::<i32>() {
                    Ok(0) => g.dumpsig = Some(0),
                    Ok(n) if (libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&n) => g.dumpsig = Some(n),
                    _ => warn(format!(
                        "dumpsig={val:?} must be 0 (none) or a real-time signal, {} to {}; ignored",
                        libc::SIGRTMIN(),
                        libc::SIGRTMAX()
                    )),
                },
                "blockwarn" => match val {
                    "0" => g.blockwarn = false,
                    "1" => g.blockwarn = true,
                    _ => warn(format!("blockwarn={val:?} must be 0 or 1; ignored")),
                },
                _ => {}
            }
        }
        g
    }
}

/// The configuration the runtime runs with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Resolved {
    pub(crate) procs: usize,
    pub(crate) stack_size: usize,
    pub(crate) pin_threads: bool,
    /// [`Config::swap_idle_after`] in ms; 0: off.
    pub(crate) swap_after_ms: u64,
}

fn ncpu() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `GOMAXPROCS` from the environment, else the CPU count. Like Go, an invalid value
/// is ignored; unlike Go, we say so.
fn procs_from_env() -> usize {
    match std::env::var("GOMAXPROCS") {
        Err(_) => ncpu(),
        Ok(v) => match parse_procs(&v) {
            Ok(n) => n,
            Err(why) => {
                eprintln!("goro: ignoring GOMAXPROCS={v:?}: {why}; using {}", ncpu());
                ncpu()
            }
        },
    }
}

pub(crate) fn parse_procs(v: &str) -> Result<usize, String> {
    match v.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) if n > MAX_PROCS => Err(format!("must be at most {MAX_PROCS}")),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a positive integer ({e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gomaxprocs_env_values_are_checked() {
        assert_eq!(parse_procs("4"), Ok(4));
        assert_eq!(parse_procs(" 2 "), Ok(2));
        assert!(parse_procs("0").is_err());
        assert!(parse_procs("-1").is_err());
        assert!(parse_procs("four").is_err());
        assert!(parse_procs("100000").is_err());
    }

    #[test]
    fn stack_size_is_rounded_and_clamped() {
        let r = Config::new().stack_size(1).resolve();
        assert_eq!(r.stack_size, crate::runtime::task::stack::MIN_STACK_SIZE);
        let r = Config::new().stack_size(100_000).resolve();
        assert_eq!(r.stack_size % crate::runtime::task::stack::page_size(), 0);
        assert!(r.stack_size >= 100_000);
    }

    #[test]
    fn godebug_parsing() {
        let mut warnings = Vec::new();
        let rt = libc::SIGRTMIN() + 1;
        let g = Godebug::parse(
            &format!("gctrace=1,schedtrace=250,scheddetail=1,deadlock=0,heaptrim=0,dumpsig={rt},blockwarn=1"),
            |w| warnings.push(w),
        );
        assert_eq!(
            g,
            Godebug {
                schedtrace_ms: 250,
                scheddetail: true,
                no_deadlock_report: true,
                no_heap_trim: true,
                dumpsig: Some(rt),
                blockwarn: true,
            }
        );
        assert!(warnings.is_empty());
        let g = Godebug::parse(
            "schedtrace=abc,scheddetail=yes,deadlock=no,heaptrim=off,dumpsig=2,blockwarn=yes",
            |w| warnings.push(w),
        );
        assert_eq!(g, Godebug::default());
        assert_eq!(warnings.len(), 6, "{warnings:?}");
        assert_eq!(Godebug::parse("dumpsig=0", |_| ()).dumpsig, Some(0));
    }
}

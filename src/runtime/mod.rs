//! The runtime: configuration and introspection of Go's G/M/P scheduler, the
//! counterpart of Go's `runtime` package.
//!
//! Goroutines (Gs) run on OS threads (Ms); an M needs one of GOMAXPROCS
//! processors (Ps) to run goroutine code. Each P has a local run queue; idle Ms
//! steal work from other Ps; a monitor thread (sysmon) takes the P from a
//! goroutine stuck in a [`blocking`](fn@crate::blocking) call or hogging it.
//!
//! There is one runtime per process. It starts on first use (the first
//! [`go!`](crate::go!), [`spawn`](fn@crate::spawn) or runtime call) from the
//! environment: `GOMAXPROCS` Ps, else one per CPU. To choose the settings in code,
//! call [`Config::init`] before anything else uses the runtime.
//!
//! | Go | goro |
//! |---|---|
//! | `runtime.GOMAXPROCS(n)` | [`gomaxprocs`], [`set_gomaxprocs`], [`Config::procs`] |
//! | `runtime.NumGoroutine()` | [`num_goroutine`] |
//! | `runtime.Gosched()` | [`yield_now`](crate::yield_now) |
//! | `runtime.LockOSThread()` | [`lock_os_thread`], [`unlock_os_thread`] |
//! | `GODEBUG=schedtrace=1000` | the same variable; [`stats`](fn@stats) for the counters |
//!
//! ```
//! use goro::runtime::{self, Config};
//!
//! // First thing in main: settle the runtime's shape.
//! Config::new().procs(2).init().expect("nothing used the runtime yet");
//! assert_eq!(runtime::gomaxprocs(), 2);
//!
//! let hs: Vec<_> = (0..10).map(|i| goro::go!(move || i)).collect();
//! assert_eq!(hs.into_iter().map(|h| h.join().unwrap()).sum::<i32>(), 45);
//! let s = runtime::stats();
//! assert!(s.spawned >= 10 && s.completed >= 10);
//! ```
//!
//! # Reading the source
//!
//! A reader following a G from `go!` to its exit goes through, in order:
//! `spawn` (the public entry) → `sched` (global state, start-up) →
//! `g` (the G and its coroutine) → `p` / `runq` (where runnable Gs wait) →
//! `wake` (waking an M for new work) → `m` (the OS thread) → `schedule` (the loop
//! that finds and runs Gs) → `park` (how a G waits and is readied) → `stack`
//! (where its stack came from and goes back to).

mod boot;
#[cfg(all(test, loom))]
mod loom_models;
pub(crate) mod monitor;
pub(crate) mod netpoll;
pub(crate) mod queue;
pub(crate) mod sched;
pub(crate) mod sys;
pub(crate) mod task;
pub(crate) mod wait;

pub use monitor::dump::{goroutines, write_goroutines, GoState, GoroutineInfo};
pub use monitor::stats::{ProcStats, Stats};
pub use sched::config::{AlreadyStarted, Config};
pub use sched::lockosthread::{lock_os_thread, unlock_os_thread};
pub use sched::procresize::set_gomaxprocs;
pub use task::g::WaitReason;

/// GOMAXPROCS: the number of Ps, i.e. how many goroutines can run in parallel
/// (Go's `runtime.GOMAXPROCS(0)`). Starts the runtime if it is not running.
///
/// It is [`Config::procs`] if that was set, else the `GOMAXPROCS` environment
/// variable, else the number of CPUs; [`set_gomaxprocs`] changes it.
///
/// ```
/// let n = goro::runtime::gomaxprocs();
/// assert!(n >= 1);
/// assert_eq!(goro::runtime::stats().procs.len(), n);
/// ```
pub fn gomaxprocs() -> usize {
    sched::state::sched().gomaxprocs()
}

/// The number of live goroutines (Go's `runtime.NumGoroutine`).
///
/// A goroutine counts from its spawn until it finishes, whether running, runnable
/// or parked. Unlike Go's count, this one does not include `main`, which is a
/// plain thread here.
///
/// ```
/// let (tx, rx) = goro::chan::bounded::<()>(0);
/// let parked: Vec<_> = (0..3)
///     .map(|_| {
///         let rx = rx.clone();
///         goro::go!(move || rx.recv())
///     })
///     .collect();
/// assert!(goro::runtime::num_goroutine() >= 3);
/// drop(tx); // closes the channel: they all finish
/// parked.into_iter().for_each(|h| assert!(h.join().unwrap().is_err()));
/// assert_eq!(goro::runtime::num_goroutine(), 0);
/// ```
pub fn num_goroutine() -> usize {
    monitor::stats::collect(sched::state::sched()).live as usize
}

/// A snapshot of the scheduler's counters: goroutines spawned and finished, steals,
/// run-queue lengths per P, timers fired, and more; see [`Stats`]. Starts the
/// runtime if it is not running.
///
/// The snapshot is taken without stopping anything, so counters of different Ps
/// may be a moment apart. `GODEBUG=schedtrace=1000` prints the same figures
/// periodically.
///
/// ```
/// goro::go!(|| ()).join().unwrap();
/// let s = goro::runtime::stats();
/// assert!(s.spawned >= 1 && s.completed >= 1);
/// assert_eq!(s.procs.len(), goro::runtime::gomaxprocs());
/// ```
pub fn stats() -> Stats {
    monitor::stats::collect(sched::state::sched())
}

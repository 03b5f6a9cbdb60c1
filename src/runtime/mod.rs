//! The runtime: Go's G/M/P scheduler.
//!
//! A reader following a G from `go!` to its exit goes through, in order:
//! [`crate::spawn`] (the public entry) → `sched` (global state, start-up) →
//! `g` (the G and its coroutine) → `p` / `runq` (where runnable Gs wait) →
//! `wake` (waking an M for new work) → `m` (the OS thread) → `schedule` (the loop
//! that finds and runs Gs) → `park` (how a G waits and is readied) → `stack`
//! (where its stack came from and goes back to).
//!
//! The public items are the configuration, the introspection calls below, and
//! [`Stats`].

mod config;
pub(crate) mod futex;
pub(crate) mod g;
pub(crate) mod gfree;
mod globrunq;
pub(crate) mod idle;
pub(crate) mod lock;
mod lockosthread;
#[cfg(all(test, loom))]
mod loom_models;
pub(crate) mod m;
pub(crate) mod note;
pub(crate) mod ownership;
pub(crate) mod p;
mod panics;
pub(crate) mod park;
pub(crate) mod preempt;
mod procresize;
mod quadheap;
pub(crate) mod runq;
pub(crate) mod sched;
mod schedule;
mod signal;
pub(crate) mod stack;
mod stats;
pub(crate) mod sync_prims;
mod sysmon;
pub(crate) mod task;
pub(crate) mod timers;
mod trace;
pub(crate) mod waitq;
pub(crate) mod wake;

pub use config::{AlreadyStarted, Config};
pub use lockosthread::{lock_os_thread, unlock_os_thread};
pub use procresize::set_gomaxprocs;
pub use stats::{ProcStats, Stats};

/// GOMAXPROCS: the number of Ps, i.e. of Gs that can run in parallel.
///
/// ```
/// assert!(goro::runtime::gomaxprocs() >= 1);
/// ```
pub fn gomaxprocs() -> usize {
    sched::sched().gomaxprocs()
}

/// The number of live goroutines: spawned and not yet finished.
///
/// ```
/// let h = goro::go!(|| goro::runtime::num_goroutine());
/// assert!(h.join().unwrap() >= 1);
/// ```
pub fn num_goroutine() -> usize {
    stats::collect(sched::sched()).live as usize
}

/// A snapshot of the scheduler's counters.
///
/// ```
/// goro::go!(|| ()).join().unwrap();
/// let s = goro::runtime::stats();
/// assert!(s.spawned >= 1 && s.completed >= 1);
/// assert_eq!(s.procs.len(), goro::runtime::gomaxprocs());
/// ```
pub fn stats() -> Stats {
    stats::collect(sched::sched())
}

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

// # Where things are
//
// The runtime is in layers, bottom to top; a file names only its own layer
// and those below it (`.ci/layers.py` checks this, with no exception). Only
// the scheduler's protocols (sched/) and its records (proc/) have files that
// import each other in a circle, each bounded. The files directly here are
// the root: this public face, `boot.rs`, `trace.rs` and `loom_models.rs`.
//
// sys/     knows nothing of G, M or P
//   altstack.rs      each M's alternate signal stack, and the main thread's
//   coarse_clock.rs  milliseconds since start, ticked by sysmon: cheap timestamps
//   decimal.rs       an integer's digits without allocating (signal handlers, trace JSON)
//   epoll.rs         the epoll fd, its wake-up eventfd, the timed wait; deals in tokens
//   fatal.rs         Go's fatal error: the report on stderr, exit status 2
//   file_size.rs     the runtime's own files stop at RLIMIT_FSIZE with EFBIG, never SIGXFSZ
//   frames.rs        stack frames: captured, resolved, trimmed for reports
//   futex.rs         futex wait/wake (loom's stand-in under loom)
//   lock.rs          RawMutex, the runtime's lock for wait records
//   note.rs          Note, the one-shot wake-up an idle M sleeps on
//   os_threads.rs    the runtime's own OS threads, by kernel id
//   quadheap.rs      the 4-ary heap under the timers
//   sync_prims.rs    the one place loom is swapped in
//   trace_buf.rs     execution-trace events in per-M chunks; the trace clock
//   trace_clock.rs   which clock read a trace's next Start may share; waits drop it
//   trace_spill.rs   the trace's events kept raw in a file until the trace stops
// task/    what a goroutine is
//   block.rs         the type-erased task block a spawn allocates
//   creators.rs      the plain threads that spawned Gs, for "created by thread"
//   g/mod.rs         the G: identity, status, the coroutine it runs on; every G ever made
//   g/inspect.rs     a dump's view of a G: its snapshot, a parked G's frames
//   gfree.rs         free G headers: a P's cache and the global pool
//   ids.rs           GoId and WaitReason, the G's public faces
//   locals.rs        goroutine-local storage (the map behind `goro::local!`)
//   scavenge.rs      sysmon's stack scavenger: gives back idle stacks' pages
//   stack.rs         stacks: mmap slabs and guard pages
//   stack_pool.rs    free stacks: a P's cache and the global pool, aged
// queue/   where runnable Gs and idle Ps and Ms wait
//   globrunq.rs      the global run queue
//   idle.rs          idle Ps, idle Ms, the spinning count
//   runq.rs          a P's ring and `runnext`
// proc/    the scheduler's records (Go's runtime2.go), naming nothing of sched/
//   config.rs        Config, GOMAXPROCS and GODEBUG from the environment
//   handover.rs      an M that ran long yields its core once before polling
//   m.rs             the M (an OS thread), its thread's start, the current M/G/P accessors
//   observers.rs     what the scheduler shares with sysmon and the deadlock reporter
//   p.rs             the P: its queue, timers, counters, free lists
//   pollspin.rs      an M that runs dry while Gs wait on the network spins a little
//   state.rs         Sched, the global state; sched(), the started runtime
//   timers.rs        a P's timer heap and what a timer does
//   tracing.rs       the execution trace's switch and event sites
//   waiter.rs        Waiter and Claim: what a wait leaves for its waker
// sched/   the G/M/P protocol; its circle: mpark, ownership, poll, ready
//   lockosthread.rs  lock_os_thread: a G wired to its M
//   mpark.rs         waking and parking Ms: wakep, start_m, stop_m, hand_off_p
//   newproc.rs       making a G, running its task block, its result to the joiner
//   ownership.rs     who holds a P; taking it from a busy M (retake, stop-the-world)
//   poll.rs          the scheduler's side of the poller: when to poll, readying
//   preempt.rs       the cooperative half of preemption: yield at the next goro call
//   procresize.rs    set_gomaxprocs under a stop-the-world
//   ready.rs         the waking half of parking: Waiter::wake, ready
//   schedule.rs      the loop every M runs: find a G, run it, handle its switch
//   switch.rs        a G switching out to its M's loop; yield_now
//   syscall.rs       goro::blocking, on ownership.rs's enter/exit_syscall
//   template.rs      the template thread that starts wired Ms' threads
//   timers.rs        arming timers, running the due ones
// wait/    the one wait contract chan, sync, time and net build on (mod.rs)
//   guarded.rs       state under a RawMutex and blocking in its wait queue
//   park.rs          parking a G or a thread (the protocol, with ready.rs)
//   thread_waits.rs  plain threads in goro waits, for dumps and the deadlock check
//   waitq.rs         sudogs and wait queues
// netpoll/ the poll descriptors Gs wait on for sockets, as in Go's runtime
//   desc.rs          a socket's readiness, waiters and deadlines; the poller's events
//   registered.rs    a registered socket and the I/O loop `goro::net` runs in
//   loom_models.rs   loom models of readiness, close and deadlines against parking
// monitor/ the observers: they watch and report, nothing below calls them
//   blockwarn.rs     GODEBUG=blockwarn: names Gs that block their thread outside blocking
//   deadlock.rs      the deadlock report and SIGQUIT's dump (the reporter thread)
//   dump.rs          goroutines(): Go's traceback of every G, streamed
//   heap_trim.rs     sysmon gives glibc's free heap back when idle
//   panics.rs        what a panicking G prints
//   running.rs       a running G's frames, from its M's signal handler (GODEBUG=dumpsig)
//   schedtrace.rs    GODEBUG=schedtrace/scheddetail reports
//   signal.rs        the stack-overflow report (SIGSEGV/SIGBUS)
//   stats.rs         stats(): the scheduler's counters
//   sysmon.rs        sysmon: retakes, preemption, netpoll, timers, idle Ms
//   trace_json.rs    the execution trace's events as Chrome Trace Event JSON
// boot.rs            start-up: wires the layers (handlers, poller, the Ms' loop, reporter, sysmon, GORO_TRACE)
// loom_models.rs     loom models of the queues, parking and ownership protocols
// trace.rs           goro::runtime::trace: start, stop, GORO_TRACE, the writer thread
//
// The runtime starts on first use: the entry points (a spawn, a channel, a
// deadline or timer, a socket's registration, a dump, stats, gomaxprocs, a
// trace) call boot.rs's `started` (the crate above through `exports`); below
// them, `sched()` assumes it. A plain thread that waits before any of these
// (on a `goro::sync` type alone) has no deadlock check watching it.
//
// # One G from `go!` to its exit and its join: 12 files
//
//  1. src/spawn.rs: `go!`, Builder's checks, the runtime started.
//  2. sched/newproc.rs: `newproc`, the task block (closure, join slot);
//  3. proc/p.rs: a header from the P's free list (`gfget`);
//  4. task/g/mod.rs: `G::init`;
//  5. queue/runq.rs: the P's `runnext`;
//  6. sched/mpark.rs: `wakep`, an idle M's note;
//  7. proc/m.rs: or a new M's thread, which runs the loop:
//  8. sched/schedule.rs: `run`, `find_runnable`, `execute`: a stack from
//  9. task/stack_pool.rs, then `G::resume` (task/g/mod.rs) runs
//     `Task::run` (sched/newproc.rs): the body, its result into the join
//     slot (`JoinSlot::complete`).
//     Meanwhile the joiner, in `JoinHandle::join` (src/spawn.rs), waits:
// 10. wait/park.rs: `Parker::park`, the G marked waiting;
// 11. sched/switch.rs: `switch_out` to its M's loop, where `execute` drops
//     the slot's lock; `complete` wakes it:
// 12. sched/ready.rs: `Waiter::wake`, `ready` into the waker's P's `runnext`.
//     The body's G, back in `execute`, gives its stack to the P's cache
//     (task/stack_pool.rs) and `exit_g` (sched/schedule.rs) finishes it:
//     `G::finish`, the header back through `gfput` (proc/p.rs).
// A channel wait is the joiner's shape with a sudog in a queue
// (wait/waitq.rs) between 10 and 11.

mod boot;
#[cfg(all(test, loom))]
mod loom_models;
mod monitor;
pub(crate) mod netpoll;
mod proc;
mod queue;
mod sched;
mod sys;
mod task;
pub mod trace;
pub(crate) mod wait;

/// The runtime as `spawn.rs`, `local.rs` and `lib.rs` see it, besides the wait
/// contract ([`wait`]) and the poller ([`netpoll`]): making goroutines, their
/// ids and locals, and the public functions `lib.rs` re-exports. Nothing else
/// of the runtime is visible outside `runtime/`.
pub(crate) mod exports {
    pub(crate) use super::boot::started;
    #[cfg(feature = "tokio")]
    pub(crate) use super::monitor::panics::quietly;
    pub use super::proc::m::current;
    pub(crate) use super::proc::m::current_map;
    pub use super::queue::runq::{RunQueue, RING_CAP};
    pub(crate) use super::sched::newproc::{newproc, JoinSlot, Origin};
    pub use super::sched::switch::yield_now;
    pub use super::sched::syscall::blocking;
    pub(crate) use super::task::block::TaskRef;
    pub use super::task::ids::GoId;
    pub(crate) use super::task::locals::{make, slot_of, LocalMap};
    pub(crate) use super::task::stack::MAX_STACK_SIZE;
}

/// The runtime-clock time `d` from now: when a timer armed for `d` fires;
/// `None` if that is past the clock's range (never). An entry point: the
/// runtime starts if it has not (every timer and timed wait of the crate
/// above asks this first).
#[inline]
pub(crate) fn deadline_in(d: std::time::Duration) -> Option<u64> {
    boot::started().deadline_in(d)
}

pub use monitor::dump::{GoState, GoroutineInfo};
pub use monitor::stats::{ProcStats, Stats};
pub use proc::config::{AlreadyStarted, Config};
pub use sched::lockosthread::{lock_os_thread, unlock_os_thread};
pub use task::ids::WaitReason;

/// A snapshot of every live goroutine, ordered by id (Go's
/// `runtime.Stack(buf, true)`, as data). Parked goroutines come with the frames
/// where they wait, unless their stack has under 8 KiB left for the capture or
/// another dump holds them at that moment.
///
/// Nothing is stopped: each goroutine is looked at in turn, so the snapshot is
/// not one instant. A parked goroutine is held for the moment its frames take
/// to record, and one that is woken meanwhile runs right after. The calling
/// goroutine shows as running. Called from a goroutine, the collection runs as a
/// [`blocking`](fn@crate::blocking) call.
///
/// ```
/// let (tx, rx) = goro::chan::bounded::<()>(0);
/// let h = goro::go!(goro::Builder::new().name("waiter"), move || rx.recv())?;
/// while !goro::runtime::goroutines()
///     .iter()
///     .any(|g| g.id() == h.id() && matches!(g.state(), goro::runtime::GoState::Waiting(_)))
/// {
///     goro::yield_now();
/// }
/// let me = goro::runtime::goroutines().into_iter().find(|g| g.id() == h.id()).unwrap();
/// assert_eq!(me.name(), Some("waiter"));
/// assert_eq!(me.state(), goro::runtime::GoState::Waiting(goro::runtime::WaitReason::ChanRecv));
/// assert!(me.to_string().starts_with(&format!("goroutine {} \"waiter\" [chan receive]:", h.id())));
/// drop(tx);
/// # h.join().unwrap().unwrap_err();
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn goroutines() -> Vec<GoroutineInfo> {
    boot::started();
    monitor::dump::goroutines_of_started()
}

/// Writes every live goroutine ([`goroutines`]) and every plain thread waiting
/// in a goro primitive (`thread "main" [sync.WaitGroup.Wait]:` and its frames),
/// each followed by a blank line: the text Go prints on SIGQUIT or a deadlock.
///
/// ```
/// let mut out = Vec::new();
/// goro::runtime::write_goroutines(&mut out)?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Errors
/// Those of `w`.
pub fn write_goroutines<W: std::io::Write + ?Sized>(w: &mut W) -> std::io::Result<()> {
    boot::started();
    monitor::dump::write_goroutines_of_started(w)
}

/// Sets GOMAXPROCS to `n` and returns the previous value (Go's
/// `runtime.GOMAXPROCS(n)`).
///
/// `n == 0` only reads it, as in Go. Values above 1024 are capped. It may be called
/// from a goroutine or a plain thread, and starts the runtime if it is not
/// running. The setting is process-wide.
///
/// Resizing stops the world briefly, as Go's does: every running M gives up its
/// P at its next scheduling point (about one scheduling round; a goroutine that
/// makes no goro call has its P taken from it). Runnable goroutines and timers of
/// removed Ps move to the remaining ones; nothing is lost. Concurrent calls take
/// turns.
///
/// ```
/// use goro::runtime::{gomaxprocs, set_gomaxprocs};
///
/// let old = set_gomaxprocs(3);
/// assert_eq!(gomaxprocs(), 3);
/// assert_eq!(set_gomaxprocs(0), 3); // only reads
/// let h = goro::go!(|| set_gomaxprocs(1)); // from a goroutine, too
/// assert_eq!(h.join().unwrap(), 3);
/// assert_eq!(goro::go!(|| "still runs").join().unwrap(), "still runs");
/// assert_eq!(set_gomaxprocs(old), 1);
/// ```
pub fn set_gomaxprocs(n: usize) -> usize {
    boot::started();
    sched::procresize::set_gomaxprocs_of_started(n)
}

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
    boot::started().gomaxprocs()
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
    monitor::stats::collect(boot::started()).live as usize
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
    monitor::stats::collect(boot::started())
}

//! [`blocking`]: running a call that blocks its OS thread (file I/O, DNS, FFI, a
//! std lock) from a goroutine without stalling the other goroutines of its P.
//!
//! The G keeps its M and, provisionally, its P (Go's `entersyscall`): a short call
//! costs two state-word transitions and nothing else. If the call is still running
//! when sysmon next looks (≥ 20 µs), sysmon hands the P to another M so the P's
//! other Gs keep running; on return the G takes its P back if it is still free,
//! else any idle P, else it queues itself and its M parks (`runtime::ownership`).

use crate::runtime::proc::m::{current_g, current_m, set_current_g, M};
use crate::runtime::proc::p::P;
use crate::runtime::proc::tracing;
use crate::runtime::sched::ownership::{enter_runtime, enter_syscall, exit_syscall, take_p_after_syscall};
use crate::runtime::sys::trace_buf::Kind;
use crate::runtime::task::g::GRef;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Calls `f` in a function of its own. Thread-locals `f` touches then have their
/// addresses computed inside this call, on this thread, rather than once in a
/// caller that parks between two `blocking` calls and resumes elsewhere: what
/// makes `blocking` the place where goroutine code may use thread-locals.
#[inline(never)]
fn out_of_line<R>(f: impl FnOnce() -> R) -> R {
    let r = f();
    // Not a tail call: `f`'s body stays inside this frame.
    std::hint::black_box(());
    r
}

/// Runs `f`, a call that may block its OS thread, without stalling the other
/// goroutines of this goroutine's P.
///
/// Use it around file I/O, DNS look-ups, FFI, std locks: anything that blocks the
/// thread without goro knowing. Go's runtime does this around every system call
/// (`entersyscall` / `exitsyscall`); in Rust the call sites have to be marked.
///
/// A short `f` costs about as much as two atomic operations. If `f` is still
/// running when the runtime's monitor thread next looks (every 20 µs or so while
/// goroutines run), the P is handed to another M, which runs the P's other
/// goroutines meanwhile (counted in
/// [`runtime::stats()`](crate::runtime::stats)`.syscall_handoffs`).
/// When `f` returns, the goroutine takes a P back (its own if it is still free)
/// or queues itself to run; the result is returned as is.
///
/// Inside `f` the thread counts as a plain OS thread to goro: goro calls that wait
/// there (a channel `recv`, `join`, ...) block the thread rather than park the
/// goroutine. [`current`](crate::current) still reports the goroutine.
/// Outside a goroutine, `blocking(f)` is just `f()`, and so is a nested call.
///
/// Time inside `blocking` counts as running for sysmon's 10 ms time slice, as a
/// system call's does in Go: a goroutine that loops on short calls without
/// otherwise switching yields when a call returns once its slice is over, and
/// loses its P at a call after 20 ms if other work needs it.
///
/// ```
/// let path = std::env::temp_dir().join(format!("goro-blocking-{}", std::process::id()));
/// let h = goro::go!(move || {
///     goro::blocking(|| {
///         std::fs::write(&path, "file I/O blocks the thread")?;
///         let text = std::fs::read_to_string(&path)?;
///         std::fs::remove_file(&path)?;
///         Ok::<_, std::io::Error>(text)
///     })
/// });
/// assert_eq!(h.join().unwrap()?, "file I/O blocks the thread");
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// With a single P, a goroutine blocked in a std channel's `recv` would keep the
/// goroutine that sends from ever running; inside `blocking` its P moves on:
///
/// ```
/// goro::runtime::Config::new().procs(1).init().unwrap(); // first use: a fresh runtime
/// let (tx, rx) = std::sync::mpsc::channel();
/// let waiter = goro::go!(move || goro::blocking(|| rx.recv().unwrap()));
/// let sender = goro::go!(move || tx.send("hello").unwrap());
/// assert_eq!(waiter.join().unwrap(), "hello");
/// sender.join().unwrap();
/// ```
///
/// # Panics
/// A panic in `f` propagates to the caller, after the goroutine has got its P back.
pub fn blocking<F, R>(f: F) -> R
where
    F: FnOnce() -> R,
{
    let (Some(m), Some(g)) = (current_m(), current_g()) else {
        return f(); // a plain thread, or already inside `blocking`
    };
    // Inside the runtime first: a P taken while the G computed is marked in
    // the trace before the run's stop, and the stop is dated while the M
    // still holds its P.
    let p = enter_runtime(m);
    if tracing::on() {
        tracing::blocking_entered(m, g);
    }
    enter_syscall(m, g, p);
    // Caught so that the P is reclaimed (which may switch Gs) outside the unwind:
    // a G must not move to another thread while unwinding.
    let result = catch_unwind(AssertUnwindSafe(|| out_of_line(f)));
    if tracing::on() {
        tracing::emit_on(m, Kind::BlockingExit, g.id(), 0, 0);
    }
    exit_syscall(m, g);
    // A G looping on short calls is not preempted inside them: sysmon's request
    // (it held its P 10 ms) is honoured here.
    crate::runtime::sched::preempt::check();
    match result {
        Ok(r) => r,
        Err(payload) => resume_unwind(payload),
    }
}

/// A G whose first stack could not be mapped never runs: its task drops the body
/// and stores the error for `join` ([`GRef::fail_without_stack`]). Those drops
/// are user code (a captured value's `Drop`, a `local!` destructor) on the M's
/// own stack, where there is no coroutine to park, so they run as `blocking`'s
/// `f` does: the thread counts as a plain one (a goro wait blocks it, and
/// [`current`](crate::current) still names the G), and sysmon hands the P to
/// another M if they take long. Called by the M's loop inside the runtime with
/// no current G and the G `Running`; returns the same way, with the M's P (its
/// old one, or another idle one; none if there was none to take).
pub(crate) fn fail_without_stack(m: &'static M, g: GRef, err: std::io::Error) -> Option<&'static P> {
    set_current_g(Some(g));
    enter_syscall(m, g, m.p());
    // SAFETY: this M got `NoStack` from the G's first resume and owns it; once.
    unsafe { g.fail_without_stack(err) };
    take_p_after_syscall(m, g);
    set_current_g(None);
    m.p()
}

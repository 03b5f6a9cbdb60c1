//! A G leaving its stack for its M's scheduler loop: the one switch every
//! park and yield goes through, and [`yield_now`].

use super::lockosthread::{lock_os_thread, unlock_os_thread};
use crate::runtime::proc::m::current_g;
use crate::runtime::task::g::{Switch, G};

/// Called on the G's own stack: `g` records `switch` and returns to its M's
/// scheduler loop. Returns when some M resumes it.
///
/// # Safety
/// `g` is the currently running G.
///
/// Kept small enough to inline into the caller: every frame between the
/// stack switch and the G's own code costs a mispredicted return when the G
/// resumes (the CPU's return predictor holds the other stack's addresses).
/// The rare cases (a panic unwinding, a dump's inspection) are out of line.
#[inline(always)]
pub(crate) unsafe fn switch_out(g: &G, switch: Switch) {
    // While a panic unwinds (a destructor parks), std counts the panic on this
    // thread and `catch_unwind` uncounts it on whichever thread the G is on
    // then: so the G stays on its M until it resumes, as if locked to it.
    // Otherwise that M would believe it is panicking forever and abort at its
    // next panic. The check is one relaxed load when nothing panics.
    if std::thread::panicking() {
        // SAFETY: the caller's contract.
        return unsafe { switch_out_pinned(g, switch) };
    }
    // SAFETY: the caller's contract.
    unsafe { g.suspend(switch) };
}

/// [`switch_out`] while a panic unwinds: wired to this M until resumed.
///
/// # Safety
/// As `switch_out`.
#[cold]
#[inline(never)]
unsafe fn switch_out_pinned(g: &G, switch: Switch) {
    lock_os_thread();
    // SAFETY: the caller's contract.
    unsafe { g.suspend(switch) };
    unlock_os_thread();
}

/// Lets other goroutines run, like Go's `runtime.Gosched`.
///
/// The current goroutine goes to the back of the global run queue and its M picks
/// the next runnable goroutine; it resumes later without further action. On a
/// plain thread it yields the thread to the OS (`std::thread::yield_now`).
///
/// Long computations need not call it for fairness' sake: a goroutine that has run
/// 10 ms without a switch is made to yield at its next goro call, and after 20 ms
/// its P is handed to another M, so the goroutines queued behind it run anyway.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
///
/// // A flag set by another goroutine; yielding lets it run, whatever GOMAXPROCS is.
/// let flag = Arc::new(AtomicBool::new(false));
/// let f = flag.clone();
/// let waiter = goro::go!(move || {
///     let setter = goro::go!(move || f.store(true, Ordering::Release));
///     while !flag.load(Ordering::Acquire) {
///         goro::yield_now();
///     }
///     setter.join().unwrap();
/// });
/// waiter.join().unwrap();
/// ```
#[inline]
pub fn yield_now() {
    match current_g() {
        // SAFETY: `g` is the G running this code.
        Some(g) => unsafe { switch_out(&g, Switch::Yield) },
        None => std::thread::yield_now(),
    }
}

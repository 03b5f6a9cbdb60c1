//! `lock_os_thread` / `unlock_os_thread`: wiring a G to its M (Go's
//! `LockOSThread`), for code that needs thread-local state or thread identity to
//! persist across parks.
//!
//! While wired, the G runs only on its M and the M runs no other G. When the G
//! parks or yields, its M hands its P to another M and sleeps
//! (`mpark::stop_locked_m`); whichever scheduler later dequeues the G hands its own
//! P to the wired M and looks for work elsewhere (`mpark::start_locked_m`). If the
//! G exits still wired, its M's thread exits too, as in Go: the G may have left
//! the thread in a state no other G should inherit.
//!
//! Who touches what: the nesting count lives in the G's own context and the two
//! links (`proc::m::lockedm`, `M::lockedg`) are written only by the wired G itself.

use crate::runtime::proc::m::{current_g, current_m, set_lockedm};

/// Wires the calling goroutine to its current OS thread (Go's
/// `runtime.LockOSThread`).
///
/// Until a matching [`unlock_os_thread`], the goroutine runs only on this thread,
/// and this thread runs no other goroutine. Use it for code that relies on thread
/// identity or thread-local state across parks (some C libraries, GUI toolkits,
/// per-thread OS settings).
///
/// Calls nest: the goroutine stays wired until every `lock_os_thread` has been
/// undone. When a wired goroutine parks, its thread sleeps and hands its P to
/// another thread, so the other goroutines carry on. If the goroutine finishes
/// while still wired, its thread exits with it, as in Go. On a plain OS thread
/// this does nothing (the code owns its thread already).
///
/// It is also one of the two ways for goroutine code to use thread-locals
/// (a C library's per-thread state, a crate that caches per thread), which the
/// rule of [`go!`](crate::go!) otherwise forbids: wire the goroutine for as long
/// as it relies on them. The price is a thread hand-over at every park (the M
/// sleeps and hands its P on), about two orders of magnitude more than a plain
/// park. The other way, for short calls, is [`blocking`](fn@crate::blocking):
/// its closure runs to its end on one thread, but the next call may be on
/// another.
///
/// ```
/// use std::cell::Cell;
/// // A library that keeps per-thread state.
/// thread_local! { static LIB_STATE: Cell<u32> = const { Cell::new(0) }; }
/// fn lib_call() -> u32 {
///     LIB_STATE.with(|s| { s.set(s.get() + 1); s.get() })
/// }
///
/// let wired = goro::go!(|| {
///     goro::runtime::lock_os_thread();
///     let first = lib_call();
///     goro::time::sleep(std::time::Duration::from_millis(1)); // parks; same thread after
///     let second = lib_call();
///     goro::runtime::unlock_os_thread();
///     second - first
/// });
/// assert_eq!(wired.join().unwrap(), 1); // the same thread's state both times
///
/// // One short call: `blocking` keeps it on one thread from start to end.
/// let n = goro::go!(|| goro::blocking(lib_call)).join().unwrap();
/// assert!(n >= 1);
/// ```
///
/// ```
/// goro::go!(|| {
///     goro::runtime::lock_os_thread();
///     let before = std::thread::current().id();
///     goro::time::sleep(std::time::Duration::from_millis(1));
///     assert_eq!(std::thread::current().id(), before);
///     goro::runtime::unlock_os_thread();
/// })
/// .join()
/// .unwrap();
/// ```
pub fn lock_os_thread() {
    let (Some(m), Some(g)) = (current_m(), current_g()) else {
        return;
    };
    // Before the G can change its thread: from now on this M's new Ms come from
    // the template thread, which must be a clean copy.
    super::template::start();
    // SAFETY: `g` is the running G, which owns its context.
    let ctx = unsafe { g.ctx() };
    ctx.lock_count += 1;
    if ctx.lock_count == 1 {
        set_lockedm(&g, Some(m));
        m.set_lockedg(Some(g));
    }
}

/// Undoes one [`lock_os_thread`] (Go's `runtime.UnlockOSThread`).
///
/// Undoing the last one lets the goroutine move between threads again, and its
/// thread run other goroutines. Without a matching lock it does nothing, as in
/// Go; on a plain OS thread it does nothing either.
///
/// ```
/// use goro::runtime::{lock_os_thread, unlock_os_thread};
///
/// goro::go!(|| {
///     lock_os_thread();
///     lock_os_thread(); // nested
///     let home = std::thread::current().id();
///     unlock_os_thread(); // still wired: one lock is left
///     goro::time::sleep(std::time::Duration::from_millis(1));
///     assert_eq!(std::thread::current().id(), home);
///     unlock_os_thread(); // free to move again
///     unlock_os_thread(); // unmatched: ignored
/// })
/// .join()
/// .unwrap();
/// ```
pub fn unlock_os_thread() {
    let (Some(m), Some(g)) = (current_m(), current_g()) else {
        return;
    };
    // SAFETY: `g` is the running G, which owns its context.
    let ctx = unsafe { g.ctx() };
    if ctx.lock_count == 0 {
        return;
    }
    ctx.lock_count -= 1;
    if ctx.lock_count == 0 {
        set_lockedm(&g, None);
        m.set_lockedg(None);
    }
}

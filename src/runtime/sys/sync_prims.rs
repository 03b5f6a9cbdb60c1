//! The one place where loom is swapped in.
//!
//! The concurrency core imports its atomics, locks and thread parking from here: the
//! run queue ring and `runnext` ([`crate::runtime::queue::runq`]), the worker parking note
//! ([`super::note`]), the idle/spinning accounting ([`crate::runtime::queue::idle`]), the P state
//! word and M runtime depth ([`crate::runtime::sched::ownership`]), and the wait machinery every
//! blocking primitive is built on: the runtime lock ([`super::lock`]), the parking
//! protocol's claims and thread waiters ([`crate::runtime::wait::park`]), `goro::sync::Mutex`'s
//! state word, the poll descriptors' readiness generations, and the execution
//! trace's chunks ([`super::trace_buf`], whose slots are this module's [`UnsafeCell`]s). A normal build gets
//! `std`'s; `RUSTFLAGS="--cfg loom"` gets loom's, so the `loom_*` models can
//! explore every interleaving of the real code (see `scripts/loom.sh`).
//!
//! A loom build is only ever run inside a loom model: loom's objects cannot be
//! created outside one, and code that runs on coroutine stacks or inside signal
//! handlers must keep using `std` directly. Constructors that are `const` in a
//! normal build are not under loom (loom's atomics have no `const fn new`); they
//! are written with [`const_unless_loom!`].

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// An `UnsafeCell` with loom's access API: under loom, every access is checked
/// for data races (two accesses, one a write, not ordered by happens-before).
#[cfg(not(loom))]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> UnsafeCell<T> {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    /// Calls `f` with a pointer to read the value through.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Calls `f` with a pointer to write the value through.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// One round of a wait loop for another thread's next step.
#[cfg(loom)]
pub(crate) fn spin_yield() {
    loom::thread::yield_now();
}

/// One round of a wait loop for another thread's next step.
#[cfg(not(loom))]
pub(crate) fn spin_yield() {
    std::hint::spin_loop();
    std::thread::yield_now();
}

/// Sleeps at least `d`: off the CPU, so another thread (the one being waited
/// for, or any other) gets it. Under loom, a yield.
#[cfg(loom)]
pub(crate) fn nap(_d: std::time::Duration) {
    loom::thread::yield_now();
}

/// Sleeps at least `d`: off the CPU, so another thread (the one being waited
/// for, or any other) gets it. The kernel adds the thread's timer slack (50 µs
/// by default, docs/decisions/0020-timer-slack.md) to a short sleep.
#[cfg(not(loom))]
pub(crate) fn nap(d: std::time::Duration) {
    std::thread::sleep(d);
}

/// Under loom, threads block in one "parking lot" (a loom `Mutex` + `Condvar`)
/// instead of `park`/`unpark`: loom's `unpark` also wakes a thread blocked in a
/// `join` or a lock (it keeps no token per kind of block), which breaks models
/// where a late unpark reaches a thread that has moved on, as goro's wakers may.
/// A wake-up the code forgets leaves its sleeper blocked: a deadlock loom reports.
#[cfg(loom)]
pub(crate) mod lot {
    use loom::sync::{Condvar, Mutex};

    loom::lazy_static! {
        static ref LOT: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());
    }

    /// Blocks until `done()` holds; `done` runs under the lot's lock, so it can
    /// check a condition and queue the caller in one step.
    pub(crate) fn wait_until(mut done: impl FnMut() -> bool) {
        let mut held = LOT.0.lock().unwrap();
        while !done() {
            held = LOT.1.wait(held).unwrap();
        }
    }

    /// Runs `change` under the lot's lock, then wakes every sleeper to re-check.
    pub(crate) fn notify(change: impl FnOnce()) {
        let _held = LOT.0.lock().unwrap();
        change();
        LOT.1.notify_all();
    }
}

/// Declares a function `const` in a normal build and plain under loom, whose
/// atomics cannot be built in a `const` context. The body must be the same.
macro_rules! const_unless_loom {
    ($(#[$attr:meta])* $vis:vis fn $name:ident $($rest:tt)*) => {
        #[cfg(not(loom))]
        $(#[$attr])* $vis const fn $name $($rest)*
        #[cfg(loom)]
        $(#[$attr])* $vis fn $name $($rest)*
    };
}
pub(crate) use const_unless_loom;

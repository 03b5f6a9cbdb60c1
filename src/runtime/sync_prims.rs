//! The one place where loom is swapped in.
//!
//! The concurrency core (the run queue ring and `runnext` in [`super::runq`], the
//! worker parking note in [`super::note`], the idle/spinning accounting in
//! [`super::idle`], and the P state word and M runtime depth of
//! [`super::ownership`]) imports its atomics and locks from here. A normal build gets
//! `std`'s; `RUSTFLAGS="--cfg loom"` gets loom's, so `tests/loom_*.rs` can
//! explore every interleaving of the real code (see `scripts/loom.sh`).
//!
//! Nothing else in the crate may import from here: code that runs on coroutine
//! stacks or inside signal handlers must keep using `std` directly.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicPtr, AtomicU32, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicPtr, AtomicU32, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;

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

//! The one place where loom is swapped in.
//!
//! The concurrency core (the run queue ring and `runnext` in [`super::runq`], the
//! worker parking note in [`super::note`] and the idle/spinning accounting in
//! [`super::idle`]) imports its atomics and locks from here. A normal build gets
//! `std`'s; `RUSTFLAGS="--cfg loom"` gets loom's, so `tests/loom_*.rs` can
//! explore every interleaving of the real code (see `scripts/loom.sh`).
//!
//! Nothing else in the crate may import from here: code that runs on coroutine
//! stacks or inside signal handlers must keep using `std` directly.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;

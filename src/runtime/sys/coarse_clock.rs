//! A coarse clock: milliseconds since the runtime started, as last stored by
//! sysmon. Reading it is one relaxed load of a line written every few ms, cheap
//! enough for the park path (a G stamps when its wait began for dumps).
//!
//! Sysmon ticks it on each look, at least every 10 ms while any P is busy; while
//! every P is idle it may sleep longer, but then no G runs to read it. Readers
//! that need the time when nothing runs (a dump) read the runtime clock instead.

use std::sync::atomic::{AtomicU64, Ordering};

static NOW_MS: AtomicU64 = AtomicU64::new(0);

/// The coarse time, in ms since the runtime started.
#[inline]
pub(crate) fn coarse_now_ms() -> u64 {
    NOW_MS.load(Ordering::Relaxed)
}

/// Sysmon's tick: `now_ns` is the runtime clock.
pub(crate) fn tick(now_ns: u64) {
    NOW_MS.store(now_ns / 1_000_000, Ordering::Relaxed);
}

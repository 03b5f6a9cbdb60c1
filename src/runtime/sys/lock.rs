//! `RawMutex`: the runtime's internal lock for wait records (channels, `goro::sync`).
//!
//! A futex-based mutex (Drepper's three-state design: 0 unlocked, 1 locked,
//! 2 locked with sleepers). Unlike `std::sync::Mutex` it is not tied to a type, so
//! `select!` can lock the channels of all its cases, of different element types,
//! in address order; and its guard may be released by the scheduler after a G
//! parked (the one parking protocol) or, for `select!`, several at once.
//!
//! Held only for a few instructions at a time, never across user code or a park:
//! it spins briefly before sleeping, and a G that must sleep on it blocks its M
//! (acceptable for critical sections this short; it is what Go's runtime locks do).
//!
//! Orderings: `lock` acquires (`Acquire` CAS/swap), `unlock` releases (`Release`
//! swap); the protected data is touched only in between.
//!
//! Under loom the state word is loom's, there is no spinning, and the futex is
//! loom's model of it (see `futex.rs`).

use super::futex;
use super::sync_prims::{const_unless_loom, AtomicU32, Ordering};

const UNLOCKED: u32 = 0;
const LOCKED: u32 = 1;
const CONTENDED: u32 = 2;
/// Looks at the lock this many times before going to sleep on the futex (none
/// under loom, where each look would multiply the interleavings to explore).
const SPINS: u32 = if cfg!(loom) { 0 } else { 10 };
/// Spin hints between two looks: a few microseconds (a `pause` takes 10 to
/// 40 ns, by CPU). See `lock_contended`.
const STEP: u32 = 128;

/// A raw futex mutex. See the module docs.
pub(crate) struct RawMutex {
    state: AtomicU32,
    /// Under loom, the lock order of `select!` (see [`RawMutex::order_key`]).
    #[cfg(loom)]
    created: u64,
}

impl RawMutex {
    const_unless_loom! {
        pub(crate) fn new() -> Self {
            RawMutex {
                state: AtomicU32::new(UNLOCKED),
                #[cfg(loom)]
                created: {
                    static CREATED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                    CREATED.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                },
            }
        }
    }

    /// Takes the lock; release it with [`RawMutex::unlock`] or through a [`RawGuard`].
    pub(crate) fn lock(&self) {
        if self
            .state
            .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
        self.lock_contended();
    }

    #[cold]
    #[cfg_attr(loom, allow(clippy::reversed_empty_ranges))] // no spinning under loom
    fn lock_contended(&self) {
        super::trace_clock::stale();
        // Long, even steps between looks. Each look pulls the lock's cache line
        // away from the holder, whose unlock must fetch it back, and a lock that
        // changes cores on every hand-over costs a line transfer per critical
        // section, many times the section itself. Looking seldom lets the
        // holder's core run a streak of sections (its Gs' next channel
        // operations) before the line moves. Even steps, not an exponential
        // backoff: short first looks are what costs
        // (docs/decisions/0028-runtime-lock-spin.md).
        for _ in 0..SPINS {
            for _ in 0..STEP {
                std::hint::spin_loop();
            }
            if self.state.load(Ordering::Relaxed) == UNLOCKED
                && self
                    .state
                    .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return;
            }
        }
        // Mark contended; whoever unlocks then wakes a sleeper.
        while self.state.swap(CONTENDED, Ordering::Acquire) != UNLOCKED {
            futex::wait(&self.state, CONTENDED, None);
        }
    }

    /// Releases the lock.
    ///
    /// # Safety
    /// The lock is held, and its holder gives it up here (the caller may be another
    /// thread than the one that locked it: the scheduler releasing a parked G's lock).
    pub(crate) unsafe fn unlock(&self) {
        if self.state.swap(UNLOCKED, Ordering::Release) == CONTENDED {
            futex::wake_one(&self.state);
        }
    }

    /// Where the lock comes in the global lock order that `select!` follows to
    /// take several at once: its address.
    #[cfg(not(loom))]
    pub(crate) fn order_key(&self) -> usize {
        self as *const RawMutex as usize
    }

    /// Under loom, the lock's creation order, which every execution of a model
    /// replays the same way (addresses do not).
    #[cfg(loom)]
    pub(crate) fn order_key(&self) -> usize {
        self.created as usize
    }

    /// Takes the lock and returns a guard that releases it on drop.
    pub(crate) fn guard(&self) -> RawGuard<'_> {
        self.lock();
        RawGuard(self)
    }
}

/// A held [`RawMutex`]; dropping it unlocks. It may be handed to the park protocol,
/// which drops it after the G has switched out.
pub(crate) struct RawGuard<'a>(&'a RawMutex);

impl Drop for RawGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: the guard exists only while the lock is held.
        unsafe { self.0.unlock() };
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn mutual_exclusion_under_contention() {
        struct Shared(RawMutex, std::cell::UnsafeCell<u64>);
        // SAFETY: the counter is only touched under the lock.
        unsafe impl Sync for Shared {}
        let s = Arc::new(Shared(RawMutex::new(), std::cell::UnsafeCell::new(0)));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        let _g = s.0.guard();
                        // SAFETY: under the lock.
                        unsafe { *s.1.get() += 1 };
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let _g = s.0.guard();
        // SAFETY: under the lock.
        assert_eq!(unsafe { *s.1.get() }, 80_000);
    }
}

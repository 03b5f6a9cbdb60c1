//! Which clock read of this thread the execution trace may share with its next
//! `Start`, and the places that forbid it.
//!
//! A G's `Start` shares the clock read of the event its M recorded just
//! before when that event is the previous G's `Stop` or the take that found
//! the G, and nothing between could have made the thread wait
//! (docs/decisions/0039-trace-recording-cost.md; `sys/trace_buf.rs`, Clock).
//! [`set_fresh`] leaves such a read; [`stale`] drops it, and the places where
//! a thread may wait on the way from one G to the next call [`stale`]: the
//! futex calls (a contended runtime lock's sleep and wake-up, an M's note), a
//! contended runtime lock's spin, a contended `std` lock of the scheduler's
//! ([`lock_noting_wait!`]: the global queue, the idle lists, a P's timers, the
//! free Gs and stacks), the poller's wake-up, an M's thread created, a
//! waker's code. A lock taken at the first try is not a wait. The tracer's
//! own lock (a new chunk) is seen by its caller (`proc/tracing.rs`), and the
//! scheduler drops the read where it polls, spins, yields its thread or
//! sleeps. Not seen: the kernel taking the CPU, and the futex wake a `std`
//! lock's release makes when a thread queued on it meanwhile.
//!
//! Thread: each thread touches only its own read (a thread-local). Under loom
//! no read is shared: model threads are not OS threads, and no model checks
//! a timestamp.

#[cfg(not(loom))]
use super::trace_buf::generation;
#[cfg(not(loom))]
use std::cell::Cell;

#[cfg(not(loom))]
thread_local! {
    /// The shareable read and the trace generation it was taken in (a read
    /// of an earlier trace dates nothing of a later one); 0 for none.
    static FRESH: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// `ts`, the read of the event this thread just recorded, may date its next
/// `Start` if the thread does not wait before it.
#[inline]
pub(crate) fn set_fresh(ts: u64) {
    #[cfg(not(loom))]
    FRESH.with(|f| f.set((ts, generation())));
    #[cfg(loom)]
    let _ = ts;
}

/// The read [`set_fresh`] left in the trace being recorded, if nothing
/// dropped it since; taking it drops it.
#[inline]
pub(crate) fn take_fresh() -> Option<u64> {
    #[cfg(not(loom))]
    {
        let (ts, of) = FRESH.with(|f| f.replace((0, 0)));
        (ts != 0 && of == generation()).then_some(ts)
    }
    #[cfg(loom)]
    None
}

/// Drops this thread's shareable read (the thread may wait, or recorded an
/// event): its next `Start` reads the clock. One thread-local store, trace
/// or none.
#[inline]
pub(crate) fn stale() {
    #[cfg(not(loom))]
    FRESH.with(|f| f.set((0, 0)));
}

/// Locks `$mutex` (a `std` or loom `Mutex`, a poisoned one taken as it is),
/// calling [`stale`] first if it is held: the scheduler's own locks on the
/// way from one G to the next. The wait is out of line: the path of a lock
/// taken at the first try is the plain lock's.
macro_rules! lock_noting_wait {
    ($mutex:expr) => {{
        let mutex = $mutex;
        match mutex.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                $crate::runtime::sys::trace_clock::waited(|| mutex.lock().unwrap_or_else(|e| e.into_inner()))
            }
        }
    }};
}

/// [`lock_noting_wait!`]'s held lock: notes the wait, then `lock`s.
#[cold]
#[inline(never)]
pub(crate) fn waited<G>(lock: impl FnOnce() -> G) -> G {
    stale();
    lock()
}
pub(crate) use lock_noting_wait;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_read_is_shared_once() {
        set_fresh(5);
        assert_eq!(take_fresh(), Some(5));
        assert_eq!(take_fresh(), None);
    }

    #[test]
    fn a_wait_drops_the_read() {
        set_fresh(5);
        stale();
        assert_eq!(take_fresh(), None);
        set_fresh(6);
        super::super::futex::wake_one(&std::sync::atomic::AtomicU32::new(0));
        assert_eq!(take_fresh(), None, "a futex call is a wait");
    }

    #[test]
    fn a_lock_taken_at_the_first_try_keeps_the_read() {
        let m = Mutex::new(1);
        set_fresh(7);
        assert_eq!(*lock_noting_wait!(&m), 1);
        assert_eq!(take_fresh(), Some(7));
    }

    #[test]
    fn a_read_is_the_reading_threads_own() {
        set_fresh(8);
        std::thread::spawn(|| assert_eq!(take_fresh(), None)).join().unwrap();
        assert_eq!(take_fresh(), Some(8));
    }
}

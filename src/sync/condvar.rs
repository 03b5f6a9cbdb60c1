//! `Condvar`: wait for a condition under a `goro::sync::Mutex` (Go's `sync.Cond`).
//!
//! A waiter queues itself *before* it unlocks the mutex, under the condvar's own
//! lock, so a notifier that changes the condition under the mutex afterwards
//! always finds it: no lost notification. It is woken only by a notification (or
//! its timeout): no spurious wake-ups.

use super::guarded::{pop_all, wait_in, wait_in_timeout, Guarded};
use super::mutex::MutexGuard;
use crate::runtime::g::WaitReason;
use crate::runtime::waitq::WaitQueue;
use std::fmt;
use std::time::Duration;

/// A condition variable for goroutines.
///
/// ```
/// use std::sync::Arc;
/// use goro::sync::{Condvar, Mutex};
///
/// let pair = Arc::new((Mutex::new(false), Condvar::new()));
/// let p2 = pair.clone();
/// let h = goro::go!(move || {
///     *p2.0.lock() = true;
///     p2.1.notify_one();
/// });
/// let (m, cv) = &*pair;
/// let mut ready = m.lock();
/// while !*ready {
///     ready = cv.wait(ready);
/// }
/// h.join().unwrap();
/// ```
pub struct Condvar {
    waiters: Guarded<WaitQueue<()>>,
}

impl Condvar {
    /// A condvar nobody waits on.
    pub const fn new() -> Self {
        Condvar {
            waiters: Guarded::new(WaitQueue::new()),
        }
    }

    /// Unlocks the mutex, waits for a notification, locks the mutex again.
    pub fn wait<'a, T: ?Sized>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        let mutex = guard.mutex();
        let q = self.waiters.lock();
        drop(guard);
        wait_in(q, WaitReason::SyncCondWait, None, false, |q| q);
        mutex.lock()
    }

    /// As [`Condvar::wait`], giving up after `timeout`. Returns the guard and
    /// whether the wait timed out.
    pub fn wait_timeout<'a, T: ?Sized>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: Duration,
    ) -> (MutexGuard<'a, T>, bool) {
        let mutex = guard.mutex();
        let q = self.waiters.lock();
        drop(guard);
        let timed_out = wait_in_timeout(&self.waiters, q, WaitReason::SyncCondWait, timeout, |q| q).is_none();
        (mutex.lock(), timed_out)
    }

    /// Wakes one waiter, the longest-waiting one.
    pub fn notify_one(&self) {
        let mut q = self.waiters.lock();
        let w = q.pop_claimed().map(|c| c.finish(true));
        drop(q);
        if let Some(w) = w {
            w.wake();
        }
    }

    /// Wakes every waiter.
    pub fn notify_all(&self) {
        let mut q = self.waiters.lock();
        let all = pop_all(&mut q, true);
        drop(q);
        all.into_iter().for_each(|w| w.wake());
    }
}

impl Default for Condvar {
    fn default() -> Self {
        Condvar::new()
    }
}

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Condvar { .. }")
    }
}

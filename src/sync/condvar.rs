//! `Condvar`: wait for a condition under a `goro::sync::Mutex` (Go's `sync.Cond`).
//!
//! A waiter queues itself *before* it unlocks the mutex, under the condvar's own
//! lock, so a notifier that changes the condition under the mutex afterwards
//! always finds it: no lost notification. It is woken only by a notification (or
//! its timeout): no spurious wake-ups.

use super::mutex::MutexGuard;
use crate::runtime::wait::{const_unless_loom, pop_all, wait_in, wait_in_timeout, Guarded, WaitQueue, WaitReason};
use std::fmt;
use std::time::Duration;

/// A condition variable for goroutines (Go's `sync.Cond`), used with a goro
/// [`Mutex`](super::Mutex): wait, under the mutex, until another goroutine changes
/// a condition and notifies.
///
/// A waiter is queued before it releases the mutex, so a notification made under
/// the mutex after that cannot be missed. There are no spurious wake-ups: a waiter
/// wakes only when notified (or when its timeout expires). The condition should
/// still be checked in a loop, since another goroutine may take the mutex first
/// and change it again. Waiting parks the goroutine, or blocks the thread outside
/// one.
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
    const_unless_loom! {
        /// A condition variable nobody waits on. `const`, so it can initialise a
        /// `static`.
        ///
        /// ```
        /// static READY: goro::sync::Condvar = goro::sync::Condvar::new();
        /// READY.notify_all(); // nobody waits: nothing happens
        /// ```
        pub fn new() -> Self {
            Condvar {
                waiters: Guarded::new(WaitQueue::new()),
            }
        }
    }

    /// Unlocks the mutex behind `guard`, waits for a notification, then locks the
    /// mutex again and returns the new guard (Go's `Cond.Wait`). Waiters are
    /// woken in the order they started waiting.
    ///
    /// ```
    /// use goro::sync::{Condvar, Mutex};
    /// use std::sync::Arc;
    ///
    /// let state = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
    /// let s = state.clone();
    /// let consumer = goro::go!(move || {
    ///     let (items, cv) = &*s;
    ///     let mut items = items.lock();
    ///     while items.len() < 3 {
    ///         items = cv.wait(items);
    ///     }
    ///     items.iter().sum::<i32>()
    /// });
    /// for i in 1..=3 {
    ///     state.0.lock().push(i);
    ///     state.1.notify_one();
    /// }
    /// assert_eq!(consumer.join().unwrap(), 6);
    /// ```
    pub fn wait<'a, T: ?Sized>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        let mutex = guard.mutex();
        let q = self.waiters.lock();
        drop(guard);
        wait_in(q, WaitReason::SyncCondWait, None, false, |q| q);
        mutex.lock()
    }

    /// As [`Condvar::wait`], giving up after `timeout`. Returns the guard (the
    /// mutex is locked again either way) and `true` if the wait timed out rather
    /// than being notified.
    ///
    /// ```
    /// use goro::sync::{Condvar, Mutex};
    /// use std::time::Duration;
    ///
    /// let (m, cv) = (Mutex::new(false), Condvar::new());
    /// let (guard, timed_out) = cv.wait_timeout(m.lock(), Duration::from_millis(1));
    /// assert!(timed_out && !*guard);
    /// ```
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

    /// Wakes one waiter, the one that has waited longest (Go's `Cond.Signal`).
    /// Does nothing if nobody waits: a notification is not remembered. Holding the
    /// mutex while notifying is allowed but not required.
    ///
    /// ```
    /// use goro::sync::{Condvar, Mutex};
    /// use std::sync::Arc;
    ///
    /// let pair = Arc::new((Mutex::new(0), Condvar::new()));
    /// let p = pair.clone();
    /// let waiter = goro::go!(move || {
    ///     let mut n = p.0.lock();
    ///     while *n == 0 {
    ///         n = p.1.wait(n);
    ///     }
    ///     *n
    /// });
    /// *pair.0.lock() = 5;
    /// pair.1.notify_one();
    /// assert_eq!(waiter.join().unwrap(), 5);
    /// ```
    pub fn notify_one(&self) {
        let mut q = self.waiters.lock();
        let w = q.pop_claimed().map(|c| c.finish(true));
        drop(q);
        if let Some(w) = w {
            w.wake();
        }
    }

    /// Wakes every goroutine and thread waiting now (Go's `Cond.Broadcast`); they
    /// then take the mutex one at a time.
    ///
    /// ```
    /// use goro::sync::{Condvar, Mutex};
    /// use std::sync::Arc;
    ///
    /// let gate = Arc::new((Mutex::new(false), Condvar::new()));
    /// let waiters: Vec<_> = (0..3)
    ///     .map(|i| {
    ///         let g = gate.clone();
    ///         goro::go!(move || {
    ///             let mut open = g.0.lock();
    ///             while !*open {
    ///                 open = g.1.wait(open);
    ///             }
    ///             i
    ///         })
    ///     })
    ///     .collect();
    /// *gate.0.lock() = true;
    /// gate.1.notify_all();
    /// assert_eq!(waiters.into_iter().map(|h| h.join().unwrap()).sum::<i32>(), 3);
    /// ```
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

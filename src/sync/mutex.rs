//! `Mutex<T>`: a lock that parks goroutines (Go's `sync.Mutex`), with a value
//! inside as std's.
//!
//! # Protocol
//! `state` holds `LOCKED` and `WAITERS`. Locking is one CAS when free; after a
//! short spin, a locker sets `WAITERS` under the wait list's lock, queues itself and
//! parks. Unlocking is one CAS (`LOCKED` -> 0) while nobody waits; otherwise the
//! unlocker pops the head waiter and either
//! - lets it compete (clears `LOCKED`, wakes it: normal mode, in which a running G
//!   that arrives first may take the lock: good for throughput), or
//! - hands the lock over (keeps `LOCKED`, the woken waiter owns it), once the head
//!   has waited more than 1 ms: Go's starvation mode, so no waiter waits forever.
//!
//! A waiter that was woken to compete and lost goes back to the head of the queue
//! with its original arrival time, so it soon qualifies for a hand-over.
//!
//! No poisoning (Go has none): a guard dropped by a panic unlocks.
//!
//! Orderings: acquiring `LOCKED` is an `Acquire` CAS, releasing it `Release`; a
//! hand-over passes the lock through the wait list's lock and the wake-up.

use crate::runtime::wait::{const_unless_loom, wait_in, AtomicU32, Guarded, Ordering, WaitQueue, WaitReason};
use std::cell::UnsafeCell;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::time::Instant;

const LOCKED: u32 = 1;
const WAITERS: u32 = 2;
/// Hand the lock to a waiter that has waited this long (Go's starvation threshold).
#[cfg(not(loom))]
const STARVATION: std::time::Duration = std::time::Duration::from_millis(1);
/// Looks before queueing (Go spins a few times on multicore machines; none under
/// loom, where each look would multiply the interleavings to explore).
const SPINS: u32 = if cfg!(loom) { 0 } else { 16 };
/// Most spin hints between two looks.
const MAX_BACKOFF: u32 = 64;

/// A mutual exclusion lock for goroutines (Go's `sync.Mutex`), holding the data it
/// protects, as std's `Mutex<T>`.
///
/// [`lock`](Mutex::lock) returns a [`MutexGuard`] that gives access to the data
/// and unlocks when dropped. A goroutine that has to wait parks (a plain thread
/// blocks); waiters queue first come, first served. As in Go, a running goroutine
/// may take a just-released lock before the woken head waiter (which is good for
/// throughput), but once the head has waited more than 1 ms the lock is handed to
/// it directly, so nobody waits forever. There is no poisoning: a guard dropped by
/// a panic simply unlocks. The lock is not reentrant: locking it again while
/// holding it deadlocks, as in Go.
///
/// `Mutex::new` is `const`, so a `Mutex` can be a `static`.
///
/// ```
/// use std::sync::Arc;
/// let m = Arc::new(goro::sync::Mutex::new(0));
/// let hs: Vec<_> = (0..10)
///     .map(|_| {
///         let m = m.clone();
///         goro::go!(move || *m.lock() += 1)
///     })
///     .collect();
/// hs.into_iter().for_each(|h| h.join().unwrap());
/// assert_eq!(*m.lock(), 10);
/// ```
pub struct Mutex<T: ?Sized> {
    state: AtomicU32,
    /// Parked lockers, each carrying its first arrival time.
    waiters: Guarded<WaitQueue<Instant>>,
    data: UnsafeCell<T>,
}

// SAFETY: the lock serialises access to `data`; T moves between threads with it.
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
// SAFETY: as std's Mutex: sharing the mutex shares `&mut T` one holder at a time.
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}

/// Access to a locked [`Mutex`]'s value, through `Deref` and `DerefMut`; dropping
/// it unlocks the mutex.
///
/// Unlike std's guard, it is `Send`: a goroutine may hold it across a park and
/// resume on another thread, and it may be unlocked by a goroutine other than
/// the one that locked it (which Go allows too). [`Condvar::wait`](super::Condvar::wait)
/// takes and returns one.
///
/// ```
/// let m = goro::sync::Mutex::new(vec![1, 2]);
/// let mut guard = m.lock();
/// guard.push(3);
/// assert_eq!(guard.len(), 3);
/// drop(guard); // unlocks
/// assert!(m.try_lock().is_some());
/// ```
pub struct MutexGuard<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
}

// SAFETY: like std's guard: sharing the guard shares `&T`.
unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

impl<T> Mutex<T> {
    const_unless_loom! {
        /// An unlocked mutex holding `value`. `const`, so it can initialise a `static`.
        ///
        /// ```
        /// static COUNTER: goro::sync::Mutex<u64> = goro::sync::Mutex::new(0);
        /// goro::go!(|| *COUNTER.lock() += 1).join().unwrap();
        /// assert_eq!(*COUNTER.lock(), 1);
        /// ```
        pub fn new(value: T) -> Self {
            Mutex {
                state: AtomicU32::new(0),
                waiters: Guarded::new(WaitQueue::new()),
                data: UnsafeCell::new(value),
            }
        }
    }

    /// The value, consuming the mutex. No locking is needed: owning the mutex
    /// proves nobody holds it.
    ///
    /// ```
    /// let m = goro::sync::Mutex::new(String::from("data"));
    /// m.lock().push('!');
    /// assert_eq!(m.into_inner(), "data!");
    /// ```
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks the mutex and returns a guard that unlocks it when dropped. While
    /// another holder has it, the caller waits: it spins briefly, then parks the
    /// goroutine (or blocks the thread) in the FIFO wait queue.
    ///
    /// ```
    /// use goro::sync::Mutex;
    /// use std::sync::Arc;
    ///
    /// let m = Arc::new(Mutex::new(0));
    /// let guard = m.lock();
    /// let m2 = m.clone();
    /// let h = goro::go!(move || *m2.lock() += 1); // parks until `guard` is dropped
    /// assert_eq!(*guard, 0);
    /// drop(guard);
    /// h.join().unwrap();
    /// assert_eq!(*m.lock(), 1);
    /// ```
    #[inline]
    pub fn lock(&self) -> MutexGuard<'_, T> {
        // Fast path: one CAS from "free, nobody waiting".
        if self
            .state
            .compare_exchange_weak(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
            && !self.try_acquire()
        {
            self.lock_slow();
        }
        MutexGuard { mutex: self }
    }

    /// Locks the mutex if it is free right now (Go's `TryLock`); never waits.
    /// Returns `None` if someone holds it.
    ///
    /// ```
    /// let m = goro::sync::Mutex::new(1);
    /// let g = m.lock();
    /// assert!(m.try_lock().is_none());
    /// drop(g);
    /// assert_eq!(*m.try_lock().unwrap(), 1);
    /// ```
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.try_acquire().then(|| MutexGuard { mutex: self })
    }

    /// Mutable access without locking: `&mut self` proves nobody else holds it.
    ///
    /// ```
    /// let mut m = goro::sync::Mutex::new(vec![1]);
    /// m.get_mut().push(2);
    /// assert_eq!(*m.lock(), [1, 2]);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// One attempt at taking `LOCKED`, whatever the `WAITERS` bit says (barging).
    fn try_acquire(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        s & LOCKED == 0
            && self
                .state
                .compare_exchange(s, s | LOCKED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    #[cold]
    #[cfg_attr(loom, allow(clippy::reversed_empty_ranges))] // no spinning under loom
    fn lock_slow(&self) {
        crate::runtime::wait::preempt_check();
        // Spin with exponential backoff between looks, so the spinner does not keep
        // pulling the state's cache line away from the holder (as `RawMutex`).
        let mut backoff = 1u32;
        for _ in 0..SPINS {
            for _ in 0..backoff {
                std::hint::spin_loop();
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
            if self.state.load(Ordering::Relaxed) & LOCKED == 0 && self.try_acquire() {
                return;
            }
        }
        let arrived = Instant::now();
        let mut requeue = false;
        loop {
            let q = self.waiters.lock();
            self.state.fetch_or(WAITERS, Ordering::Relaxed);
            // Re-check with WAITERS set: an unlock that came before will not look
            // at the queue, so we must not sleep through it.
            if self.try_acquire() {
                return;
            }
            if wait_in(q, WaitReason::SyncMutexLock, Some(arrived), requeue, |q| q) {
                return; // handed over: we own it
            }
            if self.try_acquire() {
                return;
            }
            requeue = true;
        }
    }

    #[inline]
    fn unlock(&self) {
        if self
            .state
            .compare_exchange(LOCKED, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            self.unlock_slow();
        }
    }

    #[cold]
    fn unlock_slow(&self) {
        let mut q = self.waiters.lock();
        let Some(head) = q.pop_claimed() else {
            // WAITERS was stale: nobody queued.
            self.state.store(0, Ordering::Release);
            return;
        };
        if q.is_empty() {
            self.state.fetch_and(!WAITERS, Ordering::Relaxed);
        }
        let starving = head.peek(|arrived| arrived.is_some_and(|&t| starving(t)));
        if !starving {
            self.state.fetch_and(!LOCKED, Ordering::Release);
        }
        let waiter = head.finish(starving);
        drop(q);
        waiter.wake();
    }
}

/// Whether a waiter queued since `arrived` has waited long enough to be handed
/// the lock (starvation mode).
#[cfg(not(loom))]
fn starving(arrived: Instant) -> bool {
    arrived.elapsed() >= STARVATION
}

/// Under loom the clock must not steer the model (each execution has to replay
/// the same way), so the model picks the mode: see [`LOOM_HAND_OVER`].
#[cfg(loom)]
fn starving(_arrived: Instant) -> bool {
    LOOM_HAND_OVER.load(std::sync::atomic::Ordering::Relaxed)
}

/// Under loom: whether every unlock with a waiter hands the lock over (starvation
/// mode) or lets the woken waiter compete (normal mode). Set by the model.
#[cfg(loom)]
pub(crate) static LOOM_HAND_OVER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T> From<T> for Mutex<T> {
    fn from(v: T) -> Self {
        Mutex::new(v)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.try_lock() {
            Some(g) => f.debug_struct("Mutex").field("data", &&*g).finish(),
            None => f
                .debug_struct("Mutex")
                .field("data", &format_args!("<locked>"))
                .finish(),
        }
    }
}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// The mutex this guard locks (for `Condvar`).
    pub(crate) fn mutex(&self) -> &'a Mutex<T> {
        self.mutex
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.mutex.data.get() }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock, and `&mut self` is unique.
        unsafe { &mut *self.mutex.data.get() }
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.mutex.unlock();
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

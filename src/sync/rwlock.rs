//! `RwLock<T>`: many readers or one writer (Go's `sync.RWMutex`).
//!
//! Writers are not starved: once a writer waits, new readers queue behind it. When
//! a writer unlocks, the readers that queued meanwhile go first, all at once; the
//! next writer follows them. Blocked lockers park and are granted the lock by the
//! unlocker (hand-over), so a woken waiter never has to compete again.
//!
//! All bookkeeping is behind the wait lists' runtime lock (held for a few
//! instructions).

use super::guarded::{pop_all, wait_in, Guarded};
use crate::runtime::g::WaitReason;
use crate::runtime::waitq::WaitQueue;
use std::cell::UnsafeCell;
use std::fmt;
use std::ops::{Deref, DerefMut};

struct State {
    readers: usize,
    writer: bool,
    waiting_writers: usize,
    readq: WaitQueue<()>,
    writeq: WaitQueue<()>,
}

/// A reader-writer lock for goroutines.
///
/// ```
/// let l = goro::sync::RwLock::new(vec![1]);
/// {
///     let (a, b) = (l.read(), l.read()); // readers share
///     assert_eq!(a.len() + b.len(), 2);
/// }
/// l.write().push(2);
/// assert_eq!(*l.read(), [1, 2]);
/// ```
pub struct RwLock<T: ?Sized> {
    state: Guarded<State>,
    data: UnsafeCell<T>,
}

// SAFETY: as std's RwLock.
unsafe impl<T: ?Sized + Send> Send for RwLock<T> {}
// SAFETY: as std's RwLock: readers share &T across threads, hence T: Sync.
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLock<T> {}

/// Shared access; releases on drop.
pub struct RwLockReadGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
}

/// Exclusive access; releases on drop.
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
}

// SAFETY: as std's guards.
unsafe impl<T: ?Sized + Sync> Sync for RwLockReadGuard<'_, T> {}
// SAFETY: as std's guards.
unsafe impl<T: ?Sized + Sync> Sync for RwLockWriteGuard<'_, T> {}

impl<T> RwLock<T> {
    /// An unlocked lock holding `value`.
    pub const fn new(value: T) -> Self {
        RwLock {
            state: Guarded::new(State {
                readers: 0,
                writer: false,
                waiting_writers: 0,
                readq: WaitQueue::new(),
                writeq: WaitQueue::new(),
            }),
            data: UnsafeCell::new(value),
        }
    }

    /// The value, consuming the lock.
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Shared access, waiting while a writer holds or waits for the lock.
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        let mut st = self.state.lock();
        if !st.writer && st.waiting_writers == 0 {
            st.readers += 1;
        } else {
            // The unlocking writer counts us in before waking us.
            wait_in(st, WaitReason::SyncRWMutexRLock, None, false, |s| &mut s.readq);
        }
        RwLockReadGuard { lock: self }
    }

    /// Exclusive access, waiting for readers and other writers.
    pub fn write(&self) -> RwLockWriteGuard<'_, T> {
        let mut st = self.state.lock();
        if !st.writer && st.readers == 0 {
            st.writer = true;
        } else {
            st.waiting_writers += 1;
            // Whoever wakes us has made us the writer.
            wait_in(st, WaitReason::SyncRWMutexLock, None, false, |s| &mut s.writeq);
        }
        RwLockWriteGuard { lock: self }
    }

    /// Shared access if available now.
    pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        let mut st = self.state.lock();
        if st.writer || st.waiting_writers > 0 {
            return None;
        }
        st.readers += 1;
        Some(RwLockReadGuard { lock: self })
    }

    /// Exclusive access if available now.
    pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
        let mut st = self.state.lock();
        if st.writer || st.readers > 0 {
            return None;
        }
        st.writer = true;
        Some(RwLockWriteGuard { lock: self })
    }

    /// Mutable access without locking.
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    fn read_unlock(&self) {
        let mut st = self.state.lock();
        st.readers -= 1;
        if st.readers == 0 {
            if let Some(w) = st.writeq.pop_claimed() {
                st.waiting_writers -= 1;
                st.writer = true;
                let w = w.finish(true);
                drop(st);
                w.wake();
            }
        }
    }

    fn write_unlock(&self) {
        let mut st = self.state.lock();
        st.writer = false;
        let readers = pop_all(&mut st.readq, true);
        let wake = if !readers.is_empty() {
            st.readers += readers.len();
            readers
        } else if let Some(w) = st.writeq.pop_claimed() {
            st.waiting_writers -= 1;
            st.writer = true;
            vec![w.finish(true)]
        } else {
            Vec::new()
        };
        drop(st);
        wake.into_iter().for_each(|w| w.wake());
    }
}

impl<T: Default> Default for RwLock<T> {
    fn default() -> Self {
        RwLock::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.try_read() {
            Some(g) => f.debug_struct("RwLock").field("data", &&*g).finish(),
            None => f
                .debug_struct("RwLock")
                .field("data", &format_args!("<locked>"))
                .finish(),
        }
    }
}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: a read guard means no writer.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.read_unlock();
    }
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the write guard is exclusive.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the write guard is exclusive, and `&mut self` is unique.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.write_unlock();
    }
}

//! `RwLock<T>`: many readers or one writer (Go's `sync.RWMutex`).
//!
//! Writers are not starved: once a writer waits, new readers queue behind it. When
//! a writer unlocks, the readers that queued meanwhile go first, all at once; the
//! next writer follows them. Blocked lockers park and are granted the lock by the
//! unlocker (hand-over), so a woken waiter never has to compete again.
//!
//! All bookkeeping is behind the wait lists' runtime lock (held for a few
//! instructions).

use crate::runtime::wait::{const_unless_loom, pop_all, wait_in, Guarded, WaitQueue, WaitReason};
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

/// A reader-writer lock for goroutines (Go's `sync.RWMutex`), holding the data it
/// protects, as std's `RwLock<T>`: any number of readers, or one writer.
///
/// Writers are not starved: once a writer waits, new readers queue behind it.
/// When a writer unlocks, the readers that queued meanwhile all go first, then the
/// next writer. Waiting goroutines park (threads block), and a woken waiter is
/// handed the lock, so it never competes again. There is no poisoning, and the
/// lock is not reentrant: a goroutine that takes `read` twice while a writer
/// waits deadlocks, as in Go.
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

/// Shared access to an [`RwLock`]'s value, through `Deref`; made by
/// [`RwLock::read`] and [`RwLock::try_read`]. Dropping it releases the read lock.
///
/// ```
/// let l = goro::sync::RwLock::new(vec![1, 2, 3]);
/// let guard = l.read();
/// assert_eq!(guard.iter().sum::<i32>(), 6);
/// assert!(l.try_write().is_none());
/// drop(guard);
/// assert!(l.try_write().is_some());
/// ```
pub struct RwLockReadGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
}

/// Exclusive access to an [`RwLock`]'s value, through `Deref` and `DerefMut`;
/// made by [`RwLock::write`] and [`RwLock::try_write`]. Dropping it releases the
/// write lock.
///
/// ```
/// let l = goro::sync::RwLock::new(vec![1]);
/// let mut guard = l.write();
/// guard.push(2);
/// assert!(l.try_read().is_none());
/// drop(guard);
/// assert_eq!(*l.read(), [1, 2]);
/// ```
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
}

// SAFETY: as std's guards.
unsafe impl<T: ?Sized + Sync> Sync for RwLockReadGuard<'_, T> {}
// SAFETY: as std's guards.
unsafe impl<T: ?Sized + Sync> Sync for RwLockWriteGuard<'_, T> {}

impl<T> RwLock<T> {
    const_unless_loom! {
        /// An unlocked lock holding `value`. `const`, so it can initialise a `static`.
        ///
        /// ```
        /// static CONFIG: goro::sync::RwLock<Option<&str>> = goro::sync::RwLock::new(None);
        /// *CONFIG.write() = Some("on");
        /// assert_eq!(*CONFIG.read(), Some("on"));
        /// ```
        pub fn new(value: T) -> Self {
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
    }

    /// The value, consuming the lock.
    ///
    /// ```
    /// let l = goro::sync::RwLock::new(5);
    /// *l.write() += 1;
    /// assert_eq!(l.into_inner(), 6);
    /// ```
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Shared access (Go's `RLock`): returns a guard that releases it when
    /// dropped. Waits while a writer holds the lock or waits for it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let l = Arc::new(goro::sync::RwLock::new(String::from("shared")));
    /// let readers: Vec<_> = (0..4)
    ///     .map(|_| {
    ///         let l = l.clone();
    ///         goro::go!(move || l.read().len())
    ///     })
    ///     .collect();
    /// assert!(readers.into_iter().all(|h| h.join().unwrap() == 6));
    /// ```
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

    /// Exclusive access (Go's `Lock`): returns a guard that releases it when
    /// dropped. Waits until current readers and writers are done; new readers
    /// queue behind it meanwhile.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let l = Arc::new(goro::sync::RwLock::new(0));
    /// let r = l.read();
    /// let l2 = l.clone();
    /// let writer = goro::go!(move || *l2.write() = 1); // waits for `r`
    /// assert_eq!(*r, 0);
    /// drop(r);
    /// writer.join().unwrap();
    /// assert_eq!(*l.read(), 1);
    /// ```
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

    /// Shared access if it is available now (Go's `TryRLock`); never waits.
    /// `None` while a writer holds the lock or waits for it.
    ///
    /// ```
    /// let l = goro::sync::RwLock::new(1);
    /// let r = l.read();
    /// assert!(l.try_read().is_some()); // readers share
    /// drop(r);
    /// let w = l.write();
    /// assert!(l.try_read().is_none());
    /// # drop(w);
    /// ```
    pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        let mut st = self.state.lock();
        if st.writer || st.waiting_writers > 0 {
            return None;
        }
        st.readers += 1;
        Some(RwLockReadGuard { lock: self })
    }

    /// Exclusive access if it is available now (Go's `TryLock`); never waits.
    /// `None` while anyone holds the lock.
    ///
    /// ```
    /// let l = goro::sync::RwLock::new(1);
    /// let r = l.read();
    /// assert!(l.try_write().is_none());
    /// drop(r);
    /// *l.try_write().unwrap() = 2;
    /// assert_eq!(*l.read(), 2);
    /// ```
    pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
        let mut st = self.state.lock();
        if st.writer || st.readers > 0 {
            return None;
        }
        st.writer = true;
        Some(RwLockWriteGuard { lock: self })
    }

    /// Mutable access without locking: `&mut self` proves nobody else holds it.
    ///
    /// ```
    /// let mut l = goro::sync::RwLock::new(0);
    /// *l.get_mut() = 3;
    /// assert_eq!(*l.read(), 3);
    /// ```
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

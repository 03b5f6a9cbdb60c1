//! `Semaphore`: a counted permit pool (Go's `x/sync/semaphore` with weight 1).
//!
//! Waiters queue FIFO and a released permit is handed straight to the head waiter,
//! so a stream of newcomers cannot starve it.

use crate::runtime::wait::{const_unless_loom, wait_in, Guarded, WaitQueue, WaitReason};
use std::fmt;
use std::sync::Arc;

struct State {
    permits: usize,
    waiters: WaitQueue<()>,
}

/// A counting semaphore for goroutines: a pool of permits that bounds how many
/// goroutines do something at once. Go code uses a buffered channel or
/// `golang.org/x/sync/semaphore` (with weight 1) for this.
///
/// [`acquire`](Semaphore::acquire) returns a [`SemaphorePermit`] that gives the
/// permit back when dropped. Waiters queue first come, first served, and a
/// released permit is handed straight to the head waiter, so newcomers cannot
/// overtake it. Waiting parks the goroutine, or blocks the thread outside one.
///
/// ```
/// let sem = goro::sync::Semaphore::new(2);
/// let a = sem.acquire();
/// let _b = sem.acquire();
/// assert!(sem.try_acquire().is_none());
/// drop(a);
/// assert!(sem.try_acquire().is_some());
/// ```
pub struct Semaphore {
    state: Guarded<State>,
}

/// A permit of a [`Semaphore`], made by [`Semaphore::acquire`] and
/// [`Semaphore::try_acquire`]. Dropping it gives the permit back (to the
/// longest-waiting goroutine, if any).
///
/// ```
/// let sem = goro::sync::Semaphore::new(1);
/// {
///     let _permit = sem.acquire();
///     assert_eq!(sem.available_permits(), 0);
/// } // dropped here
/// assert_eq!(sem.available_permits(), 1);
/// ```
pub struct SemaphorePermit<'a> {
    sem: &'a Semaphore,
}

impl Semaphore {
    const_unless_loom! {
        /// A semaphore with `permits` permits. `const`, so it can initialise a
        /// `static`.
        ///
        /// ```
        /// use std::sync::atomic::{AtomicUsize, Ordering};
        /// use std::sync::Arc;
        ///
        /// // At most 2 of the 10 goroutines are inside at any time.
        /// static LIMIT: goro::sync::Semaphore = goro::sync::Semaphore::new(2);
        /// let inside = Arc::new(AtomicUsize::new(0));
        /// let hs: Vec<_> = (0..10)
        ///     .map(|_| {
        ///         let inside = inside.clone();
        ///         goro::go!(move || {
        ///             let _permit = LIMIT.acquire();
        ///             let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
        ///             goro::yield_now();
        ///             inside.fetch_sub(1, Ordering::SeqCst);
        ///             n
        ///         })
        ///     })
        ///     .collect();
        /// assert!(hs.into_iter().all(|h| h.join().unwrap() <= 2));
        /// ```
        pub fn new(permits: usize) -> Self {
            Semaphore {
                state: Guarded::new(State {
                    permits,
                    waiters: WaitQueue::new(),
                }),
            }
        }
    }

    /// Takes a permit, waiting (in FIFO order) for one if none is free. The permit
    /// goes back when the returned [`SemaphorePermit`] is dropped.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(goro::sync::Semaphore::new(1));
    /// let permit = sem.acquire();
    /// let s = sem.clone();
    /// let h = goro::go!(move || drop(s.acquire())); // parks until `permit` is dropped
    /// assert_eq!(sem.available_permits(), 0);
    /// drop(permit);
    /// h.join().unwrap();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn acquire(&self) -> SemaphorePermit<'_> {
        self.take();
        SemaphorePermit { sem: self }
    }

    /// Takes a permit of an `Arc`-shared semaphore, waiting as
    /// [`acquire`](Semaphore::acquire) does. The permit owns a reference to the
    /// semaphore, so it is `'static` and can move into a goroutine: Go's "acquire
    /// in the parent, release in the child".
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(goro::sync::Semaphore::new(2));
    /// let workers: Vec<_> = (0..6)
    ///     .map(|i| {
    ///         let permit = Arc::clone(&sem).acquire_owned(); // at most 2 running
    ///         goro::go!(move || {
    ///             let _permit = permit; // released when this goroutine ends
    ///             i * 2
    ///         })
    ///     })
    ///     .collect();
    /// assert_eq!(workers.into_iter().map(|h| h.join().unwrap()).sum::<i32>(), 30);
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    pub fn acquire_owned(self: Arc<Self>) -> OwnedSemaphorePermit {
        self.take();
        OwnedSemaphorePermit { sem: self }
    }

    /// Takes a permit, waiting for one if needed.
    fn take(&self) {
        let mut st = self.state.lock();
        if st.permits > 0 && st.waiters.is_empty() {
            st.permits -= 1;
        } else {
            // The releaser hands its permit to us before waking us.
            wait_in(st, WaitReason::Semacquire, None, false, |s| &mut s.waiters);
        }
    }

    /// Takes a permit if one is free now and nobody is queued for one; never
    /// waits.
    ///
    /// ```
    /// let sem = goro::sync::Semaphore::new(1);
    /// let p = sem.try_acquire().expect("one permit is free");
    /// assert!(sem.try_acquire().is_none());
    /// drop(p);
    /// assert!(sem.try_acquire().is_some());
    /// ```
    pub fn try_acquire(&self) -> Option<SemaphorePermit<'_>> {
        // Not `then_some`: a permit built eagerly and discarded would release
        // a permit never taken.
        if self.try_take() {
            Some(SemaphorePermit { sem: self })
        } else {
            None
        }
    }

    /// Takes a permit of an `Arc`-shared semaphore if one is free now and nobody
    /// is queued for one; never waits. The permit is `'static`, as
    /// [`acquire_owned`](Semaphore::acquire_owned)'s.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(goro::sync::Semaphore::new(1));
    /// let p = Arc::clone(&sem).try_acquire_owned().expect("one permit is free");
    /// assert!(Arc::clone(&sem).try_acquire_owned().is_none());
    /// goro::go!(move || drop(p)).join().unwrap();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn try_acquire_owned(self: Arc<Self>) -> Option<OwnedSemaphorePermit> {
        if self.try_take() {
            Some(OwnedSemaphorePermit { sem: self })
        } else {
            None
        }
    }

    /// Takes a permit if one is free and nobody waits.
    fn try_take(&self) -> bool {
        let mut st = self.state.lock();
        if st.permits > 0 && st.waiters.is_empty() {
            st.permits -= 1;
            return true;
        }
        false
    }

    /// The number of free permits right now (a snapshot: it may change as soon as
    /// it is read).
    ///
    /// ```
    /// let sem = goro::sync::Semaphore::new(3);
    /// let _a = sem.acquire();
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    pub fn available_permits(&self) -> usize {
        self.state.lock().permits
    }

    fn release(&self) {
        let mut st = self.state.lock();
        match st.waiters.pop_claimed() {
            Some(head) => {
                let w = head.finish(true);
                drop(st);
                w.wake();
            }
            None => st.permits += 1,
        }
    }
}

impl Drop for SemaphorePermit<'_> {
    fn drop(&mut self) {
        self.sem.release();
    }
}

/// A permit of an `Arc`-shared [`Semaphore`], from
/// [`acquire_owned`](Semaphore::acquire_owned) or
/// [`try_acquire_owned`](Semaphore::try_acquire_owned): `'static` and `Send`, it
/// returns its permit when dropped, on whatever goroutine or thread that is.
pub struct OwnedSemaphorePermit {
    sem: Arc<Semaphore>,
}

impl OwnedSemaphorePermit {
    /// The semaphore this permit belongs to.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(goro::sync::Semaphore::new(1));
    /// let p = Arc::clone(&sem).acquire_owned();
    /// assert!(Arc::ptr_eq(p.semaphore(), &sem));
    /// ```
    pub fn semaphore(&self) -> &Arc<Semaphore> {
        &self.sem
    }
}

impl Drop for OwnedSemaphorePermit {
    fn drop(&mut self) {
        self.sem.release();
    }
}

impl fmt::Debug for OwnedSemaphorePermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OwnedSemaphorePermit")
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("available_permits", &self.available_permits())
            .finish()
    }
}

impl fmt::Debug for SemaphorePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SemaphorePermit")
    }
}

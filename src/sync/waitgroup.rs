//! `WaitGroup`: wait for a collection of goroutines to finish (Go's
//! `sync.WaitGroup`). Clones share the group.
//!
//! The counter and the waiters are behind one runtime lock. When the counter
//! reaches zero every waiter is released; the group can then be reused.

use crate::runtime::wait::{pop_all, wait_in, Guarded, WaitQueue, WaitReason};
use std::fmt;
use std::sync::Arc;

struct State {
    count: usize,
    waiters: WaitQueue<()>,
}

/// Waits for a set of goroutines to finish (Go's `sync.WaitGroup`).
///
/// [`add`](WaitGroup::add) raises a counter, [`done`](WaitGroup::done) lowers it,
/// and [`wait`](WaitGroup::wait) waits until it is zero. Clones share one group,
/// so each goroutine can own its clone; once the counter reaches zero the group
/// can be used again.
///
/// [`go`](WaitGroup::go) (Go 1.25's `WaitGroup.Go`) is the way to start the
/// goroutines: it counts the goroutine before it starts and uncounts it when it
/// ends, also by a panic, which a `done()` at the end of the closure would
/// miss (and `wait` would then hang). [`guard`](WaitGroup::guard) does the same
/// for work that is not one goroutine's closure.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
///
/// let wg = goro::sync::WaitGroup::new();
/// let finished = Arc::new(AtomicUsize::new(0));
/// for _ in 0..4 {
///     let finished = finished.clone();
///     wg.go(move || {
///         finished.fetch_add(1, Ordering::SeqCst);
///     });
/// }
/// wg.go(|| panic!("a panicking goroutine still counts as done"));
/// wg.wait();
/// assert_eq!(finished.load(Ordering::SeqCst), 4);
/// ```
#[derive(Clone)]
pub struct WaitGroup {
    inner: Arc<Guarded<State>>,
}

impl WaitGroup {
    /// A group with a zero counter: `wait` returns at once.
    ///
    /// ```
    /// let wg = goro::sync::WaitGroup::new();
    /// wg.wait(); // nothing to wait for
    /// ```
    pub fn new() -> Self {
        WaitGroup {
            inner: Arc::new(Guarded::new(State {
                count: 0,
                waiters: WaitQueue::new(),
            })),
        }
    }

    /// Adds `n` to the counter (Go's `Add(n)` with `n >= 0`; to subtract, call
    /// [`done`](WaitGroup::done)).
    ///
    /// ```
    /// let wg = goro::sync::WaitGroup::new();
    /// wg.add(3);
    /// for _ in 0..3 {
    ///     let wg = wg.clone();
    ///     goro::go!(move || wg.done());
    /// }
    /// wg.wait();
    /// ```
    ///
    /// # Panics
    /// If the counter would overflow `usize`.
    pub fn add(&self, n: usize) {
        let mut st = self.inner.lock();
        st.count = st.count.checked_add(n).expect("sync: WaitGroup counter overflow");
    }

    /// Starts `f` in a new goroutine counted by this group (Go 1.25's
    /// `WaitGroup.Go`): `add(1)` now, `done()` when `f` returns or panics. The
    /// goroutine's result and panic are not returned to anyone (its panic is
    /// printed, as any detached goroutine's is). `f` must keep the thread-local
    /// rule, spelled out next.
    ///
    /// `f` runs as a goroutine, so the thread-local rule of [`go!`](crate::go!)
    /// and [`spawn`](fn@crate::spawn) applies to it, unchecked by the types: `f`
    /// uses no thread-local except inside [`blocking`](fn@crate::blocking), or after
    /// [`lock_os_thread`](crate::runtime::lock_os_thread) wired it before its first
    /// park, while it stays wired; [`local!`](crate::local!) is the per-goroutine
    /// storage to use instead. `wait` returns once every such closure has
    /// returned; their goroutines' `local!` values may still be being dropped.
    ///
    /// ```
    /// let wg = goro::sync::WaitGroup::new();
    /// let (tx, rx) = goro::chan::bounded(3);
    /// for i in 0..3 {
    ///     let tx = tx.clone();
    ///     wg.go(move || tx.send(i).unwrap());
    /// }
    /// wg.wait();
    /// drop(tx);
    /// assert_eq!(rx.iter().sum::<i32>(), 3);
    /// ```
    #[track_caller]
    pub fn go<F>(&self, f: F)
    where
        F: FnOnce() + Send + 'static,
    {
        let guard = self.guard();
        drop(crate::spawn::go(move || {
            let _counted = guard;
            f();
        }));
    }

    /// Counts one unit of work now (`add(1)`) and returns a guard that marks it
    /// done when dropped, also while a panic unwinds: the panic-safe form of
    /// `add(1)` ... `done()`.
    ///
    /// ```
    /// let wg = goro::sync::WaitGroup::new();
    /// let guard = wg.guard();
    /// let worker = goro::go!(move || {
    ///     let _guard = guard; // done() when this goroutine ends, however it ends
    ///     panic!("boom");
    /// });
    /// wg.wait();
    /// assert!(worker.join().is_err());
    /// ```
    pub fn guard(&self) -> WaitGroupGuard {
        self.add(1);
        WaitGroupGuard { wg: self.clone() }
    }

    /// Subtracts one from the counter (Go's `Done`); when it reaches zero, every
    /// waiter is released. Never blocks.
    ///
    /// ```
    /// let wg = goro::sync::WaitGroup::new();
    /// wg.add(1);
    /// wg.done();
    /// wg.wait(); // the counter is zero again
    /// ```
    ///
    /// # Panics
    /// With `sync: negative WaitGroup counter` if the counter is already zero, as
    /// Go does.
    pub fn done(&self) {
        let mut st = self.inner.lock();
        if st.count == 0 {
            drop(st);
            panic!("sync: negative WaitGroup counter");
        }
        st.count -= 1;
        if st.count == 0 {
            let all = pop_all(&mut st.waiters, true);
            drop(st);
            all.into_iter().for_each(|w| w.wake());
        }
    }

    /// Waits until the counter is zero (Go's `Wait`): parks the goroutine, or
    /// blocks the thread outside one. Returns at once if it is zero already. Any
    /// number of goroutines and threads may wait.
    ///
    /// ```
    /// let wg = goro::sync::WaitGroup::new();
    /// wg.add(1);
    /// let w = wg.clone();
    /// let waiter = goro::go!(move || w.wait()); // parks
    /// assert!(!waiter.is_finished());
    /// wg.done();
    /// waiter.join().unwrap();
    /// ```
    pub fn wait(&self) {
        let st = self.inner.lock();
        if st.count == 0 {
            return;
        }
        wait_in(st, WaitReason::SyncWaitGroupWait, None, false, |s| &mut s.waiters);
    }
}

/// One unit of a [`WaitGroup`]'s work, from [`WaitGroup::guard`]: dropping it
/// calls [`done`](WaitGroup::done), also during a panic's unwinding.
#[must_use = "dropping the guard at once marks the work done at once"]
pub struct WaitGroupGuard {
    wg: WaitGroup,
}

impl Drop for WaitGroupGuard {
    fn drop(&mut self) {
        self.wg.done();
    }
}

impl fmt::Debug for WaitGroupGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitGroupGuard").field("wg", &self.wg).finish()
    }
}

impl Default for WaitGroup {
    fn default() -> Self {
        WaitGroup::new()
    }
}

impl fmt::Debug for WaitGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitGroup")
            .field("count", &self.inner.lock().count)
            .finish()
    }
}

//! `WaitGroup`: wait for a collection of goroutines to finish (Go's
//! `sync.WaitGroup`). Clones share the group.
//!
//! The counter and the waiters are behind one runtime lock. When the counter
//! reaches zero every waiter is released; the group can then be reused.

use super::guarded::{pop_all, wait_in, Guarded};
use crate::runtime::g::WaitReason;
use crate::runtime::waitq::WaitQueue;
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
/// can be used again. As in Go, call `add` before starting the goroutine, not in
/// it, so that `wait` cannot see zero too early.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
///
/// let wg = goro::sync::WaitGroup::new();
/// let finished = Arc::new(AtomicUsize::new(0));
/// for _ in 0..4 {
///     wg.add(1);
///     let (wg, finished) = (wg.clone(), finished.clone());
///     goro::go!(move || {
///         finished.fetch_add(1, Ordering::SeqCst);
///         wg.done();
///     });
/// }
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

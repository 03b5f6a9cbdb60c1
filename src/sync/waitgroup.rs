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

/// Waits for a set of goroutines.
///
/// ```
/// let wg = goro::sync::WaitGroup::new();
/// for _ in 0..4 {
///     wg.add(1);
///     let wg = wg.clone();
///     goro::go!(move || wg.done());
/// }
/// wg.wait();
/// ```
#[derive(Clone)]
pub struct WaitGroup {
    inner: Arc<Guarded<State>>,
}

impl WaitGroup {
    /// A group with a zero counter.
    pub fn new() -> Self {
        WaitGroup {
            inner: Arc::new(Guarded::new(State {
                count: 0,
                waiters: WaitQueue::new(),
            })),
        }
    }

    /// Adds `n` to the counter.
    pub fn add(&self, n: usize) {
        let mut st = self.inner.lock();
        st.count = st.count.checked_add(n).expect("sync: WaitGroup counter overflow");
    }

    /// Subtracts one; at zero, releases every waiter.
    ///
    /// # Panics
    /// "sync: negative WaitGroup counter" if the counter is already zero (Go's rule).
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

    /// Waits until the counter is zero.
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

//! `Semaphore`: a counted permit pool (Go's `x/sync/semaphore` with weight 1).
//!
//! Waiters queue FIFO and a released permit is handed straight to the head waiter,
//! so a stream of newcomers cannot starve it.

use super::guarded::{wait_in, Guarded};
use crate::runtime::g::WaitReason;
use crate::runtime::waitq::WaitQueue;
use std::fmt;

struct State {
    permits: usize,
    waiters: WaitQueue<()>,
}

/// A counting semaphore for goroutines.
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

/// One permit; released when dropped.
pub struct SemaphorePermit<'a> {
    sem: &'a Semaphore,
}

impl Semaphore {
    /// A semaphore with `permits` permits.
    pub const fn new(permits: usize) -> Self {
        Semaphore {
            state: Guarded::new(State {
                permits,
                waiters: WaitQueue::new(),
            }),
        }
    }

    /// Takes a permit, waiting for one if none is free.
    pub fn acquire(&self) -> SemaphorePermit<'_> {
        let mut st = self.state.lock();
        if st.permits > 0 && st.waiters.is_empty() {
            st.permits -= 1;
        } else {
            // The releaser hands its permit to us before waking us.
            wait_in(st, WaitReason::Semacquire, None, false, |s| &mut s.waiters);
        }
        SemaphorePermit { sem: self }
    }

    /// Takes a permit if one is free now (and nobody queues ahead).
    pub fn try_acquire(&self) -> Option<SemaphorePermit<'_>> {
        let mut st = self.state.lock();
        if st.permits > 0 && st.waiters.is_empty() {
            st.permits -= 1;
            return Some(SemaphorePermit { sem: self });
        }
        None
    }

    /// Free permits right now.
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

//! `Once`: run a function exactly once (Go's `sync.Once`).
//!
//! Callers that arrive while the function runs park until it is done. A function
//! that panics still counts as done (Go's rule); the panic goes on to its caller.

use super::guarded::{pop_all, wait_in, Guarded};
use crate::runtime::g::WaitReason;
use crate::runtime::waitq::WaitQueue;
use std::fmt;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

struct State {
    running: bool,
    waiters: WaitQueue<()>,
}

/// Runs a function once, however many goroutines call it.
///
/// ```
/// let once = goro::sync::Once::new();
/// let mut n = 0;
/// once.call_once(|| n += 1);
/// once.call_once(|| n += 1);
/// assert_eq!(n, 1);
/// assert!(once.is_completed());
/// ```
pub struct Once {
    done: AtomicBool,
    state: Guarded<State>,
}

impl Once {
    /// A `Once` that has not run.
    pub const fn new() -> Self {
        Once {
            done: AtomicBool::new(false),
            state: Guarded::new(State {
                running: false,
                waiters: WaitQueue::new(),
            }),
        }
    }

    /// Runs `f` if no call has run it yet; otherwise waits until that run is over.
    pub fn call_once<F: FnOnce()>(&self, f: F) {
        if self.is_completed() {
            return;
        }
        let mut st = self.state.lock();
        if self.done.load(Ordering::Acquire) {
            return;
        }
        if st.running {
            wait_in(st, WaitReason::SyncOnce, None, false, |s| &mut s.waiters);
            return;
        }
        st.running = true;
        drop(st);
        let result = catch_unwind(AssertUnwindSafe(f));
        let mut st = self.state.lock();
        self.done.store(true, Ordering::Release);
        st.running = false;
        let all = pop_all(&mut st.waiters, true);
        drop(st);
        all.into_iter().for_each(|w| w.wake());
        if let Err(panic) = result {
            resume_unwind(panic);
        }
    }

    /// True once a call has finished (returned or panicked).
    pub fn is_completed(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }
}

impl Default for Once {
    fn default() -> Self {
        Once::new()
    }
}

impl fmt::Debug for Once {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Once").field("completed", &self.is_completed()).finish()
    }
}

//! `Once`: run a function exactly once (Go's `sync.Once`).
//!
//! Callers that arrive while the function runs park until it is done. A function
//! that panics still counts as done (Go's rule); the panic goes on to its caller.

use crate::runtime::wait::{const_unless_loom, pop_all, wait_in, AtomicBool, Guarded, Ordering, WaitQueue, WaitReason};
use std::fmt;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

struct State {
    running: bool,
    waiters: WaitQueue<()>,
}

/// Runs a function once, however many goroutines call it (Go's `sync.Once`).
///
/// The first [`call_once`](Once::call_once) runs its function; callers that
/// arrive while it runs wait for it to finish (parking, or blocking outside a
/// goroutine); later calls return at once. A function that panics still counts as
/// done, as in Go: the panic reaches its caller, and the `Once` is not retried.
/// `Once::new` is `const`, so a `Once` can be a `static`.
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
    const_unless_loom! {
        /// A `Once` that has not run. `const`, so it can initialise a `static`.
        ///
        /// ```
        /// static INIT: goro::sync::Once = goro::sync::Once::new();
        /// assert!(!INIT.is_completed());
        /// ```
        pub fn new() -> Self {
            Once {
                done: AtomicBool::new(false),
                state: Guarded::new(State {
                    running: false,
                    waiters: WaitQueue::new(),
                }),
            }
        }
    }

    /// Runs `f` if no call has run a function yet (Go's `Once.Do`). If another
    /// call's function is running, waits until it has finished; once it has,
    /// returns at once without running `f`.
    ///
    /// ```
    /// use goro::sync::Once;
    /// use std::sync::atomic::{AtomicU32, Ordering};
    ///
    /// static ONCE: Once = Once::new();
    /// static RUNS: AtomicU32 = AtomicU32::new(0);
    /// let hs: Vec<_> = (0..8)
    ///     .map(|_| goro::go!(|| ONCE.call_once(|| {
    ///         RUNS.fetch_add(1, Ordering::SeqCst);
    ///     })))
    ///     .collect();
    /// hs.into_iter().for_each(|h| h.join().unwrap());
    /// assert_eq!(RUNS.load(Ordering::SeqCst), 1);
    /// ```
    ///
    /// # Panics
    /// If `f` panics, the panic propagates to this caller, and the `Once` counts
    /// as completed: no later call runs a function.
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

    /// True once a call's function has finished, by returning or by panicking.
    ///
    /// ```
    /// let once = goro::sync::Once::new();
    /// let run = std::panic::AssertUnwindSafe(|| once.call_once(|| panic!("init failed")));
    /// assert!(std::panic::catch_unwind(run).is_err());
    /// assert!(once.is_completed()); // Go's rule: a panicking function counts as done
    /// ```
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

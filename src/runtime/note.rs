//! `Note`: a one-shot wake-up flag an idle M sleeps on (Go's `note`).
//!
//! One thread sleeps ([`Note::sleep`]), any thread wakes ([`Note::wake`]). A wake
//! that comes before the sleep is remembered, so the order of the two never loses
//! a wake-up; [`Note::sleep`] consumes it. Several wakes before one sleep count
//! once.
//!
//! Orderings: `wake` stores the flag with `Release` (via `swap`), `sleep` takes it
//! with `Acquire`: whatever the waker wrote before waking (an M's `nextp`, say) is
//! visible to the sleeper after it returns.
//!
//! The normal build parks on a Linux futex; under loom the same protocol runs on
//! loom's `Mutex` + `Condvar` so models can check it.

#[cfg(not(loom))]
pub(crate) use futex_note::Note;
#[cfg(loom)]
pub(crate) use loom_note::Note;

#[cfg(not(loom))]
mod futex_note {
    use std::sync::atomic::{AtomicU32, Ordering};

    const EMPTY: u32 = 0;
    const NOTIFIED: u32 = 1;

    /// A one-shot wake-up flag; see the module docs.
    pub(crate) struct Note {
        state: AtomicU32,
    }

    impl Note {
        pub(crate) const fn new() -> Self {
            Note {
                state: AtomicU32::new(EMPTY),
            }
        }

        /// Wakes the sleeper, or makes its next `sleep` return at once.
        pub(crate) fn wake(&self) {
            if self.state.swap(NOTIFIED, Ordering::Release) == EMPTY {
                crate::runtime::futex::wake_one(&self.state);
            }
        }

        /// Blocks until woken; consumes the wake-up.
        pub(crate) fn sleep(&self) {
            while self.state.swap(EMPTY, Ordering::Acquire) != NOTIFIED {
                crate::runtime::futex::wait(&self.state, EMPTY, None);
            }
        }

        /// Blocks until woken or `timeout` passed. Returns whether it was woken
        /// (and consumed the wake-up).
        pub(crate) fn sleep_timeout(&self, timeout: std::time::Duration) -> bool {
            let deadline = std::time::Instant::now() + timeout;
            loop {
                if self.state.swap(EMPTY, Ordering::Acquire) == NOTIFIED {
                    return true;
                }
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    return false;
                }
                crate::runtime::futex::wait(&self.state, EMPTY, Some(left));
            }
        }
    }
}

#[cfg(loom)]
mod loom_note {
    use crate::runtime::sync_prims::{Condvar, Mutex};

    /// A one-shot wake-up flag; see the module docs.
    pub(crate) struct Note {
        notified: Mutex<bool>,
        cv: Condvar,
    }

    impl Note {
        pub(crate) fn new() -> Self {
            Note {
                notified: Mutex::new(false),
                cv: Condvar::new(),
            }
        }

        pub(crate) fn wake(&self) {
            *self.notified.lock().unwrap() = true;
            self.cv.notify_one();
        }

        pub(crate) fn sleep(&self) {
            let mut n = self.notified.lock().unwrap();
            while !*n {
                n = self.cv.wait(n).unwrap();
            }
            *n = false;
        }

        /// Models see no time: a timed sleep just consumes a pending wake-up.
        pub(crate) fn sleep_timeout(&self, _timeout: std::time::Duration) -> bool {
            std::mem::replace(&mut *self.notified.lock().unwrap(), false)
        }
    }
}

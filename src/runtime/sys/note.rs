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
//! It parks on a Linux futex; under loom, on loom's model of the futex (see
//! `futex.rs`), so the models check this very code.

use crate::runtime::sys::futex;
use crate::runtime::sys::sync_prims::{const_unless_loom, AtomicU32, Ordering};

const EMPTY: u32 = 0;
const NOTIFIED: u32 = 1;

/// A one-shot wake-up flag; see the module docs.
pub(crate) struct Note {
    state: AtomicU32,
}

impl Note {
    const_unless_loom! {
        pub(crate) fn new() -> Self {
            Note {
                state: AtomicU32::new(EMPTY),
            }
        }
    }

    /// Wakes the sleeper, or makes its next `sleep` return at once.
    pub(crate) fn wake(&self) {
        if self.state.swap(NOTIFIED, Ordering::Release) == EMPTY {
            futex::wake_one(&self.state);
        }
    }

    /// Blocks until woken; consumes the wake-up.
    pub(crate) fn sleep(&self) {
        while self.state.swap(EMPTY, Ordering::Acquire) != NOTIFIED {
            futex::wait(&self.state, EMPTY, None);
        }
    }

    /// Under loom the timeout may always pass first, so it passes at once: the
    /// sleep only consumes a pending wake-up (and time never steers the model).
    #[cfg(loom)]
    pub(crate) fn sleep_timeout(&self, _timeout: std::time::Duration) -> bool {
        self.state.swap(EMPTY, Ordering::Acquire) == NOTIFIED
    }

    /// Blocks until woken or `timeout` passed. Returns whether it was woken
    /// (and consumed the wake-up).
    #[cfg(not(loom))]
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
            futex::wait(&self.state, EMPTY, Some(left));
        }
    }
}

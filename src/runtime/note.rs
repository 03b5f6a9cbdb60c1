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
    use std::time::Duration;

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
                futex_wake(&self.state);
            }
        }

        /// Blocks until woken; consumes the wake-up.
        pub(crate) fn sleep(&self) {
            while self.state.swap(EMPTY, Ordering::Acquire) != NOTIFIED {
                futex_wait(&self.state, EMPTY, None);
            }
        }
    }

    /// Sleeps while `*word == expected` (spurious returns are fine: callers loop).
    fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
        let ts = timeout.map(|d| libc::timespec {
            tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        });
        let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `word` is a live, aligned u32 for the duration of the call; the
        // timespec (if any) lives on this stack frame. FUTEX_WAIT only reads them.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                expected,
                ts_ptr,
            );
        }
    }

    fn futex_wake(word: &AtomicU32) {
        // SAFETY: `word` is a live, aligned u32; FUTEX_WAKE does not access memory
        // beyond using its address as a key.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                1,
            );
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
    }
}

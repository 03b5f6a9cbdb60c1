//! Linux futex wait/wake on an `AtomicU32`: what `Note` and `RawMutex` sleep on.
//! Both are system calls: a trace's clock read taken before one dates nothing
//! after it (`trace_clock::stale`).
//!
//! Under loom the same two calls run on a model of the kernel's futex table: a
//! waiter checks the word and queues itself under the table's lock (the kernel's
//! hash-bucket lock), and a waker dequeues under it, so "the value changed before
//! I slept" and "nobody woke me" are told apart exactly as in the kernel. A wake
//! that the code forgets is then a deadlock loom reports, not a missed test.

#[cfg(not(loom))]
pub(crate) use linux::{wait, wake_one};
#[cfg(loom)]
pub(crate) use model::{wait, wake_one};

#[cfg(not(loom))]
mod linux {
    use std::sync::atomic::AtomicU32;
    use std::time::Duration;

    /// Sleeps while `*word == expected`, at most `timeout`. Spurious returns happen;
    /// callers loop on their own condition.
    pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
        crate::runtime::sys::trace_clock::stale();
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

    /// Wakes one thread sleeping on `word`.
    pub(crate) fn wake_one(word: &AtomicU32) {
        crate::runtime::sys::trace_clock::stale();
        // SAFETY: `word` is a live, aligned u32; FUTEX_WAKE only uses its address.
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
mod model {
    use crate::runtime::sys::sync_prims::{lot, AtomicU32, Ordering};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::sync::Mutex;
    use std::time::Duration;

    /// The futex table: the word's address and a ticket naming one sleep. Only
    /// touched under the parking lot's lock, which plays the kernel's bucket lock.
    static TABLE: Mutex<Vec<(usize, u64)>> = Mutex::new(Vec::new());
    static TICKETS: AtomicU64 = AtomicU64::new(0);

    fn addr(word: &AtomicU32) -> usize {
        word as *const AtomicU32 as usize
    }

    fn table() -> std::sync::MutexGuard<'static, Vec<(usize, u64)>> {
        TABLE.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps while `*word == expected` until a [`wake_one`] on `word` takes the
    /// sleeper out of the table. Nothing waits with a timeout under loom
    /// (`Note::sleep_timeout` does not sleep there).
    pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
        assert!(timeout.is_none(), "no timed futex waits under loom");
        let mut ticket = None;
        lot::wait_until(|| match ticket {
            None if word.load(Ordering::SeqCst) != expected => true,
            None => {
                let t = TICKETS.fetch_add(1, Relaxed);
                table().push((addr(word), t));
                ticket = Some(t);
                false
            }
            Some(t) => !table().iter().any(|s| s.1 == t),
        });
    }

    /// Wakes the oldest thread sleeping on `word`, if any.
    pub(crate) fn wake_one(word: &AtomicU32) {
        lot::notify(|| {
            let mut table = table();
            if let Some(i) = table.iter().position(|s| s.0 == addr(word)) {
                table.remove(i);
            }
        });
    }
}

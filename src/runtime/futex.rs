//! Linux futex wait/wake on an `AtomicU32`: what `Note` and `RawMutex` sleep on.

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Sleeps while `*word == expected`, at most `timeout`. Spurious returns happen;
/// callers loop on their own condition.
pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
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

//! The signal a goroutine dump sends to an M for its running goroutine's
//! frames (`monitor/running.rs` installs its handler): which one is in use,
//! and unblocking it on a runtime thread as the thread starts. Written once
//! at start-up (`Release`), read by any thread (`Acquire`).

use std::sync::atomic::{AtomicI32, Ordering};

/// The signal in use, 0 before it is installed or when switched off.
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Records the signal whose handler was just installed.
pub(crate) fn set(sig: i32) {
    SIGNAL.store(sig, Ordering::Release);
}

/// The signal in use, 0 if none.
pub(crate) fn get() -> i32 {
    SIGNAL.load(Ordering::Acquire)
}

/// Unblocks the dump signal on this thread: a runtime thread inherits the
/// signal mask of whatever thread made it, and a program may block every
/// signal on its own threads (to `sigwait` on one), as Go's Ms do for theirs.
pub(crate) fn unblock_here() {
    let sig = get();
    if sig == 0 {
        return;
    }
    // SAFETY: a sigset on the stack, emptied, with one valid signal added.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}

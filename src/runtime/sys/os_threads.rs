//! The OS threads the runtime owns (Ms, sysmon, the template thread, the
//! reporter), by kernel thread id. The deadlock check needs to tell them from the
//! program's own threads: each registers when it starts and unregisters when it
//! exits ([`register`]'s guard). Registration is once per thread, off every hot
//! path. A thread exists before it registers, so a check may meanwhile see an
//! unknown thread and find nothing: a thread that will not idle as an M pokes
//! the check after registering (`sched::observers::poke`).

use std::sync::Mutex;

static TIDS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Unregisters the thread when dropped (at its exit).
pub(crate) struct Registered(i32);

impl Drop for Registered {
    fn drop(&mut self) {
        let mut tids = TIDS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = tids.iter().position(|&t| t == self.0) {
            tids.swap_remove(i);
        }
    }
}

/// Registers the calling thread as one of the runtime's.
#[must_use]
pub(crate) fn register() -> Registered {
    // SAFETY: gettid(2) has no preconditions.
    let tid = unsafe { libc::gettid() };
    TIDS.lock().unwrap_or_else(|e| e.into_inner()).push(tid);
    Registered(tid)
}

/// The runtime's threads now.
pub(crate) fn all() -> Vec<i32> {
    TIDS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

//! The template thread (Go's `templateThread`): creates the OS threads of new Ms
//! for Ms wired to a G by `lock_os_thread`.
//!
//! A new thread starts as a copy of its creator's per-thread state: the working
//! directory and root after `unshare(CLONE_FS)`, namespaces entered with `setns`,
//! the signal mask. A wired G may have changed those on purpose, for itself only,
//! so its M never creates threads itself (a `wakep` from it would otherwise clone
//! the change into a new M, and every G run there would see it). It queues the
//! request here instead. The template thread is started by the first
//! `lock_os_thread`, before that G could change its thread, so it is clean, and
//! it does nothing else.
//!
//! Threads: any M queues under `REQUESTS`' lock and notifies `READY`; only the
//! template thread pops. The request's M record is already listed (traces read
//! it), but only through atomics; nothing else starts or runs it, so handing it
//! over through the lock is all the synchronisation needed.

use crate::runtime::proc::m::{spawn_thread, M};
use std::sync::{Condvar, Mutex, Once};

/// A new M to start, holding P `p`.
struct Request {
    m: &'static M,
    p: usize,
    spinning: bool,
}

static REQUESTS: Mutex<Vec<Request>> = Mutex::new(Vec::new());
static READY: Condvar = Condvar::new();
static STARTED: Once = Once::new();

/// Starts the template thread if it is not running yet. Call it from a thread
/// whose state every M may share.
pub(crate) fn start() {
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new().name("goro-template".into()).spawn(serve);
        if let Err(e) = spawned {
            crate::runtime::sys::fatal::die_now(&format!("fatal error: goro: cannot start the template thread: {e}\n"));
        }
    });
}

/// Has the template thread start M `m`'s thread, holding P `p`. It runs since
/// this caller's G locked its thread ([`start`]).
pub(crate) fn spawn_via_template(m: &'static M, p: usize, spinning: bool) {
    debug_assert!(STARTED.is_completed(), "a wired M before the template thread started");
    REQUESTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Request { m, p, spinning });
    READY.notify_one();
}

/// The template thread's loop.
fn serve() {
    let _runtime_thread = crate::runtime::sys::os_threads::register();
    crate::runtime::sys::dump_signal::unblock_here();
    // A deadlock check that ran while this thread was not yet registered saw a
    // thread it did not know, and found nothing: look again.
    crate::runtime::proc::observers::poke();
    let mut requests = REQUESTS.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        while let Some(r) = requests.pop() {
            drop(requests);
            spawn_thread(r.m, r.p, r.spinning);
            requests = REQUESTS.lock().unwrap_or_else(|e| e.into_inner());
        }
        requests = READY.wait(requests).unwrap_or_else(|e| e.into_inner());
    }
}

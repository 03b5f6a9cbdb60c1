//! The plain threads that spawned goroutines, for a dump's `created by thread
//! "main" at ...` line. A thread gets a token (an index into the name list) on
//! its first spawn; a spawn then stores the token, not a copy of the name. The
//! list holds one entry per thread that ever spawned, kept for the process's
//! life (a G may outlive the thread that made it).

use crate::runtime::task::g::CREATOR_THREAD_BIT;
use std::cell::Cell;
use std::sync::Mutex;

static NAMES: Mutex<Vec<String>> = Mutex::new(Vec::new());

thread_local! {
    static TOKEN: Cell<u64> = const { Cell::new(u64::MAX) };
}

/// The calling plain thread's creator word (token | [`CREATOR_THREAD_BIT`]).
/// Only for plain threads, which never migrate; never inlined all the same, so
/// no caller's code holds the thread-local's address.
#[inline(never)]
pub(crate) fn this_thread() -> u64 {
    TOKEN.with(|t| {
        if t.get() == u64::MAX {
            let current = std::thread::current();
            let name = current
                .name()
                .map_or_else(|| format!("{:?}", current.id()), str::to_owned);
            let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
            names.push(name);
            t.set((names.len() - 1) as u64 | CREATOR_THREAD_BIT);
        }
        t.get()
    })
}

/// The name of the thread behind a creator word made by [`this_thread`].
pub(crate) fn thread_name(creator: u64) -> String {
    let i = (creator & !CREATOR_THREAD_BIT) as usize;
    NAMES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(i)
        .cloned()
        .unwrap_or_else(|| "?".to_string())
}

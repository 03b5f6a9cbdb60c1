//! Plain OS threads waiting in goro primitives: the registry a goroutine dump
//! lists as `thread "name" [reason]:` entries and the deadlock check counts.
//!
//! A thread registers for the length of one wait ([`register`], undone when the
//! returned guard drops) and answers a dump's request for its frames while it
//! waits ([`Registered::answer`]): the dump sets the request and unparks it; the
//! thread captures its own stack, stores it and parks on. Waits are the slow path
//! of a plain thread (a futex sleep), so a lock per registration costs nothing
//! that matters.

// Under loom, plain threads wait without the registry (`wait/park.rs`).
#![cfg_attr(loom, allow(dead_code))]

use crate::runtime::proc::observers;
use crate::runtime::proc::waiter::ThreadWaiter;
use crate::runtime::sys::frames::{capture, Captured};
use crate::runtime::task::ids::WaitReason;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Thread;
use std::time::Instant;

/// One waiting thread.
pub(crate) struct Entry {
    pub(crate) tid: i32,
    pub(crate) thread: Thread,
    pub(crate) reason: WaitReason,
    pub(crate) since: Instant,
    /// The wait ends by itself at a deadline.
    pub(crate) timed: bool,
    /// The wait's own record: a thread woken but not yet run is not asleep.
    waiter: Arc<ThreadWaiter>,
    /// A dump asks for the thread's frames.
    wanted: AtomicBool,
    frames: Mutex<Option<Captured>>,
}

static WAITING: Mutex<Vec<Arc<Entry>>> = Mutex::new(Vec::new());
/// Bumped by every registration and its end: a deadlock check's second look
/// compares it.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Unregisters a wait when dropped.
pub(crate) struct Registered(Arc<Entry>);

impl Drop for Registered {
    fn drop(&mut self) {
        let mut waiting = WAITING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = waiting.iter().position(|e| Arc::ptr_eq(e, &self.0)) {
            waiting.swap_remove(i);
        }
        GENERATION.fetch_add(1, Ordering::Relaxed);
        if !self.0.timed {
            observers::untimed_thread_wait(false);
        }
    }
}

impl Registered {
    /// Answers a dump's request for this thread's frames, if one is pending.
    /// Call after each wake-up of the wait.
    pub(crate) fn answer(&self) {
        if self.0.wanted.swap(false, Ordering::Acquire) {
            let frames = capture();
            *self.0.frames.lock().unwrap_or_else(|e| e.into_inner()) = Some(frames);
        }
    }
}

/// Registers the calling plain thread's wait on `waiter`.
pub(crate) fn register(waiter: Arc<ThreadWaiter>, reason: WaitReason, timed: bool) -> Registered {
    let entry = Arc::new(Entry {
        waiter,
        tid: this_tid(),
        thread: std::thread::current(),
        reason,
        since: Instant::now(),
        timed,
        wanted: AtomicBool::new(false),
        frames: Mutex::new(None),
    });
    if !timed {
        observers::untimed_thread_wait(true);
    }
    WAITING.lock().unwrap_or_else(|e| e.into_inner()).push(entry.clone());
    GENERATION.fetch_add(1, Ordering::Relaxed);
    if !timed {
        // A thread that waits for good may be the last one that could act
        // (a no-op until the runtime has started: channels, spawns, timers
        // and sockets start it, so a wait on one of them has a reporter).
        observers::poke();
    }
    Registered(entry)
}

/// The threads waiting now.
pub(crate) fn waiting() -> Vec<Arc<Entry>> {
    WAITING.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// See [`GENERATION`].
pub(crate) fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

impl Entry {
    /// Woken already (it may not have run since, and still be listed).
    pub(crate) fn woken(&self) -> bool {
        self.waiter.is_woken()
    }

    /// Asks the waiting thread for its frames and waits up to `patience` for
    /// them; `None` if it did not answer (it was woken meanwhile, or is slow).
    pub(crate) fn frames(&self, patience: std::time::Duration) -> Option<Captured> {
        self.wanted.store(true, Ordering::Release);
        self.thread.unpark();
        let deadline = Instant::now() + patience;
        loop {
            if let Some(f) = self.frames.lock().unwrap_or_else(|e| e.into_inner()).take() {
                return Some(f);
            }
            if Instant::now() >= deadline {
                self.wanted.store(false, Ordering::Relaxed);
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// The calling thread's kernel id, cached per thread. Plain threads only (they
/// never migrate); never inlined, like every thread-local reader here.
#[inline(never)]
pub(crate) fn this_tid() -> i32 {
    thread_local! {
        static TID: Cell<i32> = const { Cell::new(0) };
    }
    TID.with(|t| {
        if t.get() == 0 {
            // SAFETY: gettid(2) has no preconditions.
            t.set(unsafe { libc::gettid() });
        }
        t.get()
    })
}

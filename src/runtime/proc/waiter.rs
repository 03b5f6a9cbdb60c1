//! The records a wait leaves for its waker: [`Waiter`] (a parked G, a
//! blocked plain thread, or an async task's `Waker`, packable into one word) and [`Claim`] (one wait that
//! several parties may end: the first to claim it wakes the waiter). Waking
//! one is the scheduler's (`sched/ready.rs`, `Waiter::wake`); the protocol
//! both halves follow is in `wait/park.rs`.

#[cfg(loom)]
use crate::runtime::sys::sync_prims::lot;
use crate::runtime::sys::sync_prims::{AtomicBool, AtomicU32, Ordering};
use crate::runtime::task::g::{GRef, G};
use std::sync::Arc;

/// [`Claim`] value before anyone claimed it.
pub(crate) const UNCLAIMED: u32 = u32::MAX;
/// [`Claim`] value when the deadline won.
pub(crate) const TIMED_OUT: u32 = u32::MAX - 1;

/// One wait that several parties may try to end; see the module docs.
pub(crate) struct Claim {
    done: AtomicU32,
    /// Every party that may end it holds one lock while it tries (the one
    /// record the wait is queued on): then a plain load and store end it,
    /// without a compare-and-swap.
    under_one_lock: bool,
    waiter: Waiter,
}

impl Claim {
    /// A claim that parties holding different locks, or none (a timer), may
    /// race for.
    pub(crate) fn new(waiter: Waiter) -> Claim {
        Claim {
            done: AtomicU32::new(UNCLAIMED),
            under_one_lock: false,
            waiter,
        }
    }

    /// A claim that only parties holding the lock of the one record the wait
    /// is queued on try to end (a channel send or receive, or a `sync` wait,
    /// without a timeout).
    pub(crate) fn under_one_lock(waiter: Waiter) -> Claim {
        Claim {
            under_one_lock: true,
            ..Claim::new(waiter)
        }
    }

    /// An unclaimed claim for the same waiter, raced for the same way.
    pub(crate) fn like(&self) -> Claim {
        Claim {
            under_one_lock: self.under_one_lock,
            ..Claim::new(self.waiter())
        }
    }

    /// Ends the wait as `case` if nobody ended it yet. The winner must then wake
    /// the waiter ([`Claim::waiter`]) exactly once.
    #[inline]
    pub(crate) fn try_claim(&self, case: u32) -> bool {
        if self.under_one_lock {
            // The lock orders every try: nobody else stores between the two.
            if self.done.load(Ordering::Relaxed) != UNCLAIMED {
                return false;
            }
            self.done.store(case, Ordering::Release);
            return true;
        }
        self.done
            .compare_exchange(UNCLAIMED, case, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Who ended the wait: a case index, [`TIMED_OUT`], or [`UNCLAIMED`].
    pub(crate) fn winner(&self) -> u32 {
        self.done.load(Ordering::Acquire)
    }

    pub(crate) fn waiter(&self) -> Waiter {
        self.waiter.clone()
    }
}

/// Something that can be woken: a parked G, a blocked thread, or a task of
/// any async executor awaiting a goro record (a `JoinHandle` polled as a
/// future), woken through its `Waker`.
#[derive(Clone)]
pub(crate) enum Waiter {
    G(GRef),
    Thread(Arc<ThreadWaiter>),
    Task(std::task::Waker),
}

/// Tag bits of a packed waiter: G headers, `ThreadWaiter`s and boxed `Waker`s
/// are at least 8-aligned, so the two low bits of their addresses are free.
const THREAD_TAG: usize = 1;
const TASK_TAG: usize = 2;
const TAGS: usize = THREAD_TAG | TASK_TAG;

/// A plain thread's side of a wait.
pub(crate) struct ThreadWaiter {
    woken: AtomicBool,
    #[cfg(not(loom))]
    thread: std::thread::Thread,
}

impl ThreadWaiter {
    pub(crate) fn new() -> ThreadWaiter {
        ThreadWaiter {
            woken: AtomicBool::new(false),
            #[cfg(not(loom))]
            thread: std::thread::current(),
        }
    }

    pub(crate) fn is_woken(&self) -> bool {
        self.woken.load(Ordering::Acquire)
    }

    /// Ends the wait. Release: what the waker wrote before waking is visible to
    /// the woken thread, which reads the flag with Acquire.
    #[cfg(not(loom))]
    pub(crate) fn wake(&self) {
        let thread = self.thread.clone();
        self.woken.store(true, Ordering::Release);
        thread.unpark();
    }

    #[cfg(loom)]
    pub(crate) fn wake(&self) {
        lot::notify(|| self.woken.store(true, Ordering::Release));
    }
}

impl Waiter {
    /// Packs the waiter into one word (a tagged pointer; 0 is never produced), for
    /// compact wait records. Undo with [`Waiter::from_raw`].
    pub(crate) fn into_raw(self) -> usize {
        match self {
            Waiter::G(g) => g.as_ptr().as_ptr() as usize,
            Waiter::Thread(t) => Arc::into_raw(t) as usize | THREAD_TAG,
            Waiter::Task(w) => Box::into_raw(Box::new(w)) as usize | TASK_TAG,
        }
    }

    /// Whether the packed waiter `raw` is an async task's `Waker` that would
    /// wake the same task as `w` (a re-poll with it need store nothing new).
    ///
    /// # Safety
    /// `raw` is 0 or came from `into_raw` and has not been unpacked yet.
    pub(crate) unsafe fn raw_will_wake(raw: usize, w: &std::task::Waker) -> bool {
        raw & TAGS == TASK_TAG
            // SAFETY: a live box made by `into_raw` (the caller's contract).
            && unsafe { &*((raw & !TAGS) as *const std::task::Waker) }.will_wake(w)
    }

    /// Unpacks a word made by [`Waiter::into_raw`]; 0 means none.
    ///
    /// # Safety
    /// `raw` is 0 or came from `into_raw` and is unpacked only once.
    pub(crate) unsafe fn from_raw(raw: usize) -> Option<Waiter> {
        if raw == 0 {
            None
        } else if raw & TAGS == THREAD_TAG {
            // SAFETY: made by Arc::into_raw in `into_raw`, unpacked once.
            Some(Waiter::Thread(unsafe {
                Arc::from_raw((raw & !TAGS) as *const ThreadWaiter)
            }))
        } else if raw & TAGS == TASK_TAG {
            // SAFETY: made by Box::into_raw in `into_raw`, unpacked once.
            Some(Waiter::Task(*unsafe {
                Box::from_raw((raw & !TAGS) as *mut std::task::Waker)
            }))
        } else {
            GRef::from_raw(raw as *const G).map(Waiter::G)
        }
    }
}

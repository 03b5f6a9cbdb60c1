//! The waking half of parking (Go's `goready`): the records a waiter leaves
//! ([`Waiter`], [`Claim`]) and making a parked G runnable again ([`ready`]).
//! The parking half, and the protocol both follow, are in `wait/park.rs`.

use super::mpark::wakep;
use super::ownership::with_p;
use super::state::sched;
use super::tracing;
#[cfg(loom)]
use crate::runtime::sys::sync_prims::lot;
use crate::runtime::sys::sync_prims::{AtomicBool, AtomicU32, Ordering};
use crate::runtime::sys::trace_buf::Source;
use crate::runtime::task::g::{GRef, Status, G};
use std::sync::Arc;

/// [`Claim`] value before anyone claimed it.
pub(crate) const UNCLAIMED: u32 = u32::MAX;
/// [`Claim`] value when the deadline won.
pub(crate) const TIMED_OUT: u32 = u32::MAX - 1;

/// One wait that several parties may try to end; see the module docs.
pub(crate) struct Claim {
    done: AtomicU32,
    waiter: Waiter,
}

impl Claim {
    pub(crate) fn new(waiter: Waiter) -> Claim {
        Claim {
            done: AtomicU32::new(UNCLAIMED),
            waiter,
        }
    }

    /// Ends the wait as `case` if nobody ended it yet. The winner must then wake
    /// the waiter ([`Claim::waiter`]) exactly once.
    pub(crate) fn try_claim(&self, case: u32) -> bool {
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

/// Something that can be woken: a parked G or a blocked thread.
#[derive(Clone)]
pub(crate) enum Waiter {
    G(GRef),
    Thread(Arc<ThreadWaiter>),
}

/// Tag bit of a packed thread waiter (G headers and `ThreadWaiter`s are at least
/// 8-aligned, so bit 0 of their addresses is free).
const THREAD_TAG: usize = 1;

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
    fn wake(&self) {
        let thread = self.thread.clone();
        self.woken.store(true, Ordering::Release);
        thread.unpark();
    }

    #[cfg(loom)]
    fn wake(&self) {
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
        }
    }

    /// Unpacks a word made by [`Waiter::into_raw`]; 0 means none.
    ///
    /// # Safety
    /// `raw` is 0 or came from `into_raw` and is unpacked only once.
    pub(crate) unsafe fn from_raw(raw: usize) -> Option<Waiter> {
        if raw == 0 {
            None
        } else if raw & THREAD_TAG != 0 {
            // SAFETY: made by Arc::into_raw in `into_raw`, unpacked once.
            Some(Waiter::Thread(unsafe {
                Arc::from_raw((raw & !THREAD_TAG) as *const ThreadWaiter)
            }))
        } else {
            GRef::from_raw(raw as *const G).map(Waiter::G)
        }
    }

    /// Makes the waiter runnable. Call once per wait, after releasing the record's lock.
    pub(crate) fn wake(self) {
        match self {
            Waiter::G(g) => ready(g),
            Waiter::Thread(t) => t.wake(),
        }
    }
}

/// Makes a `Waiting` G runnable: into the current P's `runnext` if the caller runs
/// on an M that holds a P, else into the global queue; then maybe wakes an M
/// (Go's `goready`).
pub(crate) fn ready(g: GRef) {
    if tracing::on() {
        tracing::readied(g, Source::Thread);
    }
    g.cas_status(Status::Waiting, Status::Runnable);
    with_p(|p| match p {
        Some(p) => p.runq_put(g, true),
        None => sched().global.push(g),
    });
    wakep();
}

/// Readies a batch of parked Gs found together (by the network poller) at the
/// tail of this M's P's queue, oldest first, as Go's `injectglist` does: none of
/// them jumps the queue through `runnext`, so under load every connection waits
/// its turn in FIFO order. Wakes an M as [`ready_found`] says.
pub(crate) fn ready_batch(gs: impl Iterator<Item = GRef>) {
    ready_found(gs, false);
}

/// Readies the Gs whose sleeps a run of due timers ended, each into `runnext` as
/// [`ready`] does (a sleeper that wakes runs next, Go's rule), with one `wakep`
/// for them all as [`ready_found`] says. The caller is an M in its search for
/// work, which runs its queue next (`schedule::run_timers`).
pub(crate) fn ready_sleepers(gs: impl Iterator<Item = GRef>) {
    ready_found(gs, true);
}

/// Readies Gs that an M in its search for work found together, into its P's
/// `runnext` (`next`) or ring tail, then calls one `wakep` for them all, unless
/// they are a single G put on an empty queue: the caller takes that G next
/// itself, and a woken helper would only spin and sleep again (if a global G
/// goes first on its every-61st round, the search wakes one then): no thread
/// wake-up per request of a server with sparse traffic, nor per timer of a G
/// sleeping alone (docs/decisions/0014-one-m-per-request.md,
/// docs/decisions/0015-one-m-per-timer.md). While that G runs,
/// sysmon's 1 ms network poll covers the network, and `schedule::watch_timers`
/// the timers. Without a P (sysmon's poll) the Gs go to the global queue, and
/// an M is always woken.
fn ready_found(gs: impl Iterator<Item = GRef>, next: bool) {
    let wake = with_p(|p| {
        let queued_before = p.is_none_or(|p| !p.runq.is_empty());
        let mut n = 0;
        for g in gs {
            n += 1;
            if tracing::on() {
                tracing::readied(g, if next { Source::Timer } else { Source::Netpoll });
            }
            g.cas_status(Status::Waiting, Status::Runnable);
            match p {
                Some(p) => p.runq_put(g, next),
                None => sched().global.push(g),
            }
        }
        n > 1 || (n == 1 && queued_before)
    });
    if wake {
        wakep();
    }
}

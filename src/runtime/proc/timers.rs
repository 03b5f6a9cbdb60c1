//! A P's timer heap (Go's per-P `timers`): the record, and what a timer does
//! ([`Action`]). Arming one and running the due ones are the scheduler's
//! (`sched/timers.rs`).
//!
//! Each P owns a min-heap of deadlines. Timers are added by the M holding the P
//! (a G's `sleep` registers on its own P, from the scheduler side of the park), and
//! run by that M in `find_runnable` or, when the P is idle or busy elsewhere, by a
//! stealing M in its last steal round. The heap is behind a mutex because of that
//! second case; `next` mirrors the earliest deadline in an atomic so the scheduling
//! loop can skip the lock (and the clock read) when nothing is due.
//!
//! Orderings: `next` is written under the heap lock and read without it (`Acquire`
//! pairs with the `Release` store). A stale read is harmless: too early means one
//! wasted lock; too late is impossible for a timer added by the reader's own P, and
//! for other Ps the adder wakes the poller (`wake_netpoller`), or, for a timer armed
//! by a G's park, its M does before running another G (`add_timer_parked`).
//!
//! Cancelled timers are not searched for and removed: a timer that is stopped,
//! reset, or whose wait ended otherwise (or a poll descriptor's timer another
//! one superseded) is left in the heap: it does nothing when it comes due, and
//! compaction recognises it as dead ([`Action::is_live`]). So that dead entries
//! cannot pile up (a `recv_timeout(60 s)` in a hot loop), each heap is compacted
//! — dead entries dropped in one O(n) pass — whenever it has doubled since the
//! last compaction: amortised O(1) per insert, and at most about half the
//! entries are dead.
//!
//! Heap, not wheel: docs/decisions/0019-timer-heaps.md.

use super::waiter::{Claim, UNCLAIMED};
use crate::runtime::sys::quadheap::QuadHeap;
use crate::runtime::sys::trace_clock::lock_noting_wait;
use crate::runtime::task::g::GRef;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::Mutex;

/// `next` when the heap is empty.
pub(crate) const NO_TIMER: u64 = u64::MAX;

/// Heaps are not compacted below this many entries.
const COMPACT_MIN: usize = 64;

/// A timer owned by `goro::time` (`Timer`, `Ticker`, `after`, `tick`, `after_func`).
pub(crate) trait Fire: Send + Sync {
    /// The timer armed as generation `seq` is due at `now` (runtime clock, ns).
    fn fire(self: Arc<Self>, seq: u64, now: u64);
    /// Would firing generation `seq` still do anything?
    fn is_live(&self, seq: u64) -> bool;
    /// Would firing generation `seq` now wake or start anything? Stricter than
    /// [`is_live`](Fire::is_live): a live timer whose channel nobody waits on
    /// wakes no one (the deadlock check, [`Timers::any_would_wake`]).
    fn would_wake(&self, seq: u64) -> bool;
}

/// A deadline timer owned by a long-lived object: a poll descriptor keeps one
/// pending timer per direction for all the I/O waits on it, instead of one per
/// wait (`netpoll/desc.rs`).
pub(crate) trait Expire: Sync {
    /// The timer armed with `tag` is due at `now` (runtime clock, ns).
    fn expire(&'static self, tag: u64, now: u64);
    /// Would firing the timer armed at `when` with `tag` still do anything?
    fn is_live(&self, when: u64, tag: u64) -> bool;
}

/// What a timer does when it fires.
pub(crate) enum Action {
    /// Make a sleeping G runnable.
    Ready(GRef),
    /// End a wait with a deadline (`recv_timeout`, `Condvar::wait_timeout`, ...),
    /// unless something else ended it first.
    Timeout(Arc<Claim>),
    /// A `goro::time` timer, armed as generation `seq`.
    Fire(Arc<dyn Fire>, u64),
    /// A long-lived object's deadline, armed with a tag it chose. (Under loom,
    /// poll descriptors queue these in the models' stand-in for the heap.)
    #[cfg_attr(loom, allow(dead_code))]
    Expire(&'static dyn Expire, u64),
}

impl Action {
    /// False for a timer at `when` whose firing would do nothing: compaction
    /// drops it.
    fn is_live(&self, when: u64) -> bool {
        match self {
            Action::Ready(_) => true,
            Action::Timeout(c) => c.winner() == UNCLAIMED,
            Action::Fire(t, seq) => t.is_live(*seq),
            Action::Expire(e, tag) => e.is_live(when, *tag),
        }
    }

    /// False for a timer at `when` whose firing now would make nothing run: a
    /// dead one, or a `goro::time` channel's that nobody waits on.
    fn would_wake(&self, when: u64) -> bool {
        match self {
            Action::Fire(t, seq) => t.would_wake(*seq),
            _ => self.is_live(when),
        }
    }
}

/// Timers a compaction removed, to be dropped by the caller outside any lock and
/// outside the runtime: dropping one may drop a user's `after_func` closure (and
/// whatever it owns, a channel `Sender` say, whose drop takes that channel's lock).
#[must_use = "drop dead timers outside the runtime"]
pub(crate) struct DeadTimers(Vec<Action>);

impl DeadTimers {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[derive(Default)]
struct Heap {
    /// Actions keyed by (deadline, insertion order): equal deadlines fire FIFO.
    entries: QuadHeap<Action>,
    seq: u64,
    /// Compact when the heap reaches this size.
    compact_at: usize,
}

/// One P's timers.
pub(crate) struct Timers {
    heap: Mutex<Heap>,
    next: AtomicU64,
    len: AtomicUsize,
}

impl Timers {
    pub(crate) fn new() -> Self {
        Timers {
            heap: Mutex::new(Heap::default()),
            next: AtomicU64::new(NO_TIMER),
            len: AtomicUsize::new(0),
        }
    }

    /// The earliest deadline (ns on the runtime clock), or [`NO_TIMER`].
    pub(crate) fn next(&self) -> u64 {
        self.next.load(Ordering::Acquire)
    }

    /// Timers in the heap (`timerslen` in scheddetail).
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Whether any timer in the heap would wake or start something if it fired
    /// now: stopped and superseded ones, which stay until compaction or their
    /// deadline, do not, nor does a timer or ticker whose channel no receiver
    /// is blocked on (as in Go 1.23, where such a timer is not in the heap).
    /// O(n) under the heap's lock: for the deadlock check, not a hot path.
    pub(crate) fn any_would_wake(&self) -> bool {
        if self.len() == 0 {
            return false;
        }
        let h = lock_noting_wait!(&self.heap);
        h.entries.any(|(when, _), action| action.would_wake(when))
    }

    /// Adds a timer firing at `when`; returns the dead timers it compacted away.
    pub(crate) fn add(&self, when: u64, action: Action) -> DeadTimers {
        let mut h = lock_noting_wait!(&self.heap);
        let seq = h.seq;
        h.seq += 1;
        h.entries.push((when, seq), action);
        let mut dead = Vec::new();
        if h.entries.len() >= h.compact_at.max(COMPACT_MIN) {
            dead = h.entries.retain(|(when, _), action| action.is_live(when));
            h.compact_at = 2 * h.entries.len();
        }
        self.publish(&h);
        DeadTimers(dead)
    }

    fn publish(&self, h: &Heap) {
        let next = h.entries.peek_key().map_or(NO_TIMER, |(when, _)| when);
        self.next.store(next, Ordering::Release);
        self.len.store(h.entries.len(), Ordering::Relaxed);
    }

    /// Removes every timer (its P is going away); they keep their deadlines when
    /// added elsewhere.
    pub(crate) fn take_all(&self) -> Vec<(u64, Action)> {
        let mut h = lock_noting_wait!(&self.heap);
        let mut all = Vec::with_capacity(h.entries.len());
        while let Some(((when, _), action)) = h.entries.pop() {
            all.push((when, action));
        }
        self.publish(&h);
        all
    }

    /// Removes every timer due at `now`, in deadline order, for the caller to
    /// run outside the lock (`sched/timers.rs`, `run_due`).
    pub(crate) fn take_due(&self, now: u64) -> Vec<Action> {
        let mut due = Vec::new();
        let mut h = lock_noting_wait!(&self.heap);
        while h.entries.peek_key().is_some_and(|(when, _)| when <= now) {
            let action = h.entries.pop().expect("peeked").1;
            if let Action::Ready(g) = &action {
                // Readying it writes its status: start loading its header
                // now, under the heap's remaining sifts.
                g.prefetch_header();
            }
            due.push(action);
        }
        self.publish(&h);
        due
    }
}

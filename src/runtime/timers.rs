//! A P's timer heap (Go's per-P `timers`).
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
//! for other Ps the adder wakes the poller (`wake_netpoller`).
//!
//! Heap, not wheel: the reasoning is in docs/DESIGN.md ("Timers").

use super::g::GRef;
use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// `next` when the heap is empty.
pub(crate) const NO_TIMER: u64 = u64::MAX;

/// What a timer does when it fires.
pub(crate) enum Action {
    /// Make a sleeping G runnable.
    Ready(GRef),
}

struct Entry {
    when: u64,
    /// Insertion order: equal deadlines fire first-in, first-out.
    seq: u64,
    action: Action,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.when, self.seq) == (other.when, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    /// Reversed, so `BinaryHeap` (a max-heap) pops the earliest deadline.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (other.when, other.seq).cmp(&(self.when, self.seq))
    }
}

#[derive(Default)]
struct Heap {
    entries: BinaryHeap<Entry>,
    seq: u64,
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

    /// Adds a timer firing at `when`.
    pub(crate) fn add(&self, when: u64, action: Action) {
        let mut h = self.heap.lock().unwrap_or_else(|e| e.into_inner());
        let seq = h.seq;
        h.seq += 1;
        h.entries.push(Entry { when, seq, action });
        self.publish(&h);
    }

    fn publish(&self, h: &Heap) {
        let next = h.entries.peek().map_or(NO_TIMER, |e| e.when);
        self.next.store(next, Ordering::Release);
        self.len.store(h.entries.len(), Ordering::Relaxed);
    }

    /// Runs every timer due at `now`, in deadline order; the actions run outside
    /// the lock. Returns how many fired.
    pub(crate) fn run_due(&self, now: u64, mut fire: impl FnMut(Action)) -> usize {
        if self.next() > now {
            return 0;
        }
        let mut due = Vec::new();
        {
            let mut h = self.heap.lock().unwrap_or_else(|e| e.into_inner());
            while h.entries.peek().is_some_and(|e| e.when <= now) {
                due.push(h.entries.pop().expect("peeked").action);
            }
            self.publish(&h);
        }
        let n = due.len();
        due.into_iter().for_each(&mut fire);
        n
    }
}

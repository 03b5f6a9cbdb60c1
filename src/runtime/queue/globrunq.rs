//! The global run queue: an intrusive FIFO of Gs linked through `G::schedlink`,
//! under one lock (Go's `sched.runq`).
//!
//! Gs land here when spawned or readied from a plain thread, when they yield, when
//! a full local ring spills half of itself (one lock for the whole batch), and when
//! a time slice ends. Ps take their fair share in one lock (`pop_batch`).
//!
//! Not `crossbeam_deque::Injector`: its pushes allocate a block every 63 Gs and
//! its pops free it, on another thread, and under a spawn storm those
//! cross-thread frees contend with the spawner's own mallocs on glibc's arena
//! lock. The intrusive list never allocates
//! (docs/decisions/0004-global-queue-intrusive-list.md).
//!
//! Orderings: the list is under the mutex. `len` mirrors its length for
//! lock-free hints ("probably empty, skip the lock"); it is written only under
//! the lock, with plain (`Relaxed`) stores, so a push or pop costs one lock and
//! one unlock and no other locked instruction. No wake-up depends on the hint:
//! an M that gives up its P for want of work (`find_runnable`'s tail,
//! `mpark::hand_off_p`) idles it, drops its spinning count, then re-checks the
//! queue under its lock
//! ([`GlobalRunq::has_work`]), and a submitter reads the idle counters after
//! its push has released the lock (`mpark::wakep_global`). Whichever of the two
//! takes the lock second sees what the other did before it, as under Go's
//! `sched.lock`; no fence is needed.

use crate::runtime::sys::trace_clock::lock_noting_wait;
use crate::runtime::task::g::{GRef, G};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

struct List {
    head: *const G,
    tail: *const G,
}

// SAFETY: the raw pointers are Gs owned by the queue; they are only followed under
// the mutex, and a G popped from the list is handed over with the lock's release.
unsafe impl Send for List {}

/// The global run queue.
pub(crate) struct GlobalRunq {
    list: Mutex<List>,
    len: AtomicUsize,
}

impl GlobalRunq {
    pub(crate) fn new() -> Self {
        GlobalRunq {
            list: Mutex::new(List {
                head: ptr::null(),
                tail: ptr::null(),
            }),
            len: AtomicUsize::new(0),
        }
    }

    /// Gs in the queue: a racy hint, for sizing batches and skipping the lock.
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// A racy hint, as [`GlobalRunq::len`].
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a G is queued, exactly: read under the lock, so that an M about
    /// to sleep either sees a push or is seen by its submitter (module docs).
    pub(crate) fn has_work(&self) -> bool {
        !lock_noting_wait!(&self.list).head.is_null()
    }

    /// Appends one G.
    pub(crate) fn push(&self, g: GRef) {
        self.push_batch(&[g]);
    }

    /// Appends a batch in order, under one lock.
    pub(crate) fn push_batch(&self, batch: &[GRef]) {
        let Some((first, rest)) = batch.split_first() else {
            return;
        };
        let mut last = *first;
        for &g in rest {
            last.set_schedlink(g.as_ptr().as_ptr());
            last = g;
        }
        last.set_schedlink(ptr::null());
        let mut l = lock_noting_wait!(&self.list);
        let first_ptr = first.as_ptr().as_ptr() as *const G;
        match GRef::from_raw(l.tail) {
            Some(tail) => tail.set_schedlink(first_ptr),
            None => l.head = first_ptr,
        }
        l.tail = last.as_ptr().as_ptr();
        // Written only under the lock: a plain store does (module docs).
        self.len
            .store(self.len.load(Ordering::Relaxed) + batch.len(), Ordering::Relaxed);
    }

    /// Pops up to `max` Gs (at least one if any): the first is returned, the rest
    /// handed to `rest` in FIFO order, all under one lock.
    pub(crate) fn pop_batch(&self, max: usize, mut rest: impl FnMut(GRef)) -> Option<GRef> {
        if self.is_empty() {
            return None;
        }
        let mut l = lock_noting_wait!(&self.list);
        let first = GRef::from_raw(l.head)?;
        let mut taken = 1;
        let mut next = first.schedlink();
        while taken < max {
            let Some(g) = GRef::from_raw(next) else { break };
            next = g.schedlink();
            rest(g);
            taken += 1;
        }
        l.head = next;
        if next.is_null() {
            l.tail = ptr::null();
        }
        self.len
            .store(self.len.load(Ordering::Relaxed) - taken, Ordering::Relaxed);
        Some(first)
    }
}

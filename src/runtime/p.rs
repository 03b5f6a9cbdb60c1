//! The P: a processor, the right to run Gs. There are exactly `gomaxprocs` of them.
//!
//! # Ownership
//! "Holding a P" means being the M whose `p` names it; a P is held by at most one M
//! at a time and is otherwise on the idle list ([`super::idle`]). Hand-over goes
//! through the idle lock or through `M::nextp` + the M's note, both of which
//! synchronise, so the holder may use [`P::local`] (its private state) without
//! further locking.
//!
//! Shared parts: the run queue (thieves), the timers (a stealing M may run them),
//! and the counters, which only the holder writes ([`bump`]) and anyone reads.

use super::g::GRef;
use super::runq::RunQueue;
use super::stack::StackCache;
use super::timers::Timers;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// P status, numbered as Go's `_Pidle`... so scheddetail prints the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum PStatus {
    Idle = 0,
    Running = 1,
}

/// Per-P counters. Written only by the M holding the P, read by anyone.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) spawned: AtomicU64,
    pub(crate) completed: AtomicU64,
    pub(crate) context_switches: AtomicU64,
    pub(crate) steals: AtomicU64,
    pub(crate) stolen: AtomicU64,
    pub(crate) global_runq_gets: AtomicU64,
    pub(crate) runnext_hits: AtomicU64,
    pub(crate) timers_fired: AtomicU64,
    pub(crate) schedtick: AtomicU64,
}

/// Adds `n` to a counter that only one thread writes: a plain load and store,
/// no locked instruction on the hot path.
#[inline]
pub(crate) fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// State only the M holding the P touches.
pub(crate) struct Local {
    pub(crate) stacks: StackCache,
    /// Free G headers (`gfree.rs`).
    pub(crate) gfree: Vec<GRef>,
    /// Next G id to hand out and the end of the reserved batch (Go's goidcache).
    pub(crate) goid_next: u64,
    pub(crate) goid_end: u64,
    /// Gs run in a row from `runnext` (inheriting the time slice), and when the
    /// first of them started (ns); see `find_runnable`'s slice check.
    pub(crate) inherited: u32,
    pub(crate) inherited_since: u64,
    /// Scheduling rounds since this P last polled the network.
    pub(crate) rounds_since_netpoll: u32,
}

pub(crate) struct P {
    pub(crate) id: usize,
    status: AtomicU8,
    /// Id of the M holding it, -1 if none.
    m: AtomicI64,
    pub(crate) runq: RunQueue<super::g::G>,
    pub(crate) timers: Timers,
    pub(crate) counters: Counters,
    /// Mirror of the free G list's length for traces (`gfreecnt`).
    gfreecnt: AtomicUsize,
    local: UnsafeCell<Local>,
}

// SAFETY: `local` is touched only by the M holding the P (module docs); everything
// else is atomic or internally locked.
unsafe impl Sync for P {}
// SAFETY: as above.
unsafe impl Send for P {}

impl P {
    pub(crate) fn new(id: usize) -> P {
        P {
            id,
            status: AtomicU8::new(PStatus::Idle as u8),
            m: AtomicI64::new(-1),
            runq: RunQueue::new(),
            timers: Timers::new(),
            counters: Counters::default(),
            gfreecnt: AtomicUsize::new(0),
            local: UnsafeCell::new(Local {
                stacks: StackCache::new(),
                gfree: Vec::new(),
                goid_next: 0,
                goid_end: 0,
                inherited: 0,
                inherited_since: 0,
                rounds_since_netpoll: 0,
            }),
        }
    }

    /// The holder-only state.
    ///
    /// # Safety
    /// The caller is the M holding this P, and does not keep two of these
    /// references alive at once.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn local(&self) -> &mut Local {
        // SAFETY: exclusive by the caller's contract.
        unsafe { &mut *self.local.get() }
    }

    pub(crate) fn status(&self) -> PStatus {
        if self.status.load(Ordering::Relaxed) == PStatus::Running as u8 {
            PStatus::Running
        } else {
            PStatus::Idle
        }
    }

    pub(crate) fn set_running(&self, m_id: i64) {
        self.m.store(m_id, Ordering::Relaxed);
        self.status.store(PStatus::Running as u8, Ordering::Relaxed);
    }

    pub(crate) fn set_idle(&self) {
        self.m.store(-1, Ordering::Relaxed);
        self.status.store(PStatus::Idle as u8, Ordering::Relaxed);
    }

    pub(crate) fn m_id(&self) -> i64 {
        self.m.load(Ordering::Relaxed)
    }

    pub(crate) fn schedtick(&self) -> u64 {
        self.counters.schedtick.load(Ordering::Relaxed)
    }

    pub(crate) fn gfreecnt(&self) -> usize {
        self.gfreecnt.load(Ordering::Relaxed)
    }

    /// Refreshes the trace mirror of the free G count. Holder only.
    pub(crate) fn note_gfree(&self, n: usize) {
        self.gfreecnt.store(n, Ordering::Relaxed);
    }

    /// Holder only: pushes `g` (to `runnext` if `next`), spilling a full ring to
    /// the global queue.
    pub(crate) fn runq_put(&self, g: GRef, next: bool) {
        self.runq.push(g.as_ptr(), next, |batch| {
            let batch: &[GRef] = GRef::slice_from_ptrs(batch);
            super::sched::sched().global.push_batch(batch);
        });
    }
}

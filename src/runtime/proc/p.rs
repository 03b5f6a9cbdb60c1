//! The P: a processor, the right to run Gs. There are exactly `gomaxprocs` of them.
//!
//! # Ownership
//! "Holding a P" means being the M whose `p` names it; a P is held by at most one M
//! at a time and is otherwise on the idle list ([`crate::runtime::queue::idle`]). Hand-over goes
//! through the idle lock or through `M::nextp` + the M's note, both of which
//! synchronise, so the holder may use [`P::local`] (its private state) without
//! further locking.
//!
//! Shared parts: the run queue (thieves), the timers (a stealing M may run them),
//! and the counters, which only the holder writes ([`bump`]) and anyone reads.
//!
//! # The state word
//! `state` packs the holding M's address with the P's [`PStatus`] (Ms are 8-aligned,
//! so the low three bits are free). One word, so that taking a P away from its M
//! (sysmon's retake, a stop-the-world) and the M's own transitions arbitrate with a
//! single compare-and-swap; the protocol is in `sched/ownership.rs`.

use super::m::M;
use super::state::sched;
use super::timers::Timers;
use crate::runtime::queue::runq::RunQueue;
use crate::runtime::task::g::GRef;
use crate::runtime::task::gfree::GFreeCache;
use crate::runtime::task::stack_pool::StackCache;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// P status, numbered as Go's `_Pidle`... so scheddetail prints the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum PStatus {
    /// On the idle list, or being handed to an M.
    Idle = 0,
    /// Held by an M that runs Gs or the scheduler with it.
    Running = 1,
    /// Its M's G is in a blocking call; sysmon may hand it to another M.
    Syscall = 2,
    /// Taken by a stop-the-world.
    Stopped = 3,
    /// Beyond `gomaxprocs` after a resize.
    Dead = 4,
    /// Transient: sysmon or a stop-the-world is deciding whether to take it from
    /// its running M (`sched/ownership.rs`).
    Retaking = 5,
}

impl PStatus {
    const ALL: [PStatus; 6] = [
        PStatus::Idle,
        PStatus::Running,
        PStatus::Syscall,
        PStatus::Stopped,
        PStatus::Dead,
        PStatus::Retaking,
    ];
}

/// The bits of the state word that hold the status.
const STATUS_MASK: usize = 7;

/// A P state word: holder (if any) and status.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct PState(pub(crate) usize);

impl PState {
    pub(crate) fn new(m: Option<&M>, status: PStatus) -> PState {
        let addr = m.map_or(0, |m| m as *const M as usize);
        debug_assert_eq!(addr & STATUS_MASK, 0);
        PState(addr | status as usize)
    }

    pub(crate) fn status(self) -> PStatus {
        PStatus::ALL[self.0 & STATUS_MASK]
    }

    /// The M holding the P (also during `Syscall` and `Retaking`).
    pub(crate) fn m(self) -> Option<&'static M> {
        let addr = self.0 & !STATUS_MASK;
        // SAFETY: non-zero addresses were made from `&'static M` in `new`; Ms are
        // never freed.
        unsafe { (addr as *const M).as_ref() }
    }

    pub(crate) fn with_status(self, status: PStatus) -> PState {
        PState((self.0 & !STATUS_MASK) | status as usize)
    }
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

/// Timers that may have nobody watching them (`Local::unwatched`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum Unwatched {
    No,
    /// A G that parked here armed one and left the wake-up to the holder's
    /// search (`timers::add_timer_parked`): this P's timers.
    Own,
    /// The holder came back from the poller, which was watching every timer
    /// due at or after its deadline: every P's.
    Every,
}

/// State only the M holding the P touches.
pub(crate) struct Local {
    pub(crate) stacks: StackCache,
    /// Free G headers ([`gfget`], [`gfput`]).
    pub(crate) gfree: GFreeCache,
    /// Next G id to hand out and the end of the reserved batch (Go's goidcache).
    pub(crate) goid_next: u64,
    pub(crate) goid_end: u64,
    /// Scheduling rounds since this P's last periodic look around (network
    /// poll and stalled Ps; see `find_runnable`).
    pub(crate) rounds_since_look: u32,
    /// Which timers nobody may watch while this P's holder runs its next G
    /// (`schedule::watch_timers`, which resets it, as does idling the P: then
    /// its M watches them itself). A stale value (one left across a
    /// stop-the-world) only costs one needless wake-up.
    pub(crate) unwatched: Unwatched,
    /// Each P's `context_switches` as this P saw it at its last look, indexed by
    /// P id (`schedule::steal_from_stalled`).
    pub(crate) seen_switches: Vec<u64>,
}

pub(crate) struct P {
    pub(crate) id: usize,
    /// Holder and status (module docs).
    pub(crate) state: crate::runtime::sys::sync_prims::AtomicUsize,
    /// Blocking calls entered by Gs on this P (Go's `syscalltick`); sysmon watches it.
    pub(crate) syscalltick: AtomicU64,
    pub(crate) runq: RunQueue<crate::runtime::task::g::G>,
    pub(crate) timers: Timers,
    pub(crate) counters: Counters,
    /// The current time slice has lasted `schedule::TIME_SLICE_NS`:
    /// set by sysmon when `schedtick` has not moved for that long while the P ran,
    /// read by the holder when it takes a G from `runnext` (which would inherit
    /// the slice: `schedule::local_pop` ends it instead), and cleared by the
    /// holder when a G starts a fresh slice. Relaxed both ways: a late flag ends
    /// a slice a switch later, a stale one ends a fresh slice early; neither
    /// loses a G.
    pub(crate) slice_over: AtomicBool,
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
            state: crate::runtime::sys::sync_prims::AtomicUsize::new(PState::new(None, PStatus::Idle).0),
            syscalltick: AtomicU64::new(0),
            runq: RunQueue::new(),
            timers: Timers::new(),
            counters: Counters::default(),
            slice_over: AtomicBool::new(false),
            gfreecnt: AtomicUsize::new(0),
            local: UnsafeCell::new(Local {
                stacks: StackCache::new(),
                gfree: GFreeCache::new(),
                goid_next: 0,
                goid_end: 0,
                rounds_since_look: 0,
                unwatched: Unwatched::No,
                seen_switches: Vec::new(),
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

    /// The state word (`Acquire`: pairs with the `Release` of every transition,
    /// so whoever sees a P handed to it sees what its previous holder wrote).
    pub(crate) fn state(&self) -> PState {
        PState(self.state.load(Ordering::Acquire))
    }

    pub(crate) fn status(&self) -> PStatus {
        self.state().status()
    }

    /// Unconditional transition, by whoever owns the P exclusively right now. A
    /// swap rather than a store: it must win over a taker's `Retaking` CAS in
    /// every model of memory, loom's included (`ownership`).
    pub(crate) fn set_state(&self, to: PState) {
        self.state.swap(to.0, Ordering::AcqRel);
    }

    /// Transition `from` -> `to` if nobody changed the word meanwhile.
    pub(crate) fn cas_state(&self, from: PState, to: PState) -> bool {
        self.state
            .compare_exchange(from.0, to.0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Id of the M holding it, -1 if none (traces).
    pub(crate) fn m_id(&self) -> i64 {
        self.state().m().map_or(-1, |m| m.id())
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
            sched().global.push_batch(batch);
        });
    }
}

/// A free header for a new G: from the list of `p` (the current M's P, if any),
/// the global pool, or the heap. The caller owns it exclusively until it queues
/// the G.
pub(crate) fn gfget(p: Option<&P>) -> GRef {
    let pool = &sched().gfree;
    let Some(p) = p else {
        return pool.get();
    };
    // SAFETY: `p` is held by the calling M; no other reference to its local state
    // is live.
    let local = unsafe { p.local() };
    let g = local.gfree.get(pool);
    p.note_gfree(local.gfree.len());
    g
}

/// Moves every free header of `p` (held exclusively: it is being destroyed) to
/// the global pool.
pub(crate) fn gfree_drain(p: &P) {
    // SAFETY: the caller owns `p` exclusively.
    let local = unsafe { p.local() };
    local.gfree.drain_to(&sched().gfree);
    p.note_gfree(0);
}

/// Returns the header of an exited G to `p`'s list (caller holds `p`), or to the
/// global pool from an M without a P.
pub(crate) fn gfput(p: Option<&P>, g: GRef) {
    let Some(p) = p else {
        sched().gfree.put(g);
        return;
    };
    // SAFETY: the caller holds `p`; no other reference to its local state is live.
    let local = unsafe { p.local() };
    local.gfree.put(g, || &sched().gfree);
    p.note_gfree(local.gfree.len());
}

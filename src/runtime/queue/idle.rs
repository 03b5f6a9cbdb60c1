//! Idle Ps, idle Ms and the spinning count: the state behind Go's worker
//! parking/unparking protocol. The protocol itself (who calls what, in which
//! order) is in [`crate::runtime::sched::mpark`] and in `find_runnable`; this module owns the data
//! and the transitions, so that loom models can drive the real thing.
//!
//! # The invariants (Go's "Worker thread parking/unparking", proc.go)
//! - A P is either held by exactly one M or on the idle list; `npidle` counts the
//!   list and changes only under the lock.
//! - `nmspinning` counts Ms looking for work while holding a P. A submitter of
//!   work wakes an M only if it sees an idle P and no spinning M
//!   ([`Idle::should_wake`]); a spinning M that gives up decrements `nmspinning`
//!   and *then* re-checks every queue. Submitter: publish work, `SeqCst` fence,
//!   read `npidle`/`nmspinning`. Spinner: `SeqCst` decrement, read the queues.
//!   Either the submitter sees the spinner (and relies on its re-check) or the
//!   spinner sees the work.
//! - Every M (spinning or not) that idles its P re-checks the global queue after
//!   incrementing `npidle`, under the queue's lock; a submitter to that queue
//!   reads the counters after releasing the lock, so the lock orders the two
//!   and no fence is needed on that side (Go's `sched.lock` does the same).
//! - `needspinning` is set when someone wanted a spinning M but found no idle P;
//!   an M about to idle its P sees it and turns spinning instead (Go 1.21's
//!   "delicate dance").
//!
//! Orderings: the counters are `SeqCst` throughout; the lists are under the lock.

use crate::runtime::sys::sync_prims::{AtomicU32, Mutex, MutexGuard, Ordering};
use crate::runtime::sys::trace_clock::lock_noting_wait;

/// The lists behind the lock.
pub(crate) struct Lists<W> {
    /// Idle P ids, most recently idled last.
    pub(crate) pidle: Vec<usize>,
    /// Parked Ms.
    pub(crate) midle: Vec<W>,
}

/// Idle P and M bookkeeping, generic over the parked-M handle `W`.
pub(crate) struct Idle<W> {
    lists: Mutex<Lists<W>>,
    npidle: AtomicU32,
    nmspinning: AtomicU32,
    needspinning: AtomicU32,
    nmidle: AtomicU32,
}

/// The locked lists; counters are kept in step by the methods.
pub(crate) struct Locked<'a, W> {
    idle: &'a Idle<W>,
    lists: MutexGuard<'a, Lists<W>>,
}

impl<W> Idle<W> {
    /// All `nprocs` Ps start idle.
    pub(crate) fn new(nprocs: usize) -> Self {
        Idle {
            lists: Mutex::new(Lists {
                pidle: (0..nprocs).rev().collect(),
                midle: Vec::new(),
            }),
            npidle: AtomicU32::new(nprocs as u32),
            nmspinning: AtomicU32::new(0),
            needspinning: AtomicU32::new(0),
            nmidle: AtomicU32::new(0),
        }
    }

    pub(crate) fn lock(&self) -> Locked<'_, W> {
        Locked {
            idle: self,
            lists: lock_noting_wait!(&self.lists),
        }
    }

    pub(crate) fn npidle(&self) -> u32 {
        self.npidle.load(Ordering::SeqCst)
    }

    pub(crate) fn nmspinning(&self) -> u32 {
        self.nmspinning.load(Ordering::SeqCst)
    }

    pub(crate) fn needspinning(&self) -> u32 {
        self.needspinning.load(Ordering::SeqCst)
    }

    pub(crate) fn nmidle(&self) -> u32 {
        self.nmidle.load(Ordering::SeqCst)
    }

    /// Submitter side, after publishing work and a `SeqCst` fence (or a push to the
    /// global queue, whose lock pairs instead; `mpark::wakep_global`): is a spinning M
    /// wanted? Claims the spinning slot (`nmspinning` 0 -> 1) if so; the caller must
    /// then start an M on an idle P or give the slot back, both through
    /// [`Locked::pidle_get_for_claim`].
    pub(crate) fn should_wake(&self) -> bool {
        self.npidle.load(Ordering::SeqCst) != 0
            && self.nmspinning.load(Ordering::SeqCst) == 0
            && self
                .nmspinning
                .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
    }

    /// Hand-off side (Go's `handoffp`): if no M spins and no P is idle, nobody
    /// would notice new work, so the caller should start a spinning M on the P it
    /// hands off. Claims the spinning slot if so (as [`Idle::should_wake`]).
    pub(crate) fn should_spin_for_handoff(&self) -> bool {
        self.nmspinning.load(Ordering::SeqCst) + self.npidle.load(Ordering::SeqCst) == 0
            && self
                .nmspinning
                .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
    }

    /// An M turns spinning (Go's `becomeSpinning`).
    pub(crate) fn become_spinning(&self) {
        self.nmspinning.fetch_add(1, Ordering::SeqCst);
        self.needspinning.store(0, Ordering::SeqCst);
    }

    /// An M stops spinning. Returns the number still spinning.
    pub(crate) fn stop_spinning(&self) -> u32 {
        let prev = self.nmspinning.fetch_sub(1, Ordering::SeqCst);
        assert!(prev > 0, "goro: negative nmspinning");
        prev - 1
    }

    /// Go's rule: at most half the busy Ps may have a spinning M.
    pub(crate) fn may_spin(&self, gomaxprocs: u32) -> bool {
        2 * self.nmspinning() < gomaxprocs.saturating_sub(self.npidle())
    }
}

impl<W> Locked<'_, W> {
    /// Takes an idle P.
    pub(crate) fn pidle_get(&mut self) -> Option<usize> {
        let p = self.lists.pidle.pop()?;
        self.idle.npidle.fetch_sub(1, Ordering::SeqCst);
        Some(p)
    }

    /// Takes an idle P for an M that will spin; if there is none, records that a
    /// spinning M was wanted (Go's `pidlegetSpinning`).
    pub(crate) fn pidle_get_spinning(&mut self) -> Option<usize> {
        let p = self.pidle_get();
        if p.is_none() {
            self.idle.needspinning.store(1, Ordering::SeqCst);
        }
        p
    }

    /// For a submitter holding the spinning slot it claimed ([`Idle::should_wake`]):
    /// an idle P for the spinning M it will start; if there is none, `needspinning`
    /// is set and the slot given back, both before the lock is released. (Given
    /// back after, an M could idle its P in between, turning spinning for
    /// `needspinning` and back, while the claim still counted as a spinner; the
    /// next submitter would then wake nobody. Go's `wakep` also gives the slot
    /// back under `sched.lock`. `loom_claim_without_p_given_back_before_an_m_idles`.)
    pub(crate) fn pidle_get_for_claim(&mut self) -> Option<usize> {
        let p = self.pidle_get_spinning();
        if p.is_none() {
            self.idle.stop_spinning();
        }
        p
    }

    /// Returns a P to the idle list.
    pub(crate) fn pidle_put(&mut self, p: usize) {
        debug_assert!(!self.lists.pidle.contains(&p), "P{p} idled twice");
        self.lists.pidle.push(p);
        self.idle.npidle.fetch_add(1, Ordering::SeqCst);
    }

    /// Takes P `p` off the idle list if it is there (a stop-the-world collecting it).
    pub(crate) fn pidle_remove(&mut self, p: usize) -> bool {
        let Some(i) = self.lists.pidle.iter().position(|&x| x == p) else {
            return false;
        };
        self.lists.pidle.remove(i);
        self.idle.npidle.fetch_sub(1, Ordering::SeqCst);
        true
    }

    /// Parks an M on the idle list (the caller then sleeps on its note).
    pub(crate) fn mput(&mut self, m: W) {
        self.lists.midle.push(m);
        self.idle.nmidle.fetch_add(1, Ordering::SeqCst);
    }

    /// Takes a parked M, most recently parked first (its caches are warm).
    pub(crate) fn mget(&mut self) -> Option<W> {
        let m = self.lists.midle.pop()?;
        self.idle.nmidle.fetch_sub(1, Ordering::SeqCst);
        Some(m)
    }

    /// Takes up to `max` of the longest-parked Ms that parked at or before `cutoff`
    /// (`since` says when each parked).
    pub(crate) fn mget_idle_since(&mut self, cutoff: u64, max: usize, since: impl Fn(&W) -> u64) -> Vec<W> {
        let n = self
            .lists
            .midle
            .iter()
            .take(max)
            .take_while(|m| since(m) <= cutoff)
            .count();
        self.idle.nmidle.fetch_sub(n as u32, Ordering::SeqCst);
        self.lists.midle.drain(..n).collect()
    }
}

//! The stack scavenger: gives back to the kernel the memory of free stacks that
//! stayed unused in the global pool for a whole period (Go's background
//! scavenger does this job for its heap, stacks included).
//!
//! A stack keeps its touched pages when its G exits, so the next G that gets it
//! faults in nothing. That is right while stacks are reused. After a burst of a
//! hundred thousand Gs, though, the pool would otherwise hold their pages for
//! the rest of the process's life.
//!
//! # How a stack ages
//! The global pool keeps, per stack size, a [`FreeStacks`] with three lists:
//! - `warm`: stacks whose pages may be resident, oldest at the front. `take` and
//!   `give` work at the back, so the pool's low-water mark since the last period
//!   boundary (`untouched`) counts front stacks that have not moved for a whole
//!   period.
//! - `due`: stacks that were untouched for a whole period, moved there at the
//!   boundary ([`FreeStacks::end_period`]); pages still resident.
//! - `cold`: stacks whose pages were released (`MADV_DONTNEED`): no memory.
//!
//! `take` prefers `warm`, then `due`, then `cold`, so a reused stack is one
//! whose pages are still there whenever there is one. A stack is therefore
//! released one to two periods ([`PERIOD_NS`]) after it came back to the global
//! pool (plus the time to work through the chunks before it). Stacks in a P's
//! cache are not aged: at most 64 per P.
//!
//! # Who does the work
//! sysmon, at each look ([`Scavenger::look`]): it ends a period every
//! [`PERIOD_NS`], and releases at most [`CHUNK`] due stacks per look, so a big
//! release never delays its other duties by more than one chunk's `madvise`
//! calls. While stacks are due it looks again within [`CHUNK_PAUSE_NS`].
//! Released stacks are taken out of the pool under its lock and put back into
//! `cold` afterwards, so no G can get a stack while its pages are being
//! dropped; a `take` that meanwhile finds the pool empty maps a new slab, as
//! it would anyway.
//!
//! Why not release at exit: each `madvise(MADV_DONTNEED)` flushes the TLB on
//! every core running the process, which on the exit path cost a fifth of a
//! burst's cycles (docs/DESIGN.md, "Stacks"). Here only stacks idle for a whole
//! period pay it, once.
//!
//! Thread: [`FreeStacks`] lives under the pool's lock; [`Scavenger`] is
//! sysmon's own.

use super::stack::{GStack, StackPool};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};

/// A period: a stack given back and untouched for one whole period is released.
pub(crate) const PERIOD_NS: u64 = 1_000_000_000;
/// Most stacks released per sysmon look.
pub(crate) const CHUNK: usize = 256;
/// While stacks are due, sysmon looks again at least this soon.
pub(crate) const CHUNK_PAUSE_NS: u64 = 2_000_000;

/// The free stacks of one size (module docs).
#[derive(Debug, Default)]
pub(crate) struct FreeStacks {
    warm: VecDeque<GStack>,
    /// Front `warm` stacks not taken since the last period boundary.
    untouched: usize,
    due: Vec<GStack>,
    cold: Vec<GStack>,
}

impl FreeStacks {
    /// Moves up to `n` stacks onto the end of `out`, ordered so that popping
    /// `out` yields those with resident pages first (the newest warm one, then
    /// due ones, then released ones).
    pub(crate) fn take(&mut self, n: usize, out: &mut Vec<GStack>) {
        let had = out.len();
        for _ in 0..n {
            let Some(s) = self
                .warm
                .pop_back()
                .or_else(|| self.due.pop())
                .or_else(|| self.cold.pop())
            else {
                break;
            };
            out.push(s);
        }
        out[had..].reverse();
        self.untouched = self.untouched.min(self.warm.len());
    }

    pub(crate) fn give(&mut self, s: GStack) {
        self.warm.push_back(s);
    }

    /// A period boundary: stacks untouched since the last one become due; the
    /// rest start a new period.
    pub(crate) fn end_period(&mut self) {
        self.due.extend(self.warm.drain(..self.untouched));
        self.untouched = self.warm.len();
    }

    /// Has stacks that may hold resident pages (what a later period could
    /// release).
    pub(crate) fn holds_pages(&self) -> bool {
        !self.warm.is_empty() || !self.due.is_empty()
    }

    pub(crate) fn has_due(&self) -> bool {
        !self.due.is_empty()
    }

    /// Moves up to `n` due stacks into `out`, to be released.
    pub(crate) fn take_due(&mut self, n: usize, out: &mut Vec<GStack>) {
        let at = self.due.len().saturating_sub(n);
        out.extend(self.due.drain(at..));
    }

    /// Takes back stacks whose pages were released.
    pub(crate) fn put_cold(&mut self, stacks: impl IntoIterator<Item = GStack>) {
        self.cold.extend(stacks);
    }
}

/// Drops the pages of `stacks`: the memory goes back to the kernel, and the
/// next touch reads zeros. One `madvise` per run of adjacent stacks among them
/// (a slab's stacks lie back to back), so a run costs one TLB flush, not one
/// per stack.
/// A run spans the guard pages between its stacks: a guard installed with
/// `MADV_GUARD_INSTALL` survives `MADV_DONTNEED` (madvise(2)), and an
/// `mprotect`ed one has no pages to drop. Returns the number of calls.
pub(crate) fn release(stacks: &mut [GStack]) -> usize {
    stacks.sort_unstable_by_key(|s| s.usable().0);
    let mut calls = 0;
    let mut i = 0;
    while i < stacks.len() {
        let (lo, mut hi) = stacks[i].usable();
        let mut end = i + 1;
        while end < stacks.len() && stacks[end].guard().0 == hi {
            hi = stacks[end].usable().1;
            end += 1;
        }
        // SAFETY: [lo, hi) covers stacks no coroutine runs on, and the guard
        // pages between them: the caller took the stacks out of the free lists
        // under the pool's lock, so no G can be given one until they are put
        // back. A failure leaves the pages resident, which only costs memory.
        unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_DONTNEED) };
        calls += 1;
        i = end;
    }
    calls
}

/// What sysmon reads of the pool without its lock: whether a look has work.
/// Written only under the pool's lock: set by `give`, recomputed by sysmon's
/// `end_period` and `release_due`. A `take` that empties the pool leaves them
/// saying yes, which costs sysmon one look with nothing to do. Read Relaxed;
/// sysmon re-reads `pages` after it has seen every P idle (`deep_sleep`),
/// which orders it after the last `give` of the M that idled its P.
#[derive(Default)]
pub(crate) struct PoolHints {
    /// Some free stack may hold resident pages.
    pages: AtomicBool,
    /// Some stacks are due for release.
    due: AtomicBool,
}

impl PoolHints {
    /// A stack came back (caller holds the pool's lock).
    pub(crate) fn given(&self) {
        if !self.pages.load(Ordering::Relaxed) {
            self.pages.store(true, Ordering::Relaxed);
        }
    }

    /// Recomputes both from the pool (caller holds its lock).
    pub(crate) fn refresh<'a>(&self, sizes: impl Iterator<Item = &'a FreeStacks>) {
        let (pages, due) = sizes.fold((false, false), |(p, d), f| (p || f.holds_pages(), d || f.has_due()));
        self.pages.store(pages, Ordering::Relaxed);
        self.due.store(due, Ordering::Relaxed);
    }

    pub(crate) fn pages(&self) -> bool {
        self.pages.load(Ordering::Relaxed)
    }

    pub(crate) fn due(&self) -> bool {
        self.due.load(Ordering::Relaxed)
    }
}

/// sysmon's side: when the next period ends.
pub(crate) struct Scavenger {
    period_ends: u64,
    /// Most stacks released per look ([`CHUNK`]).
    chunk: usize,
}

impl Scavenger {
    pub(crate) fn new(now: u64) -> Self {
        Scavenger {
            period_ends: now + PERIOD_NS,
            chunk: CHUNK,
        }
    }

    /// Ends a period if one is over, and releases up to a chunk of due stacks.
    /// Returns [`Scavenger::next_look`]. Takes the pool's lock only when there
    /// is something to do.
    pub(crate) fn look(&mut self, pool: &StackPool, now: u64) -> u64 {
        if now >= self.period_ends {
            if pool.hints().pages() {
                pool.end_period();
            }
            self.period_ends = now + PERIOD_NS;
        }
        if pool.hints().due() {
            pool.release_due(self.chunk);
        }
        self.next_look(pool, now)
    }

    /// When sysmon should look again for the scavenger's sake: soon while stacks
    /// are due, at the period's end while some may hold pages, else never
    /// (`u64::MAX`) until stacks come back.
    pub(crate) fn next_look(&self, pool: &StackPool, now: u64) -> u64 {
        if pool.hints().due() {
            now + CHUNK_PAUSE_NS
        } else if pool.hints().pages() {
            self.period_ends
        } else {
            u64::MAX
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::task::stack::{page_size, round_size, SLAB_BYTES};

    /// Resident pages of the usable part of `s` (`mincore`).
    fn resident_pages(s: &GStack) -> usize {
        let (lo, hi) = s.usable();
        let page = page_size();
        let mut vec = vec![0u8; (hi - lo).div_ceil(page)];
        // SAFETY: [lo, hi) is mapped and page-aligned; `vec` has one byte per page.
        let r = unsafe { libc::mincore(lo as *mut libc::c_void, hi - lo, vec.as_mut_ptr()) };
        assert_eq!(r, 0, "mincore: {}", std::io::Error::last_os_error());
        vec.iter().filter(|&&b| b & 1 != 0).count()
    }

    /// Writes to the top `pages` pages of `s`, as a G's frames would.
    fn touch(s: &GStack, pages: usize) {
        let (_, hi) = s.usable();
        for i in 1..=pages {
            // SAFETY: the page lies inside the usable part of a stack this test
            // owns and nothing runs on.
            unsafe { ((hi - i * page_size()) as *mut u8).write_volatile(1) };
        }
    }

    fn stacks(n: usize) -> Vec<GStack> {
        let pool = StackPool::new();
        let mut out = Vec::new();
        pool.take(round_size(0), n, &mut out).unwrap();
        assert_eq!(out.len(), n);
        out
    }

    #[test]
    fn only_a_stack_untouched_for_a_whole_period_falls_due() {
        let mut f = FreeStacks::default();
        let mut s = stacks(4);
        f.give(s.pop().unwrap());
        f.give(s.pop().unwrap());
        f.end_period(); // both were given during the period: not due yet
        assert!(!f.has_due());
        f.give(s.pop().unwrap());
        let mut got = Vec::new();
        f.take(2, &mut got); // takes the newest, then one of the older two
        assert_eq!(got.len(), 2);
        f.give(got.pop().unwrap());
        f.end_period(); // one old stack stayed at the front all period
        let mut due = Vec::new();
        f.take_due(usize::MAX, &mut due);
        assert_eq!(due.len(), 1);
        assert!(!f.has_due());
        assert!(f.holds_pages());
    }

    #[test]
    fn take_prefers_resident_pages() {
        let mut f = FreeStacks::default();
        let mut s = stacks(3);
        let (a, b, c) = (s.pop().unwrap(), s.pop().unwrap(), s.pop().unwrap());
        let (a_top, b_top, c_top) = (a.usable().1, b.usable().1, c.usable().1);
        f.put_cold([a]);
        f.give(b);
        f.end_period();
        f.end_period(); // b is due now
        f.give(c);
        let mut got = Vec::new();
        f.take(3, &mut got);
        f.take(1, &mut got);
        assert_eq!(got.len(), 3, "nothing else was there");
        // A P's cache hands out stacks by popping.
        let order: Vec<_> = std::iter::from_fn(|| got.pop()).map(|s| s.usable().1).collect();
        assert_eq!(order, [c_top, b_top, a_top], "warm, then due, then cold");
    }

    /// Whether the kernel refuses to read the byte at `addr` for us, as it
    /// does for a guard page (`process_vm_readv` on ourselves: no fork, no
    /// signal).
    fn faults(addr: usize) -> bool {
        let mut byte = 0u8;
        let local = libc::iovec {
            iov_base: (&mut byte as *mut u8).cast(),
            iov_len: 1,
        };
        let remote = libc::iovec {
            iov_base: addr as *mut libc::c_void,
            iov_len: 1,
        };
        // SAFETY: the kernel writes at most one byte, into `byte`; it checks
        // the remote address itself.
        let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
        if n == 1 {
            return false;
        }
        let err = std::io::Error::last_os_error();
        assert_eq!(err.raw_os_error(), Some(libc::EFAULT), "process_vm_readv: {err}");
        true
    }

    #[test]
    fn release_gives_the_pages_back_and_keeps_the_guards() {
        let mut s = stacks(3);
        s.iter().for_each(|s| touch(s, 4));
        assert!(s.iter().all(|s| resident_pages(s) == 4));
        assert_eq!(release(&mut s), 1, "adjacent stacks: one call");
        assert!(s.iter().all(|s| resident_pages(s) == 0));
        for s in &s {
            assert!(
                faults(s.guard().0),
                "the guard page below a released stack still faults"
            );
            assert!(!faults(s.usable().1 - 1), "its top byte reads (as zero)");
        }
        touch(&s[0], 1); // still mapped and writable
        assert_eq!(resident_pages(&s[0]), 1);
        let (last, first) = (s.pop().unwrap(), s.swap_remove(0)); // sorted by release
        let mut apart = vec![last, first];
        assert_eq!(release(&mut apart), 2, "stacks apart: one call each");
    }

    #[test]
    fn the_pool_releases_idle_stacks_in_chunks_and_reuses_them() {
        let pool = StackPool::new();
        let size = round_size(0);
        // One slab: 100 stacks here, the rest of it stays in the pool.
        let mut live = Vec::new();
        pool.take(size, 100, &mut live).unwrap();
        live.iter().for_each(|s| touch(s, 2));
        let slab = live[0].usable().1;
        pool.give(live);
        let mut scav = Scavenger {
            period_ends: PERIOD_NS,
            chunk: 100,
        };
        assert_eq!(scav.look(&pool, 0), PERIOD_NS, "nothing falls due in the first period");
        assert_eq!(
            scav.look(&pool, PERIOD_NS),
            2 * PERIOD_NS,
            "the stacks came back during it"
        );
        let mut now = 2 * PERIOD_NS;
        let mut looks = 0;
        loop {
            let next = scav.look(&pool, now);
            looks += 1;
            if next != now + CHUNK_PAUSE_NS {
                assert_eq!(next, u64::MAX, "every stack released: nothing left to watch");
                break;
            }
            now = next;
        }
        let per_slab = SLAB_BYTES / (size + page_size());
        assert_eq!(looks, per_slab.div_ceil(100), "one chunk per look");
        let mut again = Vec::new();
        pool.take(size, 100, &mut again).unwrap();
        assert!(
            again.iter().all(|s| resident_pages(s) == 0),
            "their pages were released"
        );
        assert!(
            again.iter().all(|s| s.usable().1.abs_diff(slab) < SLAB_BYTES),
            "released stacks are reused before a new slab is mapped"
        );
        pool.give(again);
        assert_eq!(
            scav.look(&pool, now),
            3 * PERIOD_NS,
            "stacks came back: watch the next period"
        );
    }
}

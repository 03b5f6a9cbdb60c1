//! Free stacks: a per-P cache for the default size ([`StackCache`]) and a
//! global pool per size ([`StackPool`]), whose stacks age so that the
//! scavenger (`scavenge.rs`) can give back the pages of those left unused.
//!
//! A stack keeps its touched pages when its G exits, so the next G that gets it
//! faults in nothing. That is right while stacks are reused; after a burst of
//! Gs, though, the pool would otherwise hold their pages for the rest of the
//! process's life.
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
//! whose pages are still there whenever there is one. Stacks in a P's cache
//! are not aged: at most [`CACHE_MAX`] per P.
//!
//! Released stacks are taken out of the pool under its lock and put back into
//! `cold` afterwards ([`StackPool::release_due`]), so no G can get a stack
//! while its pages are being dropped; a `take` that meanwhile finds the pool
//! empty maps a new slab, as it would anyway.
//!
//! # Who may touch what
//! [`StackCache`] lives inside a P and is used only by the M holding that P.
//! [`StackPool`] is global and locked; [`FreeStacks`] lives under its lock.

use super::stack::{map_slab, page_size, GStack, SLAB_BYTES};
use crate::runtime::sys::trace_clock::lock_noting_wait;
use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Stacks moved between a P's cache and the global pool at once.
const CACHE_BATCH: usize = 16;
/// A P's cache holds at most this many stacks before giving half back.
const CACHE_MAX: usize = 64;

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

/// The global pool of free stacks, by size, aged for the scavenger (module
/// docs).
pub(crate) struct StackPool {
    free: Mutex<HashMap<usize, FreeStacks>>,
    hints: PoolHints,
}

impl StackPool {
    pub(crate) fn new() -> Self {
        StackPool {
            free: Mutex::new(HashMap::new()),
            hints: PoolHints::default(),
        }
    }

    pub(crate) fn hints(&self) -> &PoolHints {
        &self.hints
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<usize, FreeStacks>> {
        lock_noting_wait!(&self.free)
    }

    /// Moves up to `n` free stacks of `size` into `out`, mapping a new slab if the
    /// pool has none. `size` must come from [`round_size`](super::stack::round_size).
    pub(crate) fn take(&self, size: usize, n: usize, out: &mut Vec<GStack>) -> io::Result<()> {
        let had = out.len();
        if let Some(free) = self.lock().get_mut(&size) {
            free.take(n, out);
        }
        if out.len() > had {
            return Ok(());
        }
        let count = (SLAB_BYTES / (size + page_size())).max(1);
        let mut slab = map_slab(size, count)?;
        let give = n.min(slab.len());
        out.extend(slab.drain(slab.len() - give..));
        if !slab.is_empty() {
            let mut pool = self.lock();
            let free = pool.entry(size).or_default();
            slab.into_iter().for_each(|s| free.give(s));
            self.hints.given();
        }
        Ok(())
    }

    /// Returns stacks to the pool.
    pub(crate) fn give(&self, stacks: impl IntoIterator<Item = GStack>) {
        let mut pool = self.lock();
        for s in stacks {
            pool.entry(s.size()).or_default().give(s);
        }
        self.hints.given();
    }

    /// A scavenge period ends (module docs).
    pub(crate) fn end_period(&self) {
        let mut pool = self.lock();
        pool.values_mut().for_each(FreeStacks::end_period);
        self.hints.refresh(pool.values());
    }

    /// Releases the pages of up to `n` due stacks, outside the lock: they are
    /// out of the pool meanwhile, so no G can be given one.
    pub(crate) fn release_due(&self, n: usize) {
        let mut batch: Vec<(usize, Vec<GStack>)> = Vec::new();
        {
            let mut pool = self.lock();
            let mut left = n;
            for (&size, free) in pool.iter_mut().filter(|(_, f)| f.has_due()) {
                if left == 0 {
                    break;
                }
                let mut stacks = Vec::new();
                free.take_due(left, &mut stacks);
                left -= stacks.len();
                batch.push((size, stacks));
            }
        }
        for (_, stacks) in &mut batch {
            release(stacks);
        }
        let mut pool = self.lock();
        for (size, stacks) in batch {
            pool.entry(size).or_default().put_cold(stacks);
        }
        self.hints.refresh(pool.values());
    }
}

/// A P's cache of free default-size stacks. Owner (the M holding the P) only.
pub(crate) struct StackCache {
    stacks: Vec<GStack>,
}

impl StackCache {
    pub(crate) fn new() -> Self {
        StackCache { stacks: Vec::new() }
    }

    /// A stack of `size` (already rounded): from this cache if it is the default
    /// size, else from the pool.
    pub(crate) fn get(&mut self, pool: &StackPool, size: usize, default_size: usize) -> io::Result<GStack> {
        if size != default_size {
            let mut one = Vec::with_capacity(1);
            pool.take(size, 1, &mut one)?;
            return Ok(one.pop().expect("pool.take returned a stack"));
        }
        if self.stacks.is_empty() {
            pool.take(size, CACHE_BATCH, &mut self.stacks)?;
        }
        Ok(self.stacks.pop().expect("cache refilled"))
    }

    /// Gives every cached stack back to the pool (the P is going away).
    pub(crate) fn drain_to(&mut self, pool: &StackPool) {
        pool.give(self.stacks.drain(..));
    }

    /// Takes back a stack whose coroutine has finished.
    pub(crate) fn put(&mut self, pool: &StackPool, stack: GStack, default_size: usize) {
        if stack.size() != default_size {
            pool.give([stack]);
            return;
        }
        self.stacks.push(stack);
        if self.stacks.len() > CACHE_MAX {
            let at = self.stacks.len() - CACHE_MAX / 2;
            pool.give(self.stacks.drain(at..));
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::runtime::task::stack::{page_size, round_size};

    /// Resident pages of the usable part of `s` (`mincore`).
    pub(crate) fn resident_pages(s: &GStack) -> usize {
        let (lo, hi) = s.usable();
        let page = page_size();
        let mut vec = vec![0u8; (hi - lo).div_ceil(page)];
        // SAFETY: [lo, hi) is mapped and page-aligned; `vec` has one byte per page.
        let r = unsafe { libc::mincore(lo as *mut libc::c_void, hi - lo, vec.as_mut_ptr()) };
        assert_eq!(r, 0, "mincore: {}", std::io::Error::last_os_error());
        vec.iter().filter(|&&b| b & 1 != 0).count()
    }

    /// Writes to the top `pages` pages of `s`, as a G's frames would.
    pub(crate) fn touch(s: &GStack, pages: usize) {
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
}

//! Goroutine stacks: slabs of `mmap(MAP_NORESERVE)` memory, one guard page per
//! stack, and free lists (a per-P cache for the default size, a global pool per size).
//!
//! # Layout
//! A slab is one anonymous mapping holding `n` stacks of `size` usable bytes, each
//! preceded (at its low end, since stacks grow down) by a guard page:
//! `[guard|stack 0][guard|stack 1]...`. Only touched pages cost memory; the address
//! space is reserved, not committed (`MAP_NORESERVE`).
//!
//! Guard pages are installed with `madvise(MADV_GUARD_INSTALL)` (Linux >= 6.13),
//! which marks the page without splitting the mapping, so a million guarded stacks
//! stay far below `vm.max_map_count`. On older kernels the first `EINVAL` switches
//! to `mprotect(PROT_NONE)`, which splits the mapping (2 VMAs per stack, so about
//! 32k live stacks under the default 65530 map limit).
//!
//! Slabs are never unmapped: like Go's stack spans they are recycled through the
//! free lists, and their touched pages stay resident for the next G. Releasing
//! each returned stack's pages at once (`MADV_DONTNEED`) was measured and dropped:
//! every call flushes the TLB on all cores, and with 100,000 sleeping Gs exiting it
//! cost a fifth of the run's cycles. Instead, sysmon's scavenger (`scavenge.rs`)
//! releases the pages of stacks that sat unused in the global pool for a whole
//! period.
//!
//! # Who may touch what
//! [`StackCache`] lives inside a P and is used only by the M holding that P.
//! [`StackPool`] is global and locked.

use super::scavenge::{release, FreeStacks, PoolHints};
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// `madvise` advice that installs a guard marker (Linux 6.13, not yet in `libc`).
const MADV_GUARD_INSTALL: libc::c_int = 102;
/// Target bytes per slab (stack count = this / stride, at least 1).
pub(crate) const SLAB_BYTES: usize = 64 << 20;
/// Stacks moved between a P's cache and the global pool at once.
const CACHE_BATCH: usize = 16;
/// A P's cache holds at most this many stacks before giving half back.
const CACHE_MAX: usize = 64;
/// Smallest stack handed out (smaller requests are rounded up).
pub(crate) const MIN_STACK_SIZE: usize = 16 << 10;
/// Largest stack accepted.
pub(crate) const MAX_STACK_SIZE: usize = 1 << 30;

/// Set once `MADV_GUARD_INSTALL` turned out to be unsupported.
static GUARD_BY_MPROTECT: AtomicBool = AtomicBool::new(false);

pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p <= 0 {
        4096
    } else {
        p as usize
    }
}

/// Rounds a requested stack size to what will be allocated.
pub(crate) fn round_size(size: usize) -> usize {
    let page = page_size();
    size.clamp(MIN_STACK_SIZE, MAX_STACK_SIZE).div_ceil(page) * page
}

/// One goroutine stack: `[bottom, top)` usable, with a guard page just below `bottom`.
#[derive(Debug)]
pub(crate) struct GStack {
    top: usize,
    bottom: usize,
}

// SAFETY: `base`/`limit` describe a mapped, writable, exclusively owned region: a
// GStack is handed out by the allocator to exactly one coroutine at a time and comes
// back only after that coroutine finished (`Coroutine::into_stack`).
unsafe impl corosensei::stack::Stack for GStack {
    fn base(&self) -> corosensei::stack::StackPointer {
        corosensei::stack::StackPointer::new(self.top).expect("stack top is non-null")
    }

    fn limit(&self) -> corosensei::stack::StackPointer {
        corosensei::stack::StackPointer::new(self.bottom).expect("stack bottom is non-null")
    }
}

impl GStack {
    pub(crate) fn size(&self) -> usize {
        self.top - self.bottom
    }

    /// `[lo, hi)` of the usable part.
    pub(crate) fn usable(&self) -> (usize, usize) {
        (self.bottom, self.top)
    }

    /// `[lo, hi)` of the guard page.
    pub(crate) fn guard(&self) -> (usize, usize) {
        (self.bottom - page_size(), self.bottom)
    }
}

/// Maps a slab of `count` stacks of `size` bytes and installs their guard pages.
fn map_slab(size: usize, count: usize) -> io::Result<Vec<GStack>> {
    let page = page_size();
    let stride = size + page;
    let len = stride
        .checked_mul(count)
        .ok_or_else(|| io::Error::other("stack slab too large"))?;
    // SAFETY: anonymous private mapping with no address hint; the result is checked.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: [base, base+len) is the mapping just created. Huge pages would make
    // every touched stack cost 2 MiB; a failure only loses that optimisation.
    unsafe { libc::madvise(base, len, libc::MADV_NOHUGEPAGE) };
    let base = base as usize;
    let mut stacks = Vec::with_capacity(count);
    for i in 0..count {
        let guard = base + i * stride;
        install_guard(guard, page)?;
        stacks.push(GStack {
            bottom: guard + page,
            top: guard + stride,
        });
    }
    Ok(stacks)
}

fn install_guard(addr: usize, page: usize) -> io::Result<()> {
    if !GUARD_BY_MPROTECT.load(Ordering::Relaxed) {
        // SAFETY: `addr` is a page inside a mapping we own and no one uses yet.
        let r = unsafe { libc::madvise(addr as *mut libc::c_void, page, MADV_GUARD_INSTALL) };
        if r == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINVAL) {
            return Err(err);
        }
        GUARD_BY_MPROTECT.store(true, Ordering::Relaxed);
    }
    // SAFETY: as above; PROT_NONE on a page we own.
    let r = unsafe { libc::mprotect(addr as *mut libc::c_void, page, libc::PROT_NONE) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The global pool of free stacks, by size, aged by the scavenger
/// (`scavenge.rs`).
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
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves up to `n` free stacks of `size` into `out`, mapping a new slab if the
    /// pool has none. `size` must come from [`round_size`].
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

    /// A scavenge period ends (`scavenge.rs`).
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

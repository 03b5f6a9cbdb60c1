//! Goroutine stacks: slabs of `mmap(MAP_NORESERVE)` memory, one guard page per
//! stack. The free lists they go back to are in `stack_pool.rs`.
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
//! Slabs are never unmapped: like Go's stack spans their stacks are recycled
//! through the free lists (`stack_pool.rs`), touched pages and all; the
//! scavenger (`scavenge.rs`) releases the pages of stacks left unused
//! (docs/decisions/0022-stacks.md).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

/// `madvise` advice that installs a guard marker (Linux 6.13, not yet in `libc`).
const MADV_GUARD_INSTALL: libc::c_int = 102;
/// Target bytes per slab (stack count = this / stride, at least 1).
pub(crate) const SLAB_BYTES: usize = 64 << 20;
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
pub(crate) fn map_slab(size: usize, count: usize) -> io::Result<Vec<GStack>> {
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

/// Gives the pages of `[lo, hi)` (page-aligned, inside stack slabs) back to
/// the kernel: their next touch maps a fresh zero page. Guard markers stay
/// (`MADV_DONTNEED` leaves them), so one call may span several stacks of a
/// slab, guard pages and all.
pub(crate) fn release_pages(lo: usize, hi: usize) -> io::Result<()> {
    // SAFETY: the range lies in slabs this module mapped, whose contents the
    // caller no longer needs (a swapped-out stack, copied to the heap).
    let r = unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_DONTNEED) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether any page of `[lo, hi)` (inside a stack slab) is mapped: read or
/// written since [`release_pages`] released it. `false` if the kernel cannot
/// say.
pub(crate) fn any_resident(lo: usize, hi: usize) -> bool {
    let page = page_size();
    let lo = lo / page * page;
    let mut vec = [0u8; 64];
    let pages = (hi - lo).div_ceil(page).min(vec.len());
    // SAFETY: `lo` is page-aligned inside a mapping; `vec` has room for one
    // byte per page of the (clamped) length.
    let r = unsafe { libc::mincore(lo as *mut libc::c_void, pages * page, vec.as_mut_ptr()) };
    r == 0 && vec[..pages].iter().any(|b| b & 1 != 0)
}

//! Free G headers, recycled instead of freed (Go's `gFree` lists).
//!
//! A G header is needed from spawn to exit. At exit it goes to the free list of the
//! P its M holds; a spawn takes one from its own P's list. Lists that grow past
//! [`LOCAL_MAX`] give half to the global pool; empty ones take a batch from it,
//! and only when that is empty too is a new header allocated. So in steady state a
//! spawn does no allocation for its G, and a spawn storm on one P fed by Gs
//! exiting on another moves headers in batches of [`BATCH`] per lock.
//!
//! Headers are never freed: like Go's, the pool's size is the peak number of live
//! Gs. Soundness relies on that: `schedule::prefetch_next` reads a header it does
//! not own (one a thief may have taken, run and recycled meanwhile).
//!
//! Who may touch what: a P's list, a [`GFreeCache`], is its holder's; the pool
//! is locked. `proc/p.rs` (`gfget`, `gfput`) picks the list of the P at hand.

use super::g::{GRef, G};
use crate::runtime::sys::trace_clock::lock_noting_wait;
use std::sync::Mutex;

/// Headers moved between a P's list and the global pool at once.
const BATCH: usize = 32;
/// A P keeps at most this many free headers.
const LOCAL_MAX: usize = 64;

/// The global pool of free headers.
pub(crate) struct GFreePool {
    list: Mutex<Vec<GRef>>,
}

impl GFreePool {
    pub(crate) fn new() -> Self {
        GFreePool {
            list: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<GRef>> {
        lock_noting_wait!(&self.list)
    }

    /// A free header from the pool, or a new one, for an M without a P.
    pub(crate) fn get(&self) -> GRef {
        self.lock().pop().unwrap_or_else(G::alloc)
    }

    /// Takes back the header of an exited G, from an M without a P.
    pub(crate) fn put(&self, g: GRef) {
        self.lock().push(g);
    }
}

/// A P's free headers. Only the M holding the P touches it.
pub(crate) struct GFreeCache {
    list: Vec<GRef>,
}

impl GFreeCache {
    pub(crate) fn new() -> Self {
        GFreeCache { list: Vec::new() }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// A free header for a new G: from this list, refilled by a batch from
    /// `pool` when empty, else a new one.
    #[inline]
    pub(crate) fn get(&mut self, pool: &GFreePool) -> GRef {
        if self.list.is_empty() {
            let mut global = pool.lock();
            let at = global.len().saturating_sub(BATCH);
            self.list.extend(global.drain(at..));
        }
        self.list.pop().unwrap_or_else(G::alloc)
    }

    /// Takes back the header of an exited G; past [`LOCAL_MAX`], gives half to
    /// the pool (`pool` is called only then).
    #[inline]
    pub(crate) fn put<'a>(&mut self, g: GRef, pool: impl FnOnce() -> &'a GFreePool) {
        self.list.push(g);
        if self.list.len() > LOCAL_MAX {
            let at = self.list.len() - LOCAL_MAX / 2;
            pool().lock().extend(self.list.drain(at..));
        }
    }

    /// Moves every header to `pool` (the P is being destroyed).
    pub(crate) fn drain_to(&mut self, pool: &GFreePool) {
        pool.lock().append(&mut self.list);
    }
}

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
//! Who may touch what: a P's list is its holder's ([`crate::runtime::sched::p::Local`]); the pool
//! is locked.

use super::g::{GRef, G};
use crate::runtime::sched::p::P;
use crate::runtime::sched::state::sched;
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
        self.list.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A free header for a new G: from the list of `p` (the current M's P, if any),
/// the global pool, or the heap. The caller owns it exclusively until it queues
/// the G.
pub(crate) fn gfget(p: Option<&P>) -> GRef {
    let pool = &sched().gfree;
    let Some(p) = p else {
        return pool.lock().pop().unwrap_or_else(G::alloc);
    };
    // SAFETY: `p` is held by the calling M; no other reference to its local state
    // is live.
    let local = unsafe { p.local() };
    if local.gfree.is_empty() {
        let mut global = pool.lock();
        let at = global.len().saturating_sub(BATCH);
        local.gfree.extend(global.drain(at..));
    }
    let g = local.gfree.pop().unwrap_or_else(G::alloc);
    p.note_gfree(local.gfree.len());
    g
}

/// Moves every free header of `p` (held exclusively: it is being destroyed) to
/// the global pool.
pub(crate) fn gfree_drain(p: &P) {
    // SAFETY: the caller owns `p` exclusively.
    let local = unsafe { p.local() };
    sched().gfree.lock().append(&mut local.gfree);
    p.note_gfree(0);
}

/// Returns the header of an exited G to `p`'s list (caller holds `p`), or to the
/// global pool from an M without a P.
pub(crate) fn gfput(p: Option<&P>, g: GRef) {
    let Some(p) = p else {
        sched().gfree.lock().push(g);
        return;
    };
    // SAFETY: the caller holds `p`; no other reference to its local state is live.
    let local = unsafe { p.local() };
    local.gfree.push(g);
    if local.gfree.len() > LOCAL_MAX {
        let at = local.gfree.len() - LOCAL_MAX / 2;
        sched().gfree.lock().extend(local.gfree.drain(at..));
    }
    p.note_gfree(local.gfree.len());
}

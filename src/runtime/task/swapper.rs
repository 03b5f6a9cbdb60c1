//! The idle-stack swapper: sysmon's sweep over every G header, swapping out
//! the stacks of Gs parked for longer than `Config::swap_idle_after` in a
//! wait that keeps nothing on their stack (`g/swap.rs` says how a stack goes
//! out and comes back). A G woken sooner never pays.
//!
//! Each sysmon look examines at most [`SWEEP_CHUNK`] headers (reading a few
//! atomics each, pinning only those due), so a million parked Gs never delay
//! sysmon's other duties by more than one chunk; while a sweep is under way
//! sysmon looks again within [`CHUNK_PAUSE_NS`]. A sweep starts again half a
//! threshold after the last one began, or when the first G it saw parked
//! comes due, whichever is later.
//!
//! Swapped-out stacks' pages are released in batches of up to [`BATCH`]:
//! the stacks are pinned and copied first, then neighbours in a slab are
//! released by one `madvise` (each call flushes the TLB of every core
//! running the process), then the Gs are unpinned. A waker meanwhile waits
//! for the pin, as for a dump's inspection.
//!
//! Thread: the [`Swapper`] is sysmon's own; the counters are anyone's.

use super::g::swap::{self, pin_parked, swappable, unpin};
use super::g::{gs_from, GRef};
use super::stack::{page_size, release_pages};
use crate::runtime::sys::coarse_clock::coarse_now_ms;
use crate::runtime::sys::trace_buf::{self, Kind};
use std::sync::atomic::Ordering;

/// Most G headers examined per sysmon look.
pub(crate) const SWEEP_CHUNK: usize = 4096;
/// Most stacks pinned and copied before their pages are released together.
pub(crate) const BATCH: usize = 32;
/// While a sweep is under way, sysmon looks again at least this soon.
pub(crate) const CHUNK_PAUSE_NS: u64 = 1_000_000;

/// sysmon's side of the sweep.
pub(crate) struct Swapper {
    /// The threshold, in ms; 0: off.
    after_ms: u64,
    /// The next header index of the sweep under way, or `None` between sweeps.
    cursor: Option<usize>,
    /// When the sweep under way began (ns).
    began_ns: u64,
    /// The soonest a G this sweep saw parked comes due (ms; `u64::MAX`: none).
    soonest_ms: u64,
    /// When the next sweep begins (ms).
    next_ms: u64,
    /// Since when every P has been idle (ns), as sysmon last said: no G can
    /// have parked since then.
    idle_from_ns: Option<u64>,
    chunk: Vec<GRef>,
    batch: Vec<(GRef, usize, usize)>,
}

impl Swapper {
    /// A swapper for the threshold `after_ms` (0 turns it off).
    pub(crate) fn new(after_ms: u64) -> Self {
        Swapper {
            after_ms,
            cursor: None,
            began_ns: 0,
            soonest_ms: u64::MAX,
            next_ms: 0,
            idle_from_ns: None,
            chunk: Vec::new(),
            batch: Vec::new(),
        }
    }

    /// Sweeps one chunk if a sweep is under way or due; returns when sysmon
    /// should look again (ns, on the clock of `now_ns`; `u64::MAX`: never
    /// for the swapper's sake).
    pub(crate) fn look(&mut self, now_ns: u64) -> u64 {
        if self.after_ms == 0 {
            return u64::MAX;
        }
        let now_ms = now_ns / 1_000_000;
        if self.cursor.is_none() && now_ms >= self.next_ms {
            self.cursor = Some(0);
            self.began_ns = now_ns;
            self.soonest_ms = u64::MAX;
        }
        if let Some(from) = self.cursor {
            self.chunk.clear();
            let total = gs_from(from, SWEEP_CHUNK, &mut self.chunk);
            let chunk = std::mem::take(&mut self.chunk);
            for &g in &chunk {
                self.consider(g);
            }
            self.chunk = chunk;
            self.flush();
            let next = from + self.chunk.len();
            if next < total {
                self.cursor = Some(next);
                return now_ns + CHUNK_PAUSE_NS;
            }
            self.cursor = None;
            let again = (self.began_ns / 1_000_000).saturating_add(self.after_ms / 2);
            self.next_ms = match self.soonest_ms {
                u64::MAX => again,
                soonest => soonest.max(again),
            };
        }
        self.next_look_ns()
    }

    /// sysmon says whether every P is idle now (`now_ns`): while they stay
    /// so, no G parks.
    pub(crate) fn all_idle(&mut self, idle: bool, now_ns: u64) {
        if !idle {
            self.idle_from_ns = None;
        } else if self.idle_from_ns.is_none() {
            self.idle_from_ns = Some(now_ns);
        }
    }

    /// When sysmon should look again for the swapper's sake while every P is
    /// idle ([`Swapper::all_idle`]): at the next sweep, unless the last one
    /// began after the Ps went idle (it saw every parked G there will be) and
    /// found none that will come due; then never.
    pub(crate) fn next_look(&self, now_ns: u64) -> u64 {
        // Strictly after: a sweep in the same instant may have missed a G
        // that parked just before the Ps went idle.
        let saw_all = self.idle_from_ns.is_some_and(|idle| self.began_ns > idle);
        if self.after_ms == 0 {
            u64::MAX
        } else if self.cursor.is_some() {
            now_ns + CHUNK_PAUSE_NS
        } else if saw_all && self.soonest_ms == u64::MAX {
            u64::MAX
        } else {
            self.next_look_ns()
        }
    }

    fn next_look_ns(&self) -> u64 {
        self.next_ms.saturating_mul(1_000_000)
    }

    /// Swaps `g`'s stack out if it has been parked long enough in a wait
    /// that allows it; notes when it will be, if not yet.
    fn consider(&mut self, g: GRef) {
        if !swap::swap_candidate(&g) {
            return;
        }
        let due = g.wait_since_ms().saturating_add(self.after_ms);
        if due > coarse_now_ms() {
            self.soonest_ms = self.soonest_ms.min(due);
            return;
        }
        if !pin_parked(&g) {
            return;
        }

        let Some((bottom, top)) = swappable(&g) else {
            return unpin(&g);
        };
        let Some(kept) = swap::swap_out(&g) else {
            return unpin(&g);
        };
        if trace_buf::on() {
            trace_buf::record_shared_now(Kind::SwapOut, trace_buf::NO_P, g.id(), kept as u64, 0);
        }
        self.batch.push((g, bottom, top));
        if self.batch.len() == BATCH {
            self.flush();
        }
    }

    /// Releases the pages of the batch's stacks, neighbours in one call, and
    /// unpins their Gs.
    fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        self.batch.sort_unstable_by_key(|&(_, bottom, _)| bottom);
        let page = page_size();
        let mut run: Option<(usize, usize)> = None;
        for &(_, bottom, top) in &self.batch {
            run = match run {
                Some((lo, hi)) if hi + page == bottom => Some((lo, top)),
                Some((lo, hi)) => {
                    // A failed release leaves pages resident: the copies stay right.
                    let _ = release_pages(lo, hi);
                    Some((bottom, top))
                }
                None => Some((bottom, top)),
            };
        }
        if let Some((lo, hi)) = run {
            let _ = release_pages(lo, hi);
        }
        swap::SWAPPED_OUT.fetch_add(self.batch.len() as u64, Ordering::Relaxed);
        for (g, _, _) in self.batch.drain(..) {
            unpin(&g);
        }
    }
}

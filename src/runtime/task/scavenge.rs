//! The stack scavenger: gives back to the kernel the memory of free stacks that
//! stayed unused in the global pool for a whole period (Go's background
//! scavenger does this job for its heap, stacks included). How a stack ages
//! towards that is in `stack_pool.rs`.
//!
//! sysmon runs it at each look ([`Scavenger::look`]): it ends a period every
//! [`PERIOD_NS`], and releases at most [`CHUNK`] due stacks per look, so a big
//! release never delays its other duties by more than one chunk's `madvise`
//! calls. While stacks are due it looks again within [`CHUNK_PAUSE_NS`]. A
//! stack is therefore released one to two periods after it came back to the
//! global pool (plus the time to work through the chunks before it).
//!
//! Stacks are not released at exit: each `madvise(MADV_DONTNEED)` flushes the
//! TLB on every core running the process, so only stacks idle for a whole
//! period pay it, once (docs/decisions/0023-stack-scavenger.md).
//!
//! Thread: the [`Scavenger`] is sysmon's own.

use super::stack_pool::StackPool;

/// A period: a stack given back and untouched for one whole period is released.
pub(crate) const PERIOD_NS: u64 = 1_000_000_000;
/// Most stacks released per sysmon look.
pub(crate) const CHUNK: usize = 256;
/// While stacks are due, sysmon looks again at least this soon.
pub(crate) const CHUNK_PAUSE_NS: u64 = 2_000_000;

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
    use crate::runtime::task::stack_pool::tests::{resident_pages, touch};

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

//! `goro::runtime::stats()`: a snapshot of the scheduler's counters.
//!
//! Counters are per P (written only by the M holding the P, so no contended cache
//! line on the hot path) and summed here. The snapshot is not atomic across Ps;
//! `completed` is read before `spawned` so `live` never comes out negative from a
//! G that was counted as finished but not yet as spawned.

use crate::runtime::proc::state::Sched;
use crate::runtime::task::g::swap::{HELD_BYTES, SWAPPED_IN, SWAPPED_OUT};
use std::sync::atomic::Ordering::Relaxed;

/// A snapshot of the runtime's counters, returned by [`stats`](fn@crate::runtime::stats).
///
/// All counters increase monotonically from start-up, except those marked as
/// gauges. The figures are sums over the Ps, read one after another without
/// stopping them, so they may be a moment apart. The struct is
/// `#[non_exhaustive]`: more counters may come, so build none yourself; read the
/// fields, or print it with `{:?}`.
///
/// ```
/// let before = goro::runtime::stats();
/// let hs: Vec<_> = (0..100).map(|_| goro::go!(|| goro::yield_now())).collect();
/// hs.into_iter().for_each(|h| h.join().unwrap());
/// let after = goro::runtime::stats();
/// assert!(after.spawned - before.spawned >= 100);
/// assert!(after.completed - before.completed >= 100);
/// assert!(after.context_switches > before.context_switches);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Gs created.
    pub spawned: u64,
    /// Gs that finished (returned or panicked).
    pub completed: u64,
    /// Gauge: Gs spawned and not finished.
    pub live: u64,
    /// Times an M resumed a G.
    pub context_switches: u64,
    /// Successful steal operations.
    pub steals: u64,
    /// Gs moved by steals.
    pub stolen: u64,
    /// Times a P took work from the global run queue.
    pub global_runq_gets: u64,
    /// Gs taken from a P's `runnext` slot.
    pub runnext_hits: u64,
    /// Gs made runnable by the network poller.
    pub netpoll_ready: u64,
    /// Timers that fired.
    pub timers_fired: u64,
    /// Ps handed to another M because their G was stuck in a blocking call.
    pub syscall_handoffs: u64,
    /// Ps retaken from a G that ran too long without yielding, on the CPU.
    pub preempt_retakes: u64,
    /// Ps retaken from a G that held its thread in the kernel (a system call
    /// outside `goro::blocking`: `std::thread::sleep`, a std file read, a
    /// sync client library) for as long: its thread used under a tenth of
    /// that time on the CPU. `GODEBUG=blockwarn=1` names each one.
    pub blocking_retakes: u64,
    /// Parked goroutines' stacks swapped out (`Config::swap_idle_after`).
    pub stacks_swapped_out: u64,
    /// Swapped-out stacks copied back (their goroutine woke, or a dump
    /// looked at it).
    pub stacks_swapped_in: u64,
    /// Gauge: bytes of swapped-out stacks' live parts held on the heap.
    pub swapped_bytes: u64,
    /// Per-P figures, indexed by P id.
    pub procs: Vec<ProcStats>,
}

/// One P's figures, in [`Stats::procs`] (indexed by P id, one per P in use).
/// `#[non_exhaustive]`, as [`Stats`].
///
/// ```
/// goro::go!(|| ()).join().unwrap();
/// let s = goro::runtime::stats();
/// assert_eq!(s.procs.len(), goro::runtime::gomaxprocs());
/// let rounds: u64 = s.procs.iter().map(|p| p.schedtick).sum();
/// assert!(rounds >= 1); // some P ran the goroutine
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProcStats {
    /// Scheduling rounds that started a new time slice.
    pub schedtick: u64,
    /// Gauge: Gs in the P's local ring (not counting `runnext`, as Go's schedtrace).
    pub runq_len: u64,
    /// Successful steals by this P.
    pub steals: u64,
}

pub(crate) fn collect(s: &Sched) -> Stats {
    let mut st = Stats {
        completed: s.counters.completed_outside.load(Relaxed),
        ..Stats::default()
    };
    // Counters of every P ever made: a P removed by `set_gomaxprocs` keeps its own.
    for p in s.every_p() {
        st.completed += p.counters.completed.load(Relaxed);
    }
    st.spawned = s.counters.spawned_outside.load(Relaxed);
    let nprocs = s.gomaxprocs();
    for p in s.every_p() {
        let c = &p.counters;
        st.spawned += c.spawned.load(Relaxed);
        st.context_switches += c.context_switches.load(Relaxed);
        st.steals += c.steals.load(Relaxed);
        st.stolen += c.stolen.load(Relaxed);
        st.global_runq_gets += c.global_runq_gets.load(Relaxed);
        st.runnext_hits += c.runnext_hits.load(Relaxed);
        st.timers_fired += c.timers_fired.load(Relaxed);
        if p.id < nprocs {
            st.procs.push(ProcStats {
                schedtick: c.schedtick.load(Relaxed),
                runq_len: u64::from(p.runq.ring_len()),
                steals: c.steals.load(Relaxed),
            });
        }
    }
    st.live = st.spawned.saturating_sub(st.completed);
    st.netpoll_ready = s.counters.netpoll_ready.load(Relaxed);
    st.syscall_handoffs = s.counters.syscall_handoffs.load(Relaxed);
    st.preempt_retakes = s.counters.preempt_retakes.load(Relaxed);
    st.blocking_retakes = s.counters.blocking_retakes.load(Relaxed);
    st.stacks_swapped_out = SWAPPED_OUT.load(Relaxed);
    st.stacks_swapped_in = SWAPPED_IN.load(Relaxed);
    st.swapped_bytes = HELD_BYTES.load(Relaxed);
    st
}

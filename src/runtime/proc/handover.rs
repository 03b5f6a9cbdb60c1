//! Handing the core over: an M that has run for [`RUN_NS`] without sleeping or
//! yielding, and whose queue has just run dry while Gs wait on the network, yields
//! its thread once before it polls for the next batch, so that a thread the
//! kernel keeps waiting behind it (the server's own clients on a shared
//! machine, a proxy in front of it) gets the core now rather than at the end of
//! this M's time slice.
//!
//! # Why
//! A busy server M runs until the kernel preempts it: a whole OS time slice.
//! Meanwhile a client thread on the same core waits with the responses piling
//! up in its sockets, and every one of those requests takes that wait into its
//! latency. Handing the core over once cuts that tail at the same throughput
//! (docs/decisions/0013-handing-the-core-over.md).
//!
//! # When a handover pays, and when it does not
//! A yield lasts as long as the thread that gets the core keeps it, and the
//! runtime cannot tell what that thread is. It reads the yield's length:
//! - under [`NOBODY_NS`]: no other thread wanted the core; the yield cost a
//!   system call and nothing else. Neutral.
//! - under [`SLICE_YIELD_NS`]: the thread that got the core needed it only
//!   briefly; it was not starved, and each such yield costs two context
//!   switches and makes the client work in smaller batches. It counts against
//!   the handover.
//! - [`SLICE_YIELD_NS`] to [`HOG_NS`]: the thread had a slice's worth of work
//!   queued behind this M. That is what the handover is for; it counts for it.
//! - [`HOG_NS`] or more: a thread that uses every slice it is given, a CPU-bound
//!   neighbour. Each such yield gives it a slice of this M's share of the
//!   core. The handover pauses for [`PAUSE_NS`].
//!
//! A score counts slice-long yields up and brief ones down; at
//! [`SCORE_FLOOR`] the handover pauses for [`PAUSE_NS`] and the score starts
//! again from zero. So where yields are brief, a handful are taken every
//! [`PAUSE_NS`] and the cost is gone; where they pay, they go on.
//!
//! # Other rules
//! - Only while Gs wait on the network and no M is blocked in the poller (the
//!   caller's condition: it is about to poll without blocking), and only by an
//!   M that is not spinning (a spinner answers for other Ps' new work; a yield
//!   would make that work wait).
//! - Never with a timer due soon ([`timer_due_soon`]: the search's next
//!   timer), for the reason poll-spinning has the same rule: one yield may
//!   outlast it.
//! - The M keeps its P and everything else while it yields: to the rest of the
//!   scheduler it is an M still searching, as it may be at any moment (the
//!   kernel can preempt it there). This adds no case to the parking protocol.
//! - The M's run is counted from its last sleep in the poller or on its note,
//!   or its last yield here or in poll-spinning. A G's `blocking` call also
//!   takes the M off its CPU but is not counted (that would cost a clock read
//!   per call): the M's next dry queue may then yield at once, which costs one
//!   yield, judged like any other.
//! - Not while a stop-the-world is collecting the Ps (it waits for this P).
//!
//! # Threads and orderings
//! The state is the M's own: read and written only by its thread (`Relaxed`;
//! atomics only because `M` is shared).

use super::m::M;
use super::pollspin::timer_due_soon;
use super::state::Sched;
use crate::runtime::sys::sync_prims::spin_yield;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

/// Time on the CPU (since the M last slept or yielded) after which it hands
/// the core over at its next dry queue (decision 0013).
const RUN_NS: u64 = 2_000_000;
/// A yield shorter than this found no other thread wanting the core.
const NOBODY_NS: u64 = 50_000;
/// A yield this long handed the core to a thread with a slice of work queued.
const SLICE_YIELD_NS: u64 = 1_000_000;
/// A yield this long handed the core to a thread that takes every slice.
const HOG_NS: u64 = 4_000_000;
/// How long the handover pauses after a hog, or after too many brief yields.
const PAUSE_NS: u64 = 100_000_000;
/// The score's ceiling (how many slice-long yields it remembers).
const SCORE_CEILING: i32 = 8;
/// The score at which brief yields have outweighed slice-long ones.
const SCORE_FLOOR: i32 = -4;

/// One M's handover state (`M::handover`).
pub(crate) struct Handover {
    /// When the M last came back on its CPU from a sleep or a yield (runtime
    /// clock); 0: not yet known.
    on_cpu_since: AtomicU64,
    /// No handover before this time (runtime clock).
    paused_until: AtomicU64,
    /// Slice-long yields minus brief ones, within [`SCORE_FLOOR`] and
    /// [`SCORE_CEILING`].
    score: AtomicI32,
}

/// Step 5 of the search, before its non-blocking poll: the M `m`, holding a
/// P whose queue ran dry while Gs wait on the network, hands its core over if
/// that is due (module docs). `next_timer`: the earliest timer it answers for.
pub(crate) fn offer(s: &Sched, m: &M, next_timer: u64) {
    if m.spinning() || s.stopping.load(Ordering::Relaxed) {
        return;
    }
    let now = s.nanotime();
    if m.handover.due(now, next_timer) {
        spin_yield();
        m.handover.yielded(now, s.nanotime());
    }
}

impl Handover {
    pub(crate) const fn new() -> Self {
        Handover {
            on_cpu_since: AtomicU64::new(0),
            paused_until: AtomicU64::new(0),
            score: AtomicI32::new(0),
        }
    }

    /// Forgets everything (the M record is reused by a new thread).
    pub(crate) fn reset(&self) {
        self.on_cpu_since.store(0, Ordering::Relaxed);
        self.paused_until.store(0, Ordering::Relaxed);
        self.score.store(0, Ordering::Relaxed);
    }

    /// The M is back on its CPU at `now`, from a sleep or a yield.
    pub(crate) fn back_on_cpu(&self, now: u64) {
        self.on_cpu_since.store(now.max(1), Ordering::Relaxed);
    }

    /// Whether the M should yield now, before its non-blocking poll: it has been
    /// on its CPU for [`RUN_NS`], is not paused, and `next_timer` (the search's
    /// earliest) is not due soon ([`timer_due_soon`]).
    pub(crate) fn due(&self, now: u64, next_timer: u64) -> bool {
        let since = self.on_cpu_since.load(Ordering::Relaxed);
        if since == 0 {
            self.back_on_cpu(now);
            return false;
        }
        now.saturating_sub(since) >= RUN_NS
            && now >= self.paused_until.load(Ordering::Relaxed)
            && !timer_due_soon(now, next_timer)
    }

    /// A handover yield that began at `from` returned at `back`: judges it by
    /// its length (module docs).
    pub(crate) fn yielded(&self, from: u64, back: u64) {
        self.back_on_cpu(back);
        let took = back.saturating_sub(from);
        let score = self.score.load(Ordering::Relaxed);
        if took >= HOG_NS {
            self.pause(back);
        } else if took >= SLICE_YIELD_NS {
            self.score.store((score + 1).min(SCORE_CEILING), Ordering::Relaxed);
        } else if took >= NOBODY_NS {
            if score - 1 <= SCORE_FLOOR {
                self.pause(back);
            } else {
                self.score.store(score - 1, Ordering::Relaxed);
            }
        }
    }

    fn pause(&self, now: u64) {
        self.paused_until.store(now.saturating_add(PAUSE_NS), Ordering::Relaxed);
        self.score.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::proc::pollspin::TIMER_GUARD_NS;
    use crate::runtime::proc::timers::NO_TIMER;

    /// A handover whose M came on its CPU at 1 ms.
    fn on_cpu_at_1ms() -> Handover {
        let h = Handover::new();
        h.back_on_cpu(1_000_000);
        h
    }

    #[test]
    fn due_after_running_long_enough() {
        let h = on_cpu_at_1ms();
        assert!(!h.due(1_000_000 + RUN_NS - 1, NO_TIMER));
        assert!(h.due(1_000_000 + RUN_NS, NO_TIMER));
    }

    #[test]
    fn first_look_only_starts_the_clock() {
        let h = Handover::new();
        assert!(!h.due(50_000_000, NO_TIMER));
        assert!(!h.due(50_000_000 + RUN_NS - 1, NO_TIMER));
        assert!(h.due(50_000_000 + RUN_NS, NO_TIMER));
    }

    #[test]
    fn never_with_a_timer_due_soon() {
        let h = on_cpu_at_1ms();
        let now = 1_000_000 + RUN_NS;
        assert!(!h.due(now, now + TIMER_GUARD_NS));
        assert!(h.due(now, now + TIMER_GUARD_NS + 1));
    }

    #[test]
    fn a_yield_restarts_the_run() {
        let h = on_cpu_at_1ms();
        let now = 1_000_000 + RUN_NS;
        h.yielded(now, now + 10_000);
        assert!(!h.due(now + 10_000 + RUN_NS - 1, NO_TIMER));
        assert!(h.due(now + 10_000 + RUN_NS, NO_TIMER));
    }

    #[test]
    fn a_hog_pauses_it() {
        let h = on_cpu_at_1ms();
        let from = 1_000_000 + RUN_NS;
        let back = from + HOG_NS;
        h.yielded(from, back);
        assert!(!h.due(back + PAUSE_NS - 1, NO_TIMER));
        assert!(h.due(back + PAUSE_NS, NO_TIMER));
    }

    #[test]
    fn brief_yields_pause_it_unless_slice_long_ones_outweigh_them() {
        let h = on_cpu_at_1ms();
        let mut t = 10_000_000;
        let mut brief = |h: &Handover| {
            h.yielded(t, t + NOBODY_NS);
            t += RUN_NS + NOBODY_NS;
            t
        };
        for _ in 0..(-SCORE_FLOOR - 1) {
            let now = brief(&h);
            assert!(h.due(now, NO_TIMER), "paused before the floor");
        }
        let now = brief(&h);
        assert!(!h.due(now, NO_TIMER), "not paused at the floor");
        assert!(h.due(now + PAUSE_NS, NO_TIMER));

        // Two slice-long yields, then as many brief ones as the floor needs from
        // zero, plus those two.
        let h = on_cpu_at_1ms();
        let mut t = 10_000_000;
        for _ in 0..2 {
            h.yielded(t, t + SLICE_YIELD_NS);
            t += RUN_NS + SLICE_YIELD_NS;
        }
        let mut brief = |h: &Handover| {
            h.yielded(t, t + SLICE_YIELD_NS - 1);
            t += RUN_NS + SLICE_YIELD_NS;
            t
        };
        for _ in 0..(-SCORE_FLOOR - 1 + 2) {
            let now = brief(&h);
            assert!(h.due(now, NO_TIMER), "slice-long yields did not count");
        }
        let now = brief(&h);
        assert!(!h.due(now, NO_TIMER));
    }

    #[test]
    fn yields_nobody_wanted_are_neutral() {
        let h = on_cpu_at_1ms();
        let mut t = 10_000_000;
        for _ in 0..100 {
            h.yielded(t, t + NOBODY_NS - 1);
            t += RUN_NS + NOBODY_NS;
            assert!(h.due(t, NO_TIMER));
        }
    }

    #[test]
    fn the_score_remembers_at_most_its_ceiling() {
        let h = on_cpu_at_1ms();
        let mut t = 10_000_000;
        for _ in 0..(SCORE_CEILING + 20) {
            h.yielded(t, t + SLICE_YIELD_NS);
            t += RUN_NS + SLICE_YIELD_NS;
        }
        for _ in 0..(SCORE_CEILING - SCORE_FLOOR - 1) {
            h.yielded(t, t + NOBODY_NS);
            t += RUN_NS + NOBODY_NS;
            assert!(h.due(t, NO_TIMER));
        }
        h.yielded(t, t + NOBODY_NS);
        t += RUN_NS + NOBODY_NS;
        assert!(!h.due(t, NO_TIMER));
    }
}

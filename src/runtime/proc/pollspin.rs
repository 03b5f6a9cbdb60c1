//! Poll-spinning: an M that runs out of work while Gs wait on the network keeps
//! its P a little longer, yielding its thread between searches (each with a
//! non-blocking poll), before it sleeps.
//!
//! # Why
//! When a server shares its cores with its load (its clients, other processes),
//! an M that sleeps as soon as its queue runs dry pays a wake-up for the next
//! request: a futex or epoll wake, often an IPI, on a virtual machine an exit to
//! the hypervisor. Its core idles in between, although the next request is
//! microseconds away. An M that yields instead hands its core to whatever
//! thread is runnable there (the client) and picks the next request up on its
//! next turn: less idle time, and a shorter tail latency
//! (docs/decisions/0012-poll-spinning.md).
//!
//! # What a yield costs
//! A yield lasts as long as the thread it hands the core to keeps it: briefly
//! if that thread answers what it has and blocks; a whole OS time slice if it
//! has a slice's work queued, and then the M comes back to a full batch of
//! requests, which is what makes the spin pay. Beside a thread that computes
//! and never blocks, every yield lasts a whole slice: meanwhile this M's P runs
//! no timers, and nobody is blocked in the poller to notice the network. A
//! request that arrives then waits out the slice, where an M asleep in the
//! poller would have been woken for it at once. So the spin must not bet a timer on a yield, and must stop
//! once a long yield has made a few Gs wait.
//!
//! # The rules
//! - Only while the network is in use ([`network_in_use`]): some G waits on it,
//!   and no M is blocked in the poller (that M would get the events; the
//!   spinner's non-blocking polls are skipped while one is).
//! - Never with a timer due within [`TIMER_GUARD_NS`] (the search's next timer:
//!   this P's, and every P's if the M is spinning): one yield may outlast it,
//!   while a sleep in the poller ends on time.
//! - Each M has a budget, the longest it spins. A spin that finds work restores
//!   it to [`BUDGET_NS`]; one that runs out halves it, so sparse traffic (a
//!   request now and then) costs a few short spins and then none.
//! - A yield of [`LONG_YIELD_NS`] or more after which the search finds a few
//!   Gs but no batch (fewer than [`BATCH`]) made them wait a slice for
//!   nothing: the budget drops to zero. One that brings back a batch is found
//!   work; one that brings back nothing made nobody wait, and is a miss like
//!   any spin that ran out.
//! - A sleep shorter than [`BUDGET_NS`] that ended because work came (not
//!   because its own timeout was that short) means a spin would have caught
//!   that work: it restores the budget.
//! - The M keeps its P, and its spinning state if it had one, while it spins: to
//!   the rest of the scheduler it is an M still searching, as it may always be
//!   for a while (it can be descheduled at that very point). So this adds no
//!   case to the parking protocol of `sched/mpark.rs`: the M idles its P and
//!   re-checks exactly as before, only later.
//!
//! # Threads and orderings
//! The budget is the M's own (`M::poll_spin_budget`, read and written only by
//! its thread, `Relaxed`). [`network_in_use`] reads shared state `Relaxed`: it is
//! a hint; a wrong answer costs one spin or one sleep, never a lost wake-up.

use super::m::M;
use super::state::{net_waiters, Sched};
use std::sync::atomic::Ordering;

/// The longest spin, and the sleep below which a spin would have paid.
pub(crate) const BUDGET_NS: u64 = 20_000;
/// A budget below this is spent: no spin.
const MIN_SPIN_NS: u64 = 1_000;
/// A yield this long handed the core over for a time slice, not for a reply
/// (decision 0012).
const LONG_YIELD_NS: u64 = 1_000_000;
/// After a long yield, the Gs a search must find for the yield to have paid.
const BATCH: u32 = 8;
/// No spin with a timer due sooner than this: longer than an OS time slice
/// (the longest a yield lasts), so a timer is never left to a yield's mercy.
pub(crate) const TIMER_GUARD_NS: u64 = 10_000_000;

/// Whether `next_timer` is due within [`TIMER_GUARD_NS`] of `now`: then the M
/// must not bet it on a yield (this module's and [`super::handover`]'s rule).
pub(crate) fn timer_due_soon(now: u64, next_timer: u64) -> bool {
    next_timer <= now.saturating_add(TIMER_GUARD_NS)
}

/// Whether a non-blocking poll can find work: some G waits on the network and
/// no M is blocked in the poller.
pub(crate) fn network_in_use(s: &Sched) -> bool {
    net_waiters() > 0 && s.lastpoll.load(Ordering::Relaxed) != 0
}

/// How a spin ended, for the M's budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// It found work: full budget.
    Hit,
    /// It ran out of budget: half.
    Miss,
    /// A long yield made a few Gs wait: no budget.
    Wasted,
    /// It stopped for a reason that says nothing about spinning: unchanged.
    Neutral,
}

/// One search's spin (one call of `find_runnable`).
pub(crate) struct PollSpin {
    /// When the spin began (runtime clock), 0 if it has not.
    since: u64,
    /// The last yield lasted [`LONG_YIELD_NS`] or more.
    long_yield: bool,
}

impl PollSpin {
    pub(crate) fn new() -> Self {
        PollSpin {
            since: 0,
            long_yield: false,
        }
    }

    /// At the point where the M would give up its P: whether to yield and search
    /// once more instead. `network`: some G waits on the network and no M is
    /// blocked in the poller (the caller's [`network_in_use`]); `now`: the
    /// runtime clock; `next_timer`: the earliest timer the search knows of.
    pub(crate) fn go_on(&mut self, m: &M, network: bool, now: u64, next_timer: u64) -> bool {
        if !network || timer_due_soon(now, next_timer) {
            self.stop(m, Verdict::Neutral);
            return false;
        }
        let budget = m.poll_spin_budget.load(Ordering::Relaxed);
        if budget < MIN_SPIN_NS {
            return false;
        }
        if self.since == 0 {
            self.since = now.max(1);
        }
        if now.saturating_sub(self.since) < budget {
            return true;
        }
        self.stop(m, Verdict::Miss);
        false
    }

    /// A yield that lasted `ns` has returned.
    pub(crate) fn yielded(&mut self, ns: u64) {
        self.long_yield = ns >= LONG_YIELD_NS;
    }

    /// The search found a G; `queued` counts the Gs left in the P's ring (asked
    /// only after a long yield: the scheduling loop's common path, no spin at
    /// all, reads nothing).
    pub(crate) fn found(&mut self, m: &M, queued: impl FnOnce() -> u32) {
        if self.since == 0 {
            return;
        }
        let verdict = if self.long_yield && queued() + 1 < BATCH {
            Verdict::Wasted
        } else {
            Verdict::Hit
        };
        self.stop(m, verdict);
    }

    /// The search is interrupted (a stop-the-world): the spin ends unjudged.
    pub(crate) fn abandon(&mut self, m: &M) {
        self.stop(m, Verdict::Neutral);
    }

    /// Ends the spin, if one took place, and sets the M's budget by `verdict`.
    fn stop(&mut self, m: &M, verdict: Verdict) {
        if self.since == 0 {
            return;
        }
        self.since = 0;
        self.long_yield = false;
        let budget = m.poll_spin_budget.load(Ordering::Relaxed);
        let next = match verdict {
            Verdict::Hit => BUDGET_NS,
            Verdict::Miss => budget / 2,
            Verdict::Wasted => 0,
            Verdict::Neutral => budget,
        };
        m.poll_spin_budget.store(next, Ordering::Relaxed);
    }

    /// The M slept for `slept` ns, with at most `timeout` ns to sleep (`None`:
    /// until woken), and has work again: a sleep a spin would have bridged
    /// restores its budget, unless it was short only because its timeout was.
    pub(crate) fn woke(m: &M, slept: u64, timeout: Option<u64>) {
        if slept < BUDGET_NS && timeout.is_none_or(|t| t >= BUDGET_NS) {
            m.poll_spin_budget.store(BUDGET_NS, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::proc::timers::NO_TIMER;

    fn m_with_budget(ns: u64) -> M {
        let m = M::new(0);
        m.poll_spin_budget.store(ns, Ordering::Relaxed);
        m
    }

    fn budget(m: &M) -> u64 {
        m.poll_spin_budget.load(Ordering::Relaxed)
    }

    /// Spins from `now` until `go_on` says stop, yielding `step` ns each time;
    /// returns the clock then.
    fn spin_out(spin: &mut PollSpin, m: &M, mut now: u64, step: u64) -> u64 {
        while spin.go_on(m, true, now, NO_TIMER) {
            spin.yielded(step);
            now += step;
        }
        now
    }

    #[test]
    fn spins_for_the_budget_then_halves_it() {
        let m = m_with_budget(BUDGET_NS);
        let mut spin = PollSpin::new();
        assert!(spin.go_on(&m, true, 1_000, NO_TIMER));
        assert!(spin.go_on(&m, true, 1_000 + BUDGET_NS - 1, NO_TIMER));
        assert!(!spin.go_on(&m, true, 1_000 + BUDGET_NS, NO_TIMER));
        assert_eq!(budget(&m), BUDGET_NS / 2);
        // The next search spins for the halved budget only.
        let mut spin = PollSpin::new();
        assert!(spin.go_on(&m, true, 50_000, NO_TIMER));
        assert!(!spin.go_on(&m, true, 50_000 + BUDGET_NS / 2, NO_TIMER));
        assert_eq!(budget(&m), BUDGET_NS / 4);
    }

    #[test]
    fn misses_decay_the_budget_to_no_spin_at_all() {
        let m = m_with_budget(BUDGET_NS);
        let mut now = 1;
        let mut spins = 0;
        while budget(&m) >= MIN_SPIN_NS {
            now = spin_out(&mut PollSpin::new(), &m, now, 100);
            spins += 1;
            assert!(spins <= 6, "{spins} spins and the budget is still {}", budget(&m));
        }
        let mut spin = PollSpin::new();
        assert!(!spin.go_on(&m, true, now, NO_TIMER), "a spent budget still spins");
    }

    #[test]
    fn a_spin_that_finds_work_restores_the_budget() {
        let m = m_with_budget(BUDGET_NS / 4);
        let mut spin = PollSpin::new();
        assert!(spin.go_on(&m, true, 10, NO_TIMER));
        spin.yielded(200_000);
        spin.found(&m, || 0);
        assert_eq!(budget(&m), BUDGET_NS);
    }

    #[test]
    fn work_found_without_spinning_leaves_the_budget() {
        let m = m_with_budget(BUDGET_NS / 4);
        PollSpin::new().found(&m, || unreachable!("no spin, nothing to count"));
        assert_eq!(budget(&m), BUDGET_NS / 4);
    }

    #[test]
    fn no_spin_without_network_waiters() {
        let m = m_with_budget(BUDGET_NS);
        let mut spin = PollSpin::new();
        assert!(!spin.go_on(&m, false, 10, NO_TIMER));
        assert_eq!(budget(&m), BUDGET_NS, "no spin took place, nothing to halve");
    }

    #[test]
    fn no_spin_with_a_timer_due_within_the_guard() {
        let m = m_with_budget(BUDGET_NS);
        let mut spin = PollSpin::new();
        assert!(!spin.go_on(&m, true, 1_000, 1_000 + TIMER_GUARD_NS));
        assert!(spin.go_on(&m, true, 1_000, 1_001 + TIMER_GUARD_NS));
        // A timer that comes due within the guard mid-spin ends the spin,
        // without judging it.
        assert!(!spin.go_on(&m, true, 2_000, 2_000 + TIMER_GUARD_NS / 2));
        assert_eq!(budget(&m), BUDGET_NS);
    }

    #[test]
    fn a_long_yield_that_brings_back_a_batch_is_a_hit() {
        let m = m_with_budget(BUDGET_NS / 2);
        let mut spin = PollSpin::new();
        assert!(spin.go_on(&m, true, 10, NO_TIMER));
        spin.yielded(LONG_YIELD_NS * 3);
        spin.found(&m, || BATCH - 1);
        assert_eq!(budget(&m), BUDGET_NS);
    }

    #[test]
    fn a_long_yield_that_brings_back_a_few_gs_ends_spinning() {
        // One G, as a due timer or a lone request would give.
        let m = m_with_budget(BUDGET_NS);
        let mut spin = PollSpin::new();
        assert!(spin.go_on(&m, true, 10, NO_TIMER));
        spin.yielded(LONG_YIELD_NS);
        spin.found(&m, || 0);
        assert_eq!(budget(&m), 0);
        assert!(
            !PollSpin::new().go_on(&m, true, 30, NO_TIMER),
            "a wasted budget still spins"
        );
        // Just short of a batch.
        let m = m_with_budget(BUDGET_NS);
        let mut spin = PollSpin::new();
        assert!(spin.go_on(&m, true, 10, NO_TIMER));
        spin.yielded(LONG_YIELD_NS);
        spin.found(&m, || BATCH - 2);
        assert_eq!(budget(&m), 0);
    }

    #[test]
    fn a_long_yield_that_brings_back_nothing_is_a_miss() {
        let m = m_with_budget(BUDGET_NS);
        let mut spin = PollSpin::new();
        assert!(spin.go_on(&m, true, 10, NO_TIMER));
        spin.yielded(LONG_YIELD_NS);
        assert!(!spin.go_on(&m, true, 10 + LONG_YIELD_NS, NO_TIMER));
        assert_eq!(budget(&m), BUDGET_NS / 2);
    }

    #[test]
    fn an_abandoned_spin_leaves_the_budget() {
        let m = m_with_budget(BUDGET_NS / 2);
        let mut spin = PollSpin::new();
        assert!(spin.go_on(&m, true, 10, NO_TIMER));
        spin.yielded(LONG_YIELD_NS);
        spin.abandon(&m);
        assert_eq!(budget(&m), BUDGET_NS / 2);
        // And the next search starts afresh.
        spin.found(&m, || 0);
        assert_eq!(budget(&m), BUDGET_NS / 2);
    }

    #[test]
    fn only_a_short_sleep_ended_by_work_restores_the_budget() {
        let m = m_with_budget(0);
        PollSpin::woke(&m, BUDGET_NS, None);
        assert_eq!(budget(&m), 0, "a long sleep");
        PollSpin::woke(&m, 0, Some(0));
        PollSpin::woke(&m, BUDGET_NS / 2, Some(BUDGET_NS - 1));
        assert_eq!(budget(&m), 0, "short only because its timeout was");
        PollSpin::woke(&m, BUDGET_NS - 1, Some(BUDGET_NS));
        assert_eq!(budget(&m), BUDGET_NS);
        let m = m_with_budget(0);
        PollSpin::woke(&m, BUDGET_NS - 1, None);
        assert_eq!(budget(&m), BUDGET_NS);
    }
}

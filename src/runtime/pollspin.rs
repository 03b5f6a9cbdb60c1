//! Poll-spinning: an M that runs out of work while Gs wait on the network keeps
//! its P a little longer, yielding its thread between searches (each with a
//! non-blocking poll), before it sleeps.
//!
//! # Why
//! When a server shares its cores with its load (its clients, other processes),
//! an M that sleeps as soon as its queue runs dry pays a wake-up for the next
//! request: a futex or epoll wake, often an IPI, on a virtual machine an exit to
//! the hypervisor. Its core idles in between, although the next request is
//! microseconds away. Measured on the HTTP echo server under wrk on the same two
//! cores: 1.5–3 % of the machine idle at saturation (may: 0.6–1.5 %). An M that
//! yields instead hands its core to whatever thread is runnable there (the
//! client) and picks the next request up on its next turn: idle fell to
//! 0.2–0.5 %, and with it the tail latency (docs/DESIGN.md, "Poll-spinning").
//!
//! # The rules
//! - Only while the network is in use ([`network_in_use`]): some G waits on it,
//!   and no M is blocked in the poller (that M would get the events; the
//!   spinner's non-blocking polls are skipped while one is).
//! - Each M has a budget, the longest it spins. A spin that finds work restores
//!   it to [`BUDGET_NS`]; one that runs out halves it, so sparse traffic (a
//!   request now and then) costs a few short spins and then none. A sleep
//!   shorter than [`BUDGET_NS`] means work came back soon enough for a spin to
//!   have caught it: it restores the budget too.
//! - The M keeps its P, and its spinning state if it had one, while it spins: to
//!   the rest of the scheduler it is an M still searching, as it may always be
//!   for a while (it can be descheduled at that very point). So this adds no
//!   case to the parking protocol of [`super::wake`]: the M idles its P and
//!   re-checks exactly as before, only later.
//!
//! # Threads and orderings
//! The budget is the M's own (`M::poll_spin_budget`, read and written only by
//! its thread, `Relaxed`). [`network_in_use`] reads shared state `Relaxed`: it is
//! a hint; a wrong answer costs one spin or one sleep, never a lost wake-up.

use super::m::M;
use super::sched::Sched;
use std::sync::atomic::Ordering;

/// The longest spin, and the sleep below which a spin would have paid.
pub(crate) const BUDGET_NS: u64 = 20_000;
/// A budget below this is spent: no spin.
const MIN_SPIN_NS: u64 = 1_000;

/// Whether a non-blocking poll can find work: some G waits on the network and
/// no M is blocked in the poller.
pub(crate) fn network_in_use(s: &Sched) -> bool {
    crate::netpoll::waiters() > 0 && s.lastpoll.load(Ordering::Relaxed) != 0
}

/// One search's spin (one call of `find_runnable`).
pub(crate) struct PollSpin {
    /// When the spin began (runtime clock), 0 if it has not.
    since: u64,
}

impl PollSpin {
    pub(crate) fn new() -> Self {
        PollSpin { since: 0 }
    }

    /// At the point where the M would give up its P: whether to yield and search
    /// once more instead. `network`: some G waits on the network and no M is
    /// blocked in the poller (the caller's [`network_in_use`]); `now`: the
    /// runtime clock.
    pub(crate) fn go_on(&mut self, m: &M, network: bool, now: u64) -> bool {
        let budget = m.poll_spin_budget.load(Ordering::Relaxed);
        if budget < MIN_SPIN_NS || !network {
            return self.end(m, false);
        }
        if self.since == 0 {
            self.since = now.max(1);
        }
        if now.saturating_sub(self.since) < budget {
            return true;
        }
        self.end(m, false)
    }

    /// The search is over: it found work (`found`) or the M sleeps now. Updates
    /// the M's budget if a spin took place. Returns false (for [`Self::go_on`]).
    pub(crate) fn end(&mut self, m: &M, found: bool) -> bool {
        if self.since != 0 {
            self.since = 0;
            let budget = m.poll_spin_budget.load(Ordering::Relaxed);
            let next = if found { BUDGET_NS } else { budget / 2 };
            m.poll_spin_budget.store(next, Ordering::Relaxed);
        }
        false
    }

    /// The M slept for `slept` ns and has work again: a sleep a spin would have
    /// bridged restores its budget.
    pub(crate) fn woke(m: &M, slept: u64) {
        if slept < BUDGET_NS {
            m.poll_spin_budget.store(BUDGET_NS, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m_with_budget(ns: u64) -> M {
        let m = M::new(0);
        m.poll_spin_budget.store(ns, Ordering::Relaxed);
        m
    }

    fn budget(m: &M) -> u64 {
        m.poll_spin_budget.load(Ordering::Relaxed)
    }

    #[test]
    fn spins_for_the_budget_then_halves_it() {
        let m = m_with_budget(BUDGET_NS);
        let mut spin = PollSpin::new();
        assert!(spin.go_on(&m, true, 1_000));
        assert!(spin.go_on(&m, true, 1_000 + BUDGET_NS - 1));
        assert!(!spin.go_on(&m, true, 1_000 + BUDGET_NS));
        assert_eq!(budget(&m), BUDGET_NS / 2);
        // The next search spins for the halved budget only.
        let mut spin = PollSpin::new();
        assert!(spin.go_on(&m, true, 50_000));
        assert!(!spin.go_on(&m, true, 50_000 + BUDGET_NS / 2));
        assert_eq!(budget(&m), BUDGET_NS / 4);
    }

    #[test]
    fn misses_decay_the_budget_to_no_spin_at_all() {
        let m = m_with_budget(BUDGET_NS);
        let mut now = 1;
        let mut spins = 0;
        for _ in 0..20 {
            let mut spin = PollSpin::new();
            while spin.go_on(&m, true, now) {
                now += 100;
            }
            spins += 1;
            if budget(&m) < MIN_SPIN_NS {
                break;
            }
        }
        assert!(spins <= 6, "{spins} spins before the budget ran out");
        let mut spin = PollSpin::new();
        assert!(!spin.go_on(&m, true, now), "a spent budget still spins");
    }

    #[test]
    fn a_spin_that_finds_work_restores_the_budget() {
        let m = m_with_budget(BUDGET_NS / 4);
        let mut spin = PollSpin::new();
        assert!(spin.go_on(&m, true, 10));
        spin.end(&m, true);
        assert_eq!(budget(&m), BUDGET_NS);
    }

    #[test]
    fn work_found_without_spinning_leaves_the_budget() {
        let m = m_with_budget(BUDGET_NS / 4);
        PollSpin::new().end(&m, true);
        assert_eq!(budget(&m), BUDGET_NS / 4);
    }

    #[test]
    fn no_spin_without_network_waiters() {
        let m = m_with_budget(BUDGET_NS);
        let mut spin = PollSpin::new();
        assert!(!spin.go_on(&m, false, 10));
        assert_eq!(budget(&m), BUDGET_NS, "no spin took place, nothing to halve");
    }

    #[test]
    fn only_a_short_sleep_restores_the_budget() {
        let m = m_with_budget(0);
        PollSpin::woke(&m, BUDGET_NS);
        assert_eq!(budget(&m), 0);
        PollSpin::woke(&m, BUDGET_NS - 1);
        assert_eq!(budget(&m), BUDGET_NS);
    }
}

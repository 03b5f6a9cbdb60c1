//! Arming timers and running the due ones (Go's `addtimer`, `runtimer`): the
//! heaps are `proc/timers.rs`. A timer goes on the current P's heap (P0's from
//! a plain thread) and some M is made to watch it; an M in its search for work
//! runs its P's due timers (and, in its last steal round, a victim's), and
//! readies the sleepers among them together.

use super::newproc::{go_detached, Origin};
use super::ownership::with_p;
use super::poll::wake_netpoller;
use super::ready::ready_sleepers;
use crate::runtime::proc::m::current_m;
use crate::runtime::proc::p::Unwatched;
use crate::runtime::proc::state::sched;
use crate::runtime::proc::timers::{Action, DeadTimers, Timers};
use crate::runtime::proc::waiter::TIMED_OUT;
use crate::runtime::task::g::GRef;

/// Arms a timer at `when` (runtime clock) on the current P, or on P0 from a plain
/// thread, and makes sure an M will wake up for it.
pub(crate) fn add_timer(when: u64, action: Action) {
    // Inside the runtime, so a resize cannot retire the P while we add to it; the
    // dead timers compaction removed are dropped after leaving it, by the caller
    // (a goroutine or a plain thread: their drop may run user code, which must
    // never run inside the runtime).
    let dead = with_p(|p| p.unwrap_or_else(|| sched().p(0)).timers.add(when, action));
    drop(dead);
    wake_netpoller(when);
}

/// As [`add_timer`], for the timer of a G that has just parked: called on the
/// scheduler side of its park (`time::sleep`, timed waits), by its M, which
/// searches for work next. Waking an M for the timer now (Go's rule) is wasted
/// if that search finds nothing, since the search then watches the timers
/// itself: it blocks in the poller until its P's earliest (every P's if it
/// spun), or breaks the M in the poller out of a later deadline. So the wake-up
/// is left to the search: the P is marked, and if the search goes on to run a
/// G instead, `schedule::watch_timers` makes sure an M watches them then
/// (docs/decisions/0015-one-m-per-timer.md; `tests/timer_wakeups.rs`). An M wired to
/// a G (`lock_os_thread`) does not search, and an M whose P was retaken holds
/// none: those wake an M at once.
pub(crate) fn add_timer_parked(when: u64, action: Action) {
    let locked = current_m().is_some_and(|m| m.lockedg().is_some());
    let armed = with_p(|p| match p {
        Some(p) if !locked => {
            let dead = p.timers.add(when, action);
            // SAFETY: this M holds `p`; the reference dies in this statement.
            let local = unsafe { p.local() };
            local.unwatched = local.unwatched.max(Unwatched::Own);
            Ok(dead)
        }
        _ => Err(action),
    });
    let dead = match armed {
        Ok(dead) => dead,
        Err(action) => {
            let dead = with_p(|p| p.unwrap_or_else(|| sched().p(0)).timers.add(when, action));
            wake_netpoller(when);
            dead
        }
    };
    drop_in_a_goroutine(dead);
}

/// Drops timers a compaction removed on the scheduler's side of a park, where
/// no user code may run (a stopped `after_func`'s closure may own anything: a
/// handle whose drop joins a goroutine would stop this M for good at one P):
/// in a goroutine of their own, as Go runs a timer's function.
fn drop_in_a_goroutine(dead: DeadTimers) {
    if dead.is_empty() {
        return;
    }
    go_detached("goro: dropping dead timers", Origin::here(), move || drop(dead));
}

/// Runs every timer of `timers` due at `now`, in deadline order, outside the
/// heap's lock; the sleeping Gs among them are readied together at the end,
/// with one `wakep` for them all (`ready::ready_sleepers`). Returns how many
/// fired. Called only by an M in its search for work (on its own P's heap, or
/// a victim's in its last steal round), which runs its queue next.
pub(crate) fn run_due(timers: &Timers, now: u64) -> usize {
    if timers.next() > now {
        return 0;
    }
    let due = timers.take_due(now);
    let n = due.len();
    let mut sleepers = Vec::new();
    for action in due {
        run(action, now, &mut sleepers);
    }
    ready_sleepers(sleepers.into_iter());
    n
}

/// Does what the timer does; a sleeping G is only added to `sleepers`, for
/// the caller to ready with the others that came due with it.
fn run(action: Action, now: u64, sleepers: &mut Vec<GRef>) {
    match action {
        Action::Ready(g) => sleepers.push(g),
        Action::Timeout(c) => {
            if c.try_claim(TIMED_OUT) {
                c.waiter().wake();
            }
        }
        Action::Fire(t, seq) => t.fire(seq, now),
        Action::Expire(e, tag) => e.expire(tag, now),
    }
}

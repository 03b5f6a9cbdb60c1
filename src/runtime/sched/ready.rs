//! The waking half of parking (Go's `goready`): waking a [`Waiter`] (the
//! record is `proc/waiter.rs`) and making a parked G runnable again
//! ([`ready`]). The parking half, and the protocol both follow, are in
//! `wait/park.rs`.

use super::mpark::{idle_p_unless_stopping, start_m, wakep};
use super::ownership::with_p;
use crate::runtime::proc::state::sched;
use crate::runtime::proc::tracing;
use crate::runtime::proc::waiter::Waiter;
use crate::runtime::sys::trace_buf::Source;
use crate::runtime::sys::trace_clock;
use crate::runtime::task::g::{GRef, Status};

impl Waiter {
    /// Makes the waiter runnable. Call once per wait, after releasing the record's lock.
    pub(crate) fn wake(self) {
        match self {
            Waiter::G(g) => ready(g),
            Waiter::Thread(t) => {
                trace_clock::stale(); // a system call
                t.wake();
            }
            // An executor's code, called from goro's wake paths: a panic in it
            // is printed by the hook and goes no further.
            Waiter::Task(w) => {
                trace_clock::stale(); // code of any length
                drop(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.wake())));
            }
        }
    }
}

/// Makes a `Waiting` G runnable (Go's `goready`): into the current P's
/// `runnext` if the caller runs on an M that holds a P, then maybe wakes an M.
/// A caller without a P (a plain thread, another runtime's worker waking a
/// goroutine's future, an M in a blocking call) hands the G straight to an
/// idle P and a non-spinning M for it ([`ready_without_p`]), else queues it
/// globally and maybe wakes an M.
pub(crate) fn ready(g: GRef) {
    g.cas_status(Status::Waiting, Status::Runnable);
    let woke = with_p(|p| {
        // Inside the runtime: the P the event names is the one the G goes to,
        // not one taken from this M while its G ran (the cut comes first).
        if tracing::on() {
            tracing::readied(g, Source::Thread);
        }
        match p {
            Some(p) => {
                p.runq_put(g, true);
                false
            }
            None => ready_without_p(g),
        }
    });
    if !woke {
        wakep();
    }
}

/// [`ready`] from a caller without a P. While no M spins (none would find the
/// G soon), takes an idle P, puts the G in its `runnext` and starts an M on
/// it, not spinning: that M runs the G first and, having found it without a
/// search, wakes nobody else (a spinner that finds work wakes another M,
/// `reset_spinning`, which for one G from outside is a thread woken to spin
/// and sleep again: docs/decisions/0036-ready-without-a-p.md). Returns true
/// then; else queues the G globally and returns false (the caller wakes an M
/// as rule 1 says). The P, taken from the idle list, is this caller's alone
/// until the M takes it, so the push is an owner's push.
fn ready_without_p(g: GRef) -> bool {
    let s = sched();
    if s.idle.nmspinning() == 0 {
        if let Some(p) = idle_p_unless_stopping() {
            s.p(p).runq_put(g, true);
            start_m(p, false);
            return true;
        }
    }
    s.global.push(g);
    false
}

/// Readies a batch of parked Gs found together (by the network poller) at the
/// tail of this M's P's queue, oldest first, as Go's `injectglist` does: none of
/// them jumps the queue through `runnext`, so under load every connection waits
/// its turn in FIFO order. Wakes an M as [`ready_found`] says.
pub(crate) fn ready_batch(gs: impl Iterator<Item = GRef>) {
    ready_found(gs, false);
}

/// Readies the Gs whose sleeps a run of due timers ended, each into `runnext` as
/// [`ready`] does (a sleeper that wakes runs next, Go's rule), with one `wakep`
/// for them all as [`ready_found`] says. The caller is an M in its search for
/// work, which runs its queue next (`schedule::run_timers`).
pub(crate) fn ready_sleepers(gs: impl Iterator<Item = GRef>) {
    ready_found(gs, true);
}

/// Readies Gs that an M in its search for work found together, into its P's
/// `runnext` (`next`) or ring tail, then calls one `wakep` for them all, unless
/// they are a single G put on an empty queue: the caller takes that G next
/// itself, and a woken helper would only spin and sleep again (if a global G
/// goes first on its every-61st round, the search wakes one then): no thread
/// wake-up per request of a server with sparse traffic, nor per timer of a G
/// sleeping alone (docs/decisions/0014-one-m-per-request.md,
/// docs/decisions/0015-one-m-per-timer.md). While that G runs,
/// sysmon's 1 ms network poll covers the network, and `schedule::watch_timers`
/// the timers. Without a P (sysmon's poll) the Gs go to the global queue, and
/// an M is always woken.
fn ready_found(gs: impl Iterator<Item = GRef>, next: bool) {
    let wake = with_p(|p| {
        let queued_before = p.is_none_or(|p| !p.runq.is_empty());
        let mut n = 0;
        for g in gs {
            n += 1;
            if tracing::on() {
                tracing::readied(g, if next { Source::Timer } else { Source::Netpoll });
            }
            g.cas_status(Status::Waiting, Status::Runnable);
            match p {
                Some(p) => p.runq_put(g, next),
                None => sched().global.push(g),
            }
        }
        n > 1 || (n == 1 && queued_before)
    });
    if wake {
        wakep();
    }
}

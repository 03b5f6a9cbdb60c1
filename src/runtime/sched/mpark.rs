//! Waking and parking Ms: Go's `wakep`, `startm`, `stopm`, `resetspinning` and
//! `wakeNetPoller`.
//!
//! # The protocol (Go's "Worker thread parking/unparking")
//! We want enough running Ms to use every P that has work, but no M burning a core
//! when there is nothing to do, and never a lost wake-up (runnable work, an idle P,
//! and every M asleep). The rules:
//! 1. Whoever makes a G runnable (spawn, ready, yield, a timer, a spill to the global
//!    queue) calls [`wakep`] afterwards. It wakes an M only if there is an idle P
//!    and no spinning M; the woken M starts spinning. Three exceptions: an M in its
//!    search that readies a single G from the poller or a timer onto its own
//!    empty queue takes that G next itself (`ready::ready_batch`,
//!    `ready::ready_sleepers`), so it wakes nobody; a timer armed by a G's
//!    park leaves the wake-up to its M's search (`timers::add_timer_parked`);
//!    and a caller without a P that readies a G while no M spins hands it to
//!    an idle P and starts a non-spinning M there ([`start_m`], as
//!    [`hand_off_p`] does for a P with work: `ready::ready_without_p`).
//! 2. A spinning M that finds work stops spinning and, if it was the last spinner,
//!    calls [`wakep`] again ([`reset_spinning`]): work tends to come in bursts and
//!    the next G may need another M.
//! 3. A spinning M that finds nothing first idles its P, then stops spinning, then
//!    re-checks every source of work (see `find_runnable`). Because `wakep` reads
//!    `nmspinning` after publishing its work and the spinner re-checks after
//!    decrementing it (both `SeqCst`, with a fence on each side), one of them sees
//!    the other. The global queue pairs through its lock instead: the re-check
//!    takes it ([`GlobalRunq::has_work`]), and a submitter reads the counters after
//!    releasing it, so [`wakep_global`] needs no fence. [`hand_off_p`], which
//!    idles a P too, re-checks the same way.
//!
//! [`GlobalRunq::has_work`]: crate::runtime::queue::globrunq::GlobalRunq::has_work
//!
//! Not an M woken for every new G: that is a futex syscall per spawn and a
//! thundering herd (docs/decisions/0011-wake-on-every-ready.md).

use crate::runtime::proc::m::{spawn_thread, M};
use crate::runtime::proc::state::{net_waiters, sched};
use crate::runtime::proc::timers::NO_TIMER;
use crate::runtime::proc::tracing;
use crate::runtime::sys::trace_buf::Kind;
use crate::runtime::sys::trace_clock;
use std::sync::atomic::{fence, Ordering};

/// Tries to put one more M to work on an idle P (rule 1). Call after publishing
/// runnable work.
pub(crate) fn wakep() {
    // Pairs with the SeqCst fence in `find_runnable` after an M idles its P: either
    // we see its P in `npidle`, or it sees our work in the queues.
    fence(Ordering::SeqCst);
    wakep_global();
}

/// [`wakep`] for work just pushed to the global queue, without the fence: the
/// push released the queue's lock, and an M that gives up its P for want of
/// work idles it, drops its spinning count, then re-checks the queue under that
/// lock (rule 3), so whichever takes the lock second sees the other's writes.
/// A spinning slot claimed here without finding a P is given back under the
/// idle lock, so it never outlives an idling M's look at the counters
/// ([`Locked::pidle_get_for_claim`]). (On x86 the fence is a locked
/// instruction; a `yield_now` is one cheaper without it.)
///
/// [`Locked::pidle_get_for_claim`]: crate::runtime::queue::idle::Locked::pidle_get_for_claim
pub(crate) fn wakep_global() {
    let s = sched();
    if !s.idle.should_wake() {
        return;
    }
    let p = s.idle.lock().pidle_get_for_claim();
    if let Some(p) = p {
        start_m(p, true);
    }
}

/// Runs P `p` on an idle M, or on a new one (Go's `startm`). With `spinning`, the
/// caller already counted the M in `nmspinning`.
pub(crate) fn start_m(p: usize, spinning: bool) {
    let s = sched();
    let m = s.idle.lock().mget();
    match m {
        Some(m) => {
            m.set_spinning(spinning);
            m.set_nextp(p);
            m.note.wake();
        }
        // A wired M's thread may carry state its G set for itself alone: a new
        // thread would be its clone (template.rs).
        None => {
            trace_clock::stale(); // a thread is created, or asked for
            if crate::runtime::proc::m::current_m().is_some_and(|m| m.lockedg().is_some()) {
                super::template::spawn_via_template(s.new_m(), p, spinning)
            } else {
                spawn_thread(s.new_m(), p, spinning)
            }
        }
    }
}

/// Parks this M (which holds no P) until [`start_m`] hands it one, then takes it
/// (Go's `stopm`). Returns false if sysmon retired it instead: the M must exit.
#[must_use]
pub(crate) fn stop_m(m: &'static M) -> bool {
    debug_assert!(m.p_id().is_none());
    debug_assert!(!m.spinning());
    let s = sched();
    m.idle_since.store(s.nanotime(), Ordering::Relaxed);
    s.idle.lock().mput(m);
    sleep_for_p(m)
}

/// Sleeps on the M's note until a waker hands it a P (taken) or retires it (false).
fn sleep_for_p(m: &'static M) -> bool {
    m.set_blocked(true);
    if tracing::on() {
        tracing::emit_on(m, Kind::MPark, 0, 0, 0);
    }
    m.note.sleep();
    m.set_blocked(false);
    if tracing::on() {
        tracing::emit_on(m, Kind::MWake, 0, 0, 0);
    }
    m.handover.back_on_cpu(sched().nanotime());
    match m.take_nextp().expect("goro: M woken with nothing handed over") {
        Some(p) => {
            m.acquire_p(p);
            true
        }
        None => false,
    }
}

/// Gives P `p`, which the caller owns and no M holds, to whoever should have it
/// (Go's `handoffp`): an M if it has work or someone must watch for work, else the
/// idle list.
pub(crate) fn hand_off_p(p: usize) {
    let s = sched();
    let pp = s.p(p);
    if !pp.runq.is_empty() || !s.global.is_empty() {
        return start_m(p, false);
    }
    // Nobody spinning and no idle P: nobody would notice new work.
    if s.idle.should_spin_for_handoff() {
        return start_m(p, true);
    }
    let mut idle = s.idle.lock();
    // The last running P, and nobody blocked in the poller: someone must poll.
    if s.idle.npidle() as usize + 1 == s.gomaxprocs() && net_waiters() > 0 && s.lastpoll.load(Ordering::SeqCst) != 0 {
        drop(idle);
        return start_m(p, false);
    }
    idle.pidle_put(p);
    drop(idle);
    // A G pushed to the global queue since the check above, whose submitter read
    // `npidle` before our put, is ours to run (rule 3).
    if s.global.has_work() {
        wakep_global();
    }
    // The P's timers, read after the put and a fence: a P-less caller may add one
    // to it at any time (`timers::add_timer` puts those on P0), and its `wakep`
    // either sees the P idle or we see its timer (rule 3).
    fence(Ordering::SeqCst);
    let when = pp.timers.next();
    if when != NO_TIMER {
        super::poll::wake_netpoller(when);
    }
}

/// The M of a G wired by `lock_os_thread` waits for that G to be runnable again:
/// it gives its P away (if it holds one) and sleeps until a scheduler that found
/// the G hands it a P ([`start_locked_m`]). Go's `stoplockedm`. Returns false if
/// the M must exit instead (it never is retired while locked, so: never).
#[must_use]
pub(crate) fn stop_locked_m(m: &'static M) -> bool {
    if m.p().is_some() {
        drop_spinning(m);
        hand_off_p(m.release_p());
    }
    // Its P may have been the last busy one (the deadlock check's trigger, as
    // when an M idles in the scheduling loop).
    crate::runtime::proc::observers::poke();
    sleep_for_p(m)
}

/// This M found `g`, which is wired to `locked`: hand it this M's P and let it run
/// `g` (Go's `startlockedm`). This M then holds no P.
pub(crate) fn start_locked_m(m: &'static M, locked: &'static M) {
    let p = m.release_p();
    locked.set_nextp(p);
    locked.note.wake();
}

/// Rule 2: this M found work and stops spinning.
pub(crate) fn reset_spinning(m: &M) {
    debug_assert!(m.spinning());
    drop_spinning(m);
    wakep();
}

/// This M stops spinning if it was, without looking for another spinner (it is
/// giving up its P). Returns whether it was spinning.
pub(crate) fn drop_spinning(m: &M) -> bool {
    let was = m.spinning();
    if was {
        m.set_spinning(false);
        sched().idle.stop_spinning();
    }
    was
}

/// An idle P for an M that has none, unless a stop-the-world is collecting them.
pub(crate) fn idle_p_unless_stopping() -> Option<usize> {
    let s = sched();
    if s.stopping.load(Ordering::SeqCst) {
        return None;
    }
    s.idle.lock().pidle_get()
}

/// This M turns spinning.
pub(crate) fn become_spinning(m: &M) {
    m.set_spinning(true);
    sched().idle.become_spinning();
}

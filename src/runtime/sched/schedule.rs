//! The scheduling loop every M runs: Go's `schedule`, `findRunnable`, `stealWork`
//! and `execute`.
//!
//! An M runs [`run`] on its own thread stack ("g0"). Each turn it finds a runnable
//! G ([`find_runnable`], which blocks when there is none), resumes it, and handles
//! whatever the G asked for when it switched back (yield, park, exit).
//!
//! `find_runnable` looks in Go's order:
//! 1. due timers of its own P;
//! 2. every 61st schedtick, one G from the global queue first (fairness: Gs that
//!    keep readying each other on a P cannot starve the global queue);
//! 3. `runnext`, then the local ring;
//! 4. a batch from the global queue;
//! 5. the poller, without blocking, if any G waits on it; before that, an M that
//!    has run for a while may hand its core over once ([`crate::runtime::proc::handover`]);
//! 6. stealing — if this M may spin (at most half the busy Ps have a spinning M):
//!    four rounds over the other Ps in a random order (random start, coprime
//!    stride), taking half a victim's ring; the last round also runs victims' due
//!    timers and may take their `runnext`;
//! 7. nothing: while Gs wait on the network, yield the thread and search again,
//!    for up to the M's poll-spin budget ([`crate::runtime::proc::pollspin`]); then idle the P
//!    and re-check (see [`super::mpark`] for why that order), and either block in
//!    the poller until the next timer, or park the M.
//!
//! Stalled Ps: every 61 scheduling rounds a busy P also looks at the other Ps. One
//! that is running, has queued Gs, and has switched to no G since the previous
//! look has an M that makes no progress: descheduled by the OS (on a machine
//! shared with other busy threads, for a whole OS time slice) or stuck in a call
//! that is not `blocking`. Its queued Gs would wait for it, since a P with work of
//! its own never steals, so the looking P takes half of them (or the `runnext`)
//! at once instead of leaving them to sysmon's 20 ms retake.
//!
//! The slice rule: a G taken from `runnext` inherits the current time slice (no
//! schedtick bump). So that a pair of Gs readying each other through `runnext`
//! cannot monopolise the P, a slice that has lasted [`TIME_SLICE_NS`] ends: sysmon,
//! which watches each P's schedtick as Go's does, flags the P (`P::slice_over`),
//! and the next G taken from `runnext` goes to the global queue instead, as a G
//! preempted by Go's sysmon does.

use super::mpark::{
    become_spinning, drop_spinning, hand_off_p, idle_p_unless_stopping, reset_spinning, start_locked_m, stop_locked_m,
    stop_m, wakep, wakep_global,
};
use super::ownership::{enter_runtime, leave_runtime};
use super::poll::{self, wake_netpoller};
use super::timers::run_due;
use crate::runtime::proc::m::{lockedm, set_current_g, M};
use crate::runtime::proc::p::{bump, gfput, PState, PStatus, Unwatched, P};
use crate::runtime::proc::pollspin::{network_in_use, PollSpin};
use crate::runtime::proc::state::{net_waiters, sched, Sched};
use crate::runtime::proc::timers::NO_TIMER;
use crate::runtime::proc::tracing;
use crate::runtime::queue::runq::RING_CAP;
use crate::runtime::sys::sync_prims::{nap, spin_yield};
use crate::runtime::sys::trace_buf::{Kind, Stop};
use crate::runtime::sys::trace_clock;
use crate::runtime::task::g::{GRef, Outcome, Status, Switch};
use std::sync::atomic::{fence, Ordering};
use std::time::Duration;

/// Check the global queue first every this many schedticks (Go's 61: prime, so it
/// does not beat with other periodic patterns).
const GLOBAL_CHECK_PERIOD: u64 = 61;
/// Scheduling rounds between two looks around by a busy P (a non-blocking network
/// poll, and stalled Ps' queues).
const LOOK_PERIOD: u32 = 61;
/// A time slice (Go's `forcePreemptNS`): a `runnext` chain that has run this
/// long gives the P up (module docs; docs/decisions/0009-time-slice.md).
pub(crate) const TIME_SLICE_NS: u64 = 10_000_000;
/// How long a thief sleeps before taking a running P's `runnext` (Go's
/// `usleep(3)`; the kernel's timer slack lengthens it,
/// docs/decisions/0007-runnext-steal-pause.md).
const RUNNEXT_STEAL_PAUSE: Duration = Duration::from_micros(3);
/// Steal rounds over all Ps (Go's `stealTries`).
const STEAL_TRIES: usize = 4;

/// The M's main loop. Returns only when the M must exit: sysmon retired it, or
/// the G wired to it by `lock_os_thread` exited.
pub(crate) fn run(m: &'static M) {
    loop {
        if let Some(g) = m.lockedg() {
            // Wired to a G that is not running: only it may run here. Wait until a
            // scheduler that dequeues it hands this M a P.
            if !stop_locked_m(m) {
                return;
            }
            if !execute(m, g, false) {
                return;
            }
            continue;
        }
        if m.p().is_none() && !reacquire_p(m) {
            return;
        }
        let Some((g, inherit)) = find_runnable(m) else {
            return;
        };
        if m.spinning() {
            reset_spinning(m);
        }
        watch_timers(m);
        if let Some(locked) = lockedm(&g) {
            if !std::ptr::eq(locked, m) {
                // Its own M runs it, on our P; we look for a P again.
                start_locked_m(m, locked);
                continue;
            }
        }
        if !execute(m, g, inherit) {
            return;
        }
    }
}

/// About to run a G where nobody may watch some timers (`Local::unwatched`):
/// a G that parked here armed one and left the wake-up to this search
/// (`timers::add_timer_parked`), or this M came back from the poller, which was
/// watching every timer due at or after its deadline, and runs a G it found
/// there or one a timer readied, without waking a helper (`ready::ready_found`).
/// For our P's timers (a parked G's), `wake_netpoller` as Go calls it when the
/// timer is armed: the poller is broken out of a later deadline, or a spinner
/// is woken, which runs what is due or sleeps in the poller until it. Under
/// load that spinner is also what puts an idle P to work on the timers, which
/// sysmon's pace would leave late (docs/decisions/0015-one-m-per-timer.md).
/// For every P's (the poller's), only a timer due within sysmon's longest pace
/// gets an M now; a later one is left to sysmon, which looks within that pace
/// and then sleeps no later than the timer (`sysmon::timers_if_unwatched`).
/// So a server's far-off idle deadlines cost no extra M per request.
#[inline(always)]
fn watch_timers(m: &M) {
    let p = m.p().expect("found a G without a P");
    // SAFETY: this M holds `p`; the reference dies in this function.
    let local = unsafe { p.local() };
    if local.unwatched == Unwatched::No {
        return; // the common case: read only, on the path of every G switch
    }
    let when = match std::mem::replace(&mut local.unwatched, Unwatched::No) {
        Unwatched::No => return,
        Unwatched::Own => p.timers.next(),
        Unwatched::Every => {
            let s = sched();
            let when = earliest_timer(s);
            if when
                > s.nanotime()
                    .saturating_add(crate::runtime::proc::observers::MAX_DELAY_NS)
            {
                return;
            }
            when
        }
    };
    if when != NO_TIMER {
        wake_netpoller(when);
    }
}

/// An M without a P (its P was retaken while its G ran, or its G's blocking call
/// found none on return) takes an idle one, or parks until handed one. False if
/// it was retired while parked.
#[cold]
fn reacquire_p(m: &'static M) -> bool {
    match idle_p_unless_stopping() {
        Some(p) => {
            m.acquire_p(p);
            true
        }
        None => stop_m(m),
    }
}

/// Resumes `g` on this M until it switches out, then carries out its request.
/// Returns false if the M must exit (its locked G exited: Go ends the thread, whose
/// state the G may have changed).
#[inline(always)]
fn execute(m: &'static M, g: GRef, inherit: bool) -> bool {
    let s = sched();
    let p = m.p().expect("execute without a P");
    // (A taker may be mid-handshake: `Retaking`, which it will undo, as we are
    // inside the runtime.)
    debug_assert!(
        p.state().m().is_some_and(|h| std::ptr::eq(h, m)) && matches!(p.status(), PStatus::Running | PStatus::Retaking),
        "goro: M{} executes on P{} it does not hold (status {:?}, holder {:?})",
        m.id(),
        p.id,
        p.status(),
        p.state().m().map(|m| m.id())
    );
    if !inherit {
        bump(&p.counters.schedtick, 1);
        if p.slice_over.load(Ordering::Relaxed) {
            p.slice_over.store(false, Ordering::Relaxed);
        }
    }
    bump(&p.counters.context_switches, 1);
    g.owner_set_status(Status::Runnable, Status::Running);
    g.set_m_id(m.id());
    m.set_curg(g.id());
    m.preempt.store(false, Ordering::Relaxed);
    set_current_g(Some(g));
    let default_size = s.config.stack_size;
    // SAFETY: we popped `g` from a queue, so this M owns it until it switches out.
    let first_run = unsafe { g.needs_stack() };
    let no_stack = if first_run { start(p, g, default_size) } else { None };
    // Inside the runtime still: a start that waits for the tracer is not
    // taken for user code by sysmon.
    if tracing::on() {
        tracing::started(m, g, !first_run);
    }
    leave_runtime(m);
    let outcome = match no_stack {
        // SAFETY: as above; a G that needed a stack was given one.
        None => unsafe { g.resume() },
        Some(e) => Outcome::NoStack(e),
    };
    // The P may have been taken while the G ran (sysmon's retake): then this M
    // finishes the G's request without one (the trace marked where the run
    // left it when the M found it gone, here or earlier in the G's run).
    let p = enter_runtime(m);
    set_current_g(None);
    m.set_curg(0);
    match outcome {
        Outcome::Exited(_) | Outcome::NoStack(_) if tracing::on() => tracing::stopped(m, g, Stop::Exit),
        _ => {}
    }
    match outcome {
        Outcome::Exited(stack) => {
            match p {
                // SAFETY: this M holds `p`; the G is gone, nothing else uses its state.
                Some(p) => unsafe { p.local() }.stacks.put(&s.stacks, stack, default_size),
                None => s.stacks.give([stack]),
            }
            return exit_g(m, p, g);
        }
        Outcome::NoStack(err) => {
            let p = super::syscall::fail_without_stack(m, g, err);
            return exit_g(m, p, g);
        }
        Outcome::Switched => {
            // SAFETY: the G has switched out; this M still owns it.
            let switch = std::mem::replace(&mut unsafe { g.ctx() }.switch, Switch::None);
            match switch {
                Switch::Yield => {
                    if tracing::on() {
                        tracing::yielded(m, g);
                    }
                    g.owner_set_status(Status::Running, Status::Runnable);
                    s.global.push(g);
                    wakep_global();
                }
                Switch::Park(unlock) => {
                    if tracing::on() {
                        tracing::stopped(m, g, Stop::Park);
                    }
                    // The G committed to Waiting before switching; only now may its
                    // waiter's lock be released (the one parking protocol, park.rs).
                    // `take` copies the value out, marks the G off its stack (a
                    // dump may inspect it from there, `G::inspect`, before any
                    // waker can ready it), then drops the value.
                    // SAFETY: `data` is the parked G's unlock value, intact until
                    // someone readies the G, which needs the lock this releases;
                    // `take` runs once.
                    unsafe { (unlock.take)(unlock.data, &g) };
                }
                Switch::None => unreachable!("goro: G switched out without a reason"),
            }
        }
    }
    true
}

/// Gives a G about to run for the first time its stack and coroutine; the
/// error it reports if no stack could be mapped.
#[inline(never)]
fn start(p: &P, g: GRef, default_size: usize) -> Option<std::io::Error> {
    let size = g.stack_size();
    // SAFETY: this M holds `p`; the reference dies in this statement.
    match unsafe { p.local() }.stacks.get(&sched().stacks, size, default_size) {
        // SAFETY: this M popped `g` and owns it; it has no coroutine yet.
        Ok(stack) => unsafe { g.start(stack) },
        Err(e) => return Some(cannot_map(size, e)),
    }
    None
}

/// The error a G that could not start reports: the stack's size and why.
#[cold]
fn cannot_map(size: usize, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("cannot map its stack of {size} bytes: {e}"))
}

/// The G's body returned: unregister it, drop its task and recycle the header.
/// Returns false if the G was wired to this M, which must then exit.
fn exit_g(m: &'static M, p: Option<&P>, g: GRef) -> bool {
    let was_locked = m.lockedg() == Some(g);
    // SAFETY: this M saw the G exit and owns it; no queue or waiter holds it.
    unsafe { g.finish() };
    gfput(p, g);
    if was_locked {
        // Still wired while handing the P off: a new M that hand-off may start
        // must come from the template thread, not be cloned from this one, whose
        // state the G may have changed (template.rs).
        if m.p().is_some() {
            hand_off_p(m.release_p());
        }
        m.set_lockedg(None);
        return false;
    }
    true
}

/// Finds a G to run, blocking until there is one. Returns with `m` holding a P,
/// and whether the G inherits the time slice; `None` if the M was retired while
/// parked.
fn find_runnable(m: &'static M) -> Option<(GRef, bool)> {
    let mut spin = PollSpin::new();
    let found = search(m, &mut spin);
    if let (Some(_), Some(p)) = (&found, m.p()) {
        spin.found(m, || p.runq.ring_len());
    }
    found
}

/// [`find_runnable`]'s search; `spin` is its poll-spin ([`crate::runtime::proc::pollspin`]).
/// Each turn looks in the module docs' order; a step that made new work
/// appear, or left this M holding a P again, starts the next turn.
fn search(m: &'static M, spin: &mut PollSpin) -> Option<(GRef, bool)> {
    let s = sched();
    loop {
        if s.stopping.load(Ordering::SeqCst) {
            // A stop-the-world is collecting the Ps: give ours up and wait.
            spin.abandon(m);
            stop_for_stw(m);
            if !stop_m(m) {
                return None;
            }
            continue;
        }
        let p = m.p().expect("find_runnable without a P");
        let TimerRun {
            now,
            next: mut poll_until,
            ..
        } = run_timers(p, 0);
        if let Some(found) = search_queues(s, m, p, poll_until) {
            return Some(found);
        }
        trace_clock::stale(); // it spins, steals, polls or sleeps next
        if m.spinning() || s.idle.may_spin(s.gomaxprocs() as u32) {
            if !m.spinning() {
                become_spinning(m);
            }
            match steal_work(m, p, now) {
                Stolen::G(g, inherit) => return Some((g, inherit)),
                Stolen::NewWork => continue,
                Stolen::Nothing { next_timer } => poll_until = poll_until.min(next_timer),
            }
        }

        // Nothing to do. While Gs wait on the network, yield the thread and look
        // again for a moment before sleeping.
        let now = s.nanotime();
        if spin.go_on(m, network_in_use(s), now, poll_until) {
            spin_yield();
            let back = s.nanotime();
            m.handover.back_on_cpu(back);
            spin.yielded(back.saturating_sub(now));
            continue;
        }
        match idle_and_sleep(s, m, p, poll_until) {
            Woke::Search => continue,
            Woke::Retired => return None,
        }
    }
}

/// Steps 2 to 5 of the search, after its P's timers (which were due until
/// `poll_until`): the global queue's turn, a busy P's look around, its own
/// queue, a global batch, and the network without blocking.
#[inline(always)]
fn search_queues(s: &Sched, m: &M, p: &P, poll_until: u64) -> Option<(GRef, bool)> {
    if p.schedtick().is_multiple_of(GLOBAL_CHECK_PERIOD) && !s.global.is_empty() {
        if let Some(g) = global_get(s, p, 1) {
            // The G that `ready_found` left on our queue without waking an
            // M (we were to run it next) now waits behind this one, which
            // may compute for a whole slice: let an idle P take it.
            if !p.runq.is_empty() {
                wakep();
            }
            return Some((g, false));
        }
    }
    look_around(s, p);
    if let Some(found) = local_pop(s, p) {
        return Some(found);
    }
    if !s.global.is_empty() {
        if let Some(g) = global_get(s, p, 0) {
            return Some((g, false));
        }
    }
    // Step 5: the network, without blocking, if a G waits on it and no M is
    // already blocked in the poller (which would get the events itself).
    // An M that has been on its CPU for a while first offers it to whoever
    // the kernel keeps waiting (`crate::runtime::proc::handover`).
    if net_waiters() > 0 && s.lastpoll.load(Ordering::SeqCst) != 0 {
        trace_clock::stale(); // the offer may yield the thread
                              // Our P's timers read again: a P-less caller may have added one.
        crate::runtime::proc::handover::offer(s, m, poll_until.min(p.timers.next()));
        if poll::netpoll(s, Some(Duration::ZERO)) {
            return local_pop(s, p);
        }
    }
    None
}

/// A busy P also looks around now and then, not only when it runs dry:
/// - at the network, so sockets that became ready are noticed while every P
///   has a queue to work through (Go leaves this to sysmon every 10 ms;
///   Tokio polls every 61 scheduling rounds, as here);
/// - at the other Ps, for a queue whose M has stalled (module docs).
#[inline(always)]
fn look_around(s: &Sched, p: &P) {
    // SAFETY: this M holds `p`; the reference dies in this statement.
    let rounds = unsafe { p.local() }.rounds_since_look.wrapping_add(1);
    // SAFETY: as above.
    unsafe { p.local() }.rounds_since_look = rounds;
    if rounds >= LOOK_PERIOD {
        // SAFETY: as above.
        unsafe { p.local() }.rounds_since_look = 0;
        trace_clock::stale(); // a system call and other Ps' queues
        if net_waiters() > 0 && s.lastpoll.load(Ordering::SeqCst) != 0 {
            poll::netpoll(s, Some(Duration::ZERO));
        }
        steal_from_stalled(s, p);
    }
}

/// How [`idle_and_sleep`] ended.
enum Woke {
    /// Holding a P again (new work, or a P to watch): search again.
    Search,
    /// Retired while parked: the M exits.
    Retired,
}

/// Step 7's end, the search having found nothing: gives the P up, re-checks
/// every source of work (see [`super::mpark`] for why that order), and
/// sleeps, in the poller until `poll_until` (the earliest timer the search
/// knows of) or on its note, until there is work again.
fn idle_and_sleep(s: &Sched, m: &'static M, p: &P, poll_until: u64) -> Woke {
    {
        let mut idle = s.idle.lock();
        if !m.spinning() && s.idle.needspinning() == 1 {
            // Someone wanted a spinner but found no idle P: be it instead.
            drop(idle);
            become_spinning(m);
            return Woke::Search;
        }
        // Go's pidleput invariant: an idle P has nothing queued (else that
        // work would be stranded: nobody looks at idle Ps' queues).
        debug_assert!(p.runq.is_empty(), "goro: idling P{} with Gs in its queue", p.id);
        // Its timers are watched from here on: below, this M blocks in the
        // poller until `poll_until`, or breaks the M in it out of a longer
        // sleep (`timers::add_timer_parked`).
        // SAFETY: this M holds `p`; the reference dies in this statement.
        unsafe { p.local() }.unwatched = Unwatched::No;
        idle.pidle_put(m.release_p());
    }
    let was_spinning = drop_spinning(m);
    // Pairs with the fence in `wakep`. Both of our stores (P idle, one spinner
    // fewer) come before it and every re-check below after it, so a submitter
    // either sees our P idle and no spinner (and wakes an M), or we see its work.
    // The global queue pairs through its lock instead (`wakep_global`): we look
    // under it, so a submitter that pushed before us is seen, and one that
    // pushes after us sees our stores when it reads the counters.
    fence(Ordering::SeqCst);
    if s.global.has_work() {
        let p = s.idle.lock().pidle_get_spinning();
        if let Some(p) = p {
            m.acquire_p(p);
            become_spinning(m);
            return Woke::Search;
        }
    }
    let poll_until = if was_spinning {
        if let Some(p) = check_runqs_without_p(s) {
            m.acquire_p(p);
            become_spinning(m);
            return Woke::Search;
        }
        // A spinner answers for every P's timers (Go's rule: a timer added
        // while nobody polls wakes a spinner, `wake_netpoller`), so it sleeps
        // until the earliest. A non-spinning M sleeps until its own P's only:
        // a running P's timers are its owner's to run, and an M that slept
        // until one of them would wake to a timer it cannot run, and poll
        // again and again until the owner did (`tests/timer_wakeups.rs`).
        poll_until.min(earliest_timer(s))
    } else {
        // Our own P's, read again after the fence: `poll_until` came from
        // before the search, and a P-less caller (a plain thread, a G whose
        // P was retaken) may have added one to this P since, whose `wakep`
        // then saw no idle P (`timers::add_timer`;
        // `loom_timer_added_to_an_idling_p_is_watched`).
        poll_until.min(p.timers.next())
    };

    // Block in the poller until the next timer or network event, if nobody
    // else is.
    let net = net_waiters() > 0;
    if (net || poll_until != NO_TIMER) && s.lastpoll.swap(0, Ordering::SeqCst) != 0 {
        if block_in_poller(s, m, net, poll_until) {
            return Woke::Search;
        }
    } else if poll_until != NO_TIMER {
        let until = s.poll_until.load(Ordering::SeqCst);
        if until == 0 || until > poll_until {
            s.poller.wake();
        }
    }
    // No timer and no network wait: if this was the last busy M, nothing
    // may be able to run ever again.
    crate::runtime::proc::observers::poke();
    let slept_from = s.nanotime();
    if !stop_m(m) {
        return Woke::Retired;
    }
    PollSpin::woke(m, s.nanotime().saturating_sub(slept_from), None);
    Woke::Search
}

/// Blocks this M, which holds no P and has just taken the poller
/// (`Sched::lastpoll` swapped to 0), in the poller until `poll_until` or a
/// network event (`net`: some G waits on the network), then readies what it
/// found. Returns whether the M holds a P again (to search with); else it
/// parks.
fn block_in_poller(s: &Sched, m: &'static M, net: bool, poll_until: u64) -> bool {
    s.poll_until
        .store(if poll_until == NO_TIMER { 0 } else { poll_until }, Ordering::SeqCst);
    let slept_from = s.nanotime();
    let timeout = (poll_until != NO_TIMER).then(|| poll_until.saturating_sub(slept_from));
    let mut woken = Vec::new();
    // Sleeping on timers only: if none would wake anything (stopped,
    // abandoned, or on channels nobody waits on) and this was the last
    // busy M, nothing may ever run again (the deadlock check's
    // trigger, as below).
    if !net {
        crate::runtime::proc::observers::poke();
    }
    m.set_blocked(true);
    poll::poll(s, timeout.map(Duration::from_nanos), &mut woken);
    m.set_blocked(false);
    s.poll_until.store(0, Ordering::SeqCst);
    let now = s.nanotime();
    s.lastpoll.store(now.max(1), Ordering::SeqCst);
    PollSpin::woke(m, now.saturating_sub(slept_from), timeout);
    m.handover.back_on_cpu(now);
    // Take a P first, so the readied Gs land on it (and this M runs them);
    // without one they go to the global queue and wake other Ms.
    let p = s.idle.lock().pidle_get();
    if let Some(p) = p {
        m.acquire_p(p);
    }
    poll::ready_polled(s, woken);
    let Some(p) = m.p() else {
        return false;
    };
    // Back to the top holding a P, but not as a spinner (Go resumes
    // spinning here if it was, when the poll readied nothing). A
    // spinner that finds work wakes another M (`reset_spinning`): for
    // the G of a timer that woke us, or Gs the poll readied onto our
    // P, that M would only spin and sleep again, since we run them
    // ourselves and `ready_batch`/`ready_sleepers` already woke one if
    // there is work for two (`tests/timer_wakeups.rs` counts the M
    // sleeps per timer). But we were
    // watching the timers from the poller: if we run a G, someone
    // must take that over (`watch_timers`). Finding nothing, the
    // search spins if it may, and idling watches them again.
    // SAFETY: this M holds `p`; the reference dies in this statement.
    unsafe { p.local() }.unwatched = Unwatched::Every;
    true
}

/// Gives this M's P to the stop-the-world collecting them (`procresize.rs`).
#[cold]
fn stop_for_stw(m: &'static M) {
    drop_spinning(m);
    let p = m.p().expect("stop_for_stw without a P");
    m.drop_p();
    p.set_state(PState::new(None, PStatus::Stopped));
}

/// What [`run_timers`] did.
struct TimerRun {
    /// The clock it read (0 if it did not read it).
    now: u64,
    /// The P's next deadline afterwards.
    next: u64,
    /// Timers that fired (their Gs are now in this M's P).
    fired: usize,
}

/// Runs `p`'s due timers, readying their Gs onto this M's P.
#[inline(always)]
fn run_timers(p: &P, now: u64) -> TimerRun {
    let next = p.timers.next();
    if next == NO_TIMER {
        return TimerRun { now, next, fired: 0 };
    }
    let now = if now == 0 { sched().nanotime() } else { now };
    if next > now {
        return TimerRun { now, next, fired: 0 };
    }
    let fired = run_due(&p.timers, now);
    if fired > 0 && tracing::on() {
        tracing::emit(Kind::Timers, 0, fired as u64, 0);
    }
    if let Some(mine) = crate::runtime::proc::m::current_p() {
        bump(&mine.counters.timers_fired, fired as u64);
    }
    TimerRun {
        now,
        next: p.timers.next(),
        fired,
    }
}

/// `runnext` or the ring, applying the slice rule (module docs).
#[inline(always)]
fn local_pop(s: &Sched, p: &P) -> Option<(GRef, bool)> {
    let (g, inherit) = p.runq.pop()?;
    let g = GRef::from_ptr(g);
    if !inherit {
        prefetch_next(p);
        return Some((g, false));
    }
    bump(&p.counters.runnext_hits, 1);
    if p.slice_over.load(Ordering::Relaxed) {
        // Slice used up (sysmon says): this G goes to the back of the global
        // queue and the P moves on, starting a fresh slice.
        p.slice_over.store(false, Ordering::Relaxed);
        s.global.push(g);
        wakep_global();
        let g = p.runq.pop_ring().map(GRef::from_ptr).or_else(|| global_get(s, p, 0))?;
        return Some((g, false));
    }
    Some((g, true))
}

/// Starts loading what the next resumes from `p`'s ring will touch, so that
/// their cache misses overlap the G about to run: the next G's stack (its
/// header was prefetched one pop ago) and the header of the G after it. Called
/// after [`local_pop`]'s ordinary pop from the ring, not after a pop from
/// `runnext`: a G handed over there (a channel partner) is usually cache-warm,
/// and the look would only cost. G headers are never freed, so even a G a thief
/// took meanwhile is valid to read.
#[inline(always)]
fn prefetch_next(p: &P) {
    if let Some(next) = p.runq.peek(0) {
        GRef::from_ptr(next).prefetch_stack();
    }
    if let Some(after) = p.runq.peek(1) {
        GRef::from_ptr(after).prefetch_header();
    }
}

/// Takes a batch from the global queue into `p`'s ring and returns one G (Go's
/// `globrunqget`): its fair share `len/gomaxprocs + 1`, at most half a ring, and at
/// most `max` if non-zero.
#[inline(always)]
fn global_get(s: &Sched, p: &P, max: usize) -> Option<GRef> {
    let mut n = (s.global.len() / s.gomaxprocs() + 1).min(RING_CAP as usize / 2);
    if max > 0 {
        n = n.min(max);
    }
    let mut moved = 1;
    let first = s.global.pop_batch(n, |g| {
        moved += 1;
        p.runq_put(g, false);
    })?;
    bump(&p.counters.global_runq_gets, 1);
    if tracing::on() {
        tracing::took(Kind::GlobalTake, 0, moved, first);
    }
    Some(first)
}

enum Stolen {
    G(GRef, bool),
    /// A timer fired and readied something (maybe onto the global queue).
    NewWork,
    Nothing {
        next_timer: u64,
    },
}

/// Step 6 of `find_runnable` (Go's `stealWork`).
fn steal_work(m: &M, p: &P, mut now: u64) -> Stolen {
    let s = sched();
    let n = s.gomaxprocs();
    let mut next_timer = NO_TIMER;
    let mut ran_timers = false;
    for round in 0..STEAL_TRIES {
        let last = round == STEAL_TRIES - 1;
        for victim in RandomOrder::new(n, m.rand()) {
            if victim == p.id {
                continue;
            }
            let v = s.p(victim);
            if last && v.timers.next() != NO_TIMER {
                // Judged by what fired, not by the heap's length: the victim's
                // owner may add timers meanwhile, and a G readied into our P that
                // we then failed to notice would be stranded when the P idles.
                let run = run_timers(v, now);
                now = run.now;
                next_timer = next_timer.min(run.next);
                if run.fired > 0 {
                    if let Some(found) = local_pop(s, p) {
                        return Stolen::G(found.0, found.1);
                    }
                    ran_timers = true;
                }
            }
            if v.status() == crate::runtime::proc::p::PStatus::Idle {
                continue;
            }
            let running = v.status() == crate::runtime::proc::p::PStatus::Running;
            // Before taking a running P's `runnext`, give its owner a moment to run
            // it first: sleep, as Go does (usleep(3)). The M stays spinning while
            // it sleeps, so the owner's next `wakep` sees a spinner and wakes
            // nobody, and the sleeper's looks at the victim's queue do not pull
            // its cache line away from the owner meanwhile: a pair of Gs
            // ping-ponging on one P does not pay a futex wake and a line
            // bounce every few round trips. A sleep, not a busy wait, a timed
            // wait or a thread yield (docs/decisions/0007-runnext-steal-pause.md).
            //
            // Then steal only if the owner ran nothing meanwhile. Two Gs readying
            // each other alternate in `runnext` (A, B, A, ...), so after the pause
            // the slot often holds the same G pointer again and the CAS succeeds
            // (ABA): the thief would split a ping-pong pair across cores. A moving
            // context-switch count means the owner is running its queue.
            let pause = || {
                if !running {
                    return true;
                }
                let before = v.counters.context_switches.load(Ordering::Relaxed);
                nap(RUNNEXT_STEAL_PAUSE);
                v.counters.context_switches.load(Ordering::Relaxed) == before
            };
            if let Some(g) = steal_from(p, v, last, pause) {
                return Stolen::G(g, false);
            }
        }
    }
    if ran_timers {
        Stolen::NewWork
    } else {
        Stolen::Nothing { next_timer }
    }
}

/// The periodic look at the other Ps (module docs): takes half the ring (or the
/// `runnext`) of each running P that has queued Gs but switched to none since this
/// P's previous look, while this P's ring has room for it.
fn steal_from_stalled(s: &Sched, p: &P) {
    let n = s.gomaxprocs();
    // SAFETY: this M holds `p`; the reference dies at the end of this function,
    // and nothing below reaches `p.local()` again.
    let seen = &mut unsafe { p.local() }.seen_switches;
    seen.resize(n, u64::MAX);
    for (id, seen) in seen.iter_mut().enumerate() {
        let v = s.p(id);
        let switches = v.counters.context_switches.load(Ordering::Relaxed);
        let before = std::mem::replace(seen, switches);
        if id == p.id || switches != before || v.status() != PStatus::Running || v.runq.is_empty() {
            continue;
        }
        // A steal takes at most half of a full ring: keep room for it.
        if p.runq.ring_len() >= RING_CAP / 2 {
            return;
        }
        if let Some(g) = steal_from(p, v, true, || true) {
            p.runq_put(g, false);
        }
    }
}

/// Steals half of `victim`'s ring (or its `runnext`, see `RunQueue::steal_into`)
/// into `p`'s and counts the steal; returns the G to run now.
fn steal_from(p: &P, victim: &P, steal_runnext: bool, before_runnext: impl FnOnce() -> bool) -> Option<GRef> {
    let (g, taken) = p.runq.steal_into(&victim.runq, steal_runnext, before_runnext)?;
    let g = GRef::from_ptr(g);
    bump(&p.counters.steals, 1);
    bump(&p.counters.stolen, u64::from(taken));
    if tracing::on() {
        tracing::took(Kind::Steal, victim.id as u64, u64::from(taken), g);
    }
    Some(g)
}

/// After idling its P, a formerly spinning M looks at every busy P's queue once
/// more; if one has work it takes an idle P back (Go's `checkRunqsNoP`).
fn check_runqs_without_p(s: &Sched) -> Option<usize> {
    for p in s.procs() {
        if p.status() != crate::runtime::proc::p::PStatus::Idle && !p.runq.is_empty() {
            return s.idle.lock().pidle_get_spinning();
        }
    }
    None
}

/// The earliest timer over all Ps (Go's `checkTimersNoP`).
pub(crate) fn earliest_timer(s: &Sched) -> u64 {
    s.procs().map(|p| p.timers.next()).min().unwrap_or(NO_TIMER)
}

/// Visits `0..n` in a random order: a random start and a stride coprime with `n`,
/// so every index comes exactly once (Go's `randomOrder`, which precomputes the
/// coprimes; here GOMAXPROCS may change, and a few `gcd`s per steal are cheap).
struct RandomOrder {
    n: usize,
    pos: usize,
    stride: usize,
    left: usize,
}

impl RandomOrder {
    fn new(n: usize, r: u32) -> Self {
        let r = r as usize;
        // The first number coprime with `n` from a random point of `1..=n`.
        let mut stride = (r >> 16) % n + 1;
        while gcd(stride, n) != 1 {
            stride = stride % n + 1;
        }
        RandomOrder {
            n,
            pos: r % n,
            stride,
            left: n,
        }
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Iterator for RandomOrder {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let cur = self.pos;
        self.pos = (self.pos + self.stride) % self.n;
        Some(cur)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_order_visits_each_p_once() {
        for n in 1..=12 {
            for r in [0u32, 1, 7, 0xdead_beef, u32::MAX] {
                let mut seen: Vec<usize> = RandomOrder::new(n, r).collect();
                seen.sort_unstable();
                assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n={n} r={r}");
            }
        }
    }

    #[test]
    fn random_order_uses_different_strides() {
        let strides: std::collections::HashSet<usize> =
            (0..64u32).map(|k| RandomOrder::new(8, k << 16).stride).collect();
        assert_eq!(strides, [1, 3, 5, 7].into_iter().collect());
    }
}

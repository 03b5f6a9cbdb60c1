//! `set_gomaxprocs`: resizing the Ps while the program runs, under a brief
//! stop-the-world (Go's `stopTheWorld` + `procresize` + `startTheWorld`).
//!
//! # Stopping the world
//! The caller keeps its own P (if it runs on an M that holds one) and collects
//! every other P into state `Stopped`: idle Ps straight off the idle list, Ps of
//! blocking calls by CAS (as sysmon's hand-off), Ps whose G runs user code by the
//! retake handshake (`ownership::try_take_running`; the G carries on without a P,
//! as after a sysmon retake). An M in the scheduler sees `Sched::stopping` at the
//! top of `find_runnable` and gives its P up itself. The caller polls until every
//! P is stopped; each M reaches that point within one scheduling round.
//!
//! # Resizing
//! New Ps are made (or `Dead` ones revived). Removed Ps hand everything to the
//! survivors: runnable Gs to the global queue, timers to P0, free Gs and stacks to
//! the global pools; then they are `Dead`. If the caller's own P is removed, it
//! moves to P0. Nothing is lost: no G or timer is reachable only from a dead P.
//!
//! # Starting it again
//! Ps with runnable Gs get an M; the others go on the idle list (waking the poller
//! for their timers), and one spinning M is woken for the global queue.
//!
//! Only one stop-the-world runs at a time (`Sched::stw`).

use super::mpark::{start_m, wakep};
use super::ownership::{enter_runtime, leave_runtime, try_take_running};
use super::poll::wake_netpoller;
use crate::runtime::proc::config::MAX_PROCS;
use crate::runtime::proc::m::{current_m, M};
use crate::runtime::proc::p::{gfree_drain, PState, PStatus, P};
use crate::runtime::proc::state::{sched, Sched};
use crate::runtime::proc::timers::{DeadTimers, NO_TIMER};
use crate::runtime::proc::tracing::{self, TakenFrom};
use std::sync::atomic::{fence, Ordering};
use std::time::Duration;

/// [`set_gomaxprocs`](crate::runtime::set_gomaxprocs) once the runtime has started.
pub(crate) fn set_gomaxprocs_of_started(n: usize) -> usize {
    let s = sched();
    if n == 0 {
        return s.gomaxprocs();
    }
    let n = n.min(MAX_PROCS);
    let _one_at_a_time = s.stw.lock().unwrap_or_else(|e| e.into_inner());
    let old = s.gomaxprocs();
    if n == old {
        return old;
    }
    // Inside the runtime throughout: our own P (if any) cannot be taken from us.
    let m = current_m();
    let mine = m.and_then(enter_runtime);
    stop_the_world(s, mine);
    let mut dead = Vec::new();
    let mine = resize(s, (old, n), m, mine, &mut dead);
    start_the_world(s, n, mine);
    if let Some(m) = m {
        leave_runtime(m);
    }
    // Outside the runtime: dropping a dead timer may run user code.
    drop(dead);
    old
}

/// Collects every P but `mine` into state `Stopped` (module docs).
fn stop_the_world(s: &Sched, mine: Option<&P>) {
    s.stopping.store(true, Ordering::SeqCst);
    let mut rounds = 0u32;
    loop {
        let mut pending = 0;
        for p in s.procs() {
            if mine.is_some_and(|q| q.id == p.id) || collect(s, p) {
                continue;
            }
            pending += 1;
        }
        s.stopwait.store(pending, Ordering::Relaxed);
        if pending == 0 {
            return;
        }
        rounds += 1;
        if rounds < 100 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// Tries once to bring `p` to `Stopped`; true if it is.
fn collect(s: &Sched, p: &P) -> bool {
    let st = p.state();
    let stopped = PState::new(None, PStatus::Stopped);
    match st.status() {
        PStatus::Stopped => true,
        PStatus::Idle => {
            // Not on the list means someone is handing it to an M right now.
            let taken = s.idle.lock().pidle_remove(p.id);
            if taken {
                p.set_state(stopped);
            }
            taken
        }
        PStatus::Syscall => p.cas_state(st, stopped),
        PStatus::Running => {
            let Some(m) = st.m() else { return false };
            m.preempt.store(true, Ordering::Relaxed);
            let mut cut = 0;
            let taken = try_take_running(p, st, PStatus::Stopped, || {
                cut = tracing::retaking(m);
                true
            });
            if !taken {
                tracing::retake_undone(&m.retaken_at, cut);
            } else if tracing::on() {
                // Its G's run leaves the P here, as at sysmon's retake.
                tracing::retook_from(p.id, TakenFrom::Resize, cut);
            }
            taken
        }
        PStatus::Retaking | PStatus::Dead => false,
    }
}

/// Changes the number of Ps from `old` to `n` with the world stopped. Returns the
/// caller's P afterwards (moved to P0 if its own was removed).
fn resize(
    s: &Sched,
    (old, n): (usize, usize),
    m: Option<&'static M>,
    mine: Option<&'static P>,
    dead: &mut Vec<DeadTimers>,
) -> Option<&'static P> {
    for id in old..n {
        s.p_or_make(id).set_state(PState::new(None, PStatus::Stopped));
    }
    for id in n..old {
        retire_p(s, s.p(id), dead);
    }
    s.set_procs(n);
    match (m, mine) {
        (Some(m), Some(p)) if p.id >= n => {
            m.drop_p();
            m.acquire_p(0);
            Some(s.p(0))
        }
        (_, mine) => mine,
    }
}

/// Empties a P that is going away into the survivors and marks it `Dead`.
fn retire_p(s: &Sched, p: &P, dead: &mut Vec<DeadTimers>) {
    while let Some((g, _)) = p.runq.pop() {
        s.global.push(crate::runtime::task::g::GRef::from_ptr(g));
    }
    let p0 = s.p(0);
    for (when, action) in p.timers.take_all() {
        dead.push(p0.timers.add(when, action));
    }
    gfree_drain(p);
    // SAFETY: the world is stopped and this P is ours alone.
    unsafe { p.local() }.stacks.drain_to(&s.stacks);
    p.set_state(PState::new(None, PStatus::Dead));
}

/// Gives every stopped P back: to an M if it has runnable Gs, else to the idle
/// list; then wakes an M for the global queue.
fn start_the_world(s: &Sched, n: usize, mine: Option<&P>) {
    s.stopping.store(false, Ordering::SeqCst);
    for id in 0..n {
        if mine.is_some_and(|q| q.id == id) {
            continue;
        }
        let p = s.p(id);
        p.set_state(PState::new(None, PStatus::Idle));
        if !p.runq.is_empty() {
            start_m(id, false);
            continue;
        }
        let when = p.timers.next();
        s.idle.lock().pidle_put(id);
        if when != NO_TIMER {
            wake_netpoller(when);
        }
    }
    // P0 may be the caller's and have received the removed Ps' timers: make sure
    // an M wakes for them even if the caller goes on computing. The fence pairs
    // with a P-less caller's `add_timer` to P0 (its `wakep` fences, then reads
    // `npidle`), so that one of us sees the other.
    fence(Ordering::SeqCst);
    let when = s.p(0).timers.next();
    if when != NO_TIMER {
        wake_netpoller(when);
    }
    wakep();
}

//! The scheduler's side of the network poller (Go's `netpoll` calls and
//! `wakeNetPoller`): polling, readying what a poll found, and making sure some M
//! polls while a G or a thread waits on a socket or a timer is due.
//!
//! The poll descriptors that Gs park on are `netpoll/`, a layer above: they
//! count their waiters in the records (`state::net_waiters`), and the core reads their events
//! through the handler they give it at start-up (`Hooks::net_events`), once
//! per poll. An M polls without blocking in its search while `net_waiters` is
//! non-zero, or blocks in the poller when it runs out of work (exactly one M at
//! a time: the one that swapped `Sched::lastpoll` to 0).

use super::mpark::wakep;
use super::ready::ready_batch;
use crate::runtime::proc::state::{sched, Sched};
use crate::runtime::proc::tracing;
use crate::runtime::proc::waiter::Waiter;
use crate::runtime::sys::epoll;
use crate::runtime::sys::trace_buf::Kind;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Polls the network with `timeout` and readies the Gs waiting on what became
/// ready (onto this M's P, or the global queue without one). Returns whether it
/// readied any.
pub(crate) fn netpoll(s: &Sched, timeout: Option<Duration>) -> bool {
    let mut woken = Vec::new();
    poll(s, timeout, &mut woken);
    ready_polled(s, woken)
}

/// Polls the network with `timeout` and collects in `woken` the Gs (or
/// threads) waiting on the sockets that became ready; the caller wakes them.
/// The descriptors' own handler (`Hooks::net_events`) reads the events.
pub(super) fn poll(s: &Sched, timeout: Option<Duration>, woken: &mut Vec<Waiter>) {
    let mut events = epoll::events();
    let ready = s.poller.poll(timeout, &mut events);
    if !ready.is_empty() {
        (s.hooks.net_events)(ready, woken);
    }
}

/// Readies the waiters a poll returned (onto this M's P, or the global queue if it
/// holds none) and counts them. Returns whether there were any.
pub(super) fn ready_polled(s: &Sched, woken: Vec<Waiter>) -> bool {
    s.counters
        .netpoll_ready
        .fetch_add(woken.len() as u64, Ordering::Relaxed);
    let any = !woken.is_empty();
    if any && tracing::on() {
        tracing::emit(Kind::Netpoll, 0, woken.len() as u64, 0);
    }
    let mut gs = Vec::with_capacity(woken.len());
    for w in woken {
        match w {
            Waiter::G(g) => gs.push(g),
            thread => thread.wake(),
        }
    }
    ready_batch(gs.into_iter());
    any
}

/// A timer at `when` was added: make sure some M will wake up for it (Go's
/// `wakeNetPoller`).
pub(crate) fn wake_netpoller(when: u64) {
    let s = sched();
    if s.lastpoll.load(Ordering::SeqCst) == 0 {
        // An M is blocked in the poller; interrupt it if it would sleep past `when`.
        let until = s.poll_until.load(Ordering::SeqCst);
        if until == 0 || until > when {
            s.poller.wake();
        }
    } else {
        wakep();
    }
}

/// A plain thread is about to block on the network: make sure some M will poll it.
/// A G that parks has its own M looking for work, which ends up in the poller; a
/// thread has none, and with no G running no M may be awake at all. If no M is
/// blocked in the poller, start one: finding nothing to run, it becomes the poller
/// because a waiter exists (`find_runnable`).
pub(crate) fn ensure_poller() {
    if sched().lastpoll.load(Ordering::SeqCst) != 0 {
        wakep();
    }
}

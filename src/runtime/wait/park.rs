//! The one parking protocol: Go's `gopark(unlock)` / `goready(g)`, for Gs and for
//! plain OS threads alike. Every blocking primitive in goro is built on it.
//!
//! # How a wait goes
//! 1. The waiting side takes the lock that guards its wait record (a join state, a
//!    channel's queue, ...), checks its condition, and if it must wait creates a
//!    [`Parker`] and stores `parker.waiter()` in the record.
//! 2. It calls [`Parker::park`] *still holding the lock*, passing the guard.
//!    - In a G: the G is marked `Waiting`, switches to its M's scheduler loop, and
//!      only there is the guard dropped. A waker that takes the lock therefore finds
//!      a G that is already off its stack: it can never "ready" a G that is still
//!      running (Go's rule).
//!    - On a plain thread: the guard is dropped and the thread sleeps until woken.
//! 3. The waker takes the lock, removes the waiter from the record, releases the
//!    lock, and calls [`Waiter::wake`] exactly once. A G goes to the waker's P's
//!    `runnext` (so a ping-pong pair stays on one P and runs back to back), or to
//!    the global queue if the waker holds no P; a thread is unparked.
//!
//! Each wait gets a fresh `Parker`, so a late wake-up can never leak into a later
//! wait. "Exactly once" is the record's job: whoever removes the waiter from the
//! record under its lock owns the wake-up.
//!
//! # Waits that several parties may end: [`Claim`]
//! A `select!` waits on several channels at once, and a `recv_timeout` on a channel
//! and a timer. Each such wait has one `Claim`: whoever wants to end the wait (a
//! sender on one of the channels, a closer, the timer) must first win
//! [`Claim::try_claim`]; only the winner writes the result and wakes the waiter,
//! the others leave it alone. The waiter then unregisters from every other record.
//! `done` goes from `UNCLAIMED` to the winning case exactly once (`AcqRel` CAS): the
//! winner's writes before its wake are visible to the woken waiter.

use crate::runtime::proc::m::current_g;
use crate::runtime::proc::state::sched;
use crate::runtime::proc::timers::Action;
use crate::runtime::proc::waiter::{Claim, ThreadWaiter, Waiter, TIMED_OUT};
use crate::runtime::sched::switch::switch_out;
use crate::runtime::sched::timers::add_timer_parked;
#[cfg(loom)]
use crate::runtime::sys::sync_prims::lot;
use crate::runtime::task::g::{GRef, Status, Switch, Unlock, G};
use crate::runtime::task::ids::WaitReason;
use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::time::Duration;

/// The current context's side of one wait.
pub(crate) struct Parker(Waiter);

impl Parker {
    /// A parker for the current G, or for the current thread if it is not a G.
    pub(crate) fn new() -> Parker {
        match current_g() {
            Some(g) => Parker(Waiter::G(g)),
            None => Parker(Waiter::Thread(Arc::new(ThreadWaiter::new()))),
        }
    }

    /// The handle to store in the wait record.
    pub(crate) fn waiter(&self) -> Waiter {
        self.0.clone()
    }

    /// The G that waits, if a G does.
    #[inline]
    pub(crate) fn g(&self) -> Option<GRef> {
        match self.0 {
            Waiter::G(g) => Some(g),
            _ => None,
        }
    }

    /// Blocks until the waiter is woken; `unlock` (typically the record's lock
    /// guard) is dropped once the wait is committed. See the module docs.
    pub(crate) fn park<U>(self, reason: WaitReason, unlock: U) {
        match self.0 {
            Waiter::G(g) => park_g(g, reason, unlock),
            Waiter::Thread(t) => {
                drop(unlock);
                sleep_thread(&t, reason);
            }
            Waiter::Task(_) => unreachable!("a Parker is a G's or a thread's"),
        }
    }
}

impl Parker {
    /// As [`Parker::park`], for a wait ended through `claim` (which must hold this
    /// parker's waiter), or by the deadline `timeout` from now: then `claim` is
    /// claimed as [`TIMED_OUT`]. Returns once the winner has woken us.
    pub(crate) fn park_timeout<U>(self, reason: WaitReason, unlock: U, claim: &Arc<Claim>, timeout: Duration) {
        match self.0 {
            Waiter::G(g) => {
                let Some(when) = sched().deadline_in(timeout) else {
                    return park_g(g, reason, unlock); // never times out
                };
                let claim = claim.clone();
                // Armed after the switch (like `sleep`): the timer cannot end the wait
                // before the G is off its stack. The record's lock is released first:
                // arming takes a heap lock, and no record lock may be held under it
                // (a waker that wins meanwhile just leaves the timer dead on arrival).
                let arm = OnDrop::new(move || {
                    drop(unlock);
                    add_timer_parked(when, Action::Timeout(claim));
                });
                park_g(g, reason, arm);
            }
            Waiter::Thread(t) => {
                drop(unlock);
                park_thread_timeout(&t, reason, claim, timeout);
            }
            Waiter::Task(_) => unreachable!("a Parker is a G's or a thread's"),
        }
    }
}

/// Blocks the plain thread of `t` until its wake-up, listed meanwhile as a waiting
/// thread (`thread_waits`) for dumps and the deadlock check.
#[cfg(not(loom))]
fn sleep_thread(t: &Arc<ThreadWaiter>, reason: WaitReason) {
    if t.is_woken() {
        return;
    }
    let listed = super::thread_waits::register(t.clone(), reason, false);
    while !t.is_woken() {
        std::thread::park();
        listed.answer();
    }
}

#[cfg(loom)]
fn sleep_thread(t: &Arc<ThreadWaiter>, _reason: WaitReason) {
    lot::wait_until(|| t.is_woken());
}

/// A plain thread's timed wait: sleeps until woken, or claims the wait as
/// [`TIMED_OUT`] once `timeout` has passed (and if someone else won the claim
/// meanwhile, sleeps on until that winner's wake-up).
#[cfg(not(loom))]
fn park_thread_timeout(t: &Arc<ThreadWaiter>, reason: WaitReason, claim: &Claim, timeout: Duration) {
    let deadline = std::time::Instant::now().checked_add(timeout);
    let listed = super::thread_waits::register(t.clone(), reason, deadline.is_some());
    while !t.is_woken() {
        listed.answer();
        match deadline {
            Some(d) if std::time::Instant::now() >= d => {
                if claim.try_claim(TIMED_OUT) {
                    return;
                }
                // Someone else won: they will wake us; wait for it.
                std::thread::park();
            }
            Some(d) => std::thread::park_timeout(d - std::time::Instant::now()),
            None => std::thread::park(),
        }
    }
}

/// Under loom the deadline may pass at any moment, so it passes at once: the
/// thread tries to claim [`TIMED_OUT`] right after releasing the record's lock,
/// and the model explores every order of that claim against the wakers' (a waker
/// that won first is waited for, as in the real thing).
#[cfg(loom)]
fn park_thread_timeout(t: &Arc<ThreadWaiter>, _reason: WaitReason, claim: &Claim, _timeout: Duration) {
    if !t.is_woken() && claim.try_claim(TIMED_OUT) {
        return;
    }
    sleep_thread(t, _reason);
}

/// Runs a closure when dropped: how a step is handed to the park protocol as its
/// "unlock" (it then runs on the scheduler side, after the G switched out).
pub(crate) struct OnDrop<F: FnOnce()>(Option<F>);

impl<F: FnOnce()> OnDrop<F> {
    pub(crate) fn new(f: F) -> Self {
        OnDrop(Some(f))
    }
}

impl<F: FnOnce()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// Parks the running G `g`; `unlock` is dropped by the scheduler after the switch.
fn park_g<U>(g: GRef, reason: WaitReason, unlock: U) {
    g.set_wait_reason(reason);
    g.mark_wait_start();
    // On its stack until the M says otherwise (after the switch).
    g.set_off_cpu(false);
    g.owner_set_status(Status::Running, Status::Waiting);
    // The scheduler takes `unlock` out of this frame (a bitwise move) and drops it
    // on its own stack; here it must then never be dropped again.
    let mut unlock = ManuallyDrop::new(unlock);
    /// # Safety
    /// `p` points to a live `U` that is never used again by its owner, `g`.
    unsafe fn take<U>(p: *mut (), g: &G) {
        // SAFETY: the caller's contract; the read moves the value out.
        let unlock = unsafe { std::ptr::read(p.cast::<U>()) };
        // Nothing of the G's frames is read any more: a dump may inspect it,
        // and its stack may be swapped out, from here on; no waker can ready
        // it before `unlock` drops.
        g.set_off_cpu(true);
        drop(unlock);
    }
    let release = Unlock {
        take: take::<U>,
        data: (&mut *unlock as *mut U).cast(),
    };
    // SAFETY: `g` is the G running this code.
    unsafe { switch_out(&g, Switch::Park(release)) };
    g.set_wait_reason(WaitReason::None);
}

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
//!    the global queue if the waker is not a G; a thread is unparked.
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

use crate::runtime::sched::m::current_g;
use crate::runtime::sched::mpark::wakep;
use crate::runtime::sched::ownership::with_p;
use crate::runtime::sched::state::sched;
use crate::runtime::sched::timers::{add_timer_parked, Action};
#[cfg(loom)]
use crate::runtime::sys::sync_prims::lot;
use crate::runtime::sys::sync_prims::{AtomicBool, AtomicU32, Ordering};
use crate::runtime::task::g::{GRef, Status, Switch, Unlock, WaitReason};
use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::time::Duration;

/// [`Claim`] value before anyone claimed it.
pub(crate) const UNCLAIMED: u32 = u32::MAX;
/// [`Claim`] value when the deadline won.
pub(crate) const TIMED_OUT: u32 = u32::MAX - 1;

/// One wait that several parties may try to end; see the module docs.
pub(crate) struct Claim {
    done: AtomicU32,
    waiter: Waiter,
}

impl Claim {
    pub(crate) fn new(waiter: Waiter) -> Claim {
        Claim {
            done: AtomicU32::new(UNCLAIMED),
            waiter,
        }
    }

    /// Ends the wait as `case` if nobody ended it yet. The winner must then wake
    /// the waiter ([`Claim::waiter`]) exactly once.
    pub(crate) fn try_claim(&self, case: u32) -> bool {
        self.done
            .compare_exchange(UNCLAIMED, case, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Who ended the wait: a case index, [`TIMED_OUT`], or [`UNCLAIMED`].
    pub(crate) fn winner(&self) -> u32 {
        self.done.load(Ordering::Acquire)
    }

    pub(crate) fn waiter(&self) -> Waiter {
        self.waiter.clone()
    }
}

/// Something that can be woken: a parked G or a blocked thread.
#[derive(Clone)]
pub(crate) enum Waiter {
    G(GRef),
    Thread(Arc<ThreadWaiter>),
}

/// Tag bit of a packed thread waiter (G headers and `ThreadWaiter`s are at least
/// 8-aligned, so bit 0 of their addresses is free).
const THREAD_TAG: usize = 1;

/// A plain thread's side of a wait.
pub(crate) struct ThreadWaiter {
    woken: AtomicBool,
    #[cfg(not(loom))]
    thread: std::thread::Thread,
}

impl ThreadWaiter {
    fn new() -> ThreadWaiter {
        ThreadWaiter {
            woken: AtomicBool::new(false),
            #[cfg(not(loom))]
            thread: std::thread::current(),
        }
    }

    pub(crate) fn is_woken(&self) -> bool {
        self.woken.load(Ordering::Acquire)
    }

    /// Ends the wait. Release: what the waker wrote before waking is visible to
    /// the woken thread, which reads the flag with Acquire.
    #[cfg(not(loom))]
    fn wake(&self) {
        let thread = self.thread.clone();
        self.woken.store(true, Ordering::Release);
        thread.unpark();
    }

    /// Blocks until [`ThreadWaiter::wake`], listed meanwhile as a waiting
    /// thread (`thread_waits`) for dumps and the deadlock check.
    #[cfg(not(loom))]
    fn sleep(self: &Arc<Self>, reason: WaitReason) {
        if self.is_woken() {
            return;
        }
        let listed = super::thread_waits::register(self.clone(), reason, false);
        while !self.is_woken() {
            std::thread::park();
            listed.answer();
        }
    }

    #[cfg(loom)]
    fn wake(&self) {
        lot::notify(|| self.woken.store(true, Ordering::Release));
    }

    #[cfg(loom)]
    fn sleep(self: &Arc<Self>, _reason: WaitReason) {
        lot::wait_until(|| self.is_woken());
    }
}

impl Waiter {
    /// Packs the waiter into one word (a tagged pointer; 0 is never produced), for
    /// compact wait records. Undo with [`Waiter::from_raw`].
    pub(crate) fn into_raw(self) -> usize {
        match self {
            Waiter::G(g) => g.as_ptr().as_ptr() as usize,
            Waiter::Thread(t) => Arc::into_raw(t) as usize | THREAD_TAG,
        }
    }

    /// Unpacks a word made by [`Waiter::into_raw`]; 0 means none.
    ///
    /// # Safety
    /// `raw` is 0 or came from `into_raw` and is unpacked only once.
    pub(crate) unsafe fn from_raw(raw: usize) -> Option<Waiter> {
        if raw == 0 {
            None
        } else if raw & THREAD_TAG != 0 {
            // SAFETY: made by Arc::into_raw in `into_raw`, unpacked once.
            Some(Waiter::Thread(unsafe {
                Arc::from_raw((raw & !THREAD_TAG) as *const ThreadWaiter)
            }))
        } else {
            GRef::from_raw(raw as *const crate::runtime::task::g::G).map(Waiter::G)
        }
    }

    /// Makes the waiter runnable. Call once per wait, after releasing the record's lock.
    pub(crate) fn wake(self) {
        match self {
            Waiter::G(g) => ready(g),
            Waiter::Thread(t) => t.wake(),
        }
    }
}

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

    /// Blocks until the waiter is woken; `unlock` (typically the record's lock
    /// guard) is dropped once the wait is committed. See the module docs.
    pub(crate) fn park<U>(self, reason: WaitReason, unlock: U) {
        match self.0 {
            Waiter::G(g) => park_g(g, reason, unlock),
            Waiter::Thread(t) => {
                drop(unlock);
                t.sleep(reason);
            }
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
        }
    }
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
    t.sleep(_reason);
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
    /// `p` points to a live `U` that is never used again by its owner.
    unsafe fn take<U>(p: *mut ()) {
        // SAFETY: the caller's contract; the read moves the value out.
        drop(unsafe { std::ptr::read(p.cast::<U>()) });
    }
    let release = Unlock {
        take: take::<U>,
        data: (&mut *unlock as *mut U).cast(),
    };
    // SAFETY: `g` is the G running this code.
    unsafe { g.switch_out(Switch::Park(release)) };
    g.set_wait_reason(WaitReason::None);
}

/// Makes a `Waiting` G runnable: into the current P's `runnext` if the caller runs
/// on an M that holds a P, else into the global queue; then maybe wakes an M
/// (Go's `goready`).
pub(crate) fn ready(g: GRef) {
    g.cas_status(Status::Waiting, Status::Runnable);
    with_p(|p| match p {
        Some(p) => p.runq_put(g, true),
        None => sched().global.push(g),
    });
    wakep();
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
/// goes first on its every-61st round, the search wakes one then). (Waking one
/// for every request of a server with sparse traffic cost two thread wake-ups
/// per request, and a G
/// sleeping alone 2.6 M sleeps per timer; see docs/DESIGN.md, "One M per
/// request when traffic is sparse" and "One M per timer".) While that G runs,
/// sysmon's 1 ms network poll covers the network, and `schedule::watch_timers`
/// the timers. Without a P (sysmon's poll) the Gs go to the global queue, and
/// an M is always woken.
fn ready_found(gs: impl Iterator<Item = GRef>, next: bool) {
    let wake = with_p(|p| {
        let queued_before = p.is_none_or(|p| !p.runq.is_empty());
        let mut n = 0;
        for g in gs {
            n += 1;
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

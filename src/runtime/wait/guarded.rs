//! State behind the runtime's `RawMutex`, and blocking in one of its wait queues:
//! the two things every `goro::sync` primitive is made of.
//!
//! A primitive keeps its bookkeeping (counts, flags, `WaitQueue`s of sudogs) in a
//! [`Guarded`], takes the lock for a few instructions to decide, and when it must
//! wait, queues a sudog and parks with the lock guard as the park's "unlock" step
//! ([`wait_in`]). The waker pops the sudog under the same lock, records a grant
//! (`success`), and wakes it. See `park.rs` and `waitq.rs`.

use crate::runtime::proc::waiter::Waiter;
use crate::runtime::sys::lock::{RawGuard, RawMutex};
use crate::runtime::sys::sync_prims::const_unless_loom;
use crate::runtime::task::ids::WaitReason;
use crate::runtime::wait::waitq::{block, Sudog, WaitQueue};
use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

/// `S` behind a runtime lock.
pub(crate) struct Guarded<S> {
    lock: RawMutex,
    state: UnsafeCell<S>,
}

// SAFETY: `state` is only reached through `Locked`, which holds the lock.
unsafe impl<S: Send> Send for Guarded<S> {}
// SAFETY: as above.
unsafe impl<S: Send> Sync for Guarded<S> {}

impl<S> Guarded<S> {
    const_unless_loom! {
        pub(crate) fn new(state: S) -> Self {
            Guarded {
                lock: RawMutex::new(),
                state: UnsafeCell::new(state),
            }
        }
    }

    pub(crate) fn lock(&self) -> Locked<'_, S> {
        Locked {
            _guard: self.lock.guard(),
            state: self.state.get(),
            guarded: self,
        }
    }
}

/// The held lock and the state it guards.
pub(crate) struct Locked<'a, S> {
    _guard: RawGuard<'a>,
    state: *mut S,
    /// What is locked (to lock it again after a park).
    guarded: &'a Guarded<S>,
}

impl<S> Deref for Locked<'_, S> {
    type Target = S;
    fn deref(&self) -> &S {
        // SAFETY: we hold the lock for as long as `self` lives.
        unsafe { &*self.state }
    }
}

impl<S> DerefMut for Locked<'_, S> {
    fn deref_mut(&mut self) -> &mut S {
        // SAFETY: as above, and `&mut self` makes this the only reference.
        unsafe { &mut *self.state }
    }
}

/// Queues the caller (carrying `value`, at the head if `front`) in the queue
/// `queue` picks out of the state, parks, and returns the sudog's outcome once a
/// waker granted (`true`) or merely woke (`false`) it. The lock is released after
/// the caller is parked.
pub(crate) fn wait_in<S, T>(
    mut locked: Locked<'_, S>,
    reason: WaitReason,
    value: Option<T>,
    front: bool,
    queue: impl Fn(&mut S) -> &mut WaitQueue<T>,
) -> bool {
    let sg = Sudog::new(value);
    let q = queue(&mut locked);
    if front {
        q.push_front(&sg);
    } else {
        q.push(&sg);
    }
    let guarded = locked.guarded;
    block(&sg, locked, reason, None, &|f| f(queue(&mut guarded.lock())));
    sg.success()
}

/// As [`wait_in`] with a deadline. Returns `None` if the wait timed out (the sudog
/// is then out of the queue), else the outcome.
pub(crate) fn wait_in_timeout<'a, S, T>(
    g: &'a Guarded<S>,
    mut locked: Locked<'a, S>,
    reason: WaitReason,
    timeout: Duration,
    queue: impl Fn(&mut S) -> &mut WaitQueue<T>,
) -> Option<bool> {
    let sg = Sudog::new(None);
    queue(&mut locked).push(&sg);
    let woken = block(&sg, locked, reason, Some(timeout), &|f| f(queue(&mut g.lock())));
    woken.then(|| sg.success())
}

/// Wakes every waiter in `q` with `success`; returns them for waking after unlock.
pub(crate) fn pop_all<T>(q: &mut WaitQueue<T>, success: bool) -> Vec<Waiter> {
    let mut out = Vec::new();
    pop_all_into(q, success, &mut out);
    out
}

/// As [`pop_all`], adding them to `out` (the poller's batch: no vector per event).
pub(crate) fn pop_all_into<T>(q: &mut WaitQueue<T>, success: bool, out: &mut Vec<Waiter>) {
    while let Some(c) = q.pop_claimed() {
        out.push(c.finish(success));
    }
}

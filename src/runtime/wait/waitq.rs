//! Sudogs and wait queues (Go's `sudog` and `waitq`): how blocked operations wait
//! on a channel or a `goro::sync` primitive.
//!
//! A [`Sudog`] is one waiting operation on one wait record: which wait it belongs
//! to (a [`Claim`], shared by all cases of a `select!`), which case it is, and a
//! slot for a value (a sender's offer, where a receiver's value is put, or a sync
//! waiter's arrival time). It lives on the waiter's own stack (a parked G's stack
//! stays put), so blocking allocates nothing. "The lock" below is the lock of the
//! record the queue belongs to (a channel's, a mutex's wait list's, ...).
//!
//! # Invariants
//! - A sudog is in a queue only while its owner is blocked in that operation. The
//!   owner does not return before it is out of every queue: the party that claims
//!   it pops it; the owner removes the rest itself, under each channel's lock.
//! - Queues and sudogs are touched only under the channel's lock. A party holding
//!   the lock may therefore dereference any queued sudog: its owner, to return,
//!   would first need that same lock.
//! - Only the claimer writes the slot and `success`, under the lock, before it
//!   wakes the owner; it never touches the sudog after the wake.

use super::park::Parker;
use crate::runtime::proc::waiter::{Claim, Waiter, TIMED_OUT, UNCLAIMED};
use crate::runtime::task::g::swap::Relocate;
use crate::runtime::task::ids::WaitReason;
use std::cell::{Cell, UnsafeCell};
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Duration;

/// One blocked operation on one channel.
pub(crate) struct Sudog<T> {
    claim: Cell<*const Claim>,
    case: Cell<u32>,
    slot: UnsafeCell<Option<T>>,
    /// Set by the claimer: true if a value moved, false if woken by a close.
    success: Cell<bool>,
    /// Links of the queue it is in (null at the ends); meaningful while `queued`.
    prev: Cell<*const Sudog<T>>,
    next: Cell<*const Sudog<T>>,
    queued: Cell<bool>,
}

impl<T> Sudog<T> {
    /// A sudog offering `value` (a send) or waiting for one (`None`, a receive).
    pub(crate) fn new(value: Option<T>) -> Self {
        Sudog {
            claim: Cell::new(std::ptr::null()),
            case: Cell::new(0),
            slot: UnsafeCell::new(value),
            success: Cell::new(false),
            prev: Cell::new(std::ptr::null()),
            next: Cell::new(std::ptr::null()),
            queued: Cell::new(false),
        }
    }

    /// Ties the sudog to a wait before it is queued.
    pub(crate) fn bind(&self, claim: &Claim, case: u32) {
        self.claim.set(claim);
        self.case.set(case);
    }

    /// The owner, once woken (or never queued): the slot's value.
    pub(crate) fn take(&self) -> Option<T> {
        // SAFETY: the sudog is out of every queue (module invariants), so only its
        // owner, the caller, can reach it.
        unsafe { (*self.slot.get()).take() }
    }

    /// The owner, before queueing: puts a value back into the slot.
    pub(crate) fn put(&self, value: T) {
        // SAFETY: as in `take`.
        unsafe { *self.slot.get() = Some(value) };
    }

    pub(crate) fn success(&self) -> bool {
        self.success.get()
    }
}

/// A sudog this caller claimed: it may fill or empty the slot, then must call
/// [`Claimed::finish`] and, after releasing the channel lock, wake the waiter.
pub(crate) struct Claimed<T> {
    sudog: NonNull<Sudog<T>>,
    waiter: Waiter,
}

impl<T> Claimed<T> {
    /// Moves the value out of a claimed sender's slot.
    pub(crate) fn take(&self) -> T {
        // SAFETY: claimed under the channel lock, which the caller still holds; the
        // owner stays parked until we wake it.
        unsafe {
            (*(*self.sudog.as_ptr()).slot.get())
                .take()
                .expect("a sending sudog carries its value")
        }
    }

    /// Hands a value to a claimed receiver.
    pub(crate) fn give(&self, v: T) {
        // SAFETY: as in `take`.
        unsafe { *(*self.sudog.as_ptr()).slot.get() = Some(v) };
    }

    /// Reads the claimed waiter's slot without taking it.
    pub(crate) fn peek<R>(&self, f: impl FnOnce(Option<&T>) -> R) -> R {
        // SAFETY: as in `take`.
        f(unsafe { (*(*self.sudog.as_ptr()).slot.get()).as_ref() })
    }

    /// Records the outcome; returns the waiter to wake once the lock is released.
    pub(crate) fn finish(self, success: bool) -> Waiter {
        // SAFETY: as in `take`; this is our last touch of the sudog.
        unsafe { self.sudog.as_ref() }.success.set(success);
        self.waiter
    }
}

/// A sudog queued twice would corrupt the list and outlive its first removal:
/// the process stops there, in release builds too (one load and a branch). No
/// unwinding: the caller holds locks and has other sudogs queued.
#[inline]
fn check_not_queued(queued: bool) {
    #[cold]
    fn queued_twice() -> ! {
        eprintln!("goro: fatal error: a wait record was queued twice");
        std::process::abort()
    }
    if queued {
        queued_twice()
    }
}

/// A FIFO of blocked operations: an intrusive doubly-linked list through the
/// sudogs, which stay put on their owners' stacks while queued. Removing a given
/// sudog (a `select!` loser leaving, a timed-out waiter) is O(1), as Go's
/// `dequeueSudoG`; a `VecDeque` scan here made N goroutines selecting on a shared
/// channel cost O(N) per message under that channel's lock.
pub(crate) struct WaitQueue<T> {
    head: *const Sudog<T>,
    tail: *const Sudog<T>,
}

// SAFETY: the queue is only touched under the lock of the record it belongs to
// (module invariants), which orders every access to the queued sudogs across
// threads; the values in their slots move between threads, hence T: Send.
unsafe impl<T: Send> Send for WaitQueue<T> {}

impl<T> WaitQueue<T> {
    pub(crate) const fn new() -> Self {
        WaitQueue {
            head: std::ptr::null(),
            tail: std::ptr::null(),
        }
    }

    /// Queues `sg` at the tail; the caller keeps it alive until it is out of the queue.
    pub(crate) fn push(&mut self, sg: &Sudog<T>) {
        check_not_queued(sg.queued.get());
        sg.prev.set(self.tail);
        sg.next.set(std::ptr::null());
        // SAFETY: queued sudogs are alive while we hold the record's lock.
        match unsafe { self.tail.as_ref() } {
            Some(tail) => tail.next.set(sg),
            None => self.head = sg,
        }
        self.tail = sg;
        sg.queued.set(true);
    }

    /// Queues `sg` at the head (a waiter that was woken but lost the race).
    pub(crate) fn push_front(&mut self, sg: &Sudog<T>) {
        check_not_queued(sg.queued.get());
        sg.next.set(self.head);
        sg.prev.set(std::ptr::null());
        // SAFETY: as in `push`.
        match unsafe { self.head.as_ref() } {
            Some(head) => head.prev.set(sg),
            None => self.tail = sg,
        }
        self.head = sg;
        sg.queued.set(true);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_null()
    }

    /// Queued sudogs, including any whose wait already ended elsewhere.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        let mut n = 0;
        let mut p = self.head;
        // SAFETY: as in `push`.
        while let Some(sg) = unsafe { p.as_ref() } {
            n += 1;
            p = sg.next.get();
        }
        n
    }

    /// Takes the oldest waiter whose wait we manage to claim; waiters whose wait
    /// was already ended by someone else are dropped from the queue on the way
    /// (their owners no longer wait here).
    pub(crate) fn pop_claimed(&mut self) -> Option<Claimed<T>> {
        // SAFETY: as in `push`.
        while let Some(s) = unsafe { self.head.as_ref() } {
            self.unlink(s);
            // SAFETY: the claim outlives its queued sudogs (it sits beside them in
            // the owner's frame, or in an Arc the owner holds).
            let claim = unsafe { &*s.claim.get() };
            if claim.try_claim(s.case.get()) {
                return Some(Claimed {
                    sudog: NonNull::from(s),
                    waiter: claim.waiter(),
                });
            }
        }
        None
    }

    /// Claims, as `case`, every queued waiter whose slot `pick` selects, in queue
    /// order, and returns them to wake once the lock is released (their sudogs'
    /// `success` is false). `pick` sees every queued slot once.
    pub(crate) fn claim_where(&mut self, case: u32, mut pick: impl FnMut(Option<&T>) -> bool) -> Vec<Waiter> {
        let mut out = Vec::new();
        let mut p = self.head;
        // SAFETY: as in `push`.
        while let Some(s) = unsafe { p.as_ref() } {
            p = s.next.get();
            // SAFETY: the slot of a queued sudog is only touched under the lock,
            // which we hold; the owner is parked.
            if !pick(unsafe { (*s.slot.get()).as_ref() }) {
                continue;
            }
            self.unlink(s);
            // SAFETY: as in `pop_claimed`.
            let claim = unsafe { &*s.claim.get() };
            if claim.try_claim(case) {
                s.success.set(false);
                out.push(claim.waiter());
            }
        }
        out
    }

    /// Removes `sg` if it is still queued (its owner is leaving). O(1).
    pub(crate) fn remove(&mut self, sg: &Sudog<T>) {
        if sg.queued.get() {
            self.unlink(sg);
        }
    }

    /// Puts `new` where the queued `old` is, and takes `old` out.
    fn replace(&mut self, old: &Sudog<T>, new: &Sudog<T>) {
        check_not_queued(new.queued.get());
        let (prev, next) = (old.prev.get(), old.next.get());
        new.prev.set(prev);
        new.next.set(next);
        // SAFETY: the neighbours are queued sudogs, alive under the record's lock.
        match unsafe { prev.as_ref() } {
            Some(p) => p.next.set(new),
            None => self.head = new,
        }
        // SAFETY: as above.
        match unsafe { next.as_ref() } {
            Some(n) => n.prev.set(new),
            None => self.tail = new,
        }
        new.queued.set(true);
        old.prev.set(std::ptr::null());
        old.next.set(std::ptr::null());
        old.queued.set(false);
    }

    /// Takes a queued `sg` out of this queue.
    fn unlink(&mut self, sg: &Sudog<T>) {
        let (prev, next) = (sg.prev.get(), sg.next.get());
        // SAFETY: the neighbours are queued sudogs, alive under the record's lock.
        match unsafe { prev.as_ref() } {
            Some(p) => p.next.set(next),
            None => self.head = next,
        }
        // SAFETY: as above.
        match unsafe { next.as_ref() } {
            Some(n) => n.prev.set(prev),
            None => self.tail = prev,
        }
        sg.prev.set(std::ptr::null());
        sg.next.set(std::ptr::null());
        sg.queued.set(false);
    }
}

/// Runs `f` on the queue a sudog waits in, with the queue's record locked:
/// how a wait's records are moved off a swapped-out stack and back.
pub(crate) type Relock<'a, T> = &'a dyn Fn(&mut dyn FnMut(&mut WaitQueue<T>));

/// Parks the caller on `sg`, which it has just queued under a record lock that
/// `guard` holds, until a waker claims it; or, with a `timeout`, until then. The
/// lock is released after the caller is parked. Returns false if the timeout won:
/// the sudog has then been taken out of its queue (through `relock`).
/// Otherwise the winner has filled in the sudog (`Sudog::success`, the slot).
///
/// `relock` reaches `sg`'s queue under its lock: while the caller is parked,
/// the stack swapper may move `sg` (and its claim) to the heap through it
/// ([`Site`]), and the caller moves it back before it reads the outcome.
pub(crate) fn block<T, G>(
    sg: &Sudog<T>,
    guard: G,
    reason: WaitReason,
    timeout: Option<Duration>,
    relock: Relock<'_, T>,
) -> bool {
    let parker = Parker::new();
    match timeout {
        None => {
            // Only wakers holding the queue's lock end it (no timer).
            let claim = Claim::under_one_lock(parker.waiter());
            sg.bind(&claim, 0);
            Site::new(sg, true, relock).park_with(parker, |p| p.park(reason, guard));
            true
        }
        Some(d) => {
            // The timer may outlive this frame, so this claim is shared.
            let claim = Arc::new(Claim::new(parker.waiter()));
            sg.bind(&claim, 0);
            Site::new(sg, false, relock).park_with(parker, |p| p.park_timeout(reason, guard, &claim, d));
            if claim.winner() == TIMED_OUT {
                relock(&mut |q| q.remove(sg));
                return false;
            }
            true
        }
    }
}

/// Parks on `sg`, which the caller queued under the lock `unlock` releases,
/// bound to a claim beside it on the stack: as [`block`] does, for waits
/// that manage their own queue and claim (a socket's readiness), so that the
/// stack swapper may move them to the heap through `relock` meanwhile.
pub(crate) fn park_queued<T, U>(sg: &Sudog<T>, parker: Parker, reason: WaitReason, unlock: U, relock: Relock<'_, T>) {
    Site::new(sg, true, relock).park_with(parker, |p| p.park(reason, unlock));
}

/// Parks through `park` with `site` recorded in the parking G, the stack
/// swapper's way to the wait's records, and forgets it once the G is back
/// (a plain thread's wait records none: it is never swapped).
#[inline]
pub(crate) fn park_at(site: &dyn Relocate, parker: Parker, park: impl FnOnce(Parker)) {
    let g = parker.g();
    // SAFETY: the running G, on itself; the site outlives the park.
    g.inspect(|g| unsafe { g.set_wait_site(Some(site)) });
    park(parker);
    if let Some(g) = g {
        // SAFETY: the running G, on itself.
        unsafe { g.set_wait_site(None) };
    }
}

/// A sudog of a swapped-out waiter, moved to the heap and queued in its
/// stack sudog's place, so that no waker writes the stack; empty while the
/// waiter's stack is in.
pub(crate) struct HeapSudog<T>(Cell<*mut Sudog<T>>);

impl<T> HeapSudog<T> {
    pub(crate) const fn new() -> Self {
        HeapSudog(Cell::new(std::ptr::null_mut()))
    }

    pub(crate) fn is_out(&self) -> bool {
        !self.0.get().is_null()
    }

    /// Under `q`'s lock, its owner pinned by the swapper and its wait still
    /// unclaimed (so `sg` is queued): moves `sg` (and the value in its slot)
    /// to the heap, bound to `claim`, in its place.
    pub(crate) fn move_out(&self, q: &mut WaitQueue<T>, sg: &Sudog<T>, claim: &Claim) {
        // SAFETY: under the queue's lock, which every touch of a queued
        // sudog's slot holds.
        let value = unsafe { (*sg.slot.get()).take() };
        let heap = Box::into_raw(Box::new(Sudog::new(value)));
        // SAFETY: just made; it lives until `move_back` frees it.
        let h = unsafe { &*heap };
        h.bind(claim, sg.case.get());
        q.replace(sg, h);
        self.0.set(heap);
    }

    /// Under `q`'s lock, its owner back from the park: puts `sg` back in the
    /// heap sudog's place if that is still queued (a loser or a timed-out
    /// wait, which then leaves as usual), takes its outcome over (slot,
    /// success) and frees it. Nothing if nothing moved.
    pub(crate) fn move_back(&self, q: &mut WaitQueue<T>, sg: &Sudog<T>) {
        let heap = self.0.replace(std::ptr::null_mut());
        if heap.is_null() {
            return;
        }
        // SAFETY: made by `move_out`'s `Box::into_raw`, taken back once, here.
        let heap = unsafe { Box::from_raw(heap) };
        if heap.queued.get() {
            q.replace(&heap, sg);
        }
        // SAFETY: under the queue's lock; both sudogs are out of wakers' reach
        // (the heap one unqueued, this one its owner's, or queued under the
        // lock we hold).
        unsafe { *sg.slot.get() = (*heap.slot.get()).take() };
        sg.success.set(heap.success.get());
    }
}

/// The claim of a swapped-out wait whose own claim sits on its stack beside
/// its sudogs: the heap sudogs are bound to this one meanwhile, so that
/// whoever ends the wait writes nothing on the stack.
pub(crate) struct HeapClaim(Cell<*mut Claim>);

impl HeapClaim {
    pub(crate) const fn new() -> Self {
        HeapClaim(Cell::new(std::ptr::null_mut()))
    }

    pub(crate) fn is_out(&self) -> bool {
        !self.0.get().is_null()
    }

    /// A heap claim for `stack`'s waiter, unclaimed; it lives until
    /// [`HeapClaim::hand_back`].
    pub(crate) fn make(&self, stack: &Claim) -> &Claim {
        let heap = Box::into_raw(Box::new(stack.like()));
        self.0.set(heap);
        // SAFETY: just made; freed only by `hand_back`, which takes `&self`
        // after every sudog bound to it has left its queue.
        unsafe { &*heap }
    }

    /// Once no sudog bound to the heap claim is queued: frees it and passes
    /// who ended the wait on to `stack`, which nobody could reach meanwhile.
    pub(crate) fn hand_back(&self, stack: &Claim) {
        let heap = self.0.replace(std::ptr::null_mut());
        if heap.is_null() {
            return;
        }
        // SAFETY: made by `make`'s `Box::into_raw`, taken back once, here.
        let heap = unsafe { Box::from_raw(heap) };
        let won = heap.winner();
        if won != UNCLAIMED {
            let _ = stack.try_claim(won);
        }
    }
}

/// A parked sudog wait as the stack swapper sees it (`task/g/swap.rs`): the
/// sudog on the waiter's stack, whether its claim sits there too, and how to
/// reach its queue under the lock. While the waiter is swapped out, the
/// sudog (and a claim of its own) live on the heap, queued in its place; the
/// waiter moves them back as it returns from the park.
struct Site<'a, T> {
    sg: &'a Sudog<T>,
    own_claim: bool,
    relock: Relock<'a, T>,
    heap: HeapSudog<T>,
    claim: HeapClaim,
}

impl<'a, T> Site<'a, T> {
    fn new(sg: &'a Sudog<T>, own_claim: bool, relock: Relock<'a, T>) -> Self {
        Site {
            sg,
            own_claim,
            relock,
            heap: HeapSudog::new(),
            claim: HeapClaim::new(),
        }
    }

    /// Parks through `park` at this site, then takes the records back from
    /// the heap if the swapper moved them there.
    #[inline]
    fn park_with(&self, parker: Parker, park: impl FnOnce(Parker)) {
        park_at(self, parker, park);
        if self.heap.is_out() {
            self.move_back();
        }
    }

    /// Puts the stack sudog back in the queue if the heap one is still there
    /// (a timed-out wait, which then leaves), and takes the outcome over.
    #[cold]
    #[inline(never)]
    fn move_back(&self) {
        (self.relock)(&mut |q| {
            self.heap.move_back(q, self.sg);
            // SAFETY: the stack claim the sudog is bound to, beside it.
            self.claim.hand_back(unsafe { &*self.sg.claim.get() });
        });
    }
}

impl<T> Relocate for Site<'_, T> {
    fn move_out(&self) -> bool {
        if self.heap.is_out() {
            return true; // out already (a dump brought the stack in for a look)
        }
        let mut out = false;
        (self.relock)(&mut |q| {
            if !self.sg.queued.get() {
                return; // claimed: the waiter is being woken
            }
            // SAFETY: queued, so its claim is alive (module invariants).
            let claim = unsafe { &*self.sg.claim.get() };
            let claim = if self.own_claim { self.claim.make(claim) } else { claim };
            self.heap.move_out(q, self.sg, claim);
            out = true;
        });
        out
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn claimed_order(q: &mut WaitQueue<u32>) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some(c) = q.pop_claimed() {
            out.push(c.take());
            let _ = c.finish(true);
        }
        out
    }

    #[test]
    fn fifo_with_front_insertion_and_removal_from_anywhere() {
        let claims: Vec<Claim> = (0..6).map(|_| Claim::new(Parker::new().waiter())).collect();
        let sgs: Vec<Sudog<u32>> = (0..6).map(|i| Sudog::new(Some(i))).collect();
        for (sg, c) in sgs.iter().zip(&claims) {
            sg.bind(c, 0);
        }
        let mut q = WaitQueue::new();
        q.push(&sgs[1]);
        q.push(&sgs[2]);
        q.push(&sgs[3]);
        q.push_front(&sgs[0]);
        q.push(&sgs[4]);
        q.remove(&sgs[2]); // middle
        q.remove(&sgs[4]); // tail
        q.remove(&sgs[5]); // never queued: no-op
        assert_eq!(q.len(), 3);
        q.push(&sgs[5]);
        assert_eq!(claimed_order(&mut q), [0, 1, 3, 5]);
        assert!(q.is_empty());
        // A sudog whose claim was already won elsewhere is skipped and unlinked.
        let won = Claim::new(Parker::new().waiter());
        assert!(won.try_claim(9));
        let stale = Sudog::new(Some(7));
        stale.bind(&won, 0);
        let fresh_claim = Claim::new(Parker::new().waiter());
        let fresh = Sudog::new(Some(8));
        fresh.bind(&fresh_claim, 0);
        q.push(&stale);
        q.push(&fresh);
        assert_eq!(claimed_order(&mut q), [8]);
        assert!(q.is_empty());
    }
}

/// loom model of a swap-out racing the wake-up (`scripts/loom.sh
/// loom_swap`): a waiter's sudog is queued under a lock; the swapper moves it
/// to the heap through the waiter's [`Site`] while a waker pops whichever
/// sudog is queued, gives it a value and wakes the waiter; the waiter, once
/// woken and once the swapper is done (the pin holds a woken G off its M
/// until then), takes the value back. Over every interleaving: the value
/// arrives exactly once, the queue ends empty, and a swap-out after the pop
/// moves nothing.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use crate::runtime::proc::waiter::ThreadWaiter;
    use crate::runtime::sys::sync_prims::lot;
    use crate::runtime::wait::guarded::Guarded;

    /// A pointer shared with the model's threads; every touch of what it
    /// points at is under the queue's lock or ordered by the wake-up.
    struct Shared(*const ());
    // SAFETY: see the type's docs; the pointee outlives the threads (joined).
    unsafe impl Send for Shared {}

    #[test]
    fn loom_swap_out_races_the_wake_up() {
        loom::model(|| {
            let q = Arc::new(Guarded::new(WaitQueue::<u64>::new()));
            let me = Arc::new(ThreadWaiter::new());
            let claim = Claim::under_one_lock(Waiter::Thread(me.clone()));
            let sg = Sudog::new(None);
            sg.bind(&claim, 0);
            q.lock().push(&sg);
            let relock_q = q.clone();
            let relock = move |f: &mut dyn FnMut(&mut WaitQueue<u64>)| f(&mut relock_q.lock());
            let site = Site::new(&sg, true, &relock);

            let s = Shared((&site as *const Site<'_, u64>).cast());
            let swapper = loom::thread::spawn(move || {
                let s = s;
                // SAFETY: the site outlives this thread (joined below).
                unsafe { &*s.0.cast::<Site<'static, u64>>() }.move_out()
            });
            let wq = q.clone();
            let waker = loom::thread::spawn(move || {
                let woken = {
                    let mut l = wq.lock();
                    l.pop_claimed().map(|c| {
                        c.give(7);
                        c.finish(true)
                    })
                };
                woken.expect("the waiter was queued").wake();
            });
            lot::wait_until(|| me.is_woken());
            let moved = swapper.join().unwrap();
            waker.join().unwrap();
            if moved {
                site.move_back();
            }
            assert!(!site.heap.is_out());
            assert!(sg.success());
            assert_eq!(sg.take(), Some(7));
            assert!(q.lock().is_empty());
        });
    }
}

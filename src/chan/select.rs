//! `select!`: wait on several channel operations, run the one that completes.
//!
//! The runtime half is Go's `selectgo`:
//! 1. Lock every channel involved, in address order (so two selects over the same
//!    channels cannot deadlock; a channel named twice is locked once).
//! 2. Poll the cases in a random order; the first that can complete now does, and
//!    wins. Among several ready cases each is chosen with equal probability.
//! 3. None ready: with `default`, run it. Otherwise queue one sudog per case, all
//!    tied to one [`Claim`], and park; the locks are released after the switch.
//! 4. Whoever completes a case first wins the claim (a sender, a receiver, a
//!    close), fills that case's sudog and wakes us. We lock everything again and
//!    take our other sudogs out of their queues, so no stale waiter is left behind.
//!
//! A select parked past `Config::swap_idle_after` may have its stack swapped
//! out: the swapper then locks every channel, as step 1 does, and only if no
//! case has won yet moves each queued sudog to the heap, all bound to one heap
//! claim, so exactly one case can still win and nobody writes the stack
//! ([`SelectSite`]). Step 4 moves them back under its locks.
//!
//! The macro half evaluates every operand once, in source order, into a case object
//! on the caller's stack, calls [`select`], then runs the winning arm's body inline
//! (so `break`, `continue`, `return` and `?` act on the caller's code).

use super::channel::{wake_one, Chan, Wake};
use super::error::{RecvError, SendError};
use super::{Receiver, Sender};
use crate::runtime::wait::{
    park_at, Claim, HeapClaim, HeapSudog, OnDrop, Parker, RawMutex, Relocate, Sudog, WaitReason, Waiter, UNCLAIMED,
};
use std::cell::Cell;

/// Per-select scratch the cases share with the select loop. Opaque outside.
#[doc(hidden)]
pub struct Ctx {
    wake: Wake,
    /// The wait the cases register under (set before `register`).
    claim: *const Claim,
    /// Receive futures to wake once the locks are released: a registered
    /// send case is something for them to receive.
    woken: Vec<Waiter>,
}

/// A channel's lock, as a select sees it. Opaque outside.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct LockRef<'a>(&'a RawMutex);

impl LockRef<'_> {
    /// Its place in the lock order.
    fn order_key(self) -> usize {
        self.0.order_key()
    }
}

/// The claim a case's sudog is bound to, as a case sees it. Opaque outside.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct ClaimRef<'a>(&'a Claim);

/// One arm of a `select!`, type-erased. Implemented by [`RecvCase`] and
/// [`SendCase`]; not for use outside the macro.
///
/// # Safety
/// Implementations must not panic in `register` / `unregister`, and must keep a
/// registered sudog alive and in place until it is unregistered: `select` leaves
/// raw pointers to it in channel queues.
#[doc(hidden)]
pub unsafe trait Case {
    /// The channel's lock (its address is the lock order).
    fn lock_ref(&self) -> LockRef<'_>;
    /// Lock held: completes the operation now if it can.
    ///
    /// # Safety
    /// The channel's lock is held.
    unsafe fn try_now(&self, cx: &mut Ctx) -> bool;
    /// Lock held: queues this case's sudog under the context's claim, as case
    /// `index`. The wait ends for each registered case in exactly one of
    /// [`unregister`](Case::unregister) and [`finish_woken`](Case::finish_woken).
    ///
    /// # Safety
    /// The lock is held; the claim outlives the sudog's stay in the queue.
    unsafe fn register(&self, cx: &mut Ctx, index: u32);
    /// Lock held: takes this case's sudog out of the queue, if still there.
    ///
    /// # Safety
    /// The lock is held.
    unsafe fn unregister(&self);
    /// Lock held, the select's G pinned by the stack swapper and no case won
    /// yet: moves this case's queued sudog to the heap, bound to `claim`.
    ///
    /// # Safety
    /// The lock is held; `claim` outlives the heap sudog's stay in the queue.
    unsafe fn move_out(&self, claim: ClaimRef<'_>);
    /// Lock held, back from the park: takes the sudog's outcome back from the
    /// heap (and its place in the queue, if it is still there).
    ///
    /// # Safety
    /// The lock is held.
    unsafe fn move_back(&self);
    /// After winning through a wake-up: moves the result out of the sudog.
    fn finish_woken(&self);
    /// Marks this case as the one that ran.
    fn mark_selected(&self);
}

/// A `recv(rx) -> msg` arm.
#[doc(hidden)]
pub struct RecvCase<'a, T> {
    chan: &'a Chan<T>,
    sudog: Sudog<T>,
    heap: HeapSudog<T>,
    result: Cell<Option<Result<T, RecvError>>>,
    selected: Cell<bool>,
}

impl<'a, T> RecvCase<'a, T> {
    /// # Safety
    /// Only the `select!` expansion makes cases: each is a fresh local named
    /// once in one [`select`] call, whose result is then taken at most once.
    /// (A case made in safe code could be used against [`Case`]'s contract
    /// through the macro's hidden helpers.)
    pub unsafe fn new(rx: &'a Receiver<T>) -> Self {
        RecvCase {
            chan: &rx.chan,
            sudog: Sudog::new(None),
            heap: HeapSudog::new(),
            result: Cell::new(None),
            selected: Cell::new(false),
        }
    }

    pub fn is_selected(&self) -> bool {
        self.selected.get()
    }

    pub fn take(&self) -> Result<T, RecvError> {
        self.result.take().expect("select: the selected case has a result")
    }
}

// SAFETY: registration only pushes the case's own sudog, which lives in the case
// object on the select's frame until `select` returns (after unregistering it).
unsafe impl<T> Case for RecvCase<'_, T> {
    fn lock_ref(&self) -> LockRef<'_> {
        LockRef(self.chan.raw_lock())
    }

    unsafe fn try_now(&self, cx: &mut Ctx) -> bool {
        // SAFETY: the lock is held (caller's contract).
        let st = unsafe { self.chan.state_locked() };
        match self.chan.try_recv_locked(st) {
            Ok((v, wake)) => {
                self.result.set(Some(Ok(v)));
                cx.wake = wake;
                true
            }
            Err(super::TryRecvError::Closed) => {
                self.result.set(Some(Err(RecvError)));
                true
            }
            Err(super::TryRecvError::Empty) => false,
        }
    }

    unsafe fn register(&self, cx: &mut Ctx, index: u32) {
        // SAFETY: set by `select` to a claim that outlives this registration.
        self.sudog.bind(unsafe { &*cx.claim }, index);
        // SAFETY: the lock is held (caller's contract).
        unsafe { self.chan.state_locked() }.recvq.push(&self.sudog);
        self.chan.receiver_waits(true);
    }

    unsafe fn unregister(&self) {
        // SAFETY: the lock is held (caller's contract).
        unsafe { self.chan.state_locked() }.recvq.remove(&self.sudog);
        self.chan.receiver_waits(false);
    }

    unsafe fn move_out(&self, claim: ClaimRef<'_>) {
        // SAFETY: the lock is held (caller's contract).
        let q = &mut unsafe { self.chan.state_locked() }.recvq;
        self.heap.move_out(q, &self.sudog, claim.0);
    }

    unsafe fn move_back(&self) {
        // SAFETY: the lock is held (caller's contract).
        self.heap
            .move_back(&mut unsafe { self.chan.state_locked() }.recvq, &self.sudog);
    }

    fn finish_woken(&self) {
        self.chan.receiver_waits(false);
        self.result.set(Some(self.sudog.take().ok_or(RecvError)));
    }

    fn mark_selected(&self) {
        self.selected.set(true);
    }
}

/// A `send(tx, value) -> res` arm.
#[doc(hidden)]
pub struct SendCase<'a, T> {
    chan: &'a Chan<T>,
    sudog: Sudog<T>,
    heap: HeapSudog<T>,
    result: Cell<Option<Result<(), SendError<T>>>>,
    selected: Cell<bool>,
}

impl<'a, T> SendCase<'a, T> {
    /// # Safety
    /// As [`RecvCase::new`]'s.
    pub unsafe fn new(tx: &'a Sender<T>, value: T) -> Self {
        SendCase {
            chan: &tx.chan,
            sudog: Sudog::new(Some(value)),
            heap: HeapSudog::new(),
            result: Cell::new(None),
            selected: Cell::new(false),
        }
    }

    pub fn is_selected(&self) -> bool {
        self.selected.get()
    }

    pub fn take(&self) -> Result<(), SendError<T>> {
        self.result.take().expect("select: the selected case has a result")
    }
}

// SAFETY: as for RecvCase.
unsafe impl<T> Case for SendCase<'_, T> {
    fn lock_ref(&self) -> LockRef<'_> {
        LockRef(self.chan.raw_lock())
    }

    unsafe fn try_now(&self, cx: &mut Ctx) -> bool {
        // SAFETY: the lock is held (caller's contract).
        let st = unsafe { self.chan.state_locked() };
        let v = self.sudog.take().expect("send case holds its value until it runs");
        match self.chan.try_send_locked(st, v) {
            Ok(wake) => {
                self.result.set(Some(Ok(())));
                cx.wake = wake;
                true
            }
            Err(super::TrySendError::Closed(v)) => {
                self.result.set(Some(Err(SendError(v))));
                true
            }
            Err(super::TrySendError::Full(v)) => {
                self.sudog.put(v);
                false
            }
        }
    }

    unsafe fn register(&self, cx: &mut Ctx, index: u32) {
        // SAFETY: set by `select` to a claim that outlives this registration.
        self.sudog.bind(unsafe { &*cx.claim }, index);
        // SAFETY: the lock is held (caller's contract).
        let st = unsafe { self.chan.state_locked() };
        cx.woken.extend(self.chan.queue_sender(st, &self.sudog));
    }

    unsafe fn unregister(&self) {
        // SAFETY: the lock is held (caller's contract).
        unsafe { self.chan.state_locked() }.sendq.remove(&self.sudog);
    }

    unsafe fn move_out(&self, claim: ClaimRef<'_>) {
        // SAFETY: the lock is held (caller's contract).
        let q = &mut unsafe { self.chan.state_locked() }.sendq;
        self.heap.move_out(q, &self.sudog, claim.0);
    }

    unsafe fn move_back(&self) {
        // SAFETY: the lock is held (caller's contract).
        self.heap
            .move_back(&mut unsafe { self.chan.state_locked() }.sendq, &self.sudog);
    }

    fn finish_woken(&self) {
        let r = if self.sudog.success() {
            Ok(())
        } else {
            Err(SendError(self.sudog.take().expect("an unsent value comes back")))
        };
        self.result.set(Some(r));
    }

    fn mark_selected(&self) {
        self.selected.set(true);
    }
}

/// The channels of a select, locked in address order; unlocks all on drop (which,
/// when parking, happens on the scheduler side after the switch).
struct LockSet<'a> {
    /// One lock per distinct channel, in address order.
    locks: Vec<LockRef<'a>>,
}

impl<'a> LockSet<'a> {
    fn lock(cases: &[&'a dyn Case]) -> Self {
        let mut locks: Vec<LockRef<'a>> = cases.iter().map(|c| c.lock_ref()).collect();
        locks.sort_by_key(|l| l.order_key());
        locks.dedup_by_key(|l| l.order_key());
        for l in &locks {
            l.0.lock();
        }
        LockSet { locks }
    }
}

impl Drop for LockSet<'_> {
    fn drop(&mut self) {
        for l in self.locks.iter().rev() {
            // SAFETY: `lock` took each of these once.
            unsafe { l.0.unlock() };
        }
    }
}

/// Runs a select over `cases`: returns with exactly one case marked selected, or
/// none if `has_default` and nothing was ready. See the module docs.
///
/// Safe code cannot call it, nor make a case to pass it or the macro's hidden
/// helpers:
///
/// ```compile_fail,E0133
/// let (_tx, rx) = goro::chan::bounded::<i32>(1);
/// let case = unsafe { goro::chan::__private::RecvCase::new(&rx) };
/// goro::chan::__private::select(&[&case, &case], true);
/// ```
///
/// ```compile_fail,E0133
/// let (_tx, rx) = goro::chan::bounded::<i32>(1);
/// let case = goro::chan::__private::RecvCase::new(&rx);
/// ```
///
/// # Safety
/// Only the `select!` expansion calls this: each case object is a fresh local of
/// the expansion, named once in `cases`, and not moved or reused until the
/// winner's result is taken. A case named twice would queue one sudog twice
/// and leave a channel pointing at it after it is gone; that one is checked
/// (a panic before anything is locked or queued), but the contract is the
/// expansion's shape, not the check.
#[doc(hidden)]
pub unsafe fn select(cases: &[&dyn Case], has_default: bool) {
    crate::runtime::wait::preempt_check();
    assert_distinct(cases);
    if cases.is_empty() {
        if has_default {
            return;
        }
        select_forever();
    }
    let poll = poll_order(cases.len());
    let locks = LockSet::lock(cases);
    let mut cx = Ctx {
        wake: None,
        claim: std::ptr::null(),
        woken: Vec::new(),
    };
    for &i in &poll {
        // SAFETY: every case's channel is locked.
        if unsafe { cases[i].try_now(&mut cx) } {
            drop(locks);
            wake_one(cx.wake);
            cases[i].mark_selected();
            return;
        }
    }
    if has_default {
        return;
    }
    let parker = Parker::new();
    let claim = Claim::new(parker.waiter());
    cx.claim = &claim;
    // Queued in the random poll order, not the source order: when several arms
    // wait on one channel, the party that wakes us takes the first of them in
    // that channel's queue, and that must be any of them with equal chance (Go
    // queues in its lock order, which starts from the poll order for this).
    for &i in &poll {
        // SAFETY: locked; `claim` lives in this frame until every sudog is out.
        unsafe { cases[i].register(&mut cx, i as u32) };
    }
    let woken = std::mem::take(&mut cx.woken);
    let unlock = OnDrop::new(move || {
        drop(locks);
        woken.into_iter().for_each(Waiter::wake);
    });
    let site = SelectSite {
        cases,
        claim: &claim,
        heap: HeapClaim::new(),
    };
    park_at(&site, parker, |p| p.park(WaitReason::Select, unlock));
    let won = site.finish();
    cases[won].mark_selected();
}

/// A parked select as the stack swapper sees it (module docs): its cases and
/// the claim they share on the select's frame.
struct SelectSite<'s, 'a> {
    cases: &'s [&'a dyn Case],
    claim: &'s Claim,
    /// The claim the cases' heap sudogs share while the stack is out.
    heap: HeapClaim,
}

impl SelectSite<'_, '_> {
    /// Step 4 of the module docs, back from the park: with every channel
    /// locked again, the sudogs back from the heap if they were moved, the
    /// losers' sudogs out of their queues; then the winner's result taken.
    /// Returns the winning case.
    fn finish(&self) -> usize {
        let locks = LockSet::lock(self.cases);
        if self.heap.is_out() {
            self.move_back();
        }
        let won = self.claim.winner() as usize;
        for (i, c) in self.cases.iter().enumerate() {
            if i != won {
                // SAFETY: every case's channel is locked.
                unsafe { c.unregister() };
            }
        }
        drop(locks);
        self.cases[won].finish_woken();
        won
    }

    /// Every case's channel locked, back from the park: the cases' sudogs
    /// back from the heap, then who won handed to the stack claim.
    #[cold]
    #[inline(never)]
    fn move_back(&self) {
        for c in self.cases {
            // SAFETY: the caller holds every case's channel lock.
            unsafe { c.move_back() };
        }
        self.heap.hand_back(self.claim);
    }
}

impl Relocate for SelectSite<'_, '_> {
    fn move_out(&self) -> bool {
        if self.heap.is_out() {
            return true; // out already (a dump brought the stack in for a look)
        }
        let _locks = LockSet::lock(self.cases);
        // Every claimer holds one of these locks: unclaimed now, nobody can
        // end the wait until every sudog is bound to the heap claim.
        if self.claim.winner() != UNCLAIMED {
            return false; // the wait is ending: the G is being woken
        }
        let heap = self.heap.make(self.claim);
        for c in self.cases {
            // SAFETY: every case's channel is locked; the heap claim lives
            // until `move_back` has taken every heap sudog out.
            unsafe { c.move_out(ClaimRef(heap)) };
        }
        true
    }
}

/// Panics if one case object is named twice: its sudog would be queued twice.
/// Quadratic, but a select has a handful of arms and this is a few compares
/// beside locking each channel.
fn assert_distinct(cases: &[&dyn Case]) {
    let addr = |c: &&dyn Case| *c as *const dyn Case as *const () as usize;
    for (i, a) in cases.iter().enumerate() {
        let a = addr(a);
        assert!(
            cases[i + 1..].iter().all(|b| addr(b) != a),
            "select: one case object is named twice (case {i})"
        );
    }
}

/// `select! {}`: blocks forever (Go's `select {}`).
#[doc(hidden)]
pub fn select_forever() -> ! {
    loop {
        Parker::new().park(WaitReason::SelectNoCases, ());
    }
}

/// Under loom, source order: each execution of a model has to replay the same
/// way, so the choice among ready cases must not depend on a random state.
#[cfg(loom)]
fn poll_order(n: usize) -> Vec<usize> {
    (0..n).collect()
}

/// A random permutation of `0..n` (Fisher–Yates on a per-thread xorshift), so
/// ready cases are chosen uniformly. Never inlined: the generator is a
/// thread-local, whose address must not be reused after a park in the caller.
#[cfg(not(loom))]
#[inline(never)]
fn poll_order(n: usize) -> Vec<usize> {
    thread_local! {
        static RNG: Cell<u64> = const { Cell::new(0) };
    }
    let mut order: Vec<usize> = (0..n).collect();
    RNG.with(|r| {
        let mut x = r.get();
        if x == 0 {
            // Seed from the thread's stack address and the clock.
            x = (&x as *const u64 as u64)
                ^ std::time::Instant::now().elapsed().as_nanos() as u64
                ^ 0x9E37_79B9_7F4A_7C15;
        }
        for i in (1..n).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let j = (x % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
        r.set(x);
    });
    order
}

/// Waits on several channel operations at once and runs the arm of the one that
/// completes: Go's `select` statement.
///
/// ```
/// use goro::chan;
/// use std::time::Duration;
///
/// let (tx, rx) = chan::bounded::<i32>(1);
/// let (tx2, _rx2) = chan::bounded::<&str>(0);
/// tx.send(7).unwrap();
/// let got = goro::select! {
///     recv(rx) -> msg => msg.unwrap(),
///     send(tx2, "hi") -> _res => -1, // nobody receives: not ready
///     recv(goro::time::after(Duration::from_millis(50))) -> _ => -2,
/// };
/// assert_eq!(got, 7);
/// ```
///
/// # Arms
///
/// - `recv(rx) -> pat => body`: receives from the [`Receiver`]
///   `rx`; `pat` binds a `Result<T, RecvError>`, `Err` once the channel is closed
///   and drained (a closed channel is always ready).
/// - `send(tx, value) -> pat => body`: sends `value` on the
///   [`Sender`] `tx`; `pat` binds a
///   `Result<(), SendError<T>>`, `Err` (with the value) if the channel is closed.
/// - `default => body`, at most once: makes the select non-blocking; it runs if
///   no other arm is ready right now.
///
/// A body is an expression followed by a comma, or a block. The `select!` is an
/// expression; its value is the body's that ran.
///
/// # Semantics
///
/// - Every operand (the channel expressions and the values of `send` arms) is
///   evaluated exactly once, in source order, before anything waits. Values of
///   arms that are not chosen are dropped.
/// - If arms are ready, one of them is chosen uniformly at random (Go's rule),
///   so a busy channel cannot starve the others. Otherwise, without `default`,
///   the select waits until one arm can complete, parking the goroutine (or
///   blocking the thread, outside a goroutine), and exactly that one arm's
///   operation takes place.
/// - Operands are borrowed for the select's duration: a channel variable can be
///   reused across loop iterations, and temporaries such as
///   `goro::time::after(d)` work as timeout arms.
/// - Bodies run inline, after the operation: they may `break`, `continue` or
///   `return`, use `?`, assign to the caller's locals (even to a channel
///   variable an arm reads, to replace it) and nest another `select!`.
/// - `select! {}` blocks forever (Go's `select {}`); a select with only a
///   `default` arm runs it. [`chan::never()`](crate::chan::never) stands in for
///   Go's nil channel, to switch an arm off.
/// - It is a safe macro: no operand or body is placed in an `unsafe` block, and
///   a crate under `#![forbid(unsafe_code)]` can use it:
///
/// ```
/// #![forbid(unsafe_code)]
/// let (tx, rx) = goro::chan::bounded::<u8>(0);
/// let h = goro::go!(move || tx.send(1));
/// goro::select! { recv(rx) -> v => assert_eq!(v, Ok(1)) }
/// h.join().unwrap().unwrap();
/// ```
///
/// A loop that drains work until told to stop, with a non-blocking poll:
///
/// ```
/// use goro::chan;
///
/// let (work_tx, work) = chan::bounded(8);
/// let (quit_tx, quit) = chan::bounded::<()>(0);
/// for i in 1..=3 {
///     work_tx.send(i).unwrap();
/// }
/// let worker = goro::go!(move || {
///     let mut sum = 0;
///     loop {
///         goro::select! {
///             recv(work) -> n => sum += n.unwrap(),
///             recv(quit) -> _ => break,
///         }
///     }
///     sum
/// });
/// // Wait until the work is taken, then tell the worker to stop.
/// while !work_tx.is_empty() {
///     goro::time::sleep(std::time::Duration::from_millis(1));
/// }
/// quit_tx.send(()).unwrap();
/// assert_eq!(worker.join().unwrap(), 6);
///
/// // `default`: poll without waiting.
/// let (_tx, rx) = chan::bounded::<i32>(0);
/// let polled = goro::select! {
///     recv(rx) -> v => v.ok(),
///     default => None,
/// };
/// assert_eq!(polled, None);
/// ```
///
/// Fairness: with two channels always ready, both arms are chosen.
///
/// ```
/// let (a_tx, a) = goro::chan::bounded(1000);
/// let (b_tx, b) = goro::chan::bounded(1000);
/// for _ in 0..1000 {
///     a_tx.send('a').unwrap();
///     b_tx.send('b').unwrap();
/// }
/// let mut count_a = 0;
/// for _ in 0..1000 {
///     goro::select! {
///         recv(a) -> _ => count_a += 1,
///         recv(b) -> _ => {}
///     }
/// }
/// assert!((300..700).contains(&count_a), "{count_a}");
/// ```
#[macro_export]
macro_rules! select {
    () => {
        $crate::chan::__private::select_forever()
    };
    ($($tokens:tt)+) => {{
        $crate::__select_parse! { [] () $($tokens)+ }
    }};
}

/// Parses `select!` arms into `(kind (operands) (pattern) { body })` items.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_parse {
    // recv
    ([$($c:tt)*] $d:tt recv($r:expr) -> $p:pat => $body:block, $($rest:tt)*) => {
        $crate::__select_parse! { [$($c)* (recv ($r) ($p) $body)] $d $($rest)* }
    };
    ([$($c:tt)*] $d:tt recv($r:expr) -> $p:pat => $body:block $($rest:tt)*) => {
        $crate::__select_parse! { [$($c)* (recv ($r) ($p) $body)] $d $($rest)* }
    };
    ([$($c:tt)*] $d:tt recv($r:expr) -> $p:pat => $body:expr, $($rest:tt)*) => {
        $crate::__select_parse! { [$($c)* (recv ($r) ($p) { $body })] $d $($rest)* }
    };
    ([$($c:tt)*] $d:tt recv($r:expr) -> $p:pat => $body:expr) => {
        $crate::__select_parse! { [$($c)* (recv ($r) ($p) { $body })] $d }
    };
    // send
    ([$($c:tt)*] $d:tt send($s:expr, $v:expr) -> $p:pat => $body:block, $($rest:tt)*) => {
        $crate::__select_parse! { [$($c)* (send ($s, $v) ($p) $body)] $d $($rest)* }
    };
    ([$($c:tt)*] $d:tt send($s:expr, $v:expr) -> $p:pat => $body:block $($rest:tt)*) => {
        $crate::__select_parse! { [$($c)* (send ($s, $v) ($p) $body)] $d $($rest)* }
    };
    ([$($c:tt)*] $d:tt send($s:expr, $v:expr) -> $p:pat => $body:expr, $($rest:tt)*) => {
        $crate::__select_parse! { [$($c)* (send ($s, $v) ($p) { $body })] $d $($rest)* }
    };
    ([$($c:tt)*] $d:tt send($s:expr, $v:expr) -> $p:pat => $body:expr) => {
        $crate::__select_parse! { [$($c)* (send ($s, $v) ($p) { $body })] $d }
    };
    // default (at most one)
    ([$($c:tt)*] () default => $body:block, $($rest:tt)*) => {
        $crate::__select_parse! { [$($c)*] ($body) $($rest)* }
    };
    ([$($c:tt)*] () default => $body:block $($rest:tt)*) => {
        $crate::__select_parse! { [$($c)*] ($body) $($rest)* }
    };
    ([$($c:tt)*] () default => $body:expr, $($rest:tt)*) => {
        $crate::__select_parse! { [$($c)*] ({ $body }) $($rest)* }
    };
    ([$($c:tt)*] () default => $body:expr) => {
        $crate::__select_parse! { [$($c)*] ({ $body }) }
    };
    ([$($c:tt)*] ($($d:tt)+) default $($rest:tt)*) => {
        ::core::compile_error!("select!: more than one `default` arm")
    };
    // done
    ([$($c:tt)*] $d:tt) => {
        $crate::__select_bind! { [] $d $($c)* }
    };
    ([$($c:tt)*] $d:tt $($rest:tt)+) => {
        ::core::compile_error!(::core::concat!(
            "select!: expected `recv(rx) -> pat => body`, `send(tx, value) -> pat => body` or `default => body`, found: ",
            ::core::stringify!($($rest)+)
        ))
    };
}

/// Binds each arm's operands and case object in source order (each level's
/// `__case` is a distinct hygienic binding), then runs the select and the winner.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_bind {
    ([$($bound:tt)*] $d:tt (recv ($r:expr) ($p:pat) $body:tt) $($rest:tt)*) => {
        let __op = &$r;
        // SAFETY: a fresh local of this expansion, named once in its select;
        // the operand was evaluated outside this block.
        let __case = unsafe { $crate::chan::__private::RecvCase::new(__op) };
        $crate::__select_bind! { [$($bound)* (__case ($p) $body)] $d $($rest)* }
    };
    ([$($bound:tt)*] $d:tt (send ($s:expr, $v:expr) ($p:pat) $body:tt) $($rest:tt)*) => {
        let __op = &$s;
        let __value = $v;
        // SAFETY: as above.
        let __case = unsafe { $crate::chan::__private::SendCase::new(__op, __value) };
        $crate::__select_bind! { [$($bound)* (__case ($p) $body)] $d $($rest)* }
    };
    ([$(($case:ident ($p:pat) $body:tt))*] ()) => {
        // SAFETY: each `$case` is a distinct local bound above and not touched
        // again until the winner's result is taken; no user expression is
        // evaluated inside this block.
        unsafe { $crate::chan::__private::select(&[$(&$case as &dyn $crate::chan::__private::Case),*], false) };
        $( if $case.is_selected() { let $p = $case.take(); $body } else )* {
            ::core::unreachable!("select!: no arm was selected")
        }
    };
    ([$(($case:ident ($p:pat) $body:tt))*] ($default:tt)) => {
        // SAFETY: as above.
        unsafe { $crate::chan::__private::select(&[$(&$case as &dyn $crate::chan::__private::Case),*], true) };
        $( if $case.is_selected() { let $p = $case.take(); $body } else )* $default
    };
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{select, Case, RecvCase};
    use crate::chan::bounded;

    /// A case named twice is refused before anything is queued: the channel
    /// holds no pointer into the case, and later operations on it run normally.
    #[test]
    fn a_case_named_twice_is_refused_before_anything_is_queued() {
        let (tx, rx) = bounded::<u64>(0);
        let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: breaks `select`'s contract on purpose (below).
            let case = unsafe { RecvCase::new(&rx) };
            let cases: [&dyn Case; 2] = [&case, &case];
            // SAFETY: breaks `select`'s contract on purpose: the check must
            // refuse it before any sudog is queued.
            unsafe { select(&cases, false) };
        }));
        let msg = refused.expect_err("a duplicate case must panic");
        let msg = msg.downcast_ref::<String>().map(String::as_str).unwrap_or("");
        assert!(msg.contains("named twice"), "{msg}");
        assert_eq!(
            rx.chan.lock().st().recvq.len(),
            0,
            "a sudog of the refused select is queued"
        );
        let h = crate::go!(move || tx.send(7).unwrap());
        assert_eq!(rx.recv(), Ok(7));
        h.join().unwrap();
    }

    /// Losing arms take their sudogs out: a select loop over a quiet channel
    /// leaves nothing queued on it.
    #[test]
    fn losing_arms_leave_no_waiter_behind() {
        let (_quiet_tx, quiet_rx) = bounded::<i32>(0);
        let (busy_tx, busy_rx) = bounded::<i32>(0);
        let h = crate::go!(move || (0..5000).for_each(|i| busy_tx.send(i).unwrap()));
        for _ in 0..5000 {
            crate::select! {
                recv(quiet_rx) -> _ => unreachable!(),
                recv(busy_rx) -> v => { v.unwrap(); },
            }
        }
        h.join().unwrap();
        let mut l = quiet_rx.chan.lock();
        assert_eq!(l.st().recvq.len(), 0, "stale select waiters left on the quiet channel");
    }
}

/// loom model of the stack swapper moving a parked select's sudogs to the
/// heap (`scripts/loom.sh loom_select_swap`) while a sender offers a value on
/// one case's channel and the other case's channel closes: exactly one case
/// wins, through the stack claim or the heap one; the value arrives iff its
/// case won (the sender sees `Full` otherwise); no sudog stays queued.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use crate::chan::{bounded, TrySendError};

    /// A pointer shared with the model's swapper thread; the site outlives it
    /// (joined) and every touch of what it moves is under the channels' locks.
    struct Shared(*const ());
    // SAFETY: see the type's docs.
    unsafe impl Send for Shared {}

    #[test]
    fn loom_select_swap_out_races_a_send_and_a_close() {
        loom::model(|| {
            let (tx_a, rx_a) = bounded::<u64>(0);
            let (tx_b, rx_b) = bounded::<u64>(0);
            // SAFETY: fresh locals, each named once, taken at most once.
            let (a, b) = unsafe { (RecvCase::new(&rx_a), RecvCase::new(&rx_b)) };
            let cases: [&dyn Case; 2] = [&a, &b];
            let parker = Parker::new();
            let claim = Claim::new(parker.waiter());
            let mut cx = Ctx {
                wake: None,
                claim: &claim,
                woken: Vec::new(),
            };
            let locks = LockSet::lock(&cases);
            for (i, c) in cases.iter().enumerate() {
                // SAFETY: locked; `claim` outlives both sudogs' stay.
                unsafe { c.register(&mut cx, i as u32) };
            }
            drop(locks);
            let site = SelectSite {
                cases: &cases,
                claim: &claim,
                heap: HeapClaim::new(),
            };
            let s = Shared((&site as *const SelectSite<'_, '_>).cast());
            let swapper = loom::thread::spawn(move || {
                let s = s;
                // SAFETY: the site outlives this thread (joined below).
                unsafe { &*s.0.cast::<SelectSite<'static, 'static>>() }.move_out()
            });
            let closer = loom::thread::spawn(move || drop(tx_a));
            let sent = tx_b.try_send(7);
            parker.park(WaitReason::Select, ());
            swapper.join().unwrap();
            closer.join().unwrap();
            match (site.finish(), sent) {
                (0, Err(TrySendError::Full(7))) => assert_eq!(a.take(), Err(RecvError)),
                (1, Ok(())) => assert_eq!(b.take(), Ok(7)),
                (w, s) => panic!("case {w} won, the send said {s:?}"),
            }
            for rx in [&rx_a, &rx_b] {
                let mut l = rx.chan.lock();
                assert!(
                    l.st().recvq.is_empty() && l.st().sendq.is_empty(),
                    "a sudog stayed queued"
                );
            }
            assert!(!site.heap.is_out());
        });
    }
}

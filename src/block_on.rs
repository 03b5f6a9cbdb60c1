//! [`block_on`]: a goroutine (or a plain thread) waits for a future.
//!
//! The future is polled on the caller's own stack; between polls the caller
//! parks through the one wait protocol (`runtime::wait`), so in a goroutine
//! only the goroutine waits and its M runs others.
//!
//! # The wait record and its wakers
//! A call waits on a [`Signal`]: a `RawMutex`-guarded record holding the
//! parked caller's [`Waiter`] or a `notified` flag. Every `Waker` the future
//! can keep is a reference to that one record, never to the goroutine, so a
//! waker kept after `block_on` returned can only touch that old record: it
//! never readies the goroutine in a later, unrelated wait. The record is on
//! the heap (an `Arc`: the wakers' count), made the first time the future
//! clones its waker. Until then the future sees a waker on the caller's stack
//! ([`FirstPoll`]) that can only be borrowed for a poll: a future that is
//! ready without keeping a waker costs no allocation.
//!
//! A wake takes the lock and either takes the parked caller's waiter and
//! wakes it (after unlocking), or, if the caller is not parked (it is polling,
//! or about to park), sets `notified`. The caller checks `notified` under the
//! same lock before it parks. So a wake before the park, during a poll, or
//! from several threads at once causes at most one extra poll, and is never
//! lost.

use crate::runtime::wait::{Guarded, Parker, WaitReason, Waiter};
use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

/// One `block_on` call's wait record, shared with the wakers of its future.
struct Signal(Guarded<State>);

struct State {
    /// The caller, while parked; taken by the wake that ends the park.
    waiter: Option<Waiter>,
    /// A wake came while the caller was not parked: poll again before parking.
    notified: bool,
}

impl Signal {
    fn new() -> Signal {
        Signal(Guarded::new(State {
            waiter: None,
            notified: false,
        }))
    }

    fn wake(&self) {
        let mut st = self.0.lock();
        match st.waiter.take() {
            Some(w) => {
                drop(st);
                w.wake();
            }
            None => st.notified = true,
        }
    }
}

/// The waker of a call's polls, on the caller's stack: borrowed by each poll
/// (a `Context` only lends it), it makes the call's [`Signal`] the first time
/// it is cloned, and every clone is a reference to that `Signal`. Atomics: a
/// poll may lend it to threads it starts and joins within the poll.
struct FirstPoll {
    /// The call's record once made (an `Arc::into_raw`, one reference owned
    /// here), else null.
    signal: AtomicPtr<Signal>,
    /// Woken by reference before any clone existed: poll again.
    notified: AtomicBool,
}

impl FirstPoll {
    /// The call's record, made now if no clone made it.
    fn signal(&self) -> Arc<Signal> {
        let mut p = self.signal.load(Ordering::Acquire);
        if p.is_null() {
            let new = Arc::into_raw(Arc::new(Signal::new())).cast_mut();
            p = match self
                .signal
                .compare_exchange(std::ptr::null_mut(), new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => new,
                Err(theirs) => {
                    // SAFETY: `new` came from `Arc::into_raw` above and was not shared.
                    drop(unsafe { Arc::from_raw(new) });
                    theirs
                }
            };
        }
        // SAFETY: `p` is the record this struct holds a reference to until it
        // drops; one more is counted for the caller.
        unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        }
    }
}

impl Drop for FirstPoll {
    fn drop(&mut self) {
        let p = *self.signal.get_mut();
        if !p.is_null() {
            // SAFETY: the reference this struct owned, released once.
            drop(unsafe { Arc::from_raw(p) });
        }
    }
}

/// Runs `fut` to completion on the current goroutine's stack and returns its
/// output; between polls only the goroutine waits (its thread runs other
/// goroutines). On a plain thread, the thread waits, like `pollster` or
/// `futures::executor::block_on`.
///
/// This is how goroutine code calls async code: a client library, a database
/// driver, anything that returns a future. The future's `Waker` can be woken
/// from any thread (another goroutine, a plain thread, another runtime's
/// worker); a waker the future keeps after `block_on` returned wakes nothing.
/// A goroutine waiting here shows in a dump as `[future]`.
///
/// ```
/// use std::future::Future;
/// use std::pin::Pin;
/// use std::task::{Context, Poll};
///
/// /// Ready on its second poll, having woken its own task once.
/// struct Twice(bool);
/// impl Future for Twice {
///     type Output = &'static str;
///     fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<&'static str> {
///         if self.0 {
///             return Poll::Ready("done");
///         }
///         self.0 = true;
///         let waker = cx.waker().clone();
///         std::thread::spawn(move || waker.wake());
///         Poll::Pending
///     }
/// }
///
/// let h = goro::go!(|| goro::block_on(Twice(false)));
/// assert_eq!(h.join().unwrap(), "done");
/// assert_eq!(goro::block_on(async { 40 + 2 }), 42); // on a plain thread too
/// ```
///
/// # Futures and thread-locals
/// Each poll runs in a function of its own that is never inlined, so what a
/// poll reads from a thread-local (an executor's context, a cooperative
/// budget) is read afresh on the thread that polls. Nothing taken from a
/// thread-local may be kept across polls: the goroutine may poll next on
/// another thread. So a future that needs another runtime's context (Tokio's
/// `net` and `time`, `tokio::spawn`) cannot be polled here directly: hand it
/// to that runtime (the `tokio` feature's `goro::tokio::block_on`) and wait for
/// its output.
///
/// # Stacks
/// The future lives on the goroutine's stack, which does not grow: a large
/// future (a deep `async fn` state machine) should be boxed
/// (`goro::block_on(Box::pin(fut))`).
///
/// # Panics
/// A panic in the future's `poll` unwinds out of `block_on`, as from any call.
/// With the `tokio` feature, `block_on` on a Tokio runtime's thread (a
/// worker running a task, or inside `Runtime::block_on`) panics, as Tokio's
/// own nested `block_on` does: it would block a thread that drives Tokio's
/// tasks. `.await` the future there; a `spawn_blocking` closure, or a thread
/// under `Runtime::enter`, may call it.
#[track_caller]
pub fn block_on<F: Future>(fut: F) -> F::Output {
    refuse_tokio_context("goro::block_on");
    let mut fut = pin!(fut);
    let first = FirstPoll {
        signal: AtomicPtr::new(std::ptr::null_mut()),
        notified: AtomicBool::new(false),
    };
    // Borrowed by each poll only (a `Context` lends it), never dropped.
    // SAFETY: the data pointer is `first`'s, which outlives every poll, and
    // `FIRST_VTABLE`'s functions never take ownership of it.
    let waker = ManuallyDrop::new(unsafe {
        Waker::from_raw(RawWaker::new((&first as *const FirstPoll).cast(), &FIRST_VTABLE))
    });
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = poll_once(fut.as_mut(), &mut cx) {
            return out;
        }
        // After the poll nobody holds `first` any more: only the record's
        // clones can wake us, under its lock.
        if first.notified.swap(false, Ordering::Relaxed) {
            yield_before_polling_again();
            continue;
        }
        let signal = first.signal();
        let mut st = signal.0.lock();
        if std::mem::take(&mut st.notified) {
            // Woken meanwhile: poll again.
            drop(st);
            yield_before_polling_again();
            continue;
        }
        let parker = Parker::new();
        st.waiter = Some(parker.waiter());
        parker.park(WaitReason::Future, st);
    }
}

/// Panics if a plain thread inside a running Tokio runtime (a worker
/// running a task, or inside `Runtime::block_on`) is about to wait (`what`
/// names the call): the thread drives Tokio's tasks. Tokio's own test is
/// asked, quietly: its `Handle::block_on` panics exactly there, and works on
/// a `spawn_blocking` thread or under `Runtime::enter`. A goroutine never has
/// Tokio's context (the thread-local rule), so only plain threads with a
/// Tokio handle pay for the question. Under `panic = "abort"` nothing is
/// asked (the answer would end the process).
#[inline]
#[track_caller]
pub(crate) fn refuse_tokio_context(what: &str) {
    #[cfg(all(feature = "tokio", not(panic = "abort")))]
    if crate::runtime::exports::current().is_none() {
        if let Ok(h) = ::tokio::runtime::Handle::try_current() {
            crate::runtime::exports::started(); // goro's panic hook keeps the probe quiet
            if crate::runtime::exports::quietly(|| h.block_on(std::future::ready(()))).is_err() {
                panic!(
                    "{what} called on a Tokio runtime's thread (a worker running a task, or inside \
                     `Runtime::block_on`): waiting here would block the thread that drives Tokio's tasks; \
                     `.await` the future instead (or call it from `spawn_blocking`)"
                );
            }
        }
    }
    let _ = what;
}

/// A future woken during its own poll (often by itself: async code's "yield")
/// is polled again after the others runnable have had their turn, as an
/// executor requeues its task: a goroutine yields, a thread yields its core.
fn yield_before_polling_again() {
    if crate::runtime::exports::current().is_some() {
        crate::yield_now();
    } else {
        std::thread::yield_now();
    }
}

/// One poll, in a frame of its own (see "Futures and thread-locals").
#[inline(never)]
fn poll_once<F: Future>(fut: std::pin::Pin<&mut F>, cx: &mut Context<'_>) -> Poll<F::Output> {
    let r = fut.poll(cx);
    // Not a tail call: the poll stays inside this frame.
    std::hint::black_box(());
    r
}

/// The record's wakers: each owns one reference to the `Arc<Signal>`.
static VTABLE: RawWakerVTable = RawWakerVTable::new(clone_waker, wake_waker, wake_by_ref_waker, drop_waker);

/// The stack waker's: borrowed only, so `wake` and `drop` never run on it
/// with ownership (a `Context` lends `&Waker`); a clone is a record waker.
static FIRST_VTABLE: RawWakerVTable =
    RawWakerVTable::new(clone_first, wake_by_ref_first, wake_by_ref_first, drop_first);

/// # Safety
/// `p` is a live `FirstPoll`'s (it outlives every poll that lends it).
unsafe fn clone_first(p: *const ()) -> RawWaker {
    // SAFETY: the caller's contract.
    let signal = unsafe { &*p.cast::<FirstPoll>() }.signal();
    RawWaker::new(Arc::into_raw(signal).cast(), &VTABLE)
}

/// # Safety
/// As [`clone_first`].
unsafe fn wake_by_ref_first(p: *const ()) {
    // SAFETY: the caller's contract.
    let first = unsafe { &*p.cast::<FirstPoll>() };
    let sig = first.signal.load(Ordering::Acquire);
    if sig.is_null() {
        first.notified.store(true, Ordering::Relaxed);
    } else {
        // SAFETY: `first` holds a reference to this record while it lives.
        unsafe { &*sig }.wake();
    }
}

/// Never owned: nothing to release.
unsafe fn drop_first(_: *const ()) {}

/// # Safety
/// `p` is the pointer of a live `Arc<Signal>` (the waker's reference).
unsafe fn clone_waker(p: *const ()) -> RawWaker {
    // SAFETY: the caller's contract: the Arc is live, so one more reference
    // may be counted; the new waker owns it.
    unsafe { Arc::increment_strong_count(p.cast::<Signal>()) };
    RawWaker::new(p, &VTABLE)
}

/// # Safety
/// As [`clone_waker`]; consumes the waker's reference.
unsafe fn wake_waker(p: *const ()) {
    // SAFETY: the waker owned one reference, which this takes over.
    let sig = unsafe { Arc::from_raw(p.cast::<Signal>()) };
    sig.wake();
}

/// # Safety
/// As [`clone_waker`].
unsafe fn wake_by_ref_waker(p: *const ()) {
    // SAFETY: the Arc is live for the call (the caller's contract).
    unsafe { &*p.cast::<Signal>() }.wake();
}

/// # Safety
/// As [`clone_waker`]; consumes the waker's reference.
unsafe fn drop_waker(p: *const ()) {
    // SAFETY: the waker owned one reference, dropped here once.
    unsafe { Arc::decrement_strong_count(p.cast::<Signal>()) };
}

/// loom models of the wait record's handshake: a loom thread blocks in
/// `block_on` (the plain-thread park) on a future pending once, while other
/// loom threads wake its waker; every interleaving ends with the caller
/// returning, never asleep (a lost wake-up is a deadlock loom reports), and
/// with at most one extra poll per wake.
#[cfg(all(test, loom))]
mod loom_models {
    use super::block_on;
    use loom::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    use loom::sync::{Arc, Mutex};
    use loom::thread;
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll, Waker};

    /// Pending on its first poll, which starts `wakers` threads, each waking
    /// a clone of the waker (the first by value, the others by reference);
    /// ready on the next poll.
    struct PendingOnce {
        wakers: usize,
        polls: Arc<AtomicUsize>,
        started: Arc<Mutex<Vec<thread::JoinHandle<()>>>>,
    }

    impl Future for PendingOnce {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.polls.fetch_add(1, Relaxed) > 0 {
                return Poll::Ready(());
            }
            for i in 0..self.wakers {
                let w: Waker = cx.waker().clone();
                self.started.lock().unwrap().push(thread::spawn(move || {
                    if i == 0 {
                        w.wake();
                    } else {
                        w.wake_by_ref();
                    }
                }));
            }
            Poll::Pending
        }
    }

    fn run(wakers: usize) {
        loom::model(move || {
            let polls = Arc::new(AtomicUsize::new(0));
            let started = Arc::new(Mutex::new(Vec::new()));
            block_on(PendingOnce {
                wakers,
                polls: polls.clone(),
                started: started.clone(),
            });
            for t in started.lock().unwrap().drain(..) {
                t.join().unwrap();
            }
            // The pending poll and one more: every wake after the first finds
            // the caller polling or gone, never parked for good.
            assert_eq!(polls.load(Relaxed), 2);
        });
    }

    /// One wake racing the poll's end, the check of `notified` and the park.
    #[test]
    fn loom_block_on_one_wake_is_never_lost() {
        run(1);
    }

    /// Two clones woken from two threads at once.
    #[test]
    fn loom_block_on_concurrent_wakes() {
        run(2);
    }

    /// Pending on its first poll, where it keeps one clone of its waker in
    /// `kept`, drops another at once, and wakes itself by reference (a wake
    /// during the poll); ready on the next.
    struct KeepsItsWaker(Arc<Mutex<Option<Waker>>>, bool);

    impl Future for KeepsItsWaker {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.1 {
                return Poll::Ready(());
            }
            self.1 = true;
            *self.0.lock().unwrap() = Some(cx.waker().clone());
            drop(cx.waker().clone());
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    /// A waker kept past `block_on` fires while the caller waits on a
    /// channel: it touches only its own call's record, so the channel wait
    /// ends with the value sent, never early and never asleep.
    #[test]
    fn loom_block_on_stale_waker_during_a_later_channel_wait() {
        loom::model(|| {
            let kept = Arc::new(Mutex::new(None));
            block_on(KeepsItsWaker(kept.clone(), false));
            let (tx, rx) = crate::chan::bounded::<u32>(0);
            let stale = thread::spawn(move || kept.lock().unwrap().take().expect("kept").wake());
            let sender = thread::spawn(move || tx.send(5).unwrap());
            assert_eq!(rx.recv(), Ok(5));
            stale.join().unwrap();
            sender.join().unwrap();
        });
    }
}

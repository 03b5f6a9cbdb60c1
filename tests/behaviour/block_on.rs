//! `goro::block_on`: futures awaited by goroutines and plain threads: wakes from
//! any thread, before the park or during a poll, concurrent wakes, stale
//! wakers, nesting, panics, the dump's `[future]`.

use crate::{no_crowd, until_state};
use goro::runtime::{GoState, WaitReason};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// Pending until `left` wakes have been arranged by `arrange`, counting polls.
struct Countdown<A> {
    left: usize,
    polls: Arc<AtomicUsize>,
    arrange: A,
}

impl<A: FnMut(&Waker) + Unpin> Future for Countdown<A> {
    type Output = usize;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        self.polls.fetch_add(1, Ordering::Relaxed);
        if self.left == 0 {
            return Poll::Ready(self.polls.load(Ordering::Relaxed));
        }
        self.left -= 1;
        (self.arrange)(cx.waker());
        Poll::Pending
    }
}

fn countdown<A: FnMut(&Waker) + Unpin>(left: usize, arrange: A) -> (Countdown<A>, Arc<AtomicUsize>) {
    let polls = Arc::new(AtomicUsize::new(0));
    (
        Countdown {
            left,
            polls: polls.clone(),
            arrange,
        },
        polls,
    )
}

#[test]
fn a_ready_future_returns_at_once_in_a_goroutine_and_on_a_thread() {
    assert_eq!(goro::go!(|| goro::block_on(async { 6 * 7 })).join().unwrap(), 42);
    assert_eq!(goro::block_on(async { "thread" }), "thread");
}

#[test]
fn wakes_from_threads_goroutines_before_the_park_and_during_the_poll() {
    let _w = crate::common::watchdog(Duration::from_secs(60));
    // From a plain std thread, after a while.
    let (f, _) = countdown(50, |w: &Waker| {
        let w = w.clone();
        std::thread::spawn(move || w.wake());
    });
    assert_eq!(goro::go!(move || goro::block_on(f)).join().unwrap(), 51);
    // From another goroutine.
    let (f, _) = countdown(200, |w: &Waker| {
        let w = w.clone();
        drop(goro::go!(move || w.wake()));
    });
    assert_eq!(goro::go!(move || goro::block_on(f)).join().unwrap(), 201);
    // During the poll itself (before the park): one more poll each, no sleep.
    let (f, _) = countdown(1000, |w: &Waker| w.wake_by_ref());
    assert_eq!(goro::go!(move || goro::block_on(f)).join().unwrap(), 1001);
    // The same on a plain thread.
    let (f, _) = countdown(1000, |w: &Waker| w.wake_by_ref());
    assert_eq!(goro::block_on(f), 1001);
}

#[test]
fn concurrent_wakes_give_at_most_one_extra_poll_each() {
    let _w = crate::common::watchdog(Duration::from_secs(60));
    const ROUNDS: usize = 300;
    let (f, polls) = countdown(ROUNDS, |w: &Waker| {
        for _ in 0..2 {
            let w = w.clone();
            std::thread::spawn(move || w.wake());
        }
    });
    goro::go!(move || goro::block_on(f)).join().unwrap();
    let polls = polls.load(Ordering::Relaxed);
    // Each round's two wakes cause its next poll and at most one more.
    assert!((ROUNDS + 1..=2 * ROUNDS + 1).contains(&polls), "{polls} polls");
}

#[test]
fn a_stale_waker_does_not_wake_a_later_wait() {
    let _n = no_crowd();
    let _w = crate::common::watchdog(Duration::from_secs(60));
    let kept: Arc<Mutex<Option<Waker>>> = Arc::default();
    let k = kept.clone();
    let (tx, rx) = goro::chan::bounded::<u32>(0);
    let (ready_tx, ready_rx) = goro::chan::bounded::<()>(1);
    let h = goro::go!(move || {
        let (f, _) = countdown(1, move |w: &Waker| {
            *k.lock().unwrap() = Some(w.clone());
            w.wake_by_ref();
        });
        goro::block_on(f);
        ready_tx.send(()).unwrap();
        rx.recv().unwrap()
    });
    ready_rx.recv().unwrap();
    until_state(h.id(), GoState::Waiting(WaitReason::ChanRecv));
    let stale = kept.lock().unwrap().take().unwrap();
    for _ in 0..1000 {
        stale.wake_by_ref();
    }
    // Still parked in its receive: the stale wakes touched only the old record.
    until_state(h.id(), GoState::Waiting(WaitReason::ChanRecv));
    tx.send(7).unwrap();
    assert_eq!(h.join().unwrap(), 7);
}

#[test]
fn the_dump_shows_a_goroutine_waiting_on_a_future() {
    let _n = no_crowd();
    let _w = crate::common::watchdog(Duration::from_secs(60));
    let kept: Arc<Mutex<Option<Waker>>> = Arc::default();
    let k = kept.clone();
    let (f, _) = countdown(1, move |w: &Waker| *k.lock().unwrap() = Some(w.clone()));
    let h = goro::go!(goro::Builder::new().name("awaiting"), move || goro::block_on(f)).unwrap();
    let info = until_state(h.id(), GoState::Waiting(WaitReason::Future));
    assert!(info.to_string().contains("\"awaiting\" [future]"), "{info}");
    kept.lock().unwrap().take().unwrap().wake();
    assert_eq!(h.join().unwrap(), 2);
}

#[test]
fn nested_in_blocking_and_panics_unwind_out() {
    let inner = goro::go!(|| goro::block_on(async { goro::block_on(async { 1 }) + 1 }));
    assert_eq!(inner.join().unwrap(), 2);
    let in_blocking = goro::go!(|| goro::blocking(|| goro::block_on(async { 3 })));
    assert_eq!(in_blocking.join().unwrap(), 3);
    let panicked = goro::go!(|| goro::block_on(async { panic!("in the future") }));
    let err = panicked.join().unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"in the future"));
}

#[test]
fn ten_thousand_goroutines_await_futures_woken_by_one_thread() {
    let _w = crate::common::watchdog(Duration::from_secs(120));
    const N: usize = 10_000;
    let (wakers_tx, wakers_rx) = std::sync::mpsc::channel::<Waker>();
    let waker_thread = std::thread::spawn(move || {
        for _ in 0..N {
            wakers_rx.recv().unwrap().wake();
        }
    });
    let hs: Vec<_> = (0..N)
        .map(|_| {
            let tx = wakers_tx.clone();
            let (f, _) = countdown(1, move |w: &Waker| tx.send(w.clone()).unwrap());
            goro::go!(move || goro::block_on(f))
        })
        .collect();
    for h in hs {
        assert_eq!(h.join().unwrap(), 2);
    }
    waker_thread.join().unwrap();
}

/// A waker that counts its wakes and its live clones.
#[derive(Default)]
struct Counted {
    wakes: AtomicUsize,
    clones: AtomicUsize,
}

fn counted_waker(c: &Arc<Counted>) -> Waker {
    use std::task::{RawWaker, RawWakerVTable};
    unsafe fn clone(p: *const ()) -> RawWaker {
        // SAFETY: `p` is an `Arc<Counted>`'s, kept alive by the test.
        let c = unsafe { &*p.cast::<Counted>() };
        c.clones.fetch_add(1, Ordering::SeqCst);
        RawWaker::new(p, &VTABLE)
    }
    unsafe fn wake(p: *const ()) {
        // SAFETY: as above.
        unsafe { wake_by_ref(p) };
        // SAFETY: as above.
        unsafe { drop(p) };
    }
    unsafe fn wake_by_ref(p: *const ()) {
        // SAFETY: as above.
        unsafe { &*p.cast::<Counted>() }.wakes.fetch_add(1, Ordering::SeqCst);
    }
    unsafe fn drop(p: *const ()) {
        // SAFETY: as above.
        unsafe { &*p.cast::<Counted>() }.clones.fetch_sub(1, Ordering::SeqCst);
    }
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop);
    // SAFETY: the vtable keeps the counts; the Arc outlives every clone (the
    // test holds it to the end).
    let w = unsafe { Waker::from_raw(RawWaker::new(Arc::as_ptr(c).cast(), &VTABLE)) };
    c.clones.fetch_add(1, Ordering::SeqCst);
    w
}

#[test]
fn a_join_handle_is_a_future_woken_when_its_goroutine_ends() {
    let _w = crate::common::watchdog(Duration::from_secs(60));
    let c = Arc::new(Counted::default());
    let waker = counted_waker(&c);
    let mut cx = Context::from_waker(&waker);
    let (tx, rx) = goro::chan::bounded::<()>(0);
    let mut h = goro::go!(move || {
        rx.recv().unwrap();
        "done"
    });
    assert!(Pin::new(&mut h).poll(&mut cx).is_pending());
    assert!(Pin::new(&mut h).poll(&mut cx).is_pending()); // the same task: kept
    assert_eq!(c.clones.load(Ordering::SeqCst), 2, "one clone stored, not one per poll");
    // Another task's poll replaces the stored waker.
    let other = Arc::new(Counted::default());
    let other_waker = counted_waker(&other);
    assert!(Pin::new(&mut h)
        .poll(&mut Context::from_waker(&other_waker))
        .is_pending());
    assert_eq!(c.clones.load(Ordering::SeqCst), 1, "the earlier waker was dropped");
    assert!(Pin::new(&mut h).poll(&mut cx).is_pending()); // and back
    assert_eq!(other.clones.load(Ordering::SeqCst), 1);
    tx.send(()).unwrap();
    while c.wakes.load(Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    assert_eq!(c.wakes.load(Ordering::SeqCst), 1);
    assert_eq!(other.wakes.load(Ordering::SeqCst), 0, "a replaced waker is not woken");
    drop(other_waker);
    match Pin::new(&mut h).poll(&mut cx) {
        Poll::Ready(r) => assert_eq!(r.unwrap(), "done"),
        Poll::Pending => panic!("woken but not ready"),
    }
    let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Pin::new(&mut h).poll(&mut cx)));
    assert!(again.is_err(), "polling after Ready must panic");
    drop(h); // after Ready: releases nothing twice
    drop(waker);
    assert_eq!(c.clones.load(Ordering::SeqCst), 0, "a waker clone leaked");
}

#[test]
fn dropping_a_pending_join_future_detaches_and_drops_its_waker() {
    let c = Arc::new(Counted::default());
    let waker = counted_waker(&c);
    let mut cx = Context::from_waker(&waker);
    let (tx, rx) = goro::chan::bounded::<()>(0);
    let (done_tx, done_rx) = goro::chan::bounded::<()>(1);
    let mut h = goro::go!(move || {
        rx.recv().unwrap();
        done_tx.send(()).unwrap();
    });
    assert!(Pin::new(&mut h).poll(&mut cx).is_pending());
    drop(h);
    assert_eq!(c.clones.load(Ordering::SeqCst), 1, "the handle kept its waker");
    tx.send(()).unwrap();
    done_rx.recv().unwrap(); // the detached goroutine runs on
    assert_eq!(c.wakes.load(Ordering::SeqCst), 0);
}

#[test]
fn goroutines_awaited_from_async_code_and_from_block_on() {
    let hs: Vec<_> = (0..100u64).map(|i| goro::go!(move || i * 2)).collect();
    let sum = goro::block_on(async move {
        let mut sum = 0;
        for h in hs {
            sum += h.await.unwrap();
        }
        sum
    });
    assert_eq!(sum, 99 * 100);
    // From inside a goroutine too: only the goroutine waits.
    let inner = goro::go!(|| goro::block_on(async { goro::go!(|| 5).await.unwrap() }));
    assert_eq!(inner.join().unwrap(), 5);
}

#[test]
fn the_poll_s_waker_may_be_used_by_threads_the_poll_joins() {
    // Woken by reference from a scoped thread, before any clone exists.
    let (f, _) = countdown(100, |w: &Waker| {
        std::thread::scope(|s| {
            s.spawn(|| w.wake_by_ref());
        })
    });
    assert_eq!(goro::go!(move || goro::block_on(f)).join().unwrap(), 101);
    // Cloned by two scoped threads at once, each clone woken later.
    let (f, _) = countdown(100, |w: &Waker| {
        let clones: Vec<Waker> = std::thread::scope(|s| {
            let a = s.spawn(|| w.clone());
            let b = s.spawn(|| w.clone());
            vec![a.join().unwrap(), b.join().unwrap()]
        });
        std::thread::spawn(move || clones.into_iter().for_each(Waker::wake));
    });
    assert_eq!(goro::go!(move || goro::block_on(f)).join().unwrap(), 101);
}

/// Pending, waking itself at once (async code's "yield"), until `flag` is set.
struct SelfWaking {
    flag: Arc<std::sync::atomic::AtomicBool>,
    polls: usize,
}

impl Future for SelfWaking {
    type Output = usize;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        self.polls += 1;
        if self.flag.load(Ordering::Acquire) {
            return Poll::Ready(self.polls);
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[test]
fn a_future_that_wakes_itself_lets_the_others_on_its_p_run() {
    if crate::common::is_child() {
        // One P: the goroutine that sets the flag runs only if the polling one
        // gives the P up between polls, as an executor requeues a woken task.
        let polls = goro::go!(|| {
            let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let set = flag.clone();
            goro::go!(move || set.store(true, Ordering::Release));
            goro::block_on(SelfWaking { flag, polls: 0 })
        })
        .join()
        .unwrap();
        println!("\npolls {polls}");
        return;
    }
    let out = crate::common::run_child_in(
        module_path!(),
        "a_future_that_wakes_itself_lets_the_others_on_its_p_run",
        &[("GOMAXPROCS", "1")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let polls: usize = stdout
        .lines()
        .find_map(|l| l.strip_prefix("polls "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    // Two polls when the P is handed over at the first wake; a poll loop that
    // kept the P would spin until sysmon's retake (hundreds of thousands).
    assert!(polls <= 16, "{polls} polls before the flag's goroutine ran");
}

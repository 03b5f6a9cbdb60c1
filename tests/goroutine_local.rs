//! Goroutine-local storage (`goro::local!`) and the runtime's own thread-local
//! reads, at GOMAXPROCS=8 so Gs migrate between Ms at nearly every park.
//!
//! `.ci/run` runs this binary in release too (`--release --test goroutine_local`):
//! a thread-local address reused after a migration shows only in optimised code.

mod common;

use goro::chan;
use goro::sync::WaitGroup;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const PROCS: usize = 8;

goro::local! {
    static COUNT: Cell<u64> = Cell::new(0);
    static LOG: RefCell<Vec<u64>> = RefCell::new(Vec::new());
    static CONST_FORM: Cell<u32> = const { Cell::new(5) };
}

/// 64 Gs × 20,000 rounds, each round a yield or a channel park between and
/// inside `with`: every G's count comes out exact, and never another G's.
#[test]
fn counts_stay_exact_across_parks_and_migrations() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(240));
    const GS: u64 = 64;
    const ROUNDS: u64 = 20_000;
    let (tx, rx) = chan::bounded::<()>(0);
    // A partner per pair of Gs: channel parks hand the G to whichever M is free.
    let hs: Vec<_> = (0..GS)
        .map(|i| {
            let (tx, rx) = (tx.clone(), rx.clone());
            goro::go!(move || {
                let me = goro::current().unwrap();
                let mut threads = std::collections::HashSet::new();
                for r in 0..ROUNDS {
                    COUNT.with(|c| c.set(c.get() + 1));
                    if r % 2 == 0 {
                        goro::yield_now();
                    } else if i % 2 == 0 {
                        tx.send(()).unwrap();
                    } else {
                        rx.recv().unwrap();
                    }
                    // A park inside `with`: the reference is still this G's value.
                    COUNT.with(|c| {
                        let before = c.get();
                        goro::yield_now();
                        c.set(before + 1);
                    });
                    assert_eq!(goro::current(), Some(me), "current() after a park");
                    if r % 1000 == 0 {
                        goro::blocking(|| threads.insert(std::thread::current().id()));
                    }
                }
                (COUNT.get(), threads.len())
            })
        })
        .collect();
    drop((tx, rx));
    let mut migrated = 0;
    for h in hs {
        let (count, threads) = h.join().unwrap();
        assert_eq!(count, 2 * ROUNDS);
        migrated += usize::from(threads > 1);
    }
    assert!(migrated > 0, "no G ran on more than one thread: the test tests nothing");
    assert_eq!(COUNT.get(), 0, "main's own value was touched by goroutines");
}

/// The reproduction of the thread-local hazard, with `local!` in place of
/// `thread_local!`: two accesses in one function around a yield that moves the
/// G. With a thread-local, release builds wrote the previous thread's slot after
/// nearly every move.
#[test]
fn the_thread_local_reproduction_is_exact_with_local() {
    common::init_procs(PROCS);
    let hs: Vec<_> = (0..8)
        .map(|_| {
            goro::go!(|| {
                for _ in 0..20_000 {
                    COUNT.with(|s| s.set(s.get() + 1));
                    goro::yield_now();
                    COUNT.with(|s| s.set(s.get() + 1));
                }
                COUNT.get()
            })
        })
        .collect();
    for h in hs {
        assert_eq!(h.join().unwrap(), 40_000);
    }
}

thread_local! {
    /// A thread-local used the allowed way: only inside `blocking`.
    static OWNER: Cell<i64> = const { Cell::new(0) };
}

/// Whether this thread's `OWNER` slot names this thread.
#[inline(never)]
fn owned_here(o: &Cell<i64>) -> bool {
    // SAFETY: gettid(2) has no preconditions.
    let me = i64::from(unsafe { libc::gettid() });
    if o.get() == 0 {
        o.set(me);
    }
    o.get() == me
}

/// A thread-local touched only inside `blocking`, with parks between the calls:
/// each access reaches the slot of the thread it runs on. (`blocking` runs its
/// closure out of line; inlined, optimised code reused the first call's address
/// after the G moved.)
#[test]
fn thread_locals_inside_blocking_are_the_current_threads() {
    common::init_procs(PROCS);
    #[inline(never)]
    fn body() -> u64 {
        let mut wrong = 0;
        for _ in 0..5_000 {
            let a = goro::blocking(|| OWNER.with(owned_here));
            goro::yield_now();
            let b = goro::blocking(|| OWNER.with(owned_here));
            wrong += u64::from(!a || !b);
        }
        wrong
    }
    let hs: Vec<_> = (0..8).map(|_| goro::go!(body)).collect();
    for h in hs {
        assert_eq!(
            h.join().unwrap(),
            0,
            "a blocking call used another thread's thread-local"
        );
    }
}

/// Touches a goroutine-local when dropped.
struct UsesLocalOnDrop(Arc<AtomicUsize>);

impl Drop for UsesLocalOnDrop {
    fn drop(&mut self) {
        self.0.fetch_add(COUNT.get() as usize + 1, Ordering::SeqCst);
    }
}

/// A detached G's result is dropped while its goroutine-locals still exist, and
/// a result whose destructor panics takes down nothing. (The Gs wait until
/// every handle is dropped: a handle dropped after its G ended drops the
/// result itself, where it is dropped.)
#[test]
fn a_detached_result_drops_before_the_locals() {
    common::init_procs(PROCS);
    let seen = Arc::new(AtomicUsize::new(0));
    let wg = WaitGroup::new();
    let detached = WaitGroup::new();
    detached.add(1);
    for _ in 0..50 {
        let (seen, guard, detached) = (seen.clone(), wg.guard(), detached.clone());
        drop(goro::go!(move || {
            let _guard = guard;
            detached.wait();
            COUNT.set(4);
            UsesLocalOnDrop(seen)
        }));
    }
    struct PanicsOnDrop;
    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic!("a detached result's destructor panics");
        }
    }
    for _ in 0..20 {
        let detached = detached.clone();
        drop(goro::go!(move || {
            detached.wait();
            PanicsOnDrop
        }));
    }
    detached.done();
    wg.wait();
    // The results drop after the guards: wait for all 50 to have run.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while seen.load(Ordering::SeqCst) < 50 * 5 && std::time::Instant::now() < deadline {
        std::thread::yield_now();
    }
    assert_eq!(
        seen.load(Ordering::SeqCst),
        50 * 5,
        "a result's destructor saw a fresh or destroyed local"
    );
    // Every M is still there to run goroutines.
    let hs: Vec<_> = (0..100).map(|i| goro::go!(move || i)).collect();
    assert_eq!(hs.into_iter().map(|h| h.join().unwrap()).sum::<i32>(), 4950);
}

/// A value set on a plain thread is not seen by Gs, and a G's is not seen by
/// the thread; inside `blocking` the G's own value is used.
#[test]
fn plain_threads_and_gs_have_separate_values() {
    common::init_procs(PROCS);
    std::thread::spawn(|| {
        LOG.with_borrow_mut(|l| l.push(1));
        let from_g = goro::go!(|| {
            LOG.with_borrow_mut(|l| l.push(2));
            let inside_blocking = goro::blocking(|| LOG.with_borrow(|l| l.clone()));
            (LOG.take(), inside_blocking)
        })
        .join()
        .unwrap();
        assert_eq!(from_g, (vec![2], vec![2]));
        assert_eq!(LOG.take(), [1]);
    })
    .join()
    .unwrap();
    assert!(LOG.with_borrow(Vec::is_empty), "another thread's value leaked here");
    assert_eq!(CONST_FORM.get(), 5);
}

/// Counts drops; each value records which G made it.
struct Tracked {
    owner: Option<goro::GoId>,
    drops: Arc<AtomicUsize>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        assert_eq!(goro::current(), self.owner, "dropped outside its own goroutine");
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

goro::local! {
    static TRACKED: RefCell<Option<Tracked>> = RefCell::new(None);
}

/// Each G's value is dropped exactly once, on the G, before `join` returns —
/// also when the G panics; a G never made the value drops nothing.
#[test]
fn destructors_run_once_per_g_before_join_also_on_panic() {
    common::init_procs(PROCS);
    let hs: Vec<_> = (0..200)
        .map(|i| {
            let drops = Arc::new(AtomicUsize::new(0));
            let d = drops.clone();
            let h = goro::go!(move || {
                if i % 4 == 3 {
                    return; // never touches the key
                }
                TRACKED.set(Some(Tracked {
                    owner: goro::current(),
                    drops: d,
                }));
                goro::yield_now();
                if i % 2 == 0 {
                    panic!("goroutine {i} panics with a local value");
                }
            });
            (i, h, drops)
        })
        .collect();
    for (i, h, drops) in hs {
        assert_eq!(h.join().is_err(), i % 4 != 3 && i % 2 == 0);
        let expected = usize::from(i % 4 != 3);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            expected,
            "goroutine {i}: drops seen at join"
        );
    }
}

goro::local! {
    static FRESH: Cell<u64> = Cell::new(7);
}

/// A G that reuses a recycled header starts from the initial value.
#[test]
fn a_recycled_g_starts_from_the_initial_value() {
    common::init_procs(PROCS);
    for round in 0..2_000u64 {
        let seen = goro::go!(move || {
            let first = FRESH.get();
            FRESH.set(round + 1_000);
            first
        })
        .join()
        .unwrap();
        assert_eq!(seen, 7, "round {round} saw an earlier goroutine's value");
    }
}

goro::local! {
    static OUTER: RefCell<Vec<u8>> = RefCell::new(vec![1]);
    static LATER: Cell<u8> = Cell::new(2);
    static SELF_INIT: Cell<u8> = Cell::new(SELF_INIT.get());
}

/// A key first used inside another's `with` does not move the first value.
#[test]
fn a_new_key_inside_with_keeps_the_first_value_in_place() {
    common::init_procs(PROCS);
    goro::go!(|| {
        OUTER.with(|outer| {
            let before = outer as *const _;
            assert_eq!(LATER.get(), 2);
            OUTER.with(|again| assert_eq!(again as *const _, before));
            assert_eq!(outer.borrow()[0], 1);
        });
    })
    .join()
    .unwrap();
    let err = goro::go!(|| SELF_INIT.get()).join().unwrap_err();
    let msg = err
        .downcast_ref::<String>()
        .map(String::as_str)
        .or(err.downcast_ref::<&str>().copied());
    assert!(
        msg.unwrap_or("").contains("initializer used that same value"),
        "{msg:?}"
    );
}

/// Sends on a channel from its destructor: proves a destructor may park, and
/// sees a destroyed key as an error, not as stale memory.
struct ParkingDrop(chan::Sender<Result<u8, String>>);

impl Drop for ParkingDrop {
    fn drop(&mut self) {
        goro::time::sleep(Duration::from_micros(200)); // a park inside a destructor
        let touched = std::panic::catch_unwind(|| DESTROYED_FIRST.get()).map_err(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .or(e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        });
        self.0.send(touched).unwrap();
    }
}

goro::local! {
    static DESTROYED_FIRST: Cell<u8> = Cell::new(1);
    static DROPS_LAST: RefCell<Option<ParkingDrop>> = RefCell::new(None);
}

/// Values drop newest first; a destructor may park, and reading a key already
/// destroyed panics with a clear message.
#[test]
fn destructors_may_park_and_destroyed_keys_panic() {
    common::init_procs(PROCS);
    let (tx, rx) = chan::bounded(1);
    goro::go!(move || {
        // DROPS_LAST is made first, so it is dropped last: after DESTROYED_FIRST.
        DROPS_LAST.set(Some(ParkingDrop(tx)));
        DESTROYED_FIRST.set(3);
    })
    .join()
    .unwrap();
    let msg = rx.recv().unwrap().unwrap_err();
    assert!(msg.contains("during or after its destruction"), "{msg}");
}

/// A destructor that parks while a panic unwinds must resume on the same M:
/// std's per-thread panic count is raised there and lowered by `catch_unwind`.
/// Were the G to move, one M would believe forever that it is panicking (and
/// abort at its next panic) and another's count would go below zero.
#[test]
fn a_park_while_unwinding_keeps_the_g_on_its_thread() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(120));
    struct ParkOnDrop;
    impl Drop for ParkOnDrop {
        fn drop(&mut self) {
            let before = goro::blocking(|| std::thread::current().id());
            for _ in 0..3 {
                goro::time::sleep(Duration::from_micros(100));
                goro::yield_now();
            }
            let after = goro::blocking(|| std::thread::current().id());
            assert_eq!(before, after, "an unwinding goroutine changed threads");
        }
    }
    let wg = WaitGroup::new();
    for _ in 0..400 {
        wg.go(|| {
            let _d = ParkOnDrop;
            panic!("unwinding through a destructor that parks");
        });
    }
    wg.wait();
    // Every M must be sane: no thread reports an unfinished panic, and a new
    // panic in a G is caught as usual (an M with a stuck count would abort).
    let hs: Vec<_> = (0..2_000)
        .map(|i| {
            goro::go!(move || {
                goro::yield_now();
                let stuck = goro::blocking(std::thread::panicking);
                assert!(!stuck, "this M believes it is still panicking");
                if i % 10 == 0 {
                    panic!("an ordinary panic after the unwinding ones");
                }
            })
        })
        .collect();
    for (i, h) in hs.into_iter().enumerate() {
        let r = h.join();
        if i % 10 == 0 {
            let e = r.unwrap_err();
            assert_eq!(
                e.downcast_ref::<&str>(),
                Some(&"an ordinary panic after the unwinding ones")
            );
        } else {
            r.unwrap();
        }
    }
}

/// `select!` draws its random order from a per-thread generator, and the
/// runtime reads the current M and G from thread-locals: a select loop across
/// migrations keeps working and stays fair in release builds.
#[test]
fn select_in_a_migrating_loop_stays_fair() {
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(120));
    let hs: Vec<_> = (0..16)
        .map(|_| {
            goro::go!(|| {
                let (a_tx, a) = chan::bounded::<u8>(1);
                let (b_tx, b) = chan::bounded::<u8>(1);
                let mut picks = [0u32; 2];
                for _ in 0..4_000 {
                    a_tx.send(0).unwrap();
                    b_tx.send(1).unwrap();
                    let i = goro::select! {
                        recv(a) -> v => v.unwrap(),
                        recv(b) -> v => v.unwrap(),
                    };
                    picks[i as usize] += 1;
                    // Drain the other and park, so the next round may be elsewhere.
                    let _ = a.try_recv();
                    let _ = b.try_recv();
                    goro::yield_now();
                }
                picks
            })
        })
        .collect();
    for h in hs {
        let picks = h.join().unwrap();
        assert!(picks.iter().all(|&n| n > 1_500), "unfair select: {picks:?}");
    }
}

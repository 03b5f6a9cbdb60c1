//! `goro::sync`, after Go's sync tests: Mutex (contention, fairness, panics,
//! threads and goroutines mixed), RwLock (shared readers, writers not starved),
//! Condvar (no lost or spurious wake-ups, timeouts), Semaphore, WaitGroup (reuse,
//! negative counter), Once (concurrent callers, panics).

use crate::common;

use goro::go;
use goro::sync::{Condvar, Mutex, Once, RwLock, Semaphore, WaitGroup};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn mutex_counts_correctly_under_contention_from_gs_and_threads() {
    let _w = common::watchdog(Duration::from_secs(60));
    let m = Arc::new(Mutex::new(0u64));
    let gs: Vec<_> = (0..16)
        .map(|_| {
            let m = m.clone();
            go!(move || {
                for i in 0..2000 {
                    *m.lock() += 1;
                    if i % 100 == 0 {
                        goro::yield_now();
                    }
                }
            })
        })
        .collect();
    let ts: Vec<_> = (0..2)
        .map(|_| {
            let m = m.clone();
            std::thread::spawn(move || (0..2000).for_each(|_| *m.lock() += 1))
        })
        .collect();
    gs.into_iter().for_each(|h| h.join().unwrap());
    ts.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(*m.lock(), 18 * 2000);
}

/// Go's TestMutexFairness: a G that holds the lock almost all the time must not
/// starve another that wants it.
#[test]
fn mutex_fairness() {
    let _w = common::watchdog(Duration::from_secs(30));
    let mu = Arc::new(Mutex::new(()));
    let stop = Arc::new(AtomicBool::new(false));
    let hog = {
        let (mu, stop) = (mu.clone(), stop.clone());
        go!(move || {
            while !stop.load(Ordering::Relaxed) {
                let g = mu.lock();
                goro::time::sleep(Duration::from_micros(100));
                drop(g);
            }
        })
    };
    let t = Instant::now();
    let waiter = {
        let mu = mu.clone();
        go!(move || {
            for _ in 0..10 {
                goro::time::sleep(Duration::from_micros(100));
                drop(mu.lock());
            }
        })
    };
    waiter.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    hog.join().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10), "starved for {:?}", t.elapsed());
}

#[test]
fn a_panic_while_holding_a_lock_releases_it() {
    let m = Arc::new(Mutex::new(1));
    let m2 = m.clone();
    let r = go!(move || {
        let _g = m2.lock();
        panic!("while locked");
    })
    .join();
    assert!(r.is_err());
    assert_eq!(*m.try_lock().expect("unlocked by the panic"), 1, "no poisoning");
    let l = Arc::new(RwLock::new(0));
    let l2 = l.clone();
    assert!(go!(move || {
        let _g = l2.write();
        panic!("while writing");
    })
    .join()
    .is_err());
    assert!(l.try_write().is_some());
}

#[test]
fn mutex_try_lock_and_debug() {
    let m = Mutex::new(5);
    let g = m.lock();
    assert!(m.try_lock().is_none());
    assert_eq!(format!("{m:?}"), "Mutex { data: <locked> }");
    drop(g);
    assert_eq!(format!("{m:?}"), "Mutex { data: 5 }");
    assert_eq!(m.into_inner(), 5);
}

#[test]
fn rwlock_readers_share_and_writers_exclude() {
    let l = Arc::new(RwLock::new(0));
    let r1 = l.read();
    let r2 = l.read();
    assert!(l.try_write().is_none());
    drop((r1, r2));
    let w = l.write();
    assert!(l.try_read().is_none());
    drop(w);
    // Readers in several goroutines hold the lock at the same time.
    let inside = Arc::new(AtomicUsize::new(0));
    let max = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let (l, inside, max) = (l.clone(), inside.clone(), max.clone());
            go!(move || {
                let _r = l.read();
                let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                max.fetch_max(n, Ordering::SeqCst);
                while inside.load(Ordering::SeqCst) < 4 && max.load(Ordering::SeqCst) < 4 {
                    goro::yield_now();
                }
                inside.fetch_sub(1, Ordering::SeqCst);
            })
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(max.load(Ordering::SeqCst), 4);
}

#[test]
fn rwlock_writer_is_not_starved_by_readers() {
    let _w = common::watchdog(Duration::from_secs(30));
    let l = Arc::new(RwLock::new(0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (l, stop) = (l.clone(), stop.clone());
            go!(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _r = l.read();
                    goro::yield_now(); // hold it across a switch: readers overlap
                }
            })
        })
        .collect();
    for _ in 0..100 {
        *l.write() += 1;
    }
    stop.store(true, Ordering::Relaxed);
    readers.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(*l.read(), 100);
}

#[test]
fn condvar_producer_consumer_without_lost_wakeups() {
    let _w = common::watchdog(Duration::from_secs(60));
    let q = Arc::new((Mutex::new(Vec::<u32>::new()), Condvar::new()));
    let consumers: Vec<_> = (0..4)
        .map(|_| {
            let q = q.clone();
            go!(move || {
                let mut got = 0;
                loop {
                    let mut v = q.0.lock();
                    while v.is_empty() {
                        v = q.1.wait(v);
                    }
                    let x = v.pop().unwrap();
                    if x == u32::MAX {
                        return got;
                    }
                    got += 1;
                }
            })
        })
        .collect();
    for i in 0..10_000 {
        q.0.lock().push(i);
        q.1.notify_one();
    }
    for _ in 0..4 {
        q.0.lock().insert(0, u32::MAX);
        q.1.notify_all();
    }
    let total: u32 = consumers.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(total, 10_000);
}

#[test]
fn condvar_has_no_spurious_wakeups_and_times_out() {
    let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
    let wakeups = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..3)
        .map(|_| {
            let (pair, wakeups) = (pair.clone(), wakeups.clone());
            go!(move || {
                let mut g = pair.0.lock();
                *g += 1;
                let _g = pair.1.wait(g);
                wakeups.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    // Wait until all three are in `wait`: each counted itself under the mutex,
    // which it gives up only in `wait`, once it is among the waiters.
    while *pair.0.lock() < 3 {
        goro::yield_now();
    }
    goro::time::sleep(Duration::from_millis(10));
    assert_eq!(wakeups.load(Ordering::SeqCst), 0, "nobody was notified");
    pair.1.notify_one();
    pair.1.notify_all();
    hs.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(wakeups.load(Ordering::SeqCst), 3);
    let (m, cv) = &*pair;
    let t = Instant::now();
    let (g, timed_out) = cv.wait_timeout(m.lock(), Duration::from_millis(15));
    assert!(timed_out && t.elapsed() >= Duration::from_millis(15));
    drop(g);
    // A notification beats the timeout.
    let p2 = pair.clone();
    let h = go!(move || {
        let (g, timed_out) = p2.1.wait_timeout(p2.0.lock(), Duration::from_secs(30));
        drop(g);
        timed_out
    });
    loop {
        cv.notify_one();
        if h.is_finished() {
            break;
        }
        goro::time::sleep(Duration::from_millis(1));
    }
    assert!(!h.join().unwrap());
}

#[test]
fn semaphore_limits_concurrency() {
    let sem = Arc::new(Semaphore::new(3));
    let inside = Arc::new(AtomicUsize::new(0));
    let max = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..30)
        .map(|_| {
            let (sem, inside, max) = (sem.clone(), inside.clone(), max.clone());
            go!(move || {
                let _p = sem.acquire();
                let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                max.fetch_max(n, Ordering::SeqCst);
                goro::time::sleep(Duration::from_millis(1));
                inside.fetch_sub(1, Ordering::SeqCst);
            })
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    assert!(max.load(Ordering::SeqCst) <= 3);
    assert_eq!(sem.available_permits(), 3);
}

#[test]
fn waitgroup_waits_and_is_reusable() {
    let wg = WaitGroup::new();
    let n = Arc::new(AtomicUsize::new(0));
    for round in 1..=3 {
        for _ in 0..100 {
            wg.add(1);
            let (wg, n) = (wg.clone(), n.clone());
            go!(move || {
                n.fetch_add(1, Ordering::SeqCst);
                wg.done();
            });
        }
        wg.wait();
        assert_eq!(n.load(Ordering::SeqCst), 100 * round);
    }
    wg.wait(); // zero: returns at once
               // Waiting from goroutines and threads at once.
    wg.add(1);
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let wg = wg.clone();
            go!(move || wg.wait())
        })
        .collect();
    let t = {
        let wg = wg.clone();
        std::thread::spawn(move || wg.wait())
    };
    wg.done();
    waiters.into_iter().for_each(|h| h.join().unwrap());
    t.join().unwrap();
}

#[test]
#[should_panic(expected = "sync: negative WaitGroup counter")]
fn waitgroup_below_zero_panics() {
    WaitGroup::new().done();
}

/// `WaitGroup::go` and `guard` count a goroutine done also when it panics, so
/// `wait` returns; with `add` and a trailing `done()` it would hang.
#[test]
fn waitgroup_go_and_guard_survive_panicking_goroutines() {
    let _w = common::watchdog(Duration::from_secs(60));
    let wg = WaitGroup::new();
    let ran = Arc::new(AtomicUsize::new(0));
    for i in 0..100 {
        let ran = ran.clone();
        wg.go(move || {
            ran.fetch_add(1, Ordering::SeqCst);
            goro::yield_now();
            if i % 3 == 0 {
                panic!("worker {i} panics before its done()");
            }
        });
    }
    let guards: Vec<_> = (0..10)
        .map(|i| {
            let guard = wg.guard();
            go!(move || {
                let _guard = guard;
                goro::time::sleep(Duration::from_millis(1));
                if i % 2 == 0 {
                    panic!("guarded worker {i} panics");
                }
            })
        })
        .collect();
    // From a plain thread too: a guard dropped by unwinding on a thread.
    let g = wg.guard();
    let t = std::thread::spawn(move || {
        let _g = g;
        panic!("a thread holding a guard panics");
    });
    wg.wait();
    assert_eq!(ran.load(Ordering::SeqCst), 100);
    assert!(t.join().is_err());
    let panicked = guards.into_iter().map(|h| h.join().is_err()).filter(|&e| e).count();
    assert_eq!(panicked, 5);
}

/// Owned permits: acquired in the parent, released in the child goroutine.
#[test]
fn semaphore_owned_permits_move_into_goroutines() {
    let _w = common::watchdog(Duration::from_secs(60));
    let sem = Arc::new(Semaphore::new(3));
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..30)
        .map(|_| {
            let permit = Arc::clone(&sem).acquire_owned();
            let (running, peak) = (running.clone(), peak.clone());
            go!(move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                goro::time::sleep(Duration::from_micros(200));
                running.fetch_sub(1, Ordering::SeqCst);
                drop(permit);
            })
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    assert!(peak.load(Ordering::SeqCst) <= 3, "more than 3 permits out at once");
    assert_eq!(sem.available_permits(), 3);
    let p = Arc::clone(&sem).try_acquire_owned().unwrap();
    let others: Vec<_> = (0..2).map(|_| Arc::clone(&sem).try_acquire_owned().unwrap()).collect();
    assert!(Arc::clone(&sem).try_acquire_owned().is_none());
    assert_eq!(sem.available_permits(), 0, "a failed try released a permit");
    drop(p);
    assert!(Arc::clone(&sem).try_acquire_owned().is_some());
    drop(others);
}

#[test]
fn once_runs_once_for_concurrent_callers_and_counts_a_panic_as_done() {
    let once = Arc::new(Once::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..20)
        .map(|_| {
            let (once, runs) = (once.clone(), runs.clone());
            go!(move || {
                once.call_once(|| {
                    goro::time::sleep(Duration::from_millis(5));
                    runs.fetch_add(1, Ordering::SeqCst);
                });
                assert!(once.is_completed(), "callers return only after the run");
            })
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let o = Arc::new(Once::new());
    let o2 = o.clone();
    assert!(go!(move || o2.call_once(|| panic!("in once"))).join().is_err());
    assert!(o.is_completed());
    o.call_once(|| unreachable!("a panicked Once counts as done"));
}

/// Each primitive between goroutines and plain threads, both directions.
#[test]
fn primitives_work_across_goroutines_and_threads() {
    let _w = common::watchdog(Duration::from_secs(60));
    // Condvar: a thread waits for a G, then a G waits for a thread.
    let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
    let p = pair.clone();
    let t = std::thread::spawn(move || {
        let mut g = p.0.lock();
        while *g != 1 {
            g = p.1.wait(g);
        }
        *g = 2;
        p.1.notify_all();
    });
    let p = pair.clone();
    let g = go!(move || {
        *p.0.lock() = 1;
        p.1.notify_all();
        let mut v = p.0.lock();
        while *v != 2 {
            v = p.1.wait(v);
        }
    });
    t.join().unwrap();
    g.join().unwrap();
    // RwLock: a thread writer against goroutine readers.
    let l = Arc::new(RwLock::new(0u64));
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let l = l.clone();
            go!(move || (0..500).map(|_| *l.read()).max().unwrap())
        })
        .collect();
    let l2 = l.clone();
    let writer = std::thread::spawn(move || (0..500).for_each(|_| *l2.write() += 1));
    writer.join().unwrap();
    readers.into_iter().for_each(|h| assert!(h.join().unwrap() <= 500));
    assert_eq!(*l.read(), 500);
    // Semaphore: threads and goroutines share two permits.
    let sem = Arc::new(Semaphore::new(2));
    let inside = Arc::new(AtomicUsize::new(0));
    let work = |sem: Arc<Semaphore>, inside: Arc<AtomicUsize>| {
        move || {
            for _ in 0..200 {
                let _p = sem.acquire();
                assert!(inside.fetch_add(1, Ordering::SeqCst) < 2);
                inside.fetch_sub(1, Ordering::SeqCst);
            }
        }
    };
    let ts: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(work(sem.clone(), inside.clone())))
        .collect();
    let gs: Vec<_> = (0..4).map(|_| go!(work(sem.clone(), inside.clone()))).collect();
    ts.into_iter().for_each(|t| t.join().unwrap());
    gs.into_iter().for_each(|g| g.join().unwrap());
    // Once: a thread and goroutines race for it.
    let once = Arc::new(Once::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let (o, r) = (once.clone(), runs.clone());
    let t = std::thread::spawn(move || {
        o.call_once(|| {
            r.fetch_add(1, Ordering::SeqCst);
        })
    });
    let gs: Vec<_> = (0..4)
        .map(|_| {
            let (o, r) = (once.clone(), runs.clone());
            go!(move || o.call_once(|| {
                r.fetch_add(1, Ordering::SeqCst);
            }))
        })
        .collect();
    t.join().unwrap();
    gs.into_iter().for_each(|g| g.join().unwrap());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

//! loom models of `goro::sync`: `WaitGroup`, `Mutex` (its lock-free fast path,
//! the `WAITERS` bit, and both unlock modes), and `Once`, with loom threads as the
//! blocked parties (they park through the same wait queues a G does).
//!
//! The payloads are `Relaxed` loom atomics written without read-modify-write, so
//! a missing happens-before edge (a `done` not ordered before `wait` returning, a
//! lock that does not exclude) shows up as a lost update or a stale read, and a
//! missing wake-up as a deadlock loom reports.

use super::{Mutex, Once, WaitGroup};
use loom::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use loom::sync::Arc;
use loom::thread;

/// Adds one to `c` as two separate steps, which only a lock keeps from racing.
fn bump(c: &AtomicUsize) {
    let v = c.load(Relaxed);
    c.store(v + 1, Relaxed);
}

/// `wait` returns only after every `done`, and sees everything written before
/// each `done`; the group can then be reused.
#[test]
fn loom_waitgroup_wait_sees_every_done() {
    loom::model(|| {
        let wg = WaitGroup::new();
        let marks = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        wg.add(2);
        let workers: Vec<_> = (0..2)
            .map(|i| {
                let (wg, marks) = (wg.clone(), marks.clone());
                thread::spawn(move || {
                    marks[i].store(1, Relaxed);
                    wg.done();
                })
            })
            .collect();
        wg.wait();
        assert_eq!(marks[0].load(Relaxed) + marks[1].load(Relaxed), 2);
        wg.add(1);
        let again = {
            let wg = wg.clone();
            thread::spawn(move || wg.done())
        };
        wg.wait();
        again.join().unwrap();
        workers.into_iter().for_each(|w| w.join().unwrap());
    });
}

/// Three lockers; in one model every unlock with a waiter lets the woken waiter
/// compete (Go's normal mode), in the other it hands the lock over (starvation
/// mode). Either way no update is lost and nobody sleeps through an unlock.
#[test]
fn loom_mutex_excludes_and_wakes_in_both_modes() {
    for hand_over in [false, true] {
        super::mutex::LOOM_HAND_OVER.store(hand_over, std::sync::atomic::Ordering::Relaxed);
        loom::model(|| {
            let m = Arc::new(Mutex::new(()));
            let count = Arc::new(AtomicUsize::new(0));
            let lockers: Vec<_> = (0..2)
                .map(|_| {
                    let (m, count) = (m.clone(), count.clone());
                    thread::spawn(move || {
                        let _g = m.lock();
                        bump(&count);
                    })
                })
                .collect();
            {
                let _g = m.lock();
                bump(&count);
            }
            lockers.into_iter().for_each(|t| t.join().unwrap());
            let _g = m.lock();
            assert_eq!(count.load(Relaxed), 3);
        });
    }
    super::mutex::LOOM_HAND_OVER.store(false, std::sync::atomic::Ordering::Relaxed);
}

/// Two callers race `call_once`: the closure runs once, and both return only
/// after it ran, seeing its effect.
#[test]
fn loom_once_runs_once_and_both_see_it() {
    loom::model(|| {
        let once = Arc::new(Once::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let other = {
            let (once, runs) = (once.clone(), runs.clone());
            thread::spawn(move || {
                once.call_once(|| bump(&runs));
                runs.load(Relaxed)
            })
        };
        once.call_once(|| bump(&runs));
        assert_eq!(runs.load(Relaxed), 1);
        assert_eq!(other.join().unwrap(), 1);
    });
}

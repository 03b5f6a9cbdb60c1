//! A sleeping G's timer fires on time while another G computes and the other P
//! idles. (Its own binary: GOMAXPROCS is 2, and the computing G needs a core.)
//!
//! The M that comes back from the poller runs the G it found there (or the one
//! a timer readied) without waking a helper, and a G that parks with a timer
//! leaves the wake-up to its M's search: while that G computes, nobody is in
//! the poller and nobody spins. So someone else watches the timers: a helper
//! the M wakes for a near one (`schedule::watch_timers`), and sysmon for the
//! rest (`sysmon::timers_if_unwatched`). Unwatched, a 30 ms sleep on the idle P
//! would take as long as the computation (about 300 ms).
//!
//! The thread sleeps below only stage the interleaving (which G's timer wakes
//! the poller); no check depends on them being exact.

mod common;

use std::time::{Duration, Instant};

const TRIALS: usize = 5;

fn compute(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// How long `sleep(d)` took for a G.
fn timed_sleep(d: Duration) -> goro::JoinHandle<Duration> {
    goro::go!(move || {
        let t = Instant::now();
        goro::time::sleep(d);
        t.elapsed()
    })
}

/// One test, so that no other test's computing G takes the idle P.
#[test]
fn timers_fire_while_a_g_computes() {
    common::init_procs(2);
    let _w = common::watchdog(Duration::from_secs(60));
    far_timer();
    near_timer();
}

/// The sleeper's timer is 10+ ms away when the poller's M starts a G that
/// computes for 100 ms: sysmon watches it. (The first G puts the sleeper on
/// the other P; the worker's short computation lets its 1 ms timer be the one
/// that wakes the poller.)
fn far_timer() {
    for trial in 0..TRIALS {
        let first = goro::go!(|| compute(Duration::from_millis(10)));
        std::thread::sleep(Duration::from_millis(1));
        let sleeper = timed_sleep(Duration::from_millis(30));
        std::thread::sleep(Duration::from_millis(15));
        let worker = goro::go!(|| {
            compute(Duration::from_millis(3));
            goro::time::sleep(Duration::from_millis(1));
            compute(Duration::from_millis(100));
        });
        let took = sleeper.join().unwrap();
        worker.join().unwrap();
        first.join().unwrap();
        assert!(
            took < Duration::from_millis(45),
            "trial {trial}: sleep(30 ms) took {took:?} while a G computed"
        );
    }
}

/// The sleeper's timer is a few ms away: the M that starts the computing G
/// wakes a helper for it (`schedule::watch_timers`).
fn near_timer() {
    for trial in 0..TRIALS {
        let sleeper = timed_sleep(Duration::from_millis(6));
        std::thread::sleep(Duration::from_millis(2));
        let worker = goro::go!(|| {
            goro::time::sleep(Duration::from_millis(1));
            compute(Duration::from_millis(50));
        });
        let took = sleeper.join().unwrap();
        worker.join().unwrap();
        assert!(
            took < Duration::from_millis(12),
            "trial {trial}: sleep(6 ms) took {took:?} while a G computed"
        );
    }
}

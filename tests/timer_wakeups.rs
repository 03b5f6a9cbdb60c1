//! Gs that sleep in a loop, with no sockets, cost about one M wake-up per timer.
//! (Its own binary: the counts are per process, and GOMAXPROCS is 2.)
//!
//! Two wasted wake-ups are checked, one per phase of the test:
//! - A G sleeping alone: when it parks, its M leaves the wake-up for the new
//!   timer to its own search (`timers::add_timer_parked`) rather than waking
//!   another M to watch it (Go's `wakeNetPoller`), which would find nothing to
//!   run; and an M that a timer wakes from the poller goes back to work unspun,
//!   so taking the G wakes no other M (`tests/timer_watch.rs` checks that the
//!   timers stay watched meanwhile). About 1.0 M sleeps per timer; the two
//!   wasted wake-ups would make it 2.6.
//! - Two Gs sleeping: only a spinning M, which answers for every P's timers,
//!   sleeps until the earliest of all (Go's rule). An idle M that did so would
//!   wake for a timer of a running P, could not run it (it is that P's owner's),
//!   and would poll again and again until the owner had: 1.95 M sleeps per timer,
//!   against 1.2-1.4.

mod common;

use std::time::Duration;

const TICKS: usize = 500;

/// M sleeps per timer while `sleepers` Gs each sleep 1 ms `TICKS` times.
fn m_sleeps_per_timer(sleepers: usize) -> f64 {
    let before = common::m_sleeps();
    let hs: Vec<_> = (0..sleepers)
        .map(|_| {
            goro::go!(|| {
                for _ in 0..TICKS {
                    goro::time::sleep(Duration::from_millis(1));
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    (common::m_sleeps() - before) as f64 / (sleepers * TICKS) as f64
}

#[test]
fn one_m_wake_up_per_timer() {
    common::init_procs(2);
    let _w = common::watchdog(Duration::from_secs(60));
    let alone = m_sleeps_per_timer(1);
    assert!(alone < 1.5, "one sleeper: {alone:.2} M sleeps per timer");
    // Two sleepers: usually 1.2-1.4, now and then up to 1.8 (the two timers'
    // phases drift), against 1.95 when idle Ms sleep until every P's earliest
    // timer; the best of five runs is what the rule decides (the best of three
    // can read 1.50 in a full-suite run on 2 cores).
    let two = (0..5).map(|_| m_sleeps_per_timer(2)).fold(f64::MAX, f64::min);
    assert!(two < 1.5, "two sleepers: {two:.2} M sleeps per timer (best of 5)");
}

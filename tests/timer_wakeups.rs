//! Gs that sleep in a loop, with no sockets, cost about one M wake-up per timer.
//! (Its own binary: the counts are per process, and GOMAXPROCS is 2.)
//!
//! An M that runs dry sleeps until its own P's next timer; only a spinning M,
//! which answers for every P's timers, sleeps until the earliest of all (Go's
//! rule). When every idling M slept until the earliest timer of every P, an M
//! woke for a timer of a P that was running, could not run it (it is that P's
//! owner's), and polled again and again until the owner had: 1.95 M sleeps per
//! timer instead of 1.2, and twice the CPU.

mod common;

use std::time::Duration;

const TICKS: usize = 500;

#[test]
fn one_m_wake_up_per_timer() {
    common::init_procs(2);
    let _wd = common::watchdog("one_m_wake_up_per_timer", Duration::from_secs(60));
    let before = common::m_sleeps();
    let sleepers: Vec<_> = (0..2)
        .map(|_| {
            goro::go!(|| {
                for _ in 0..TICKS {
                    goro::time::sleep(Duration::from_millis(1));
                }
            })
        })
        .collect();
    for s in sleepers {
        s.join().unwrap();
    }
    let per_timer = (common::m_sleeps() - before) as f64 / (2 * TICKS) as f64;
    assert!(per_timer < 1.6, "{per_timer:.2} M sleeps per timer");
}

//! With one P the scheduler is deterministic enough to pin Go's ordering rules:
//! a G readied by the running G runs next (runnext), `yield_now` goes behind the
//! others, a pair of Gs readying each other through runnext cannot starve a G
//! waiting in the global queue, and timers fire in deadline order.

mod common;

use goro::go;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Log = Arc<Mutex<Vec<String>>>;

fn log(l: &Log, s: &str) {
    l.lock().unwrap().push(s.to_string());
}

#[test]
fn a_g_readied_by_the_running_g_runs_next() {
    common::init_procs(1);
    let _w = common::watchdog(Duration::from_secs(30));
    let l: Log = Arc::default();
    let l2 = l.clone();
    go!(move || {
        let lt = l2.clone();
        // T readies W (by finishing while W joins it) after queueing Q1..Q3.
        let t = go!(move || {
            for q in ["Q1", "Q2", "Q3"] {
                let lq = lt.clone();
                drop(go!(move || log(&lq, q)));
            }
        });
        let lw = l2.clone();
        let w = go!(move || {
            t.join().unwrap();
            log(&lw, "W");
        });
        w.join().unwrap();
    })
    .join()
    .unwrap();
    // Let the detached Q Gs finish: the log is complete once all four entries are in.
    let done = go!(move || loop {
        if l.lock().unwrap().len() == 4 {
            return l.lock().unwrap().clone();
        }
        goro::yield_now();
    });
    let order = done.join().unwrap();
    assert_eq!(
        order[0], "W",
        "the readied G must run before older queued Gs: {order:?}"
    );
}

/// The P's schedtick. With one P this is the only P.
fn schedtick() -> u64 {
    goro::runtime::stats().procs[0].schedtick
}

#[test]
fn yield_now_goes_behind_the_others() {
    common::init_procs(1);
    let _w = common::watchdog(Duration::from_secs(30));
    let l: Log = Arc::default();
    let l2 = l.clone();
    go!(move || {
        for name in ["A", "B", "C"] {
            let lx = l2.clone();
            drop(go!(move || log(&lx, name)));
        }
        // Every 61st schedtick the global queue is served first (fairness): keep
        // this G's yield off that tick so the order below is the plain one.
        while (schedtick() + 1).is_multiple_of(61) || schedtick().is_multiple_of(61) {
            goro::yield_now();
        }
        goro::yield_now();
        log(&l2, "after-yield");
    })
    .join()
    .unwrap();
    let order = l.lock().unwrap().clone();
    assert_eq!(order.len(), 4, "{order:?}");
    assert_eq!(
        order[3], "after-yield",
        "the yielding G must run after the queued ones: {order:?}"
    );
}

#[test]
fn global_queue_is_not_starved_by_a_runnext_ping_pong() {
    common::init_procs(1);
    let _w = common::watchdog(Duration::from_secs(30));
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicU64::new(0));
    let (s, r) = (stop.clone(), rounds.clone());
    // Spawn + join in a loop: child and parent ready each other through runnext,
    // inheriting one time slice forever unless the slice rule ends it.
    let pinger = go!(move || {
        while !s.load(Ordering::SeqCst) {
            go!(|| ()).join().unwrap();
            r.fetch_add(1, Ordering::SeqCst);
        }
    });
    while rounds.load(Ordering::SeqCst) < 1000 {
        std::thread::yield_now();
    }
    let ticks_before = schedtick();
    let queued_at = Instant::now();
    let s = stop.clone();
    // From a plain thread: this G goes to the global queue.
    let waited = go!(move || {
        s.store(true, Ordering::SeqCst);
        queued_at.elapsed()
    })
    .join()
    .unwrap();
    pinger.join().unwrap();
    let ticks = schedtick() - ticks_before;
    // Go's slice is 10 ms; allow generous slack for a loaded CI machine, but a
    // starved G would never run at all (the watchdog catches that).
    assert!(waited < Duration::from_secs(2), "global G waited {waited:?}");
    assert!(ticks < 1000, "{ticks} schedticks passed before the global G ran");
}

/// One P, one timer heap: timers fire in deadline order whatever the order they
/// were armed in.
#[test]
fn timers_fire_in_deadline_order() {
    common::init_procs(1);
    let order = Arc::new(Mutex::new(Vec::new()));
    // Deadlines are fixed before any G runs, so a loaded machine that delays
    // some Gs' starts cannot reorder them (only a stall longer than a whole
    // deadline could).
    let start = std::time::Instant::now();
    // Spawned in reverse so that spawn order and deadline order disagree.
    let hs: Vec<_> = (0..10u64)
        .rev()
        .map(|i| {
            let order = order.clone();
            let deadline = start + Duration::from_millis(20 + 10 * i);
            go!(move || {
                goro::time::sleep(deadline.saturating_duration_since(std::time::Instant::now()));
                order.lock().unwrap().push(i);
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..10).collect::<Vec<_>>());
}

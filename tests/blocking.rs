//! `goro::blocking` semantics: results and panics pass through, goro calls inside
//! behave as on a plain thread, and a burst of blocking calls leaves no crowd of
//! threads behind (idle Ms retire).

mod common;

use goro::go;
use std::time::{Duration, Instant};

#[test]
fn returns_the_result_and_propagates_panics() {
    common::init_procs(2);
    assert_eq!(goro::blocking(|| 7), 7, "on a plain thread it is a plain call");
    let h = go!(|| {
        let id = goro::current();
        let inside = goro::blocking(goro::current);
        assert_eq!(inside, id, "current() inside blocking names the G");
        goro::blocking(|| goro::blocking(|| 40) + 2)
    });
    assert_eq!(h.join().unwrap(), 42);
    let h = go!(|| goro::blocking(|| -> u32 { panic!("inside blocking") }));
    let err = h.join().unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"inside blocking"));
    // The runtime is unharmed.
    assert_eq!(go!(|| 1).join().unwrap(), 1);
}

#[test]
fn goro_calls_inside_block_the_thread() {
    common::init_procs(2);
    let _w = common::watchdog(Duration::from_secs(30));
    let (tx, rx) = goro::chan::bounded::<u32>(0);
    let h = go!(move || {
        goro::blocking(move || {
            // A channel receive and a spawn from inside the blocking call.
            let inner = go!(move || tx.send(5).unwrap());
            let v = rx.recv().unwrap();
            inner.join().unwrap();
            goro::time::sleep(Duration::from_millis(1));
            v
        })
    });
    assert_eq!(h.join().unwrap(), 5);
}

fn threads() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Threads:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_thousand_concurrent_blocking_calls_and_the_threads_go_away() {
    common::init_procs(2);
    let _w = common::watchdog(Duration::from_secs(60));
    // Warm up: the runtime's own threads exist before the baseline.
    (0..4).map(|_| go!(|| ())).for_each(|h| h.join().unwrap());
    let baseline = threads();
    let handles: Vec<_> = (0..1000u64)
        .map(|i| {
            go!(move || goro::blocking(move || {
                std::thread::sleep(Duration::from_millis(50));
                i
            }))
        })
        .collect();
    let sum: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(sum, 999 * 1000 / 2);
    let peak = threads();
    assert!(
        peak > baseline + 10,
        "blocking calls did not get Ms of their own: {peak} threads"
    );
    // Idle Ms retire after a second idle; wait for it with a deadline.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = threads();
        if now <= baseline + 2 {
            break;
        }
        assert!(Instant::now() < deadline, "still {now} threads (baseline {baseline})");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A value whose drop parks the G (a user `Drop` doing goro I/O, say).
struct ParksOnDrop;

impl Drop for ParksOnDrop {
    fn drop(&mut self) {
        goro::time::sleep(Duration::from_micros(20));
    }
}

/// Stopped `after_func` timers are dropped when a later `add_timer` compacts the
/// heap. Their closures may own values with any `Drop`: that must run outside the
/// runtime, or a G that parks there resumes on another M with the runtime's
/// bookkeeping of both Ms wrong (debug builds assert on it).
#[test]
fn user_drops_from_timer_compaction_run_outside_the_runtime() {
    common::init_procs(2);
    let _w = common::watchdog(Duration::from_secs(60));
    let hs: Vec<_> = (0..8)
        .map(|_| {
            go!(|| {
                for _ in 0..400 {
                    let owned = ParksOnDrop;
                    let t = goro::time::after_func(Duration::from_secs(3600), move || {
                        let _keep = &owned;
                    });
                    t.stop();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}

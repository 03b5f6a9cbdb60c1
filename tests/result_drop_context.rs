//! A goroutine's result is dropped as goroutine or caller code, never on the
//! scheduler's own stack: with one P, a result whose destructor blocks (here: it
//! joins another goroutine) would otherwise deadlock the only M; so is a stopped
//! timer's closure that a heap compaction drops.

mod common;

use std::time::Duration;

struct JoinOnDrop(Option<goro::JoinHandle<()>>);

impl Drop for JoinOnDrop {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            h.join().unwrap();
        }
    }
}

#[test]
fn a_blocking_result_destructor_never_runs_on_the_scheduler() {
    common::init_procs(1);
    let _w = common::watchdog(Duration::from_secs(60));
    for _ in 0..3000 {
        let h = goro::go!(|| JoinOnDrop(Some(goro::go!(|| goro::time::sleep(Duration::from_micros(20))))));
        // Finished first, dropped after: the handle drops the result.
        while !h.is_finished() {
            std::thread::yield_now();
        }
        drop(h);
        // Dropped before it finishes: the G drops its own result.
        drop(goro::go!(|| {
            JoinOnDrop(Some(goro::go!(|| goro::time::sleep(Duration::from_micros(20)))))
        }));
    }
}

/// A stopped `after_func`'s closure, dropped when a later `sleep` arms its timer
/// and compacts the heap away from dead timers, is dropped in a goroutine, not
/// on the scheduler's side of that park: there, a closure whose drop joins a
/// goroutine would stop the only M for good. A child process: the heap's
/// compaction must come at the `sleep`, the 64th timer of a fresh runtime.
#[test]
fn a_dead_timers_closure_is_dropped_in_a_goroutine() {
    if common::is_child() {
        let _w = common::watchdog(Duration::from_secs(30));
        goro::go!(|| {
            for _ in 0..63 {
                let j = JoinOnDrop(Some(goro::go!(|| goro::time::sleep(Duration::from_micros(20)))));
                goro::time::after_func(Duration::from_secs(3600), move || {
                    let _ = &j;
                })
                .stop();
            }
            goro::time::sleep(Duration::from_millis(1));
        })
        .join()
        .unwrap();
        return;
    }
    let out = common::run_child(
        "a_dead_timers_closure_is_dropped_in_a_goroutine",
        &[("GOMAXPROCS", "1")],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

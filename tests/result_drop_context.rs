//! A goroutine's result is dropped as goroutine or caller code, never on the
//! scheduler's own stack: with one P, a result whose destructor blocks (here: it
//! joins another goroutine) would otherwise deadlock the only M.

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

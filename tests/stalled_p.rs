//! A G that blocks its thread outside `goro::blocking` stalls its P, and the Gs
//! queued behind it wait. The other P, kept busy by a G that yields in a loop (so
//! it never runs dry and never steals the usual way), still takes them at its
//! periodic look, long before sysmon's 20 ms retake would hand the stalled P to
//! another M.

mod common;

use goro::go;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

const QUEUED: usize = 20;

#[test]
fn a_busy_p_takes_the_queue_of_a_p_whose_m_is_stalled() {
    common::init_procs(2);
    let _w = common::watchdog(Duration::from_secs(60));
    let stop = Arc::new(AtomicBool::new(false));
    let (started_tx, started_rx) = mpsc::channel();
    let yielder = {
        let stop = stop.clone();
        go!(move || {
            started_tx.send(()).unwrap();
            while !stop.load(Ordering::Relaxed) {
                goro::yield_now();
            }
        })
    };
    started_rx.recv().unwrap();
    let (arrived, retakes) = go!(|| {
        let before = goro::runtime::stats().preempt_retakes;
        let (done_tx, done_rx) = mpsc::channel();
        for _ in 0..QUEUED {
            let done_tx = done_tx.clone();
            go!(move || done_tx.send(()).unwrap());
        }
        // Blocks this M's thread (deliberately not `goro::blocking`).
        let arrived = (0..QUEUED)
            .take_while(|_| done_rx.recv_timeout(Duration::from_secs(5)).is_ok())
            .count();
        (arrived, goro::runtime::stats().preempt_retakes - before)
    })
    .join()
    .unwrap();
    stop.store(true, Ordering::Relaxed);
    yielder.join().unwrap();
    assert_eq!(arrived, QUEUED, "queued Gs still stranded after 5 s");
    assert_eq!(retakes, 0, "the queued Gs waited for sysmon's retake");
}

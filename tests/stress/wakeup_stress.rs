//! GOMAXPROCS=4 on a 2-core machine: bursts of spawn/join from Gs and from plain
//! threads, with yields and nested spawns, under a watchdog. A lost wake-up (work
//! queued, a P idle, every M asleep) hangs and trips the watchdog.

use crate::{common, serial, PROCS};

use goro::go;
use std::time::Duration;

fn burst(round: usize) -> usize {
    let n = round % 64 + 1;
    let hs: Vec<_> = (0..n)
        .map(|i| {
            go!(move || {
                if i % 3 == 0 {
                    goro::yield_now();
                }
                if i % 7 == 0 {
                    return go!(move || i).join().unwrap();
                }
                i
            })
        })
        .collect();
    hs.into_iter().map(|h| h.join().unwrap()).sum()
}

#[test]
fn spawn_join_bursts_from_threads_and_gs_never_hang() {
    let _s = serial();
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(120));
    let expect = |round: usize| {
        let n = round % 64 + 1;
        n * (n - 1) / 2
    };
    // Several plain threads and a G drive bursts at once.
    let threads: Vec<_> = (0..3)
        .map(|t| {
            std::thread::spawn(move || {
                for round in 0..400 {
                    assert_eq!(burst(round + t), expect(round + t));
                }
            })
        })
        .collect();
    let from_g = go!(move || {
        for round in 0..400 {
            assert_eq!(burst(round), expect(round));
        }
    });
    for t in threads {
        t.join().unwrap();
    }
    from_g.join().unwrap();
    // Idle transitions: one G at a time, each from an idle runtime.
    for i in 0..2000 {
        assert_eq!(go!(move || i).join().unwrap(), i);
    }
}

//! With 2 Ps and every G spawned from one G, the other P gets work only by
//! stealing: both Ps must run Gs and the steal counters must move.

mod common;

use goro::go;
use std::collections::HashSet;
use std::hint::black_box;
use std::time::Duration;

fn spin(iters: u64) -> u64 {
    (0..iters).fold(0u64, |a, i| a.wrapping_add(black_box(i)))
}

#[test]
fn both_ps_run_gs_spawned_from_one_g_and_steals_happen() {
    common::init_procs(2);
    let _w = common::watchdog(Duration::from_secs(60));
    let before = goro::runtime::stats();
    // 200 Gs fit in one P's ring (256): none spill to the global queue, so the
    // second P can only get them by stealing.
    let threads: HashSet<std::thread::ThreadId> = go!(|| {
        let hs: Vec<_> = (0..200)
            .map(|_| {
                go!(|| {
                    spin(200_000);
                    std::thread::current().id()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
    .join()
    .unwrap();
    let after = goro::runtime::stats();
    assert!(threads.len() >= 2, "all Gs ran on one thread");
    assert!(after.steals > before.steals, "no steal happened: {after:?}");
    assert!(after.stolen >= after.steals);
    for (i, (a, b)) in after.procs.iter().zip(&before.procs).enumerate() {
        assert!(a.schedtick > b.schedtick, "P{i} ran nothing: {after:?}");
    }
    assert_eq!(after.procs.iter().map(|p| p.steals).sum::<u64>(), after.steals);
}

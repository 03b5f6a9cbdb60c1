//! GOMAXPROCS=4: bursts of short sleeps, so stealing Ms run other Ps' timers while
//! their owners add more. A G readied by a stolen timer must never be stranded in
//! an idle P's queue: a thief that judged "did a timer fire" by the heap's length,
//! which a concurrent add can keep unchanged, would lose that wake-up.

use crate::{common, serial, PROCS};

use goro::go;
use std::time::Duration;

#[test]
fn sleepers_readied_by_stolen_timers_always_run() {
    let _s = serial();
    common::init_procs(PROCS);
    let rounds: u64 = std::env::var("ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500);
    for r in 0..rounds {
        let _w = common::watchdog(Duration::from_secs(20));
        go!(move || {
            let hs: Vec<_> = (0..16u64)
                .map(|i| {
                    go!(move || {
                        for k in 0..4u64 {
                            goro::time::sleep(Duration::from_micros(5 + (i * 7 + k * 13 + r) % 50));
                        }
                    })
                })
                .collect();
            hs.into_iter().for_each(|h| h.join().unwrap());
        })
        .join()
        .unwrap();
    }
}

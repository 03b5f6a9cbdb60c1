//! Timers stay on time while other threads keep every core busy and Gs wait on
//! the network. (Its own binary: it starts threads that compute on every core.)
//!
//! With Gs waiting on the network, an M that runs dry poll-spins: it yields its
//! thread and searches again (`runtime/pollspin.rs`). Beside threads that never
//! block, one yield lasts a whole OS time slice (about 4 ms), while the M keeps
//! its P and with it the P's timers. So the spin never starts with a timer due
//! within 10 ms, and stops for good once a long yield brought nothing back.
//! With those rules `sleep(1ms)` takes about 1.1 ms at p90 here; a spin that
//! yields with a timer due makes it 2.3–4 ms, past the 2 ms bound.

mod common;

use std::io::Read;
use std::time::{Duration, Instant};

const TICKS: usize = 300;

#[test]
fn sleep_is_on_time_beside_cpu_hogs() {
    common::init_procs(2);
    let _w = common::watchdog(Duration::from_secs(60));
    // A G parked on a socket: the network is in use.
    let l = goro::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let _client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (s, _) = l.accept().unwrap();
    let _parked = goro::go!(move || (&s).read(&mut [0; 1]));
    let _hogs = common::cpu_hogs();
    let sleepers: Vec<_> = (0..2)
        .map(|_| {
            goro::go!(|| {
                (0..TICKS)
                    .map(|_| {
                        let t = Instant::now();
                        goro::time::sleep(Duration::from_millis(1));
                        t.elapsed()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut took: Vec<Duration> = sleepers.into_iter().flat_map(|s| s.join().unwrap()).collect();
    let p90 = common::quantile(&mut took, 0.9);
    assert!(
        p90 < Duration::from_millis(2),
        "sleep(1ms) took {p90:?} at p90 beside CPU hogs"
    );
}

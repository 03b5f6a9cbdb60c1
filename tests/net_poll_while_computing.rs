//! While the G of one connection computes, a request on a second connection is
//! served on the idle P within about a millisecond. (Its own binary: GOMAXPROCS
//! is 2.)
//!
//! The M that the poller wakes with a single G runs it itself and wakes no
//! helper (so a server with sparse traffic pays one M wake-up per request, see
//! `net_sparse_wakeups.rs`). While that G computes, nobody is blocked in the
//! poller and the other P idles; sysmon polls for them after 1 ms. Before that
//! rule the second request waited for sysmon's 10 ms stale-network poll (median
//! round trip 9 ms here), as it would in Go.

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// How long the first connection's G computes per request.
const COMPUTE: Duration = Duration::from_millis(40);
const ROUNDS: usize = 15;

fn compute(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[test]
fn a_second_connection_is_served_while_the_first_computes() {
    common::init_procs(2);
    let _w = common::watchdog(Duration::from_secs(60));
    let l = goro::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    // An echo server; a request byte `C` makes its G compute first.
    let _server = goro::go!(move || {
        for s in l.incoming() {
            let mut s = s.unwrap();
            goro::go!(move || {
                let mut byte = [0u8; 1];
                while let Ok(1) = s.read(&mut byte) {
                    if byte[0] == b'C' {
                        compute(COMPUTE);
                    }
                    if s.write_all(&byte).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let connect = || {
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.set_nodelay(true).unwrap();
        c.write_all(b"x").unwrap();
        c.read_exact(&mut [0u8; 1]).unwrap(); // its G exists and has parked
        c
    };
    let (mut a, mut b) = (connect(), connect());
    let mut round_trips = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        // Every M runs out of work; one blocks in the poller.
        std::thread::sleep(Duration::from_millis(5));
        a.write_all(b"C").unwrap(); // the poller's M takes A's G, which computes
        std::thread::sleep(Duration::from_millis(2));
        let t = Instant::now();
        b.write_all(b"x").unwrap();
        b.read_exact(&mut [0u8; 1]).unwrap();
        round_trips.push(t.elapsed());
        a.read_exact(&mut [0u8; 1]).unwrap();
    }
    let median = common::quantile(&mut round_trips, 0.5);
    assert!(
        median < Duration::from_millis(4),
        "B's round trip while A's G computes: median {median:?} (all: {round_trips:?})"
    );
}

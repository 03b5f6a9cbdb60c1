//! A server with sparse traffic (one request at a time, with pauses between)
//! wakes one M per request, not two: the M that the poller wakes runs the
//! readied G itself, and wakes no helper for a single G. Counted as the Ms'
//! voluntary context switches (sleeps), from /proc. (Its own binary: the counts
//! are per process, and GOMAXPROCS is 2.)
//!
//! Two sleeps per request is the wasted wake-up it catches: a poller M back
//! from the poll as a spinner would wake a second M when it took the G, and
//! that M would find nothing and sleep again.
//!
//! Nor does sysmon wake for every request: a look it makes early to poll the
//! network (1 ms after the last poll, while a P idles) must not end in its deep
//! sleep, out of which the next request's M would have to wake it.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

const ROUNDS: usize = 300;

#[test]
fn one_m_wakes_per_sparse_request() {
    common::init_procs(2);
    let _w = common::watchdog(Duration::from_secs(60));
    let l = goro::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let server = goro::go!(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = [0u8; 64];
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => s.write_all(&buf[..n]).unwrap(),
            }
        }
    });
    let mut client = std::net::TcpStream::connect(addr).unwrap();
    client.set_nodelay(true).unwrap();
    let mut echo = [0u8; 4];
    let mut round_trip = |client: &mut std::net::TcpStream| {
        client.write_all(b"ping").unwrap();
        client.read_exact(&mut echo).unwrap();
    };
    round_trip(&mut client); // the connection's G exists and has parked once
    let before = common::m_sleeps();
    let sysmon_before = common::sysmon_sleeps();
    for _ in 0..ROUNDS {
        // A pause long enough for every M to run out of work and sleep.
        std::thread::sleep(Duration::from_millis(1));
        round_trip(&mut client);
    }
    let per_request = (common::m_sleeps() - before) as f64 / ROUNDS as f64;
    let sysmon_per_request = (common::sysmon_sleeps() - sysmon_before) as f64 / ROUNDS as f64;
    drop(client);
    server.join().unwrap();
    assert!(
        per_request < 1.5,
        "{per_request:.2} M sleeps per sparse request (one M should serve each)"
    );
    assert!(
        sysmon_per_request < 1.0,
        "{sysmon_per_request:.2} sysmon sleeps per sparse request"
    );
}

//! The soak test: a mixed workload in rounds until `SOAK_SECS` have passed —
//! spawn storms, a channel pipeline, selects with timeouts, mutex contention, TCP
//! echo clients and server, blocking calls and a CPU hog, all at once. After every
//! round it checks that each message arrived exactly once, that no goroutine is
//! left over (`num_goroutine` back to the baseline), and that RSS and the thread
//! count stay bounded; a watchdog turns a deadlock into a failure.
//!
//! Ignored by `cargo test`; `scripts/soak.sh` runs it with GOMAXPROCS 1, 2 and 8.

mod common;

use goro::sync::{Mutex, WaitGroup};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
#[ignore = "long: run by scripts/soak.sh"]
fn soak() {
    let secs: u64 = std::env::var("SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let deadline = Instant::now() + Duration::from_secs(secs);
    let baseline_gs = goro::runtime::num_goroutine();
    let mut first_rss = None;
    let mut round = 0u64;
    while round == 0 || Instant::now() < deadline {
        let _w = common::watchdog(Duration::from_secs(120));
        let started = Instant::now();
        goro::go!(move || one_round(round)).join().expect("a round failed");
        wait_for_goroutines(baseline_gs);
        let (rss, threads) = (rss_kib(), threads());
        let first = *first_rss.get_or_insert(rss);
        println!(
            "round {round}: {:.2} s, rss {rss} KiB, {threads} threads, gomaxprocs {}",
            started.elapsed().as_secs_f64(),
            goro::runtime::gomaxprocs()
        );
        // Memory must not creep: stacks and buffers are reused round after round.
        assert!(rss <= first * 2 + 64 * 1024, "rss grew from {first} to {rss} KiB");
        // Blocking calls add threads; idle ones beyond GOMAXPROCS retire after ~1 s,
        // so the count stays near what one round needs.
        assert!(threads <= goro::runtime::gomaxprocs() + 80, "{threads} threads");
        round += 1;
    }
    println!("soak: {round} rounds in {secs} s");
}

/// One part of a round: it gets the round number and panics on a wrong result.
type Part = fn(u64);

/// All parts of one round run concurrently; each checks its own results.
fn one_round(round: u64) {
    let parts: [(&str, Part); 7] = [
        ("spawn storm", spawn_storm),
        ("pipeline", pipeline),
        ("select with timeouts", select_timeouts),
        ("mutex contention", mutex_contention),
        ("tcp echo", tcp_echo),
        ("blocking calls", blocking_calls),
        ("hog", hog),
    ];
    let handles: Vec<_> = parts
        .into_iter()
        .map(|(name, f)| (name, goro::go!(move || f(round))))
        .collect();
    for (name, h) in handles {
        if h.join().is_err() {
            panic!("round {round}: {name} failed");
        }
    }
}

/// 20,000 goroutines in two waves of nested spawns; every result counted once.
fn spawn_storm(round: u64) {
    let sum = Arc::new(AtomicU64::new(0));
    let parents: Vec<_> = (0..200u64)
        .map(|p| {
            let sum = sum.clone();
            goro::go!(move || {
                let kids: Vec<_> = (0..100u64).map(|k| goro::go!(move || p * 100 + k + round)).collect();
                let s: u64 = kids.into_iter().map(|k| k.join().unwrap()).sum();
                sum.fetch_add(s, Ordering::Relaxed);
            })
        })
        .collect();
    for p in parents {
        p.join().unwrap();
    }
    let n = 20_000u64;
    assert_eq!(sum.load(Ordering::Relaxed), n * (n - 1) / 2 + n * round);
}

/// Three stages joined by small channels; every value arrives once and in order.
fn pipeline(_round: u64) {
    const N: u64 = 50_000;
    let (tx1, rx1) = goro::chan::bounded::<u64>(16);
    let (tx2, rx2) = goro::chan::bounded::<u64>(0);
    let (tx3, rx3) = goro::chan::bounded::<u64>(64);
    goro::go!(move || (0..N).for_each(|i| tx1.send(i).unwrap()));
    goro::go!(move || rx1.iter().for_each(|v| tx2.send(v * 3).unwrap()));
    goro::go!(move || rx2.iter().for_each(|v| tx3.send(v + 1).unwrap()));
    let mut expected = 0;
    for v in rx3.iter() {
        assert_eq!(v, expected * 3 + 1, "lost, duplicated or reordered");
        expected += 1;
    }
    assert_eq!(expected, N);
}

/// Receivers select between a channel and a timeout; senders pause now and then,
/// so both arms win. Every value is received exactly once.
fn select_timeouts(_round: u64) {
    const SENDERS: u64 = 8;
    const EACH: u64 = 500;
    let (tx, rx) = goro::chan::bounded::<u64>(4);
    let seen = Arc::new(std::sync::Mutex::new(vec![0u8; (SENDERS * EACH) as usize]));
    let timeouts = Arc::new(AtomicU64::new(0));
    let wg = Arc::new(WaitGroup::new());
    wg.add(SENDERS as usize);
    for s in 0..SENDERS {
        let (tx, wg) = (tx.clone(), wg.clone());
        goro::go!(move || {
            for i in 0..EACH {
                if i % 50 == 0 {
                    goro::time::sleep(Duration::from_millis(3));
                }
                tx.send(s * EACH + i).unwrap();
            }
            wg.done();
        });
    }
    drop(tx);
    let receivers: Vec<_> = (0..4)
        .map(|_| {
            let (rx, seen, timeouts) = (rx.clone(), seen.clone(), timeouts.clone());
            goro::go!(move || loop {
                goro::select! {
                    recv(rx) -> v => match v {
                        Ok(v) => seen.lock().unwrap()[v as usize] += 1,
                        Err(_) => break,
                    },
                    recv(goro::time::after(Duration::from_millis(1))) -> _ => {
                        timeouts.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    wg.wait();
    for r in receivers {
        r.join().unwrap();
    }
    let seen = seen.lock().unwrap();
    assert!(seen.iter().all(|&c| c == 1), "a value was lost or duplicated");
    assert!(timeouts.load(Ordering::Relaxed) > 0, "no timeout arm ever won");
}

/// 16 goroutines increment under one goro Mutex; no increment is lost.
fn mutex_contention(_round: u64) {
    let counter = Arc::new(Mutex::new(0u64));
    let hs: Vec<_> = (0..16)
        .map(|i| {
            let counter = counter.clone();
            goro::go!(move || {
                for k in 0..5_000 {
                    *counter.lock() += 1;
                    if (i + k) % 1000 == 0 {
                        goro::yield_now();
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(*counter.lock(), 16 * 5_000);
}

/// A goroutine echo server and 32 clients × 100 messages, each checked.
fn tcp_echo(round: u64) {
    let listener = goro::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    const CLIENTS: usize = 32;
    let server = goro::go!(move || {
        let conns: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let (mut s, _) = listener.accept().unwrap();
                goro::go!(move || {
                    let mut buf = [0u8; 256];
                    loop {
                        match s.read(&mut buf) {
                            Ok(0) => break,
                            Ok(n) => s.write_all(&buf[..n]).unwrap(),
                            Err(e) => panic!("server read: {e}"),
                        }
                    }
                })
            })
            .collect();
        for c in conns {
            c.join().unwrap();
        }
    });
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            goro::go!(move || {
                let mut s = goro::net::TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                for i in 0..100 {
                    let msg = format!("round {round} client {c} message {i:03}");
                    s.write_all(msg.as_bytes()).unwrap();
                    let mut back = vec![0u8; msg.len()];
                    s.read_exact(&mut back).unwrap();
                    assert_eq!(back, msg.as_bytes());
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    server.join().unwrap();
}

/// 64 goroutines in blocking calls at once; their Ps are handed off.
fn blocking_calls(_round: u64) {
    let hs: Vec<_> = (0..64u64)
        .map(|i| {
            goro::go!(move || {
                goro::blocking(|| std::thread::sleep(Duration::from_millis(2 + i % 5)));
                i
            })
        })
        .collect();
    let sum: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(sum, 63 * 64 / 2);
}

/// A goroutine that spins for 50 ms without calling goro: sysmon takes its P.
fn hog(_round: u64) {
    let t = Instant::now();
    let mut x = 0u64;
    while t.elapsed() < Duration::from_millis(50) {
        x = std::hint::black_box(x.wrapping_add(1));
    }
    assert!(x > 0);
}

fn wait_for_goroutines(baseline: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while goro::runtime::num_goroutine() > baseline {
        assert!(
            Instant::now() < deadline,
            "{} goroutines left over (baseline {baseline})",
            goro::runtime::num_goroutine()
        );
        std::thread::yield_now();
    }
}

fn status_field(name: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /proc/self/status"))
}

fn rss_kib() -> usize {
    status_field("VmRSS:")
}

fn threads() -> usize {
    status_field("Threads:")
}

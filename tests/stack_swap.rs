//! Idle stacks swapped out (`Config::swap_idle_after`): goroutines parked
//! past the threshold (sleeping, in channel, `select!`, `sync` and socket
//! waits) give their stack pages back, come back with every byte of their
//! frames and of the values handed to them and their goroutine-local values,
//! show their frames in a dump and their swaps in the trace, report a later
//! stack overflow by name, and a thread that touches a swapped-out stack
//! stops the process instead of losing its writes. Its own binary: the
//! threshold is a start-up setting and RSS is per process.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const GS: usize = 20_000;
const THRESHOLD: Duration = Duration::from_millis(50);
/// How long the crowd sleeps: far past the threshold and the sweeps it takes
/// to swap 20,000 stacks out (a few ms), so every one is out before any wakes.
const NAP: Duration = Duration::from_secs(4);

/// The tests count swaps and RSS of the whole process: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn init() -> std::sync::MutexGuard<'static, ()> {
    let one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let _ = goro::runtime::Config::new()
        .procs(2)
        .swap_idle_after(Some(THRESHOLD))
        .init();
    one
}

/// Fills frames with values made from `seed`, sleeps until `wake`, and checks
/// every value after the sleep; returns their sum.
#[inline(never)]
fn sleeps_with_locals(seed: u64, wake: Instant, depth: u32) -> u64 {
    let mut locals = [0u64; 48];
    for (i, v) in locals.iter_mut().enumerate() {
        *v = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(i as u64);
    }
    let locals = std::hint::black_box(locals);
    let below = if depth > 0 {
        sleeps_with_locals(seed ^ 0xff, wake, depth - 1)
    } else {
        goro::time::sleep(wake.saturating_duration_since(Instant::now()));
        0
    };
    for (i, v) in locals.iter().enumerate() {
        assert_eq!(
            *v,
            seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(i as u64),
            "local {i} of goroutine {seed}"
        );
    }
    locals.iter().fold(below, |a, v| a.wrapping_add(*v))
}

#[test]
fn sleeping_goroutines_swap_out_and_wake_with_every_byte() {
    let _one = init();
    let _w = common::watchdog(Duration::from_secs(120));
    let before = goro::runtime::stats();
    let rss_before = common::rss_kib();
    let wake = Instant::now() + NAP;
    let hs: Vec<_> = (0..GS as u64)
        .map(|i| goro::go!(move || sleeps_with_locals(i, wake, 2)))
        .collect();
    // Every stack out (the sweep runs every few ms once they are due).
    loop {
        let out = goro::runtime::stats().stacks_swapped_out - before.stacks_swapped_out;
        if out >= GS as u64 {
            break;
        }
        assert!(
            Instant::now() < wake,
            "only {out} of {GS} stacks were swapped out before the goroutines woke"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let rss_out = common::rss_kib();
    let st = goro::runtime::stats();
    let held = st.swapped_bytes / GS as u64;
    let per_g = (rss_out.saturating_sub(rss_before) * 1024) / GS;
    println!("swapped out: {} B per G on the heap, {per_g} B of RSS per G", held);
    // Debug builds' frames are several times larger than release builds'
    // (docs/BENCHMARKS.md has the release figures); the stack pages are gone
    // either way.
    assert!(held < 16 << 10, "{held} B kept per stack");
    assert!(
        per_g < held as usize + 4096,
        "{per_g} B of RSS per swapped-out goroutine ({held} B of it its stack's copy)"
    );

    // A dump shows a swapped-out goroutine's frames.
    let mut dump = Vec::new();
    goro::runtime::write_goroutines(&mut dump).unwrap();
    let dump = String::from_utf8_lossy(&dump);
    assert!(dump.contains("sleeps_with_locals"), "{}", &dump[..dump.len().min(4000)]);

    let expect: u64 = (0..GS as u64)
        .map(|i| {
            (0..3).fold(0u64, |acc, d| {
                let seed = if d % 2 == 1 { i ^ 0xff } else { i };
                (0..48u64).fold(acc, |a, k| {
                    a.wrapping_add(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(k))
                })
            })
        })
        .fold(0u64, u64::wrapping_add);
    let got = hs.into_iter().map(|h| h.join().unwrap()).fold(0u64, u64::wrapping_add);
    assert_eq!(got, expect);
    let after = goro::runtime::stats();
    assert!(after.stacks_swapped_in - before.stacks_swapped_in >= GS as u64);
}

#[test]
fn a_thread_writing_a_swapped_out_stack_stops_the_process() {
    if common::is_child() {
        let _one = init();
        let cell_addr = Arc::new(AtomicU64::new(0));
        let shared = cell_addr.clone();
        let h = goro::go!(move || {
            let local = AtomicU64::new(7);
            shared.store(&local as *const AtomicU64 as u64, Ordering::Release);
            goro::time::sleep(Duration::from_millis(1500));
            local.load(Ordering::Relaxed)
        });
        while goro::runtime::stats().stacks_swapped_out == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
        let addr = cell_addr.load(Ordering::Acquire);
        // SAFETY: the goroutine lives, parked, with its local on its stack (its
        // address stays mapped); writing it behind the goroutine's back is the
        // misuse under test.
        unsafe { (*(addr as *const AtomicU64)).store(8, Ordering::Relaxed) };
        let v = h.join().unwrap();
        println!("the goroutine read {v}");
        return;
    }
    let out = common::run_child("a_thread_writing_a_swapped_out_stack_stops_the_process", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("stack was touched by another thread while it was swapped out"),
        "{stderr}"
    );
}

fn payload(i: usize) -> [u8; 100] {
    std::array::from_fn(|k| (i.wrapping_mul(31) ^ k.wrapping_mul(7)) as u8)
}

/// Waits until `n` more stacks than `since` were swapped out.
fn until_swapped_out(since: u64, n: usize) {
    while goro::runtime::stats().stacks_swapped_out - since < n as u64 {
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn values_reach_swapped_out_receivers_and_leave_swapped_out_senders_whole() {
    let _one = init();
    let _w = common::watchdog(Duration::from_secs(300));
    // Release builds take the whole crowd; debug builds' frames are larger.
    let receivers = if cfg!(debug_assertions) { 20_000 } else { 100_000 };
    let senders = receivers / 10;
    let since = goro::runtime::stats().stacks_swapped_out;
    // Receivers wait with `recv` (their claim on their stack) and with
    // `recv_timeout` (a claim shared with a timer), each on its own channel.
    let rx_side: Vec<_> = (0..receivers)
        .map(|i| {
            let (tx, rx) = goro::chan::bounded::<[u8; 100]>(0);
            let h = goro::go!(move || {
                let got = if i % 2 == 0 {
                    rx.recv().unwrap()
                } else {
                    rx.recv_timeout(Duration::from_secs(600)).unwrap()
                };
                assert_eq!(got, payload(i), "receiver {i}");
            });
            (tx, h)
        })
        .collect();
    // Senders wait with their value in their sudog.
    let tx_side: Vec<_> = (0..senders)
        .map(|i| {
            let (tx, rx) = goro::chan::bounded::<[u8; 100]>(0);
            let h = goro::go!(move || tx.send(payload(i)).unwrap());
            (rx, h)
        })
        .collect();
    until_swapped_out(since, receivers + senders);
    for (i, (tx, h)) in rx_side.into_iter().enumerate() {
        tx.send(payload(i)).unwrap();
        h.join().unwrap();
    }
    for (i, (rx, h)) in tx_side.into_iter().enumerate() {
        assert_eq!(rx.recv().unwrap(), payload(i), "sender {i}");
        h.join().unwrap();
    }
}

/// Which arm of its `select!` a swapped-out goroutine ran, and what it got.
#[derive(Debug, PartialEq)]
enum Arm {
    Received([u8; 100]),
    Sent,
    Quit,
}

#[test]
fn swapped_out_selects_run_exactly_the_arm_that_won_with_every_byte() {
    let _one = init();
    let _w = common::watchdog(Duration::from_secs(300));
    let gs = if cfg!(debug_assertions) { 9_000 } else { 60_000 };
    let since = goro::runtime::stats().stacks_swapped_out;
    // Every goroutine selects over its own channel in, its own channel out
    // (offering its payload) and one quit channel that all of them queue on.
    let (quit_tx, quit_rx) = goro::chan::bounded::<()>(0);
    let crowd: Vec<_> = (0..gs)
        .map(|i| {
            let (in_tx, in_rx) = goro::chan::bounded::<[u8; 100]>(0);
            let (out_tx, out_rx) = goro::chan::bounded::<[u8; 100]>(0);
            let quit = quit_rx.clone();
            let h = goro::go!(move || {
                let mine = std::hint::black_box(payload(i ^ 0x5a5a));
                let arm = goro::select! {
                    recv(in_rx) -> v => Arm::Received(v.unwrap()),
                    send(out_tx, payload(i)) -> r => { r.unwrap(); Arm::Sent },
                    recv(quit) -> v => { assert!(v.is_err()); Arm::Quit },
                };
                assert_eq!(mine, payload(i ^ 0x5a5a), "a local of goroutine {i}");
                arm
            });
            (in_tx, out_rx, h)
        })
        .collect();
    until_swapped_out(since, gs);
    // A third get a value, a third have their offer taken, a third are
    // ended by the quit channel's close (a broadcast over the queue).
    let mut left = Vec::new();
    for (i, (in_tx, out_rx, h)) in crowd.into_iter().enumerate() {
        match i % 3 {
            0 => {
                in_tx.send(payload(i)).unwrap();
                assert_eq!(h.join().unwrap(), Arm::Received(payload(i)), "goroutine {i}");
            }
            1 => {
                assert_eq!(out_rx.recv().unwrap(), payload(i), "goroutine {i}'s offer");
                assert_eq!(h.join().unwrap(), Arm::Sent, "goroutine {i}");
            }
            _ => left.push((i, in_tx, out_rx, h)),
        }
    }
    drop(quit_tx);
    for (i, in_tx, out_rx, h) in left {
        assert_eq!(h.join().unwrap(), Arm::Quit, "goroutine {i}");
        // Its other arms left their channels: nobody waits there any more.
        assert!(in_tx.try_send(payload(i)).is_err() && out_rx.try_recv().is_err());
    }
}

#[test]
fn a_swapped_out_recv_timeout_still_times_out_and_sync_waiters_wake() {
    let _one = init();
    let _w = common::watchdog(Duration::from_secs(120));
    let since = goro::runtime::stats().stacks_swapped_out;
    let (_tx, rx) = goro::chan::bounded::<u8>(0);
    let timed = goro::go!(move || rx.recv_timeout(Duration::from_millis(1500)));
    let m = Arc::new(goro::sync::Mutex::new(0u32));
    let held = m.lock();
    let waiters: Vec<_> = (0..8)
        .map(|_| {
            let m = m.clone();
            goro::go!(move || *m.lock() += 1)
        })
        .collect();
    until_swapped_out(since, 9);
    drop(held);
    waiters.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(*m.lock(), 8);
    assert!(timed.join().unwrap().is_err(), "the timeout ended the wait");
}

#[test]
fn swapped_out_socket_readers_read_every_byte_and_time_out() {
    use std::io::{Read, Write};
    let _one = init();
    let _w = common::watchdog(Duration::from_secs(120));
    const CONNS: usize = 200;
    let listener = goro::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let since = goro::runtime::stats().stacks_swapped_out;
    // Server goroutines read 100 bytes each, parked in the poller meanwhile.
    let server = goro::go!(move || {
        (0..CONNS)
            .map(|_| {
                let (mut s, _) = listener.accept().unwrap();
                goro::go!(move || {
                    let mut first = [0u8; 1];
                    s.read_exact(&mut first).unwrap();
                    let i = first[0] as usize;
                    let mut rest = [0u8; 100];
                    s.read_exact(&mut rest).unwrap();
                    assert_eq!(rest, payload(i), "connection {i}");
                })
            })
            .collect::<Vec<_>>()
    });
    let mut clients: Vec<_> = (0..CONNS)
        .map(|i| {
            let mut c = goro::net::TcpStream::connect(addr).unwrap();
            c.write_all(&[i as u8]).unwrap();
            c
        })
        .collect();
    let readers = server.join().unwrap();
    // A reader with a deadline that passes while it is swapped out.
    let (mut idle, _client) = {
        let l = goro::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        (l.accept().unwrap().0, c)
    };
    let timed = goro::go!(move || {
        idle.set_read_timeout(Some(Duration::from_millis(1500))).unwrap();
        idle.read(&mut [0u8; 1]).map_err(|e| e.kind())
    });
    until_swapped_out(since, CONNS + 1);
    for (i, c) in clients.iter_mut().enumerate() {
        c.write_all(&payload(i)).unwrap();
    }
    readers.into_iter().for_each(|h| h.join().unwrap());
    assert!(
        matches!(
            timed.join().unwrap(),
            Err(std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock)
        ),
        "the deadline ended the read"
    );
}

#[test]
fn a_dump_brings_swapped_out_waiters_in_and_puts_them_back_out() {
    let _one = init();
    let _w = common::watchdog(Duration::from_secs(120));
    let since = goro::runtime::stats().stacks_swapped_out;
    let (tx, rx) = goro::chan::bounded::<u32>(0);
    let m = Arc::new(goro::sync::Mutex::new(()));
    let held = m.lock();
    let mut hs: Vec<_> = (0..100)
        .map(|_| {
            let rx = rx.clone();
            goro::go!(move || {
                let _ = rx.recv();
            })
        })
        .collect();
    hs.extend((0..100).map(|_| {
        let m = m.clone();
        goro::go!(move || drop(m.lock()))
    }));
    until_swapped_out(since, 200);
    let before = goro::runtime::stats();
    let mut dump = Vec::new();
    goro::runtime::write_goroutines(&mut dump).unwrap();
    let after = goro::runtime::stats();
    assert_eq!(
        after.stacks_swapped_in - before.stacks_swapped_in,
        after.stacks_swapped_out - before.stacks_swapped_out,
        "each one brought in for the dump went back out"
    );
    assert!(after.stacks_swapped_in - before.stacks_swapped_in >= 200);
    assert_eq!(after.swapped_bytes, before.swapped_bytes);
    drop(tx);
    drop(held);
    hs.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(goro::runtime::stats().swapped_bytes, 0, "nothing held once all woke");
}

#[test]
fn a_goroutine_woken_within_the_threshold_is_never_swapped_out() {
    let _one = init();
    let _w = common::watchdog(Duration::from_secs(120));
    let since = goro::runtime::stats().stacks_swapped_out;
    // Parks of a tenth of the threshold, some right after the runtime idled
    // (the coarse clock's stamp must be fresh then too).
    goro::go!(|| {
        for _ in 0..40 {
            goro::time::sleep(THRESHOLD / 10);
        }
    })
    .join()
    .unwrap();
    assert_eq!(goro::runtime::stats().stacks_swapped_out - since, 0);
}

/// Dumps taken while the sweep pins goroutines to swap them out list every
/// goroutine with its frames (a dump waits out the sweep's pin).
#[inline(never)]
fn parked_for_the_dump(rx: goro::chan::Receiver<u8>) {
    let _ = rx.recv();
}

#[test]
fn dumps_racing_the_sweep_show_every_goroutine_s_frames() {
    let _one = init();
    let _w = common::watchdog(Duration::from_secs(120));
    let (tx, rx) = goro::chan::bounded::<u8>(0);
    let hs: Vec<_> = (0..2000)
        .map(|_| {
            let rx = rx.clone();
            goro::go!(move || parked_for_the_dump(rx))
        })
        .collect();
    let since = goro::runtime::stats().stacks_swapped_out;
    while goro::runtime::stats().stacks_swapped_out - since < 2000 {
        let mut text = Vec::new();
        goro::runtime::write_goroutines(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        // Goroutine entries are separated by blank lines (Go's format).
        let bare: Vec<&str> = text
            .split("\n\n")
            .filter(|e| e.contains("[chan receive") && !e.contains("parked_for_the_dump"))
            .collect();
        assert!(
            bare.is_empty(),
            "parked goroutines without frames: {:?}",
            &bare[..bare.len().min(2)]
        );
    }
    drop(tx);
    hs.into_iter().for_each(|h| h.join().unwrap());
}

/// A trace written into memory.
#[derive(Clone, Default)]
struct TraceBuf(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for TraceBuf {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_trace_shows_each_swap_out_and_swap_in_with_its_size() {
    let _one = init();
    let _w = common::watchdog(Duration::from_secs(120));
    const N: usize = 300;
    let buf = TraceBuf::default();
    goro::runtime::trace::start(buf.clone()).expect("start");
    let since = goro::runtime::stats().stacks_swapped_out;
    let (tx, rx) = goro::chan::bounded::<()>(0);
    let hs: Vec<_> = (0..N)
        .map(|_| {
            let rx = rx.clone();
            goro::go!(move || assert!(rx.recv().is_err()))
        })
        .collect();
    until_swapped_out(since, N);
    drop(tx);
    hs.into_iter().for_each(|h| h.join().unwrap());
    goro::runtime::trace::stop().expect("stop");
    let events: Vec<serde_json::Value> = serde_json::from_slice(&buf.0.lock().unwrap()).expect("a JSON array");
    let sizes = |name: &str| -> std::collections::HashMap<u64, u64> {
        events
            .iter()
            .filter(|e| e["ph"] == "i" && e["name"] == name)
            .map(|e| (e["args"]["g"].as_u64().unwrap(), e["args"]["bytes"].as_u64().unwrap()))
            .collect()
    };
    let (out, back) = (sizes("swap out"), sizes("swap in"));
    assert!(
        out.len() >= N,
        "{} swap-out instants for {N} swapped-out goroutines",
        out.len()
    );
    for (g, bytes) in &out {
        assert!(*bytes > 0 && *bytes < 64 << 10, "G{g} kept {bytes} B");
        assert_eq!(
            back.get(g),
            Some(bytes),
            "G{g}'s swap-in names the bytes its swap-out kept"
        );
    }
}

goro::local! {
    static WHO: std::cell::RefCell<String> = std::cell::RefCell::new(String::new());
}

#[inline(never)]
fn recurse(n: u64) -> u64 {
    let buf = std::hint::black_box([n as u8; 256]);
    if std::hint::black_box(n) == u64::MAX {
        return 0;
    }
    recurse(n + 1) + u64::from(std::hint::black_box(buf[3]))
}

/// A goroutine back from being swapped out keeps its goroutine-local values,
/// and running off its stack afterwards is reported as an overflow naming it.
#[test]
fn locals_and_overflow_reports_work_after_a_swap_out() {
    if common::is_child() {
        let _one = init();
        let since = goro::runtime::stats().stacks_swapped_out;
        let (go_on, wait) = goro::chan::bounded::<()>(0);
        let h = goro::go!(goro::Builder::new().name("swapped-deep"), move || {
            WHO.with_borrow_mut(|w| w.push_str("set before the swap"));
            wait.recv().unwrap();
            assert_eq!(WHO.with_borrow(|w| w.clone()), "set before the swap");
            println!("LOCAL-OK");
            recurse(0)
        })
        .expect("spawn");
        println!("CHILD-ID {}", h.id());
        until_swapped_out(since, 1);
        go_on.send(()).unwrap();
        let _ = h.join();
        unreachable!("the overflow must abort the process");
    }
    let out = common::run_child("locals_and_overflow_reports_work_after_a_swap_out", &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("LOCAL-OK"), "the local was lost:\n{stdout}\n{stderr}");
    let id = stdout
        .split("CHILD-ID ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("child printed the G id");
    let want = format!("goroutine {id} \"swapped-deep\" stack overflow");
    assert!(stderr.contains(&want), "stderr lacks {want:?}:\n{stderr}");
}

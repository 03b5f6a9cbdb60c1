//! may side of the comparison: stackful coroutines, `may::config().set_workers(GOMAXPROCS)`,
//! worker pinning off (goro, Go and Tokio do not pin by default either), default
//! coroutine stack (0x1000 words = 32 KiB). The driver is itself a coroutine.
//!
//! `echo_server` (a server for the shared load generator `echo_client`, see
//! lib.rs): a coroutine binds `may::net::TcpListener`, the main thread announces
//! the port, then an accept-loop coroutine spawns one coroutine per connection.

use std::hint::black_box;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use compare::*;
use may::sync::{mpmc, mpsc};

const IMPL: &str = "may";

fn main() {
    let args = parse_args(IMPL);
    if args.workload == "echo_server" {
        may::config().set_workers(procs_from_env()).set_worker_pin(false);
        echo_server(args.port);
    }
    let f: fn(u64) -> Measure = match args.workload.as_str() {
        "spawn_join" => spawn_join,
        "yield" => yield_pingpong,
        "imbalanced" => imbalanced,
        "parked_rss" => parked_rss,
        "work_unit" => work_unit,
        "pingpong" => pingpong,
        "buffered" => buffered,
        "skynet" => skynet,
        "mutex_uncontended" => mutex_uncontended,
        "mutex_contended" => mutex_contended,
        "sleepers_wall" => |n| sleepers(n).wall(),
        "sleepers_cpu" => |n| sleepers(n).cpu(),
        "hog_latency" => hog_latency,
        other => unknown_workload(IMPL, other),
    };
    let procs = procs_from_env();
    may::config().set_workers(procs).set_worker_pin(false);
    let n = args.n;
    let m = match go(move || f(n)).join() {
        Ok(m) => m,
        Err(p) => fail(&explain(format!("driver coroutine panicked: {}", panic_message(&*p)))),
    };
    emit_and_exit(&args.workload, IMPL, may::config().get_workers(), m)
}

/// Adds the likely cause to a panic message about a failed stack allocation.
fn explain(mut msg: String) -> String {
    if msg.contains("alloc sys stack") {
        // Each may stack is its own mmap plus a guard page (two mappings).
        let max = std::fs::read_to_string("/proc/sys/vm/max_map_count").unwrap_or_default();
        msg += &format!(
            " [each may stack is an mmap + guard page; vm.max_map_count={}]",
            max.trim()
        );
    }
    msg
}

/// may's spawn is unsafe (TLS access and stack overflow are UB in a coroutine);
/// none of the closures here touch TLS or use deep stacks.
fn go<F, T>(f: F) -> may::coroutine::JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    unsafe { may::coroutine::spawn(f) }
}

/// Spawn n trivial coroutines, then join each.
fn spawn_join(n: u64) -> Measure {
    let mut hs = Vec::with_capacity(n as usize);
    let t = Instant::now();
    for _ in 0..n {
        hs.push(go(|| ()));
    }
    for h in hs {
        if h.join().is_err() {
            fail("a trivial coroutine panicked");
        }
    }
    ns_per_op(t.elapsed(), n)
}

/// Two coroutines each yield n times.
fn yield_pingpong(n: u64) -> Measure {
    let t = Instant::now();
    let hs: Vec<_> = (0..2)
        .map(|_| {
            go(move || {
                for _ in 0..n {
                    may::coroutine::yield_now();
                }
            })
        })
        .collect();
    for h in hs {
        if h.join().is_err() {
            fail("a yielding coroutine panicked");
        }
    }
    ns_per_op(t.elapsed(), 2 * n)
}

/// n CPU-bound coroutines spawned from this one (may does not preempt).
fn imbalanced(n: u64) -> Measure {
    let t = Instant::now();
    let hs: Vec<_> = (0..n).map(|_| go(|| work(WORK_ITERS))).collect();
    let mut sink = 0u64;
    for h in hs {
        match h.join() {
            Ok(s) => sink ^= s,
            Err(_) => fail("a CPU-bound coroutine panicked"),
        }
    }
    black_box(sink);
    (t.elapsed().as_secs_f64(), "s")
}

static STARTED: AtomicU64 = AtomicU64::new(0);

/// n coroutines each sleeping 10 s: RSS growth per parked coroutine.
fn parked_rss(n: u64) -> Measure {
    let before = vm_rss_kib();
    for _ in 0..n {
        // Dropping the JoinHandle detaches the coroutine.
        drop(go(|| {
            STARTED.fetch_add(1, Ordering::Relaxed);
            may::coroutine::sleep(PARK_FOR);
        }));
    }
    let t = Instant::now();
    while STARTED.load(Ordering::Relaxed) < n {
        if t.elapsed() > START_DEADLINE {
            fail(&format!(
                "only {}/{n} coroutines started after {START_DEADLINE:?}",
                STARTED.load(Ordering::Relaxed)
            ));
        }
        may::coroutine::sleep(Duration::from_millis(1));
    }
    kib_per_task(before, vm_rss_kib(), n)
}

/// Milliseconds of one imbalanced task's work, run n times in this coroutine.
fn work_unit(n: u64) -> Measure {
    let t = Instant::now();
    for _ in 0..n {
        black_box(work(black_box(WORK_ITERS)));
    }
    (t.elapsed().as_secs_f64() * 1e3 / n as f64, "ms")
}

/// Two coroutines, two `may::sync::mpsc::channel()`: may has no bounded or
/// rendezvous channel (no sync_channel), so these are unbounded; A sends i on
/// `ping` and waits for it back on `pong`, B echoes; n round trips.
fn pingpong(n: u64) -> Measure {
    let (ping_tx, ping_rx) = mpsc::channel::<u64>();
    let (pong_tx, pong_rx) = mpsc::channel::<u64>();
    let t = Instant::now();
    let a = go(move || {
        for i in 0..n {
            ping_tx.send(i).unwrap_or_else(|_| fail("pingpong: ping send failed"));
            match pong_rx.recv() {
                Ok(v) if v == i => {}
                other => fail(&format!("pingpong: expected Ok({i}) back, got {other:?}")),
            }
        }
    });
    let b = go(move || {
        for _ in 0..n {
            let v = ping_rx.recv().unwrap_or_else(|_| fail("pingpong: ping recv failed"));
            pong_tx.send(v).unwrap_or_else(|_| fail("pingpong: pong send failed"));
        }
    });
    for h in [a, b] {
        if h.join().is_err() {
            fail("a pingpong coroutine panicked");
        }
    }
    ns_per_op(t.elapsed(), n)
}

/// `may::sync::mpmc::channel()` (MPMC but unbounded: may has no bounded
/// channel, so producers never wait), 4 producer coroutines (n/4 values each)
/// and 4 consumer coroutines that receive until the last Sender is dropped.
fn buffered(n: u64) -> Measure {
    let (tx, rx) = mpmc::channel::<u64>();
    let t = Instant::now();
    let consumers: Vec<_> = (0..BUFFERED_CONSUMERS)
        .map(|_| {
            let rx = rx.clone();
            go(move || {
                let (mut count, mut sum) = (0u64, 0u64);
                while let Ok(v) = rx.recv() {
                    count += 1;
                    sum += v;
                }
                (count, sum)
            })
        })
        .collect();
    drop(rx);
    let producers: Vec<_> = (0..BUFFERED_PRODUCERS)
        .map(|p| {
            let tx = tx.clone();
            let k = share(n, BUFFERED_PRODUCERS, p);
            go(move || {
                for i in 0..k {
                    tx.send(i).unwrap_or_else(|_| fail("buffered: send failed"));
                }
            })
        })
        .collect();
    drop(tx);
    for h in producers {
        if h.join().is_err() {
            fail("a buffered producer coroutine panicked");
        }
    }
    let (mut count, mut sum) = (0, 0);
    for h in consumers {
        match h.join() {
            Ok((c, s)) => {
                count += c;
                sum += s;
            }
            Err(_) => fail("a buffered consumer coroutine panicked"),
        }
    }
    let d = t.elapsed();
    buffered_check(n, count, sum);
    msgs_per_sec(d, n)
}

/// One skynet node: a leaf sends its index; an inner node makes a
/// `may::sync::mpsc::channel()` (unbounded; with 10 senders of one value each
/// it never holds more than a cap-10 channel would), spawns 10 children on it,
/// sums their 10 answers and sends the sum up. A failed spawn (may allocates
/// the child's stack in `spawn`) ends the process with the reason, instead of
/// leaving the parent waiting forever.
fn skynet_node(up: mpsc::Sender<u64>, num: u64, size: u64) {
    let v = if size == 1 {
        num
    } else {
        let (tx, rx) = mpsc::channel::<u64>();
        let sub = size / SKYNET_FANOUT;
        for i in 0..SKYNET_FANOUT {
            let tx = tx.clone();
            let spawned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                go(move || skynet_node(tx, num + i * sub, sub))
            }));
            match spawned {
                Ok(h) => drop(h),
                Err(p) => fail(&explain(format!("skynet: spawn panicked: {}", panic_message(&*p)))),
            }
        }
        drop(tx);
        let mut sum = 0;
        for _ in 0..SKYNET_FANOUT {
            sum += rx.recv().unwrap_or_else(|_| fail("skynet: recv failed"));
        }
        sum
    };
    up.send(v).unwrap_or_else(|_| fail("skynet: send failed"));
}

/// skynet with n leaves; wall seconds until the root's sum is received here.
fn skynet(n: u64) -> Measure {
    skynet_check_n(n);
    let (tx, rx) = mpsc::channel::<u64>();
    let t = Instant::now();
    drop(go(move || skynet_node(tx, 0, n)));
    let sum = rx.recv().unwrap_or_else(|_| fail("skynet: root recv failed"));
    let d = t.elapsed();
    skynet_check_sum(n, sum);
    (d.as_secs_f64(), "s")
}

/// This coroutine locks, increments and unlocks a `may::sync::Mutex` n times.
fn mutex_uncontended(n: u64) -> Measure {
    let m = may::sync::Mutex::new(0u64);
    let t = Instant::now();
    for _ in 0..n {
        *m.lock().unwrap() += 1;
    }
    let d = t.elapsed();
    mutex_check(n, *m.lock().unwrap());
    ns_per_op(d, n)
}

/// 4 coroutines each lock, increment and unlock one `may::sync::Mutex` n/4 times.
fn mutex_contended(n: u64) -> Measure {
    let m = Arc::new(may::sync::Mutex::new(0u64));
    let t = Instant::now();
    let hs: Vec<_> = (0..MUTEX_TASKS)
        .map(|i| {
            let m = m.clone();
            let k = share(n, MUTEX_TASKS, i);
            go(move || {
                for _ in 0..k {
                    *m.lock().unwrap() += 1;
                }
            })
        })
        .collect();
    for h in hs {
        if h.join().is_err() {
            fail("a mutex coroutine panicked");
        }
    }
    let d = t.elapsed();
    mutex_check(n, *m.lock().unwrap());
    ns_per_op(d, n)
}

/// n coroutines each sleep 10 times 1..=50 ms (next_sleep_ms); this one joins them all.
fn sleepers(n: u64) -> SleepersTimes {
    let cpu = process_cpu_time();
    let t = Instant::now();
    let hs: Vec<_> = (0..n)
        .map(|i| {
            go(move || {
                let mut s = i;
                for _ in 0..SLEEPS_PER_TASK {
                    may::coroutine::sleep(Duration::from_millis(next_sleep_ms(&mut s)));
                }
            })
        })
        .collect();
    for h in hs {
        if h.join().is_err() {
            fail("a sleeping coroutine panicked");
        }
    }
    SleepersTimes {
        wall: t.elapsed(),
        cpu: process_cpu_time() - cpu,
    }
}

/// `hog_latency`'s ticker: sleeps HOG_TICK and records how late it woke up,
/// until the hog is done.
fn hog_ticker(st: Arc<HogState>) -> Vec<Tick> {
    let mut ticks = Vec::new();
    while !st.done.load(Ordering::Acquire) {
        let t = Instant::now();
        may::coroutine::sleep(HOG_TICK);
        ticks.push(Tick::ended_now(t));
        st.ticks.fetch_add(1, Ordering::Release);
    }
    ticks
}

/// A ticker coroutine sleeping 5 ms in a loop, then (once it ticks steadily) a
/// hog coroutine spinning n ms without a yield: p99 lateness of the ticks taken
/// meanwhile. may cannot preempt the hog, so with one worker the ticker runs
/// again only when the hog has finished.
fn hog_latency(n: u64) -> Measure {
    let st = Arc::new(HogState::default());
    let ticker = {
        let st = st.clone();
        go(move || hog_ticker(st))
    };
    let t = Instant::now();
    while st.ticks.load(Ordering::Acquire) < HOG_WARMUP_TICKS {
        if t.elapsed() > HOG_WARMUP_DEADLINE {
            fail(&format!(
                "hog_latency: the ticker did {} sleeps in {HOG_WARMUP_DEADLINE:?}",
                st.ticks.load(Ordering::Acquire)
            ));
        }
        may::coroutine::sleep(Duration::from_millis(1));
    }
    let hog = {
        let st = st.clone();
        go(move || {
            let span = hog_spin(Duration::from_millis(n));
            st.done.store(true, Ordering::Release);
            span
        })
    };
    let span = hog.join().unwrap_or_else(|_| fail("the hog coroutine panicked"));
    let ticks = ticker.join().unwrap_or_else(|_| fail("the ticker coroutine panicked"));
    hog_p99(&ticks, span)
}

/// `echo_server`: binds 127.0.0.1:port in a coroutine, announces the port from
/// this (main) thread, then accepts forever in a coroutine; one coroutine per
/// connection. Never returns (the script kills it).
fn echo_server(port: u16) -> ! {
    let l = match go(move || may::net::TcpListener::bind(("127.0.0.1", port))).join() {
        Ok(Ok(l)) => l,
        Ok(Err(e)) => fail(&format!("echo_server: bind 127.0.0.1:{port}: {e}")),
        Err(p) => fail(&format!("echo_server: bind coroutine panicked: {}", panic_message(&*p))),
    };
    let port = l
        .local_addr()
        .unwrap_or_else(|e| fail(&format!("echo_server: local_addr: {e}")))
        .port();
    announce_listening(port);
    let accept = go(move || loop {
        match l.accept() {
            Ok((s, _)) => drop(go(move || echo_conn(s))),
            Err(e) => echo_error("accept", &e),
        }
    });
    if let Err(p) = accept.join() {
        fail(&format!(
            "echo_server: accept coroutine panicked: {}",
            panic_message(&*p)
        ));
    }
    fail("echo_server: accept loop ended")
}

/// Reads up to ECHO_BUF bytes and writes back exactly what was read, until EOF.
fn echo_conn(mut s: may::net::TcpStream) {
    if let Err(e) = s.set_nodelay(true) {
        echo_error("set_nodelay", &e);
    }
    let mut buf = vec![0u8; ECHO_BUF];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if let Err(e) = s.write_all(&buf[..n]) {
                    return echo_error("write", &e);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return echo_error("read", &e),
        }
    }
}

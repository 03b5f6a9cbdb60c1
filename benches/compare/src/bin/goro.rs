//! goro side of the comparison. Written against /work/shared/API.md only.
//! The driver runs inside a G (like Go's main goroutine); GOMAXPROCS comes from
//! the environment, which goro reads natively.
//!
//! `echo_server` (a server for the shared load generator `echo_client`, see
//! lib.rs): the accept loop runs in a G on `goro::net::TcpListener`, one `go!`
//! per connection, blocking-style `std::io::{Read, Write}` on `goro::net::TcpStream`.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use goro::chan::{Receiver, Sender};

use compare::*;

const IMPL: &str = "goro";

fn main() {
    let args = parse_args(IMPL);
    if args.workload == "echo_server" {
        let port = args.port;
        let why = match goro::go!(move || echo::echo_server(port)).join() {
            Ok(()) => "echo_server: accept loop ended".to_string(),
            Err(p) => format!("echo_server G panicked: {}", panic_message(&*p)),
        };
        fail(&why)
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
    let n = args.n;
    let m = match goro::go!(move || f(n)).join() {
        Ok(m) => m,
        Err(p) => fail(&format!("driver G panicked: {}", panic_message(&*p))),
    };
    emit_and_exit(&args.workload, IMPL, goro::runtime::gomaxprocs(), m)
}

/// Spawn n trivial Gs, then join each.
fn spawn_join(n: u64) -> Measure {
    let mut hs = Vec::with_capacity(n as usize);
    let t = Instant::now();
    for _ in 0..n {
        hs.push(goro::go!(|| ()));
    }
    for h in hs {
        if h.join().is_err() {
            fail("a trivial G panicked");
        }
    }
    ns_per_op(t.elapsed(), n)
}

/// Two Gs each yield n times.
fn yield_pingpong(n: u64) -> Measure {
    let t = Instant::now();
    let hs: Vec<_> = (0..2)
        .map(|_| {
            goro::go!(move || {
                for _ in 0..n {
                    goro::yield_now();
                }
            })
        })
        .collect();
    for h in hs {
        if h.join().is_err() {
            fail("a yielding G panicked");
        }
    }
    ns_per_op(t.elapsed(), 2 * n)
}

/// n CPU-bound Gs spawned from this one; wall seconds until all are joined.
fn imbalanced(n: u64) -> Measure {
    let t = Instant::now();
    let hs: Vec<_> = (0..n).map(|_| goro::go!(|| work(WORK_ITERS))).collect();
    let mut sink = 0u64;
    for h in hs {
        match h.join() {
            Ok(s) => sink ^= s,
            Err(_) => fail("a CPU-bound G panicked"),
        }
    }
    black_box(sink);
    (t.elapsed().as_secs_f64(), "s")
}

static STARTED: AtomicU64 = AtomicU64::new(0);

/// n Gs each sleeping 10 s: RSS growth per parked G.
fn parked_rss(n: u64) -> Measure {
    let before = vm_rss_kib();
    for _ in 0..n {
        // Dropping the handle detaches the G (no handle memory is counted).
        drop(goro::go!(|| {
            STARTED.fetch_add(1, Ordering::Relaxed);
            goro::time::sleep(PARK_FOR);
        }));
    }
    let t = Instant::now();
    while STARTED.load(Ordering::Relaxed) < n {
        if t.elapsed() > START_DEADLINE {
            fail(&format!(
                "only {}/{n} Gs started after {START_DEADLINE:?}",
                STARTED.load(Ordering::Relaxed)
            ));
        }
        goro::time::sleep(std::time::Duration::from_millis(1));
    }
    kib_per_task(before, vm_rss_kib(), n)
}

/// Milliseconds of one imbalanced task's work, run n times in this G.
fn work_unit(n: u64) -> Measure {
    let t = Instant::now();
    for _ in 0..n {
        black_box(work(black_box(WORK_ITERS)));
    }
    (t.elapsed().as_secs_f64() * 1e3 / n as f64, "ms")
}

/// Two Gs, two unbuffered channels: A sends i on `ping` and waits for it back on
/// `pong`, B echoes; n round trips.
fn pingpong(n: u64) -> Measure {
    let (ping_tx, ping_rx) = goro::chan::bounded::<u64>(0);
    let (pong_tx, pong_rx) = goro::chan::bounded::<u64>(0);
    let t = Instant::now();
    let a = goro::go!(move || {
        for i in 0..n {
            ping_tx.send(i).unwrap_or_else(|_| fail("pingpong: ping send failed"));
            match pong_rx.recv() {
                Ok(v) if v == i => {}
                other => fail(&format!("pingpong: expected Ok({i}) back, got {other:?}")),
            }
        }
    });
    let b = goro::go!(move || {
        for _ in 0..n {
            let v = ping_rx.recv().unwrap_or_else(|_| fail("pingpong: ping recv failed"));
            pong_tx.send(v).unwrap_or_else(|_| fail("pingpong: pong send failed"));
        }
    });
    for h in [a, b] {
        if h.join().is_err() {
            fail("a pingpong G panicked");
        }
    }
    ns_per_op(t.elapsed(), n)
}

/// cap-128 channel, 4 producer Gs (n/4 values each) and 4 consumer Gs that
/// receive until the channel is closed (when the last Sender is dropped).
fn buffered(n: u64) -> Measure {
    let (tx, rx) = goro::chan::bounded::<u64>(BUFFERED_CAP);
    let t = Instant::now();
    let consumers: Vec<_> = (0..BUFFERED_CONSUMERS)
        .map(|_| {
            let rx = rx.clone();
            goro::go!(move || {
                let (mut count, mut sum) = (0u64, 0u64);
                for v in rx.iter() {
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
            goro::go!(move || {
                for i in 0..k {
                    tx.send(i).unwrap_or_else(|_| fail("buffered: send failed"));
                }
            })
        })
        .collect();
    drop(tx);
    for h in producers {
        if h.join().is_err() {
            fail("a buffered producer G panicked");
        }
    }
    let (mut count, mut sum) = (0, 0);
    for h in consumers {
        match h.join() {
            Ok((c, s)) => {
                count += c;
                sum += s;
            }
            Err(_) => fail("a buffered consumer G panicked"),
        }
    }
    let d = t.elapsed();
    buffered_check(n, count, sum);
    msgs_per_sec(d, n)
}

/// One skynet node: a leaf sends its index; an inner node makes a cap-10 channel,
/// spawns 10 children on it, sums their 10 answers and sends the sum up.
fn skynet_node(up: Sender<u64>, num: u64, size: u64) {
    let v = if size == 1 {
        num
    } else {
        let (tx, rx): (Sender<u64>, Receiver<u64>) = goro::chan::bounded(SKYNET_FANOUT as usize);
        let sub = size / SKYNET_FANOUT;
        for i in 0..SKYNET_FANOUT {
            let tx = tx.clone();
            drop(goro::go!(move || skynet_node(tx, num + i * sub, sub)));
        }
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
    let (tx, rx) = goro::chan::bounded::<u64>(1);
    let t = Instant::now();
    drop(goro::go!(move || skynet_node(tx, 0, n)));
    let sum = rx.recv().unwrap_or_else(|_| fail("skynet: root recv failed"));
    let d = t.elapsed();
    skynet_check_sum(n, sum);
    (d.as_secs_f64(), "s")
}

/// This G locks, increments and unlocks a goro::sync::Mutex n times.
fn mutex_uncontended(n: u64) -> Measure {
    let m = goro::sync::Mutex::new(0u64);
    let t = Instant::now();
    for _ in 0..n {
        *m.lock() += 1;
    }
    let d = t.elapsed();
    mutex_check(n, *m.lock());
    ns_per_op(d, n)
}

/// 4 Gs each lock, increment and unlock one goro::sync::Mutex n/4 times.
fn mutex_contended(n: u64) -> Measure {
    let m = Arc::new(goro::sync::Mutex::new(0u64));
    let t = Instant::now();
    let hs: Vec<_> = (0..MUTEX_TASKS)
        .map(|i| {
            let m = m.clone();
            let k = share(n, MUTEX_TASKS, i);
            goro::go!(move || {
                for _ in 0..k {
                    *m.lock() += 1;
                }
            })
        })
        .collect();
    for h in hs {
        if h.join().is_err() {
            fail("a mutex G panicked");
        }
    }
    let d = t.elapsed();
    mutex_check(n, *m.lock());
    ns_per_op(d, n)
}

/// n Gs each sleep 10 times 1..=50 ms (next_sleep_ms); this G joins them all.
fn sleepers(n: u64) -> SleepersTimes {
    let cpu = process_cpu_time();
    let t = Instant::now();
    let hs: Vec<_> = (0..n)
        .map(|i| {
            goro::go!(move || {
                let mut s = i;
                for _ in 0..SLEEPS_PER_TASK {
                    goro::time::sleep(Duration::from_millis(next_sleep_ms(&mut s)));
                }
            })
        })
        .collect();
    for h in hs {
        if h.join().is_err() {
            fail("a sleeping G panicked");
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
        goro::time::sleep(HOG_TICK);
        ticks.push(Tick::ended_now(t));
        st.ticks.fetch_add(1, Ordering::Release);
    }
    ticks
}

/// A ticker G sleeping 5 ms in a loop, then (once it ticks steadily) a hog G
/// spinning n ms without a yield: p99 lateness of the ticks taken meanwhile.
/// goro's sysmon must retake the hog's P for the ticker to run at all.
fn hog_latency(n: u64) -> Measure {
    let st = Arc::new(HogState::default());
    let ticker = {
        let st = st.clone();
        goro::go!(move || hog_ticker(st))
    };
    let t = Instant::now();
    while st.ticks.load(Ordering::Acquire) < HOG_WARMUP_TICKS {
        if t.elapsed() > HOG_WARMUP_DEADLINE {
            fail(&format!(
                "hog_latency: the ticker did {} sleeps in {HOG_WARMUP_DEADLINE:?}",
                st.ticks.load(Ordering::Acquire)
            ));
        }
        goro::time::sleep(Duration::from_millis(1));
    }
    let hog = {
        let st = st.clone();
        goro::go!(move || {
            let span = hog_spin(Duration::from_millis(n));
            st.done.store(true, Ordering::Release);
            span
        })
    };
    let span = hog.join().unwrap_or_else(|_| fail("the hog G panicked"));
    let ticks = ticker.join().unwrap_or_else(|_| fail("the ticker G panicked"));
    hog_p99(&ticks, span)
}

/// `echo_server` on goro::net.
mod echo {
    use std::io::{Read, Write};

    use compare::*;

    /// Listens on 127.0.0.1:port, announces the port, then accepts forever;
    /// one G per connection. Returns only if the accept loop could (it cannot).
    pub fn echo_server(port: u16) {
        let l = goro::net::TcpListener::bind(("127.0.0.1", port))
            .unwrap_or_else(|e| fail(&format!("echo_server: bind 127.0.0.1:{port}: {e}")));
        let port = l
            .local_addr()
            .unwrap_or_else(|e| fail(&format!("echo_server: local_addr: {e}")))
            .port();
        announce_listening(port);
        loop {
            match l.accept() {
                Ok((s, _)) => drop(goro::go!(move || echo_conn(s))),
                Err(e) => echo_error("accept", &e),
            }
        }
    }

    /// Reads up to ECHO_BUF bytes and writes back exactly what was read, until EOF.
    fn echo_conn(mut s: goro::net::TcpStream) {
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
}

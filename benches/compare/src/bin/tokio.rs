//! Tokio side of the comparison.
//!
//! Runtime: GOMAXPROCS = 1 -> `current_thread` (one thread runs every task, as
//! Go with one P); GOMAXPROCS = P > 1 -> `multi_thread` with `worker_threads = P`.
//! Env TOKIO_FLAVOR=multi forces multi_thread even at P = 1 (TOKIO_FLAVOR=current
//! forces current_thread). The driver is itself a spawned task (like Go's main
//! goroutine, it runs on a worker, not on the block_on thread).
//!
//! `echo_server` (a server for the shared load generator `echo_client`, see
//! lib.rs): the accept loop is that driver task, one `tokio::spawn`ed task per
//! connection on `tokio::net`.

use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use compare::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

const IMPL: &str = "tokio";

type Driver = Pin<Box<dyn Future<Output = Measure> + Send>>;

fn main() {
    let args = parse_args(IMPL);
    let n = args.n;
    let driver: Driver = match args.workload.as_str() {
        "spawn_join" => Box::pin(spawn_join(n)),
        "yield" => Box::pin(yield_pingpong(n)),
        "imbalanced" => Box::pin(imbalanced(n)),
        "parked_rss" => Box::pin(parked_rss(n)),
        "work_unit" => Box::pin(work_unit(n)),
        "pingpong" => Box::pin(pingpong(n)),
        "buffered" => Box::pin(buffered(n)),
        "skynet" => Box::pin(skynet(n)),
        "mutex_uncontended" => Box::pin(mutex_uncontended(n)),
        "mutex_contended" => Box::pin(mutex_contended(n)),
        "sleepers_wall" => Box::pin(async move { sleepers(n).await.wall() }),
        "sleepers_cpu" => Box::pin(async move { sleepers(n).await.cpu() }),
        "hog_latency" => Box::pin(hog_latency(n)),
        "echo_server" => Box::pin(echo_server(args.port)),
        other => unknown_workload(IMPL, other),
    };

    let procs = procs_from_env();
    let current = tokio_current_thread(procs);
    let rt = if current {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(procs)
            .enable_all()
            .build()
    }
    .unwrap_or_else(|e| fail(&format!("tokio runtime: {e}")));
    let procs = if current { 1 } else { procs };

    let m = match rt.block_on(async { tokio::spawn(driver).await }) {
        Ok(m) => m,
        Err(e) => fail(&format!("driver task failed: {e}")),
    };
    emit_and_exit(&args.workload, IMPL, procs, m)
}

/// Spawn n trivial tasks, then await each handle.
async fn spawn_join(n: u64) -> Measure {
    let mut hs = Vec::with_capacity(n as usize);
    let t = Instant::now();
    for _ in 0..n {
        hs.push(tokio::spawn(async {}));
    }
    for h in hs {
        if h.await.is_err() {
            fail("a trivial task failed");
        }
    }
    ns_per_op(t.elapsed(), n)
}

/// Two tasks each yield n times.
async fn yield_pingpong(n: u64) -> Measure {
    let t = Instant::now();
    let hs: Vec<_> = (0..2)
        .map(|_| {
            tokio::spawn(async move {
                for _ in 0..n {
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    for h in hs {
        if h.await.is_err() {
            fail("a yielding task failed");
        }
    }
    ns_per_op(t.elapsed(), 2 * n)
}

/// n CPU-bound tasks (no .await inside: tokio cannot preempt them, as may).
async fn imbalanced(n: u64) -> Measure {
    let t = Instant::now();
    let hs: Vec<_> = (0..n).map(|_| tokio::spawn(async { work(WORK_ITERS) })).collect();
    let mut sink = 0u64;
    for h in hs {
        match h.await {
            Ok(s) => sink ^= s,
            Err(e) => fail(&format!("a CPU-bound task failed: {e}")),
        }
    }
    black_box(sink);
    (t.elapsed().as_secs_f64(), "s")
}

static STARTED: AtomicU64 = AtomicU64::new(0);

/// n tasks each sleeping 10 s: RSS growth per parked task.
async fn parked_rss(n: u64) -> Measure {
    let before = vm_rss_kib();
    for _ in 0..n {
        // Dropping the JoinHandle detaches the task.
        drop(tokio::spawn(async {
            STARTED.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(PARK_FOR).await;
        }));
    }
    let t = Instant::now();
    while STARTED.load(Ordering::Relaxed) < n {
        if t.elapsed() > START_DEADLINE {
            fail(&format!(
                "only {}/{n} tasks started after {START_DEADLINE:?}",
                STARTED.load(Ordering::Relaxed)
            ));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    kib_per_task(before, vm_rss_kib(), n)
}

/// Milliseconds of one imbalanced task's work, run n times in this task.
async fn work_unit(n: u64) -> Measure {
    let t = Instant::now();
    for _ in 0..n {
        black_box(work(black_box(WORK_ITERS)));
    }
    (t.elapsed().as_secs_f64() * 1e3 / n as f64, "ms")
}

/// Two tasks, two `tokio::sync::mpsc::channel(1)` (Tokio has no rendezvous
/// channel; capacity 1 is the smallest): A sends i on `ping` and waits for it
/// back on `pong`, B echoes; n round trips.
async fn pingpong(n: u64) -> Measure {
    let (ping_tx, mut ping_rx) = mpsc::channel::<u64>(1);
    let (pong_tx, mut pong_rx) = mpsc::channel::<u64>(1);
    let t = Instant::now();
    let a = tokio::spawn(async move {
        for i in 0..n {
            if ping_tx.send(i).await.is_err() {
                fail("pingpong: ping send failed");
            }
            match pong_rx.recv().await {
                Some(v) if v == i => {}
                other => fail(&format!("pingpong: expected Some({i}) back, got {other:?}")),
            }
        }
    });
    let b = tokio::spawn(async move {
        for _ in 0..n {
            let v = ping_rx
                .recv()
                .await
                .unwrap_or_else(|| fail("pingpong: ping recv failed"));
            if pong_tx.send(v).await.is_err() {
                fail("pingpong: pong send failed");
            }
        }
    });
    for h in [a, b] {
        if let Err(e) = h.await {
            fail(&format!("a pingpong task failed: {e}"));
        }
    }
    ns_per_op(t.elapsed(), n)
}

/// `async_channel::bounded(128)` (MPMC, as Go's channel), 4 producer tasks (n/4
/// values each) and 4 consumer tasks that receive until the channel is closed
/// (when the last Sender is dropped).
async fn buffered(n: u64) -> Measure {
    let (tx, rx) = async_channel::bounded::<u64>(BUFFERED_CAP);
    let t = Instant::now();
    let consumers: Vec<_> = (0..BUFFERED_CONSUMERS)
        .map(|_| {
            let rx = rx.clone();
            tokio::spawn(async move {
                let (mut count, mut sum) = (0u64, 0u64);
                while let Ok(v) = rx.recv().await {
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
            tokio::spawn(async move {
                for i in 0..k {
                    if tx.send(i).await.is_err() {
                        fail("buffered: send failed");
                    }
                }
            })
        })
        .collect();
    drop(tx);
    for h in producers {
        if let Err(e) = h.await {
            fail(&format!("a buffered producer task failed: {e}"));
        }
    }
    let (mut count, mut sum) = (0, 0);
    for h in consumers {
        match h.await {
            Ok((c, s)) => {
                count += c;
                sum += s;
            }
            Err(e) => fail(&format!("a buffered consumer task failed: {e}")),
        }
    }
    let d = t.elapsed();
    buffered_check(n, count, sum);
    msgs_per_sec(d, n)
}

/// One skynet node (a boxed future: it spawns itself): a leaf sends its index;
/// an inner node makes an `mpsc::channel(10)`, spawns 10 children on it, sums
/// their 10 answers and sends the sum up.
fn skynet_node(up: mpsc::Sender<u64>, num: u64, size: u64) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move {
        let v = if size == 1 {
            num
        } else {
            let (tx, mut rx) = mpsc::channel::<u64>(SKYNET_FANOUT as usize);
            let sub = size / SKYNET_FANOUT;
            for i in 0..SKYNET_FANOUT {
                drop(tokio::spawn(skynet_node(tx.clone(), num + i * sub, sub)));
            }
            drop(tx);
            let mut sum = 0;
            for _ in 0..SKYNET_FANOUT {
                sum += rx.recv().await.unwrap_or_else(|| fail("skynet: recv failed"));
            }
            sum
        };
        if up.send(v).await.is_err() {
            fail("skynet: send failed");
        }
    })
}

/// skynet with n leaves; wall seconds until the root's sum is received here.
async fn skynet(n: u64) -> Measure {
    skynet_check_n(n);
    let (tx, mut rx) = mpsc::channel::<u64>(1);
    let t = Instant::now();
    drop(tokio::spawn(skynet_node(tx, 0, n)));
    let sum = rx.recv().await.unwrap_or_else(|| fail("skynet: root recv failed"));
    let d = t.elapsed();
    skynet_check_sum(n, sum);
    (d.as_secs_f64(), "s")
}

/// This task locks, increments and unlocks a `tokio::sync::Mutex` n times.
async fn mutex_uncontended(n: u64) -> Measure {
    let m = tokio::sync::Mutex::new(0u64);
    let t = Instant::now();
    for _ in 0..n {
        *m.lock().await += 1;
    }
    let d = t.elapsed();
    mutex_check(n, *m.lock().await);
    ns_per_op(d, n)
}

/// 4 tasks each lock, increment and unlock one `tokio::sync::Mutex` n/4 times.
async fn mutex_contended(n: u64) -> Measure {
    let m = Arc::new(tokio::sync::Mutex::new(0u64));
    let t = Instant::now();
    let hs: Vec<_> = (0..MUTEX_TASKS)
        .map(|i| {
            let m = m.clone();
            let k = share(n, MUTEX_TASKS, i);
            tokio::spawn(async move {
                for _ in 0..k {
                    *m.lock().await += 1;
                }
            })
        })
        .collect();
    for h in hs {
        if let Err(e) = h.await {
            fail(&format!("a mutex task failed: {e}"));
        }
    }
    let d = t.elapsed();
    mutex_check(n, *m.lock().await);
    ns_per_op(d, n)
}

/// n tasks each sleep 10 times 1..=50 ms (next_sleep_ms); this task awaits them all.
async fn sleepers(n: u64) -> SleepersTimes {
    let cpu = process_cpu_time();
    let t = Instant::now();
    let hs: Vec<_> = (0..n)
        .map(|i| {
            tokio::spawn(async move {
                let mut s = i;
                for _ in 0..SLEEPS_PER_TASK {
                    tokio::time::sleep(Duration::from_millis(next_sleep_ms(&mut s))).await;
                }
            })
        })
        .collect();
    for h in hs {
        if let Err(e) = h.await {
            fail(&format!("a sleeping task failed: {e}"));
        }
    }
    SleepersTimes {
        wall: t.elapsed(),
        cpu: process_cpu_time() - cpu,
    }
}

/// `hog_latency`'s ticker: sleeps HOG_TICK and records how late it woke up,
/// until the hog is done.
async fn hog_ticker(st: Arc<HogState>) -> Vec<Tick> {
    let mut ticks = Vec::new();
    while !st.done.load(Ordering::Acquire) {
        let t = Instant::now();
        tokio::time::sleep(HOG_TICK).await;
        ticks.push(Tick::ended_now(t));
        st.ticks.fetch_add(1, Ordering::Release);
    }
    ticks
}

/// A ticker task sleeping 5 ms in a loop, then (once it ticks steadily) a hog
/// task spinning n ms in a synchronous loop: p99 lateness of the ticks taken
/// meanwhile. Tokio cannot preempt the hog, so at GOMAXPROCS=1 (current_thread)
/// the ticker runs again only when the hog has finished.
async fn hog_latency(n: u64) -> Measure {
    let st = Arc::new(HogState::default());
    let ticker = tokio::spawn(hog_ticker(st.clone()));
    let t = Instant::now();
    while st.ticks.load(Ordering::Acquire) < HOG_WARMUP_TICKS {
        if t.elapsed() > HOG_WARMUP_DEADLINE {
            fail(&format!(
                "hog_latency: the ticker did {} sleeps in {HOG_WARMUP_DEADLINE:?}",
                st.ticks.load(Ordering::Acquire)
            ));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let hog = {
        let st = st.clone();
        tokio::spawn(async move {
            let span = hog_spin(Duration::from_millis(n));
            st.done.store(true, Ordering::Release);
            span
        })
    };
    let span = hog.await.unwrap_or_else(|e| fail(&format!("the hog task failed: {e}")));
    let ticks = ticker
        .await
        .unwrap_or_else(|e| fail(&format!("the ticker task failed: {e}")));
    hog_p99(&ticks, span)
}

/// `echo_server`: listens on 127.0.0.1:port, announces the port, then accepts
/// forever; one task per connection. Never returns (the script kills it).
async fn echo_server(port: u16) -> Measure {
    let l = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap_or_else(|e| fail(&format!("echo_server: bind 127.0.0.1:{port}: {e}")));
    let port = l
        .local_addr()
        .unwrap_or_else(|e| fail(&format!("echo_server: local_addr: {e}")))
        .port();
    announce_listening(port);
    loop {
        match l.accept().await {
            Ok((s, _)) => drop(tokio::spawn(echo_conn(s))),
            Err(e) => echo_error("accept", &e),
        }
    }
}

/// Reads up to ECHO_BUF bytes and writes back exactly what was read, until EOF.
async fn echo_conn(mut s: tokio::net::TcpStream) {
    if let Err(e) = s.set_nodelay(true) {
        echo_error("set_nodelay", &e);
    }
    let mut buf = vec![0u8; ECHO_BUF];
    loop {
        match s.read(&mut buf).await {
            Ok(0) => return,
            Ok(n) => {
                if let Err(e) = s.write_all(&buf[..n]).await {
                    return echo_error("write", &e);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return echo_error("read", &e),
        }
    }
}

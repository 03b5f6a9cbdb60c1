//! The shared load generator of the TCP echo benchmark: the same client drives
//! the `echo_server` of all four implementations, so only the server differs.
//!
//! ```text
//! echo_client --port P [--host 127.0.0.1] [--impl NAME] [--procs P]
//!             [--conns 100] [--size 64] [--warmup 1] [--secs 5] [--server-pid PID]
//! ```
//!
//! Opens `conns` connections (TCP_NODELAY) to host:port; each runs a closed loop:
//! write `size` bytes, read exactly `size` bytes back, check they are the bytes
//! sent (each message carries its connection and sequence number, so lost,
//! duplicated, reordered or corrupted data fails the run), and record the round
//! trip (`Instant` before the write to after the read). After `warmup` seconds,
//! a window of `secs` seconds is measured: a round trip counts when it started
//! and finished inside the window. Prints (impl and procs are labels from the
//! command line: the server's, not this process's)
//!
//! ```text
//! BENCH workload=tcp_echo_msgs impl=<impl> procs=<P> value=<round trips/s> unit=msgs/s
//! BENCH workload=tcp_echo_p50  impl=<impl> procs=<P> value=<µs> unit=us
//! BENCH workload=tcp_echo_p99  impl=<impl> procs=<P> value=<µs> unit=us
//! BENCH workload=tcp_echo_cpu  impl=<impl> procs=<P> value=<server CPU µs per msg> unit=us/msg
//! BENCH workload=tcp_echo_client_cpu impl=<impl> procs=<P> value=<% of one core> unit=%
//! ```
//!
//! (`tcp_echo_cpu` only with `--server-pid`: user + system time of that process
//! from /proc/PID/stat over the window; `tcp_echo_client_cpu` is this process's
//! own CPU time over the window) plus an `INFO` line on stderr. Exits 1 with
//! `FAILED: <reason>` if a connection cannot be opened, errors, closes early,
//! echoes wrong bytes, or stalls (no round trip completed for 5 s).
//!
//! Runtime: Tokio `current_thread` — ONE thread runs all connections (100 OS
//! threads would mostly measure the kernel scheduler on a 2-core machine, and a
//! single thread is the cheapest client: it leaves the most CPU to the server).
//! The client is not pinned; it shares the machine's cores with the server.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use compare::harness::{fail, fmt_value, process_cpu_time};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A connection that completes no round trip for this long fails the run.
const STALL: Duration = Duration::from_secs(5);
/// A connection's progress counter once it has finished its last round trip.
const DONE: u64 = u64::MAX;
/// Opening one connection may take at most this long.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

struct Opts {
    host: String,
    port: u16,
    impl_name: String,
    procs: String,
    conns: usize,
    size: usize,
    warmup: Duration,
    secs: Duration,
    server_pid: Option<u32>,
}

fn parse_opts() -> Opts {
    let usage = |msg: &str| -> ! {
        eprintln!("echo_client: {msg}");
        eprintln!(
            "usage: echo_client --port P [--host H] [--impl NAME] [--procs P] [--conns 100] \
             [--size 64] [--warmup 1] [--secs 5] [--server-pid PID]"
        );
        std::process::exit(2)
    };
    let mut o = Opts {
        host: "127.0.0.1".into(),
        port: 0,
        impl_name: "?".into(),
        procs: "?".into(),
        conns: 100,
        size: 64,
        warmup: Duration::from_secs(1),
        secs: Duration::from_secs(5),
        server_pid: None,
    };
    let secs = |v: &str, what: &str| -> Duration {
        v.parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64)
            .unwrap_or_else(|| usage(&format!("{what} must be a number of seconds")))
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| usage(&format!("{a} needs a value")));
        match a.as_str() {
            "--host" => o.host = val(),
            "--port" => o.port = val().parse().unwrap_or_else(|_| usage("--port must be 1..=65535")),
            "--impl" => o.impl_name = val(),
            "--procs" => o.procs = val(),
            "--conns" => o.conns = val().parse().unwrap_or_else(|_| usage("--conns must be an integer")),
            "--size" => o.size = val().parse().unwrap_or_else(|_| usage("--size must be an integer")),
            "--warmup" => o.warmup = secs(&val(), "--warmup"),
            "--secs" => o.secs = secs(&val(), "--secs"),
            "--server-pid" => {
                o.server_pid = Some(val().parse().unwrap_or_else(|_| usage("--server-pid must be a pid")))
            }
            _ => usage(&format!("unknown argument {a:?}")),
        }
    }
    if o.port == 0 {
        usage("--port is required");
    }
    if o.conns == 0 || o.size < 12 || o.secs.is_zero() {
        usage("need --conns >= 1, --size >= 12 (connection and sequence number) and --secs > 0");
    }
    o
}

/// The bytes of message `seq` on connection `conn`: seq (8 bytes LE), conn
/// (4 bytes LE), then a pattern depending on both.
fn fill(msg: &mut [u8], conn: usize, seq: u64) {
    msg[..8].copy_from_slice(&seq.to_le_bytes());
    msg[8..12].copy_from_slice(&(conn as u32).to_le_bytes());
    let base = seq.wrapping_mul(31).wrapping_add(conn as u64);
    for (j, b) in msg[12..].iter_mut().enumerate() {
        *b = base.wrapping_add(j as u64) as u8;
    }
}

/// What went wrong on one connection, as a short sentence for the report.
fn io_reason(conn: usize, seq: u64, what: &str, e: &io::Error) -> String {
    let kind = match e.kind() {
        io::ErrorKind::UnexpectedEof => "server closed the connection (EOF)".to_string(),
        _ => e.to_string(),
    };
    format!("connection {conn}, round trip {seq}: {what}: {kind}")
}

/// Round trips of one connection that fell inside the window, in ns.
type Samples = Vec<u64>;

async fn conn_loop(
    mut s: TcpStream,
    conn: usize,
    size: usize,
    start: Instant,
    end: Instant,
    progress: Arc<Vec<AtomicU64>>,
) -> Result<Samples, String> {
    let mut msg = vec![0u8; size];
    let mut back = vec![0u8; size];
    let mut lat = Vec::with_capacity(1 << 14);
    let mut seq = 0u64;
    loop {
        fill(&mut msg, conn, seq);
        let t = Instant::now();
        if t >= end {
            progress[conn].store(DONE, Ordering::Relaxed);
            return Ok(lat);
        }
        if let Err(e) = s.write_all(&msg).await {
            return Err(io_reason(conn, seq, "write", &e));
        }
        if let Err(e) = s.read_exact(&mut back).await {
            return Err(io_reason(conn, seq, "read", &e));
        }
        let done = Instant::now();
        if back != msg {
            let first = back.iter().zip(&msg).position(|(a, b)| a != b).unwrap_or(0);
            return Err(format!(
                "connection {conn}, round trip {seq}: echoed bytes differ from those sent \
                 (first at offset {first} of {size}: got {:#04x}, sent {:#04x})",
                back[first], msg[first]
            ));
        }
        if t >= start && done <= end {
            lat.push((done - t).as_nanos() as u64);
        }
        seq += 1;
        progress[conn].store(seq, Ordering::Relaxed);
    }
}

/// User + system CPU time of process `pid` (all its threads), from /proc/PID/stat.
fn proc_cpu_time(pid: u32) -> Option<Duration> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may contain spaces) in parentheses:
    // state(3) ... utime(14) stime(15).
    let rest = &s[s.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| Duration::from_secs_f64(ticks as f64 / hz as f64))
}

/// A CPU reading at one instant: wall clock, this process, the server.
struct CpuSample {
    at: Instant,
    client: Duration,
    server: Option<Duration>,
}

fn cpu_sample(server_pid: Option<u32>) -> CpuSample {
    CpuSample {
        at: Instant::now(),
        client: process_cpu_time(),
        server: server_pid.and_then(proc_cpu_time),
    }
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[u64], p: f64) -> u64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn bench_line(o: &Opts, workload: &str, value: f64, unit: &str) {
    println!(
        "BENCH workload={workload} impl={} procs={} value={} unit={unit}",
        o.impl_name,
        o.procs,
        fmt_value(value, unit)
    );
}

async fn run(o: &Opts) -> Result<(), String> {
    let addr = (o.host.as_str(), o.port);
    let mut streams = Vec::with_capacity(o.conns);
    for i in 0..o.conns {
        let s = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(format!("connect #{i} to {}:{}: {e}", o.host, o.port)),
            Err(_) => {
                return Err(format!(
                    "connect #{i} to {}:{}: no answer in {CONNECT_TIMEOUT:?}",
                    o.host, o.port
                ))
            }
        };
        s.set_nodelay(true).map_err(|e| format!("set_nodelay: {e}"))?;
        streams.push(s);
    }

    let progress: Arc<Vec<AtomicU64>> = Arc::new((0..o.conns).map(|_| AtomicU64::new(0)).collect());
    let t0 = Instant::now();
    let start = t0 + o.warmup;
    let end = start + o.secs;

    let tasks: Vec<_> = streams
        .into_iter()
        .enumerate()
        .map(|(i, s)| tokio::spawn(conn_loop(s, i, o.size, start, end, progress.clone())))
        .collect();

    // CPU readings at the window's start and end.
    let pid = o.server_pid;
    let sampler = tokio::spawn(async move {
        tokio::time::sleep_until(start.into()).await;
        let a = cpu_sample(pid);
        tokio::time::sleep_until(end.into()).await;
        (a, cpu_sample(pid))
    });

    // Watchdog: fail if a connection completes no round trip for STALL.
    let watch = {
        let progress = progress.clone();
        tokio::spawn(async move {
            let mut last: Vec<(u64, Instant)> = (0..progress.len()).map(|_| (0, Instant::now())).collect();
            loop {
                tokio::time::sleep(Duration::from_millis(250)).await;
                let now = Instant::now();
                let mut stalled = Vec::new();
                for (i, l) in last.iter_mut().enumerate() {
                    let p = progress[i].load(Ordering::Relaxed);
                    if p == DONE {
                        continue;
                    }
                    if p != l.0 {
                        *l = (p, now);
                    } else if now - l.1 >= STALL {
                        stalled.push((i, p));
                    }
                }
                if !stalled.is_empty() {
                    let (i, p) = stalled[0];
                    return format!(
                        "{} of {} connections stalled: no echo for {STALL:?} \
                         (e.g. connection {i} after {p} round trips, {:.1} s into the run)",
                        stalled.len(),
                        progress.len(),
                        (now - t0).as_secs_f64()
                    );
                }
            }
        })
    };

    let mut watch = watch;
    let mut all: Samples = Vec::new();
    for t in tasks {
        tokio::select! {
            r = t => match r {
                Ok(Ok(lat)) => all.extend_from_slice(&lat),
                Ok(Err(e)) => return Err(e),
                Err(e) => return Err(format!("a connection task failed: {e}")),
            },
            r = &mut watch => return Err(r.unwrap_or_else(|e| format!("watchdog failed: {e}"))),
        }
    }
    watch.abort();
    let (a, b) = sampler.await.map_err(|e| format!("CPU sampler failed: {e}"))?;

    if all.is_empty() {
        return Err("no round trip completed inside the measured window".into());
    }
    all.sort_unstable();
    let n = all.len() as f64;
    let win = o.secs.as_secs_f64();
    let us = |ns: u64| ns as f64 / 1e3;
    let sampled = (b.at - a.at).as_secs_f64();
    let client_cpu = (b.client - a.client).as_secs_f64();
    bench_line(o, "tcp_echo_msgs", n / win, "msgs/s");
    bench_line(o, "tcp_echo_p50", us(percentile(&all, 50.0)), "us");
    bench_line(o, "tcp_echo_p99", us(percentile(&all, 99.0)), "us");
    let server_cpu = match (a.server, b.server) {
        (Some(x), Some(y)) => {
            let cpu = (y - x).as_secs_f64();
            // CPU per message, the CPU reading interval scaled to the window.
            bench_line(o, "tcp_echo_cpu", cpu * 1e6 * (win / sampled) / n, "us/msg");
            format!("{:.0} %", 100.0 * cpu / sampled)
        }
        _ if o.server_pid.is_some() => "unreadable".into(),
        _ => "not measured".into(),
    };
    bench_line(o, "tcp_echo_client_cpu", 100.0 * client_cpu / sampled, "%");
    eprintln!(
        "INFO {} conns x {} B, window {win:.1} s: {} round trips; latency us p50 {:.1} p90 {:.1} p99 {:.1} \
         p99.9 {:.1} max {:.1}; CPU over the window: client {:.0} %, server {server_cpu}",
        o.conns,
        o.size,
        all.len(),
        us(percentile(&all, 50.0)),
        us(percentile(&all, 90.0)),
        us(percentile(&all, 99.0)),
        us(percentile(&all, 99.9)),
        us(*all.last().unwrap()),
        100.0 * client_cpu / sampled,
    );
    Ok(())
}

fn main() {
    let o = parse_opts();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(&format!("tokio runtime: {e}")));
    let r = rt.block_on(run(&o));
    use std::io::Write;
    let _ = std::io::stdout().flush();
    match r {
        Ok(()) => std::process::exit(0),
        Err(e) => fail(&e),
    }
}

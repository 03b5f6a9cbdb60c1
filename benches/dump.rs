//! How fast a goroutine dump is made and streamed (docs/GUARANTEES.md, "The
//! goroutine dump"): `cargo bench --bench dump`.
//!
//! - in-process, `write_goroutines` of N parked goroutines (most parked at the
//!   same call, as in a server) and K spinning ones: the first dump (which
//!   loads the binary's symbols), then the median of 5, and when the first
//!   goroutine reached the writer;
//! - the symbols' load: the first dump of a fresh process (a child);
//! - SIGQUIT: this program again as a child with N parked goroutines and K
//!   spinning, signalled by the parent, which times the header, the first
//!   goroutine and the exit from the child's stderr.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static STOP: AtomicBool = AtomicBool::new(false);

#[inline(never)]
fn spins() {
    while !STOP.load(Ordering::Relaxed) {
        std::hint::spin_loop();
    }
}

#[inline(never)]
fn parks(rx: goro::chan::Receiver<u8>) {
    let _ = rx.recv();
}

/// N parked goroutines and K spinning ones; returns what keeps them parked.
fn crowd(n: usize, k: usize) -> goro::chan::Sender<u8> {
    let (tx, rx) = goro::chan::bounded::<u8>(0);
    for _ in 0..k {
        goro::go!(spins);
    }
    for _ in 0..n {
        let rx = rx.clone();
        goro::go!(move || parks(rx));
    }
    // Counted without a dump (which would load the symbols), then time to
    // park (a bench, not a test: a sleep is fine here).
    while goro::runtime::stats().live < (n + k) as u64 {
        std::thread::yield_now();
    }
    std::thread::sleep(Duration::from_millis(100 + n as u64 / 1000));
    tx
}

/// A writer that notes when the first bytes came.
struct FirstWrite(Option<Instant>, usize);

impl Write for FirstWrite {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.get_or_insert_with(Instant::now);
        self.1 += b.len();
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn in_process(n: usize, k: usize) {
    let tx = crowd(n, k);
    let mut times = Vec::new();
    let mut firsts = Vec::new();
    let mut bytes = 0;
    for _ in 0..6 {
        let mut w = FirstWrite(None, 0);
        let t = Instant::now();
        goro::runtime::write_goroutines(&mut w).unwrap();
        times.push(t.elapsed());
        firsts.push(w.0.unwrap() - t);
        bytes = w.1;
    }
    let load = times.remove(0);
    firsts.remove(0);
    times.sort();
    firsts.sort();
    println!(
        "write_goroutines, {n} parked + {k} spinning: first dump {:.0} ms (symbols load), then median {:.0} ms, \
         first goroutine after {:.2} ms, {} KiB",
        load.as_secs_f64() * 1e3,
        times[2].as_secs_f64() * 1e3,
        firsts[2].as_secs_f64() * 1e3,
        bytes / 1024
    );
    drop(tx);
}

fn sigquit(n: usize, k: usize) {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .env("DUMP_BENCH_CHILD", format!("{n} {k}"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = [0u8; 6];
    child.stdout.take().unwrap().read_exact(&mut ready).unwrap();
    let mut err = child.stderr.take().unwrap();
    let t = Instant::now();
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGQUIT) };
    let (mut header, mut first) = (None, None);
    let mut seen = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let got = err.read(&mut buf).unwrap();
        if got == 0 {
            break;
        }
        header.get_or_insert_with(|| t.elapsed());
        if first.is_none() {
            seen.extend_from_slice(&buf[..got]);
            if seen.windows(10).any(|w| w == b"goroutine ") {
                first = Some(t.elapsed());
            }
        }
    }
    let status = child.wait().unwrap();
    let ms = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    println!(
        "SIGQUIT, {n} parked + {k} spinning: header {:.1} ms, first goroutine {:.0} ms, exit {:.0} ms (status {:?})",
        ms(header),
        ms(first),
        t.elapsed().as_secs_f64() * 1e3,
        status.code()
    );
}

/// In a fresh process (a child): the first dump of one parked goroutine,
/// which loads the symbols, and the second.
fn symbol_load() {
    if std::env::var_os("DUMP_BENCH_LOAD").is_some() {
        let _tx = crowd(1, 0);
        let mut times = [Duration::ZERO; 2];
        for t in &mut times {
            let start = Instant::now();
            goro::runtime::write_goroutines(&mut std::io::sink()).unwrap();
            *t = start.elapsed();
        }
        println!(
            "one parked goroutine, fresh process: first dump {:.1} ms (symbols load), second {:.2} ms",
            times[0].as_secs_f64() * 1e3,
            times[1].as_secs_f64() * 1e3
        );
        std::process::exit(0);
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env("DUMP_BENCH_LOAD", "1")
        .output()
        .unwrap();
    print!("{}", String::from_utf8_lossy(&out.stdout));
}

fn main() {
    if std::env::var_os("DUMP_BENCH_LOAD").is_some() {
        symbol_load();
    }
    if let Ok(spec) = std::env::var("DUMP_BENCH_CHILD") {
        let mut it = spec.split(' ').map(|v| v.parse().unwrap());
        let (n, k) = (it.next().unwrap(), it.next().unwrap());
        let _tx = crowd(n, k);
        std::io::stdout().write_all(b"ready\n").unwrap();
        std::io::stdout().flush().unwrap();
        loop {
            std::thread::park();
        }
    }
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list`
    }
    symbol_load();
    for (n, k) in [(10_000, 0), (10_000, 2), (100_000, 0)] {
        in_process(n, k);
        // This round's goroutines end before the next round's start.
        STOP.store(true, Ordering::Relaxed);
        while !goro::runtime::goroutines().is_empty() {
            std::thread::yield_now();
        }
        STOP.store(false, Ordering::Relaxed);
    }
    for (n, k) in [(10_000, 0), (10_000, 2), (100_000, 0)] {
        sigquit(n, k);
    }
}

//! A goroutine that blocks its thread in the kernel outside `goro::blocking`
//! is told apart from a CPU hog: `stats().blocking_retakes`, and with
//! `GODEBUG=blockwarn=1` one line naming it and its call site.

use crate::common;
use std::time::{Duration, Instant};

/// Blocks its thread with std's sleep, as a sync library would.
#[inline(never)]
fn sleeps_outside_blocking() {
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(60));
    }
}

/// Computes for `d` without a goro call.
#[inline(never)]
fn computes_for(d: Duration) -> u64 {
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < d {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
    }
    x
}

#[test]
fn a_goroutine_blocking_its_thread_is_named_and_a_cpu_hog_is_not() {
    if common::is_child() {
        // stderr into a pipe this process reads, so it can wait for the
        // reporter thread's line before it exits, then pass it all on.
        let warned = own_stderr_until("blocked its thread");
        let before = goro::runtime::stats();
        goro::go!(goro::Builder::new().name("sleeper"), sleeps_outside_blocking)
            .unwrap()
            .join()
            .unwrap();
        let mid = goro::runtime::stats();
        goro::go!(goro::Builder::new().name("hog"), || computes_for(
            Duration::from_millis(150)
        ))
        .unwrap()
        .join()
        .unwrap();
        let after = goro::runtime::stats();
        println!(
            "\nblocking {} {} hog {} {}",
            mid.blocking_retakes - before.blocking_retakes,
            after.blocking_retakes - mid.blocking_retakes,
            mid.preempt_retakes - before.preempt_retakes,
            after.preempt_retakes - mid.preempt_retakes,
        );
        warned.join().unwrap();
        return;
    }
    let out = common::run_child_in(
        module_path!(),
        "a_goroutine_blocking_its_thread_is_named_and_a_cpu_hog_is_not",
        &[("GODEBUG", "blockwarn=1"), ("GOMAXPROCS", "1")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let counts: Vec<u64> = stdout
        .lines()
        .find_map(|l| l.strip_prefix("blocking "))
        .expect("the child's counts")
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [sleeper_blocking, hog_blocking, sleeper_hog, hog_hog] = counts[..] else {
        panic!("{stdout}")
    };
    assert!(
        sleeper_blocking >= 1 && sleeper_hog == 0,
        "the sleeper is blocked, not a hog: {stdout}"
    );
    assert!(
        hog_hog >= 1 && hog_blocking == 0,
        "the CPU loop is a hog, not blocked: {stdout}"
    );
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("blocked its thread")).collect();
    assert_eq!(lines.len(), 1, "one line per goroutine and call site: {stderr}");
    assert!(
        lines[0].contains("\"sleeper\" blocked its thread")
            && lines[0].contains("in a system call outside goro::blocking (at tests/behaviour/blockwarn.rs:"),
        "{}",
        lines[0]
    );
}

/// Points this process's stderr at a pipe and copies what arrives to the
/// real stderr; the thread returned ends once a line containing `marker`
/// has gone through (or after 60 s).
fn own_stderr_until(marker: &'static str) -> std::thread::JoinHandle<()> {
    use std::io::{BufRead, Write};
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe(2) into a two-int array; dup/dup2 on descriptors we own.
    let real = unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        let real = libc::dup(2);
        assert_eq!(libc::dup2(fds[1], 2), 2);
        libc::close(fds[1]);
        real
    };
    // SAFETY: both descriptors are ours alone from here on.
    let (read_end, mut real) = unsafe { (std::fs::File::from_raw_fd(fds[0]), std::fs::File::from_raw_fd(real)) };
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        for line in std::io::BufReader::new(read_end).lines() {
            let Ok(line) = line else { break };
            let _ = writeln!(real, "{line}");
            if line.contains(marker) || Instant::now() > deadline {
                break;
            }
        }
    })
}

/// More CPU hogs than cores (their threads wait, runnable, for a CPU) are
/// hogs, not goroutines blocked in the kernel.
#[test]
fn oversubscribed_cpu_hogs_are_not_taken_for_blocked() {
    if common::is_child() {
        let before = goro::runtime::stats();
        let hs: Vec<_> = (0..16)
            .map(|_| goro::go!(|| computes_for(Duration::from_millis(200))))
            .collect();
        hs.into_iter().for_each(|h| {
            h.join().unwrap();
        });
        let after = goro::runtime::stats();
        println!(
            "\nretakes blocking {} hog {}",
            after.blocking_retakes - before.blocking_retakes,
            after.preempt_retakes - before.preempt_retakes
        );
        return;
    }
    let out = common::run_child_in(
        module_path!(),
        "oversubscribed_cpu_hogs_are_not_taken_for_blocked",
        &[("GOMAXPROCS", "8")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("retakes "))
        .expect("the child's counts");
    assert!(line.starts_with("blocking 0 "), "{line}");
    assert!(!line.ends_with("hog 0"), "{line}");
}

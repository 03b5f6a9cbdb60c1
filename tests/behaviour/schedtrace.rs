//! `GODEBUG=schedtrace=N[,scheddetail=1]`: lines in Go's format, parsed here from a
//! child process's stderr.

use crate::common;

use goro::go;
use std::hint::black_box;

/// Rounds of 400 busy goroutines, for at least 100 ms (five trace periods of
/// 20 ms) whatever the build profile's speed.
fn workload() {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_millis(100) {
        let hs: Vec<_> = (0..400)
            .map(|_| go!(|| (0..300_000u64).fold(0u64, |a, i| a.wrapping_add(black_box(i)))))
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    }
}

/// Splits `key=value` fields; returns the value of `key`.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
}

/// The numbers inside the `[ ... ]` following `after`.
fn list(line: &str, after: &str) -> Vec<u64> {
    let start = line.find(after).expect("list present") + after.len();
    let rest = &line[start..];
    let open = rest.find('[').unwrap();
    let close = rest.find(']').unwrap();
    rest[open + 1..close]
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect()
}

#[test]
fn schedtrace_lines_have_gos_shape() {
    if common::is_child() {
        workload();
        return;
    }
    let out = common::run_child_in(
        module_path!(),
        "schedtrace_lines_have_gos_shape",
        &[("GODEBUG", "schedtrace=20"), ("GOMAXPROCS", "2")],
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("SCHED ")).collect();
    assert!(lines.len() >= 3, "too few SCHED lines:\n{stderr}");
    let mut last_ms = 0;
    for line in &lines {
        let ms: u64 = line["SCHED ".len()..].split("ms:").next().unwrap().parse().unwrap();
        assert!(ms >= last_ms, "time went backwards: {line}");
        last_ms = ms;
        let keys = [
            "gomaxprocs",
            "idleprocs",
            "threads",
            "spinningthreads",
            "needspinning",
            "idlethreads",
            "runqueue",
        ];
        let mut pos = 0;
        for k in keys {
            let at = line
                .find(&format!(" {k}="))
                .unwrap_or_else(|| panic!("{k} missing: {line}"));
            assert!(at > pos, "{k} out of order: {line}");
            pos = at;
            let _: u64 = field(line, k).unwrap().parse().unwrap();
        }
        assert_eq!(field(line, "gomaxprocs"), Some("2"));
        assert!(field(line, "idleprocs").unwrap().parse::<u64>().unwrap() <= 2);
        assert_eq!(list(line, "runqueue=").len(), 2, "{line}");
        assert_eq!(list(line, "schedticks=").len(), 2, "{line}");
        let _: u64 = field(line, "steals").expect("steals").parse().unwrap();
        let _: u64 = field(line, "stolen").expect("stolen").parse().unwrap();
    }
}

#[test]
fn schedtrace_follows_set_gomaxprocs() {
    if common::is_child() {
        workload();
        assert_eq!(goro::runtime::set_gomaxprocs(3), 2);
        workload();
        // Stay alive for a few more reports (every 10 ms).
        std::thread::sleep(std::time::Duration::from_millis(60));
        return;
    }
    let out = common::run_child_in(
        module_path!(),
        "schedtrace_follows_set_gomaxprocs",
        &[("GODEBUG", "schedtrace=10"), ("GOMAXPROCS", "2")],
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("SCHED ")).collect();
    let first = lines.first().expect("no SCHED lines");
    let last = lines.last().unwrap();
    assert_eq!(field(first, "gomaxprocs"), Some("2"), "{first}");
    assert_eq!(field(last, "gomaxprocs"), Some("3"), "{last}");
    assert_eq!(list(last, "runqueue=").len(), 3, "{last}");
    assert_eq!(list(last, "schedticks=").len(), 3, "{last}");
}

#[test]
fn scheddetail_lists_ps_ms_and_gs() {
    if common::is_child() {
        workload();
        return;
    }
    let out = common::run_child_in(
        module_path!(),
        "scheddetail_lists_ps_ms_and_gs",
        &[("GODEBUG", "schedtrace=25,scheddetail=1"), ("GOMAXPROCS", "2")],
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let header = stderr.lines().find(|l| l.starts_with("SCHED ")).unwrap();
    for k in ["gcwaiting=false", "nmidlelocked=0", "stopwait=0", "sysmonwait=false"] {
        assert!(header.contains(k), "{k} missing: {header}");
    }
    let ps: Vec<&str> = stderr.lines().filter(|l| l.starts_with("  P")).collect();
    assert!(ps.len() >= 2);
    for p in &ps {
        for k in [
            "status",
            "schedtick",
            "syscalltick",
            "m",
            "runqsize",
            "gfreecnt",
            "timerslen",
        ] {
            assert!(field(p, k).is_some(), "{k} missing: {p}");
        }
    }
    let ms: Vec<&str> = stderr.lines().filter(|l| l.starts_with("  M")).collect();
    assert!(!ms.is_empty());
    for m in &ms {
        for k in ["p", "curg", "spinning", "blocked", "lockedg"] {
            assert!(field(m, k).is_some(), "{k} missing: {m}");
        }
    }
    let gs: Vec<&str> = stderr.lines().filter(|l| l.starts_with("  G")).collect();
    assert!(!gs.is_empty(), "no G lines:\n{stderr}");
    for g in &gs {
        let status = field(g, "status").unwrap();
        let code: u32 = status.split('(').next().unwrap().parse().unwrap();
        assert!([1, 2, 4].contains(&code), "{g}");
        assert!(status.ends_with(')'), "{g}");
        assert!(field(g, "m").is_some() && field(g, "lockedm").is_some(), "{g}");
    }
}

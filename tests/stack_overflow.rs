//! A G that overflows its stack hits the guard page; the process prints
//! `goroutine N stack overflow (stack size S)` and aborts, never corrupting memory
//! silently. Checked in a child process.

mod common;

use std::hint::black_box;

/// Recurses until the stack runs out (`u64::MAX` is never reached).
#[inline(never)]
fn recurse(n: u64) -> u64 {
    let buf = black_box([n as u8; 256]);
    if black_box(n) == u64::MAX {
        return 0;
    }
    recurse(n + 1) + u64::from(black_box(buf[3]))
}

#[test]
fn overflow_prints_the_goroutine_and_aborts() {
    if common::is_child() {
        let size: usize = std::env::var("STACK").unwrap().parse().unwrap();
        let h = goro::go!(goro::Builder::new().stack_size(size), || recurse(0)).unwrap();
        println!("CHILD-ID {}", h.id());
        let _ = h.join();
        unreachable!("the overflow must abort the process");
    }
    for size in [64 << 10, 256 << 10] {
        let out = common::run_child(
            "overflow_prints_the_goroutine_and_aborts",
            &[("STACK", &size.to_string())],
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let id = stdout
            .split("CHILD-ID ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .expect("child printed the G id");
        let want = format!("goroutine {id} stack overflow (stack size {size})");
        assert!(stderr.contains(&want), "stderr lacks {want:?}:\n{stderr}");
        use std::os::unix::process::ExitStatusExt;
        const SIGABRT: i32 = 6;
        assert_eq!(out.status.signal(), Some(SIGABRT), "status {:?}", out.status);
    }
}

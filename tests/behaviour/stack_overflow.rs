//! A G that overflows its stack hits the guard page; the process prints
//! `goroutine N "name" stack overflow (stack size S bytes)` and the remedy, and
//! aborts, never corrupting memory silently — also inside `goro::blocking`, which
//! runs on the G's stack. Checked in a child process.

use crate::common;

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
        let in_blocking = std::env::var("IN_BLOCKING").is_ok();
        // The G overflows only once its id is printed: it could abort the
        // process first on another P.
        let (go_on, wait) = goro::chan::bounded::<()>(1);
        let h = goro::go!(goro::Builder::new().name("deep-worker").stack_size(size), move || {
            wait.recv().unwrap();
            if in_blocking {
                goro::blocking(|| recurse(0))
            } else {
                recurse(0)
            }
        })
        .unwrap();
        println!("CHILD-ID {}", h.id());
        go_on.send(()).unwrap();
        let _ = h.join();
        unreachable!("the overflow must abort the process");
    }
    for (size, in_blocking) in [(64 << 10, false), (256 << 10, false), (64 << 10, true)] {
        let size_s = size.to_string();
        let mut env = vec![("STACK", size_s.as_str())];
        if in_blocking {
            env.push(("IN_BLOCKING", "1"));
        }
        let out = common::run_child_in(module_path!(), "overflow_prints_the_goroutine_and_aborts", &env);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let id = stdout
            .split("CHILD-ID ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .expect("child printed the G id");
        let want = format!("goroutine {id} \"deep-worker\" stack overflow (stack size {size} bytes)\n");
        assert!(stderr.contains(&want), "stderr lacks {want:?}:\n{stderr}");
        assert!(stderr.contains("goro::Builder::stack_size"), "no remedy:\n{stderr}");
        use std::os::unix::process::ExitStatusExt;
        const SIGABRT: i32 = 6;
        assert_eq!(out.status.signal(), Some(SIGABRT), "status {:?}", out.status);
    }
}

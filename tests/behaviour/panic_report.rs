//! What a goroutine's panic prints, as std prints a thread's: the message and
//! where, then as `RUST_BACKTRACE` asks std's hint (once), a short backtrace from
//! the panic to the goroutine's entry, or every frame. A goroutine with a small
//! stack gets its report, never an abort. Checked in child processes.

use crate::common;

#[inline(never)]
fn user_frame_that_panics() -> u32 {
    panic!("boom from the user's frame")
}

#[test]
fn panic_report() {
    if common::is_child() {
        let stack = std::env::var("STACK").map_or(256 << 10, |s| s.parse().unwrap());
        for _ in 0..2 {
            let h = goro::go!(goro::Builder::new().name("reporter").stack_size(stack), || {
                user_frame_that_panics()
            })
            .unwrap();
            assert!(h.join().is_err());
        }
        println!("CHILD-SURVIVED");
        return;
    }
    let run = |bt: &str, stack: usize| {
        let stack = stack.to_string();
        let out = common::run_child_in(
            module_path!(),
            "panic_report",
            &[("RUST_BACKTRACE", bt), ("STACK", &stack)],
        );
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            stdout.contains("CHILD-SURVIVED"),
            "child died: {:?}\n{stderr}",
            out.status
        );
        stderr
    };

    let off = run("0", 256 << 10);
    assert_eq!(off.matches("goroutine ").count(), 2, "{off}");
    assert!(
        off.contains("\"reporter\" panicked at tests/behaviour/panic_report.rs:"),
        "{off}"
    );
    assert!(off.contains("boom from the user's frame"), "{off}");
    let hint = "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace";
    assert_eq!(off.matches(hint).count(), 1, "the hint comes once:\n{off}");
    assert!(!off.contains("stack backtrace:"), "{off}");

    let short = run("1", 256 << 10);
    assert_eq!(short.matches("stack backtrace:\n").count(), 2, "{short}");
    assert!(short.contains("user_frame_that_panics"), "{short}");
    for internal in [
        "goro::runtime",
        "corosensei",
        "__rust_begin_short_backtrace",
        "panic_with_hook",
    ] {
        assert!(!short.contains(internal), "short backtrace shows {internal}:\n{short}");
    }
    assert!(short.contains("RUST_BACKTRACE=full"), "{short}");

    let full = run("full", 256 << 10);
    assert!(full.contains("__rust_begin_short_backtrace"), "{full}");
    assert!(full.contains("user_frame_that_panics"), "{full}");

    // 16 KiB, the smallest stack: resolving the frames there would overflow it.
    let small = run("1", 16 << 10);
    assert!(small.contains("boom from the user's frame"), "{small}");
    assert!(!small.contains("stack overflow"), "{small}");
    assert!(small.contains("user_frame_that_panics"), "{small}");
}

//! [`blocking`]: running a call that blocks its OS thread (file I/O, DNS, FFI, a
//! std lock) from a goroutine without stalling the other goroutines of its P.
//!
//! The G keeps its M and, provisionally, its P (Go's `entersyscall`): a short call
//! costs two state-word transitions and nothing else. If the call is still running
//! when sysmon next looks (≥ 20 µs), sysmon hands the P to another M so the P's
//! other Gs keep running; on return the G takes its P back if it is still free,
//! else any idle P, else it queues itself and its M parks (`runtime::ownership`).

use crate::runtime::m::{current_g, current_m};
use crate::runtime::ownership::{enter_syscall, exit_syscall};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Runs `f`, a call that may block the OS thread, from a goroutine (Go's
/// `entersyscall`/`exitsyscall` around a system call). If `f` outlasts about
/// 20 µs, the goroutine's P is handed to another M, so other goroutines keep
/// running meanwhile; counted in `runtime::stats().syscall_handoffs`.
///
/// Inside `f` the thread behaves as a plain OS thread to goro: goro calls that
/// wait (a channel `recv`, `join`, ...) block the thread rather than park the G.
/// On a plain thread, `blocking(f)` is just `f()`. A panic in `f` propagates.
///
/// ```
/// let h = goro::go!(|| goro::blocking(|| std::fs::read_to_string("Cargo.toml").map(|s| s.len())));
/// assert!(h.join().unwrap().unwrap() > 0);
/// ```
pub fn blocking<F, R>(f: F) -> R
where
    F: FnOnce() -> R,
{
    let (Some(m), Some(g)) = (current_m(), current_g()) else {
        return f(); // a plain thread, or already inside `blocking`
    };
    enter_syscall(m, g);
    // Caught so that the P is reclaimed (which may switch Gs) outside the unwind:
    // a G must not move to another thread while unwinding.
    let result = catch_unwind(AssertUnwindSafe(f));
    exit_syscall(m, g);
    match result {
        Ok(r) => r,
        Err(payload) => resume_unwind(payload),
    }
}

//! Go's own tests, ported: channels and select (`go_chan`), `sync` (`go_sync`),
//! timers (`go_time`) and the network (`go_net`). Go's scheduler tests
//! (`tests/go_proc.rs`) have their own binary: they measure parallelism and
//! fairness, and change GOMAXPROCS throughout.
//!
//! One runtime per process, so every test here runs at the same GOMAXPROCS,
//! [`PROCS`], and holds [`shared`] while it runs ([`running`], [`go_test`]); the
//! two tests that lower GOMAXPROCS for a while (`go_time::after_func_starvation`,
//! `go_net::various_deadlines_1proc`) hold [`exclusive`] instead
//! ([`go_test_at_one_proc`]), so no other test runs meanwhile.

#[path = "../common/mod.rs"]
mod common;

mod go_chan;
mod go_net;
mod go_sync;
mod go_time;

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

/// GOMAXPROCS for the whole binary.
pub const PROCS: usize = 4;

/// How long any test here may take before its watchdog aborts the binary.
pub const LIMIT: Duration = Duration::from_secs(60);

static SERIAL: RwLock<()> = RwLock::new(());

/// Held by every test while it runs at [`PROCS`].
fn shared() -> RwLockReadGuard<'static, ()> {
    SERIAL.read().unwrap_or_else(|e| e.into_inner())
}

/// Held by a test that changes GOMAXPROCS: no other test runs meanwhile.
fn exclusive() -> RwLockWriteGuard<'static, ()> {
    SERIAL.write().unwrap_or_else(|e| e.into_inner())
}

/// What a test holds while it runs: [`shared`], with the runtime at [`PROCS`],
/// and its watchdog.
pub struct Running {
    _shared: RwLockReadGuard<'static, ()>,
    _watchdog: common::Watchdog,
}

/// Starts the runtime at [`PROCS`] (if no test did yet) and arms the test's
/// watchdog, for a test that runs more than one goroutine body ([`go_test`]).
pub fn running() -> Running {
    let shared = shared();
    common::init_procs(PROCS);
    Running {
        _shared: shared,
        _watchdog: common::watchdog(LIMIT),
    }
}

/// Runs `body` in a goroutine, as Go runs each test function, while the test is
/// [`running`]: its value is returned and its panic re-raised on the test thread.
pub fn go_test<T: Send + 'static>(body: impl FnOnce() -> T + Send + 'static) -> T {
    let _running = running();
    in_g(body)
}

/// [`go_test`] at GOMAXPROCS 1, with every other test held off ([`exclusive`]);
/// GOMAXPROCS goes back to [`PROCS`] whether `body` passes or panics.
pub fn go_test_at_one_proc(body: impl FnOnce() + Send + 'static) {
    let _alone = exclusive();
    common::init_procs(PROCS);
    let _w = common::watchdog(LIMIT);
    assert_eq!(goro::runtime::set_gomaxprocs(1), PROCS);
    let result = catch_unwind(AssertUnwindSafe(|| in_g(body)));
    goro::runtime::set_gomaxprocs(PROCS);
    if let Err(p) = result {
        resume_unwind(p);
    }
}

/// Runs `f` in a goroutine and waits for it, re-raising its panic.
pub fn in_g<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    join(goro::go!(f))
}

/// Joins a goroutine, re-raising its panic.
pub fn join<T>(h: goro::JoinHandle<T>) -> T {
    match h.join() {
        Ok(v) => v,
        Err(p) => resume_unwind(p),
    }
}

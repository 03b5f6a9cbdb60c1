//! Go's own tests, ported: channels and select (`go_chan`), `sync` (`go_sync`),
//! timers (`go_time`) and the network (`go_net`). Go's scheduler tests
//! (`tests/go_proc.rs`) have their own binary: they measure parallelism and
//! fairness, and change GOMAXPROCS throughout.
//!
//! One runtime per process, so every test here runs at the same GOMAXPROCS,
//! [`PROCS`], and holds [`shared`] while it runs; the two tests that lower
//! GOMAXPROCS for a while (`go_time::after_func_starvation`,
//! `go_net::various_deadlines_1proc`) hold [`exclusive`] instead, so no other test
//! runs meanwhile.

#[path = "../common/mod.rs"]
mod common;

mod go_chan;
mod go_net;
mod go_sync;
mod go_time;

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// GOMAXPROCS for the whole binary.
pub const PROCS: usize = 4;

static SERIAL: RwLock<()> = RwLock::new(());

/// Held by every test while it runs at [`PROCS`].
pub fn shared() -> RwLockReadGuard<'static, ()> {
    SERIAL.read().unwrap_or_else(|e| e.into_inner())
}

/// Held by a test that changes GOMAXPROCS: no other test runs meanwhile.
pub fn exclusive() -> RwLockWriteGuard<'static, ()> {
    SERIAL.write().unwrap_or_else(|e| e.into_inner())
}

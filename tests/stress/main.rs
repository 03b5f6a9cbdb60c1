//! Scheduler stress at GOMAXPROCS 4 on any machine (more Ps than cores on a
//! small one): spawn/join bursts and idle transitions, sleeps whose timers other
//! Ms steal, `lock_os_thread` across parks. A lost wake-up hangs and trips the
//! watchdog. `scripts/stress.sh` runs them over and over.
//!
//! The tests take turns ([`serial`]): each drives the whole runtime, and one
//! (`wakeup_stress`) needs it idle between its Gs.

#[path = "../common/mod.rs"]
mod common;

mod lock_os_thread;
mod sleep_stealing;
mod wakeup_stress;

use std::sync::{Mutex, MutexGuard};

/// GOMAXPROCS for the whole binary.
pub const PROCS: usize = 4;

static SERIAL: Mutex<()> = Mutex::new(());

/// Held by every test while it runs.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

//! The runtime's behaviour as a program sees it: spawn and join, channels and
//! `select!`, goro's `sync`, sleeps and timers, the goroutine dump, the panic and
//! stack overflow reports, schedtrace, configuration.
//!
//! No test here starts the runtime with a given GOMAXPROCS: the runtime takes it
//! from the environment (`GOMAXPROCS=8 cargo test --test behaviour` runs them all
//! with 8 Ps). What needs a runtime of its own (`Config::init`, a GODEBUG
//! setting, an exit status, a SIGQUIT) runs in a child process
//! (`common::run_child_in`).

#[path = "../common/mod.rs"]
mod common;

mod auto_traits;
mod block_on;
mod blockwarn;
mod chan_async;
mod chan_model;
mod chan_semantics;
mod config;
mod goroutine_dump;
mod panic_report;
mod print;
mod schedtrace;
mod select;
mod spawn_join;
mod stack_overflow;
mod sync;
mod timers;

use goro::runtime::{goroutines, GoState, GoroutineInfo};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

/// The tests that start Gs by the hundred thousand hold this exclusively
/// ([`crowd`]). The tests whose verdict such a crowd would change hold it shared
/// ([`no_crowd`]): a goroutine dump looks at every parked G of the process
/// (about 0.4 ms each in a debug build), the G count is the process's, a bound
/// on how long sleeps take assumes the Ps are free.
static CROWD: RwLock<()> = RwLock::new(());

/// Held by a test that starts Gs by the hundred thousand.
pub fn crowd() -> RwLockWriteGuard<'static, ()> {
    CROWD.write().unwrap_or_else(|e| e.into_inner())
}

/// Held by a test that another test's crowd of Gs would slow down or miscount.
pub fn no_crowd() -> RwLockReadGuard<'static, ()> {
    CROWD.read().unwrap_or_else(|e| e.into_inner())
}

/// Waits until goroutine `id` shows `state` in a dump (hold [`no_crowd`]).
pub fn until_state(id: goro::GoId, state: GoState) -> GoroutineInfo {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(g) = goroutines().into_iter().find(|g| g.id() == id && g.state() == state) {
            return g;
        }
        assert!(Instant::now() < deadline, "goroutine {id} never reached {state}");
        std::thread::yield_now();
    }
}

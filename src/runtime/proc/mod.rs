//! The scheduler's records (Go's `runtime2.go`): `Sched`, the M and the P,
//! the configuration, a P's timer heap, the waiter and claim records, the
//! links to the observers, the trace's event sites, and each M's handover and
//! poll-spin state, each with its field-level methods. Nothing here names
//! the scheduler's protocols (`sched/`), which are built on these; `runtime/mod.rs`
//! maps it.

pub(in crate::runtime) mod config;
pub(in crate::runtime) mod handover;
pub(in crate::runtime) mod m;
pub(in crate::runtime) mod observers;
pub(in crate::runtime) mod p;
pub(in crate::runtime) mod pollspin;
pub(in crate::runtime) mod state;
pub(in crate::runtime) mod timers;
pub(in crate::runtime) mod tracing;
pub(in crate::runtime) mod waiter;

//! The observers: sysmon's duties, the deadlock report, the goroutine dump,
//! schedtrace, stats, panic and stack-overflow reports. Nothing below calls
//! them; the core reaches sysmon and the reporter through `proc/observers.rs`.
//! `runtime/mod.rs` maps it.

pub(in crate::runtime) mod blockwarn;
pub(in crate::runtime) mod deadlock;
pub(in crate::runtime) mod dump;
pub(in crate::runtime) mod heap_trim;
pub(in crate::runtime) mod panics;
pub(in crate::runtime) mod running;
pub(in crate::runtime) mod schedtrace;
pub(in crate::runtime) mod signal;
pub(in crate::runtime) mod stats;
pub(in crate::runtime) mod sysmon;
pub(in crate::runtime) mod trace_json;

//! Observers of the runtime: what it reports about itself. Frames for reports,
//! the goroutine dump, the deadlock report and SIGQUIT, the names of threads
//! that spawn goroutines.

pub(crate) mod deadlock;
pub(crate) mod dump;
pub(crate) mod heap_trim;
pub(crate) mod panics;
pub(crate) mod schedtrace;
pub(crate) mod signal;
pub(crate) mod stats;
pub(crate) mod sysmon;

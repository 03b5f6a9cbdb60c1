//! Observers of the runtime: what it reports about itself. Frames for reports,
//! the goroutine dump, the deadlock report and SIGQUIT, the names of threads
//! that spawn goroutines.

pub(crate) mod creators;
pub(crate) mod deadlock;
pub(crate) mod dump;
pub(crate) mod frames;

//! Observers of the runtime: what it reports about itself. The panic report of a
//! goroutine, frames for reports and dumps.

pub(crate) mod frames;

//! The wait layer.

pub(crate) mod guarded;
pub(crate) mod park;
pub(crate) mod thread_waits;
pub(crate) mod waitq;

//! Queues.

pub(crate) mod globrunq;
pub(crate) mod idle;
pub(crate) mod runq;

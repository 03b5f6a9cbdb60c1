//! Where runnable Gs and idle Ps and Ms wait: a P's ring, the global queue, the
//! idle lists. The protocols that use them are `sched/`. `runtime/mod.rs` maps it.

pub(in crate::runtime) mod globrunq;
pub(in crate::runtime) mod idle;
pub(in crate::runtime) mod runq;

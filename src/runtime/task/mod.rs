//! What a goroutine is: the G and its task block, their free lists, stacks and
//! their scavenger, goroutine-local values. Nothing here schedules: that is
//! `sched/`. `runtime/mod.rs` maps it.

pub(in crate::runtime) mod block;
pub(in crate::runtime) mod creators;
pub(in crate::runtime) mod g;
pub(in crate::runtime) mod gfree;
pub(in crate::runtime) mod ids;
pub(in crate::runtime) mod locals;
pub(in crate::runtime) mod scavenge;
pub(in crate::runtime) mod stack;
pub(in crate::runtime) mod stack_pool;
pub(in crate::runtime) mod swapper;

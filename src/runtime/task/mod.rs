//! What a goroutine is.

pub(crate) mod block;
pub(crate) mod creators;
pub(crate) mod g;
pub(crate) mod gfree;
pub(crate) mod locals;
pub(crate) mod scavenge;
pub(crate) mod stack;
pub(crate) mod stack_pool;

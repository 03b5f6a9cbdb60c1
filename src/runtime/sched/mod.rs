//! The G/M/P protocol, on the records of `proc/`: the only layer whose files
//! import each other in a circle, the scheduler's own recursion (readying a G
//! wakes an M; waking or idling an M hands a P on, which may take a poll; the
//! poll readies Gs). The loop every M runs and the rest sit on that circle.
//! `runtime/mod.rs` maps it.

pub(in crate::runtime) mod lockosthread;
pub(in crate::runtime) mod mpark;
pub(in crate::runtime) mod newproc;
pub(in crate::runtime) mod ownership;
pub(in crate::runtime) mod poll;
pub(in crate::runtime) mod preempt;
pub(in crate::runtime) mod procresize;
pub(in crate::runtime) mod ready;
pub(in crate::runtime) mod schedule;
pub(in crate::runtime) mod switch;
pub(in crate::runtime) mod syscall;
pub(in crate::runtime) mod template;
pub(in crate::runtime) mod timers;

//! The G/M/P protocol, the scheduling core: the only layer whose files import
//! each other in a circle (the loop runs a G, the G parks, a waker readies it,
//! an M is woken to run the loop). `runtime/mod.rs` maps it.

pub(in crate::runtime) mod config;
pub(in crate::runtime) mod handover;
pub(in crate::runtime) mod lockosthread;
pub(in crate::runtime) mod m;
pub(in crate::runtime) mod mpark;
pub(in crate::runtime) mod newproc;
pub(in crate::runtime) mod observers;
pub(in crate::runtime) mod ownership;
pub(in crate::runtime) mod p;
pub(in crate::runtime) mod poll;
pub(in crate::runtime) mod pollspin;
pub(in crate::runtime) mod preempt;
pub(in crate::runtime) mod procresize;
pub(in crate::runtime) mod ready;
pub(in crate::runtime) mod schedule;
pub(in crate::runtime) mod state;
pub(in crate::runtime) mod switch;
pub(in crate::runtime) mod syscall;
pub(in crate::runtime) mod template;
pub(in crate::runtime) mod timers;
pub(in crate::runtime) mod tracing;

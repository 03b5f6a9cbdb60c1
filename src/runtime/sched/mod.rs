//! The scheduling core.

pub(crate) mod config;
pub(crate) mod handover;
pub(crate) mod lockosthread;
pub(crate) mod m;
pub(crate) mod mpark;
pub(crate) mod newproc;
pub(crate) mod observers;
pub(crate) mod ownership;
pub(crate) mod p;
pub(crate) mod poll;
pub(crate) mod pollspin;
pub(crate) mod preempt;
pub(crate) mod procresize;
pub(crate) mod ready;
pub(crate) mod schedule;
pub(crate) mod state;
pub(crate) mod switch;
pub(crate) mod syscall;
pub(crate) mod template;
pub(crate) mod timers;

//! The bottom layer: what the runtime needs from the OS and the hardware,
//! knowing nothing of G, M or P (futex, the runtime lock, notes, epoll, signal
//! stacks, frames, the timer heap, the loom switch). `runtime/mod.rs` maps it.

pub(in crate::runtime) mod altstack;
pub(in crate::runtime) mod coarse_clock;
pub(in crate::runtime) mod decimal;
pub(in crate::runtime) mod dump_signal;
pub(in crate::runtime) mod epoll;
pub(in crate::runtime) mod fatal;
pub(in crate::runtime) mod file_size;
pub(in crate::runtime) mod frames;
pub(in crate::runtime) mod futex;
pub(in crate::runtime) mod lock;
pub(in crate::runtime) mod note;
pub(in crate::runtime) mod os_threads;
pub(in crate::runtime) mod quadheap;
pub(in crate::runtime) mod sync_prims;
pub(in crate::runtime) mod trace_buf;
pub(in crate::runtime) mod trace_clock;
pub(in crate::runtime) mod trace_spill;

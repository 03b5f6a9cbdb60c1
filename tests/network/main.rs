//! `goro::net` on the netpoller: echo, many connections, short reads and
//! writes, timeouts, shutdown and reset, UDP (`net`); faults injected at every
//! kind of blocking point (`fault_injection`); an accept loop that runs out of
//! file descriptors, in a child process (`net_fd_exhaustion`). Go's own network
//! tests are in `tests/go_ports/go_net.rs`.
//!
//! One runtime per process: every test here starts it with [`PROCS`] Ps.

#[path = "../common/mod.rs"]
mod common;

mod fault_injection;
mod net;
mod net_fd_exhaustion;

/// GOMAXPROCS for the whole binary.
pub const PROCS: usize = 2;

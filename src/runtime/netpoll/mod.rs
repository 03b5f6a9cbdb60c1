//! The netpoller: one epoll instance per runtime (Go's netpoll), with the poll
//! descriptors inside the runtime, as Go has them.
//!
//! Every socket of `goro::net` is registered once, edge-triggered, with a poll
//! descriptor (`desc.rs`) on which Gs waiting to read or write park; the epoll
//! set itself is `sys/epoll.rs`. The scheduler polls in two places
//! (`sched/poll.rs`, from `sched/schedule.rs`): without blocking in
//! `find_runnable` before stealing, while any G waits on the network; and, when an
//! M runs out of work, blocking until the next timer or event (exactly one M at a
//! time: the one that swapped `sched.lastpoll` to 0). An eventfd breaks that
//! blocking wait when an earlier timer appears. The events of a poll come back
//! here ([`on_events`]), through the handler `boot.rs` gives the core.
//! `registered.rs` is the I/O loop a socket type runs its non-blocking syscalls in.
//!
//! Timeouts use `epoll_pwait2` (nanosecond `timespec`, Linux >= 5.11), so timers are
//! not rounded up to a millisecond as Go's are; on `ENOSYS` it falls back to
//! `epoll_wait`, rounding up to whole milliseconds.

mod desc;
#[cfg(all(test, loom))]
mod loom_models;
mod registered;

pub(in crate::runtime) use desc::on_events;
pub(crate) use desc::Dir;
pub(crate) use registered::Registered;

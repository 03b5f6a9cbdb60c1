//! The netpoller: one epoll instance per runtime.
//!
//! Today it carries only the "break" eventfd and the timed wait that an idle M
//! blocks in until the next timer fires (exactly one M at a time: the one that
//! swapped `sched.lastpoll` to 0). Socket poll descriptors join it with `goro::net`.
//!
//! Timeouts use `epoll_pwait2` (nanosecond `timespec`, Linux >= 5.11), so timers are
//! not rounded up to a millisecond as Go's are; on `ENOSYS` it falls back to
//! `epoll_wait`, rounding up to whole milliseconds.

mod epoll;

pub(crate) use epoll::Poller;
